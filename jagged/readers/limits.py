"""The input cap: how many bytes any file, archive member or table may expand to.

Inputs are untrusted (a 257 KB ``.eval`` archive can expand to 3.9 GB), so readers count
what is **actually produced while streaming** (decompressed bytes, decoded Parquet Arrow
bytes, JSON text and values), never a declared size, and stop with a one-line
:class:`InputTooLargeError` once past the cap. Data beyond :data:`KEEP_BYTES` are counted
and dropped, and read again only when the whole input is within the cap.

The cap, first found: ``max_input_bytes`` (``--max-input-bytes``, set for a call by
:func:`input_cap`, a context variable); ``JAGGED_MAX_INPUT_BYTES`` (bytes, or ``K``/``M``/
``G`` suffixes, powers of 1024); :data:`DEFAULT_MAX_INPUT_BYTES` (2 GiB). Per input file
(an archive's members summed) it counts the (decompressed) bytes of CSV and JSON text,
each member's decompressed bytes, Parquet's decoded Arrow bytes (a dictionary once per
column chunk) and, for JSON, :data:`JSON_VALUE_BYTES` per ``{``, ``[`` or ``,``, an upper
bound of Python's memory per parsed value.
"""

from __future__ import annotations

import contextlib
import contextvars
import gzip
import json
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from jagged.errors import JaggedInputError

DEFAULT_MAX_INPUT_BYTES: int = 2 * 1024 ** 3
ENV_VAR = "JAGGED_MAX_INPUT_BYTES"
#: Decompressed data kept while streaming; beyond it data are counted, dropped and re-read.
KEEP_BYTES: int = 128 * 1024 ** 2
#: Bytes charged per JSON container or separator: an upper bound of Python's memory per value.
JSON_VALUE_BYTES: int = 64
#: Largest cap accepted (1 TiB, as ``jagged.options`` declares for ``max_input_bytes``).
MAX_CAP: int = 2 ** 40
#: Read size of streaming decompression.
CHUNK_BYTES: int = 1024 ** 2

