"""EEE results: one ``evaluation_results`` entry read and checked, told score or not, mapped to [0, 1].

:func:`read_result` keeps what jagged needs of an entry (a :class:`Result`); :func:`not_a_score`
and :func:`name_is_aggregate` say why a result is no domain; :func:`fraction` maps a score from
its declared range (``min_score``/``max_score``) to [0, 1]. The file-level reading, and the
table of fields per schema version, are in :mod:`jagged.readers.eee`.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jagged.errors import JaggedInputError

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

    Attributes
    ----------
    index : int
        Position in ``evaluation_results`` (for messages).
    name : str
        ``evaluation_name`` (after a shared metric suffix is removed, the domain).
    raw_name : str
        ``evaluation_name`` as written.
    score : float
        ``score_details.score`` as written.
    metric : str
        The metric's name (``metric_id``, ``metric_name`` or ``evaluation_description``).
    low, high : float or None
        The declared range (None: not declared; infinite: unbounded).
    lower_is_better : bool
    score_type : str or None
    tab : str or None
        HELM's tab (``Accuracy``, ``Efficiency``, ``General information``).
    unit : str
        ``metric_unit`` and ``metric_kind``, lower case, joined.
    split : str or None
        HELM converter's ``details.split``.
    perturbation : bool
        A HELM perturbation variant.
    n_items : float
        Items behind the score (NaN when the file does not say).
    path : tuple of str
        The result's place in the file's hierarchy (its ``evaluation_result_id`` split at
        ``/``, or the name).
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

    Per-domain labels (``mmlu_pro/biology`` for the domain "MMLU-Pro (Biology)") are skipped;
    a description such as "EM on Abstract Algebra" gives "EM".
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

    The hierarchy is the ``evaluation_result_id`` split at ``/`` (``mmlu_pro/biology``), else a
    dotted namespaced ``evaluation_name`` of three or more parts, each with a letter and no
    space (``vals_ai.mmlu_pro.biology``: benchmark ``mmlu_pro``, task ``biology``). Names with
    ``/`` are not split: ``allenai/ai2_arc`` is a dataset id, not a path.
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
    """Check one ``evaluation_results`` entry and keep what jagged reads.

    Raises
    ------
    JaggedInputError
        A missing or mistyped field; the message names the file, the entry and the field.
    """
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


@dataclass
class Results:
    """A file's ``evaluation_results`` as read by :func:`read_results`.

    Attributes
    ----------
    results : list of Result
        Every entry, in order.
    reasons : list of str or None
        Why each result is no score (:func:`not_a_score`), None for a score.
    nested_stats : int
        Nested statistics with a score in the entries' ``score_details.details``.
    """

    results: list[Result]
    reasons: list[str | None]
    nested_stats: int


def read_results(entries: list[Any], path: Path) -> Results:
    """Read every ``evaluation_results`` entry of a file (:func:`read_result`), in one pass over the file.

    Raises
    ------
    JaggedInputError
        A missing or mistyped field of an entry (see :func:`read_result`).
    """
    results = [read_result(entry, i, path) for i, entry in enumerate(entries)]
    return Results(results, [not_a_score(result) for result in results], nested_stats(entries))


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


def fractions(results: list[Result], path: Path) -> list[float]:
    """:func:`fraction` of every result, in order (the first outside its declared range raises)."""
    return [fraction(result, path) for result in results]


def fraction(result: Result, path: Path) -> float:
    """The score mapped to [0, 1] from the declared range.

    Raises
    ------
    JaggedInputError
        The score lies outside its declared range.
    """
    low, high = result.low, result.high
    if low is None or high is None:
        return result.score
    if not low <= result.score <= high:
        raise JaggedInputError(f"{_where(path, result.index, result.raw_name)}: field 'score_details.score' is "
                               f"{result.score:g}, outside its declared range [{low:g}, {high:g}]")
    return (result.score - low) / (high - low)


__all__ = ["AGGREGATE_NAMES", "CROSS_CUTTING", "HELM_NON_SCORE", "HELM_NON_SCORE_TABS", "ITEM_COUNT_SUFFIX",
           "NON_SCORE_UNITS", "NOT_EVALUATED", "WIN_RATE", "Result", "Results", "detail_dict", "fraction", "fractions",
           "hierarchy_path", "item_count", "name_is_aggregate", "nested_stats", "normalised", "not_a_score",
           "read_result", "read_results"]
