"""Every Eval Ever (EEE) aggregate files and datastores: models' results, read into domain rows.

An EEE aggregate file (``data/<collection>/<developer>/<model>/<uuid>.json``, schema
versions 0.1, 0.2 and 0.3) holds one model's results: ``model_info.id`` names the model and
each entry of ``evaluation_results`` is one result, named by its ``evaluation_name``, scored
by ``score_details.score`` on the metric ``metric_config`` describes. The fields jagged reads,
and where each schema version keeps them:

=============================== ======================= ====================================
what                            0.1                     0.2 / 0.3
=============================== ======================= ====================================
model                           ``model_info.id``       ``model_info.id``
when the record was made        ``retrieved_timestamp`` ``retrieved_timestamp``
domain                          ``evaluation_name``     ``evaluation_name``
score                           ``score_details.score`` ``score_details.score``
scale, direction                ``metric_config.{min_score, max_score, lower_is_better, score_type}``
metric                          ``evaluation_description`` ``metric_id`` / ``metric_name`` (0.2.2+),
                                                        else ``evaluation_description``
item count                      top-level               ``score_details.uncertainty.num_samples``
                                ``source_data.sample_ids`` (0.2.2+); HELM's ``<name> - # eval``
                                                        (a sibling row in 0.1, a nested entry of
                                                        ``score_details.details`` in 0.2);
                                                        per-result ``source_data.sample_ids``
hierarchy                       --                      ``evaluation_result_id`` (0.2.2+,
                                                        ``mmlu_pro/biology``), else a dotted
                                                        ``evaluation_name`` (``vals_ai.<bench>.<task>``)
instance-level file             inline samples (unused) ``detailed_evaluation_results.file_path``
=============================== ======================= ====================================

What becomes a domain, and what is left out (each exclusion listed with its reason in
``Dataset.details["left out"]``):

* **Scores are mapped to [0, 1]** from the declared ``min_score``/``max_score``; a score
  outside its declared range is an error. Without a declared range a result is used as it
  is when in [0, 1], left out otherwise; an unbounded range (``"Infinity"``) is left out.
* **Not scores**: ``lower_is_better: true`` results; HELM's efficiency and
  general-information columns (``- # eval``, ``- # train``, ``- truncated``, token counts,
  inference time), by name or by HELM's ``tab``; a ``metric_unit`` / ``metric_kind`` that is
  a time, a count, a cost or a rank; mean win rates; ``levels`` scores; perturbation
  variants. Nested statistics in ``score_details.details`` are never results, except
  ``# eval`` for the item count.
* **Aggregate rows** are not domains: "All Subjects", "overall", "average", "mean",
  "Score"...; a row named like the benchmark (the shared ``dataset_name``, the source's
  name, the collection); a hierarchy node with rows below it; Global-MMLU-Lite's
  "Culturally Sensitive" / "Culturally Agnostic", which cut across the languages.
* **-1 is "not evaluated"** (HELM's marker): a missing value, so the model is incomplete.
* **Several results with one name** (0.1 HELM repeats one per metric and split): the
  ``test`` split first, then ``--metric`` (else ``exact_match``/``accuracy``/``acc``/``em``,
  else the first); the others are left out as duplicates.
* HELM 0.1 names ``<Subject> - EM`` lose the metric suffix every score of the file shares.

Fields are read and checked directly (no ``every-eval-ever`` dependency). jagged reads a
file, a collection folder, a datastore's ``data/``, the folder above it, or any folder of
such files:

* **Collection**: the folder below ``data/`` on a file's path (every file below a named
  collection folder is that collection's). A folder holding several needs
  ``--collection NAME`` (the error lists them with file counts). A folder of EEE files
  outside that layout is one set with no collection name.
* **Benchmark** (:func:`benchmark_of`): benchmarks are kept apart,
  since domains of two benchmarks are not comparable; a collection holding two (RewardBench
  and RewardBench 2) is refused with both named, and ``--where dataset=NAME`` reads one
  (``details["benchmark"]``; the rows carry it in a ``dataset`` column while read).
* **Model**: ``model_info.id``, never the folder (a sanitised id); ids differing only by
  case stay apart and are listed.
* **Several files of one model and benchmark**: the newest ``retrieved_timestamp`` wins,
  the others listed as superseded. **Ties** (float16 and bfloat16 runs scraped at the same
  second) go to the later ``evaluation_timestamp``, then more domains, then the path that
  sorts last, and are reported with the precisions involved.
* The hierarchy gives ``category``.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from jagged.errors import JaggedInputError, JaggedWarning
from jagged.readers.files import head
from jagged.readers.limits import InputTooLargeError
from jagged.readers.reader import Reader, Replaced, ScoreRead, category_map, iso, newest
from jagged.readers.tables import parse_where
from jagged.text import listing, plural

#: HELM column suffixes (``<dataset> - <column>``) that are no score.
HELM_NON_SCORE = re.compile(
    r"(# ?eval|# ?train|# ?trials|truncated|# ?prompt tokens|# ?output tokens|inference time|inference runtime|"
    r"training emissions|training energy|runtime|latency|num(ber of)? (instances|tokens))", re.IGNORECASE)
#: HELM ``tab`` values of columns that are no score.
HELM_NON_SCORE_TABS: frozenset[str] = frozenset({"efficiency", "general information"})
#: ``metric_unit`` / ``metric_kind`` values of metrics that are no score in [0, 1].
NON_SCORE_UNITS: frozenset[str] = frozenset({
    "s", "sec", "second", "seconds", "ms", "millisecond", "milliseconds", "minutes", "tokens", "token", "count",
    "usd", "dollars", "$", "rank", "elo", "latency", "cost", "win_rate", "win rate", "tokens_per_second",
})
WIN_RATE = re.compile(r"\bwin[ _-]?rate\b", re.IGNORECASE)
#: Names of aggregate rows (matched on the lower-cased name).
AGGREGATE_NAMES = re.compile(
    r"(\ball subjects\b|\boverall\b|\baverage\b|\bmacro[ _-]?avg\b|\bmicro[ _-]?avg\b|^mean\b|"
    r"^(avg|total|aggregate|score|all|summary)$)")
#: Rows that cut across the domains (Global-MMLU-Lite's question subsets).
CROSS_CUTTING = re.compile(r"^culturally (sensitive|agnostic)$")
NOT_EVALUATED = -1.0
ITEM_COUNT_SUFFIX = " - # eval"


_NOT_ALNUM = re.compile(r"[^0-9a-z]")


@functools.lru_cache(maxsize=65536)
def normalised(name: str) -> str:
    """Letters and digits only, lower case: ``"Global MMLU Lite"`` and ``"global-mmlu-lite"`` agree."""
    return _NOT_ALNUM.sub("", name.lower())


@dataclass
class Result:
    """One entry of ``evaluation_results``, with what jagged needs of it.

    ``name`` is the ``evaluation_name`` (after a shared metric suffix is removed, the domain),
    ``raw_name`` as written; ``low``/``high`` the declared range (None: not declared,
    infinite: unbounded); ``unit`` is ``metric_unit`` and ``metric_kind`` joined, lower case;
    ``n_items`` is NaN when the file does not say; ``path`` is the place in the hierarchy
    (:func:`hierarchy_path`).
    """

    index: int
    name: str
    raw_name: str
    score: float
    metric: str
    low: float | None
    high: float | None
    lower_is_better: bool
    score_type: str | None
    tab: str | None
    unit: str
    split: str | None
    perturbation: bool
    n_items: float
    path: tuple[str, ...]
    dataset: str | None


def _where(path: Path, index: int, name: Any = None) -> str:
    shown = f" ({str(name)[:60]!r})" if isinstance(name, str) else ""
    return f"{path.name}: evaluation_results[{index}]{shown}"


def _bound(value: Any, path: Path, index: int, name: str, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.strip() in ("Infinity", "-Infinity", "inf", "-inf"):
        return float(value.strip().replace("Infinity", "inf"))
    raise JaggedInputError(f"{_where(path, index, name)}: field 'metric_config.{key}' is {str(value)[:30]!r}, not "
                           "a number")


def detail_dict(value: Any) -> dict[str, Any] | None:
    """A nested statistic of ``score_details.details``: a dict, or a JSON string of one (0.3 writes strings)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.startswith("{"):
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError, MemoryError):  # bad JSON, too deep, a huge integer
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def nested_stats(entries: list[Any]) -> int:
    """How many nested statistics with a score the entries' ``score_details.details`` hold."""
    count = 0
    for entry in entries:
        details = entry.get("score_details", {}).get("details") if isinstance(entry, dict) else None
        if isinstance(details, dict):
            count += sum(1 for v in details.values() if (detail_dict(v) or {}).get("score") is not None)
    return count


