"""Reading files for the readers: kind by first bytes, text, CSV, Parquet, JSON, one-line errors."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pandas as pd

from jagged.errors import JaggedInputError
from jagged.text import first_line

GZIP_MAGIC = b"\x1f\x8b"


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


def decode_text(path: Path, data: bytes) -> str:
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
    text = decode_text(path, data)
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
        first = first_line(exc)
        raise JaggedInputError(f"{path.name}: cannot parse as CSV: {first}") from None
    if not isinstance(frame.index, pd.RangeIndex):
        # pandas makes the first column the index when every row has one field more than the header
        raise JaggedInputError(f"{path.name}: {_long_row(text, sep)} has more fields than the header's "
                               f"{len(frame.columns)} column(s)")
    frame.columns = [str(c).strip() for c in frame.columns]
    if len(set(frame.columns)) != len(frame.columns):
        dupes = sorted({c for c in frame.columns if list(frame.columns).count(c) > 1})
        raise JaggedInputError(f"{path.name}: duplicate column name(s) {', '.join(dupes)}")
    return frame


def _long_row(text: str, sep: str) -> str:
    """Where the first row with more fields than the header is (``line N``), for a message."""
    import csv

    rows = csv.reader(io.StringIO(text), delimiter=sep)
    width = None
    for row in rows:
        if not row:
            continue
        if width is None:
            width = len(row)
        elif len(row) > width:
            return f"line {rows.line_num}"
    return "a row"  # pragma: no cover - pandas and csv agree on quoting in practice


def read_parquet(path: Path) -> pd.DataFrame:
    """Read a Parquet file, turning reader failures into one-line errors."""
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for corrupt files
        first = first_line(exc)
        raise JaggedInputError(f"{path.name}: cannot read as Parquet: {first}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def read_json_text(path: Path) -> Any:
    """Parse a JSON document or a JSON-lines file.

    Python's parser accepts the ``NaN`` / ``Infinity`` literals lm-eval sometimes
    writes. A file holding several JSON values, one per line, is returned as a list of
    them.

    Raises
    ------
    JaggedInputError
        Not valid JSON or JSON lines; the message gives the line.
    """
    text = decode_text(path, path.read_bytes())
    if not text.strip():
        raise JaggedInputError(f"{path.name}: the file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if not exc.msg.startswith("Extra data"):
            raise JaggedInputError(f"{path.name}: not valid JSON: {exc.msg} (line {exc.lineno}, column "
                                   f"{exc.colno})") from None
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise JaggedInputError(f"{path.name}: not valid JSON lines: {exc.msg} (line {number}, column "
                                   f"{exc.colno})") from None
    return records
