"""``jagged batch``: a report per model, the cross-model report and an index, in warm kernels.

Output folder ``DIR``: ``index.html`` (a sortable table linking every report),
``jaggedness_report.html`` and ``models/<slug>.html`` (each with its ``.ipynb``, or a
``.failed.ipynb``). A batch holds ``DIR/.jagged-batch.lock`` (:func:`jagged.fileio.folder_lock`),
so a second batch on the folder refuses at once. The input is loaded and analysed once
(:func:`~jagged.report.batch_plan.plan_batch`: bad input fails before any kernel starts);
a report whose HTML carries its content hash is skipped. The rest run on ``jobs`` threads,
each driving one :class:`~jagged.report.kernel.WarmKernel` reset before every notebook; a
failed notebook or a dead kernel fails its own report only. Ctrl-C or SIGTERM kills the
kernels and writes the index of what finished; the next run resumes. A batch killed
outright leaves no process (kernels exit when their parent dies) and the next run removes
its files (:mod:`jagged.report.debris`).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from jagged.errors import JaggedInputError
from jagged.report.batch_index import write_index
from jagged.report.batch_plan import MODELS_DIR, Job, Outcome, Plan, plan_batch, up_to_date
from jagged.report.kernel import Stopped, WarmKernel, check_stopped, kill_kernels, request_stop, stopping
from jagged.text import listing

__all__ = ["BatchResult", "run_batch"]


@dataclass
class BatchResult:
    """The outcome of a batch: output folder, index, one :class:`Outcome` per job (models first), wall time."""

    out_dir: Path
    index: Path
    outcomes: list[Outcome]
    seconds: float

    def count(self, status: str) -> int:
        """How many jobs ended with ``status``."""
        return sum(o.status == status for o in self.outcomes)

    @property
    def failed(self) -> list[Outcome]:
        """The failed jobs."""
        return [o for o in self.outcomes if o.status == "failed"]

    def summary(self) -> str:
        """One line: counts, time, and the index path."""
        line = (f"{len(self.outcomes)} reports: {self.count('written')} written, {self.count('skipped')} up to "
                f"date, {self.count('failed')} failed in {self.seconds:.1f} s; index: {self.index}")
        if self.failed:
            names = [o.job.model if o.job.kind == "model" else "cross-model report" for o in self.failed]
            line += f" (failed: {listing(names, 3, quote=True)})"
        return line


def run_batch(scores: str | Path | None, out_dir: str | Path, *, jobs: int | None = None,
              models: Sequence[str] = (), force: bool = False, load: Mapping[str, Any] | None = None,
              analysis: Mapping[str, Any] | None = None, progress: bool | None = None) -> BatchResult:
    """Make every report of a batch and the index (``jagged batch``).

    Parameters
    ----------
    scores, out_dir, models, force, load, analysis
        See :func:`plan_batch`.
    jobs : int, optional
        Reports made at once, each in a warm kernel (default: the number of CPUs).
    progress : bool, optional
        Progress bar on stderr (None: when stderr is a terminal).

    Raises
    ------
    BatchInterrupted
        On SIGINT or SIGTERM, after writing the index of the reports that finished.
    JaggedInputError
        Another batch is writing ``out_dir``, or the index could not be written (a full disk;
        the reports already written are kept).
    """
    from jagged.fileio import folder_lock

    started = time.perf_counter()
    plan = plan_batch(scores, out_dir, models=models, force=force, load=load, analysis=analysis)
    with folder_lock(plan.out_dir):  # one batch at a time per folder; the next one refuses
        try:
            outcomes = execute_plan(plan, jobs=jobs, progress=progress)
        except BatchInterrupted as exc:
            try:
                write_index(plan, exc.outcomes)  # what finished, so the folder is usable as it is
            except JaggedInputError:  # a full disk: the finished reports are kept all the same
                pass
            raise
        index = _write_final_index(plan, outcomes)
    return BatchResult(out_dir=plan.out_dir, index=index, outcomes=outcomes, seconds=time.perf_counter() - started)


def _write_final_index(plan: Plan, outcomes: Sequence[Outcome]) -> Path:
    """:func:`write_index`, with what became of the reports added to a failure's one-line message."""
    try:
        return write_index(plan, outcomes)
    except JaggedInputError as exc:
        written = sum(o.status == "written" for o in outcomes)
        kept = sum(o.job.html_path.is_file() for o in outcomes)
        raise JaggedInputError(f"{exc}: the index was not written; the {kept} reports in place ({written} made by "
                               f"this run) are kept, run the same command again once there is space") from None


class BatchInterrupted(KeyboardInterrupt):
    """The batch was stopped by SIGINT or SIGTERM; ``outcomes`` holds the jobs that finished, in plan order."""

    def __init__(self, signum: int, outcomes: Sequence[Outcome] = ()) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)
        self.outcomes = list(outcomes)


