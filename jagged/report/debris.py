"""What a run leaves on disk, and removing what dead runs left: kernel files and temporary report folders.

A report is made in ``.<stem>.<pid>-<host>.<random>`` beside its destination
(:func:`make_workdir`); a kernel's files in the Jupyter runtime folder are
``jagged-<pid>-<host>-<tag>`` + ``.json``, ``-ipc-N`` and ``.kernel`` (its process id).
Both names carry the owning process and this machine, so the next run removes what a run
killed outright left, once its owner (and kernel) are provably gone, and nothing else.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import socket
import tempfile
import uuid
import zlib
from pathlib import Path
from typing import Any

from jagged.paths import process_alive

#: ``.<stem>.<pid>-<host>.<random>``: a run's temporary folder (see :func:`make_workdir`).
_WORKDIR = re.compile(r"^\..+\.(?P<pid>[0-9]+)-(?P<host>[0-9a-f]{8})\.[a-z0-9_]{8}$")
#: ``jagged-<pid>-<host>-<tag>`` + ``.json`` / ``.kernel`` / ``-ipc-N``: a kernel's files (see the module notes).
KERNEL_FILE = re.compile(r"^(?P<stem>jagged-(?P<pid>[0-9]+)-(?P<host>[0-9a-f]{8})-[0-9a-f]{12})"
                         r"(?:\.json|\.kernel|-ipc-[0-9]+)$")


def host_tag() -> str:
    """Eight hex digits naming this machine (a folder shared between machines keeps their runs apart)."""
    return f"{zlib.crc32(socket.gethostname().encode('utf-8', 'replace')):08x}"


def kernel_stem(runtime: str | Path) -> Path:
    """A new name for a kernel's files in ``runtime``: ``jagged-<pid>-<host>-<tag>`` (no suffix)."""
    return Path(runtime) / f"jagged-{os.getpid()}-{host_tag()}-{uuid.uuid4().hex[:12]}"


def kernel_files(stem: str) -> list[str]:
    """Every file of the kernel whose files start with ``stem`` (a path without suffix)."""
    base = glob.escape(stem)
    return [f"{stem}.json", f"{stem}.kernel", *glob.glob(f"{base}-ipc-*")]


def _mentioned_by_a_process(name: str) -> bool:
    """Whether a running process has ``name`` on its command line (True when that cannot be checked)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    needle = name.encode("utf-8", "surrogateescape")
    for entry in os.scandir(proc):
        if entry.name.isdigit():
            try:
                with open(f"{entry.path}/cmdline", "rb") as handle:
                    if needle in handle.read():
                        return True
            except OSError:  # ended meanwhile, or not ours to read
                continue
    return False


def remove_stale_kernel_files(folder: str | Path) -> list[Path]:
    """Remove the kernel files that dead runs left in the runtime folder ``folder``; return them.

    A group ``jagged-<pid>-<host>-<tag>...`` goes only when it is from this machine, its owner
    ``pid`` is gone and its kernel is gone: the pid in its ``.kernel`` file is not running or,
    without that file, no running process names the connection file on its command line.
    """
    host, me = host_tag(), os.getpid()
    groups: dict[str, int] = {}
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        match = KERNEL_FILE.match(entry.name)
        if match is not None and match["host"] == host and int(match["pid"]) != me:
            groups[match["stem"]] = int(match["pid"])
    removed: list[Path] = []
    for stem, owner in groups.items():
        base = os.path.join(folder, stem)
        if process_alive(owner):
            continue
        try:
            kernel_pid = int(Path(f"{base}.kernel").read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            if _mentioned_by_a_process(f"{stem}.json"):
                continue
        else:
            if process_alive(kernel_pid):
                continue
        for name in kernel_files(base):
            try:
                os.unlink(name)
            except OSError:
                continue
            removed.append(Path(name))
    return removed


def remove_kernel_files(km: Any) -> None:
    """Remove the files of a stopped kernel: connection file, ``.kernel`` file and IPC sockets."""
    connection = str(km.connection_file or "")
    if connection.endswith(".json"):
        names = kernel_files(connection[:-len(".json")])
    else:
        names = [connection]
    if getattr(km, "transport", None) == "ipc":
        names += glob.glob(f"{glob.escape(km.ip)}-*")
    for name in dict.fromkeys(names):
        if name:
            try:
                os.unlink(name)
            except OSError:
                pass


# ---------------------------------------------------------------------------------------
# A run's temporary folder beside its report


def make_workdir(html_path: Path) -> Path:
    """A new hidden temporary folder beside ``html_path``: ``.<stem>.<pid>-<host>.<random>`` (stem cut at 40)."""
    prefix = f".{html_path.stem[:40]}.{os.getpid()}-{host_tag()}."
    return Path(tempfile.mkdtemp(prefix=prefix, dir=html_path.parent))


def remove_stale_workdirs(folder: str | Path) -> list[Path]:
    """Remove (and return) the temporary folders of runs that died, in ``folder``.

    Only :func:`make_workdir` folders of this machine whose process is gone; everything else stays.
    """
    removed: list[Path] = []
    host = host_tag()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _WORKDIR.match(entry.name)
        if (match is None or match["host"] != host or not entry.is_dir(follow_symlinks=False)
                or int(match["pid"]) == os.getpid() or process_alive(int(match["pid"]))):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed
