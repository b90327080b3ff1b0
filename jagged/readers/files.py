"""Reading files for the readers: kind by first bytes, text, CSV, Parquet, JSON, zip members; one-line errors.

Every read is bounded by the input cap (:mod:`jagged.readers.limits`), counting what is
produced: text and gzip while read, Parquet batch by batch as decoded, JSON by bytes and
values, zip members as decompressed. Zip members (Inspect ``.eval``, :func:`read_member`)
are read through :mod:`zipfile`, or for Zstandard (method 93, which :mod:`zipfile` reads
only from Python 3.14) from their local header with ``zstandard``, checked against the
recorded size and CRC-32; never more than the recorded size + 1 byte is read.
"""

from __future__ import annotations

import csv
import io
import json
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from jagged.errors import JaggedInputError
from jagged.readers import limits
from jagged.readers.limits import KEEP_BYTES, Budget, read_stream, too_large
from jagged.readers.reader import Head
from jagged.text import first_line

GZIP_MAGIC = b"\x1f\x8b"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def sniff(path: Path) -> str:
    """Guess a file's kind from its first bytes: ``"parquet"``, ``"json"``, ``"zip"``, ``"binary"`` or ``"text"``."""
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
    if head.startswith(UTF16_BOMS):  # UTF-16 text (Excel's "Unicode text"), decoded by decode_text
        start = head[: len(head) - len(head) % 2].decode("utf-16", errors="replace").lstrip(" \t\r\n")
        return "json" if start[:1] in ("{", "[") else "text"
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] in (b"{", b"["):
        return "json"
    if b"\x00" in head:
        return "binary"
    return "text"


def head(path: Path, root: Path | None = None) -> Head:
    """A file's kind by first bytes (inside a folder: zip or JSON) and, for JSON, the parsed document."""
    if root is None:
        kind = sniff(path)
    else:
        with open(path, "rb") as handle:
            kind = "zip" if handle.read(4) == b"PK\x03\x04" else "json"
    return Head(path, kind, root, read_json_text(path) if kind == "json" else None)


def decode_text(path: Path, data: bytes) -> str:
    """UTF-8 text (a byte-order mark dropped) or UTF-16 after a UTF-16 mark; else an error naming the byte."""
    encoding = "utf-16" if data.startswith(UTF16_BOMS) else "utf-8-sig"
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        name = "UTF-16" if encoding == "utf-16" else "UTF-8"
        raise JaggedInputError(
            f"{path.name}: unreadable bytes, not {name} text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start})") from None


def read_csv(path: Path) -> pd.DataFrame:
    """Read a delimited text file as strings-or-numbers, with one-line errors.

    Only empty cells count as missing, so a model called ``NA`` keeps its name. The
    delimiter is a comma, or a tab / semicolon when the header has those and no comma. A
    gzip file (``.csv.gz``) is decompressed first; the text may be at most the input cap.
    """
    with open(path, "rb") as handle:
        gzipped = handle.read(2) == GZIP_MAGIC
    data = limits.gunzip_file(path) if gzipped else limits.read_file(path)
    text = decode_text(path, data)
    del data
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


@dataclass
class ParquetScan:
    """What streaming a Parquet file found: rows and Arrow bytes decoded, the batches (None when not kept)."""

    rows: int
    nbytes: int
    batches: list[Any] | None
    schema: Any


def _batch_bytes(batch: Any, seen: dict[int, tuple[int, ...]]) -> int:
    """Arrow bytes of a batch, a dictionary column's dictionary counted only when it changed."""
    import pyarrow as pa

    total = 0
    for index, column in enumerate(batch.columns):
        if isinstance(column, pa.DictionaryArray):
            key = tuple(b.address for b in column.dictionary.buffers() if b is not None)
            if seen.get(index) != key:
                seen[index] = key
                total += column.dictionary.nbytes
            total += column.indices.nbytes
        else:
            total += column.nbytes
    return total


#: Bytes a decoded value takes at least, by Parquet physical type (Arrow offsets or indices for byte arrays).
_VALUE_BYTES = {"BOOLEAN": 0.125, "INT32": 4, "FLOAT": 4, "INT64": 8, "DOUBLE": 8, "INT96": 12,
                "BYTE_ARRAY": 4, "FIXED_LEN_BYTE_ARRAY": 4}