def item_count(value: Any) -> float:
    """A positive item count, else NaN."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return math.nan
    return float(round(value))


def _n_items(entry: dict[str, Any], details: dict[str, Any], name: str) -> float:
    """Items behind one result: ``uncertainty.num_samples``, HELM's ``# eval``, or ``sample_ids``."""
    uncertainty = entry["score_details"].get("uncertainty")
    if isinstance(uncertainty, dict):
        found = item_count(uncertainty.get("num_samples"))
        if not math.isnan(found):
            return found
    nested = detail_dict(details.get(name + ITEM_COUNT_SUFFIX))
    if nested is not None:
        found = item_count(nested.get("score"))
        if not math.isnan(found):
            return found
    source = entry.get("source_data")
    if isinstance(source, dict) and isinstance(source.get("sample_ids"), list) and source["sample_ids"]:
        return float(len(source["sample_ids"]))
    return math.nan


def _metric_name(config: dict[str, Any], name: str, result_id: Any) -> str:
    """The metric of a result: ``metric_id``, ``metric_name``, ``metric_kind``, else from the description.

    Per-domain labels (``mmlu_pro/biology``) are skipped; "EM on Abstract Algebra" gives "EM".
    """
    get = config.get
    keys = (get("metric_id"), get("metric_name"), get("metric_kind"), get("evaluation_description"))
    keys = tuple(k if isinstance(k, str) else None for k in keys)
    return _metric_from(keys, name, result_id if isinstance(result_id, str) else None)


