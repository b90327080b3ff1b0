"""What was read: the facts of a loaded dataset, worded once, and the paragraph ``jagged validate`` prints.

:func:`read_facts` is the one source of the "what was read" facts; the report's table
(:func:`jagged.views.overview.dataset_facts`), its provenance rows
(:func:`jagged.report.facts.input_facts`), the batch index and :func:`describe` format them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, NamedTuple

import pandas as pd

from jagged.readers.canonical import summarize
from jagged.readers.dataset import Dataset
from jagged.text import and_more, listing, plural, printable


class Fact(NamedTuple):
    """One fact of what was read: a stable ``key`` (``input``, ``format``, ... or a ``Dataset.details`` key), its table
    ``label`` and display ``value``."""

    key: str
    label: str
    value: str


def read_facts(dataset: Dataset, *, limit: int = 8) -> list[Fact]:
    """The facts of a loaded dataset, in display order (the one "what was read" builder).

    Input, format, scores (model × domain rows), models, domains, models with every domain,
    score range, item counts, categories and the selection (:func:`selection_text`) when any,
    then each ``Dataset.details`` entry with a short text (:func:`detail_text`; one named like
    a fact above gets " (listed)"). ``limit``: most names listed in one value.
    """
    facts = summarize(dataset.scores)
    complete = f"{facts['complete_models']} of {facts['models']}"
    if facts["incomplete"]:
        complete += f" (incomplete: {listing(facts['incomplete'], limit)})"
    rows = [
        Fact("input", "input", str(dataset.source)),
        Fact("format", "format", str(dataset.format)),
        Fact("scores", "scores (rows)", str(facts["rows"])),
        Fact("models", "models", str(facts["models"])),
        Fact("domains", "domains", str(facts["domains"])),
        Fact("complete", "models with every domain", complete),
        Fact("score range", "score range", f"{facts['score_min']:.4f} to {facts['score_max']:.4f}"),
        Fact("n_items", "item counts (n_items)", "present" if facts["has_n_items"] else "not given"),
    ]
    if facts["categories"]:
        rows.append(Fact("categories", "categories", str(facts["categories"])))
    if dataset.selection:
        rows.append(Fact("selection", "selection", selection_text(dataset.selection)))
    fixed = {row.key for row in rows}
    for key, value in dataset.details.items():
        text = detail_text(str(key), value, limit=limit)
        if text:  # objects the report shows in sections of their own have no short text
            key = str(key) if str(key) not in fixed else f"{key} (listed)"  # a reader's list of the models
            rows.append(Fact(key, key, text))
    return rows


def selection_text(selection: Mapping[str, Any], limit: int = 5) -> str:
    """What the selection options chose, in words (:attr:`jagged.Dataset.selection`).

    ``{"where": ["release=2024-08-31"], "n_items": "50"}`` reads ``rows where
    release=2024-08-31; n_items 50 for every domain (--n-items)``; lists of models or
    domains name their first ``limit``; a file of item counts is named without its folder.
    """
    parts = []
    if selection.get("where"):
        parts.append("rows where " + " and ".join(str(c) for c in selection["where"]))
    for key, word in (("models", "model"), ("domains", "domain")):
        if selection.get(key):
            chosen = list(selection[key])
            parts.append(f"{plural(len(chosen), word)} chosen ({listing(chosen, limit)})")
    counts = selection.get("n_items")
    if counts:
        whole = str(counts).strip().isdigit()
        parts.append(f"n_items {counts} for every domain (--n-items)" if whole
                     else f"n_items from {Path(str(counts)).name} (--n-items)")
    return "; ".join(parts)


def describe(dataset: Dataset) -> str:
    """One paragraph on a dataset: format, models, domains, completeness and score range, ending with ``OK``."""
    read = read_facts(dataset, limit=5)
    facts = summarize(dataset.scores)  # the lists behind the completeness and item-count prose
    n_fixed = 9 if facts["categories"] else 8  # the fixed facts; the details follow them
    fact = {f.key: f.value for f in read[:n_fixed]}
    parts = [f"{fact['input']}: {fact['format']} format, {plural(int(fact['scores']), 'score')} for "
             f"{plural(int(fact['models']), 'model')} in {plural(int(fact['domains']), 'domain')}"]
    if "categories" in fact:
        parts.append(f"grouped into {plural(int(fact['categories']), 'category')}")
    if facts["incomplete"]:
        parts.append(f"{plural(facts['complete_models'], 'model')} complete, {len(facts['incomplete'])} "
                     f"incomplete ({listing(facts['incomplete'], 5, quote=True)})")
    else:
        parts.append("every model has every domain")
    parts.append(f"scores range {fact['score range']}")
    if facts["has_n_items"]:
        parts.append("item counts (n_items) present")
    elif facts["n_items_known"]:
        parts.append(f"item counts (n_items) for {facts['n_items_known']} of {plural(facts['rows'], 'score')}, "
                     f"none for {listing(facts['without_n_items'], 5, quote=True)}")
    else:
        parts.append("no item counts (n_items)")
    parts += [f"{f.key}: {f.value}" for f in read[n_fixed:]]
    return "; ".join(parts) + ". OK"


def collections_text(source: str, collections: list[tuple[str, int, int, list[str]]]) -> str:
    """What ``jagged validate`` says about a datastore of several collections, a line each, and how to choose one.

    ``collections`` is :func:`jagged.readers.eee.datastore_collections`; a collection
    of several benchmarks names them (``--where "dataset=NAME"`` reads one).
    """
    lines = [f"{source}: an Every Eval Ever datastore of {plural(len(collections), 'collection')} "
             f"({plural(sum(c[1] for c in collections), 'file')}); read one with --collection NAME:"]
    width = max(len(c[0]) for c in collections)
    for name, files, models, benchmarks in collections:
        several = (f"; {len(benchmarks)} benchmarks ({listing(benchmarks, 4)}), read one with --where "
                   '"dataset=NAME"' if len(benchmarks) > 1 else "")
        lines.append(f"  {name:<{width}}  {plural(files, 'file')}, {plural(models, 'model')}{several}")
    return "\n".join(printable(line) for line in lines)  # a folder name is data: its newline never starts a line


def _hierarchy_text(paths: dict[str, str]) -> str:
    """``mmlu > 4 groups > 57 leaves`` from leaf -> ``root/group/leaf`` paths."""
    split = [p.split("/") for p in paths.values()]
    depth = max(len(p) for p in split)
    if depth < 2:
        return ""
    levels = []
    for level in range(depth - 1):
        names = sorted({p[level] for p in split if len(p) > level + 1})
        levels.append(names[0] if len(names) == 1 else f"{len(names)} groups")
    return " > ".join([*levels, f"{len(paths)} {'leaf' if len(paths) == 1 else 'leaves'}"])


def detail_text(key: str, value: object, limit: int = 5) -> str:
    """One ``Dataset.details`` entry as short text ("" for objects the report shows on their own).

    Strings and numbers as they are; lists of names as a count and the first few; lists of
    sentences up to ``limit`` of them; the ``group paths`` map as its levels.
    """
    if isinstance(value, (str, int, float)):
        return str(value)
    if isinstance(value, dict):
        if key == "group paths" and value:
            return _hierarchy_text({str(k): str(v) for k, v in value.items()})
        return ""
    if isinstance(value, (list, tuple)):
        items = [str(v) for v in value]
        if not items:
            return "none"
        if all(len(v) <= 60 and " " not in v for v in items) and len(items) > 1:
            shown = ", ".join(items[:limit])
            more = and_more(len(items), limit)
            return f"{len(items)} ({shown}{more})"
        shown = " | ".join(items[:limit])
        return shown + and_more(len(items), limit, sep=" | ")
    return ""


#: ``Dataset.details`` keys that record something the reader of a report should check.
NOTE_KEYS: dict[str, str] = {
    "limit": "limited run (--limit)",
    "status": "incomplete log",
    "superseded": "superseded by a newer run",
    "left out": "left out (no usable value, or not a domain)",
    "not evaluated": "not evaluated (-1 read as missing)",
    "not used": "file not used",
}


def evaluator_notes(dataset: Dataset) -> pd.DataFrame:
    """What an evaluator loader flagged (``kind``, ``detail``; :data:`NOTE_KEYS` of ``dataset.details``); empty for CSV
    input."""
    rows = []
    for key, kind in NOTE_KEYS.items():
        value = dataset.details.get(key)
        if isinstance(value, (list, tuple)):
            rows.extend((kind, str(v)) for v in value)
    return pd.DataFrame(rows, columns=["kind", "detail"])