def check_footers(parts: list[Path], source: str, root: Path | None = None) -> int:
    """Hold what Parquet footers declare to the input cap, before any scan; return the rows their row groups declare.

    Raises :class:`~jagged.readers.limits.InputTooLargeError` (all parts together) or, for an
    unreadable footer, :class:`JaggedInputError` naming the part.

    Notes
    -----
    Each column chunk counts ``max(uncompressed bytes, values × width)``, the width being
    what one decoded value takes at least (8 bytes for INT64 and DOUBLE, 4 for INT32, FLOAT
    and a string's offsets): run-length encoding makes a billion equal values a few kilobytes
    of Parquet, never of decoded data. A footer may lie, so readers still count what they
    decode (:func:`scan_parquet`) or scan.
    """
    import pyarrow.parquet as pq

    budget = limits.Budget(source)
    rows = 0
    for part in parts:
        try:
            meta = pq.read_metadata(part)
            chunks = [meta.row_group(g).column(c) for g in range(meta.num_row_groups) for c in range(meta.num_columns)]
            size = sum(max(c.total_uncompressed_size, c.num_values * _VALUE_BYTES.get(c.physical_type, 4))
                       for c in chunks)
        except Exception as exc:  # the footer only: a damaged part is named here, not deep inside an engine's scan
            where = part.relative_to(root).as_posix() if root is not None else part.name
            raise JaggedInputError(f"{source}: {where} is not a readable Parquet file "
                                   f"({first_line(exc)[:160]})") from None
        rows += sum(meta.row_group(g).num_rows for g in range(meta.num_row_groups))  # what readers decode
        budget.add(int(size), f"{source} ({rows:,} rows in {len(parts):,} Parquet file(s), by their footers)",
                   how="decodes to")
    return rows


def scan_parquet(path: Path, *, keep_bytes: int | None = limits.KEEP_BYTES,
                 keep_rows: int | None = None) -> ParquetScan:
    """Decode a Parquet file batch by batch, counting actual rows and Arrow bytes against the input cap.

    Batches are kept while within ``keep_bytes`` and ``keep_rows`` (None: no bound), then
    dropped while counting goes on, so memory stays bounded.
    """
    import pyarrow.parquet as pq

    budget = limits.Budget(path.name)
    kept: list[Any] | None = []
    rows = 0
    seen: dict[int, tuple[int, ...]] = {}
    try:
        with pq.ParquetFile(path) as parquet:
            schema = parquet.schema_arrow
            for batch in parquet.iter_batches(batch_size=65_536, use_pandas_metadata=True):
                rows += batch.num_rows
                budget.add(_batch_bytes(batch, seen), f"{path.name} (decoded, {rows:,} rows so far)")
                if kept is not None:
                    kept.append(batch)
                    if ((keep_bytes is not None and budget.used > keep_bytes)
                            or (keep_rows is not None and rows > keep_rows)):
                        kept = None
    except JaggedInputError:
        raise
    except Exception as exc:  # pyarrow raises many types for corrupt files
        raise JaggedInputError(f"{path.name}: cannot read as Parquet: {first_line(exc)}") from None
    finally:
        if kept is None:
            import pyarrow as pa

            pa.default_memory_pool().release_unused()  # give the dropped batches back to the system
    return ParquetScan(rows=rows, nbytes=budget.used, batches=kept, schema=schema)


