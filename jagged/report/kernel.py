"""Jupyter kernels for reports: launched without waiting, stopped at once, and kept warm between notebooks.

:func:`launch_kernel` starts a kernel whose files are named after this run and
:func:`stop_kernel` kills it and removes them (:mod:`jagged.report.debris`).

Starting a kernel and importing pandas, matplotlib and jagged costs a small report
notebook more than running it. :class:`WarmKernel` starts one kernel, imports the libraries once,
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

The kernel's files, SIGTERM while a kernel is owned, and the files of dead runs are
:mod:`jagged.report.debris`'s business; :func:`launch_kernel` and :func:`stop_kernel` use it.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from jagged.paths import remove_spill_folders
from jagged.report.debris import (
    guard_termination,
    kernel_stem,
    release_termination,
    remove_kernel_files,
    remove_stale_kernel_files,
)

#: papermill engine name for runs in a warm kernel (see :class:`WarmKernelEngine`).
ENGINE_NAME = "jagged-warm"
#: Libraries imported once when the kernel starts.
PRELOAD = ("numpy", "pandas", "matplotlib.pyplot", "seaborn", "jagged", "jagged.analysis", "jagged.views.display",
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


#: Kernels this process started and has not stopped yet (``id(km)`` -> manager).
_OWNED: dict[int, Any] = {}
#: Longest path an IPC socket may have (``sockaddr_un.sun_path`` is 104 bytes on macOS, 108 on Linux).
_MAX_SOCKET_PATH = 104


def stop_owned_kernels() -> None:
    """Stop every kernel this process started and has not stopped (at exit, or a worker that must go now)."""
    for km in list(_OWNED.values()):
        stop_kernel(km)


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
    files that dead runs left there are removed first (see :mod:`jagged.report.debris`).
    Until the kernel is stopped, SIGTERM raises :class:`~jagged.report.debris.Terminated`
    in this process unless something else handles SIGTERM already; at interpreter exit
    every kernel still owned is stopped.
    """
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.paths import jupyter_runtime_dir
    from jupyter_core.utils import run_sync

    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    runtime = Path(jupyter_runtime_dir())
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)  # Jupyter's own mode: connection files hold keys
    remove_stale_kernel_files(runtime)
    # One name for all of the kernel's files (the connection file would otherwise be a
    # temporary file in TMPDIR that nothing removes after SIGKILL).
    stem = kernel_stem(runtime)
    # Local IPC sockets rather than TCP on POSIX, like jagged.report.run's kernels (no traffic
    # on the network stack; ZeroMQ has no IPC transport on Windows).
    # A socket's path has to fit in sockaddr_un (108 bytes on Linux, 104 on macOS): with a
    # deep runtime folder, TCP on the loopback interface instead.
    ipc = os.name == "posix" and len(os.fsencode(f"{stem}-ipc-99")) < _MAX_SOCKET_PATH
    transport = {"transport": "ipc", "ip": f"{stem}-ipc"} if ipc else {}
    km = AsyncKernelManager(kernel_name=kernel_name, connection_file=f"{stem}.json", **transport)
    if not _OWNED:
        atexit.register(stop_owned_kernels)
    guard_termination()
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

    The process gets SIGKILL and its connection file, socket files, ``.kernel`` file and DuckDB
    spill folders are removed; unlike ``shutdown_kernel(now=True)`` this does not wait ~0.1 s for the
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
            remove_spill_folders(process.pid)  # DuckDB's, that the killed kernel could not remove
            try:
                run_sync(km.cleanup_resources)(restart=False)  # control socket, zmq context, connection file
            except Exception:  # already cleaned up
                pass
        elif process is not None:
            try:
                run_sync(km.shutdown_kernel)(now=True)
            except Exception:  # already dead: nothing left to stop
                pass
        remove_kernel_files(km)
    finally:
        if not _OWNED:
            release_termination()


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
