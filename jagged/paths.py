"""User paths are literal, never patterns: a Parquet folder's parts, paths as engines read them, outputs.

Engines read paths as glob patterns (a folder ``run[1]`` would read ``run1``). Here
:func:`parquet_parts` walks a partitioned folder once into the one list jagged checks and
every engine reads; :func:`engine_path` escapes glob characters for DuckDB and
:func:`confine_duckdb` lets a connection open those files only (with
:data:`DUCKDB_CONFIG`: no extension installed or loaded); :func:`check_outputs` refuses an
output that is an input or another output.
"""

from __future__ import annotations

import glob
import os
import stat
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from jagged.errors import JaggedInputError

#: Names never read inside a folder: hidden and underscore files and folders (``.staging/``,
#: ``_temporary/``, ``_SUCCESS``), as Spark and Hive leave them.
SKIPPED_PREFIXES = (".", "_")
#: Settings of every DuckDB connection jagged opens: no extension installed or loaded behind the user's back.
DUCKDB_CONFIG: dict[str, Any] = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


def file_kind(mode: int) -> str:
    """What a file mode is, for messages: ``"a FIFO"``, ``"a socket"``, ``"a device"``, ``"a folder"``, ..."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a folder" if stat.S_ISDIR(mode) else "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _walk(folder: Path) -> Iterator[tuple[Path, bool]]:
    """(path, is_folder) of every entry below ``folder`` that is not skipped, sorted; symlinked folders not entered."""
    for top, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(SKIPPED_PREFIXES))
        for name in dirs:
            if os.path.islink(os.path.join(top, name)):
                yield Path(top, name), True
        for name in sorted(names):
            if not name.startswith(SKIPPED_PREFIXES):
                yield Path(top, name), False


def holds_parquet(folder: str | Path) -> bool:
    """Whether a folder holds a Parquet part (a ``.parquet`` name, any case, outside skipped folders)."""
    return any(not is_dir and path.name.lower().endswith(".parquet") for path, is_dir in _walk(Path(folder)))


def parquet_parts(folder: str | Path, source: str | None = None) -> list[Path]:
    """The parts of a partitioned Parquet folder: the one list jagged checks and every engine reads.

    Every file below ``folder`` but the skipped ones (:data:`SKIPPED_PREFIXES`), in sorted
    walk order; ``.parquet`` in any case. A symlinked folder inside ``folder`` is not entered
    (what it holds is read where it lies). ``source`` names the folder in messages.

    Raises
    ------
    JaggedInputError
        A file that is no ``.parquet``; a part that is no regular file; a symlink leading
        outside the folder; no part at all. One line naming the entry.
    """
    folder = Path(folder)
    source = source or folder.name or str(folder)
    root = os.path.realpath(folder)
    parts = []
    for path, is_dir in _walk(folder):
        where = path.relative_to(folder).as_posix()
        if os.path.islink(path) and not _inside(os.path.realpath(path), root):
            raise JaggedInputError(f"{source}: {where} is a symlink leading outside the folder; a partitioned folder's "
                                   "parts lie inside it")
        if is_dir:
            continue
        if not path.name.lower().endswith(".parquet"):
            raise JaggedInputError(f"{source}: {where} is not a Parquet file; a partitioned folder holds .parquet "
                                   "files only")
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            raise JaggedInputError(f"{source}: {where} cannot be read ({exc.strerror or type(exc).__name__})") from None
        if not stat.S_ISREG(mode):
            raise JaggedInputError(f"{source}: {where} is {file_kind(mode)}, not a regular file")
        parts.append(path)
    if not parts:
        raise JaggedInputError(f"{source}: the folder holds no Parquet files")
    return parts


def engine_path(path: str | Path) -> str:
    """A path as DuckDB must be given it to read that one file: glob characters (``* ? [``) escaped."""
    return glob.escape(os.fspath(path))


def confine_duckdb(con: Any, files: Iterable[str | Path] = (), folders: Iterable[str | Path] = ()) -> list[str]:
    """Let a DuckDB connection open ``files`` (write to ``folders``) and nothing else, lock it; return the paths.

    ``enable_external_access`` off with ``allowed_paths`` and ``allowed_directories``, and
    ``lock_configuration`` on: DuckDB itself refuses another file, ``COPY``, ``ATTACH`` and
    extensions. A connection is confined once, so it reads one input.
    """
    files = [os.fspath(f) for f in files]
    literal = [engine_path(f) for f in files]
    try:  # no bar drawn over the command line's output; in a Jupyter kernel DuckDB refuses the setting (no bar there)
        con.execute("SET enable_progress_bar = false")
    except Exception:  # noqa: S110 - duckdb.InvalidInputException: ipywidgets missing
        pass
    con.execute("SET allowed_paths = ?", [sorted(set(files) | set(literal))])
    con.execute("SET allowed_directories = ?", [[os.fspath(f) for f in folders]])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return literal


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs (a zombie, which has exited but is not reaped yet, does not)."""
    if os.name != "posix":  # os.kill(pid, 0) would terminate the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, and belongs to someone else
        return True
    try:  # Linux: the state letter follows the parenthesised command name
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace").rpartition(")")[2].split()
    except OSError:  # no /proc (macOS), or it has just been reaped: os.kill said it exists
        return True
    return not state or state[0] not in ("Z", "X")


