"""Read score files of every supported format into a :class:`Dataset`.

Loaders know formats; nothing downstream does. Detection is by content: Parquet by its
magic bytes, JSON by its first character, CSV tables by their columns:

* item-level: ``model, domain, item`` (or ``item_id``), ``correct`` (aggregated, see
  :mod:`jagged.items`; item-level Parquet files too large for memory are aggregated out
  of core after a look at their footer);
* long: ``model, domain, score`` (+ optional ``n_items``, ``category``);
* wide: ``model`` plus one numeric column per domain.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from jagged.errors import JaggedInputError
from jagged.table import validate_scores, wide_to_long

BUNDLED_SCORES = Path(__file__).parent / "data" / "mmlu_pro_per_category.csv"
GZIP_MAGIC = b"\x1f\x8b"


@dataclass
class Dataset:
    """Everything a loader learned from its input.

    Attributes
    ----------
    scores : pandas.DataFrame
        The canonical per-domain table (see :mod:`jagged.table`).
    source : str
        Display name of the input (file or folder name).
    paths : list of pathlib.Path
        Every file read.
    format : str
        The detected format: ``"long"``, ``"wide"``, ``"items"``, ...
    items : pandas.DataFrame or None
        Item-level table (``model, domain, item, correct``) when the input had one.
    model_notes : dict
        Per-model remarks a loader wants shown in the metrics ``note`` column.
    details : dict
        Format-specific facts for ``jagged validate`` and the report.
    """

    scores: pd.DataFrame
    source: str
    paths: list[Path]
    format: str
    items: pd.DataFrame | None = None
    model_notes: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)


def sha256_file(path: str | Path) -> str:
    """Return the hex SHA-256 digest of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_path(path: Path) -> None:
    if not path.exists():
        raise JaggedInputError(f"{path}: no such file")
    if path.is_dir():
        raise JaggedInputError(f"{path}: is a directory, expected a score file")


def sniff(path: Path) -> str:
    """Guess a file's kind from its first bytes.

    Returns
    -------
    str
        ``"parquet"``, ``"json"``, ``"zip"``, ``"binary"`` or ``"text"``.
    """
    with open(path, "rb") as handle:
        head = handle.read(8192)
    if not head:
        raise JaggedInputError(f"{path.name}: the file is empty")
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    if head.startswith(GZIP_MAGIC):
        return "text"  # a gzip-compressed table (scores.csv.gz): read_csv decompresses it
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] in (b"{", b"["):
        return "json"
    if b"\x00" in head:
        return "binary"
    return "text"


def _decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise JaggedInputError(
            f"{path.name}: unreadable bytes, not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start})") from None


