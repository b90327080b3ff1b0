"""lm-evaluation-harness ``samples_<task>_<ts>.jsonl`` files: item-level results, one line per document.

Each line is one document of one leaf task: ``doc_id`` is the item, the metric field
(``acc``, ``exact_match`` ...) ``correct``, and the task from the file name the domain (or
the ``doc`` field named by ``domain_key``). The model and the group structure come from
the ``results_<ts>.json`` the same run wrote beside it.

An item's ``text`` is the first of :data:`DOC_TEXT_KEYS` that ``doc`` has as text, else
its first request's prompt; its ``options`` the first of :data:`DOC_OPTION_KEYS` that
``doc`` has as a list (ARC's ``choices.text``, Winogrande's ``option1``, ``option2`` …),
else the continuations of a multiple-choice task's requests; both bounded.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from jagged.errors import JaggedInputError, JaggedWarning
from jagged.readers.choices import lmeval_choices
from jagged.readers.files import read_json_text
from jagged.readers.items import cap_text, options_text
from jagged.readers.limits import InputTooLargeError
from jagged.readers.lmeval_results import (
    DEFAULT_METRICS,
    TIMESTAMP,
    ResultsRun,
    finite_number,
    is_results,
    limit_note,
    metric_keys,
    metric_name,
    parse_timestamp,
    read_results,
    split_metric,
)
from jagged.readers.reader import ItemRead, Parsed, Reader, category_map, dotted, iso, newest, records
from jagged.text import listing, plural

#: A samples file name: the task and the run's timestamp.
SAMPLES_NAME = re.compile(rf"(?:^|_)samples_(?P<task>.+)_(?P<ts>{TIMESTAMP})\.jsonl?$")

#: Keys of a samples record that are never a metric.
SAMPLE_RESERVED: frozenset[str] = frozenset({
    "doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "doc_hash", "prompt_hash",
    "target_hash", "filter", "metrics",
})

#: ``doc`` fields holding the question, in the order tried (lm-eval task configs name them freely).
DOC_TEXT_KEYS: tuple[str, ...] = ("question", "Question", "query", "problem", "input", "sentence", "prompt",
                                  "ctx", "goal", "premise", "context", "text")
#: ``doc`` fields holding the options as a list, in the order tried.
DOC_OPTION_KEYS: tuple[str, ...] = ("options", "choices", "endings", "answers")


def _requests(record: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(context, continuation) of every request: ``{"gen_args_0": {"arg_0": …, "arg_1": …}}`` or ``[[…, …]]``."""
    args = record.get("arguments")
    if isinstance(args, dict):
        pairs = [(a.get("arg_0"), a.get("arg_1")) for a in args.values() if isinstance(a, dict)]
    elif isinstance(args, list) and args and all(isinstance(a, list) for a in args):
        pairs = [(a[0] if a else None, a[1] if len(a) > 1 else None) for a in args]
    else:
        pairs = [(args[0], args[1] if len(args) > 1 else None)] if isinstance(args, list) and args else []
    return [(c[0] if isinstance(c, list) and c else c, x) for c, x in pairs]


def doc_text(record: dict[str, Any]) -> tuple[str | None, str | None]:
    """The question and the options (a JSON list) of one samples record, bounded; None where it has none."""
    doc = record.get("doc") if isinstance(record.get("doc"), dict) else {}
    text = next((t for t in (cap_text(doc.get(k)) for k in DOC_TEXT_KEYS if isinstance(doc.get(k), str)) if t),
                None)
    requests = _requests(record)
    if text is None and requests:
        text = cap_text(requests[0][0])
    options = None
    for key in DOC_OPTION_KEYS:
        value = doc.get(key)
        if isinstance(value, dict):  # ARC: {"text": [...], "label": [...]}
            value = value.get("text")
        if isinstance(value, list) and value and all(isinstance(v, (str, int, float)) for v in value):
            options = options_text(value)
            break
    if options is None and "option1" in doc:
        options = options_text([doc[f"option{k}"] for k in range(1, 27) if f"option{k}" in doc])
    if options is None and len(requests) > 1 and all(isinstance(x, str) for _, x in requests):
        options = options_text([x for _, x in requests])  # a multiple-choice task: one request per option
    return text, options


def is_samples(content: Any) -> bool:
    """Whether parsed JSON is lm-eval samples: records (a list, or one object) with a ``doc_id``."""
    if isinstance(content, dict):
        return "doc_id" in content
    return (isinstance(content, list) and bool(content) and all(isinstance(r, dict) for r in content)
            and "doc_id" in content[0])


