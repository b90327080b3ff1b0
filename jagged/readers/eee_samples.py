"""Every Eval Ever instance-level files (``*_samples.jsonl``, schema 0.2 and 0.3): item-level data.

Each line is one sample of one evaluation of one model:

========================== ==============================================================
EEE field                  jagged
========================== ==============================================================
``sample_id``              ``item`` (``<evaluation_name>:<sample_id>`` when a read spans
                           several evaluations)
``evaluation.score``       ``correct`` (in [0, 1], or mapped from the linked aggregate's
                           declared range); ``evaluation.is_correct`` without a score
``evaluation_name``        ``domain``, or the ``metadata`` field named by ``--domain-key``;
                           with several evaluations, the evaluation is the ``category``
``model_id``               ``model`` (``--model-name`` overrides it)
``answer_attribution``     ``choice``: the terminal attribution's answer (else the last),
                           else ``output.raw``
``input.reference``        ``key``
``input.raw``              ``text`` (else ``input.formatted``), bounded
``input.choices``          ``options`` (a bounded JSON list)
========================== ==============================================================

``choice`` and ``key`` (option letters) only for **multiple-choice** samples: an
``input.choices`` list whose reference is a letter or one option's text. The **linked
aggregate** (whose ``detailed_evaluation_results.file_path`` names the file; looked for
beside it and in a datastore under ``data/*/<model id>/``) dates the run (the newest of a
model and evaluation wins) and maps scores; its ``checksum`` and ``total_rows`` are checked
(a mismatch is a warning).
"""

from __future__ import annotations

import glob
import hashlib
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from jagged.errors import JaggedInputError, JaggedWarning
from jagged.readers.eee import hierarchy_path, is_aggregate, parse_timestamp, read_result
from jagged.readers.files import read_json_text
from jagged.readers.items import cap_text, options_text
from jagged.readers.limits import InputTooLargeError
from jagged.readers.reader import (
    ItemRead,
    Parsed,
    Reader,
    category_map,
    mapped,
    metadata_domain,
    metadata_keys,
    newest,
    records,
)
from jagged.text import listing, plural

FORMAT = "Every Eval Ever instance-level"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def is_instance(content: Any) -> bool:
    """Whether parsed JSON is EEE instance-level records: ``sample_id`` with ``evaluation`` or ``model_id``."""
    first = content if isinstance(content, dict) else (content[0] if isinstance(content, list) and content else None)
    return isinstance(first, dict) and "sample_id" in first and ("evaluation" in first or "model_id" in first)


@dataclass
class Link:
    """The aggregate file that points to a samples file."""

    path: Path
    content: dict[str, Any]

    def ranges(self) -> dict[str, tuple[float | None, float | None]]:
        """Declared (min_score, max_score) of each result, by ``evaluation_result_id`` and name."""
        out: dict[str, tuple[float | None, float | None]] = {}
        for i, entry in enumerate(self.content.get("evaluation_results") or []):
            try:
                result = read_result(entry, i, self.path)
            except JaggedInputError:
                continue
            out.setdefault(result.raw_name, (result.low, result.high))
            rid = entry.get("evaluation_result_id") if isinstance(entry, dict) else None
            if isinstance(rid, str):
                out.setdefault(rid, (result.low, result.high))
        return out


def _points_to(content: Any, path: Path) -> bool:
    detailed = content.get("detailed_evaluation_results") if isinstance(content, dict) else None
    target = detailed.get("file_path") if isinstance(detailed, dict) else None
    return isinstance(target, str) and Path(target).name == path.name


def _try_aggregate(candidate: Path, path: Path, *, named: bool) -> Link | None:
    try:
        content = read_json_text(candidate)
    except InputTooLargeError:
        raise
    except JaggedInputError:
        return None
    if is_aggregate(content) and (named or _points_to(content, path)):
        return Link(candidate, content)
    return None


def find_aggregate(path: Path, model_id: str | None) -> Link | None:
    """The aggregate that points to a samples file, where one can be found cheaply (see the module docstring)."""
    stem = path.name[: -len("_samples.jsonl")] if path.name.endswith("_samples.jsonl") else None
    if stem and (path.parent / f"{stem}.json").is_file():
        found = _try_aggregate(path.parent / f"{stem}.json", path, named=True)
        if found:
            return found
    for candidate in sorted(path.parent.glob("*.json")):
        found = _try_aggregate(candidate, path, named=False)
        if found:
            return found
    if model_id:
        for ancestor in list(path.parents)[:6]:
            if (ancestor / "data").is_dir():
                for folder in dict.fromkeys((model_id, model_id.replace(":", "_"))):
                    for candidate in sorted((ancestor / "data").glob(f"*/{glob.escape(folder)}/*.json")):
                        found = _try_aggregate(candidate, path, named=False)
                        if found:
                            return found
    return None


