"""A batch's worker processes: one warm kernel each, the pool the parent runs them in, and stopping them.

The parent hands one :class:`~jagged.report.batch_plan.Job` at a time to each worker over
a pipe (:func:`execute_plan`); a worker runs it in its warm kernel (:func:`run_job`) and
sends back the :class:`~jagged.report.batch_plan.Outcome`. SIGINT and SIGTERM stop every
worker and kernel (:class:`BatchInterrupted`); a worker whose parent is killed outright
ends itself and its kernel (:func:`_watch_parent`).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence

from jagged.report.batch_plan import MODELS_DIR, Job, Outcome, Plan, up_to_date

_KERNEL: Any = None
#: Seconds between a worker's checks that the batch process that started it still runs.
PARENT_POLL_SECONDS = 0.2


def _kill_kernel() -> None:
    global _KERNEL
    if _KERNEL is not None:
        try:
            _KERNEL.shutdown()
        except Exception:  # the worker is going away; the kernel's parent poller ends it anyway
            pass
        _KERNEL = None


def _exit_now(code: int) -> None:  # pragma: no cover - runs in a dying worker
    """Kill this worker's kernel and exit at once (no cleanup that could hang)."""
    from jagged.report.kernel import stop_owned_kernels

    stop_owned_kernels()  # the warm kernel, or one still starting, with its files
    os._exit(code)


def _on_terminate(signum: int, frame: Any) -> None:  # pragma: no cover - runs in a dying worker
    _exit_now(128 + signum)


def _watch_parent(parent_pid: int) -> threading.Thread:
    """Start a thread that ends this worker and its kernel once the batch process is gone.

    A process whose parent dies is re-parented (to init or a subreaper), so
    :func:`os.getppid` stops being ``parent_pid``; that is checked every
    :data:`PARENT_POLL_SECONDS`. This covers a parent killed with SIGKILL, which has no
    chance to stop its workers. (Linux's ``prctl(PR_SET_PDEATHSIG)`` would need ctypes and
    fires when the parent *thread* ends; the pipe to the parent does not close while
    other workers hold inherited copies of it.)
    """
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_SECONDS)
        _exit_now(1)

    thread = threading.Thread(target=watch, name="jagged-batch-parent-watch", daemon=True)
    thread.start()
    return thread


def _worker_main(conn: Any, parent_pid: int) -> None:
    """A worker process: run each job the parent sends over ``conn`` and send back its Outcome.

    ``None`` (or the parent closing its end) stops the worker. Ctrl-C is the parent's
    business (it stops the workers); SIGTERM, or the parent's death, kills the kernel too.
    The kernel itself also watches its parent, the worker: ipykernel's parent poller
    (``IPKernelApp.parent_handle``, see :func:`jagged.report.kernel.launch_kernel`) ends it
    within a second of the worker's death, however the worker died.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_terminate)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    _watch_parent(parent_pid)
    try:
        while True:
            try:
                job = conn.recv()
            except EOFError:
                break
            if job is None:
                break
            conn.send(run_job(job))
    finally:
        _kill_kernel()
        conn.close()


def run_job(job: Job) -> Outcome:
    """Make one report in this process's warm kernel (started on first use).

    A failed notebook's kernel is shut down and the next job gets a fresh one, so a
    failure cannot leave anything behind for the next report.
    """
    global _KERNEL
    from jagged.report.execution import ReportError
    from jagged.report.kernel import WarmKernel
    from jagged.report.run import run_report

    started = time.perf_counter()
    try:
        if _KERNEL is None or not _KERNEL.alive():
            _kill_kernel()
            _KERNEL = WarmKernel().start()
        _KERNEL.reset()
        run_report(job.notebook, job.html_path, job.parameters, title=job.title, subtitle=job.subtitle,
                   facts=job.facts, metadata={"input-hash": job.input_hash}, clean_stale=False,
                   **_KERNEL.engine_kwargs())
    except ReportError as exc:
        _kill_kernel()
        error = f"{exc.ename}: {exc.evalue}" if exc.ename else str(exc)
        return Outcome(job, "failed", error=" ".join(error.split()), failed_notebook=exc.failed_notebook,
                       seconds=time.perf_counter() - started)
    except Exception as exc:  # kernel trouble: report it as this job's failure, go on
        _kill_kernel()
        return Outcome(job, "failed", error=" ".join(f"{type(exc).__name__}: {exc}".split()),
                       seconds=time.perf_counter() - started)
    return Outcome(job, "written", seconds=time.perf_counter() - started)


# ---------------------------------------------------------------------------------------
# Running


def finished_in_place(plan: Plan, running: Sequence[int]) -> dict[int, Outcome]:
    """The jobs among ``running`` (indices into ``plan.jobs``) whose report is in place and current.

    When a batch is stopped, a worker may have moved its report into place (atomically)
    and been stopped before the parent received its outcome. Such a report is complete and
    carries its job's content hash (:func:`jagged.report.batch_plan.up_to_date`), so it
    counts as written: the index lists it, as the next run would find it up to date.

    Parameters
    ----------
    plan : Plan
        The batch's plan.
    running : sequence of int
        Jobs that were handed to a worker and had no outcome yet.

    Returns
    -------
    dict
        ``{index: Outcome(job, "written")}`` for those whose report is in place.
    """
    return {i: Outcome(plan.jobs[i], "written") for i in running if up_to_date(plan.jobs[i])}


class BatchInterrupted(KeyboardInterrupt):
    """The batch was stopped by SIGINT (Ctrl-C) or SIGTERM before every report was made.

    Attributes
    ----------
    signum : int
        The signal.
    outcomes : list of Outcome
        The jobs that finished (written, failed) or were up to date, in plan order.
    """

    def __init__(self, signum: int, outcomes: Sequence[Outcome] = ()) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)
        self.outcomes = list(outcomes)


def _raise_terminated(signum: int, frame: Any) -> None:
    signal.signal(signum, signal.SIG_IGN)  # one is enough; the clean-up must not be cut short
    raise BatchInterrupted(signum)


@dataclass
class _Worker:
    """The parent's side of one worker process: the process, its pipe, the job it runs."""

    process: Any
    conn: Any
    job: int | None = None


