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
   input files, jagged's code and the report template (:func:`content_hash`). A report
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
worker (see :func:`execute_plan`), and the next run removes the temporary folders and
kernel files the dead processes left (:func:`jagged.report.run.remove_stale_workdirs`,
:func:`jagged.report.kernel.remove_stale_kernel_files`).

One batch per folder: a batch holds ``DIR/.jagged-batch.lock`` (:func:`jagged.fileio.folder_lock`)
while it runs; a second batch on the same folder refuses at once with a one-line message
naming the first one's process id. On a full disk, a report that cannot be written fails
like any other and the reports already written stay; an index that cannot be written is a
one-line error saying so.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import jagged
from jagged import options as opts
from jagged.errors import JaggedInputError
from jagged.resources import templates_dir

PACKAGE_DIR = Path(jagged.__file__).resolve().parent
INDEX_TEMPLATE_DIR = templates_dir() / "batch"
MODEL_NOTEBOOK = "model_report"
OVERVIEW_NOTEBOOK = "jaggedness_report"
OVERVIEW_STEM = "jaggedness_report"
MODELS_DIR = "models"
INDEX_NAME = "index.html"


# ---------------------------------------------------------------------------------------
# Plan


@dataclass(frozen=True)
class Job:
    """One report to make.

    Attributes
    ----------
    kind : {"model", "overview"}
        A per-model report or the cross-model report.
    model : str or None
        The model of a per-model report.
    notebook : str
        Notebook name in ``notebooks/``.
    html_path : pathlib.Path
        Destination.
    parameters : dict
        The notebook parameters (full set, defaults included).
    title, subtitle : str
        Page title and the line under it.
    facts : tuple
        Provenance rows ``(label, value, kind)``.
    input_hash : str
        Content hash (see :func:`content_hash`).
    """

    kind: str
    model: str | None
    notebook: str
    html_path: Path
    parameters: dict
    title: str
    subtitle: str
    facts: tuple
    input_hash: str


@dataclass(frozen=True)
class Outcome:
    """What became of a job: ``status`` is "written", "skipped" (up to date) or "failed"."""

    job: Job
    status: str
    error: str = ""
    failed_notebook: Path | None = None
    seconds: float = 0.0


@dataclass
class Plan:
    """Everything a batch needs, decided before any kernel starts."""

    out_dir: Path
    jobs: list[Job]
    todo: list[Job]
    table: Any
    models: list[str]
    slugs: dict[str, str]
    profiles: list[str]
    source: str
    index_facts: list[tuple[str, str]] = field(default_factory=list)


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
            shown = ", ".join(repr(n) for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            line += f" (failed: {shown})"
        return line


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=16)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    """SHA-256 of a file, cached while its modification time and size stay the same."""
    return _sha256_bytes(Path(path).read_bytes())


