"""Every Eval Ever (EEE) aggregate files: one model's results, read into domain rows.

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

What becomes a domain, and what is left out (every exclusion is listed with its reason in
``Dataset.details["left out"]``, which ``jagged validate`` and the report show):

* **Scores are mapped to [0, 1]** from the declared ``min_score``/``max_score`` (a 0--100
  percentage becomes a fraction). A score outside its declared range is an error. A result
  with no declared range is used as it is when it lies in [0, 1] and left out otherwise; an
  unbounded range (``"Infinity"``) is left out.
* **Not scores**: ``lower_is_better: true`` results (inference time, calibration error);
  HELM's efficiency and general-information columns (``- # eval``, ``- # train``,
  ``- truncated``, ``- # prompt tokens``, ``- # output tokens``, ``- Observed inference time
  (s)``), recognised by name or by HELM's ``tab``; metrics whose ``metric_unit`` /
  ``metric_kind`` is a time, a count, a cost or a rank; mean win rates (a rank statistic);
  ``levels`` scores; results of a perturbation (HELM robustness / fairness variants).
  The nested statistics inside ``score_details.details`` (which carry their own ``score``
  keys) are never read as results, except ``# eval`` for the item count.
* **Aggregate rows** are not domains: names such as "All Subjects", "overall", "average",
  "mean", "Score"; a row named like the benchmark itself (the ``dataset_name`` all the
  file's results share, the source's name, the collection); a node of the hierarchy that
  has rows below it; and Global-MMLU-Lite's "Culturally Sensitive" / "Culturally Agnostic",
  which cut across the languages.
* **-1 is "not evaluated"** (HELM's marker): a missing value, never a score. The model then
  lacks that domain (it is incomplete), and the cells are listed.
* **Several results with one name** (the 0.1 HELM converter repeats ``multiple_choice_joint``
  per metric and split): the ``test`` split is preferred, then the metric named by
  ``--metric`` (else ``exact_match``/``accuracy``/``acc``/``em`` when present, else the first);
  the others are left out as duplicates.
* HELM's 0.1 names ``<Subject> - EM`` lose their metric suffix when every score of the file
  carries the same one ("Abstract Algebra - EM" is the domain "Abstract Algebra").

Nothing here depends on the ``every-eval-ever`` package: the fields above are read and
checked directly, with one-line errors naming the file and the field.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from jagged.errors import JaggedInputError
from jagged.readers.eee_results import (
    ITEM_COUNT_SUFFIX,
    NOT_EVALUATED,
    Result,
    fractions,
    item_count,
    name_is_aggregate,
    normalised,
    read_results,
)

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
    """The file's ``schema_version`` as ``major.minor.patch`` text (``"0.2.0"``).

    Raises
    ------
    JaggedInputError
        Missing, or not a version string.
    """
    raw = content.get("schema_version")
    if not isinstance(raw, str) or not re.search(r"\d+\.\d+", raw):
        raise JaggedInputError(f"{path.name}: field 'schema_version' is {str(raw)[:30]!r}, not an EEE schema "
                               "version such as '0.2.0'")
    return re.search(r"\d+\.\d+(\.\d+)?", raw).group(0)


def schema_family(version: str) -> str:
    """``major.minor`` of a version (``"0.2.2"`` -> ``"0.2"``)."""
    return ".".join(version.split(".")[:2])


# --------------------------------------------------------------------------------------
# one file


@dataclass(eq=False)
class AggregateFile:
    """One EEE aggregate file: a model and its domain scores.

    Attributes
    ----------
    path : pathlib.Path
    schema : str
        ``schema_version`` (``"0.2.0"``).
    model : str
        ``model_info.id`` (or the ``model_name`` override).
    found_model : str
        ``model_info.id`` as written.
    retrieved : float or None
        ``retrieved_timestamp`` in seconds since the epoch.
    evaluated : float or None
        ``evaluation_timestamp`` (file level, else the latest of the results).
    scores : dict
        Domain to (fraction, n_items, hierarchy path, metric).
    missing : list of str
        Domains whose score is -1 (not evaluated).
    left_out : list of (str, str)
        (evaluation name, reason) for every result that is no domain.
    precision : str or None
        ``model_info.additional_details.precision`` (Open LLM Leaderboard runs).
    samples_file : str or None
        ``detailed_evaluation_results.file_path``.
    nested_stats : int
        Nested statistics in ``score_details.details`` (never domains).
    collection : str or None
        Set by the collection reader from the file's place in the datastore.
    benchmark : str or None
        The benchmark the file holds results of (:func:`benchmark_of`): files of one model
        supersede each other only within a benchmark.
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
    """The benchmark a parsed aggregate file holds results of: what tells RewardBench from RewardBench 2.

    The ``source_data.dataset_name`` every entry of ``evaluation_results`` shares; else (a
    suite whose results name their own datasets, as HELM's or the Open LLM Leaderboard's)
    the file's top-level ``source_data.dataset_name`` (schema 0.1); else
    ``source_metadata.source_name``; else None.
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
    """Read one aggregate file into its domain scores and the results it leaves out.

    Parameters
    ----------
    content : dict
        The parsed file.
    path : pathlib.Path
        Where it came from.
    metric : str, optional
        Prefer results of this metric where a name appears several times.
    model_name : str, optional
        Replaces ``model_info.id``.
    collection : str, optional
        The collection the file belongs to (a row named like it is an aggregate).
    strict : bool
        Refuse a score outside its declared range instead of leaving it out (in
        ``left_out``, with the value, the range and the model).

    Returns
    -------
    AggregateFile

    Raises
    ------
    JaggedInputError
        A field jagged needs is missing or mistyped, or (``strict``) a score lies outside
        its declared range; one line naming the file and the field.
    """
    schema = schema_of(content, path)
    found_model = _model_id(content, path)
    read = read_results(content["evaluation_results"], path)
    results = read.results
    counts = _sibling_counts(results)
    top_items = _top_level_items(content)
    left_out: list[tuple[str, str]] = []
    candidates = []
    for result, reason in zip(results, read.reasons):
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
        result.name: (value, n_items, result.path, suffix or result.metric)
        for (result, n_items), value in zip(kept, fractions([r for r, _ in kept], path))}
    info = content["model_info"]
    extra = info.get("additional_details") if isinstance(info.get("additional_details"), dict) else {}
    detailed = content.get("detailed_evaluation_results")
    evaluated = parse_timestamp(content.get("evaluation_timestamp"))
    if evaluated is None:
        stamps = [parse_timestamp(e.get("evaluation_timestamp")) for e in content["evaluation_results"]
                  if isinstance(e, dict)]
        stamps = [s for s in stamps if s is not None]
        evaluated = max(stamps) if stamps else None
    return AggregateFile(
        path=path, schema=schema, model=(model_name or found_model), found_model=found_model,
        retrieved=parse_timestamp(content.get("retrieved_timestamp")), evaluated=evaluated, scores=scores,
        missing=missing, left_out=left_out,
        precision=str(extra["precision"]) if extra.get("precision") is not None else None,
        samples_file=(detailed.get("file_path") if isinstance(detailed, dict)
                      and isinstance(detailed.get("file_path"), str) else None),
        nested_stats=read.nested_stats, collection=collection, benchmark=benchmark_of(content))


__all__ = ["AggregateFile", "KNOWN_SCHEMAS", "benchmark_of", "is_aggregate", "parse_timestamp", "read_aggregate",
           "schema_family", "schema_of"]
