"""Evaluator outputs: lm-evaluation-harness, Inspect, Every Eval Ever and HELM.

This module is the one door :mod:`jagged.readers.load` uses for them. It reads each file
once, decides what it is **by content** (not by its name), and hands it to the module
that knows the format:

* :mod:`jagged.readers.lmeval` -- lm-evaluation-harness ``results*.json`` (per-task scores,
  domains are the leaf tasks of ``group_subtasks``) and ``samples_<task>_<ts>.jsonl``
  (item-level);
* :mod:`jagged.readers.inspect_logs` -- Inspect ``.json`` logs and ``.eval`` zip archives
  (item-level; deflate or Zstandard members);
* :mod:`jagged.readers.eee_collection` -- Every Eval Ever aggregate files (per-domain
  scores; a file, a collection, a datastore's ``data/`` folder or the folder above it),
  and :mod:`jagged.readers.eee_samples` -- EEE instance-level ``*_samples.jsonl``
  (item-level);
* :mod:`jagged.readers.helm` -- HELM run folders (``run_spec.json`` with
  ``per_instance_stats.json``; item-level), one or a suite of them.

A folder may hold any number of files of one of those families (searched recursively,
as lm-eval writes ``<output>/<model>/results_<ts>.json``). When a folder holds both
per-domain files and item-level ones of a family (lm-eval results and samples, EEE
aggregates and samples), the per-domain files are used and the item-level ones are listed
in ``Dataset.details["not used"]``; point jagged at the item-level files to use them.

Options (all optional, ``None`` meaning "not given"):

``task``
    lm-eval: the group (or comma-separated tasks) whose leaves are the domains.
``metric``
    lm-eval: ``NAME[,FILTER]``; Inspect: ``SCORER[,KEY]``; HELM: the per-instance stat;
    EEE: the metric preferred where a result name repeats (aggregates) or the
    ``evaluation_result_id`` (samples).
``model_name``
    Overrides the model name found in the files.
``domain_key``
    Item-level inputs: the per-item field naming the domain (Inspect and EEE sample
    metadata, lm-eval ``doc``); dotted paths reach nested fields.
``allow_incomplete``
    Inspect: accept logs whose status is not ``success``.
``collection``
    Every Eval Ever datastore: the collection (``data/<collection>/``) to read; required
    when the folder holds several.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from jagged.errors import JaggedInputError, JaggedWarning
from jagged.readers import eee, eee_samples, helm, inspect_logs, lmeval
from jagged.readers.files import read_json_text
from jagged.readers.limits import InputTooLargeError
from jagged.text import listing, one_line, plural

#: File name endings looked at inside a folder.
EVALUATOR_SUFFIXES: tuple[str, ...] = (".json", ".jsonl", ".eval")
#: Options this module understands; others passed through ``load`` are ignored.
OPTION_KEYS: tuple[str, ...] = ("task", "metric", "model_name", "domain_key", "allow_incomplete", "collection")

LMEVAL_RESULTS = "lm-eval results"
LMEVAL_SAMPLES = "lm-eval samples"
INSPECT_LOG = "Inspect log"
EEE_AGGREGATE = "EEE aggregate"
EEE_SAMPLES = "EEE instance-level"
HELM_RUN = "HELM run"
#: Families of kinds: a read uses one family.
FAMILIES: dict[str, str] = {LMEVAL_RESULTS: "lm-eval outputs", LMEVAL_SAMPLES: "lm-eval outputs",
                            INSPECT_LOG: "Inspect logs", EEE_AGGREGATE: "Every Eval Ever files",
                            EEE_SAMPLES: "Every Eval Ever files", HELM_RUN: "HELM runs"}


@dataclass
class Parsed:
    """One evaluator file, read and classified.

    Attributes
    ----------
    path : pathlib.Path
        The file (for a HELM run, its folder).
    kind : str
        One of :data:`FAMILIES`' keys.
    content : object
        The parsed content: a dict (results, Inspect ``.json`` log or ``.eval`` archive in
        the same shape, EEE aggregate) or a list of records (samples); for a HELM run,
        its folder.
    """

    path: Path
    kind: str
    content: Any


def classify(path: Path, content: Any) -> str | None:
    """Say which evaluator wrote ``content``, from its keys; ``None`` when unknown.

    * lm-eval results: an object with a ``results`` object and at least one of
      ``group_subtasks``, ``versions``, ``configs``, ``n-shot``, ``config``.
    * Inspect log: an object with an ``eval`` object holding ``task`` and ``model``.
    * EEE aggregate: an object with an ``evaluation_results`` list and ``model_info``.
    * EEE instance-level: records with a ``sample_id`` and ``evaluation`` or ``model_id``.
    * lm-eval samples: records (a list, or one object) with a ``doc_id``.
    * HELM run: a ``run_spec.json`` (``adapter_spec``, ``scenario_spec``) or a
      ``per_instance_stats.json`` (records with ``instance_id`` and ``stats``).
    """
    if lmeval.is_results(content):
        return LMEVAL_RESULTS
    if inspect_logs.is_log(content):
        return INSPECT_LOG
    if eee.is_aggregate(content):
        return EEE_AGGREGATE
    if eee_samples.is_instance(content):
        return EEE_SAMPLES
    if lmeval.is_samples(content):
        return LMEVAL_SAMPLES
    if helm.is_run_file(content):
        return HELM_RUN
    return None


def _describe_unknown(content: Any) -> str:
    if isinstance(content, dict):
        keys = ", ".join(repr(k) for k in list(content)[:8])
        return f"a JSON object with keys {keys}" if keys else "an empty JSON object"
    if isinstance(content, list):
        return f"a JSON list of {len(content)} values"
    return f"a JSON {type(content).__name__}"


def parse_file(path: Path, kind: str | None = None) -> Parsed:
    """Read one file and classify it by content.

    Parameters
    ----------
    path : pathlib.Path
        The file.
    kind : {"json", "zip"}, optional
        What :func:`jagged.readers.files.sniff` found; sniffed here when omitted.

    Raises
    ------
    JaggedInputError
        Unreadable, or not an output of a supported evaluator.
    """
    if kind is None:
        with open(path, "rb") as handle:
            kind = "zip" if handle.read(4) == b"PK\x03\x04" else "json"
    if kind == "zip":
        return Parsed(path, INSPECT_LOG, inspect_logs.read_eval_archive(path))
    content = read_json_text(path)
    found = classify(path, content)
    if found is None:
        raise JaggedInputError(
            f"{path.name}: JSON but not an evaluator output jagged reads (expected lm-eval results or samples, an "
            f"Inspect log, an Every Eval Ever file or a HELM run); found {_describe_unknown(content)}")
    if found == HELM_RUN:
        return Parsed(path.parent, HELM_RUN, path.parent)
    if found in (LMEVAL_SAMPLES, EEE_SAMPLES) and isinstance(content, dict):
        content = [content]
    return Parsed(path, found, content)


def _options(options: dict[str, Any]) -> dict[str, Any]:
    """Keep the options this module knows, dropping the ones not given."""
    return {k: options[k] for k in OPTION_KEYS if options.get(k) not in (None, "", False)}


def _warn_unused(options: dict[str, Any], used: tuple[str, ...], what: str) -> dict[str, Any]:
    """Warn about the options a reader does not take; return the ones it does."""
    for key in options:
        if key not in used:
            flag = "--" + key.replace("_", "-")
            warnings.warn(f"{flag} does not apply to {what} and is ignored", JaggedWarning, stacklevel=3)
    return {k: v for k, v in options.items() if k in used}


def _check_one_family(parsed: list[Parsed], source: str) -> None:
    families = list(dict.fromkeys(FAMILIES[p.kind] for p in parsed))
    if len(families) > 1:
        first = next(p for p in parsed if FAMILIES[p.kind] == families[0])
        second = next(p for p in parsed if FAMILIES[p.kind] == families[1])
        raise JaggedInputError(f"{source}: mixes {families[0]} ({first.path.name}) and {families[1]} "
                               f"({second.path.name}); point jagged at one kind")


def _dispatch(parsed: list[Parsed], *, source: str, options: dict[str, Any], ignored: list[str],
              root: Path | None = None):
    """Send classified files to the reader of their family."""
    order = [LMEVAL_RESULTS, INSPECT_LOG, EEE_AGGREGATE, HELM_RUN, EEE_SAMPLES, LMEVAL_SAMPLES]
    parsed = sorted(parsed, key=lambda p: order.index(p.kind))
    _check_one_family(parsed, source)
    kinds = {p.kind for p in parsed}
    if INSPECT_LOG in kinds:
        used = _warn_unused(options, ("metric", "model_name", "domain_key", "allow_incomplete"), "Inspect logs")
        dataset = inspect_logs.load_logs(parsed, source=source, **used)
    elif LMEVAL_RESULTS in kinds:
        samples = [p for p in parsed if p.kind == LMEVAL_SAMPLES]
        ignored = ignored + [f"{p.path.name} (lm-eval samples; results files are used instead)" for p in samples]
        used = _warn_unused(options, ("task", "metric", "model_name"), "lm-eval results")
        dataset = lmeval.load_results([p for p in parsed if p.kind == LMEVAL_RESULTS], source=source, **used)
    elif LMEVAL_SAMPLES in kinds:
        used = _warn_unused(options, ("task", "metric", "model_name", "domain_key"), "lm-eval samples")
        dataset = lmeval.load_samples(parsed, source=source, **used)
    elif EEE_AGGREGATE in kinds:
        from jagged.readers import eee_collection

        samples = [p for p in parsed if p.kind == EEE_SAMPLES]
        if samples:
            ignored = ignored + [f"{plural(len(samples), 'EEE instance-level file')} ({listing([p.path.name for p in samples], 3)}): "
                                 "aggregate files are used instead; point jagged at the samples for item-level data"]
        used = _warn_unused(options, ("collection", "metric", "model_name"), "Every Eval Ever aggregate files")
        dataset = eee_collection.load_aggregates([p for p in parsed if p.kind == EEE_AGGREGATE], source=source,
                                                 root=root, **used)
    elif EEE_SAMPLES in kinds:
        used = _warn_unused(options, ("metric", "model_name", "domain_key"), "Every Eval Ever instance-level files")
        dataset = eee_samples.load_samples(parsed, source=source, **used)
    else:
        used = _warn_unused(options, ("metric", "model_name"), "HELM runs")
        folders = list(dict.fromkeys(p.content for p in parsed))
        dataset = helm.load_runs(folders, source=source, **used)
    if ignored:
        dataset.details["not used"] = [*dataset.details.get("not used", []), *ignored]
    return dataset


def one_line_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Make sure every error message is one line, whatever names the files hold.

    An integer too large for a float (JSON allows 4,300 digits; a float holds 308) is an
    input error too, wherever a reader converts it.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except OverflowError as exc:
            name = Path(args[0]).name if args else "input"
            raise JaggedInputError(one_line(f"{name}: a number is too large ({exc}; a float holds up to "
                                            "about 1.8e308)")) from None
        except JaggedInputError as exc:
            text = str(exc)
            if any(ch in text for ch in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"):
                raise JaggedInputError(one_line(text)) from None
            raise

    return wrapper


@one_line_errors
def load_file(path: Path, kind: str, **options: Any):
    """Load one evaluator output file into a :class:`~jagged.readers.dataset.Dataset`.

    Parameters
    ----------
    path : pathlib.Path
        An lm-eval results or samples file, an Inspect ``.json`` / ``.eval`` log, an EEE
        aggregate or samples file, or a file of a HELM run folder (the folder is read).
    kind : {"json", "zip"}
        What :func:`jagged.readers.files.sniff` found in the first bytes.
    **options
        See the module docstring.

    Returns
    -------
    jagged.readers.dataset.Dataset
    """
    path = Path(path)
    parsed = parse_file(path, kind)
    return _dispatch([parsed], source=path.name, options=_options(options), ignored=[])


def _walk(path: Path):
    """Files that may be evaluator outputs below ``path``, hidden files and folders skipped, in walk order."""
    for folder, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if not name.startswith(".") and os.path.splitext(name)[1].lower() in EVALUATOR_SUFFIXES:
                file = Path(folder, name)
                if file.is_file():
                    yield file


def _candidates(path: Path) -> list[Path]:
    """Files that may be evaluator outputs below ``path`` (see :func:`_walk`), sorted by their path parts."""
    return sorted(_walk(path), key=lambda p: p.parts)


def handles_directory(path: Path) -> bool:
    """Return True when a folder holds files that may be evaluator outputs.

    Only the names are looked at here (``.json``, ``.jsonl``, ``.eval`` anywhere below
    ``path``, hidden folders skipped); :func:`load_directory` then decides by content.
    """
    return next(_walk(Path(path)), None) is not None


def _datastore_files(path: Path, collection: str | None) -> tuple[list[Path], list[str]] | None:
    """An EEE datastore's candidate files (only ``data/``, only the collection asked for); None otherwise.

    Returns
    -------
    (files, not_used) or None
        None when ``path`` is no datastore (no ``data/`` at or below it holding EEE files).
    """
    from jagged.readers.eee_collection import datastore_data

    data = datastore_data(path)
    if data is None:
        return None
    if collection:
        folder = data / collection
        if not folder.is_dir():
            present = sorted((p.name for p in data.iterdir() if p.is_dir() and not p.name.startswith(".")),
                             key=str.lower)
            if not present:
                return None
            raise JaggedInputError(f"{path}: no Every Eval Ever collection {collection!r} in {data.name}/; it holds "
                                   f"{listing(present, 20)}")
        files = _candidates(folder)
    else:
        files = _candidates(data)
    outside = []
    if data != path:
        outside = sorted({p.relative_to(path).parts[0] for p in path.iterdir() if p != data
                          and not p.name.startswith(".") and (p.is_dir() or p.suffix.lower() in EVALUATOR_SUFFIXES)})
    not_used = [f"{name} (outside the datastore's data/ folder)" for name in outside]
    return files, not_used


def _parse_all(files: list[Path], root: Path) -> tuple[list[Parsed], list[str], list[str]]:
    """Parse and classify files; (parsed, not used, damaged)."""
    parsed: list[Parsed] = []
    ignored: list[str] = []
    damaged: list[str] = []
    for file in files:
        try:
            parsed.append(parse_file(file))
        except JaggedInputError as exc:
            if file.suffix.lower() == ".eval" or isinstance(exc, InputTooLargeError):
                raise
            reason = str(exc).split(": ", 1)[-1]
            ignored.append(f"{file.relative_to(root)} ({reason})")
            if any(text in reason for text in ("not valid JSON", "not readable JSON", "not UTF-8", "empty")):
                damaged.append(f"{file.relative_to(root)} ({reason})")
    return parsed, ignored, damaged


@contextlib.contextmanager
def paused_gc():
    """Pause the cyclic garbage collector while thousands of parsed JSON documents are alive.

    Parsing creates millions of containers and none of them form cycles; with the collector
    running, every few thousand allocations it rescans all that is alive, which doubled
    the time of reading a 4,500-file datastore (``benchmarks/bench_eee.py``).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@one_line_errors