@functools.lru_cache(maxsize=65536)
def _metric_from(keys: tuple[str | None, ...], name: str, result_id: str | None) -> str:
    own = {normalised(name)}
    if result_id and result_id.strip():
        own |= {normalised(result_id), normalised(result_id.rsplit("/", 1)[-1])}
    for value in keys[:3]:
        if value and value.strip() and not any(o and o in normalised(value) for o in own):
            return value.strip()
    text = keys[3]
    if text and text.strip():
        text = " ".join(text.split())
        lowered, target = text.lower(), name.lower()
        for joint in (" on the ", " on "):
            if lowered.endswith(joint + target) and len(text) > len(joint + target):
                return text[: len(text) - len(joint + target)]
        if normalised(name) not in normalised(text) and len(text) <= 40:
            return text
    return "score"


def hierarchy_path(result_id: Any, name: str) -> tuple[str, ...]:
    """A result's place in the hierarchy; ``(name,)`` when flat.

    The ``evaluation_result_id`` split at ``/`` (``mmlu_pro/biology``), else a dotted
    ``evaluation_name`` of three or more parts, each with a letter and no space
    (``vals_ai.mmlu_pro.biology``). Names with ``/`` are not split (``allenai/ai2_arc`` is a
    dataset id).
    """
    if isinstance(result_id, str) and "/" in result_id:
        parts = tuple(p.strip() for p in result_id.split("/") if p.strip())
    else:
        dotted = name.split(".")
        if len(dotted) < 3 or any(not p or any(c.isspace() for c in p) or not any(c.isalpha() for c in p)
                                  for p in dotted):
            return (name,)
        parts = tuple(dotted)
    return parts if len(parts) > 1 else (name,)


def read_result(entry: Any, index: int, path: Path) -> Result:
    """Check one ``evaluation_results`` entry and keep what jagged reads; an error names the file, entry and field."""
    if not isinstance(entry, dict):
        raise JaggedInputError(f"{_where(path, index)} is {type(entry).__name__}, not an object")
    name = entry.get("evaluation_name")
    if not isinstance(name, str) or not name.strip():
        raise JaggedInputError(f"{_where(path, index)}: field 'evaluation_name' is {str(name)[:30]!r}, not a name")
    name = name.strip()
    details_obj = entry.get("score_details")
    if not isinstance(details_obj, dict) or "score" not in details_obj:
        raise JaggedInputError(f"{_where(path, index, name)}: no field 'score_details.score'")
    score = details_obj["score"]
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise JaggedInputError(f"{_where(path, index, name)}: field 'score_details.score' is {str(score)[:30]!r}, "
                               "not a finite number")
    config = entry.get("metric_config")
    if not isinstance(config, dict):
        raise JaggedInputError(f"{_where(path, index, name)}: no field 'metric_config'")
    lib = config.get("lower_is_better", False)
    if not isinstance(lib, bool):
        raise JaggedInputError(f"{_where(path, index, name)}: field 'metric_config.lower_is_better' is "
                               f"{str(lib)[:20]!r}, not true or false")
    details = details_obj.get("details") if isinstance(details_obj.get("details"), dict) else {}
    tab = details.get("tab") if isinstance(details.get("tab"), str) else None
    unit_, kind_ = config.get("metric_unit"), config.get("metric_kind")
    unit = f"{unit_ or ''} {kind_ or ''}".strip().lower() if unit_ or kind_ else ""
    source = entry.get("source_data") if isinstance(entry.get("source_data"), dict) else {}
    dataset = source.get("dataset_name") if isinstance(source.get("dataset_name"), str) else None
    metric = _metric_name(config, name, entry.get("evaluation_result_id"))
    return Result(index=index, name=name, raw_name=name, score=float(score), metric=metric,
                  low=_bound(config.get("min_score"), path, index, name, "min_score"),
                  high=_bound(config.get("max_score"), path, index, name, "max_score"),
                  lower_is_better=lib, score_type=config.get("score_type") if isinstance(config.get("score_type"),
                                                                                         str) else None,
                  tab=tab, unit=unit, split=details.get("split") if isinstance(details.get("split"), str) else None,
                  perturbation=bool(details.get("perturbation")), n_items=_n_items(entry, details, name),
                  path=hierarchy_path(entry.get("evaluation_result_id"), name), dataset=dataset)


@functools.lru_cache(maxsize=65536)
def _namenot_a_score(name: str) -> str | None:
    """Why a result's name says it is no score (win rates, HELM's non-accuracy columns), or None."""
    if WIN_RATE.search(name):
        return "not a score (a win rate ranks models)"
    suffix = name.rpartition(" - ")[2] if " - " in name else ""
    if (suffix and HELM_NON_SCORE.fullmatch(suffix.strip())) or HELM_NON_SCORE.fullmatch(name):
        return "not a score (HELM efficiency or general-information column)"
    return None


@functools.lru_cache(maxsize=65536)
def name_is_aggregate(name: str) -> str | None:
    """Why a result's name says it is an aggregate row, or None."""
    lowered = " ".join(name.lower().split())
    if CROSS_CUTTING.search(lowered):
        return "subset across the domains (not a domain)"
    if AGGREGATE_NAMES.search(lowered):
        return "aggregate row"
    return None


