"""Jupyter kernels for reports: started without waiting, stopped at once, kept warm between notebooks; SIGTERM.

:func:`launch_kernel` starts a kernel whose files are named after this run
(:mod:`jagged.report.debris`); :func:`stop_kernel` kills it and removes them. A kernel
also exits within about a second of its parent's death (ipykernel's parent poller), so
none outlives a run killed outright.

:class:`WarmKernel` imports the libraries once and, before every notebook, restores the
clean state it recorded: user namespace, history and execution counter; matplotlib's
figures and ``rcParams``; the ``random`` and ``numpy.random`` generators; numpy's and
pandas' options; the warnings filters and "already warned" registries; the working
directory, ``sys.path`` and ``os.environ``. A notebook mutating a module's globals could
still leak; ``tests/test_batch.py`` checks a report's numbers are the same in a batch.

:func:`stopping` is jagged's one SIGTERM handler: inside it SIGTERM raises :class:`Stopped`
in the main thread, so ``finally`` blocks stop the kernels before the process exits with
status 143, and :func:`check_stopped` raises it in any thread at the run's checkpoints.
"""

from __future__ import annotations

import atexit
import os
import queue
import signal
import subprocess
import threading
import time
from contextlib import contextmanager, suppress
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from jagged.paths import remove_spill_folders
from jagged.report.debris import kernel_stem, remove_kernel_files, remove_stale_kernel_files

#: papermill engine name for runs in a kernel the caller owns (see :func:`_register_engine`).
ENGINE_NAME = "jagged-warm"
#: Libraries a warm kernel imports once.
PRELOAD = ("numpy", "pandas", "matplotlib.pyplot", "seaborn", "jagged", "jagged.analysis", "jagged.views.display",
           "jagged.views.model_view", "jagged.plots.model", "jagged.plots.dispersion")
_SETUP = "import jagged.report.kernel as _jk\n_jk.preload()\n_jk.capture_state()\ndel _jk\n"
_RESET = "get_ipython().reset(new_session=True)\nimport jagged.report.kernel as _jk\n_jk.restore_state()\ndel _jk\n"
#: Like nbclient, an in-memory history (kernels never share the history file); and every kernel imports
#: :data:`PRELOAD` as it starts, while the process that launched it loads the input: a report's first
#: cell then finds them imported (IPython's ``exec_lines`` run before the kernel answers, names deleted).
KERNEL_ARGUMENTS = ["--HistoryManager.hist_file=:memory:",
                    "--IPKernelApp.exec_lines=import jagged.report.kernel as _jk; _jk.preload(); del _jk"]
#: Longest path an IPC socket may have (``sockaddr_un.sun_path`` is 104 bytes on macOS, 108 on Linux).
_MAX_SOCKET_PATH = 104

# ---------------------------------------------------------------------------------------
# Stopping: the one SIGTERM handler


class Stopped(SystemExit):
    """SIGTERM (or, in a batch, Ctrl-C) stopped this process's runs: a SystemExit with status 128 + ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + int(signum))
        self.signum = int(signum)


#: The signal that stopped the runs (empty: none); kept in case the exception raised in the
#: main thread is swallowed where it lands (e.g. inside jupyter_client's event loop).
_STOP: list[int] = []
#: Open :func:`stopping` blocks, and whether the main thread is starting a kernel (SIGTERM then
#: takes effect once it has started).
_DEPTH, _DEFER = [0], [0]


def request_stop(signum: int) -> None:
    """Make :func:`check_stopped` raise :class:`Stopped` in every thread until the last :func:`stopping` ends."""
    _STOP.append(int(signum))


def check_stopped() -> None:
    """Raise :class:`Stopped` if the runs were stopped (a checkpoint: kernel started, before writing)."""
    if _STOP:
        raise Stopped(_STOP[0])


def _on_sigterm(signum: int, frame: Any) -> None:
    signal.signal(signum, signal.SIG_IGN)  # one is enough; the clean-up must not be cut short
    request_stop(signum)
    if not _DEFER[0]:
        raise Stopped(signum)


@contextmanager
def stopping() -> Iterator[None]:
    """Inside, SIGTERM raises :class:`Stopped` in the main thread (unless something else handles SIGTERM).

    Another thread installs nothing. When the last open block ends, SIGTERM gets its default
    action back and the stop is forgotten.
    """
    mine = threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    if mine:
        signal.signal(signal.SIGTERM, _on_sigterm)
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        if mine:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if not _DEPTH[0]:
            _STOP.clear()


# ---------------------------------------------------------------------------------------
# Inside the kernel

_STATE: dict[str, Any] = {}


def preload() -> None:
    """Import :data:`PRELOAD` (runs inside the kernel)."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)


def _save_warnings() -> Any:
    """Save the warnings filters and ``showwarning``; ``__exit__`` puts them back and makes every registry stale."""
    import warnings

    saved = warnings.catch_warnings()
    saved.__enter__()
    return saved


