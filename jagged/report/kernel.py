"""A warm Jupyter kernel reused for many report notebooks, reset to a clean state between them.

Starting a kernel and importing pandas, matplotlib and jagged costs a small report notebook
more than running it. :class:`WarmKernel` starts one kernel, imports the libraries once,
records the kernel's clean state, and before every notebook puts that state back:

* the user namespace, the input/output history and the execution counter, as a new
  IPython session (``get_ipython().reset(new_session=True)``, so ``In [1]`` is the
  first cell again; the kernel keeps its history in memory, like nbclient's kernels);
* matplotlib: every figure closed, ``rcParams`` restored to the recorded values;
* the ``random`` and ``numpy.random`` global generators restored to the recorded state
  (so every notebook sees the same stream, as from a just-started kernel);
* numpy's floating-point error and print options, pandas' options (back to defaults);
* the warnings filters (and every module's "already warned" registry, so a warning shown
  by one report is shown again by the next);
* the working directory, ``sys.path`` and ``os.environ``.

Imported modules stay imported (that is the point), so a notebook that mutates a
module's globals could still leak; jagged's notebooks do not, and
``tests/test_batch.py`` checks both the reset itself (a notebook that pollutes each item
above, then a probe) and that a report's numbers are identical alone and in a batch.

The notebooks still run through :func:`jagged.report.execution.execute` (papermill): the kernel
manager and this module's kernel client are passed as ``km`` and ``kc`` to the
``jagged-warm`` papermill engine, papermill's nbclient engine for a kernel it does not own
(it reuses the client instead of making one per notebook, and never shuts the kernel down).

Nothing left behind
-------------------
Every kernel this process starts (:func:`launch_kernel`) keeps its files in the Jupyter
runtime folder under one name, ``jagged-<pid>-<host>-<tag>`` (the owning process, a tag of
this machine as in :func:`jagged.report.run.make_workdir`, and a random tag): the connection
file ``.json`` (never a temporary file in ``TMPDIR``), the IPC sockets ``-ipc-N`` and a
``.kernel`` file holding the kernel's process id. :func:`stop_kernel` removes them all.
While this process owns a kernel, SIGTERM (if nothing else handles it) raises
:class:`Terminated`, so the ``finally`` blocks stop the kernel and remove the files before
the process exits with status 143. A process killed outright (SIGKILL) cannot; the next
kernel started on the machine removes the files whose owning process *and* kernel are
provably gone (:func:`remove_stale_kernel_files`), never a live run's.
"""

from __future__ import annotations

import atexit
import os
import re
import signal
import socket
import subprocess
import threading
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Any

#: papermill engine name for runs in a warm kernel (see :class:`WarmKernelEngine`).
ENGINE_NAME = "jagged-warm"
#: Libraries imported once when the kernel starts.
PRELOAD = ("numpy", "pandas", "matplotlib.pyplot", "seaborn", "jagged", "jagged.stats.analysis", "jagged.views.display",
           "jagged.views.model_view", "jagged.plots.model", "jagged.plots.dispersion")

_SETUP_CODE = "import jagged.report.kernel as _jk\n_jk.preload()\n_jk.capture_state()\ndel _jk\n"
_RESET_CODE = ("get_ipython().reset(new_session=True)\n"
               "import jagged.report.kernel as _jk\n_jk.restore_state()\ndel _jk\n")
#: Like nbclient: an in-memory history, so kernels never share (and clash in) the history file.
KERNEL_ARGUMENTS = ["--HistoryManager.hist_file=:memory:"]

# ---------------------------------------------------------------------------------------
# Inside the kernel


_STATE: dict[str, Any] = {}