def not_a_score(result: Result) -> str | None:
    """Why a result is no score in [0, 1], or None."""
    if result.lower_is_better:
        return "lower is better"
    by_name = _namenot_a_score(result.name)
    if by_name:
        return by_name
    if result.tab and result.tab.strip().lower() in HELM_NON_SCORE_TABS:
        return f"not a score (HELM tab {result.tab!r})"
    if result.unit and set(result.unit.split()) & NON_SCORE_UNITS:
        return f"not a score (metric unit/kind {result.unit!r})"
    if result.score_type == "levels":
        return "not a score (levels)"
    if result.perturbation:
        return "perturbed variant (HELM robustness/fairness)"
    low, high = result.low, result.high
    if (low is not None and math.isinf(low)) or (high is not None and math.isinf(high)):
        return "unbounded scale"
    if low is None or high is None:
        if not 0.0 <= result.score <= 1.0 and result.score != NOT_EVALUATED:
            return "no declared range (min_score/max_score) and not a fraction"
    elif high <= low:
        return f"empty declared range [{low:g}, {high:g}]"
    return None


def fraction(result: Result, path: Path) -> float:
    """The score mapped to [0, 1] from the declared range; a score outside it is an error."""
    low, high = result.low, result.high
    if low is None or high is None:
        return result.score
    if not low <= result.score <= high:
        raise JaggedInputError(f"{_where(path, result.index, result.raw_name)}: field 'score_details.score' is "
                               f"{result.score:g}, outside its declared range [{low:g}, {high:g}]")
    return (result.score - low) / (high - low)


#: Schema versions (major.minor) whose field places this module knows.
KNOWN_SCHEMAS: tuple[str, ...] = ("0.1", "0.2", "0.3")
#: Metric names preferred when a file gives one result name under several metrics.
PREFERRED_METRICS: tuple[str, ...] = ("exact_match", "accuracy", "acc", "em")


def is_aggregate(content: Any) -> bool:
    """Whether parsed JSON is an EEE aggregate file: ``evaluation_results`` (a list) and ``model_info``."""
    return (isinstance(content, dict) and isinstance(content.get("evaluation_results"), list)
            and isinstance(content.get("model_info"), dict))


def parse_timestamp(value: Any) -> float | None:
    """Seconds since the epoch of an EEE timestamp (``"1770835937.459157"``, a number, or ISO 8601)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        number = float(text)
        return number if math.isfinite(number) else None
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.timestamp()


def schema_of(content: dict[str, Any], path: Path) -> str:
    """The ``schema_version`` as ``major.minor.patch`` text (``"0.2.0"``); an error when missing or not a version."""
    raw = content.get("schema_version")
    if not isinstance(raw, str) or not re.search(r"\d+\.\d+", raw):
        raise JaggedInputError(f"{path.name}: field 'schema_version' is {str(raw)[:30]!r}, not an EEE schema "
                               "version such as '0.2.0'")
    return re.search(r"\d+\.\d+(\.\d+)?", raw).group(0)


def schema_family(version: str) -> str:
    """``major.minor`` of a version (``"0.2.2"`` -> ``"0.2"``)."""
    return ".".join(version.split(".")[:2])


@dataclass(eq=False)
class AggregateFile:
    """One EEE aggregate file: a model and its domain scores.

    Attributes
    ----------
    model, found_model : str
        ``model_info.id`` (or the ``model_name`` override), and as written.
    retrieved, evaluated : float or None
        ``retrieved_timestamp``; ``evaluation_timestamp`` (file level, else the latest of the
        results), in seconds since the epoch.
    scores : dict
        Domain to (fraction, n_items, hierarchy path, metric).
    missing : list of str
        Domains whose score is -1 (not evaluated).
    left_out : list of (str, str)
        (evaluation name, reason) for every result that is no domain.
    precision, samples_file : str or None
        ``model_info.additional_details.precision``; ``detailed_evaluation_results.file_path``.
    nested_stats : int
        Nested statistics in ``score_details.details`` (never domains).
    collection, benchmark : str or None
        The datastore collection; the benchmark (:func:`benchmark_of`), within which files of
        one model supersede each other.
    """

    path: Path
    schema: str
    model: str
    found_model: str
    retrieved: float | None
    evaluated: float | None
    scores: dict[str, tuple[float, float, tuple[str, ...], str]]
    missing: list[str]
    left_out: list[tuple[str, str]]
    precision: str | None = None
    samples_file: str | None = None
    nested_stats: int = 0
    collection: str | None = field(default=None)
    benchmark: str | None = None


def _model_id(content: dict[str, Any], path: Path) -> str:
    info = content["model_info"]
    model = info.get("id")
    if not isinstance(model, str) or not model.strip():
        raise JaggedInputError(f"{path.name}: field 'model_info.id' is {str(model)[:30]!r}, not a model id")
    return model.strip()


def _choose_duplicates(results: list[Result], metric: str | None) -> tuple[list[Result], list[tuple[str, str]]]:
    """One result per name: the test split, then the metric asked for (or a preferred one), then the first."""
    by_name: dict[str, list[Result]] = {}
    for result in results:
        by_name.setdefault(result.name, []).append(result)
    kept, dropped = [], []
    for name, group in by_name.items():
        if len(group) == 1:
            kept.append(group[0])
            continue
        ranked = sorted(group, key=lambda r: (r.split not in (None, "test"), _metric_rank(r.metric, metric), r.index))
        best = ranked[0]
        kept.append(best)
        kept_as = ", ".join(x for x in (f"split {best.split}" if best.split else "", f"metric {best.metric}") if x)
        dropped.extend((name, f"duplicate name (kept the {kept_as} row)") for _ in ranked[1:])
    return kept, dropped


def _metric_rank(name: str, wanted: str | None) -> int:
    lowered = name.lower()
    if wanted:
        return 0 if lowered == wanted.lower() else 1
    return PREFERRED_METRICS.index(lowered) if lowered in PREFERRED_METRICS else len(PREFERRED_METRICS)


def _strip_metric_suffix(results: list[Result]) -> str | None:
    """Drop the ``" - <metric>"`` every score name of a HELM 0.1 file shares; return the metric."""
    if len(results) < 2 or not all(" - " in r.name for r in results):
        return None
    suffixes = {r.name.rpartition(" - ")[2].strip() for r in results}
    if len(suffixes) != 1:
        return None
    for result in results:
        result.name = result.name.rpartition(" - ")[0].strip()
        if result.path == (result.raw_name,):
            result.path = (result.name,)
    return suffixes.pop()


def _aggregate_reasons(results: list[Result], benchmark_names: set[str]) -> list[str | None]:
    """Why each (score) result is an aggregate row rather than a domain, or None."""
    parents = {r.path[:k] for r in results for k in range(1, len(r.path))}
    out = []
    for result in results:
        reason = name_is_aggregate(result.name)
        if reason is None and len(results) > 1 and normalised(result.name) in benchmark_names:
            reason = "aggregate row (named like the benchmark)"
        if reason is None and result.path in parents:
            reason = "aggregate row (has rows below it)"
        out.append(reason)
    return out


def _benchmark_names(content: dict[str, Any], results: list[Result], collection: str | None) -> set[str]:
    """Names meaning "the whole benchmark": the dataset all results share, the source, the collection."""
    names = set()
    datasets = {r.dataset for r in results}
    if len(datasets) == 1 and None not in datasets:
        names.add(normalised(datasets.pop()))
    source = content.get("source_metadata")
    if isinstance(source, dict) and isinstance(source.get("source_name"), str):
        text = re.sub(r"\b(leaderboard|benchmark)\b", "", source["source_name"], flags=re.IGNORECASE)
        names.add(normalised(text))
    top = content.get("source_data")
    if isinstance(top, dict) and isinstance(top.get("dataset_name"), str):
        names.add(normalised(top["dataset_name"]))
    if collection:
        names.add(normalised(collection))
    return {n for n in names if n}


def _top_level_items(content: dict[str, Any]) -> float:
    """0.1: the item count of a top-level ``source_data.sample_ids``."""
    top = content.get("source_data")
    if isinstance(top, dict) and isinstance(top.get("sample_ids"), list) and top["sample_ids"]:
        return float(len(top["sample_ids"]))
    return math.nan


def _sibling_counts(results: list[Result]) -> dict[str, float]:
    """HELM 0.1 item counts: the score of the sibling row ``<name> - # eval``."""
    counts = {}
    for result in results:
        if result.raw_name.endswith(ITEM_COUNT_SUFFIX):
            found = item_count(result.score)
            if not math.isnan(found):
                counts[result.raw_name[: -len(ITEM_COUNT_SUFFIX)].strip()] = found
    return counts


def benchmark_of(content: dict[str, Any]) -> str | None:
    """The benchmark a parsed aggregate file holds results of (what tells RewardBench from RewardBench 2).

    The ``source_data.dataset_name`` all results share; else the top-level
    ``source_data.dataset_name`` (0.1); else ``source_metadata.source_name``; else None.
    """
    names = []
    for entry in content.get("evaluation_results") or []:
        source = entry.get("source_data") if isinstance(entry, dict) else None
        name = source.get("dataset_name") if isinstance(source, dict) else None
        names.append(name.strip() if isinstance(name, str) else "")
    if names and names[0] and len(set(names)) == 1:
        return names[0]
    for outer, key in (("source_data", "dataset_name"), ("source_metadata", "source_name")):
        block = content.get(outer)
        if isinstance(block, dict) and isinstance(block.get(key), str) and block[key].strip():
            return block[key].strip()
    return None


def read_aggregate(content: dict[str, Any], path: Path, *, metric: str | None = None,
                   model_name: str | None = None, collection: str | None = None,
                   strict: bool = False) -> AggregateFile:
    """Read one aggregate file into its domain scores and the results it leaves out (see the module docstring).

    ``metric`` is preferred where a name appears several times, ``model_name`` replaces
    ``model_info.id``, a row named like ``collection`` is an aggregate; with ``strict`` a score
    outside its declared range is refused instead of left out.

    Raises
    ------
    JaggedInputError
        A field jagged needs is missing or mistyped, or (``strict``) a score lies outside its
        declared range; one line naming the file and the field.
    """
    schema = schema_of(content, path)
    found_model = _model_id(content, path)
    entries = content["evaluation_results"]
    results = [read_result(entry, i, path) for i, entry in enumerate(entries)]
    counts = _sibling_counts(results)
    top_items = _top_level_items(content)
    left_out: list[tuple[str, str]] = []
    candidates = []
    for result in results:
        reason = not_a_score(result)
        if reason:
            left_out.append((result.raw_name, reason))
        else:
            candidates.append(result)
    candidates, duplicates = _choose_duplicates(candidates, metric)
    left_out.extend(duplicates)
    suffix = _strip_metric_suffix(candidates)
    benchmark = _benchmark_names(content, candidates, collection)
    kept: list[tuple[Result, float]] = []
    missing: list[str] = []
    for result, reason in zip(candidates, _aggregate_reasons(candidates, benchmark)):
        if reason:
            left_out.append((result.raw_name, reason))
            continue
        if result.score == NOT_EVALUATED:
            missing.append(result.name)
            continue
        n_items = result.n_items
        if math.isnan(n_items):  # 0.1: a sibling '# eval' row, else the run's sample ids (one split only)
            n_items = counts.get(result.name, counts.get(result.raw_name, top_items if result.split is None
                                                          else math.nan))
        if not strict and result.low is not None and result.high is not None and result.high > result.low and (
                not result.low <= result.score <= result.high):
            left_out.append((result.raw_name, f"score {result.score:g} outside its declared range [{result.low:g}, "
                                              f"{result.high:g}] ({found_model})"))
            continue
        kept.append((result, n_items))
    scores: dict[str, tuple[float, float, tuple[str, ...], str]] = {
        r.name: (fraction(r, path), n_items, r.path, suffix or r.metric) for r, n_items in kept}
    info = content["model_info"]
    extra = info.get("additional_details") if isinstance(info.get("additional_details"), dict) else {}
    detailed = content.get("detailed_evaluation_results")
    evaluated = parse_timestamp(content.get("evaluation_timestamp"))
    if evaluated is None:
        stamps = [parse_timestamp(e.get("evaluation_timestamp")) for e in entries if isinstance(e, dict)]
        stamps = [s for s in stamps if s is not None]
        evaluated = max(stamps) if stamps else None
    return AggregateFile(
        path=path, schema=schema, model=(model_name or found_model), found_model=found_model,
        retrieved=parse_timestamp(content.get("retrieved_timestamp")), evaluated=evaluated, scores=scores,
        missing=missing, left_out=left_out,
        precision=str(extra["precision"]) if extra.get("precision") is not None else None,
        samples_file=(detailed.get("file_path") if isinstance(detailed, dict)
                      and isinstance(detailed.get("file_path"), str) else None),
        nested_stats=nested_stats(entries), collection=collection, benchmark=benchmark_of(content))


FORMAT = "Every Eval Ever aggregate"
#: The rule that decides between files of one model with the same retrieved_timestamp.
TIE_RULE = ("newest retrieved_timestamp wins; on a tie, the later evaluation_timestamp, then the file with more "
            "domains, then the file whose path sorts last")


def datastore_data(folder: Path) -> Path | None:
    """The ``data/`` folder of a datastore when ``folder`` is it or the folder above it, else None."""
    if folder.name == "data":
        return folder
    if (folder / "data").is_dir():
        return folder / "data"
    return None


def datastore_collections(folder: Path) -> list[tuple[str, int, int, list[str]]]:
    """The collections of a datastore (``folder`` is ``data/`` or above it): ``(name, files, models, benchmarks)``.

    Files are read bounded for their ``model_info.id`` (models counted by id, never by folder)
    and benchmark; a file that is no readable aggregate counts as a file only.
    """
    data = datastore_data(Path(folder)) if Path(folder).is_dir() else None
    if data is None:
        return []
    out = []
    for entry in sorted((p for p in data.iterdir() if p.is_dir() and not p.name.startswith(".")),
                        key=lambda p: p.name.lower()):
        files, models, benchmarks = 0, set(), set()
        for here, dirs, names in os.walk(entry):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in names:
                if not name.lower().endswith(".json") or name.startswith("."):
                    continue
                files += 1
                try:
                    content = head(Path(here, name), data).content
                except (JaggedInputError, OSError):
                    continue
                info = content.get("model_info") if is_aggregate(content) else None
                if isinstance(info, dict) and isinstance(info.get("id"), str) and info["id"].strip():
                    models.add(info["id"].strip())
                    benchmarks.add(benchmark_of(content))
        if files:
            out.append((entry.name, files, len(models), sorted((b for b in benchmarks if b), key=str.lower)))
    return out


def collection_of(path: Path, root: Path | None = None, model_id: str | None = None) -> str | None:
    """The collection a file belongs to, the folder below ``data/`` on its path; None outside the layout.

    A ``data/`` folder at or below ``root`` (the folder named), or holding ``root``, is a
    datastore's; higher up it counts only in the exact layout
    ``data/<collection>/<developer>/<model>/<file>`` with the developer of ``model_id``.
    """
    parts = path.parts
    base = len(root.parts) - 1 if root is not None else len(parts)
    for i in range(len(parts) - 3, -1, -1):
        if parts[i] != "data":
            continue
        if i >= base - 1:  # data/ at or below the root, or the root a collection folder in data/
            return parts[i + 1]
        developer = (model_id or "").split("/", 1)[0]
        if i == len(parts) - 5 and developer and normalised(developer) == normalised(parts[-3]):
            return parts[i + 1]
        return None
    return None


def _rank(file: AggregateFile) -> tuple[float, float, int, str]:
    return (file.retrieved if file.retrieved is not None else -math.inf,
            file.evaluated if file.evaluated is not None else -math.inf, len(file.scores), str(file.path))


