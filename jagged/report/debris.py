"""What a run leaves on disk and how it is cleaned up: kernel files, temporary folders, SIGTERM, dead runs.

A report is made in a temporary folder beside its destination (:func:`make_workdir`,
named after the run's process and host); the next run in that folder removes the
folders of runs that are no longer alive (:func:`remove_stale_workdirs`).

Every kernel this process starts (:func:`jagged.report.kernel.launch_kernel`) keeps its files in the Jupyter
runtime folder under one name, ``jagged-<pid>-<host>-<tag>`` (the owning process, a tag of
this machine as in :func:`make_workdir`, and a random tag): the connection
file ``.json`` (never a temporary file in ``TMPDIR``), the IPC sockets ``-ipc-N`` and a
``.kernel`` file holding the kernel's process id. :func:`jagged.report.kernel.stop_kernel` removes them all
(:func:`remove_kernel_files`).
While this process owns a kernel, SIGTERM (if nothing else handles it) raises
:class:`Terminated`, so the ``finally`` blocks stop the kernel and remove the files before
the process exits with status 143. A process killed outright (SIGKILL) cannot; the next
kernel started on the machine removes the files whose owning process *and* kernel are
provably gone (:func:`remove_stale_kernel_files`), never a live run's.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import socket
import tempfile
import threading
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
_HANDLER_LOCK = threading.Lock()


class Terminated(SystemExit):
    """SIGTERM arrived while this process owned a kernel (exit status 128 + signum once cleaned up).

    A :class:`SystemExit`, so ``except Exception`` blocks let it through and ``finally``
    blocks (stopping the kernel, removing temporary folders) run on the way out.

    Attributes
    ----------
    signum : int
        The signal.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(128 + int(signum))
        self.signum = int(signum)


def host_tag() -> str:
    """Eight hex digits naming this machine (a folder shared between machines keeps their runs apart)."""
    return f"{zlib.crc32(socket.gethostname().encode('utf-8', 'replace')):08x}"


def kernel_stem(runtime: str | Path) -> Path:
    """A new name for a kernel's files in ``runtime``: ``jagged-<pid>-<host>-<tag>`` (no suffix).

    One name for all of a kernel's files, so no two kernels (workers, restarts) clash and a
    dead run's files can be recognised (:data:`KERNEL_FILE`).
    """
    return Path(runtime) / f"jagged-{os.getpid()}-{host_tag()}-{uuid.uuid4().hex[:12]}"


#: The signal that arrived while a kernel was owned (None: none), kept in case the exception the
#: handler raises is swallowed where it lands (e.g. inside jupyter_client's event loop).
_RECEIVED: list[int] = []


def _on_terminate(signum: int, frame: Any) -> None:
    signal.signal(signum, signal.SIG_IGN)  # one is enough; the clean-up must not be cut short
    _RECEIVED.append(signum)
    raise Terminated(signum)


def check_terminated() -> None:
    """Raise :class:`Terminated` if SIGTERM arrived earlier and its exception was swallowed.

    A run calls it at its checkpoints (kernel started, notebook executed, before moving the
    report into place), so a terminated run never writes a report whatever code the signal
    interrupted.
    """
    if _RECEIVED:
        raise Terminated(_RECEIVED[0])


def guard_termination() -> None:
    """Make SIGTERM raise :class:`Terminated` while this process owns a kernel (unless it is handled already)."""
    if threading.current_thread() is not threading.main_thread():
        return
    with _HANDLER_LOCK:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_terminate)


def release_termination() -> None:
    """Give SIGTERM its default action back (if it still has ours); called once no kernel is owned."""
    if threading.current_thread() is not threading.main_thread():
        return
    with _HANDLER_LOCK:
        if signal.getsignal(signal.SIGTERM) is _on_terminate:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


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


def remove_stale_kernel_files(folder: str | Path | None = None) -> list[Path]:
    """Remove the kernel files (connection file, IPC sockets) that dead runs left in the runtime folder.

    A group of files named ``jagged-<pid>-<host>-<tag>...`` (see the module notes) is
    removed only when it is from this machine, its owning process ``pid`` is gone, and its
    kernel is gone: the process id in its ``.kernel`` file is not running or, without that
    file, no running process names the connection file on its command line. Everything
    else, a live run's files included, is left alone.

    Parameters
    ----------
    folder : str or pathlib.Path, optional
        The folder (default: :func:`jupyter_core.paths.jupyter_runtime_dir`).

    Returns
    -------
    list of pathlib.Path
        The files removed.
    """
    if folder is None:
        from jupyter_core.paths import jupyter_runtime_dir

        folder = jupyter_runtime_dir()
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
    """A new hidden temporary folder beside ``html_path``, named after this process.

    Returns
    -------
    pathlib.Path
        ``.<stem>.<pid>-<host>.<random>`` in ``html_path``'s folder (at most 40
        characters of the stem), made with :func:`tempfile.mkdtemp`.
    """
    prefix = f".{html_path.stem[:40]}.{os.getpid()}-{host_tag()}."
    return Path(tempfile.mkdtemp(prefix=prefix, dir=html_path.parent))


def remove_stale_workdirs(folder: str | Path) -> list[Path]:
    """Remove the temporary folders that runs which died left in ``folder``.

    Only folders named by :func:`make_workdir` on this machine whose process is gone are
    removed; another live run's folder, and anything else, is left alone.

    Parameters
    ----------
    folder : str or pathlib.Path
        An output folder (missing: nothing to do).

    Returns
    -------
    list of pathlib.Path
        The folders removed.
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