def preload() -> None:
    """Import :data:`PRELOAD` (runs inside the kernel)."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)


def capture_state() -> None:
    """Record the kernel's clean state (runs inside the kernel, once, after :func:`preload`)."""
    import random
    import sys

    import matplotlib
    import numpy as np

    _STATE.update(
        rc=dict(matplotlib.rcParams), random=random.getstate(), np_random=np.random.get_state(),
        np_err=np.geterr(), np_print=np.get_printoptions(), warnings=_saved_warnings(),
        cwd=os.getcwd(), path=list(sys.path), environ=dict(os.environ),
    )


def _saved_warnings() -> Any:
    """The warnings filters and ``showwarning`` as they are now, put back by ``__exit__``.

    :class:`warnings.catch_warnings` is the public way to save and restore them; leaving
    it also tells the warnings machinery that the filters changed, which makes every
    "already warned" registry stale (a "once"/"default" warning is shown again).
    """
    import warnings

    saved = warnings.catch_warnings()
    saved.__enter__()
    return saved


def _forget_shown_warnings() -> None:
    """Empty every module's ``__warningregistry__`` and the "once" registry.

    Leaving :class:`warnings.catch_warnings` already makes them stale; emptying them says
    so without relying on that.
    """
    import sys
    import warnings

    for module in list(sys.modules.values()):
        try:
            registry = vars(module).get("__warningregistry__")
        except TypeError:  # not a module (a placeholder some packages put in sys.modules)
            continue
        if isinstance(registry, dict):
            registry.clear()
    once = getattr(warnings, "onceregistry", None)
    if isinstance(once, dict):
        once.clear()


def restore_state() -> None:
    """Put back what :func:`capture_state` recorded (runs inside the kernel before each notebook)."""
    import random
    import sys
    import warnings

    import matplotlib
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    if not _STATE:
        raise RuntimeError("restore_state() before capture_state()")
    plt.close("all")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        matplotlib.rcParams.update(_STATE["rc"])
        pd.reset_option("all")
    random.setstate(_STATE["random"])
    np.random.set_state(_STATE["np_random"])
    np.seterr(**_STATE["np_err"])
    np.set_printoptions(**_STATE["np_print"])
    _STATE["warnings"].__exit__(None, None, None)  # the recorded filters and showwarning
    _forget_shown_warnings()
    _STATE["warnings"] = _saved_warnings()
    os.chdir(_STATE["cwd"])
    sys.path[:] = _STATE["path"]
    os.environ.clear()
    os.environ.update(_STATE["environ"])


# ---------------------------------------------------------------------------------------
# In the process that drives the kernel


@lru_cache(maxsize=None)
def _register_engine() -> None:
    """Register the ``jagged-warm`` engine with papermill (once per process)."""
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine, papermill_engines
    from papermill.utils import merge_kwargs, remove_args

    class ClosingClient(PapermillNotebookClient):
        """papermill's client for a kernel it does not own.

        With a kernel client given (``kc``), it uses it and leaves it open; otherwise it
        closes the one it made, which papermill would leave open.
        """

        def execute(self, **kwargs: Any) -> Any:
            made_kc = self.kc is None
            try:
                return super().execute(**kwargs)
            finally:
                if made_kc and self.kc is not None and not self.owns_km:
                    self.kc.stop_channels()
                    self.kc = None

    class WarmKernelEngine(NBClientEngine):
        """papermill's nbclient engine for a kernel it does not own (``km`` and optionally ``kc`` given)."""

        @classmethod
        def execute_managed_notebook(cls, nb_man: Any, kernel_name: str, log_output: bool = False,
                                     stdout_file: Any = None, stderr_file: Any = None, start_timeout: int = 60,
                                     execution_timeout: float | None = None, **kwargs: Any) -> Any:
            from papermill.engines import logger

            kc = kwargs.pop("kc", None)
            kwargs = remove_args(["input_path"], **kwargs)
            safe_kwargs = remove_args(["timeout", "startup_timeout"], **kwargs)
            final_kwargs = merge_kwargs(
                safe_kwargs, timeout=execution_timeout if execution_timeout else kwargs.get("timeout"),
                startup_timeout=start_timeout, kernel_name=kernel_name, log=logger, log_output=log_output,
                stdout_file=stdout_file, stderr_file=stderr_file)
            client = ClosingClient(nb_man, **final_kwargs)
            client.kc = kc
            return client.execute()

    papermill_engines.register(ENGINE_NAME, WarmKernelEngine)


def parent_arguments() -> list[str]:
    """Kernel arguments that make the kernel exit when this process dies.

    ipykernel's parent poller (``IPKernelApp.parent_handle``, a documented option) checks
    every second whether the kernel's parent is still the process that started it, and
    exits the kernel when it is not, e.g. after the parent was killed with SIGKILL.
    jupyter_client usually asks for it through the ``JPY_PARENT_PID`` environment
    variable; saying it here does not depend on that. (Kernels run in a session of their
    own, so signals to the parent's process group never reach them.)
    """
    return [f"--IPKernelApp.parent_handle={os.getpid()}"] if os.name == "posix" else []


#: ``jagged-<pid>-<host>-<tag>`` + ``.json`` / ``.kernel`` / ``-ipc-N``: a kernel's files (see the module notes).
_KERNEL_FILE = re.compile(r"^(?P<stem>jagged-(?P<pid>[0-9]+)-(?P<host>[0-9a-f]{8})-[0-9a-f]{12})"
                          r"(?:\.json|\.kernel|-ipc-[0-9]+)$")
#: Kernels this process started and has not stopped yet (``id(km)`` -> manager).
_OWNED: dict[int, Any] = {}
_HANDLER_LOCK = threading.Lock()
#: Longest path an IPC socket may have (``sockaddr_un.sun_path`` is 104 bytes on macOS, 108 on Linux).
_MAX_SOCKET_PATH = 104


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


def _on_terminate(signum: int, frame: Any) -> None:
    signal.signal(signum, signal.SIG_IGN)  # one is enough; the clean-up must not be cut short
    raise Terminated(signum)


def _guard_termination() -> None:
    """Make SIGTERM raise :class:`Terminated` while this process owns a kernel (unless it is handled already)."""
    if threading.current_thread() is not threading.main_thread():
        return
    with _HANDLER_LOCK:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_terminate)


def _release_termination() -> None:
    """Give SIGTERM its default action back once no kernel is owned (if it still has ours)."""
    if _OWNED or threading.current_thread() is not threading.main_thread():
        return
    with _HANDLER_LOCK:
        if signal.getsignal(signal.SIGTERM) is _on_terminate:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def stop_owned_kernels() -> None:
    """Stop every kernel this process started and has not stopped (at exit, or a worker that must go now)."""
    for km in list(_OWNED.values()):
        stop_kernel(km)


def _kernel_files(stem: str) -> list[str]:
    """Every file of the kernel whose files start with ``stem`` (a path without suffix)."""
    import glob

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
        match = _KERNEL_FILE.match(entry.name)
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
        for name in _kernel_files(base):
            try:
                os.unlink(name)
            except OSError:
                continue
            removed.append(Path(name))
    return removed