def _replacement_note(r: Replaced[AggregateFile]) -> str:
    old, new = r.old, r.new
    text = (f"{old.path.name} ({old.model}, retrieved {iso(old.retrieved)}) superseded by {new.path.name} "
            f"({iso(new.retrieved)})")
    if not r.tie:
        return text
    if (old.evaluated or -math.inf) != (new.evaluated or -math.inf):
        why = "later evaluation_timestamp"
    elif len(old.scores) != len(new.scores):
        why = f"more domains ({len(new.scores)} against {len(old.scores)})"
    else:
        why = "later path"
    precisions = f"; precision {old.precision} / {new.precision}" if old.precision or new.precision else ""
    return f"{text}: tie on retrieved_timestamp, kept by {why}{precisions}"


def select_collection(files: list[AggregateFile], collection: str | None, source: str) -> list[AggregateFile]:
    """The files of the one collection chosen (or the only one); else an error listing them with file counts."""
    counts: dict[str | None, int] = {}
    for file in files:
        counts[file.collection] = counts.get(file.collection, 0) + 1
    named = sorted((c for c in counts if c is not None), key=str.lower)
    shown = listing([f"{c} ({plural(counts[c], 'file')})" for c in named], 20)
    if collection:
        chosen = [f for f in files if f.collection == collection]
        if not chosen:
            if not named:
                warnings.warn(f"--collection {collection!r} does not apply: {source} is a folder of EEE files, not "
                              "a datastore (data/<collection>/...); it is ignored", JaggedWarning, stacklevel=3)
                return files
            raise JaggedInputError(f"{source}: no Every Eval Ever collection {collection!r}; it holds {shown}")
        return chosen
    if len(counts) > 1:
        raise JaggedInputError(f"{source}: holds {len(counts)} Every Eval Ever collections: {shown}"
                               + (f" and {plural(counts[None], 'file')} outside data/<collection>/"
                                  if None in counts else "") + "; choose one with --collection NAME")
    return files


def select_benchmark(files: list[AggregateFile], where: Any, source: str) -> list[AggregateFile]:
    """The files of the benchmark chosen (``--where dataset=NAME``) or of the only one, which files naming none join."""
    wanted = [value for column, value in parse_where(where) if column == "dataset"]
    named: dict[str, list[AggregateFile]] = {}
    for file in files:
        if file.benchmark is not None:
            named.setdefault(file.benchmark, []).append(file)
    shown = listing([f"{name} ({plural(len(group), 'file')}, {plural(len({f.model for f in group}), 'model')})"
                     for name, group in sorted(named.items(), key=lambda kv: kv[0].lower())], 10)
    if wanted:
        chosen = [f for f in files if f.benchmark in set(wanted)]
        if not chosen:
            raise JaggedInputError(f"{source}: --where dataset={wanted[0]}: no benchmark of that name; it holds "
                                   f"{shown or 'files that name no benchmark'}")
        return chosen
    if len(named) > 1:
        raise JaggedInputError(f"{source}: holds {len(named)} benchmarks: {shown}; their domains are not comparable, "
                               'so choose one with --where "dataset=NAME"')
    if len(named) == 1:
        only = next(iter(named))
        for file in files:
            file.benchmark = only
    return files


def _left_out_summary(files: list[AggregateFile]) -> list[str]:
    """One sentence per reason: the names left out for it and in how many files."""
    by_reason: dict[str, dict[str, int]] = {}
    for file in files:
        for name, reason in dict.fromkeys(file.left_out):
            by_reason.setdefault(reason, {})
            by_reason[reason][name] = by_reason[reason].get(name, 0) + 1
    lines = []
    for reason, names in by_reason.items():
        n_files = max(names.values())
        lines.append(f"{reason}: {listing(list(names), 6, quote=True)} ({plural(len(names), 'name')}, "
                     f"in {plural(n_files, 'file')})")
    return lines


def _case_twins(models: list[str]) -> list[str]:
    groups: dict[str, list[str]] = {}
    for model in models:
        groups.setdefault(model.casefold(), []).append(model)
    return [" / ".join(sorted(g)) for g in groups.values() if len(g) > 1]


def _records(files: list[AggregateFile]) -> tuple[list[dict[str, Any]], dict[str, str | None]]:
    paths: dict[str, tuple[str, ...]] = {}
    for file in files:
        for domain, (_, _, path, _) in file.scores.items():
            paths.setdefault(domain, path)
    roots = list(dict.fromkeys(p[0] for p in paths.values() if len(p) > 1))
    categories = category_map(paths, roots)
    records = [{"model": file.model, "domain": domain, "score": score, "n_items": n_items,
                "category": categories.get(domain), "dataset": file.benchmark}
               for file in files for domain, (score, n_items, _, _) in file.scores.items()]
    return records, categories


def _schema_text(files: list[AggregateFile]) -> str:
    counts: dict[str, int] = {}
    for file in files:
        counts[file.schema] = counts.get(file.schema, 0) + 1
    return ", ".join(f"{v} ({plural(n, 'file')})" for v, n in sorted(counts.items()))


