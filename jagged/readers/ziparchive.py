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

Only public attributes of :class:`zipfile.ZipInfo` and the documented zip layout are
used; no private :mod:`zipfile` machinery is patched.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path

#: Zip compression method of Zstandard (APPNOTE 4.4.5).
ZIP_ZSTANDARD = 93
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_LOCAL_SIGNATURE = b"PK\x03\x04"


class MemberError(Exception):
    """A member cannot be read; the message says why (one line)."""


def read_member(archive: zipfile.ZipFile, name: str, path: Path) -> bytes:
    """The uncompressed bytes of one archive member.

    Parameters
    ----------
    archive : zipfile.ZipFile
        The open archive.
    name : str
        Member name.
    path : pathlib.Path
        The archive's file (opened again, read-only, for Zstandard members).

    Returns
    -------
    bytes

    Raises
    ------
    MemberError
        Unknown compression, damaged data, or a size or CRC that does not match.
    """
    info = archive.getinfo(name)
    if info.compress_type == ZIP_ZSTANDARD and not _zipfile_reads_zstandard():
        return _read_zstandard(info, path)
    try:
        with archive.open(info) as handle:
            return handle.read()
    except NotImplementedError as exc:
        raise MemberError(f"compression method {info.compress_type} is not supported ({exc})") from None
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
        raise MemberError(str(exc) or type(exc).__name__) from None


def _zipfile_reads_zstandard() -> bool:
    """Python 3.14's zipfile reads method 93 itself."""
    return getattr(zipfile, "ZIP_ZSTANDARD", None) == ZIP_ZSTANDARD


def _read_zstandard(info: zipfile.ZipInfo, path: Path) -> bytes:
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
        compressed = handle.read(info.compress_size)
    if len(compressed) != info.compress_size:
        raise MemberError("the archive is truncated")
    import zstandard

    limit = info.file_size + 1  # never more than the archive says, whatever the frames claim
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(compressed), read_across_frames=True) as reader:
            chunks, size = [], 0
            while size < limit:
                chunk = reader.read(limit - size)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        data = b"".join(chunks)
    except zstandard.ZstdError as exc:
        raise MemberError(f"damaged Zstandard data ({exc})") from None
    if len(data) != info.file_size:
        raise MemberError(f"uncompressed size {len(data)} bytes, the archive says {info.file_size}")
    if zlib.crc32(data) != info.CRC:
        raise MemberError("CRC-32 does not match (damaged data)")
    return data


__all__ = ["MemberError", "ZIP_ZSTANDARD", "read_member"]