@lru_cache(maxsize=1)
def code_digest() -> str:
    """SHA-256 over jagged's Python sources and the report template (names and contents).

    The index template (``templates/batch``) is left out: the index is rendered on every
    run, and changing it does not change a report.
    """
    from jagged.report.rendering import TEMPLATE_NAME, TEMPLATES_DIR

    digest = hashlib.sha256()
    template = TEMPLATES_DIR / TEMPLATE_NAME
    files = [(path, "jagged/" + path.relative_to(PACKAGE_DIR).as_posix()) for path in sorted(PACKAGE_DIR.rglob("*.py"))]
    files += [(path, "templates/" + path.relative_to(TEMPLATES_DIR).as_posix()) for path in sorted(template.rglob("*"))]
    for path, name in files:
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(name.encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


def content_hash(notebook: str | Path, parameters: Mapping[str, Any], input_digests: Sequence[str]) -> str:
    """The content hash that decides whether a report is up to date.

    Parameters
    ----------
    notebook : str or pathlib.Path
        The notebook (its bytes are hashed).
    parameters : mapping
        The full parameter set (JSON-serialisable).
    input_digests : sequence of str
        SHA-256 of every input file (scores, weights), in a fixed order.

    Returns
    -------
    str
        Hex SHA-256 of a canonical JSON document holding the notebook's SHA-256, the
        parameters, the input digests, jagged's version and :func:`code_digest`.

    Notes
    -----
    Paths in the parameters are part of the hash, so moving an input file makes its
    reports stale even when the content is the same; the digests catch a file whose
    content changed in place.
    """
    from jagged.report.notebooks import find_notebook

    path = find_notebook(notebook)
    stat = path.stat()
    payload = {
        "notebook": _file_digest(str(path), stat.st_mtime_ns, stat.st_size),
        "parameters": dict(parameters),
        "inputs": list(input_digests),
        "jagged": jagged.__version__,
        "code": code_digest(),
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return _sha256_bytes(text.encode("utf-8"))


def _for_notebook(notebook: str, declared: Mapping[str, Any], values: Mapping[str, Any],
                  extra: Mapping[str, Any]) -> dict[str, Any]:
    """The full parameter set of one notebook: its defaults (``declared``), then the values it declares.

    An option the notebook has no parameter for is an error unless it is unset.
    """
    dropped = sorted(k for k, v in values.items() if k not in declared and v not in ("", None, False, [], ()))
    if dropped:
        raise JaggedInputError(f"notebooks/{notebook}.ipynb has no parameter for option(s) {', '.join(dropped)}")
    return {**declared, **{k: v for k, v in {**values, **extra}.items() if k in declared}}


def plan_batch(scores: str | Path | None, out_dir: str | Path, *, models: Sequence[str] = (), force: bool = False,
               load: Mapping[str, Any] | None = None, analysis: Mapping[str, Any] | None = None,
               overview: bool = True) -> Plan:
    """Load the input, decide every report's path, parameters and hash, and what to run.

    Parameters
    ----------
    scores : str, pathlib.Path or None
        Score input (None or "": the bundled data, which come with illustrative profiles).
    out_dir : str or pathlib.Path
        Output folder.
    models : sequence of str
        Models to report on (default: all); every name must be in the input.
    force : bool
        Rebuild reports that are up to date.
    load : mapping, optional
        Loader options (``score_scale``, ``task``, ...), as :func:`jagged.load` takes them.
    analysis : mapping, optional
        Analysis options (``weights``, ``profiles``, ``missing_weight``, ``bootstrap``,
        ``seed``, ``ci``), as :class:`jagged.stats.analysis.AnalysisOptions` takes them.
    overview : bool
        Also make the cross-model report.

    Returns
    -------
    Plan

    Raises
    ------
    JaggedInputError
        Bad input, an unknown model, an output folder that is a file.
    """
    from jagged.stats.analysis import metrics_table
    from jagged.readers.load import load as load_dataset
    from jagged.readers.dataset import sha256_file
    from jagged.report.jaggedness import input_facts
    from jagged.report.notebooks import default_values
    from jagged.report.rendering import version_facts
    from jagged.report.slug import output_path, unique_slugs
    from jagged.stats.weights import BUNDLED_PROFILES

    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise JaggedInputError(f"{out_dir}: exists and is not a folder")
    load = dict(load or {})
    analysis = dict(analysis or {})
    bundled = scores in (None, "")
    source = None if bundled else Path(scores).resolve()
    dataset = load_dataset(source, **load)
    weights = analysis.get("weights") or (str(BUNDLED_PROFILES) if bundled else None)
    options = opts.analysis_options(analysis, weights=weights, bootstrap=0)
    table = metrics_table(dataset, options)
    names = sorted(str(m) for m in table["model"].unique())
    chosen = list(dict.fromkeys(str(m) for m in models)) or names
    unknown = [m for m in chosen if m not in set(names)]
    if unknown:
        raise JaggedInputError(f"--models: no model {unknown[0]!r} in {dataset.source} ({len(names)} models)")
    slugs = dict(zip(names, unique_slugs(names)))

    if analysis.get("weights"):
        analysis["weights"] = str(Path(analysis["weights"]).resolve())
    values = opts.notebook_values({"scores": "" if bundled else str(source), **load, **analysis})
    inputs = [Path(p) for p in dataset.paths if Path(p).is_file()]
    if weights:
        inputs.append(Path(weights))
    digests = [sha256_file(p) for p in inputs]
    facts = tuple(input_facts(dataset, bundled=bundled) + version_facts())
    n_models, n_domains = len(names), int(dataset.scores["domain"].nunique())

    jobs: list[Job] = []
    model_dir = out_dir / MODELS_DIR
    model_defaults = default_values(MODEL_NOTEBOOK)
    for name in chosen:
        params = _for_notebook(MODEL_NOTEBOOK, model_defaults, values, {"model": name})
        jobs.append(Job(
            kind="model", model=name, notebook=MODEL_NOTEBOOK, html_path=output_path(model_dir, slugs[name], ".html"),
            parameters=params, title=f"Model report: {name}",
            subtitle=f"{name} against {n_models - 1} other models × {n_domains} domains from {dataset.source}",
            facts=facts, input_hash=content_hash(MODEL_NOTEBOOK, params, digests)))
    if overview:
        params = _for_notebook(OVERVIEW_NOTEBOOK, default_values(OVERVIEW_NOTEBOOK), values, {})
        jobs.append(Job(
            kind="overview", model=None, notebook=OVERVIEW_NOTEBOOK,
            html_path=out_dir / f"{OVERVIEW_STEM}.html",
            parameters=params, title="Jaggedness report",
            subtitle=f"{n_models} models × {n_domains} domains from {dataset.source}",
            facts=facts, input_hash=content_hash(OVERVIEW_NOTEBOOK, params, digests)))
    todo = [j for j in jobs if force or not up_to_date(j)]
    profiles = [str(p) for p in table["profile"].unique()] if "profile" in table.columns else []
    index_facts = [("input", dataset.source), ("models", str(n_models)), ("domains", str(n_domains))]
    index_facts += [(f"SHA-256 of {p.name}", d) for p, d in zip(inputs, digests)]
    return Plan(out_dir=out_dir, jobs=jobs, todo=todo, table=table, models=chosen, slugs=slugs,
                profiles=profiles, source=dataset.source, index_facts=index_facts)


def up_to_date(job: Job) -> bool:
    """Whether the job's HTML exists and carries the job's content hash."""
    from jagged.report.rerun import stored_hash

    return job.html_path.is_file() and stored_hash(job.html_path) == job.input_hash


# ---------------------------------------------------------------------------------------
# Workers: one warm kernel per process

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
    from jagged.report.kernel import WarmKernel
    from jagged.report.execution import ReportError
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

    from jagged.report.kernel import remove_stale_kernel_files
    from jagged.report.run import remove_stale_workdirs

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
        pool.stop()
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


# ---------------------------------------------------------------------------------------
# Index


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None  # NaN → None


def index_rows(plan: Plan, outcomes: Iterable[Outcome]) -> list[dict[str, Any]]:
    """One row per model report for the index template.

    Returns
    -------
    list of dict
        Most jagged first (undefined ``cv_error`` last, ties by name): ``model``,
        ``href`` (relative link to the report, or None), ``status`` ("ok" or
        "failed"), ``error``, ``failed_href``, ``macro_score``, ``cv_error``, and per
        profile ``dep_score`` / ``wedge`` in ``profiles`` (a list in
        :attr:`Plan.profiles` order); numbers are floats or None.
    """
    table = plan.table
    base = table.drop_duplicates("model").set_index("model")
    deployment = None
    if plan.profiles:
        deployment = table.set_index(["model", "profile"])[["dep_score", "wedge"]]
    rows = []
    for outcome in outcomes:
        job = outcome.job
        if job.kind != "model":
            continue
        rel = job.html_path.relative_to(plan.out_dir).as_posix()
        failed = outcome.status == "failed"
        failed_href = None
        if failed and outcome.failed_notebook is not None:
            try:
                failed_href = Path(outcome.failed_notebook).resolve().relative_to(plan.out_dir.resolve()).as_posix()
            except ValueError:
                failed_href = None
        per_profile = []
        for profile in plan.profiles:
            dep = deployment.loc[(job.model, profile)] if deployment is not None else None
            per_profile.append({"dep_score": _number(dep["dep_score"]) if dep is not None else None,
                                "wedge": _number(dep["wedge"]) if dep is not None else None})
        rows.append({
            "model": job.model, "href": None if failed and not job.html_path.exists() else rel,
            "status": "failed" if failed else "ok", "error": outcome.error, "failed_href": failed_href,
            "macro_score": _number(base.loc[job.model, "macro_score"]),
            "cv_error": _number(base.loc[job.model, "cv_error"]), "profiles": per_profile,
        })
    rows.sort(key=lambda r: r["model"])
    rows.sort(key=lambda r: -r["cv_error"] if r["cv_error"] is not None else float("inf"))
    return rows


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(INDEX_TEMPLATE_DIR)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["num"] = lambda v, spec="{:.4f}": "—" if v is None else spec.format(v)
    env.filters["sortkey"] = lambda v: "" if v is None else repr(float(v))
    return env


def render_index(plan: Plan, outcomes: Sequence[Outcome]) -> str:
    """The index page: self-contained HTML (inline CSS and sort script, no network).

    Every name and message is autoescaped by jinja2; links are built from slugs only.
    The page's Content-Security-Policy allows no network access and only the inline
    script whose hash it names.
    """
    import base64

    env = _environment()
    script = (INDEX_TEMPLATE_DIR / "sort.js").read_text(encoding="utf-8")
    style = (INDEX_TEMPLATE_DIR / "index.css").read_text(encoding="utf-8")
    script_hash = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    overview = next((o for o in outcomes if o.job.kind == "overview"), None)
    rows = index_rows(plan, outcomes)
    return env.get_template("index.html.j2").render(
        title="jagged batch: reports per model", rows=rows, profiles=plan.profiles, facts=plan.index_facts,
        overview=overview and {
            "href": overview.job.html_path.relative_to(plan.out_dir).as_posix(),
            "status": "failed" if overview.status == "failed" else "ok", "error": overview.error,
            "exists": overview.job.html_path.exists()},
        n_failed=sum(r["status"] == "failed" for r in rows), script=script, style=style,
        script_hash=script_hash, version=jagged.__version__)


def write_index(plan: Plan, outcomes: Sequence[Outcome]) -> Path:
    """Render the index and write it atomically, only when its content changed."""
    from jagged.fileio import atomic_write_text

    path = plan.out_dir / INDEX_NAME
    page = render_index(plan, outcomes)
    if path.is_file() and path.read_text(encoding="utf-8", errors="replace") == page:
        return path
    return atomic_write_text(path, page)
