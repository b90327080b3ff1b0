"""Inspect (UK AISI ``inspect_ai``) evaluation logs: ``.json`` files and ``.eval`` archives.

Read without ``inspect_ai``. A ``.json`` log is one object with ``version``, ``status``,
``eval`` (task, model, created ...), ``results`` and ``samples``; an ``.eval`` log is a zip
archive (:func:`jagged.readers.files.read_member`) holding ``header.json`` (while the run is
unfinished ``_journal/start.json`` stands in, status ``started``) and one
``samples/<id>_epoch_<n>.json`` per sample and epoch.

Each sample is one item: its ``id`` the item, one scorer's value ``correct``, the task (or
the metadata field named by ``domain_key``) the domain. Values map as Inspect's
``value_to_float``: numbers as they are, ``C``/``I``/``P``/``N`` as 1/0/0.5/0, ``yes``/``true``
1 and ``no``/``false`` 0; anything else is an error, not a silent 0. Epochs are averaged. A
log whose ``status`` is not ``success`` is refused unless ``allow_incomplete``; of several
logs of one model and task the newest (``eval.created``) is used.

Multiple-choice samples (a ``choices`` list) also give ``choice`` (the scorer's
``answer``, kept when every epoch chose the same) and ``key`` (the ``target``, letters
joined with ``", "``). Items get a bounded ``text`` (the ``input``, or its user messages)
and ``options``; an archive's samples keep only these texts, not their transcripts.
"""

from __future__ import annotations

import json
import math
import warnings
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from jagged.errors import JaggedInputError, JaggedWarning
from jagged.readers.files import MemberError, read_member
from jagged.readers.items import cap_text, options_text
from jagged.readers.limits import Budget, loads
from jagged.readers.reader import (
    Head,
    ItemRead,
    Parsed,
    Reader,
    domain_clash,
    mapped,
    metadata_domain,
    metadata_keys,
    newest,
)
from jagged.text import join_notes, listing, plural

#: Inspect's letter grades (``inspect_ai.scorer`` CORRECT, INCORRECT, PARTIAL, NOANSWER).
LETTER_VALUES: dict[str, float] = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
WORD_VALUES: dict[str, float] = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}


def _zip_json(archive: zipfile.ZipFile, name: str, path: Path, budget: Budget) -> Any:
    """One member parsed as JSON, its bytes and values counted against the archive's budget."""
    try:
        data = read_member(archive, name, path, budget)
    except MemberError as exc:
        raise JaggedInputError(f"{path.name}: member {name} cannot be read ({exc})") from None
    what = f"{path.name}: member {name}"
    try:
        text = data.decode("utf-8-sig")
        del data
        return loads(text, what)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise JaggedInputError(f"{what} is not valid JSON ({exc})") from None


def is_log(content: Any) -> bool:
    """Whether parsed JSON is an Inspect log: an ``eval`` object holding ``task`` and ``model``."""
    spec = content.get("eval") if isinstance(content, dict) else None
    return isinstance(spec, dict) and "task" in spec and "model" in spec


def read_eval_archive(path: Path) -> dict[str, Any]:
    """Read an Inspect ``.eval`` zip archive into the shape of a ``.json`` log (status ``started`` without a header)."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise JaggedInputError(f"{path.name}: not a readable zip archive ({exc})") from None
    budget = Budget(path.name)  # the members together
    with archive:
        names = archive.namelist()
        if "header.json" in names:
            log = _zip_json(archive, "header.json", path, budget)
        elif "_journal/start.json" in names:
            log = dict(_zip_json(archive, "_journal/start.json", path, budget), status="started")
        elif "start.json" in names:  # archives written by inspect_ai before 0.3.40 or so
            log = dict(_zip_json(archive, "start.json", path, budget), status="started")
            if "results.json" in names:
                log.update(_zip_json(archive, "results.json", path, budget))
        else:
            raise JaggedInputError(f"{path.name}: zip archive but not an Inspect .eval log (no header.json or "
                                   "_journal/start.json)")
        if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
            raise JaggedInputError(f"{path.name}: Inspect .eval header has no 'eval' object")
        samples = []
        for name in names:
            if name.startswith("samples/") and name.endswith(".json"):
                sample = _zip_json(archive, name, path, budget)
                if isinstance(sample, dict):
                    samples.append(_slim(sample))  # slimmed at once: full samples (transcripts) are not kept
    log["samples"] = samples
    return log


def _slim(sample: dict[str, Any]) -> dict[str, Any]:
    """Keep only what jagged reads of a sample (logs can be large); its input as bounded text."""
    keep = ("id", "epoch", "scores", "score", "metadata", "error", "target", "choices")
    slim = {k: sample[k] for k in keep if k in sample}
    slim["input"] = input_text(sample.get("input"))
    return slim


def _message_text(content: Any) -> str:
    """The text of a chat message's ``content``: a string, or its ``text`` parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content
                         if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