def _check_link(link: Link, path: Path, n_rows: int) -> list[str]:
    """Checksum and row count against what the aggregate says; the mismatches."""
    detailed = link.content.get("detailed_evaluation_results") or {}
    problems = []
    algorithm = str(detailed.get("hash_algorithm") or "").lower()
    checksum = detailed.get("checksum")
    if algorithm in ("sha256", "md5") and isinstance(checksum, str):
        with open(path, "rb") as handle:  # read within the input cap already
            digest = hashlib.file_digest(handle, algorithm).hexdigest()
        if digest != checksum.lower():
            problems.append(f"{algorithm} differs from the checksum in {link.path.name}")
    total = detailed.get("total_rows")
    if isinstance(total, int) and not isinstance(total, bool) and total != n_rows:
        problems.append(f"{n_rows} rows, {link.path.name} says {total}")
    return problems


def _option_letter(value: Any, choices: list[Any]) -> str | None:
    """``value`` as an option letter: a letter within range, or the text of one option."""
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else None
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        return None
    text = str(value).strip()
    if len(text) == 1 and text.upper() in LETTERS[: len(choices)]:
        return text.upper()
    texts = [str(c).strip() for c in choices]
    return LETTERS[texts.index(text)] if text in texts and texts.index(text) < len(LETTERS) else None


def choice_and_key(record: dict[str, Any]) -> tuple[str | None, str | None]:
    """The chosen option and the key of a multiple-choice sample, as letters; (None, None) otherwise."""
    source = record.get("input") if isinstance(record.get("input"), dict) else {}
    choices = source.get("choices")
    if not isinstance(choices, list) or not choices:
        return None, None
    key = _option_letter(source.get("reference"), choices)
    if key is None:
        return None, None
    raw = record.get("answer_attribution")
    attributions = [a for a in raw if isinstance(a, dict)] if isinstance(raw, list) else []
    terminal = [a for a in attributions if a.get("is_terminal")]
    chosen = (terminal or attributions)[-1].get("extracted_value") if attributions else None
    if chosen is None:
        output = record.get("output") if isinstance(record.get("output"), dict) else {}
        chosen = output.get("raw")
    return _option_letter(chosen, choices), key


def sample_text(record: dict[str, Any]) -> tuple[str | None, str | None]:
    """The question (``input.raw``, else ``input.formatted``) and, for a multiple-choice sample, the options; bounded.
    """
    source = record.get("input") if isinstance(record.get("input"), dict) else {}
    text = cap_text(source.get("raw")) or cap_text(source.get("formatted"))
    choices = source.get("choices")
    multiple_choice = isinstance(choices, list) and bool(choices) and \
        _option_letter(source.get("reference"), choices) is not None
    return text, (options_text(choices) if multiple_choice else None)


def _correct(record: dict[str, Any], where: str, ranges: dict[str, tuple[float | None, float | None]]) -> float | None:
    """``evaluation.score`` in [0, 1] (mapped from a declared range), else ``is_correct``; None when absent."""
    evaluation = record.get("evaluation")
    if not isinstance(evaluation, dict):
        raise JaggedInputError(f"{where}: no field 'evaluation' (with 'score' or 'is_correct')")
    score, flag = evaluation.get("score"), evaluation.get("is_correct")
    if isinstance(score, bool):
        score = float(score)
    if isinstance(score, (int, float)):
        if not math.isfinite(score):
            raise JaggedInputError(f"{where}: field 'evaluation.score' is {score}, not a finite number")
        if 0.0 <= score <= 1.0:
            return float(score)
        low, high = ranges.get(str(record.get("evaluation_result_id")),
                               ranges.get(str(record.get("evaluation_name")), (None, None)))
        if low is not None and high is not None and math.isfinite(low) and math.isfinite(high) and high > low \
                and low <= score <= high:
            return (score - low) / (high - low)
        if isinstance(flag, bool):
            return float(flag)
        raise JaggedInputError(f"{where}: field 'evaluation.score' is {score:g}, outside [0, 1] and no declared range "
                               "maps it")
    if score is not None:
        raise JaggedInputError(f"{where}: field 'evaluation.score' is {str(score)[:30]!r}, not a number")
    if isinstance(flag, bool):
        return float(flag)
    return None


@dataclass(eq=False)
class SamplesFile:
    """One instance-level file, with its records checked for the fields jagged reads."""

    path: Path
    records: list[dict[str, Any]]
    model: str
    evaluation: str
    link: Link | None
    stamp: float
    schema: str
    problems: list[str]