def _sibling_results(path: Path, stamp: str | None, cache: dict[Path, ResultsRun | None],
                     model_name: str | None) -> ResultsRun | None:
    """The results file written by the same run (same folder, same timestamp)."""
    if not stamp:
        return None
    found = []
    for candidate in sorted(path.parent.glob(f"*results_{stamp}.json")):
        if candidate not in cache:
            try:
                content = read_json_text(candidate)
                cache[candidate] = (read_results(content, candidate, model_name=model_name)
                                    if is_results(content) else None)
            except InputTooLargeError:
                raise
            except JaggedInputError:
                cache[candidate] = None
        if cache[candidate] is not None:
            found.append(cache[candidate])
    models = {run.model for run in found}
    return found[0] if len(models) == 1 else None


def _samples_metric(records: list[dict[str, Any]], metric: str | None, sibling: ResultsRun | None,
                    task: str, name: str) -> tuple[str, str | None]:
    """(field, filter) of the samples metric: option, ``acc``, the results' metric, or the only one."""
    present: dict[str, int] = {}
    for record in records[:200]:
        for key, value in record.items():
            if key not in SAMPLE_RESERVED and not key.endswith("_stderr"):
                present[key] = present.get(key, 0) + (finite_number(value) is not None)
    if metric:
        field_name, filt = split_metric(metric)
        if field_name not in present:
            raise JaggedInputError(f"{name}: no metric field {field_name!r} in the samples; found "
                                   f"{listing(sorted(present)) or 'none'}")
        return field_name, filt
    if "acc" in present and present["acc"]:
        return "acc", None
    if sibling is not None and sibling.rows.get(task):
        keys = [k for k in metric_keys(sibling.rows[task]) if finite_number(sibling.rows[task][k]) is not None]
        default = next((k for k in DEFAULT_METRICS if k in keys), None)
        keys = [default] if default else [k for k in keys if sibling.hib(task, metric_name(k)) is not False]
        if len(keys) == 1 and metric_name(keys[0]) in present:
            field_name, filt = split_metric(keys[0])
            return field_name, filt
    numeric = [k for k, n in present.items() if n]
    if len(numeric) == 1:
        return numeric[0], None
    raise JaggedInputError(f"{name}: cannot tell which field is the score ({listing(numeric) or 'none'}); "
                           "choose one with --metric NAME[,FILTER]")


def _select_filter(records: list[dict[str, Any]], filt: str | None, name: str) -> list[dict[str, Any]]:
    """Keep the records of one lm-eval filter (newer samples files have one line per filter)."""
    if not any("filter" in r for r in records):
        return records
    filters = list(dict.fromkeys(str(r.get("filter")) for r in records))
    if filt is None:
        if len(filters) == 1:
            return records
        if "none" not in filters:
            raise JaggedInputError(f"{name}: samples for several filters ({', '.join(filters)}); choose one with "
                                   "--metric NAME,FILTER")
        filt = "none"
    kept = [r for r in records if str(r.get("filter")) == filt]
    if not kept:
        raise JaggedInputError(f"{name}: no samples for filter {filt!r}; found {', '.join(filters)}")
    return kept


def _sample_values(records: list[dict[str, Any]], field_name: str, name: str) -> list[float]:
    values = []
    for record in records:
        raw = record.get(field_name)
        if isinstance(raw, bool):
            raw = float(raw)
        value = finite_number(raw)
        if value is None:
            if isinstance(raw, float) or raw is None:
                values.append(math.nan)
                continue
            raise JaggedInputError(
                f"{name}: metric {field_name!r} of doc_id {record.get('doc_id')!r} is {str(raw)[:40]!r}, not a "
                "per-item score (corpus-level metrics such as f1 or bleu cannot be used item by item)")
        if not 0.0 <= value <= 1.0:
            raise JaggedInputError(f"{name}: metric {field_name!r} of doc_id {record.get('doc_id')!r} is {value:g}, "
                                   "outside [0, 1]")
        values.append(value)
    return values