def capture_state() -> None:
    """Record the kernel's clean state (runs inside the kernel, once, after :func:`preload`)."""
    import random
    import sys

    import matplotlib
    import numpy as np

    _STATE.update(rc=dict(matplotlib.rcParams), random=random.getstate(), np_random=np.random.get_state(),
                  np_err=np.geterr(), np_print=np.get_printoptions(), warnings=_save_warnings(),
                  cwd=os.getcwd(), path=list(sys.path), environ=dict(os.environ))


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
    _STATE["warnings"].__exit__(None, None, None)
    for module in list(sys.modules.values()):  # "already warned": shown again by the next report
        registry = getattr(module, "__dict__", {}).get("__warningregistry__")
        if isinstance(registry, dict):
            registry.clear()
    warnings.onceregistry.clear()  # type: ignore[attr-defined]
    _STATE["warnings"] = _save_warnings()
    os.chdir(_STATE["cwd"])
    sys.path[:] = _STATE["path"]
    os.environ.clear()
    os.environ.update(_STATE["environ"])


# ---------------------------------------------------------------------------------------
# In the process that drives the kernel


@lru_cache(maxsize=None)
def _register_engine() -> None:
    """Register the ``jagged-warm`` papermill engine: nbclient's, for a kernel papermill does not own.

    Given ``kc`` it uses that client and leaves it open; otherwise it closes the client it made.
    """
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine, logger, papermill_engines
    from papermill.utils import merge_kwargs, remove_args

    class Client(PapermillNotebookClient):
        def execute(self, **kwargs: Any) -> Any:
            made_kc = self.kc is None
            try:
                return super().execute(**kwargs)
            finally:
                if made_kc and self.kc is not None:
                    self.kc.stop_channels()
                    self.kc = None

    class Engine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man: Any, kernel_name: str, log_output: bool = False,
                                     stdout_file: Any = None, stderr_file: Any = None, start_timeout: int = 60,
                                     execution_timeout: float | None = None, **kwargs: Any) -> Any:
            kc = kwargs.pop("kc", None)
            kwargs = remove_args(["input_path", "timeout", "startup_timeout"], **kwargs)
            client = Client(nb_man, **merge_kwargs(
                kwargs, timeout=execution_timeout, startup_timeout=start_timeout, kernel_name=kernel_name,
                log=logger, log_output=log_output, stdout_file=stdout_file, stderr_file=stderr_file))
            client.kc = kc
            return client.execute()

    papermill_engines.register(ENGINE_NAME, Engine)


#: Kernels this process started and has not stopped yet (``id(km)`` -> manager).
_OWNED: dict[int, Any] = {}


def _process(km: Any) -> Any:
    """The kernel's :class:`subprocess.Popen`, or None."""
    return getattr(getattr(km, "provisioner", None), "process", None)


def _stop_owned_kernels() -> None:
    """Stop every kernel this process started and has not stopped (at exit)."""
    for km in list(_OWNED.values()):
        stop_kernel(km)


def kill_kernels() -> None:
    """SIGKILL every kernel this process owns, from any thread; their owners see them die and clean up."""
    for km in list(_OWNED.values()):
        process = _process(km)
        if process is not None:
            try:
                process.kill()  # does nothing once the owner has reaped it (no stray pid)
            except OSError:
                pass