def _sample_id(record: dict[str, Any], where: str) -> str:
    sid = record.get("sample_id")
    if sid is None or isinstance(sid, (dict, list, bool)) or str(sid).strip() == "":
        raise JaggedInputError(f"{where}: field 'sample_id' is {str(sid)[:40]!r}, not a string or number")
    return str(sid).strip()


def read_file(path: Path, content: Any, *, model_name: str | None = None) -> list[SamplesFile]:
    """Check one samples file; one :class:`SamplesFile` per (model, evaluation) it holds."""
    records = [content] if isinstance(content, dict) else list(content)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for number, record in enumerate(records, start=1):
        where = f"{path.name}: line {number}"
        if not isinstance(record, dict):
            raise JaggedInputError(f"{where} is {type(record).__name__}, not an object")
        model = model_name or record.get("model_id")
        if not isinstance(model, str) or not model.strip():
            raise JaggedInputError(f"{where}: field 'model_id' is {str(model)[:30]!r}, not a model id; pass "
                                   "--model-name")
        name = record.get("evaluation_name")
        if not isinstance(name, str) or not name.strip():
            raise JaggedInputError(f"{where}: field 'evaluation_name' is {str(name)[:30]!r}, not a name")
        groups.setdefault((model.strip(), name.strip()), []).append(dict(record, _line=number))
    first_model = next(iter(groups))[0] if groups else None
    link = find_aggregate(path, records[0].get("model_id") if records and isinstance(records[0], dict)
                          else first_model)
    problems = _check_link(link, path, len(records)) if link else []
    stamp = parse_timestamp(link.content.get("retrieved_timestamp")) if link else None
    if stamp is None:
        evaluation_id = str(records[0].get("evaluation_id") or "") if records else ""
        stamp = parse_timestamp(evaluation_id.rsplit("/", 1)[-1]) if "/" in evaluation_id else None
    version = str(records[0].get("schema_version") or "unknown") if records else "unknown"
    return [SamplesFile(path=path, records=rows, model=model, evaluation=name, link=link,
                        stamp=stamp if stamp is not None else path.stat().st_mtime,
                        schema=version.replace("instance_level_eval_", ""), problems=problems)
            for (model, name), rows in groups.items()]


@dataclass
class _Found:
    """Rows (model, domain, item, correct, choice, key, evaluation, text, options) and unscored sample ids."""

    rows: list[tuple] = field(default_factory=list)
    unscored: list[str] = field(default_factory=list)


def _one_result(file: SamplesFile, metric: str | None) -> SamplesFile:
    """Keep the records of one ``evaluation_result_id`` (``--metric``) when an evaluation has several."""
    ids = list(dict.fromkeys(str(r.get("evaluation_result_id")) for r in file.records
                             if r.get("evaluation_result_id") is not None))
    if metric:
        if metric not in ids:
            if len(ids) > 1:
                raise JaggedInputError(f"{file.path.name}: no evaluation_result_id {metric!r} for {file.evaluation!r}; "
                                       f"it has {listing(ids)}")
            return file
        file.records = [r for r in file.records if str(r.get("evaluation_result_id")) == metric]
        return file
    if len(ids) > 1:
        raise JaggedInputError(f"{file.path.name}: {file.evaluation!r} has samples of {len(ids)} results "
                               f"({listing(ids)}); choose one with --metric RESULT_ID")
    return file


def _file_rows(file: SamplesFile, *, domain_key: str | None, several: bool, found: _Found) -> None:
    """Add one (model, evaluation)'s samples to ``found``."""
    ranges = file.link.ranges() if file.link else {}
    available = metadata_keys(file.records[:500]) if domain_key else []
    seen: set[str] = set()
    for record in file.records:
        where = f"{file.path.name}: line {record['_line']}"
        sid = _sample_id(record, where)
        if sid in seen:
            raise JaggedInputError(f"{where}: sample_id {sid!r} appears twice for {file.model}, "
                                   f"{file.evaluation!r}")
        seen.add(sid)
        value = _correct(record, where, ranges)
        if value is None:
            found.unscored.append(sid)
            continue
        domain = file.evaluation
        if domain_key:
            domain = metadata_domain(record, domain_key, where, available)
        item = f"{file.evaluation}:{sid}" if several else sid
        found.rows.append((file.model, domain, item, value, *choice_and_key(record), file.evaluation,
                           *sample_text(record)))


