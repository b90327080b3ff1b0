"""Evaluator outputs: lm-evaluation-harness results and samples, Inspect logs.

This module is the one door :mod:`jagged.readers.load` uses for them. It reads each file
once, decides what it is **by content** (not by its name), and hands it to the module
that knows the format:

* :mod:`jagged.readers.lmeval` -- lm-evaluation-harness ``results*.json`` (per-task scores,
  domains are the leaf tasks of ``group_subtasks``) and ``samples_<task>_<ts>.jsonl``
  (item-level);
* :mod:`jagged.readers.inspect_logs` -- Inspect ``.json`` logs and ``.eval`` zip archives
  (item-level).

A folder may hold any number of files of one of those families (searched recursively,
as lm-eval writes ``<output>/<model>/results_<ts>.json``). When a folder holds both
lm-eval results and samples, the results are used and the samples are listed in
``Dataset.details["not used"]``.

Options (all optional, ``None`` meaning "not given"):

``task``
    lm-eval: the group (or comma-separated tasks) whose leaves are the domains.
``metric``
    lm-eval: ``NAME[,FILTER]``; Inspect: ``SCORER[,KEY]``.
``model_name``
    Overrides the model name found in the files.
``domain_key``
    Item-level inputs: the per-item field naming the domain (Inspect sample metadata,
    lm-eval ``doc``); dotted paths reach nested fields.
``allow_incomplete``
    Inspect: accept logs whose status is not ``success``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jagged.errors import JaggedInputError, JaggedWarning
from jagged.readers import inspect_logs, lmeval
from jagged.readers.files import read_json_text

#: File name endings looked at inside a folder.
EVALUATOR_SUFFIXES: tuple[str, ...] = (".json", ".jsonl", ".eval")
#: Options this module understands; others passed through ``load`` are ignored.
OPTION_KEYS: tuple[str, ...] = ("task", "metric", "model_name", "domain_key", "allow_incomplete")

LMEVAL_RESULTS = "lm-eval results"
LMEVAL_SAMPLES = "lm-eval samples"
INSPECT_LOG = "Inspect log"


@dataclass
class Parsed:
    """One evaluator file, read and classified.

    Attributes
    ----------
    path : pathlib.Path
        The file.
    kind : str
        :data:`LMEVAL_RESULTS`, :data:`LMEVAL_SAMPLES` or :data:`INSPECT_LOG`.
    content : object
        The parsed content: a dict (results, Inspect ``.json`` log, or an Inspect
        ``.eval`` archive turned into the same shape) or a list of records (samples).
    """

    path: Path
    kind: str
    content: Any


def classify(path: Path, content: Any) -> str | None:
    """Say which evaluator wrote ``content``, from its keys; ``None`` when unknown.

    * lm-eval results: an object with a ``results`` object and at least one of
      ``group_subtasks``, ``versions``, ``configs``, ``n-shot``, ``config``.
    * lm-eval samples: records (a list, or one object) with a ``doc_id``.
    * Inspect log: an object with an ``eval`` object holding ``task`` and ``model``.
    """
    if lmeval.is_results(content):
        return LMEVAL_RESULTS
    if inspect_logs.is_log(content):
        return INSPECT_LOG
    if lmeval.is_samples(content):
        return LMEVAL_SAMPLES
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
            f"{path.name}: JSON but not an evaluator output jagged reads (expected lm-eval results or "
            f"samples, or an Inspect log); found {_describe_unknown(content)}")
    if found == LMEVAL_SAMPLES and isinstance(content, dict):
        content = [content]
    return Parsed(path, found, content)


def _options(options: dict[str, Any]) -> dict[str, Any]:
    """Keep the options this module knows, dropping the ones not given."""
    return {k: options[k] for k in OPTION_KEYS if options.get(k) not in (None, "", False)}


def _warn_unused(options: dict[str, Any], used: tuple[str, ...], what: str) -> None:
    for key in options:
        if key not in used:
            flag = "--" + key.replace("_", "-")
            warnings.warn(f"{flag} does not apply to {what} and is ignored", JaggedWarning, stacklevel=3)


def _dispatch(parsed: list[Parsed], *, source: str, options: dict[str, Any], ignored: list[str]):
    """Send classified files to the reader of their family."""
    kinds = {p.kind for p in parsed}
    if INSPECT_LOG in kinds and kinds & {LMEVAL_RESULTS, LMEVAL_SAMPLES}:
        lm = next(p for p in parsed if p.kind != INSPECT_LOG)
        ins = next(p for p in parsed if p.kind == INSPECT_LOG)
        raise JaggedInputError(
            f"{source}: mixes lm-eval outputs ({lm.path.name}) and Inspect logs ({ins.path.name}); "
            "point jagged at one kind")
    if INSPECT_LOG in kinds:
        _warn_unused(options, ("metric", "model_name", "domain_key", "allow_incomplete"), "Inspect logs")
        dataset = inspect_logs.load_logs(parsed, source=source, **options)
    elif LMEVAL_RESULTS in kinds:
        samples = [p for p in parsed if p.kind == LMEVAL_SAMPLES]
        ignored = ignored + [f"{p.path.name} (lm-eval samples; results files are used instead)" for p in samples]
        _warn_unused(options, ("task", "metric", "model_name"), "lm-eval results")
        dataset = lmeval.load_results([p for p in parsed if p.kind == LMEVAL_RESULTS], source=source, **options)
    else:
        _warn_unused(options, ("task", "metric", "model_name", "domain_key"), "lm-eval samples")
        dataset = lmeval.load_samples(parsed, source=source, **options)
    if ignored:
        dataset.details["not used"] = [*dataset.details.get("not used", []), *ignored]
    return dataset


def one_line_errors(func):
    """Make sure every error message is one line, whatever names the files hold."""
    import functools

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except JaggedInputError as exc:
            text = str(exc)
            if any(ch in text for ch in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"):
                raise JaggedInputError(" ".join(text.split())) from None
            raise

    return wrapper


@one_line_errors
def load_file(path: Path, kind: str, **options: Any):
    """Load one evaluator output file into a :class:`~jagged.readers.dataset.Dataset`.

    Parameters
    ----------
    path : pathlib.Path
        An lm-eval results or samples file, or an Inspect ``.json`` / ``.eval`` log.
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