def launch_kernel(kernel_name: str = "python3", *, cwd: str | None = None) -> Any:
    """Start a kernel process and return its manager (an AsyncKernelManager) without waiting for it to answer.

    The caller stops it with :func:`stop_kernel` (every kernel still owned is stopped at exit).

    Notes
    -----
    The kernel's files are named after this process in the Jupyter runtime folder (mode
    0700), after removing what dead runs left there. It uses IPC sockets on POSIX unless their
    paths would not fit in ``sockaddr_un`` (then TCP on the loopback interface). SIGTERM while
    the main thread starts it takes effect once it has started, so that kernel is stopped too.
    """
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.paths import jupyter_runtime_dir
    from jupyter_core.utils import run_sync

    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    runtime = Path(jupyter_runtime_dir())
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)  # Jupyter's own mode: connection files hold keys
    remove_stale_kernel_files(runtime)
    stem = kernel_stem(runtime)
    ipc = os.name == "posix" and len(os.fsencode(f"{stem}-ipc-99")) < _MAX_SOCKET_PATH
    km = AsyncKernelManager(kernel_name=kernel_name, connection_file=f"{stem}.json",
                            **({"transport": "ipc", "ip": f"{stem}-ipc"} if ipc else {}))
    if not _OWNED:
        atexit.register(_stop_owned_kernels)
    _OWNED[id(km)] = km
    main = threading.current_thread() is threading.main_thread()
    _DEFER[0] += main
    try:
        try:
            # The kernel's own stdout/stderr (not cell output, which travels over ZMQ) would
            # scribble over a progress bar.
            run_sync(km.start_kernel)(cwd=cwd or os.getcwd(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      extra_arguments=KERNEL_ARGUMENTS)
            with suppress(OSError):  # a full disk: the next run checks the command lines instead
                Path(f"{stem}.kernel").write_text(f"{_process(km).pid}\n", encoding="ascii")
        finally:
            _DEFER[0] -= main
        check_stopped()
    except BaseException:
        stop_kernel(km)
        raise
    return km


def external_kernel_kwargs(km: Any) -> dict[str, Any]:
    """Keyword arguments for :func:`jagged.report.execution.execute` to run in a kernel the caller owns."""
    _register_engine()
    return {"km": km, "engine_name": ENGINE_NAME}


def stop_kernel(km: Any) -> None:
    """Stop a kernel from :func:`launch_kernel` at once (SIGKILL) and remove its files; twice does nothing.

    Its connection, socket and ``.kernel`` files and DuckDB spill folders are removed, without
    the ~0.1 s ``shutdown_kernel(now=True)`` waits (on POSIX; elsewhere it falls back to that).
    """
    from jupyter_core.utils import run_sync

    _OWNED.pop(id(km), None)
    process = _process(km)
    try:
        if os.name == "posix" and process is not None:
            try:
                process.kill()
                process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            remove_spill_folders(process.pid)  # DuckDB's, that the killed kernel could not remove
            run_sync(km.cleanup_resources)(restart=False)  # control socket, zmq context, connection file
        elif process is not None:
            run_sync(km.shutdown_kernel)(now=True)
    except Exception:  # already stopped or cleaned up
        pass
    remove_kernel_files(km)


@contextmanager
def own_kernel(kernel_name: str = "python3", *, cwd: str | None = None) -> Iterator[Any]:
    """:func:`launch_kernel`, stopped on the way out however the block ends; SIGTERM stops it (:func:`stopping`)."""
    with stopping():
        km = launch_kernel(kernel_name, cwd=cwd)
        try:
            yield km
        finally:
            stop_kernel(km)


class KernelStateError(RuntimeError):
    """The warm kernel could not be set up or reset (it died, or its code failed)."""


class WarmKernel:
    """One Jupyter kernel, started, preloaded and its clean state recorded; :meth:`reset` before each notebook.

    A warm kernel belongs to the thread that starts it (jupyter_client's sockets live in its
    event loop); another thread may only :func:`kill_kernels`. ``timeout``: seconds to wait
    for the kernel to answer.

    Examples
    --------
    >>> kernel = WarmKernel()                                          # doctest: +SKIP
    >>> kernel.reset()                                                 # doctest: +SKIP
    >>> run_report("model_report", "m.html", {"model": "m"}, **kernel.engine_kwargs())  # doctest: +SKIP
    >>> kernel.shutdown()                                              # doctest: +SKIP
    """

    def __init__(self, timeout: float = 60) -> None:
        from jupyter_client.session import Session
        from jupyter_core.utils import run_sync

        _register_engine()
        self.km: Any = launch_kernel()
        self._kc: Any = None
        try:
            # One client for the resets and every notebook, with a session of its own: clients
            # made from the manager share its session, whose id is the ZMQ identity the kernel
            # routes replies to, and the kernel hands that identity to the newest client.
            session = Session(key=self.km.session.key, signature_scheme=self.km.session.signature_scheme)
            self._kc = self.km.client(session=session)
            self._kc.allow_stdin = False
            self._kc.start_channels()
            run_sync(self._kc.wait_for_ready)(timeout=timeout)
            self._run(_SETUP)
        except BaseException:
            self.shutdown()
            raise

    def alive(self) -> bool:
        """Whether the kernel process is running."""
        process = _process(self.km)
        return process is not None and process.poll() is None

    def shutdown(self) -> None:
        """Stop the kernel at once and close the channels (twice does nothing)."""
        if self._kc is not None:
            self._kc.stop_channels()
            self._kc = None
        if self.km is not None:
            stop_kernel(self.km)
            self.km = None

    def _run(self, code: str, timeout: float = 60) -> None:
        """Run ``code`` silently; raise :class:`KernelStateError` if it fails, the kernel dies or ``timeout`` passes."""
        from jupyter_core.utils import run_sync

        if self.km is None:
            raise KernelStateError("the warm kernel is not running")
        msg_id = self._kc.execute(code, silent=True, store_history=False, allow_stdin=False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                reply = run_sync(self._kc.get_shell_msg)(timeout=1)
            except queue.Empty:
                if not self.alive():
                    raise KernelStateError("the warm kernel died") from None
                continue
            if reply["parent_header"].get("msg_id") == msg_id:
                content = reply["content"]
                if content.get("status") != "ok":
                    raise KernelStateError(f"warm kernel code failed: {content.get('ename')}: {content.get('evalue')}")
                return
        raise KernelStateError(f"the warm kernel did not answer within {timeout:g} s")

    def reset(self) -> None:
        """Restore the recorded clean state (see the module notes); raises :class:`KernelStateError`."""
        self._run(_RESET)

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`jagged.report.execution.execute` / ``run_report`` to use this kernel."""
        return {**external_kernel_kwargs(self.km), "kc": self._kc}