def input_text(value: Any) -> str | None:
    """A sample's ``input`` as bounded text: the string, or its user messages' text (else all messages')."""
    if isinstance(value, list):
        messages = [m for m in value if isinstance(m, dict)]
        users = [m for m in messages if m.get("role") == "user"] or messages
        value = "\n\n".join(t for t in (_message_text(m.get("content")) for m in users) if t.strip())
    return cap_text(value) if isinstance(value, str) else None


def _options(sample: dict[str, Any]) -> str | None:
    """The ``choices`` of a multiple-choice sample as the ``options`` cell (a bounded JSON list)."""
    choices = sample.get("choices")
    return options_text(choices) if isinstance(choices, list) and choices else None


def score_to_float(value: Any) -> float | None:
    """One Inspect score value as a number, like ``inspect_ai.scorer.value_to_float``; None when it is no score."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(float(value)) else None
    if isinstance(value, str):
        text = value.strip()
        if text in LETTER_VALUES:
            return LETTER_VALUES[text]
        if text.lower() in WORD_VALUES:
            return WORD_VALUES[text.lower()]
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _created(log: dict[str, Any], path: Path) -> float:
    text = log["eval"].get("created")
    if isinstance(text, str):
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return path.stat().st_mtime


def _sample_scores(sample: dict[str, Any]) -> dict[str, Any]:
    scores = sample.get("scores")
    if isinstance(scores, dict):
        return scores
    if isinstance(sample.get("score"), dict):  # version 1 logs: a single score
        return {"score": sample["score"]}
    return {}


@dataclass(eq=False)
class InspectRun:
    """One Inspect log reduced to what jagged needs; ``created`` in seconds since the epoch."""

    path: Path
    task: str
    model: str
    status: str
    created: float
    samples: list[dict[str, Any]]


def read_log(content: dict[str, Any], path: Path, *, model_name: str | None = None,
             allow_incomplete: bool = False, check: bool = True) -> InspectRun:
    """Keep what jagged needs of an Inspect log and (unless ``check`` is False) check it (:func:`check_run`)."""
    spec = content.get("eval") or {}
    status = str(content.get("status") or "unknown")
    samples = content.get("samples")
    samples = samples if isinstance(samples, list) else []
    task = spec.get("task")
    model = model_name or spec.get("model")
    if not isinstance(task, str) or not task.strip():
        raise JaggedInputError(f"{path.name}: the Inspect log has no eval.task")
    if not isinstance(model, str) or not model.strip():
        raise JaggedInputError(f"{path.name}: the Inspect log has no eval.model; pass --model-name")
    run = InspectRun(path=path, task=task.strip(), model=model.strip(), status=status,
                     created=_created(content, path), samples=[_slim(s) for s in samples if isinstance(s, dict)])
    if check:
        check_run(run, allow_incomplete=allow_incomplete)
    return run


def check_run(run: InspectRun, *, allow_incomplete: bool = False) -> None:
    """Refuse a log that did not finish (unless ``allow_incomplete``) or holds no samples; the message names the file.
    """
    if run.status != "success" and not allow_incomplete:
        raise JaggedInputError(f"{run.path.name}: Inspect log status is {run.status!r}, not 'success'; pass "
                               "--allow-incomplete to use the samples it has")
    if not run.samples:
        raise JaggedInputError(f"{run.path.name}: the Inspect log holds no samples (written with log_samples "
                               "off?); jagged needs per-sample scores")


def _choose_scorer(run: InspectRun, metric: str | None) -> tuple[str, str | None]:
    """(scorer, key) for one log: the ``metric`` option ``SCORER[,KEY]``, or its only scorer."""
    found: dict[str, None] = {}
    for sample in run.samples:
        for name in _sample_scores(sample):
            found[str(name)] = None
    if not found:
        raise JaggedInputError(f"{run.path.name}: no sample of the Inspect log has a score")
    if metric:
        scorer, _, key = str(metric).partition(",")
        scorer, key = scorer.strip(), key.strip() or None
        if scorer not in found:
            raise JaggedInputError(f"{run.path.name}: no scorer {scorer!r} in the samples; scorers: "
                                   f"{listing(list(found))}")
        return scorer, key
    if len(found) > 1:
        raise JaggedInputError(f"{run.path.name}: samples are scored by several scorers ({listing(list(found))}); "
                               "choose one with --metric SCORER")
    return next(iter(found)), None


def _value(score: Any, scorer: str, key: str | None, where: str) -> float | None:
    """The number behind one sample's score; None when the sample has no value."""
    raw = score.get("value") if isinstance(score, dict) else score
    if isinstance(raw, dict):
        if key is None:
            if len(raw) != 1:
                raise JaggedInputError(f"{where}: scorer {scorer!r} gives several values ({listing(list(raw))}); "
                                       f"choose one with --metric {scorer},KEY")
            key = next(iter(raw))
        if key not in raw:
            raise JaggedInputError(f"{where}: scorer {scorer!r} has no value {key!r}; it has {listing(list(raw))}")
        raw = raw[key]
    if raw is None:
        return None
    value = score_to_float(raw)
    if value is None:
        raise JaggedInputError(f"{where}: score {str(raw)[:40]!r} of scorer {scorer!r} is not a number nor one of "
                               "C, I, P, N")
    if not 0.0 <= value <= 1.0:
        raise JaggedInputError(f"{where}: score {value:g} of scorer {scorer!r} is outside [0, 1]")
    return value