_CAP: contextvars.ContextVar[int | None] = contextvars.ContextVar("jagged_max_input_bytes", default=None)
_SIZE = re.compile(r"\s*(\d+)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}


class InputTooLargeError(JaggedInputError):
    """An input expands to more than the cap; the message names it, the cap and how to raise it."""


def parse_size(value: Any, where: str) -> int:
    """A positive byte count, at most :data:`MAX_CAP`, from an int or a string (``"4096"``, ``"512M"``, ``"8GiB"``)."""
    if isinstance(value, bool):
        raise JaggedInputError(f"{where}: {value!r} is not a number of bytes")
    if isinstance(value, int):
        size = value
    else:
        match = _SIZE.fullmatch(str(value)) if isinstance(value, str) and len(value) < 40 else None
        if match is None:
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise JaggedInputError(f"{where}: {shown} is not a number of bytes (e.g. 4294967296 or 4G)")
        size = int(match.group(1)) * _UNITS[match.group(2).upper()]
    if size < 1:
        raise JaggedInputError(f"{where}: must be a positive number of bytes")
    if size > MAX_CAP:
        raise JaggedInputError(f"{where}: at most {MAX_CAP:,} bytes (1 TiB)")
    return size


def max_input_bytes() -> int:
    """The cap in force: :func:`input_cap`'s value, else ``JAGGED_MAX_INPUT_BYTES``, else the default."""
    cap = _CAP.get()
    if cap is not None:
        return cap
    env = os.environ.get(ENV_VAR, "").strip()
    return parse_size(env, ENV_VAR) if env else DEFAULT_MAX_INPUT_BYTES


@contextlib.contextmanager
def input_cap(value: int | str | None) -> Iterator[int]:
    """Set the cap (bytes, see :func:`parse_size`) for the readers called in the ``with`` block; None keeps it."""
    if value is None:
        yield max_input_bytes()
        return
    token = _CAP.set(parse_size(value, "max_input_bytes"))
    try:
        yield _CAP.get()  # type: ignore[misc]
    finally:
        _CAP.reset(token)


def size_text(n: int) -> str:
    """``2 GiB``, ``512 MiB``, ``1.5 KiB``, ``100 bytes``."""
    for unit, size in (("TiB", 1024 ** 4), ("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n:,} bytes"


def too_large(what: str, cap: int, *, how: str = "expands to") -> InputTooLargeError:
    """The one-line error for ``what`` (``"x.eval: member samples/1.json"``) passing ``cap``."""
    return InputTooLargeError(
        f"{what} {how} more than {size_text(cap)}, the input cap ({cap:,} bytes); if the file is trusted, raise it "
        f"with --max-input-bytes N, max_input_bytes=N or {ENV_VAR}=N")


class Budget:
    """Bytes counted against the cap (default :func:`max_input_bytes`) for one input (a file, or an archive)."""

    def __init__(self, what: str, cap: int | None = None) -> None:
        self.what = what
        self.cap = max_input_bytes() if cap is None else cap
        self.used = 0

    def add(self, n: int, what: str | None = None, *, how: str = "expands to") -> None:
        """Count ``n`` more bytes; raise :class:`InputTooLargeError` naming ``what`` once past the cap."""
        self.used += n
        if self.used > self.cap:
            raise too_large(what or self.what, self.cap, how=how)


@dataclass
class StreamRead:
    """What :func:`read_stream` read: the bytes (None when not kept), their count and CRC-32."""

    data: bytes | None
    size: int
    crc32: int


def read_stream(stream: IO[bytes], budget: Budget, what: str | None = None, *, limit: int | None = None,
                keep: int | None = None, crc: bool = False) -> StreamRead:
    """Read a binary stream to its end in :data:`CHUNK_BYTES` pieces, counting against ``budget``.

    Never asks for more than a chunk, so a lying header cannot make it allocate a large
    buffer. Stops after ``limit + 1`` bytes (so a caller can tell "more than the limit");
    keeps at most ``keep`` bytes (past it ``data`` is None, the rest still counted and, with
    ``crc``, checksummed).
    """
    chunks: list[bytes] | None = []
    size = checksum = 0
    while limit is None or size <= limit:
        want = CHUNK_BYTES if limit is None else min(CHUNK_BYTES, limit + 1 - size)
        chunk = stream.read(want)
        if not chunk:
            break
        size += len(chunk)
        budget.add(len(chunk), what)
        if crc:
            checksum = zlib.crc32(chunk, checksum)
        if chunks is not None:
            chunks.append(chunk)
            if keep is not None and size > keep:
                chunks = None
    return StreamRead(None if chunks is None else b"".join(chunks), size, checksum)


def read_file(path: Path, budget: Budget | None = None, *, json_values: bool = False) -> bytes:
    """A plain file's bytes, at most the cap (checked on the size and again while reading).

    With ``json_values`` the bytes are also charged as JSON text (:func:`json_budget`). A
    FIFO, device or unreadable file is a :class:`JaggedInputError`.
    """
    budget = budget or Budget(path.name)
    if not os.path.isfile(path):  # before opening: opening a FIFO blocks
        raise JaggedInputError(f"{path.name}: not a regular file")
    room = budget.cap - budget.used
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > room:
                raise too_large(budget.what, budget.cap, how="is")
            chunks = [handle.read(size)] if size else []
            total = len(chunks[0]) if chunks else 0
            while True:  # a file that grew, or whose size says 0 (/proc): go on in chunks, at most to the cap
                chunk = handle.read(min(CHUNK_BYTES, room + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if total > room:
                    raise too_large(budget.what, budget.cap, how="is")
    except OSError as exc:
        raise JaggedInputError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
    budget.add(total, how="is")
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if json_values:
        json_budget(data, path.name)
    return data


def gunzip_file(path: Path) -> bytes:
    """Decompress a gzip file with bounded memory, its output counted against the cap.

    Output past :data:`KEEP_BYTES` is counted to its end without being kept and, when within
    the cap, decompressed again. Damaged data is a :class:`JaggedInputError`.
    """
    for keep in (KEEP_BYTES, None):
        budget = Budget(path.name)
        try:
            with gzip.open(path, "rb") as stream:
                data = read_stream(stream, budget, keep=keep).data
        except (OSError, EOFError, zlib.error) as exc:
            raise JaggedInputError(f"{path.name}: damaged gzip data ({exc})") from None
        if data is not None:
            return data
    raise AssertionError("unreachable")  # pragma: no cover


def json_budget(data: bytes | str, what: str) -> None:
    """Charge a JSON text's bytes and :data:`JSON_VALUE_BYTES` per ``{``, ``[`` and ``,`` against the cap.

    Counting those characters bounds the number of values the parser can build, whatever
    the strings hold.
    """
    if isinstance(data, str):
        count = data.count(",") + data.count("[") + data.count("{")
    else:
        count = data.count(b",") + data.count(b"[") + data.count(b"{")
    cap = max_input_bytes()
    if len(data) + JSON_VALUE_BYTES * count > cap:
        raise too_large(f"{what} (JSON of {len(data):,} bytes, about {count:,} values)", cap,
                        how="would need")


def json_error(exc: BaseException) -> str | None:
    """The one-line reason for a JSON failure other than syntax (depth, a 4,300-digit integer, memory), else None."""
    if isinstance(exc, RecursionError):
        return "nested too deeply (more than about 1,000 levels of arrays or objects)"
    if isinstance(exc, MemoryError):
        return "too large to hold in memory"
    if isinstance(exc, ValueError) and "integer string conversion" in str(exc):
        return "holds an integer with more digits than Python converts (4,300)"
    return None


def loads(text: str | bytes, what: str) -> Any:
    """Parse JSON within the cap (:func:`json_budget`); depth, huge integers and memory become one-line errors.

    ``json.JSONDecodeError`` is left to callers, who word it with its line and column.
    """
    json_budget(text, what)
    try:
        return json.loads(text)
    except (RecursionError, MemoryError, ValueError) as exc:
        reason = json_error(exc)
        if reason is None:
            raise
        raise JaggedInputError(f"{what}: not readable JSON: {reason}") from None