def _candidates(path: Path) -> list[Path]:
    files = [p for p in sorted(path.rglob("*"))
             if p.is_file() and p.suffix.lower() in EVALUATOR_SUFFIXES
             and not any(part.startswith(".") for part in p.relative_to(path).parts)]
    return files


def handles_directory(path: Path) -> bool:
    """Return True when a folder holds files that may be evaluator outputs.

    Only the names are looked at here (``.json``, ``.jsonl``, ``.eval`` anywhere below
    ``path``, hidden folders skipped); :func:`load_directory` then decides by content.
    """
    return any(True for _ in _candidates(Path(path)))


@one_line_errors
def load_directory(path: Path, **options: Any):
    """Load a folder of evaluator outputs into a :class:`~jagged.readers.dataset.Dataset`.

    Every ``.json``, ``.jsonl`` and ``.eval`` file below ``path`` is read and classified
    by content; JSON files that are no evaluator output are listed in
    ``details["not used"]``, and damaged ones (invalid JSON, e.g. a truncated results
    file) are also named in a warning.

    Raises
    ------
    JaggedInputError
        No evaluator output found, Inspect logs mixed with lm-eval outputs, or any
        error of the format readers.
    """
    path = Path(path)
    parsed: list[Parsed] = []
    ignored: list[str] = []
    damaged: list[str] = []
    for file in _candidates(path):
        try:
            parsed.append(parse_file(file))
        except JaggedInputError as exc:
            if file.suffix.lower() == ".eval":
                raise
            reason = str(exc).split(": ", 1)[-1]
            ignored.append(f"{file.relative_to(path)} ({reason})")
            if "not valid JSON" in reason or "not UTF-8" in reason or "empty" in reason:
                damaged.append(f"{file.relative_to(path)} ({reason})")
    if damaged:
        warnings.warn(f"{path.name}: {len(damaged)} damaged file(s) skipped: {'; '.join(damaged[:3])}"
                      + (f" and {len(damaged) - 3} more" if len(damaged) > 3 else ""), JaggedWarning, stacklevel=2)
    if not parsed:
        shown = "; ".join(ignored[:3]) if ignored else "no .json, .jsonl or .eval files"
        raise JaggedInputError(f"{path}: no lm-eval or Inspect output found ({shown})")
    return _dispatch(parsed, source=path.name or str(path), options=_options(options), ignored=ignored)

