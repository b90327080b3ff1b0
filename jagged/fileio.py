"""Writing files so that a failure never leaves a half-written one, one writer per folder, and safe CSV.

Files are created 0666 less the umask, as a report is: they hold no secret.
"""

from __future__ import annotations

import errno
import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from jagged.errors import JaggedInputError
from jagged.text import printable

#: The lock file :func:`folder_lock` takes in the folder it guards.
LOCK_NAME = ".jagged-batch.lock"


def write_error(path: str | Path, exc: OSError) -> JaggedInputError:
    """The one-line error for a file that could not be written.

    "no space left on device writing PATH" for a full disk or quota, else "PATH: cannot write it: REASON".
    """
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return JaggedInputError(f"no space left on device writing {path}")
    return JaggedInputError(f"{path}: cannot write it: {exc.strerror or type(exc).__name__}")


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to a temporary file beside ``path`` (its folder made if missing), then rename it into place.

    A reader sees the old file or the new one. A failure (full disk, read-only or missing
    folder) is a one-line :class:`JaggedInputError`; the old file stays and no temporary remains.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:  # like tempfile.mkstemp, but the umask decides the mode (mkstemp's is 0600)
            tmp = str(path.parent / f".{path.name[:40]}.{secrets.token_hex(6)}.tmp")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                break
            except FileExistsError:
                continue
    except OSError as exc:
        raise write_error(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise write_error(path, exc) from None
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 text atomically (see :func:`atomic_write_bytes`)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


#: First characters that make a spreadsheet read a cell as a formula (OWASP's CSV injection rule).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(frame: Any, keep: str = "\t\n\r") -> str:
    """A table as CSV text whose text cells a spreadsheet shows as text, never runs.

    A text cell (or column name) starting with ``= + - @``, a tab or a carriage return gets a
    leading ``'`` (OWASP's CSV-injection rule); NUL, control characters not in ``keep`` and bidi
    overrides are written as escapes (:func:`jagged.text.printable`): ``keep`` is tab, newline
    and carriage return in a file, the tab only on a terminal. Numbers never change.
    """
    def cell(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        value = printable(value, keep=keep)
        return "'" + value if value.startswith(FORMULA_START) else value

    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    text = [c for c in frame.columns if not (is_numeric_dtype(frame[c]) or is_bool_dtype(frame[c]))]
    return frame.assign(**{c: frame[c].map(cell) for c in text}).rename(columns=cell).to_csv(index=False)


@contextmanager
def folder_lock(folder: str | Path, *, what: str = "jagged batch") -> Iterator[Path]:
    """Hold an exclusive ``flock`` on ``FOLDER/.jagged-batch.lock`` (holding the owner's pid), or refuse at once.

    The folder is made if missing. Raises :class:`JaggedInputError` when another process
    holds the lock ("another jagged batch (pid N) is writing FOLDER; ...", ``what`` naming it)
    or the folder cannot be made. The lock dies with its holder (SIGKILL included), so a stale
    file never blocks a later run; without ``fcntl`` (Windows) no lock is taken.
    """
    folder = Path(folder)
    lock_path = folder / LOCK_NAME
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if isinstance(exc, (FileExistsError, NotADirectoryError)):
            blocking = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), folder)
            where = "exists and is not a folder" if blocking == folder else f"{blocking} is not a folder"
            raise JaggedInputError(f"{folder}: {where}") from None
        raise write_error(lock_path, exc) from None
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            fcntl = None
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise write_error(lock_path, exc) from None
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                who = f" (pid {holder})" if holder.isdigit() else ""
                raise JaggedInputError(f"another {what}{who} is writing {folder}; wait for it or use another "
                                       "--out-dir") from None
        try:  # who holds it, for the message above; a full disk only loses that detail
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        except OSError:
            pass
        yield lock_path
    finally:
        os.close(fd)  # releases the lock