def load_directory(path: Path, **options: Any):
    """Load a folder of evaluator outputs (see :func:`_load_directory`), the garbage collector paused."""
    with paused_gc():
        return _load_directory(Path(path), **options)


def _load_directory(path: Path, **options: Any):
    """Load a folder of evaluator outputs into a :class:`~jagged.readers.dataset.Dataset`.

    HELM run folders (``run_spec.json`` beside ``per_instance_stats.json``) are found
    first and read as runs. In an Every Eval Ever datastore (``path`` is its ``data/``
    folder or holds one) only ``data/`` is read, and with ``collection`` only that
    collection. Every other ``.json``, ``.jsonl`` and ``.eval`` file is read and
    classified by content; JSON files that are no evaluator output are listed in
    ``details["not used"]``, and damaged ones (invalid JSON, e.g. a truncated results
    file) are also named in a warning.

    Raises
    ------
    JaggedInputError
        No evaluator output found, outputs of two families mixed, or any error of the
        format readers.
    """
    path = Path(path)
    options = _options(options)
    store = _datastore_files(path, options.get("collection"))
    runs: list[Path] = []
    if store is not None:
        files, outside = store
        parsed, ignored, damaged = _parse_all(files, path)
    if store is None or not any(p.kind == EEE_AGGREGATE for p in parsed):  # no data/ folder, or no datastore
        found = _candidates(path)
        runs = helm.runs_among(found)
        inside = set(runs)
        files = [f for f in found if f.parent not in inside]
        outside = []
        parsed, ignored, damaged = _parse_all(files, path)
    parsed += [Parsed(folder, HELM_RUN, folder) for folder in runs]
    if damaged:
        warnings.warn(f"{path.name}: {len(damaged)} damaged file(s) skipped: {'; '.join(damaged[:3])}"
                      + (f" and {len(damaged) - 3} more" if len(damaged) > 3 else ""), JaggedWarning, stacklevel=2)
    if not parsed:
        shown = "; ".join(ignored[:3]) if ignored else "no .json, .jsonl or .eval files"
        raise JaggedInputError(f"{path}: no lm-eval or Inspect output found, nor Every Eval Ever or HELM files "
                               f"({shown})")
    return _dispatch(parsed, source=path.name or str(path), options=options, ignored=ignored + outside, root=path)
