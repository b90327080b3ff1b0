"""Members of zip archives, Zstandard-compressed ones included (Inspect ``.eval`` logs).

Current inspect_ai (0.3.x, 2025 on) compresses the members of its ``.eval`` archives with
**Zstandard**, zip compression method 93, which :mod:`zipfile` reads only from Python 3.14
on. Older archives use deflate. :func:`read_member` reads both:

* stored and deflate members (and anything else :mod:`zipfile` supports) through
  :meth:`zipfile.ZipFile.open`;
* Zstandard members by reading the member's compressed bytes where the zip format puts
  them (after its local file header, at ``ZipInfo.header_offset``, for
  ``ZipInfo.compress_size`` bytes) and decompressing them with the ``zstandard`` package;
  the result is checked against the archive's recorded size and CRC-32, as
  :mod:`zipfile` checks its own members.

Both are read in chunks (:func:`jagged.readers.limits.read_stream`), never more than the
member's recorded size (+1 byte to notice a longer stream), and counted against the input
cap (:mod:`jagged.readers.limits`) per member and for the archive's members together: a
member recorded as larger than the cap is refused before anything is decompressed, and one
whose recorded size lies stops at the recorded size (then fails the size and CRC checks).
The output is kept only up to :data:`~jagged.readers.limits.KEEP_BYTES`; a larger member is
checked to its end without being kept and then decompressed again, so a damaged or lying
member is refused with bounded memory.

Only public attributes of :class:`zipfile.ZipInfo` and the documented zip layout are
used; no private :mod:`zipfile` machinery is patched.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path

from jagged.readers.limits import KEEP_BYTES, Budget, read_stream, too_large

#: Zip compression method of Zstandard (APPNOTE 4.4.5).
ZIP_ZSTANDARD = 93
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_LOCAL_SIGNATURE = b"PK\x03\x04"


class MemberError(Exception):
    """A member cannot be read; the message says why (one line)."""


def read_member(archive: zipfile.ZipFile, name: str, path: Path, budget: Budget | None = None) -> bytes:
    """The uncompressed bytes of one archive member, within the input cap.

    Parameters
    ----------
    archive : zipfile.ZipFile
        The open archive.
    name : str
        Member name.
    path : pathlib.Path
        The archive's file (opened again, read-only, for Zstandard members).
    budget : jagged.readers.limits.Budget, optional
        The archive's budget, shared by its members (default: a new one for this member).

    Returns
    -------
    bytes

    Raises
    ------
    MemberError
        Unknown compression, damaged data, or a size or CRC that does not match.
    jagged.readers.limits.InputTooLargeError
        The member (or the archive's members so far) expands to more than the cap.
    """
    info = archive.getinfo(name)
    budget = budget if budget is not None else Budget(path.name)
    what = f"{path.name}: member {name}"
    if info.file_size > budget.cap:
        raise too_large(what, budget.cap, how="is recorded as")
    if info.file_size > budget.cap - budget.used:
        raise too_large(f"{path.name}: the members up to {name}", budget.cap, how="are recorded as")
    start = budget.used
    for keep in (KEEP_BYTES, None):  # a second pass only for a member larger than KEEP_BYTES that checked out
        budget.used = start
        if info.compress_type == ZIP_ZSTANDARD and not _zipfile_reads_zstandard():
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


def _zipfile_reads_zstandard() -> bool:
    """Python 3.14's zipfile reads method 93 itself."""
    return getattr(zipfile, "ZIP_ZSTANDARD", None) == ZIP_ZSTANDARD


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


__all__ = ["MemberError", "ZIP_ZSTANDARD", "read_member"]