def _categories(items: pd.DataFrame, files: list[SamplesFile], domain_key: str | None, source: str
                ) -> dict[str, str | None]:
    """With ``--domain-key`` and several evaluations, the evaluation; else the evaluation names' hierarchy."""
    if domain_key:
        evaluations = items.groupby("domain", sort=False)["evaluation"].unique()
        if len({f.evaluation for f in files}) < 2:
            return {d: None for d in evaluations.index}
        for domain, names in evaluations.items():
            if len(names) > 1:
                raise JaggedInputError(f"{source}: domain {domain!r} ({domain_key}) occurs in evaluations "
                                       f"{listing(names)}")
        return {d: names[0] for d, names in evaluations.items()}
    paths = {f.evaluation: hierarchy_path(f.records[0].get("evaluation_result_id"), f.evaluation) for f in files}
    roots = list(dict.fromkeys(p[0] for p in paths.values() if len(p) > 1))
    return category_map(paths, roots)


def read_samples(parsed: list[Any], *, source: str, metric: str | None = None, model_name: str | None = None,
                 domain_key: str | None = None, **_: Any) -> ItemRead:
    """Read EEE instance-level files into an item table; ``metric`` picks an ``evaluation_result_id``."""
    files = [_one_result(f, metric) for p in parsed
             for f in read_file(p.path, records(p.content), model_name=model_name)]
    winners, replaced = newest((((f.model, f.evaluation), f) for f in files), rank=lambda f: (f.stamp, str(f.path)))
    used = list(winners.values())
    several = len({f.evaluation for f in used}) > 1
    found = _Found()
    for file in used:
        _file_rows(file, domain_key=domain_key, several=several, found=found)
        for problem in file.problems:
            warnings.warn(f"{file.path.name}: {problem}", JaggedWarning, stacklevel=3)
    label = used[0].path.name if len({f.path for f in used}) == 1 else source
    if found.unscored:
        warnings.warn(f"{label}: {plural(len(found.unscored), 'sample')} without evaluation.score or is_correct left "
                      f"out: {listing(found.unscored)}", JaggedWarning, stacklevel=3)
    if not found.rows:
        raise JaggedInputError(f"{label}: no sample has an evaluation.score or is_correct")
    items = pd.DataFrame(found.rows, columns=["model", "domain", "item", "correct", "choice", "key", "evaluation",
                                              "text", "options"])
    categories = _categories(items, used, domain_key, source)
    items["category"] = mapped(items["domain"], categories)
    if items["key"].isna().all():
        items = items.drop(columns=["choice", "key"])
    details = _details(used, files, items, replaced, domain_key)
    items = items[[c for c in ("model", "domain", "item", "correct", "category", "choice", "key", "text", "options")
                   if c in items]]
    return ItemRead(items=items.reset_index(drop=True), categories=categories,
                    paths=list(dict.fromkeys(f.path for f in used)), model_notes={}, details=details,
                    format=FORMAT)


def _details(used: list[SamplesFile], files: list[SamplesFile], items: pd.DataFrame, replaced: list[Any],
             domain_key: str | None) -> dict[str, Any]:
    paths = list(dict.fromkeys(f.path for f in used))
    details: dict[str, Any] = {
        "detected": f"{FORMAT} ({plural(len(paths), 'file')})",
        "schema versions": ", ".join(sorted({f.schema for f in files})),
        "task": ", ".join(dict.fromkeys(f.evaluation for f in used)),
        "metric": "evaluation.score (is_correct where there is no score)",
        "models": sorted({f.model for f in used}),
        "leaves": sorted(items["domain"].unique().tolist()),
    }
    links = [f"{f.path.name} -> {f.link.path.name}" + (f" ({'; '.join(f.problems)})" if f.problems else
                                                       " (checksum and rows agree)")
             for f in used if f.link]
    details["linked aggregate"] = links or "none found (no aggregate file points to these samples)"
    if "key" in items.columns:
        details["multiple choice"] = (f"{int(items['key'].notna().sum()):,} items with the chosen option (choice) and "
                                      "the key, as letters")
    if domain_key:
        details["domain key"] = domain_key
    if replaced:
        details["superseded"] = [f"{r.old.path.name} ({r.key[0]}, {r.key[1]}) superseded by {r.new.path.name}"
                                 for r in replaced]
    return details


def _unused(found: list[Parsed]) -> list[str]:
    return [f"{plural(len(found), 'EEE instance-level file')} ({listing([p.path.name for p in found], 3)}): "
            "aggregate files are used instead; point jagged at the samples for item-level data"]


READER = Reader(name="EEE instance-level", family="Every Eval Ever files", what="Every Eval Ever instance-level files",
                options=("metric", "model_name", "domain_key"), recognises=is_instance, read=read_samples,
                unused=_unused)
