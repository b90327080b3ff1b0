"""lm-evaluation-harness outputs: ``results*.json`` (per-task scores) and ``samples_<task>_<ts>.jsonl`` (items).

**Results files** hold one row per task *and per group* in ``results`` and the group
structure in ``group_subtasks``. The domains are the **leaf** tasks reached by walking
``group_subtasks`` down from the chosen task; group rows are never domains nor averaged
with leaves. A leaf's ``category`` is its parent group
(:func:`jagged.readers.reader.category_map`), its full path kept in
``Dataset.details["group paths"]``. Files without ``group_subtasks`` (early 0.4.x) have
their structure read from the indentation of the ``alias`` fields. A leaf's score is one
metric, ``NAME,FILTER`` as lm-eval keys it (``acc,none``); its item count is
``n-samples[leaf].effective``. Runs made with ``--limit`` (``effective < original``, or
``config.limit`` set) are flagged.

**Samples files** hold one line per document of one leaf task: ``doc_id`` is the item, the
metric field (``acc``, ``exact_match`` ...) ``correct``, and the task from the file name the
domain (or the ``doc`` field named by ``domain_key``). The model and the group structure
come from the ``results_<ts>.json`` the same run wrote beside it. An item's ``text`` is the
first of :data:`DOC_TEXT_KEYS` that ``doc`` has as text, else its first request's prompt;
its ``options`` the first of :data:`DOC_OPTION_KEYS` that ``doc`` has as a list (ARC's
``choices.text``, Winogrande's ``option1``, ``option2`` …), else the continuations of a
multiple-choice task's requests; both bounded. Choice and key of multiple-choice tasks
are derived from the loglikelihoods (:func:`lmeval_choices`).
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError, JaggedWarning
from jagged.readers.files import read_json_text
from jagged.readers.items import cap_text, options_text
from jagged.readers.limits import InputTooLargeError
from jagged.readers.reader import (
    ItemRead,
    Parsed,
    Reader,
    ScoreRead,
    category_map,
    dotted,
    iso,
    mapped,
    newest,
    records,
)
from jagged.text import listing, plural

#: Metrics used as the score when present and no --metric is given.
DEFAULT_METRICS: tuple[str, ...] = ("acc,none", "acc")
#: The timestamp lm-eval puts in its file names.
TIMESTAMP = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
RESULTS_NAME = re.compile(rf"results_(?P<ts>{TIMESTAMP})\.json$")


def finite_number(value: Any) -> float | None:
    """A finite real number, or None (``"N/A"``, NaN, None, bool, lists ...)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def is_results(content: Any) -> bool:
    """Whether parsed JSON is lm-eval results: a ``results`` object and ``group_subtasks``, ``versions``, ``configs``...
    """
    return isinstance(content, dict) and isinstance(content.get("results"), dict) and any(
        k in content for k in ("group_subtasks", "versions", "configs", "n-shot", "config"))


def split_metric(spec: str) -> tuple[str, str | None]:
    """Split ``NAME[,FILTER]`` into its parts (FILTER is None when absent)."""
    name, sep, filt = str(spec).partition(",")
    name, filt = name.strip(), filt.strip()
    if not name:
        raise JaggedInputError(f"metric {spec!r}: expected NAME or NAME,FILTER (e.g. acc,none)")
    return name, (filt if sep and filt else None)


def metric_name(key: str) -> str:
    """The metric part of a results key such as ``acc,none``."""
    return key.partition(",")[0]


def metric_keys(row: dict[str, Any]) -> list[str]:
    """Metric keys of one ``results`` row: everything but ``alias``, blanks and stderr."""
    out = []
    for key in row:
        if not isinstance(key, str) or key.strip() in ("", "alias"):
            continue
        name = metric_name(key).strip()
        if not name or name.endswith("_stderr") or name == "samples":
            continue
        out.append(key)
    return out