def run_job(job: Job, kernel: WarmKernel | None) -> tuple[Outcome, WarmKernel | None]:
    """Make one report in ``kernel`` (None, or dead: a new one), reset first; return the outcome and the kernel.

    A failure (the notebook, the kernel, a full disk) is the job's outcome, and its kernel
    is shut down (returned as None), so nothing of it reaches the next report.
    """
    from jagged.report.execution import ReportError
    from jagged.report.run import run_report

    started = time.perf_counter()
    try:
        if kernel is None or not kernel.alive():
            if kernel is not None:
                kernel.shutdown()
            kernel = WarmKernel()
        kernel.reset()
        run_report(job.notebook, job.html_path, job.parameters, title=job.title, subtitle=job.subtitle,
                   facts=job.facts, metadata={"input-hash": job.input_hash}, clean_stale=False,
                   **kernel.engine_kwargs())
    except Exception as exc:
        if kernel is not None:
            kernel.shutdown()
        if isinstance(exc, ReportError):
            error = f"{exc.ename}: {exc.evalue}" if exc.ename else str(exc)
        else:
            error = f"{type(exc).__name__}: {exc}"
        return Outcome(job, "failed", error=" ".join(error.split()), seconds=time.perf_counter() - started,
                       failed_notebook=getattr(exc, "failed_notebook", None)), None
    return Outcome(job, "written", seconds=time.perf_counter() - started), kernel


def execute_plan(plan: Plan, *, jobs: int | None = None, progress: bool | None = None) -> list[Outcome]:
    """Make the plan's pending reports, ``jobs`` at a time, each thread with one warm kernel.

    Returns one :class:`Outcome` per job, in plan order. The cross-model report, the longest,
    starts first; the threads take jobs from a shared queue and only drive their kernels (in
    processes of their own) and render. On SIGINT or SIGTERM every kernel is stopped, the
    threads end, and :class:`BatchInterrupted` carries the outcomes of the jobs that finished
    (a report moved into place just before the signal among them).
    """
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

    from jagged.report.debris import remove_stale_workdirs

    todo = {id(j) for j in plan.todo}
    results = {i: Outcome(j, "skipped") for i, j in enumerate(plan.jobs) if id(j) not in todo}
    queue = deque(sorted(((i, j) for i, j in enumerate(plan.jobs) if i not in results),
                         key=lambda item: item[1].kind != "overview"))
    if not queue:
        return [results[i] for i in range(len(plan.jobs))]
    (plan.out_dir / MODELS_DIR).mkdir(parents=True, exist_ok=True)
    for folder in (plan.out_dir, plan.out_dir / MODELS_DIR):
        remove_stale_workdirs(folder)
    lock, started, total = threading.Lock(), set(), len(queue)
    bar = _progress(total, progress)

    def work() -> None:
        kernel = None
        try:
            while True:
                with lock:
                    if not queue:
                        return
                    i, job = queue.popleft()
                    started.add(i)
                outcome, kernel = run_job(job, kernel)
                with lock:
                    check_stopped()  # a report failed by the stop is no outcome
                    results[i] = outcome
                    done = [o.status for o in results.values() if o.status != "skipped"]
                    bar.set_postfix_str(f"done {done.count('written')}, failed {done.count('failed')}, "
                                        f"remaining {total - len(done)}", refresh=False)
                    bar.update(1)
        finally:
            if kernel is not None:
                kernel.shutdown()

    n_threads = max(1, min(jobs or os.cpu_count() or 1, total))
    with stopping(), ThreadPoolExecutor(n_threads, thread_name_prefix="jagged-batch") as pool:
        futures = []
        try:
            futures += [pool.submit(work) for _ in range(n_threads)]
            for future in wait(futures, return_when=FIRST_EXCEPTION).done:
                future.result()
        except BaseException as exc:
            signum = exc.signum if isinstance(exc, Stopped) else signal.SIGINT
            request_stop(signum)  # each thread stops at its next checkpoint
            with lock:
                queue.clear()
            kill_kernels()
            while wait(futures, timeout=0.2).not_done:  # a kernel started meanwhile, too
                kill_kernels()
            running = [i for i in started if i not in results]  # a report put in place just before the stop
            results.update({i: Outcome(plan.jobs[i], "written") for i in running if up_to_date(plan.jobs[i])})
            if isinstance(exc, (KeyboardInterrupt, Stopped)):
                raise BatchInterrupted(signum, [results[i] for i in sorted(results)]) from None
            raise
        finally:
            bar.close()
    return [results[i] for i in range(len(plan.jobs))]


def _progress(total: int, enabled: bool | None) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="report", desc="jagged batch", disable=None if enabled is None else not enabled,
                leave=True, dynamic_ncols=True)