def read_parquet(path: Path, scan: ParquetScan | None = None) -> pd.DataFrame:
    """Read a Parquet file within the input cap, reusing ``scan``'s batches when it kept them; one-line errors."""
    import pyarrow as pa

    if scan is None:
        scan = scan_parquet(path)
    if scan.batches is None:
        scan = scan_parquet(path, keep_bytes=None)
    try:
        frame = pa.Table.from_batches(scan.batches or [], schema=scan.schema).to_pandas()
    except Exception as exc:
        raise JaggedInputError(f"{path.name}: cannot read as Parquet: {first_line(exc)}") from None
    scan.batches = None  # the frame holds the data now
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def read_json_text(path: Path) -> Any:
    """Parse a JSON document, or JSON lines as a list of their values (``NaN``, ``Infinity`` accepted)."""
    data = limits.read_file(path, json_values=True)
    text = decode_text(path, data)
    del data
    if not text.strip():
        raise JaggedInputError(f"{path.name}: the file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if not exc.msg.startswith("Extra data"):
            raise JaggedInputError(f"{path.name}: not valid JSON: {exc.msg} (line {exc.lineno}, column "
                                   f"{exc.colno})") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        _json_failure(path.name, exc)
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise JaggedInputError(f"{path.name}: not valid JSON lines: {exc.msg} (line {number}, column "
                                   f"{exc.colno})") from None
        except (RecursionError, MemoryError, ValueError) as exc:
            _json_failure(f"{path.name} (line {number})", exc)
    return records


def _json_failure(what: str, exc: BaseException) -> None:
    """Raise the one-line error for a parse failure other than bad syntax (depth, huge integer, memory)."""
    reason = limits.json_error(exc)
    if reason is None:
        raise exc
    raise JaggedInputError(f"{what}: not readable JSON: {reason}") from None


#: Zip compression method of Zstandard (APPNOTE 4.4.5).
ZIP_ZSTANDARD = 93
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_LOCAL_SIGNATURE = b"PK\x03\x04"


class MemberError(Exception):
    """A member cannot be read; the message says why (one line)."""


def read_member(archive: zipfile.ZipFile, name: str, path: Path, budget: Budget | None = None) -> bytes:
    """The uncompressed bytes of one archive member, within the input cap (``budget`` shared by the archive).

    Raises :class:`MemberError` for unknown compression, damaged data, or a size or CRC that
    does not match, :class:`~jagged.readers.limits.InputTooLargeError` past the cap.
    """
    info = archive.getinfo(name)
    budget = budget if budget is not None else Budget(path.name)
    what = f"{path.name}: member {name}"
    if info.file_size > budget.cap:
        raise too_large(what, budget.cap, how="is recorded as")
    if info.file_size > budget.cap - budget.used:
        raise too_large(f"{path.name}: the members up to {name}", budget.cap, how="are recorded as")
    start = budget.used
    for keep in (KEEP_BYTES, None):  # a second pass only for a large member that checked out
        budget.used = start
        if info.compress_type == ZIP_ZSTANDARD and getattr(zipfile, "ZIP_ZSTANDARD", None) != ZIP_ZSTANDARD:
            data = _read_zstandard(info, path, budget, what, keep)
        else:
            data = _read_zipfile(archive, info, budget, what, keep)
        if data is not None:
            return data
    raise AssertionError("unreachable")  # pragma: no cover


def _check_size(size: int, recorded: int) -> None:
    if size > recorded:
        raise MemberError(f"expands to more than the {recorded:,} bytes the archive records")
    if size < recorded:
        raise MemberError(f"uncompressed size {size:,} bytes, the archive records {recorded:,}")


def _read_zipfile(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: Budget, what: str,
                  keep: int | None) -> bytes | None:
    """A member :mod:`zipfile` decompresses (it stops at the recorded size and checks the CRC-32 at the end)."""
    try:
        with archive.open(info) as handle:
            read = read_stream(handle, budget, what, limit=info.file_size, keep=keep)
    except NotImplementedError as exc:
        raise MemberError(f"compression method {info.compress_type} is not supported ({exc})") from None
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
        raise MemberError(str(exc) or type(exc).__name__) from None
    _check_size(read.size, info.file_size)
    return read.data


def _read_zstandard(info: zipfile.ZipInfo, path: Path, budget: Budget, what: str, keep: int | None) -> bytes | None:
    if info.flag_bits & 0x1:
        raise MemberError("the member is encrypted")
    with open(path, "rb") as handle:
        handle.seek(info.header_offset)
        header = handle.read(_LOCAL_HEADER.size)
        if len(header) != _LOCAL_HEADER.size or not header.startswith(_LOCAL_SIGNATURE):
            raise MemberError("bad local file header")
        fields = _LOCAL_HEADER.unpack(header)
        name_length, extra_length = fields[9], fields[10]
        handle.seek(info.header_offset + _LOCAL_HEADER.size + name_length + extra_length)
        compressed = handle.read(info.compress_size)  # at most what the file holds
    if len(compressed) != info.compress_size:
        raise MemberError("the archive is truncated")
    import zstandard

    try:  # never more than the archive records (+1), in chunks, whatever the frames claim
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(compressed), read_across_frames=True) as reader:
            read = read_stream(reader, budget, what, limit=info.file_size, keep=keep, crc=True)
    except zstandard.ZstdError as exc:
        raise MemberError(f"damaged Zstandard data ({exc})") from None
    _check_size(read.size, info.file_size)
    if read.crc32 != info.CRC:
        raise MemberError("CRC-32 does not match (damaged data)")
    return read.data