def parse_timestamp(text: str) -> float | None:
    """Seconds since the epoch of an lm-eval file-name timestamp (``2024-11-21T16-28-31.022190``)."""
    stamp, _, fraction = text.partition(".")
    try:
        moment = datetime.strptime(stamp, "%Y-%m-%dT%H-%M-%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    return moment.timestamp() + (float("0." + fraction) if fraction.isdigit() else 0.0)


def model_from_args(model_args: Any) -> str | None:
    """The model named in ``config.model_args`` (``pretrained=...`` or ``model=...``)."""
    if isinstance(model_args, dict):
        pairs = {str(k): v for k, v in model_args.items()}
    elif isinstance(model_args, str):
        pairs = {}
        for part in model_args.split(","):
            key, sep, value = part.partition("=")
            if sep:
                pairs[key.strip()] = value.strip()
    else:
        return None
    for key in ("pretrained", "model", "engine", "path"):
        value = pairs.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


@dataclass(eq=False)
class ResultsRun:
    """One lm-eval results file, with what jagged needs from it.

    ``children`` maps each group to its sub-tasks (from ``group_subtasks`` or the aliases),
    ``groups`` holds the names that are never leaves, ``structure`` says which
    (``"group_subtasks"``, ``"aliases"`` or ``"flat"``).
    """

    path: Path
    model: str
    found_model: str
    timestamp: float
    rows: dict[str, dict[str, Any]]
    children: dict[str, list[str]]
    groups: set[str]
    higher_is_better: dict[str, dict[str, Any]]
    n_samples: dict[str, Any]
    limit: float | None
    structure: str
    roots: list[str] = field(default_factory=list)

    def holds(self, task: str) -> bool:
        """True when the task or group appears in this file."""
        return task in self.children or task in self.rows

    def leaves(self, task: str) -> list[tuple[str, tuple[str, ...]]]:
        """Leaf tasks below ``task`` with their paths (``task, ..., leaf``), in file order."""
        out: list[tuple[str, tuple[str, ...]]] = []

        def walk(node: str, path: tuple[str, ...]) -> None:
            if node in path:
                raise JaggedInputError(f"{self.path.name}: group_subtasks has a cycle through {node!r}")
            path = path + (node,)
            kids = self.children.get(node) or []
            if not kids:
                if node not in self.groups or node in self.rows and metric_keys(self.rows[node]):
                    out.append((node, path))
                return
            for kid in kids:
                walk(str(kid), path)

        walk(task, ())
        return out

    def hib(self, task: str, name: str) -> bool | None:
        """``higher_is_better`` of a metric for a task, None when the file does not say."""
        entry = self.higher_is_better.get(task)
        value = entry.get(name) if isinstance(entry, dict) else None
        return value if isinstance(value, bool) else None

    def effective(self, task: str) -> tuple[float, float]:
        """(effective, original) item counts of a task; NaN when unknown."""
        entry = self.n_samples.get(task)
        if not isinstance(entry, dict):
            return math.nan, math.nan
        eff, orig = finite_number(entry.get("effective")), finite_number(entry.get("original"))
        eff = eff if eff is not None and eff > 0 and eff == round(eff) else math.nan
        orig = orig if orig is not None and orig > 0 else math.nan
        return eff, orig


def _structure_from_aliases(rows: dict[str, dict[str, Any]]) -> tuple[dict[str, list[str]], str]:
    """Rebuild the group tree from alias indentation (``" - humanities"``, ``"  - formal_logic"``)."""
    levels = []
    for name, row in rows.items():
        alias = row.get("alias") if isinstance(row, dict) else None
        alias = alias if isinstance(alias, str) else name
        stripped = alias.lstrip(" ")
        levels.append((name, len(alias) - len(stripped) if stripped.startswith("- ") else 0))
    if not any(level for _, level in levels):
        return {}, "flat"
    children: dict[str, list[str]] = {}
    stack: list[tuple[str, int]] = []
    for name, level in levels:
        while stack and stack[-1][1] >= level:
            stack.pop()
        if stack:
            children.setdefault(stack[-1][0], []).append(name)
        stack.append((name, level))
    return children, "aliases"


def _roots(children: dict[str, list[str]], rows: dict[str, Any]) -> list[str]:
    below = {str(k) for kids in children.values() for k in kids}
    ordered = list(dict.fromkeys([*children, *rows]))
    return [name for name in ordered if name not in below]


def read_results(content: dict[str, Any], path: Path, *, model_name: str | None = None) -> ResultsRun:
    """Turn a parsed results file into a :class:`ResultsRun` (``model_name`` overrides the file's model)."""
    rows = content.get("results")
    if not isinstance(rows, dict) or not rows:
        raise JaggedInputError(f"{path.name}: lm-eval results file has an empty 'results'")
    rows = {str(k): (v if isinstance(v, dict) else {}) for k, v in rows.items()}
    gs = content.get("group_subtasks")
    if isinstance(gs, dict) and gs:
        children = {str(k): [str(x) for x in (v or [])] for k, v in gs.items() if isinstance(v, (list, tuple))}
        structure = "group_subtasks"
    else:
        children, structure = _structure_from_aliases(rows)
    group_rows = content.get("groups") if isinstance(content.get("groups"), dict) else {}
    groups = {str(g) for g in group_rows} | {g for g, kids in children.items() if kids}
    config = content.get("config") if isinstance(content.get("config"), dict) else {}
    found = content.get("model_name")
    found = found.strip() if isinstance(found, str) and found.strip() else None
    found = found or model_from_args(config.get("model_args"))
    if not found and not model_name:
        raise JaggedInputError(
            f"{path.name}: no model name (neither 'model_name' nor config.model_args pretrained=...); "
            "pass --model-name")
    date = finite_number(content.get("date"))
    match = RESULTS_NAME.search(path.name)
    if date is not None and date > 0:
        stamp = date
    elif match and parse_timestamp(match["ts"]) is not None:
        stamp = parse_timestamp(match["ts"])
    else:
        stamp = path.stat().st_mtime
    limit = finite_number(config.get("limit"))
    hib = content.get("higher_is_better") if isinstance(content.get("higher_is_better"), dict) else {}
    n_samples = content.get("n-samples") if isinstance(content.get("n-samples"), dict) else {}
    run = ResultsRun(path=path, model=model_name or found, found_model=found or model_name, timestamp=stamp,
                     rows=rows, children=children, groups=groups,
                     higher_is_better=hib, n_samples=n_samples, limit=limit if limit else None,
                     structure=structure)
    run.roots = _roots(children, rows)
    return run


def _root_labels(runs: list[ResultsRun]) -> list[str]:
    """Top-level tasks of all runs, groups first, each labelled with its number of leaves."""
    roots: dict[str, ResultsRun] = {}
    for run in runs:
        for root in run.roots:
            roots.setdefault(root, run)
    ordered = sorted(roots, key=lambda root: not any(r.children.get(root) for r in runs))
    counts = {root: len(roots[root].leaves(root)) for root in ordered}
    return [root if counts[root] <= 1 and not roots[root].children.get(root)
            else f"{root} ({counts[root]} {'leaf' if counts[root] == 1 else 'leaves'})" for root in ordered]


def _select_tasks(runs: list[ResultsRun], task: str | None, source: str) -> list[str]:
    """The tasks whose leaves are analysed: ``task`` (comma-separated) or the one top-level task."""
    if task:
        tasks = [t.strip() for t in str(task).split(",") if t.strip()]
        if not tasks:
            raise JaggedInputError(f"--task {task!r}: no task name given")
        for name in tasks:
            if not any(run.holds(name) for run in runs):
                where = runs[0].path.name if len(runs) == 1 else source
                raise JaggedInputError(f"{where}: no task or group {name!r}; it holds "
                                       f"{listing(_root_labels(runs), 20)}")
        return tasks
    labels = _root_labels(runs)
    if len(labels) == 1:
        return [runs[0].roots[0]]
    where = runs[0].path.name if len(runs) == 1 else source
    raise JaggedInputError(
        f"{where}: holds {len(labels)} top-level tasks/groups: {listing(labels, 20)}; "
        "choose one with --task (comma-separated for several)")


def _filter_of(key: str) -> str:
    return key.partition(",")[2]


def _choose_metric(pairs: list[tuple[ResultsRun, str]], metric: str | None, source: str) -> tuple[str, str | None]:
    """The metric (name, and filter when fixed) used as the score of every leaf.

    Default: ``acc``, else the only higher-is-better metric; the filter is resolved leaf by
    leaf (``none`` where a leaf has several), as leaderboard tasks use different filters for
    different leaves. A metric marked ``higher_is_better: false`` is refused.
    """
    counts: dict[str, int] = {}
    numeric: set[str] = set()
    for run, leaf in pairs:
        row = run.rows.get(leaf, {})
        for key in metric_keys(row):
            counts[key] = counts.get(key, 0) + 1
            if finite_number(row[key]) is not None:
                numeric.add(metric_name(key))
    if not counts:
        raise JaggedInputError(f"{source}: the selected leaves have no metric values in 'results'")
    names = list(dict.fromkeys(metric_name(k) for k in counts))
    hib_known = any(run.hib(leaf, name) is not None for run, leaf in pairs for name in names)

    def marked_false(name: str) -> ResultsRun | None:
        return next((run for run, leaf in pairs if run.hib(leaf, name) is False), None)

    if metric:
        name, filt = split_metric(metric)
        if not any(metric_name(k) == name and (filt is None or _filter_of(k) == filt) for k in counts):
            raise JaggedInputError(
                f"{source}: metric {metric!r} not found for the selected leaves; available: "
                f"{listing(sorted(counts), 12)}")
    elif "acc" in numeric:
        name, filt = "acc", None
    else:
        candidates = [n for n in names if n in numeric and marked_false(n) is None]
        if hib_known:
            candidates = [n for n in candidates if any(run.hib(leaf, n) is True for run, leaf in pairs)]
        if len(candidates) == 1:
            name, filt = candidates[0], None
        elif not candidates:
            raise JaggedInputError(
                f"{source}: no higher-is-better metric among {listing(sorted(counts), 12)}; "
                "jaggedness needs a score in [0, 1]")
        else:
            raise JaggedInputError(
                f"{source}: several metrics ({listing(candidates, 12)}); choose one with --metric NAME[,FILTER]")
    bad = marked_false(name)
    if bad is not None:
        raise JaggedInputError(
            f"{bad.path.name}: metric {name!r} is marked higher_is_better: false; 1 - value is not an error "
            "rate, choose a score with --metric")
    return name, filt


def _leaf_key(run: ResultsRun, leaf: str, name: str, filt: str | None) -> str | None:
    """The results key of ``name`` (and ``filt``) in one leaf's row; None when absent."""
    keys = [k for k in metric_keys(run.rows.get(leaf, {}))
            if metric_name(k) == name and (filt is None or _filter_of(k) == filt)]
    if len(keys) <= 1:
        return keys[0] if keys else None
    preferred = [k for k in keys if _filter_of(k) == "none"]
    if len(preferred) == 1:
        return preferred[0]
    raise JaggedInputError(f"{run.path.name}: leaf {leaf!r} has metric {name!r} under several filters "
                           f"({', '.join(_filter_of(k) for k in keys)}); choose one with --metric NAME,FILTER")


def _metric_label(keys: list[str]) -> str:
    """``acc,none``, or ``exact_match (filter none for 7 leaves, get-answer for 17)``."""
    distinct = list(dict.fromkeys(keys))
    if len(distinct) == 1:
        return distinct[0]
    names = list(dict.fromkeys(metric_name(k) for k in keys))
    parts = [f"{_filter_of(k) or 'no filter'} for {plural(keys.count(k), 'leaf')}" for k in distinct]
    return f"{'/'.join(names)} (filter {', '.join(parts)})"


def _supersede(runs: list[ResultsRun], tasks: list[str]) -> tuple[dict[tuple[str, str], ResultsRun], list[str]]:
    """The newest run per (model, task) and notes on the runs it replaces."""
    winners, replaced = newest((((run.model, task), run) for task in tasks for run in runs if run.holds(task)),
                               rank=lambda r: (r.timestamp, r.path.name))
    notes = [f"{r.old.path.name} ({r.key[0]}, task {r.key[1]}, {iso(r.old.timestamp)}) superseded by "
             f"{r.new.path.name} ({iso(r.new.timestamp)})" for r in replaced]
    return winners, notes


def limit_note(run: ResultsRun, leaves: list[str]) -> str | None:
    """Describe a ``--limit`` run, or None when every item was scored."""
    counts = [run.effective(leaf) for leaf in leaves]
    known = [(e, o) for e, o in counts if not (math.isnan(e) or math.isnan(o))]
    eff = sum(e for e, _ in known)
    orig = sum(o for _, o in known)
    reduced = any(e < o for e, o in known)
    if not reduced and not (run.limit and not known):
        return None
    flag = f"lm-eval --limit {run.limit:g}" if run.limit else "lm-eval run on a subset"
    if known:
        return f"{flag}: {eff:.0f} of {orig:.0f} items scored"
    return f"{flag} (item counts unknown)"


def load_results(parsed: list[Any], *, source: str, task: str | None = None, metric: str | None = None,
                 model_name: str | None = None, **_: Any) -> ScoreRead:
    """Read lm-eval results files into per-domain scores (loader options: :mod:`jagged.options`).

    Leaves with no usable value (``"N/A"``, NaN, missing) are left out with a warning;
    ``--limit`` runs are noted per model.
    """
    runs = [read_results(p.content, p.path, model_name=model_name) for p in parsed]
    names = sorted({r.found_model for r in runs})
    if model_name and len(names) > 1:
        warnings.warn(f"--model-name {model_name!r} merges runs of {len(names)} models ({listing(names)})",
                      JaggedWarning, stacklevel=3)
    label = runs[0].path.name if len(runs) == 1 else source
    tasks = _select_tasks(runs, task, label)
    winners, superseded = _supersede(runs, tasks)
    pairs, paths = _leaf_pairs(winners)
    if not pairs:
        raise JaggedInputError(f"{label}: task {', '.join(tasks)} has no leaf tasks")
    name, filt = _choose_metric(pairs, metric, label)
    shown_metric = name if filt is None else f"{name},{filt}"
    records, unusable, used_keys = _leaf_scores(pairs, name, filt, category_map(paths, tasks))
    if unusable:
        warnings.warn(f"{label}: {plural(len(unusable), 'leaf')} without a usable {shown_metric!r} value left "
                      f"out: {listing(unusable)}", JaggedWarning, stacklevel=3)
    if not records:
        raise JaggedInputError(f"{label}: no leaf of {', '.join(tasks)} has a usable {shown_metric!r} value")
    used = list(dict.fromkeys(run for run, _ in pairs))
    notes, limits = _limit_notes(used, pairs)
    details = _results_details(runs, used, tasks, paths, used_keys, limits, superseded, unusable)
    return ScoreRead(scores=pd.DataFrame(records), label=label, paths=[run.path for run in used],
                     format="lm-eval results", model_notes=notes, details=details)


def _leaf_pairs(winners: dict[tuple[str, str], ResultsRun]
                ) -> tuple[list[tuple[ResultsRun, str]], dict[str, tuple[str, ...]]]:
    """(run, leaf) for the leaves of every (model, task), from the run that wins it; and each leaf's path."""
    pairs: list[tuple[ResultsRun, str]] = []
    paths: dict[str, tuple[str, ...]] = {}
    for (_model, name), run in winners.items():
        for leaf, path in run.leaves(name):
            if (run, leaf) not in pairs:
                pairs.append((run, leaf))
                paths.setdefault(leaf, path)
    return pairs, paths


def _leaf_scores(pairs: list[tuple[ResultsRun, str]], name: str, filt: str | None,
                 categories: dict[str, str | None]) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Canonical records of the leaves with a usable value; the leaves without one; the keys used."""
    records, unusable, used_keys = [], [], []
    several_models = len({run.model for run, _ in pairs}) > 1
    for run, leaf in pairs:
        key = _leaf_key(run, leaf, name, filt)
        raw = run.rows.get(leaf, {}).get(key) if key else None
        value = finite_number(raw)
        if value is None:
            shown = "missing" if key is None else repr(raw)
            unusable.append(f"{leaf} ({shown}{', ' + run.model if several_models else ''})")
            continue
        if not 0.0 <= value <= 1.0:
            raise JaggedInputError(
                f"{run.path.name}: metric {key!r} of {leaf!r} is {value:g}, outside [0, 1]; jaggedness needs "
                "a score in [0, 1] (choose another with --metric)")
        used_keys.append(key)
        records.append({"model": run.model, "domain": leaf, "score": value,
                        "n_items": run.effective(leaf)[0], "category": categories.get(leaf)})
    return records, unusable, used_keys


def _limit_notes(used: list[ResultsRun], pairs: list[tuple[ResultsRun, str]]) -> tuple[dict[str, str], list[str]]:
    """Per-model ``--limit`` notes and the sentences for ``details["limit"]``."""
    notes: dict[str, str] = {}
    limits: list[str] = []
    for run in used:
        note = limit_note(run, [leaf for r, leaf in pairs if r is run])
        if note:
            notes[run.model] = note if run.model not in notes else f"{notes[run.model]}; {note}"
            limits.append(note if len(used) == 1 else f"{run.path.name} ({run.model}): {note}")
    return notes, limits


def _no_limit(used: list[ResultsRun]) -> str:
    """``details["limit"]`` when no run was limited: "none", or which files cannot tell (no ``n-samples``)."""
    blind = [run for run in used if not run.n_samples]
    if not blind:
        return "none"
    if len(blind) == len(used):
        return "unknown (no n-samples)"
    return (f"none in {plural(len(used) - len(blind), 'file')} with n-samples, unknown in "
            f"{listing([f'{run.path.name} ({run.model})' for run in blind], 3)} (no n-samples: no item counts)")


def _results_details(runs: list[ResultsRun], used: list[ResultsRun], tasks: list[str],
                     paths: dict[str, tuple[str, ...]], used_keys: list[str], limits: list[str],
                     superseded: list[str], unusable: list[str]) -> dict[str, Any]:
    """What ``jagged validate`` and the report say about the results files read."""
    details: dict[str, Any] = {
        "detected": f"lm-evaluation-harness results ({plural(len(used), 'file')})",
        "task": ", ".join(tasks),
        "metric": _metric_label(used_keys),
        "models": sorted({run.model for run in used}),
        "leaves": list(paths),
        "limit": limits or _no_limit(used),
    }
    if superseded:
        details["superseded"] = superseded
    if unusable:
        details["left out"] = unusable
    if len(used) > 1:
        details["files"] = [run.path.name for run in used]
    unused = [f"{run.path.name} (no task {', '.join(tasks)})" for run in runs
              if not any(run.holds(t) for t in tasks)]
    if unused:
        details["not used"] = unused
    details["group paths"] = {leaf: "/".join(path) for leaf, path in paths.items()}
    structures = sorted({run.structure for run in used})
    if structures != ["group_subtasks"]:
        details["structure"] = ", ".join(s if s != "aliases" else "inferred from alias indentation"
                                         for s in structures)
    return details


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
    """Read lm-eval samples files into an item-level table (loader options: :mod:`jagged.options`).

    ``task`` may name groups (their leaves, from the results file beside the samples);
    ``metric`` also picks the filter whose lines are kept (default ``acc``, else the results
    file's default, else the only numeric field); the model defaults to the results file of
    the same run.
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
    items["category"] = mapped(items["domain"], categories)
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


def _loglikelihoods(resps: Any) -> list[float] | None:
    """Per-choice loglikelihoods from ``filtered_resps`` (``[[ll, is_greedy], ...]``, numbers or strings)."""
    if not isinstance(resps, list) or len(resps) < 2:
        return None
    out = []
    for entry in resps:
        if isinstance(entry, list) and len(entry) == 1 and isinstance(entry[0], list):
            entry = entry[0]
        if not isinstance(entry, list) or len(entry) != 2:
            return None
        try:
            value = float(entry[0])
        except (TypeError, ValueError):
            return None
        if math.isnan(value):
            return None
        out.append(value)
    return out


def _continuations(arguments: Any, n: int) -> list[str] | None:
    """The choice texts of a multiple-choice request (``arguments.gen_args_k.arg_1``)."""
    if isinstance(arguments, dict):
        texts = []
        for k in range(n):
            request = arguments.get(f"gen_args_{k}")
            if not isinstance(request, dict) or not isinstance(request.get("arg_1"), str):
                return None
            texts.append(request["arg_1"])
        return texts
    return None


def _target_index(target: Any, texts: list[str] | None, n: int) -> int | None:
    """The key as a 0-based index: an integer target in range, or the one choice text equal to it."""
    if isinstance(target, bool):
        return None
    if isinstance(target, (int, float)) and float(target).is_integer() and 0 <= int(target) < n:
        return int(target)
    if isinstance(target, str):
        stripped = target.strip()
        if re.fullmatch(r"\d{1,6}", stripped) and int(stripped) < n:
            return int(stripped)
        if texts is not None:
            hits = [k for k, t in enumerate(texts) if t.strip() == stripped]
            if len(hits) == 1:
                return hits[0]
    return None


def lmeval_choices(records: Sequence[dict[str, Any]], metric: str) -> tuple[dict[str, list[Any]] | None, str]:
    """Choice, key and option count of lm-eval multiple-choice samples; (None, why not) where they cannot be derived.

    Notes
    -----
    lm-eval scores an item by the argmax of the per-choice loglikelihoods in
    ``filtered_resps`` (``acc``), or of the loglikelihoods divided by the choice texts'
    lengths in characters (``acc_norm``), the first of tied maxima. The key is ``target``: an
    option index, or the text of exactly one choice. Choices and keys (0-based indices as
    strings) are used only when they reproduce the metric for every record.
    """
    if metric not in ("acc", "acc_norm"):
        return None, f"metric {metric!r} is not a multiple-choice accuracy"
    choice, key, n_options = [], [], []
    for record in records:
        lls = _loglikelihoods(record.get("filtered_resps"))
        if lls is None:
            return None, "samples carry no per-choice loglikelihoods"
        texts = _continuations(record.get("arguments"), len(lls))
        if metric == "acc_norm":
            if texts is None:
                return None, "acc_norm needs the choice texts, which the samples lack"
            lls = [ll / max(len(t), 1) for ll, t in zip(lls, texts)]
        target = _target_index(record.get("target"), texts, len(lls))
        if target is None:
            return None, "target is not one of the choices"
        chosen = int(np.argmax(lls))
        value = record.get(metric)
        try:
            scored = float(value)
        except (TypeError, ValueError):
            return None, f"metric {metric!r} is not a number"
        if scored not in (0.0, 1.0) or (scored == 1.0) != (chosen == target):
            return None, f"argmax of the loglikelihoods does not reproduce {metric!r}"
        choice.append(str(chosen))
        key.append(str(target))
        n_options.append(len(lls))
    return {"choice": choice, "key": key, "n_options": n_options}, ""


def _unused(found: list[Parsed]) -> list[str]:
    return [f"{p.path.name} (lm-eval samples; results files are used instead)" for p in found]


RESULTS_READER = Reader(name="lm-eval results", family="lm-eval outputs", what="lm-eval results",
                options=("task", "metric", "model_name"), recognises=is_results, read=load_results)
SAMPLES_READER = Reader(name="lm-eval samples", family="lm-eval outputs", what="lm-eval samples",
                options=("task", "metric", "model_name", "domain_key"), recognises=is_samples, read=read_samples,
                unused=_unused)