def _newest_runs(runs: list[InspectRun]) -> tuple[list[InspectRun], list[str]]:
    """The newest log (``eval.created``, then file name) of every (model, task), and what it replaced."""
    winners, replaced = newest((((run.model, run.task), run) for run in runs),
                               rank=lambda r: (r.created, r.path.name))
    notes = [f"{r.old.path.name} ({r.key[0]}, task {r.key[1]}) superseded by {r.new.path.name}" for r in replaced]
    return list(winners.values()), notes


def _sample_id(sample: dict[str, Any], run: InspectRun) -> tuple[Any, int]:
    """A sample's id and epoch, checked."""
    sid, epoch = sample.get("id"), sample.get("epoch", 1)
    if sid is None or isinstance(sid, (dict, list, bool)):
        raise JaggedInputError(f"{run.path.name}: a sample id is {str(sid)[:40]!r}, not a string or number")
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
        raise JaggedInputError(f"{run.path.name}: sample {sid!r} has epoch {str(epoch)[:20]!r}, "
                               "not a whole number from 1")
    return sid, epoch


def _choice_and_key(sample: dict[str, Any], score: Any) -> tuple[str | None, str | None]:
    """The chosen letter and the key of a multiple-choice sample; (None, None) for other samples."""
    if not isinstance(sample.get("choices"), list) or not sample["choices"]:
        return None, None
    answer = score.get("answer") if isinstance(score, dict) else None
    target = sample.get("target")
    if isinstance(target, list):
        target = ", ".join(str(t).strip() for t in target)
    choice = str(answer).strip() if isinstance(answer, (str, int)) and str(answer).strip() else None
    key = str(target).strip() if isinstance(target, (str, int)) and str(target).strip() else None
    return choice, key


@dataclass
class _Rows:
    """What reading the samples of the newest logs collects."""

    rows: list[tuple] = field(default_factory=list)
    categories: dict[str, str] = field(default_factory=dict)
    unscored: list[str] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    statuses: list[str] = field(default_factory=list)
    epochs: set[int] = field(default_factory=set)


def _read_run(run: InspectRun, scorer: tuple[str, str | None], *, domain_key: str | None, several_tasks: bool,
              several_runs: bool, source: str, out: _Rows) -> None:
    """Add one log's scored samples (model, domain, item, epoch, value, choice, key) to ``out``."""
    name, value_key = scorer
    available = metadata_keys(run.samples) if domain_key else []
    for sample in run.samples:
        sid, epoch = _sample_id(sample, run)
        where = f"{run.path.name}: sample {sid!r} (epoch {epoch})"
        score = _sample_scores(sample).get(name)
        value = None if score is None or sample.get("error") else _value(score, name, value_key, where)
        if value is None:
            out.unscored.append(f"{sid}" + (f" ({run.task})" if several_tasks else ""))
            continue
        domain = run.task
        if domain_key:
            domain = metadata_domain(sample, domain_key, where, available)
            if several_tasks:
                if out.categories.get(domain, run.task) != run.task:
                    raise domain_clash(source, domain, domain_key, out.categories[domain], run.task)
                out.categories[domain] = run.task
        item = f"{run.task}:{sid}" if several_tasks else str(sid)
        out.rows.append((run.model, domain, item, epoch, value, *_choice_and_key(sample, score),
                         input_text(sample.get("input")), _options(sample)))
        out.epochs.add(epoch)
    if run.status != "success":
        out.notes[run.model] = join_notes(out.notes.get(run.model), f"incomplete Inspect log (status {run.status})")
        out.statuses.append(f"{run.path.name} ({run.model}, task {run.task}): {run.status}" if several_runs
                            else run.status)