def read_samples(parsed: list[Any], *, source: str, task: str | None = None, metric: str | None = None,
                 model_name: str | None = None, domain_key: str | None = None, **_: Any) -> ItemRead:
    """Read lm-eval samples files into an item-level table.

    ``task`` keeps the samples of these tasks (comma-separated) or of the leaves of these
    groups; ``metric`` is ``NAME[,FILTER]``, the field used as ``correct`` and the filter
    whose lines are kept (default ``acc``, else the results file's default metric, else the
    only numeric field); ``model_name`` defaults to the results file of the same run;
    ``domain_key`` is a ``doc`` field (dotted for nested) naming the domain. Multiple-choice
    tasks also get ``choice`` and ``key``.
    """
    wanted = [t.strip() for t in str(task).split(",") if t.strip()] if task else []
    entries = _samples_entries(parsed, wanted, model_name)
    if wanted:
        entries = _wanted_entries(entries, wanted, task, source)
    best, superseded = _newest_samples(entries)
    frames, categories, metrics_used, notes, limits, paths = [], {}, {}, {}, [], []
    several_tasks = len({t for _, t in best}) > 1
    for (model, task_name), entry in best.items():
        name = entry["path"].name
        records = [r for r in entry["records"] if isinstance(r, dict)]
        lacking = next((n for n, r in enumerate(records, start=1) if "doc_id" not in r), None)
        if lacking is not None:
            raise JaggedInputError(f"{name}: line {lacking} has no doc_id")
        sibling = entry["sibling"]
        field_name, filt = _samples_metric(records, metric, sibling, task_name, name)
        if sibling is not None and sibling.hib(task_name, field_name) is False:
            raise JaggedInputError(f"{sibling.path.name}: metric {field_name!r} is marked higher_is_better: false; "
                                   "1 - value is not an error rate, choose a score with --metric")
        records = _select_filter(records, filt, name)
        metrics_used[field_name if not any("filter" in r for r in records)
                     else f"{field_name},{records[0].get('filter')}"] = True
        values = _sample_values(records, field_name, name)
        ids = [r.get("doc_id") for r in records]
        if len(set(map(str, ids))) != len(ids):
            dup = pd.Series(list(map(str, ids))).duplicated()
            raise JaggedInputError(f"{name}: doc_id {ids[int(dup.idxmax())]!r} appears twice")
        if domain_key:
            domains = _doc_domains(records, domain_key, name)
            for domain in set(domains):
                if categories.get(domain, task_name) != task_name:
                    raise JaggedInputError(f"{source}: domain {domain!r} ({domain_key}) occurs in tasks "
                                           f"{categories[domain]} and {task_name}; choose one with --task")
                categories[domain] = task_name
        else:
            domains = [task_name] * len(records)
        # item ids must be unique across domains: doc_id restarts at 0 in every task
        item_ids = [f"{task_name}:{i}" for i in ids] if several_tasks else [str(i) for i in ids]
        texts = [doc_text(r) for r in records]
        frame = pd.DataFrame({"model": model, "domain": domains, "item": item_ids, "correct": values,
                              "text": [t for t, _ in texts], "options": [o for _, o in texts]})
        answers, _ = lmeval_choices(records, field_name)  # multiple choice: argmax of the loglikelihoods, target
        if answers is not None:
            frame = frame.assign(**answers)
        missing = frame["correct"].isna()
        if missing.any():
            warnings.warn(f"{name}: {plural(int(missing.sum()), 'sample')} without a {field_name!r} value left out",
                          JaggedWarning, stacklevel=3)
            frame = frame[~missing.to_numpy()]
        frames.append(frame)
        paths.append(entry["path"])
        if sibling is not None:
            note = limit_note(sibling, [task_name])
            if note:
                notes[model] = note
                limits.append(note if len(best) == 1 else f"{name} ({model}): {note}")
    if not domain_key:
        categories = _samples_categories(best, wanted)
    items = pd.concat(frames, ignore_index=True)
    items["category"] = items["domain"].map(categories).astype(object)
    items["category"] = items["category"].where(items["category"].notna(), None)
    if items.empty:
        raise JaggedInputError(f"{source}: the samples hold no scored items")
    details = _samples_details(best, items, paths, wanted, metrics_used, limits, superseded, domain_key)
    return ItemRead(items=items.reset_index(drop=True), categories=categories, paths=paths,
                    model_notes=notes, details=details, format="lm-eval samples")


def _samples_entries(parsed: list[Any], wanted: list[str], model_name: str | None) -> list[dict[str, Any]]:
    """One entry per samples file: its records, task, model, the results file beside it and its time."""
    cache: dict[Path, ResultsRun | None] = {}
    entries = []
    for item in parsed:
        path = item.path
        match = SAMPLES_NAME.search(path.name)
        name_task, stamp = (match["task"], match["ts"]) if match else (None, None)
        sibling = _sibling_results(path, stamp, cache, model_name)
        model = model_name or (sibling.model if sibling else None)
        if not model:
            raise JaggedInputError(f"{path.name}: cannot tell which model wrote these samples (no results_"
                                   f"<timestamp>.json from the same run beside it); pass --model-name")
        if name_task is None:
            name_task = wanted[0] if len(wanted) == 1 else path.stem
        stamp_value = parse_timestamp(stamp) if stamp else None
        entries.append({"path": path, "records": records(item.content), "task": name_task, "model": model,
                        "sibling": sibling, "stamp": stamp_value if stamp_value is not None else path.stat().st_mtime})
    return entries


def _wanted_entries(entries: list[dict[str, Any]], wanted: list[str], task: str | None,
                    source: str) -> list[dict[str, Any]]:
    """The entries of the tasks asked for, or of the leaves of the groups asked for."""
    keep = set(wanted)
    for entry in entries:
        sib = entry["sibling"]
        if sib is not None:
            for name in wanted:
                if sib.holds(name):
                    keep.update(leaf for leaf, _ in sib.leaves(name))
    chosen = [e for e in entries if e["task"] in keep]
    if not chosen:
        found = sorted({e["task"] for e in entries})
        raise JaggedInputError(f"{source}: no samples for task {task!r}; found samples of {listing(found)}")
    return chosen


def _newest_samples(entries: list[dict[str, Any]]) -> tuple[dict[tuple[str, str], dict[str, Any]], list[str]]:
    """The newest samples file of every (model, task), and notes on those it replaces."""
    best, replaced = newest((((e["model"], e["task"]), e) for e in entries),
                            rank=lambda e: (e["stamp"], e["path"].name))
    notes = [f"{r.old['path'].name} ({r.key[0]}, task {r.key[1]}, {iso(r.old['stamp'])}) superseded by "
             f"{r.new['path'].name} ({iso(r.new['stamp'])})" for r in replaced]
    return best, notes


def _doc_domains(records: list[dict[str, Any]], domain_key: str, name: str) -> list[str]:
    """The domain of every record: the field ``domain_key`` of its ``doc``."""
    domains = []
    for record in records:
        try:
            value = dotted(record.get("doc"), domain_key)
        except KeyError:
            doc = record.get("doc")
            keys = listing(sorted(map(str, doc)), 12) if isinstance(doc, dict) else "none"
            raise JaggedInputError(f"{name}: doc of doc_id {record.get('doc_id')!r} has no key "
                                   f"{domain_key!r}; available keys: {keys}") from None
        if isinstance(value, (dict, list)) or value is None or str(value).strip() == "":
            raise JaggedInputError(f"{name}: doc key {domain_key!r} of doc_id {record.get('doc_id')!r} is "
                                   f"{str(value)[:40]!r}, not a domain name")
        domains.append(str(value).strip())
    return domains


def _samples_categories(best: dict[tuple[str, str], dict[str, Any]], wanted: list[str]) -> dict[str, str | None]:
    """Task to category, from the group paths of the results files beside the samples."""
    paths_by_leaf: dict[str, tuple[str, ...]] = {}
    for (_model, task_name), entry in best.items():
        sibling = entry["sibling"]
        found_path = None
        if sibling is not None:
            for root in (wanted or sibling.roots):
                if sibling.holds(root):
                    found_path = next((p for leaf, p in sibling.leaves(root) if leaf == task_name), None)
                    if found_path:
                        break
        paths_by_leaf.setdefault(task_name, found_path or (task_name,))
    roots = wanted or list(dict.fromkeys(p[0] for p in paths_by_leaf.values()))
    return category_map(paths_by_leaf, roots)


def _samples_details(best: dict[tuple[str, str], dict[str, Any]], items: pd.DataFrame, paths: list[Path],
                     wanted: list[str], metrics_used: dict[str, bool], limits: list[str], superseded: list[str],
                     domain_key: str | None) -> dict[str, Any]:
    """What ``jagged validate`` and the report say about the samples files read."""
    details: dict[str, Any] = {
        "detected": f"lm-evaluation-harness samples ({plural(len(paths), 'file')})",
        "task": ", ".join(wanted) if wanted else ", ".join(dict.fromkeys(t for _, t in best)),
        "metric": ", ".join(metrics_used),
        "models": sorted({m for m, _ in best}),
        "leaves": sorted(items["domain"].unique().tolist()),
        "limit": limits or ("none" if any(e["sibling"] is not None for e in best.values())
                            else "unknown (no results file beside the samples)"),
    }
    if superseded:
        details["superseded"] = superseded
    if domain_key:
        details["domain key"] = domain_key
    if len(paths) > 1:
        details["files"] = [p.name for p in paths]
    return details


def _unused(found: list[Parsed]) -> list[str]:
    return [f"{p.path.name} (lm-eval samples; results files are used instead)" for p in found]


READER = Reader(name="lm-eval samples", family="lm-eval outputs", what="lm-eval samples",
                options=("task", "metric", "model_name", "domain_key"), recognises=is_samples, read=read_samples,
                unused=_unused)

__all__ = ["READER", "SAMPLES_NAME", "is_samples", "read_samples"]