def launch_kernel(kernel_name: str = "python3", *, cwd: str | None = None) -> Any:
    """Start a kernel process and return its manager without waiting for it to answer.

    The kernel boots (imports IPython, opens its sockets) in its own process while the
    caller goes on, e.g. validating the input; nbclient waits for it to be ready.

    Parameters
    ----------
    kernel_name : str
        Kernel spec to start.
    cwd : str, optional
        Working directory of the kernel (default: this process's).

    Returns
    -------
    jupyter_client.manager.AsyncKernelManager
        The manager of the running kernel; the caller stops it with :func:`stop_kernel`.

    Notes
    -----
    The kernel's files are named after this process in the Jupyter runtime folder, and
    files that dead runs left there are removed first (see the module notes). Until the
    kernel is stopped, SIGTERM raises :class:`Terminated` in this process unless something
    else handles SIGTERM already; at interpreter exit every kernel still owned is stopped.
    """
    import uuid

    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.paths import jupyter_runtime_dir
    from jupyter_core.utils import run_sync

    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    runtime = Path(jupyter_runtime_dir())
    runtime.mkdir(parents=True, exist_ok=True)
    remove_stale_kernel_files(runtime)
    # One name for all of the kernel's files, so no two kernels (workers, restarts) clash
    # and a dead run's files can be recognised (the connection file would otherwise be a
    # temporary file in TMPDIR that nothing removes after SIGKILL).
    stem = runtime / f"jagged-{os.getpid()}-{host_tag()}-{uuid.uuid4().hex[:12]}"
    # Local IPC sockets rather than TCP on POSIX, like jagged.report.run's kernels (no traffic
    # on the network stack; ZeroMQ has no IPC transport on Windows).
    # A socket's path has to fit in sockaddr_un (108 bytes on Linux, 104 on macOS): with a
    # deep runtime folder, TCP on the loopback interface instead.
    ipc = os.name == "posix" and len(os.fsencode(f"{stem}-ipc-99")) < _MAX_SOCKET_PATH
    transport = {"transport": "ipc", "ip": f"{stem}-ipc"} if ipc else {}
    km = AsyncKernelManager(kernel_name=kernel_name, connection_file=f"{stem}.json", **transport)
    if not _OWNED:
        atexit.register(stop_owned_kernels)
    _guard_termination()
    _OWNED[id(km)] = km
    try:
        # The kernel's own stdout/stderr (not cell output, which travels over ZMQ) would
        # scribble over a progress bar.
        run_sync(km.start_kernel)(cwd=cwd or os.getcwd(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  extra_arguments=[*KERNEL_ARGUMENTS, *parent_arguments()])
        process = getattr(km.provisioner, "process", None)
        if process is not None:
            try:
                Path(f"{stem}.kernel").write_text(f"{process.pid}\n", encoding="ascii")
            except OSError:  # a full disk: the next run then checks the command lines instead
                pass
    except BaseException:
        stop_kernel(km)
        raise
    return km


def external_kernel_kwargs(km: Any) -> dict[str, Any]:
    """Keyword arguments for :func:`jagged.report.execution.execute` to run in a kernel the caller owns.

    papermill's own engine, given ``km``, leaves the kernel client it makes open (its
    sockets then warn when collected); this engine closes it and leaves the kernel to
    the caller.
    """
    _register_engine()
    return {"km": km, "engine_name": ENGINE_NAME}


def stop_kernel(km: Any) -> None:
    """Stop a kernel started by :func:`launch_kernel` at once (no grace period) and remove its files.

    The process gets SIGKILL and its connection file, socket files and ``.kernel`` file are
    removed; unlike ``shutdown_kernel(now=True)`` this does not wait ~0.1 s for the
    process to be reaped (on POSIX; elsewhere it falls back to that). Stopping a kernel
    twice does nothing the second time.
    """
    from jupyter_core.utils import run_sync

    _OWNED.pop(id(km), None)
    try:
        process = getattr(getattr(km, "provisioner", None), "process", None)
        if os.name == "posix" and process is not None:
            try:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=5)  # reaped at once: SIGKILL cannot be ignored
            except (OSError, subprocess.TimeoutExpired):
                pass
            try:
                run_sync(km.cleanup_resources)(restart=False)  # control socket, zmq context, connection file
            except Exception:  # already cleaned up
                pass
        elif process is not None:
            try:
                run_sync(km.shutdown_kernel)(now=True)
            except Exception:  # already dead: nothing left to stop
                pass
        connection = str(km.connection_file or "")
        if connection.endswith(".json"):
            names = _kernel_files(connection[:-len(".json")])
        else:
            names = [connection]
        if getattr(km, "transport", None) == "ipc":
            import glob

            names += glob.glob(f"{glob.escape(km.ip)}-*")
        for name in dict.fromkeys(names):
            if name:
                try:
                    os.unlink(name)
                except OSError:
                    pass
    finally:
        _release_termination()


