"""``jagged batch``: a report per model, the cross-model report and an index, in parallel.

Layout of the output folder ``DIR``::

    DIR/index.html                     sortable table of every model, linking each report
    DIR/jaggedness_report.html         the cross-model report (+ .ipynb)
    DIR/models/<slug>.html             one report per model (+ .ipynb, or .failed.ipynb)

How a batch runs
----------------
1. The input is loaded and analysed here, once, so bad input fails before any kernel
   starts (exit 2), and the index gets its numbers.
2. Every report gets a *content hash* of the notebook, its full parameter set, the
   input files, jagged's code and the report template (:func:`jagged.report.batch_plan.content_hash`). A report
   whose HTML already carries that hash is skipped (``--force`` rebuilds); when nothing is
   left to do no worker and no kernel starts.
3. The rest run in ``jobs`` worker processes. Each worker keeps one warm Jupyter kernel
   (:class:`jagged.report.kernel.WarmKernel`), resets it before each notebook and runs the
   notebook through :func:`jagged.report.run.run_report`, which writes the HTML and the
   executed notebook atomically. A failing notebook is kept as ``<slug>.failed.ipynb``,
   its kernel is replaced, and the batch goes on.
4. The index is rendered with jinja2 (autoescaped) from ``templates/batch/`` and written
   only when its content changed.

Stopping a batch
----------------
Ctrl-C (SIGINT) or SIGTERM stops the workers and their kernels and writes the index of the
reports that finished; finished reports are complete files, the others were never moved
into place, so the next run resumes where this one stopped. Nothing outlives a batch that
is killed outright (SIGKILL) either: each worker watches its parent and each kernel its
worker (see :func:`jagged.report.batch_workers.execute_plan`), and the next run removes
the temporary folders and kernel files the dead processes left
(:func:`jagged.report.debris.remove_stale_workdirs`,
:func:`jagged.report.debris.remove_stale_kernel_files`).

The stages are modules of their own: :mod:`~jagged.report.batch_plan` (plan and content
hashes), :mod:`~jagged.report.batch_workers` (worker processes, signals, the pool) and
:mod:`~jagged.report.batch_index` (the index page); this module runs them in order
(:func:`run_batch`).

One batch per folder: a batch holds ``DIR/.jagged-batch.lock`` (:func:`jagged.fileio.folder_lock`)
while it runs; a second batch on the same folder refuses at once with a one-line message
naming the first one's process id. On a full disk, a report that cannot be written fails
like any other and the reports already written stay; an index that cannot be written is a
one-line error saying so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from jagged.errors import JaggedInputError
from jagged.report.batch_index import write_index
from jagged.report.batch_plan import Outcome, Plan, plan_batch
from jagged.report.batch_workers import BatchInterrupted, execute_plan
from jagged.text import listing

__all__ = ["BatchResult", "run_batch"]


@dataclass
class BatchResult:
    """The outcome of a batch.

    Attributes
    ----------
    out_dir : pathlib.Path
        Output folder.
    index : pathlib.Path
        The index page.
    outcomes : list of Outcome
        One per job, models first (in name order), then the cross-model report.
    seconds : float
        Wall time.
    """

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
        Worker processes (default: the number of CPUs).
    progress : bool, optional
        Progress bar on stderr (None: when stderr is a terminal).

    Returns
    -------
    BatchResult
        Failed reports are in ``failed``; the index lists them with their error.

    Raises
    ------
    BatchInterrupted
        On SIGINT or SIGTERM, after writing the index of the reports that finished.
    JaggedInputError
        Another batch is writing ``out_dir`` (see :func:`jagged.fileio.folder_lock`), or
        the index could not be written (a full disk); reports already written are kept.
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