def remove_spill_folders(pid: int | None = None) -> None:
    """Remove this user's DuckDB spill folders (``jagged-duckdb-PID-…``) of ``pid``, or of every dead process.

    A kernel killed with SIGKILL cannot remove its own.
    """
    import re
    import shutil
    import tempfile

    with os.scandir(tempfile.gettempdir()) as entries:
        for entry in entries:
            found = re.fullmatch(r"jagged-duckdb-(\d+)-\w+", entry.name)
            if not found or not entry.is_dir(follow_symlinks=False):
                continue
            owner = int(found.group(1))
            if (owner == pid if pid is not None else owner != os.getpid() and not process_alive(owner)) \
                    and entry.stat(follow_symlinks=False).st_uid == os.getuid():
                shutil.rmtree(entry.path, ignore_errors=True)


def spill_folder() -> str:
    """A new folder (mode 0700) for DuckDB to spill to: ``jagged-duckdb-PID-…`` in the temporary folder."""
    import tempfile

    remove_spill_folders()
    return tempfile.mkdtemp(prefix=f"jagged-duckdb-{os.getpid()}-")


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): the same if they resolve to one place
        return os.path.realpath(a) == os.path.realpath(b)


def check_outputs(outputs: Mapping[str, str | Path | None], inputs: Mapping[str, str | Path | None],
                  folders: Mapping[str, str | Path] | None = None) -> None:
    """Refuse, before anything is written, an output that is an input or another output.

    Parameters
    ----------
    outputs : mapping
        Flag (``"-o"``, ``"--report"``) → path, or None when not asked for; a report's side
        files (``.ipynb``, ``.json``) included.
    inputs : mapping
        Name (``"SCORES"``) → path; None, "" or a value that is no existing path is skipped.
    folders : mapping, optional
        Folders the command fills (``jagged batch``'s ``models/``): no input may lie inside.

    Raises
    ------
    JaggedInputError
        ``FLAG PATH is the input NAME PATH (the same file); an output never replaces an
        input``; an output inside an input folder; an input inside an output folder; two
        outputs that are one file. The same file: :func:`os.path.samefile` when both exist,
        else the same :func:`os.path.realpath`.
    """
    read = [(name, os.fspath(p)) for name, p in inputs.items() if p and os.path.exists(p)]
    for flag, folder in (folders or {}).items():
        for name, path in read:
            if _inside(os.path.realpath(path), os.path.realpath(folder)):
                raise JaggedInputError(f"the input {name} {path} lies inside {folder}, which {flag} fills; keep inputs "
                                       "out of it")
    written: list[tuple[str, str]] = []
    for flag, out in outputs.items():
        if out is None:
            continue
        out = os.fspath(out)
        for name, path in read:
            if _same(out, path):
                raise JaggedInputError(f"{flag} {out} is the input {name} {path} (the same file); an output never "
                                       "replaces an input")
            if os.path.isdir(path) and _inside(os.path.realpath(out), os.path.realpath(path)):
                raise JaggedInputError(f"{flag} {out} lies inside the input folder {name} {path}; write outputs "
                                       "elsewhere")
        for other, path in written:
            if _same(out, path):
                raise JaggedInputError(f"{flag} {out} and {other} {path} are the same file; give each output its own")
        written.append((flag, out))


__all__ = ["DUCKDB_CONFIG", "SKIPPED_PREFIXES", "check_outputs", "confine_duckdb", "engine_path", "file_kind",
           "holds_parquet", "parquet_parts", "process_alive", "remove_spill_folders", "spill_folder"]