def _death(process: Any) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        return f"worker died: killed by {signal.Signals(-code).name}"
    return f"worker died: exit status {code}"


def _progress(total: int, enabled: bool | None) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="report", desc="jagged batch", disable=None if enabled is None else not enabled,
                leave=True, dynamic_ncols=True)


class _Pool:
    """Worker processes the parent owns (start, hand out jobs, notice deaths, stop)."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.workers: list[_Worker] = []

    def start(self) -> _Worker:
        parent_end, child_end = self.context.Pipe()
        process = self.context.Process(target=_worker_main, args=(child_end, os.getpid()),
                                       name=f"jagged-batch-worker-{len(self.workers) + 1}", daemon=True)
        process.start()
        child_end.close()
        worker = _Worker(process, parent_end)
        self.workers.append(worker)
        return worker

    def busy(self) -> list[_Worker]:
        return [w for w in self.workers if w.job is not None]

    def retire(self, worker: _Worker) -> None:
        """Forget a worker that exited or was told to stop."""
        worker.job = None
        worker.conn.close()
        self.workers.remove(worker)
        worker.process.join(timeout=10)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()

    def stop(self) -> None:
        """Terminate every worker (SIGTERM: each kills its kernel), then SIGKILL what remains."""
        for worker in self.workers:
            if worker.process.is_alive():
                worker.process.terminate()
        for worker in self.workers:
            worker.process.join(timeout=5)
            if worker.process.is_alive():
                worker.process.kill()  # its kernel's parent poller ends the kernel
                worker.process.join()
            worker.conn.close()
        self.workers.clear()


def execute_plan(plan: Plan, *, jobs: int | None = None, progress: bool | None = None) -> list[Outcome]:
    """Run the plan's pending jobs over ``jobs`` worker processes.

    Parameters
    ----------
    plan : Plan
        From :func:`plan_batch`.
    jobs : int, optional
        Worker processes (default: the number of CPUs), capped at the number of jobs.
    progress : bool, optional
        Show a progress bar on stderr (None: when stderr is a terminal).

    Returns
    -------
    list of Outcome
        One per job of the plan, in plan order.

    Raises
    ------
    BatchInterrupted
        On SIGINT or SIGTERM (a ``KeyboardInterrupt``), after stopping the workers and
        their kernels and removing their temporary folders; it carries the outcomes of
        the jobs that finished.

    Notes
    -----
    The parent hands one job at a time to each worker over a pipe. A worker that dies
    (killed, out of memory) fails the job it was running and is replaced. Workers and
    kernels never outlive the batch: on SIGINT/SIGTERM the parent stops them; if the
    parent is killed outright, each worker notices (:func:`_watch_parent`) and kills its
    kernel, and each kernel notices its worker's death (ipykernel's parent poller).
    """
    import multiprocessing
    from collections import deque
    from multiprocessing.connection import wait as wait_for

    from jagged.report.debris import remove_stale_kernel_files, remove_stale_workdirs

    todo = {id(j) for j in plan.todo}
    results: dict[int, Outcome] = {i: Outcome(j, "skipped") for i, j in enumerate(plan.jobs) if id(j) not in todo}
    pending = [(i, j) for i, j in enumerate(plan.jobs) if id(j) in todo]
    if not pending:
        return [results[i] for i in range(len(plan.jobs))]
    folders = [plan.out_dir, plan.out_dir / MODELS_DIR]
    folders[1].mkdir(parents=True, exist_ok=True)
    for folder in folders:
        remove_stale_workdirs(folder)
    n_workers = max(1, min(jobs or os.cpu_count() or 1, len(pending)))
    # The cross-model report is the longest; start it first so it does not finish last.
    pending.sort(key=lambda item: item[1].kind != "overview")
    queue = deque(pending)
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    pool = _Pool(context)
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_term = signal.signal(signal.SIGTERM, _raise_terminated) if in_main_thread else None
    bar = None
    counts = {"written": 0, "failed": 0}

    def record(i: int, outcome: Outcome) -> None:
        results[i] = outcome
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
        if bar is not None:
            bar.set_postfix_str(f"done {counts['written']}, failed {counts['failed']}, "
                                f"remaining {len(pending) - counts['written'] - counts['failed']}", refresh=False)
            bar.update(1)

    def assign(worker: _Worker) -> None:
        """Send the worker the next job, or tell it to stop when none is left."""
        while queue:
            worker.job, job = queue.popleft()
            try:
                worker.conn.send(job)
                return
            except OSError:  # it died before taking the job
                worker.process.join(timeout=10)
                record(worker.job, Outcome(job, "failed", error=_death(worker.process)))
                pool.retire(worker)
                if not queue:
                    return
                worker = pool.start()
        try:
            worker.conn.send(None)
        except OSError:
            pass
        pool.retire(worker)

    try:
        # Workers are forked before the progress bar starts its monitor thread.
        for _ in range(n_workers):
            assign(pool.start())
        bar = _progress(len(pending), progress)
        bar.update(sum(counts.values()))
        while pool.busy():
            busy = pool.busy()
            ready = set(wait_for([w.conn for w in busy] + [w.process.sentinel for w in busy]))
            for worker in busy:
                if worker.conn not in ready and worker.process.sentinel not in ready:
                    continue
                outcome = None
                try:
                    if worker.conn.poll():
                        outcome = worker.conn.recv()
                except (EOFError, OSError):
                    outcome = None
                i = worker.job
                if outcome is not None:
                    record(i, outcome)
                    assign(worker)
                    continue
                worker.process.join(timeout=10)
                record(i, Outcome(plan.jobs[i], "failed", error=_death(worker.process)))
                pool.retire(worker)
                for folder in folders:
                    remove_stale_workdirs(folder)  # the dead worker's unfinished report
                if queue:
                    assign(pool.start())
    except BaseException as exc:
        in_flight = [w.job for w in pool.workers if w.job is not None and w.job not in results]
        pool.stop()
        # a report its worker moved into place just before the stop, whose outcome had not arrived
        results.update(finished_in_place(plan, in_flight))
        for folder in folders:
            remove_stale_workdirs(folder)  # the stopped workers' unfinished reports
        remove_stale_kernel_files()  # a worker killed before it could remove its kernel's files
        if isinstance(exc, KeyboardInterrupt):
            signum = getattr(exc, "signum", signal.SIGINT)
            raise BatchInterrupted(signum, [results[i] for i in sorted(results)]) from None
        raise
    finally:
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
        if bar is not None:
            bar.close()
    return [results[i] for i in range(len(plan.jobs))]
