"""The dispatcher: which reader takes an input, asked in the order of :data:`READERS`, and the one validation after.

Every format is one module holding a :class:`~jagged.readers.reader.Reader`, listed once in
:data:`READERS` (adding a format: one module, one line). A file's head is read once
(:func:`jagged.readers.files.head`) and the readers are asked **in order**; the first that
recognises it reads it. Files of one *family* may share a folder (the earliest reader
present is used, the others' files listed as not used), two families may not. Readers
return rows as read; :func:`finish` applies the options every input takes
(:data:`GENERIC`) and validates once into a :class:`~jagged.readers.dataset.Dataset`.

The order: per-domain formats before the item-level ones of their family (a folder with
lm-eval results and samples uses the results), stricter tests before looser (EEE records
carry ``sample_id`` and may also carry a ``doc_id``):

1. :mod:`~jagged.readers.tables` -- CSV and Parquet tables (first bytes: text or ``PAR1``);
2. :mod:`~jagged.readers.lmeval` -- lm-eval ``results*.json``;
3. :mod:`~jagged.readers.inspect_logs` -- Inspect ``.json`` logs and ``.eval`` archives;
4. :mod:`~jagged.readers.eee` -- Every Eval Ever aggregate files;
5. :mod:`~jagged.readers.helm` -- HELM run files (the run folder is read);
6. :mod:`~jagged.readers.eee_samples` -- Every Eval Ever ``*_samples.jsonl``;
7. :mod:`~jagged.readers.lmeval` -- lm-eval ``samples_<task>_<ts>.jsonl``.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any, Callable

from jagged.errors import JaggedInputError, JaggedWarning
from jagged.options import BY_NAME, LOAD, names
from jagged.readers import eee, eee_samples, helm, inspect_logs, lmeval, tables
from jagged.readers.canonical import item_counts, validate_scores, with_item_counts
from jagged.readers.dataset import Dataset
from jagged.readers.files import head as read_head
from jagged.readers.files import read_json_text
from jagged.readers.items import dataset_from_items
from jagged.readers.limits import InputTooLargeError
from jagged.readers.reader import Head, ItemRead, Parsed, Reader, ScoreRead
from jagged.text import merge_notes, one_line

#: Loader options for every input, applied here (and passed to the readers that declare them).
GENERIC: tuple[str, ...] = (*tables.SELECTION, "n_items", "strict")

#: The readers, in the order they are asked.
READERS: list[Reader] = [
    tables.READER,
    lmeval.RESULTS_READER,
    inspect_logs.READER,
    eee.READER,
    helm.READER,
    eee_samples.READER,
    lmeval.SAMPLES_READER,
]


def recognise(head: Head) -> Parsed | None:
    """The input as kept by the first reader of :data:`READERS` taking its kind and JSON; None if none does."""
    if head.kind == "json" and head.content is None:  # a head made elsewhere, not read yet
        head.content = read_json_text(head.path)
    content = head.content
    for reader in READERS:
        if head.kind in reader.kinds and (head.kind != "json" or reader.recognises is None
                                          or reader.recognises(content)):
            if reader.parse is not None:
                return reader.parse(head)
            return Parsed(head.path, reader, content, head.root, head.kind)
    return None


def _describe_unknown(content: Any) -> str:
    if isinstance(content, dict):
        keys = ", ".join(repr(k) for k in list(content)[:8])
        return f"a JSON object with keys {keys}" if keys else "an empty JSON object"
    if isinstance(content, list):
        return f"a JSON list of {len(content)} values"
    return f"a JSON {type(content).__name__}"


def parse(head: Head) -> Parsed:
    """Recognise an input, or raise a :class:`JaggedInputError` saying what it is instead (binary, or other JSON)."""
    found = recognise(head)
    if found is not None:
        return found
    if head.kind == "binary":
        raise JaggedInputError(f"{head.path.name}: unknown file type (binary data; expected CSV, Parquet or JSON)")
    raise JaggedInputError(
        f"{head.path.name}: JSON but not an evaluator output jagged reads (expected lm-eval results or samples, an "
        f"Inspect log, an Every Eval Ever file or a HELM run); found {_describe_unknown(head.content)}")


def parse_all(files: list[Path], root: Path) -> tuple[list[Parsed], list[str], list[str]]:
    """Recognise a folder's files; (recognised, not used, damaged).

    Unrecognised or unreadable JSON files are listed as not used (invalid JSON also as
    damaged); an unreadable ``.eval`` archive and an input past the cap stop the read.
    """
    parsed: list[Parsed] = []
    ignored: list[str] = []
    damaged: list[str] = []
    for file in files:
        try:
            parsed.append(parse(read_head(file, root)))
        except JaggedInputError as exc:
            if file.suffix.lower() == ".eval" or isinstance(exc, InputTooLargeError):
                raise
            reason = str(exc).split(": ", 1)[-1]
            ignored.append(f"{file.relative_to(root)} ({reason})")
            if any(text in reason for text in ("not valid JSON", "not readable JSON", "not UTF-8", "empty")):
                damaged.append(f"{file.relative_to(root)} ({reason})")
    return parsed, ignored, damaged


def given_options(options: dict[str, Any]) -> dict[str, Any]:
    """The loader options given a value other than their default."""
    return {k: options[k] for k in names(LOAD)
            if k in options and options[k] not in (None, "", False) and options[k] != BY_NAME[k].default}


def options_for(reader: Reader, options: dict[str, Any]) -> dict[str, Any]:
    """Warn about the given options a reader does not take; return the ones it does."""
    for key in options:
        if key not in reader.options and key not in GENERIC:
            warnings.warn(f"{BY_NAME[key].flag} does not apply to {reader.what} and is ignored", JaggedWarning,
                          stacklevel=4)
    return {k: v for k, v in options.items() if k in reader.options}


def finish(read: ScoreRead | ItemRead | Dataset, source: str, options: dict[str, Any] | None = None) -> Dataset:
    """Select rows and validate what a reader returned, once, into a :class:`Dataset` (a Dataset passes as it is).

    The selection (``where``, ``models``, ``domains``) is applied unless the reader did;
    ``n_items`` gives item counts to per-domain scores without them, and is refused for
    item-level data.
    """
    options = options or {}
    selection = {k: options.get(k) for k in tables.SELECTION if options.get(k)}
    counts = item_counts(options.get("n_items")) if options.get("n_items") not in (None, "") else None
    if counts is not None and not isinstance(read, ScoreRead):
        raise JaggedInputError(f"{source}: --n-items is for per-domain tables without item counts; item-level "
                               "data count their items")
    if isinstance(read, Dataset):
        return read
    if isinstance(read, ScoreRead):
        frame = read.scores
        if selection and not read.selected:
            frame = tables.select_rows(frame, source=read.label, **selection)
        scores = validate_scores(frame, read.label, score_scale=read.score_scale, line_offset=read.line_offset)
        if counts is not None:  # the report says where they came from (Dataset.selection)
            scores = with_item_counts(scores, counts, read.label)
        return Dataset(scores=scores, source=source, paths=list(read.paths), format=read.format,
                       model_notes=dict(read.model_notes), details=dict(read.details),
                       benchmark=read.details.get("benchmark"))
    items = read.items
    if selection and not read.selected:
        items = tables.select_rows(items, source=source, **selection)
    dataset = dataset_from_items(items, source=source, paths=read.paths, line_offset=read.line_offset)
    dataset.format = read.format
    dataset.model_notes = merge_notes(dataset.model_notes, read.model_notes)
    dataset.details = {**read.details, **dataset.details}
    return dataset


def read_found(found: list[Parsed], *, source: str, options: dict[str, Any], ignored: list[str]) -> Dataset:
    """Read recognised inputs of one family with the earliest reader present, and validate once."""
    order = {id(reader): i for i, reader in enumerate(READERS)}
    found = sorted(found, key=lambda p: order[id(p.reader)])
    families = list(dict.fromkeys(p.reader.family for p in found))
    if len(families) > 1:
        first, second = (next(p for p in found if p.reader.family == f) for f in families[:2])
        raise JaggedInputError(f"{source}: mixes {families[0]} ({first.path.name}) and {families[1]} "
                               f"({second.path.name}); point jagged at one kind")
    present = list(dict.fromkeys(p.reader for p in found))
    reader = present[0]
    for other in present[1:]:
        if other.unused is not None:
            ignored = ignored + other.unused([p for p in found if p.reader is other])
    out = reader.read([p for p in found if p.reader is reader], source=source, **options_for(reader, options))
    dataset = finish(out, source, options)
    if ignored:
        dataset.details["not used"] = [*dataset.details.get("not used", []), *ignored]
    return dataset


def one_line_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Make every error message one line, and an integer too large for a float an input error."""

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
def read_file(path: Path, options: dict[str, Any]) -> Dataset:
    """Read one file into a Dataset: its head read once, the readers asked in order, validated once."""
    found = parse(read_head(Path(path)))
    return read_found([found], source=Path(path).name, options=given_options(options), ignored=[])