def read_csv(path: Path) -> pd.DataFrame:
    """Read a delimited text file as strings-or-numbers, with one-line errors.

    Only empty cells count as missing, so a model called ``NA`` keeps its name.
    The delimiter is a comma, or a tab / semicolon when the header has those and no comma.
    A gzip-compressed file (``.csv.gz``) is decompressed first.
    """
    data = path.read_bytes()
    if data.startswith(GZIP_MAGIC):
        import gzip
        import zlib

        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise JaggedInputError(f"{path.name}: damaged gzip data ({exc})") from None
    text = _decode(path, data)
    if not text.strip():
        raise JaggedInputError(f"{path.name}: the file is empty")
    header = text.lstrip().split("\n", 1)[0]
    sep = ","
    if "," not in header:
        if "\t" in header:
            sep = "\t"
        elif ";" in header:
            sep = ";"
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep, keep_default_na=False, na_values=[""],
                            skipinitialspace=True, low_memory=False)
    except pd.errors.EmptyDataError:
        raise JaggedInputError(f"{path.name}: the file is empty") from None
    except (pd.errors.ParserError, ValueError, OverflowError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise JaggedInputError(f"{path.name}: cannot parse as CSV: {first}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if len(set(frame.columns)) != len(frame.columns):
        dupes = sorted({c for c in frame.columns if list(frame.columns).count(c) > 1})
        raise JaggedInputError(f"{path.name}: duplicate column name(s) {', '.join(dupes)}")
    return frame


def read_parquet(path: Path) -> pd.DataFrame:
    """Read a Parquet file, turning reader failures into one-line errors."""
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for corrupt files
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise JaggedInputError(f"{path.name}: cannot read as Parquet: {first}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def frame_to_dataset(frame: pd.DataFrame, *, source: str, paths: list[Path], score_scale: str = "fraction",
                     line_offset: int | None = 2) -> Dataset:
    """Detect the table layout by its columns and build a validated :class:`Dataset`.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table as read.
    source : str
        Name used in messages.
    paths : list of pathlib.Path
        Files behind the table.
    score_scale : {"fraction", "percent"}
        Scale of scores in long and wide tables.
    line_offset : int or None
        Added to row labels to give file lines in messages (2 for CSV, None otherwise).
    """
    columns = set(frame.columns)
    if "correct" in columns and ({"item", "item_id"} & columns):
        from jagged import items as items_module

        return items_module.dataset_from_items(frame, source=source, paths=paths, line_offset=line_offset)
    if {"domain", "score"} <= columns:
        scores = validate_scores(frame, source, score_scale=score_scale, line_offset=line_offset)
        return Dataset(scores=scores, source=source, paths=paths, format="long")
    if "model" in columns and ("domain" in columns or "score" in columns):
        missing = "score" if "domain" in columns else "domain"
        raise JaggedInputError(f"{source}: missing column '{missing}' (a long table needs model, domain, score)")
    long = wide_to_long(frame, source, score_scale=score_scale, line_offset=line_offset)
    scores = validate_scores(long, source, line_offset=line_offset)
    return Dataset(scores=scores, source=source, paths=paths, format="wide")


def load(path: str | Path | None = None, *, score_scale: str = "fraction", **options: Any) -> Dataset:
    """Load any supported score input into a validated :class:`Dataset`.

    Parameters
    ----------
    path : str or pathlib.Path, optional
        A CSV / Parquet table, an evaluator output file or folder. ``None`` loads the
        bundled MMLU-Pro per-category scores.
    score_scale : {"fraction", "percent"}
        Scale of scores in long and wide tables.
    **options
        Format-specific options (e.g. ``task``, ``metric`` for evaluator outputs).

    Returns
    -------
    Dataset

    Raises
    ------
    JaggedInputError
        The message names the file and the column or value at fault.
    """
    path = BUNDLED_SCORES if path is None else Path(path)
    if path.is_dir():
        from jagged import evaluators

        if evaluators.handles_directory(path):
            return evaluators.load_directory(path, **options)
    _check_path(path)
    kind = sniff(path)
    if kind in ("json", "zip"):
        from jagged import evaluators

        return evaluators.load_file(path, kind, **options)
    if kind == "binary":
        raise JaggedInputError(f"{path.name}: unknown file type (binary data; expected CSV, Parquet or JSON)")
    if kind == "parquet":
        from jagged import items as items_module

        try:  # the footer only: a large item-level file is aggregated out of core
            is_items, n_rows = items_module.parquet_item_layout(path)
        except Exception:  # corrupt footer: read_parquet below gives the one-line error
            is_items, n_rows = False, 0
        if is_items and n_rows > items_module.IN_MEMORY_MAX_ROWS:
            return items_module.dataset_from_parquet(path)
    frame = read_parquet(path) if kind == "parquet" else read_csv(path)
    return frame_to_dataset(frame, source=path.name, paths=[path], score_scale=score_scale,
                            line_offset=2 if kind == "text" else None)


def load_scores(path: str | Path | None = None, *, score_scale: str = "fraction", **options: Any) -> pd.DataFrame:
    """Load a score input and return only its canonical per-domain table.

    See :func:`load` for the parameters.
    """
    return load(path, score_scale=score_scale, **options).scores