def _items_table(rows: list[tuple], categories: dict[str, str]) -> pd.DataFrame:
    """One row per (model, domain, item), epochs averaged; ``choice`` kept only when every epoch chose the same."""
    frame = pd.DataFrame(rows, columns=["model", "domain", "item", "epoch", "correct", "choice", "key", "text",
                                        "options"])
    grouped = frame.groupby(["model", "domain", "item"], sort=False, as_index=False)
    items = grouped["correct"].mean()
    texts = grouped[["text", "options"]].first()
    for column in ("text", "options"):
        items[column] = texts[column].astype(object).where(texts[column].notna(), None).to_numpy()
    items["category"] = mapped(items["domain"], categories)
    if frame["key"].notna().any():
        agreed = grouped.agg(n=("choice", "nunique"), choice=("choice", "first"), key=("key", "first"),
                             missing=("choice", lambda c: c.isna().any()))
        keep = (agreed["n"] == 1) & ~agreed["missing"]
        items["choice"] = agreed["choice"].where(keep, None).astype(object).to_numpy()
        items["key"] = agreed["key"].astype(object).to_numpy()
    return items


def read_logs(parsed: list[Any], *, source: str, metric: str | None = None, model_name: str | None = None,
              domain_key: str | None = None, allow_incomplete: bool = False, **_: Any) -> ItemRead:
    """Read Inspect logs into an item-level table (loader options: :mod:`jagged.options`)."""
    runs, superseded = _newest_runs([read_log(p.content, p.path, model_name=model_name, check=False)
                                     for p in parsed])
    for run in runs:  # superseded logs are not checked: a newer run replaces them
        check_run(run, allow_incomplete=allow_incomplete)
    label = runs[0].path.name if len(runs) == 1 else source
    scorers = {id(run): _choose_scorer(run, metric) for run in runs}
    several_tasks = len({run.task for run in runs}) > 1
    found = _Rows()
    for run in runs:
        _read_run(run, scorers[id(run)], domain_key=domain_key, several_tasks=several_tasks,
                  several_runs=len(runs) > 1, source=source, out=found)
    labels = [name + (f",{key}" if key else "") for name, key in scorers.values()]
    shown = labels[0] if len(set(labels)) == 1 else ", ".join(f"{lab} ({run.task})" for lab, run in zip(labels, runs))
    if found.unscored:
        warnings.warn(f"{label}: {plural(len(found.unscored), 'sample')} without a {shown} score (unscored or "
                      f"errored) left out: {listing(found.unscored)}", JaggedWarning, stacklevel=3)
    if not found.rows:
        raise JaggedInputError(f"{label}: no sample has a {shown} score")
    items = _items_table(found.rows, found.categories)
    details = _details(runs, items, shown, found, domain_key=domain_key, superseded=superseded)
    return ItemRead(items=items, categories=found.categories, paths=[run.path for run in runs],
                    model_notes=found.notes, details=details, format="Inspect log")


def _details(runs: list[InspectRun], items: pd.DataFrame, shown: str, found: _Rows, *, domain_key: str | None,
             superseded: list[str]) -> dict[str, Any]:
    """What ``jagged validate`` and the report say about the logs read."""
    details: dict[str, Any] = {
        "detected": f"Inspect log ({plural(len(runs), 'file')})",
        "task": ", ".join(dict.fromkeys(run.task for run in runs)),
        "metric": shown,
        "models": sorted({run.model for run in runs}),
        "leaves": sorted(items["domain"].unique().tolist()),
        "status": found.statuses or "success",
    }
    if len(found.epochs) > 1:
        details["epochs"] = f"{len(found.epochs)} epochs per sample, reduced by their mean"
    if "key" in items.columns:
        details["multiple choice"] = (f"{int(items['key'].notna().sum()):,} items with the chosen answer (choice) "
                                      "and the key")
    if domain_key:
        details["domain key"] = domain_key
    if superseded:
        details["superseded"] = superseded
    if found.unscored:
        details["left out"] = found.unscored
    if len(runs) > 1:
        details["files"] = [run.path.name for run in runs]
    return details


def _parse(head: Head) -> Parsed:
    content = read_eval_archive(head.path) if head.kind == "zip" else head.content
    return Parsed(head.path, READER, content, head.root, head.kind)


READER = Reader(name="Inspect log", family="Inspect logs", what="Inspect logs",
                options=("metric", "model_name", "domain_key", "allow_incomplete"), read=read_logs,
                kinds=("zip", "json"), recognises=is_log, parse=_parse)