def _details(files: list[AggregateFile], read: list[AggregateFile], records: list[dict[str, Any]],
             notes: list[str], collection: str | None) -> dict[str, Any]:
    n_items = [r["n_items"] for r in records]
    known = sum(1 for n in n_items if not math.isnan(n))
    metrics = list(dict.fromkeys(m for f in files for (_, _, _, m) in f.scores.values()))
    details: dict[str, Any] = {
        "detected": f"{FORMAT} ({plural(len(files), 'file')} used of {len(read)})",
        "collection": collection or "none (a folder of EEE files)",
        "schema versions": _schema_text(read),
        "metric": listing(metrics, 4),
        "models": sorted({f.model for f in files}),
        "leaves": list(dict.fromkeys(d for f in files for d in f.scores)),
        "item counts": (f"{known:,} of {len(n_items):,} scores" if known else "none in the files"),
    }
    left_out = _left_out_summary(files)
    if left_out:
        details["left out"] = left_out
    missing = [f"{f.model}: {d}" for f in files for d in f.missing]
    if missing:
        details["not evaluated"] = [f"{plural(len(missing), 'score')} of -1 (not evaluated) are missing values, not "
                                    f"scores: {listing(missing, 6)}"]
    nested = sum(f.nested_stats for f in files)
    if nested:
        details["nested statistics"] = (f"{nested:,} statistics inside score_details.details (timings, token counts, "
                                        "# eval) are not domains; '# eval' gives n_items")
    if notes:
        details["superseded"] = notes
        if any("tie on retrieved_timestamp" in n for n in notes):
            details["tie rule"] = TIE_RULE
    twins = _case_twins(sorted({f.model for f in files}))
    if twins:
        details["ids differing by case"] = f"kept apart as different models: {listing(twins, 5)}"
    unknown = sorted(s for s in {f.schema for f in read} if schema_family(s) not in KNOWN_SCHEMAS)
    if unknown:
        details["schema note"] = f"schema {', '.join(unknown)} is newer than jagged knows; read as 0.3"
    linked = sum(1 for f in files if f.samples_file)
    if linked:
        details["instance-level files"] = (f"{plural(linked, 'file')} point to *_samples.jsonl files; point jagged at "
                                           "those for item-level data")
    return details


def _read_files(parsed: list[Any], *, metric: str | None, model_name: str | None,
                strict: bool) -> tuple[list[AggregateFile], list[str]]:
    """Each parsed file read; a damaged one left out and named (``"path (reason)"``) unless ``strict``."""
    files, damaged = [], []
    for p in parsed:
        info = p.content.get("model_info") if isinstance(p.content, dict) else None
        name = collection_of(p.path, p.root, info.get("id") if isinstance(info, dict) and
                             isinstance(info.get("id"), str) else None)
        try:
            files.append(read_aggregate(p.content, p.path, metric=metric, model_name=model_name, collection=name,
                                        strict=strict))
        except InputTooLargeError:
            raise
        except JaggedInputError as exc:
            if strict or len(parsed) == 1:
                raise
            where = p.path.relative_to(p.root) if p.root is not None and p.path.is_relative_to(p.root) else p.path
            damaged.append(f"{where} (damaged, left out: {str(exc).split(': ', 1)[-1]})")
    if not files:
        raise JaggedInputError(f"every Every Eval Ever file is damaged: {'; '.join(damaged[:3])}")
    return files, damaged


def load_aggregates(parsed: list[Any], *, source: str, collection: str | None = None,
                    metric: str | None = None, model_name: str | None = None, strict: bool = False,
                    where: Any = (), **_: Any) -> ScoreRead:
    """Read EEE aggregate files into per-domain scores (loader options: :mod:`jagged.options`).

    ``--where dataset=NAME`` chooses the benchmark; every ``where`` condition is applied to the
    rows afterwards. ``details`` says what was left out and why, missing (-1) cells,
    superseded files and ties.
    """
    files, damaged = _read_files(parsed, metric=metric, model_name=model_name, strict=strict)
    label = files[0].path.name if len(files) == 1 else source
    chosen = select_benchmark(select_collection(files, collection, label), where, label)
    found = sorted({f.found_model for f in chosen})
    if model_name and len(found) > 1:
        warnings.warn(f"--model-name {model_name!r} merges files of {len(found)} models ({listing(found)})",
                      JaggedWarning, stacklevel=3)
    winners, replaced = newest([((f.collection, f.benchmark, f.model), f) for f in chosen], rank=_rank)
    used = list(winners.values())
    records, _ = _records(used)
    if not records:
        reasons = _left_out_summary(used)
        raise JaggedInputError(f"{label}: no result is a domain score ({'; '.join(reasons[:3]) or 'no results'})")
    notes = [_replacement_note(r) for r in replaced]
    names = {f.collection for f in chosen}
    details = _details(used, chosen, records, notes, next(iter(names)) if len(names) == 1 else None)
    if used[0].benchmark is not None:
        details = {"benchmark": used[0].benchmark, **details}
    if damaged:
        details["not used"] = damaged
    model_notes = {f.model: f"not evaluated (-1): {listing(f.missing, 4)}" for f in used if f.missing}
    return ScoreRead(scores=pd.DataFrame(records), label=label, paths=[f.path for f in used], format=FORMAT,
                     model_notes=model_notes, details=details)


READER = Reader(name="EEE aggregate", family="Every Eval Ever files", what="Every Eval Ever aggregate files",
                options=("collection", "metric", "model_name", "strict", "where"), recognises=is_aggregate,
                read=load_aggregates)