class KernelStateError(RuntimeError):
    """The warm kernel could not be set up or reset."""


class WarmKernel:
    """One Jupyter kernel, started once and reset before each notebook.

    Parameters
    ----------
    kernel_name : str
        Kernel spec to start.
    startup_timeout : float
        Seconds to wait for the kernel to answer.
    cwd : str, optional
        Working directory of the kernel (default: this process's).

    Examples
    --------
    >>> kernel = WarmKernel()                                          # doctest: +SKIP
    >>> kernel.reset()                                                 # doctest: +SKIP
    >>> jagged.report.run.run_report(nb, out, params, **kernel.engine_kwargs())  # doctest: +SKIP
    >>> kernel.shutdown()                                              # doctest: +SKIP
    """

    def __init__(self, kernel_name: str = "python3", *, startup_timeout: float = 60,
                 cwd: str | None = None) -> None:
        self.kernel_name = kernel_name
        self.startup_timeout = startup_timeout
        self.cwd = cwd or os.getcwd()
        self.km: Any = None
        self._kc: Any = None
        self.runs = 0

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> "WarmKernel":
        """Start the kernel, preload the libraries and record its clean state."""
        from jupyter_client.session import Session
        from jupyter_core.utils import run_sync

        _register_engine()
        self.km = launch_kernel(self.kernel_name, cwd=self.cwd)
        # One client for the resets and every notebook (a new client costs a readiness
        # handshake per notebook). It has a session of its own: clients made from the
        # manager share the manager's session, whose id is the ZMQ identity the kernel
        # routes replies to, and the kernel hands that identity over to the newest client.
        session = Session(key=self.km.session.key, signature_scheme=self.km.session.signature_scheme)
        self._kc = self.km.client(session=session)
        self._kc.allow_stdin = False
        self._kc.start_channels()
        try:
            run_sync(self._kc.wait_for_ready)(timeout=self.startup_timeout)
            self._run(_SETUP_CODE)
        except BaseException:
            self.shutdown()
            raise
        return self

    def alive(self) -> bool:
        """Whether the kernel process is running."""
        from jupyter_core.utils import run_sync

        return self.km is not None and bool(run_sync(self.km.is_alive)())

    def shutdown(self) -> None:
        """Stop the kernel at once (no grace period) and close the channels."""

        if self._kc is not None:
            self._kc.stop_channels()
            self._kc = None
        if self.km is not None:
            stop_kernel(self.km)
            self.km = None

    def pid(self) -> int | None:
        """The kernel's process id, when it runs."""
        provisioner = getattr(self.km, "provisioner", None)
        process = getattr(provisioner, "process", None)
        return getattr(process, "pid", None)

    def kill(self) -> None:
        """Kill the kernel process at once and remove its files (for a worker that must exit now)."""
        if self.km is not None:
            stop_kernel(self.km)

    def __enter__(self) -> "WarmKernel":
        return self.start() if self.km is None else self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    # -- use --------------------------------------------------------------------------

    def _run(self, code: str, timeout: float = 60) -> None:
        from jupyter_core.utils import run_sync

        reply = run_sync(self._kc.execute_interactive)(code, store_history=False, allow_stdin=False,
                                                       timeout=timeout, output_hook=lambda msg: None)
        content = reply.get("content", {})
        if content.get("status") != "ok":
            raise KernelStateError(f"warm kernel code failed: {content.get('ename')}: {content.get('evalue')}")

    def reset(self) -> None:
        """Restore the recorded clean state (see the module notes); raises KernelStateError."""
        if self.km is None:
            raise KernelStateError("the warm kernel is not running")
        self._run(_RESET_CODE)
        self.runs += 1

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`jagged.report.execution.execute` / ``run_report`` to use this kernel."""
        return {**external_kernel_kwargs(self.km), "kc": self._kc}
