"""Every Eval Ever datastores: many aggregate files, one collection, one :class:`Dataset`.

The datastore keeps one file per model and scrape at
``data/<collection>/<developer>/<model>/<uuid>.json``; jagged reads a file, a collection
folder, ``data/``, the folder above it, or any folder of such files:

* **Collection**: the folder below ``data/`` on a file's path (every file below a named
  collection folder is that collection's). A folder holding several needs
  ``--collection NAME`` (the error lists them with file counts). A folder of EEE files
  outside that layout is one set with no collection name.
* **Benchmark** (:func:`~jagged.readers.eee.benchmark_of`): benchmarks are kept apart,
  since domains of two benchmarks are not comparable; a collection holding two (RewardBench
  and RewardBench 2) is refused with both named, and ``--where dataset=NAME`` reads one
  (``details["benchmark"]``; the rows carry it in a ``dataset`` column while read).
* **Model**: ``model_info.id``, never the folder (a sanitised id); ids differing only by
  case stay apart and are listed.
* **Several files of one model and benchmark**: the newest ``retrieved_timestamp`` wins,
  the others listed as superseded. **Ties** (float16 and bfloat16 runs scraped at the same
  second) go to the later ``evaluation_timestamp``, then more domains, then the path that
  sorts last, and are reported with the precisions involved.
* The ``evaluation_result_id`` hierarchy gives ``category``; item counts give ``n_items``.
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from jagged.errors import JaggedInputError, JaggedWarning
from jagged.readers.eee import (
    KNOWN_SCHEMAS,
    AggregateFile,
    benchmark_of,
    is_aggregate,
    normalised,
    read_aggregate,
    schema_family,
)
from jagged.readers.files import head
from jagged.readers.limits import InputTooLargeError
from jagged.readers.reader import Reader, Replaced, ScoreRead, category_map, iso, newest
from jagged.readers.tables import parse_where
from jagged.text import listing, plural

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
    """The files of the benchmark chosen (``--where dataset=NAME``) or of the only one.

    Files naming no benchmark join the one named benchmark when there is one.
    """
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
