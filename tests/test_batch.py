"""jagged batch: every report and a resolving index, failures isolated, reruns skipped, exact reruns,
hostile names kept inside the output folder, and warm kernels that leak nothing (stopping a batch:
tests/test_signals.py).

One batch over the bundled data (six of its 29 models, ``--jobs 2``) is shared by the tests that
need it; the others use small synthetic tables.
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import markupsafe
import nbformat
import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import BUNDLED, ROOT

JAGGED = [sys.executable, "-m", "jagged.cli"]
PROFILES = ROOT / "jagged" / "data" / "profiles_mmlu_pro.csv"
NAMES = sorted(set(pd.read_csv(BUNDLED)["model"]))
#: The bundled batch's models: every fifth, the last included (it runs after the others in a warm kernel).
CHOSEN = NAMES[::-5][::-1]
N_CHOSEN = len(CHOSEN)
BUNDLED_ARGS = [str(BUNDLED), "--weights", str(PROFILES), "--jobs", "2", *(f"--models={m}" for m in CHOSEN)]


# ---------------------------------------------------------------------------------------
# helpers


def run(args: list[str], *, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*JAGGED, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)


class _Page(HTMLParser):
    """Links, report tables (cell texts), image sources, index rows and meta tags of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.tables: list[list[str]] = []
        self.images: list[str] = []
        self.meta: dict[str, str] = {}
        self.rows: list[list[str]] = []
        self._table: list[str] | None = None
        self._cell: list[str] | None = None
        self._in_index = False
        self._row: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "img":
            self.images.append(a.get("src") or "")
        if tag == "meta" and (a.get("name") or "").startswith("jagged-"):
            self.meta[a["name"]] = a.get("content") or ""
        if tag == "table" and "jagged-table" in (a.get("class") or ""):
            self._table = []
            self.tables.append(self._table)
        if tag == "table" and a.get("id") == "models":
            self._in_index = True
        if tag == "tr" and self._in_index:
            self._row = []
        if tag in ("td", "th") and (self._table is not None or self._row is not None):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            text = " ".join("".join(self._cell).split())
            if self._table is not None:
                self._table.append(text)
            if self._row is not None:
                self._row.append(text)
            self._cell = None
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
        if tag == "table":
            self._table = None
            self._in_index = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def page(path: Path) -> _Page:
    parser = _Page()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    return parser


def index_rows(index: Path) -> dict[str, list[str]]:
    """Model name → the cells of its index row (header row left out)."""
    rows = page(index).rows[1:]
    return {row[0]: row for row in rows}


def mtimes(folder: Path) -> dict[str, int]:
    """Modification times of the folder's files (the batch lock, rewritten by every run, left out)."""
    from jagged.fileio import LOCK_NAME

    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*")
            if p.is_file() and p.name != LOCK_NAME}


def write_scores(path: Path, models: list[str], n_domains: int = 4, seed: int = 1) -> Path:
    rng = np.random.default_rng(seed)
    rows = [(m, f"domain {d}", float(rng.uniform(0.3, 0.95)), int(rng.integers(40, 400)))
            for m in models for d in range(n_domains)]
    pd.DataFrame(rows, columns=["model", "domain", "score", "n_items"]).to_csv(path, index=False)
    return path


def numbers_of(report: Path) -> tuple[list[list[str]], list[str]]:
    """What a report shows, timestamps left out: every table's cell texts and every image."""
    p = page(report)
    return p.tables, p.images


# ---------------------------------------------------------------------------------------
# the full bundled batch


@pytest.fixture(scope="module")
def full_batch(tmp_path_factory):
    out = tmp_path_factory.mktemp("batch") / "out"
    result = run(["batch", *BUNDLED_ARGS, "--out-dir", str(out)], timeout=600)
    return out, result


def test_full_batch_writes_every_report_and_an_index_whose_links_resolve(full_batch):
    out, result = full_batch
    assert result.returncode == 0, result.stderr
    assert f"{N_CHOSEN + 1} reports: {N_CHOSEN + 1} written, 0 up to date, 0 failed" in result.stderr
    reports = sorted((out / "models").glob("*.html"))
    assert len(reports) == N_CHOSEN
    assert len(list((out / "models").glob("*.ipynb"))) == N_CHOSEN
    assert not list(out.rglob("*.failed.ipynb"))
    index = out / "index.html"
    links = page(index).links
    assert len(links) == N_CHOSEN + 1                             # every model and the cross-model report
    for link in links:
        target = (out / link).resolve()
        assert target.is_file() and target.is_relative_to(out.resolve()), link
    rows = index_rows(index)
    assert set(rows) == set(CHOSEN)
    assert all(row[1] == "ok" for row in rows.values())
    header = page(index).rows[0]
    assert header[:4] == ["model", "report", "macro score", "cv_error"]
    assert header.count("dep_score" + "law_office") == 1 and len(header) == 4 + 2 * 4


def test_index_numbers_are_the_metrics_table(full_batch):
    out, _ = full_batch
    from jagged.analysis import AnalysisOptions, metrics_table
    from jagged.readers.load import load

    table = metrics_table(load(BUNDLED), AnalysisOptions(weights=str(PROFILES)))
    rows = index_rows(out / "index.html")
    law = table[table["profile"] == "law_office"].set_index("model")
    for model, row in rows.items():
        assert row[2] == f"{law.loc[model, 'macro_score']:.4f}"
        assert row[3] == f"{law.loc[model, 'cv_error']:.4f}"
        assert row[4] == f"{law.loc[model, 'dep_score']:.4f}"
        assert row[5] == f"{law.loc[model, 'wedge']:+.4f}"
    cv = [float(r[3]) for r in page(out / "index.html").rows[1:]]
    assert cv == sorted(cv, reverse=True)                          # most jagged first


def test_report_in_a_warm_kernel_equals_the_report_alone(full_batch, tmp_path):
    """The last model ran after others in the same warm kernel; alone it gets a fresh one."""
    out, _ = full_batch
    from jagged.report.slug import unique_slugs

    names = NAMES
    slug = dict(zip(names, unique_slugs(names)))[names[-1]]
    in_batch = out / "models" / f"{slug}.html"
    alone = tmp_path / "alone.html"
    result = run(["report", "--params", str(in_batch), "-o", str(alone)])
    assert result.returncode == 0, result.stderr
    tables, images = numbers_of(alone)
    assert (tables, images) == numbers_of(in_batch)               # every number and every pixel
    assert len(tables) >= 4 and len(images) == 2             # the field figure and the residual profile
    assert page(alone).meta["jagged-title"] == f"Model report: {names[-1]}"
    assert page(alone).meta["jagged-parameters"] == page(in_batch).meta["jagged-parameters"]


def test_rerun_from_stored_yaml_reproduces_the_metric_table(full_batch, tmp_path):
    out, _ = full_batch
    report = sorted((out / "models").glob("*.html"))[3]
    meta = page(report).meta
    params = yaml.safe_load(meta["jagged-parameters"])
    assert meta["jagged-notebook"] == "model_report"
    assert {"model", "scores", "weights", "bootstrap", "seed", "ci"} <= set(params)
    assert params["bootstrap"] == 2000 and Path(params["scores"]).is_absolute()
    text = report.read_text(encoding="utf-8")
    assert "rerun this report" in text and html.escape(f"jagged report --params {report}") in text
    yaml_file = tmp_path / "params.yaml"
    yaml_file.write_text(meta["jagged-parameters"], encoding="utf-8")
    again = tmp_path / "again.html"
    result = run(["report", "--notebook", "model_report", "--params", str(yaml_file), "-o", str(again)])
    assert result.returncode == 0, result.stderr
    first, second = page(report).tables, page(again).tables
    assert first == second
    card = dict(zip(first[0][6::5], first[0][7::5]))               # column -> value of the rank card
    assert card["cv_error"] != "—" and "cv_error_lo" not in card
    kept = json.loads(again.with_suffix(".ipynb").read_text())["metadata"]["jagged"]
    assert kept["parameters"] == params and kept["notebook"] == "model_report"


def test_second_run_skips_everything_and_touches_nothing(full_batch):
    out, _ = full_batch
    before = mtimes(out)
    result = run(["batch", *BUNDLED_ARGS, "--out-dir", str(out)])
    assert result.returncode == 0, result.stderr
    assert f"{N_CHOSEN + 1} reports: 0 written, {N_CHOSEN + 1} up to date, 0 failed" in result.stderr
    assert mtimes(out) == before
    # How much faster the rerun is (target: 10 % of the first) is benchmarks/bench_batch.py's job.


# ---------------------------------------------------------------------------------------
# small synthetic batches


def model_notebook_with(folder: Path, code: str, name: str) -> Path:
    """A copy of notebooks/model_report.ipynb with ``code`` as the first cell after the parameters."""
    from jagged.report.notebooks import find_notebook

    nb = nbformat.read(str(find_notebook("model_report")), as_version=4)
    at = next(i for i, cell in enumerate(nb.cells) if "parameters" in cell.metadata.get("tags", [])) + 1
    nb.cells.insert(at, nbformat.v4.new_code_cell(code))
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, str(path))
    return path


def plan_as_cli(args: list[str]):
    """The plan ``jagged batch ARGS`` makes (the CLI's parsing, then jagged.report.batch_plan.plan_batch)."""
    from jagged import options as opts
    from jagged.cli import batch
    from jagged.report.batch_plan import code_digest, plan_batch

    code_digest.cache_clear()  # the code as a CLI run started now would hash it
    params = batch.make_context("batch", list(args)).params
    analysis = {k: params[k] for k in opts.names(opts.ANALYSIS) if k in params}
    return plan_batch(params["scores"], params["out_dir"], models=params["models"], force=params["force"],
                      load=opts.load_kwargs(params), analysis=analysis)


def test_failure_is_isolated_then_resumed_then_forced(tmp_path):
    """One model's notebook raises, another's kernel dies (SIGKILL, as the out-of-memory killer would):
    the others are written, the index says which failed and links the failed notebook; the next run makes
    only those two; --force makes a report that is up to date."""
    from dataclasses import replace

    from jagged.report.batch import BatchResult, execute_plan
    from jagged.report.batch_index import write_index

    scores = write_scores(tmp_path / "scores.csv", ["alpha", "beta", "gamma"])
    out = tmp_path / "out"
    args = ["batch", str(scores), "--out-dir", str(out), "--jobs", "2", "--bootstrap", "0"]
    plan = plan_as_cli(args[1:])
    notebooks = {"beta": model_notebook_with(tmp_path, 'raise RuntimeError(f"the report of {model} fails on purpose")',
                                             "failing"),
                 "gamma": model_notebook_with(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
                                              "dying")}
    plan.jobs = [replace(j, notebook=str(notebooks[j.model])) if j.model in notebooks else j for j in plan.jobs]
    plan.todo = list(plan.jobs)
    outcomes = execute_plan(plan, jobs=2, progress=False)
    summary = BatchResult(out, write_index(plan, outcomes), outcomes, 0.0).summary()
    assert "4 reports: 2 written, 0 up to date, 2 failed" in summary and "'beta', 'gamma'" in summary
    models = out / "models"
    assert (models / "alpha.html").is_file() and (out / "jaggedness_report.html").is_file()
    assert not (models / "beta.html").exists() and (models / "beta.failed.ipynb").is_file()
    assert not (models / "gamma.html").exists()
    rows = index_rows(out / "index.html")
    assert rows["alpha"][1] == "ok"
    assert rows["beta"][1].startswith("failed RuntimeError: the report of beta fails on purpose")
    assert rows["beta"][1].endswith("Failed notebook: models/beta.failed.ipynb")
    assert rows["gamma"][1].startswith("failed") and "Kernel died" in rows["gamma"][1]
    links = page(out / "index.html").links
    assert "models/beta.failed.ipynb" in links and "models/beta.html" not in links
    assert all((out / link).is_file() for link in links)

    before = mtimes(out)
    resumed = run(args)
    assert resumed.returncode == 0, resumed.stderr
    assert "4 reports: 2 written, 2 up to date, 0 failed" in resumed.stderr
    after = mtimes(out)
    for name in ("models/alpha.html", "models/alpha.ipynb", "jaggedness_report.html"):
        assert after[name] == before[name]
    assert (models / "beta.html").is_file() and not (models / "beta.failed.ipynb").exists()
    assert index_rows(out / "index.html")["gamma"][1] == "ok"

    forced = run([*args, "--force", "--models", "alpha"])
    assert forced.returncode == 0, forced.stderr
    assert "2 reports: 2 written, 0 up to date, 0 failed" in forced.stderr
    again = mtimes(out)
    assert all(again[n] > after[n] for n in ("models/alpha.html", "jaggedness_report.html"))
    assert again["models/beta.html"] == after["models/beta.html"]


def test_a_stop_counts_the_report_put_in_place_just_before_it(tmp_path, monkeypatch):
    """Ctrl-C arrives after a report was moved into place but before its outcome was recorded: the stop
    still counts it as written (it is complete and current), and the batch raises BatchInterrupted."""
    import os
    import signal
    import time

    from jagged.report import batch
    from jagged.report.kernel import Stopped, check_stopped

    scores = write_scores(tmp_path / "scores.csv", ["alpha", "beta", "gamma"])
    plan = plan_as_cli([str(scores), "--out-dir", str(tmp_path / "out"), "--bootstrap", "0"])
    job = next(j for j in plan.jobs if j.model == "beta")
    plan.todo = [job]
    real = batch.run_job

    def interrupted(job, kernel):
        outcome = real(job, kernel)
        os.kill(os.getpid(), signal.SIGINT)  # to the main thread, waiting for this one
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until the main thread has asked every thread to stop
            try:
                check_stopped()
            except Stopped:
                break
            time.sleep(0.01)
        return outcome

    monkeypatch.setattr(batch, "run_job", interrupted)
    with pytest.raises(batch.BatchInterrupted) as stopped:
        batch.execute_plan(plan, jobs=1, progress=False)
    assert stopped.value.signum == signal.SIGINT
    got = {o.job.model: o.status for o in stopped.value.outcomes}
    assert got == {"alpha": "skipped", "beta": "written", "gamma": "skipped", None: "skipped"}
    assert job.html_path.is_file()


HOSTILE = ["../../x", "/abs/path", "<b>", "CON", ".", "..", "🤖", "A b", "a-b", "a b",
           "<script>alert(1)</script>", '"><svg onload=alert(1)>', "Ünïcödé " + "y" * 290]


def test_hostile_model_names_stay_inside_the_folder_and_escaped(tmp_path):
    scores = write_scores(tmp_path / "scores.csv", HOSTILE, n_domains=3)
    out = tmp_path / "deep" / "out"
    before = set(tmp_path.rglob("*"))
    result = run(["batch", str(scores), "--out-dir", str(out), "--jobs", "2", "--bootstrap", "0"])
    assert result.returncode == 0, result.stderr
    created = set(tmp_path.rglob("*")) - before
    assert all(p.resolve().is_relative_to(out.resolve()) or p == out or p == out.parent for p in created)
    reports = sorted((out / "models").glob("*.html"))
    assert len(reports) == len(HOSTILE)                             # one per model, none overwritten
    assert {p.parent for p in reports} == {out / "models"}
    assert all(len(p.name.encode()) <= 100 for p in out.rglob("*"))
    index = (out / "index.html").read_text(encoding="utf-8")
    for name in HOSTILE:
        assert str(markupsafe.escape(name)) in index                   # shown, as text
    rows = index_rows(out / "index.html")
    assert set(rows) == set(HOSTILE)
    for link in page(out / "index.html").links:
        assert (out / link).resolve().is_file()
    raw = ["<script>alert(1)", "<svg onload", "<b>"]
    for path in [out / "index.html", out / "jaggedness_report.html", *reports]:
        text = path.read_text(encoding="utf-8")
        assert not any(r in text for r in raw), path.name
    titles = {page(p).meta["jagged-title"] for p in reports}
    assert titles == {f"Model report: {n}" for n in HOSTILE}


def test_bad_input_fails_before_any_kernel(tmp_path):
    scores = write_scores(tmp_path / "scores.csv", ["a", "b"])
    result = run(["batch", str(scores), "--out-dir", str(tmp_path / "o"), "--models", "nobody"])
    assert result.returncode == 2
    assert result.stderr.strip() == "jagged: error: --models: no model 'nobody' in scores.csv (2 models)"
    assert not (tmp_path / "o").exists()
    missing = run(["batch", str(tmp_path / "none.csv"), "--out-dir", str(tmp_path / "o")])
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1


def test_a_second_batch_on_the_same_folder_refuses_while_the_first_runs(tmp_path):
    import time

    from jagged.fileio import LOCK_NAME

    scores = write_scores(tmp_path / "scores.csv", [f"m{i}" for i in range(3)])
    out = tmp_path / "out"
    args = ["batch", str(scores), "--out-dir", str(out), "--jobs", "1", "--bootstrap", "0", "--models", "m0"]
    first = subprocess.Popen([*JAGGED, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        lock = out / LOCK_NAME
        deadline = time.monotonic() + 120
        while not (lock.is_file() and lock.read_text().strip() == str(first.pid)):
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.05)
        second = run(args)
        running = first.poll() is None
    finally:
        _, first_err = first.communicate(timeout=600)
    assert running                                                     # the two overlapped
    assert second.returncode == 2, second.stderr
    assert second.stderr.strip() == (f"jagged: error: another jagged batch (pid {first.pid}) is writing {out}; "
                                     "wait for it or use another --out-dir")
    assert first.returncode == 0, first_err
    assert "2 reports: 2 written, 0 up to date, 0 failed" in first_err  # the refused one changed nothing
    after = run(args)                                                  # the lock went with the first batch
    assert after.returncode == 0 and "0 written, 2 up to date" in after.stderr, after.stderr


# ---------------------------------------------------------------------------------------
# the warm kernel's reset


PROBE = r'''
import jagged.report.kernel as _k  # the libraries a warm kernel preloads, so a fresh kernel has imported the same
_k.preload()
import json, os, random, sys, warnings
import matplotlib, matplotlib.pyplot as plt, numpy as np, pandas as pd
shown = []
_show = warnings.showwarning
warnings.showwarning = lambda message, *a, **k: shown.append(str(message))
registry = sys.modules["json"].__dict__.setdefault("__warningregistry__", {})
warnings.warn_explicit("probe", UserWarning, "probe.py", 1, module="probe", registry=registry)
warnings.showwarning = _show
state = {
    "names": sorted(n for n in globals() if not n.startswith("_")),
    "rc": sorted((k, repr(v)) for k, v in matplotlib.rcParams.items()),
    "figures": plt.get_fignums(),
    "random": random.random(), "np_random": float(np.random.rand()),
    "np_err": np.geterr(), "np_print": repr(np.get_printoptions()),
    "pandas": pd.get_option("display.max_rows"),
    "warnings_filters": len(warnings.filters), "warning_shown": len(shown),
    "cwd": os.getcwd(), "path": sys.path[:], "env": os.environ.get("JAGGED_POLLUTED"),
    "count": get_ipython().execution_count,
}
print(json.dumps(state, default=str))
'''

POLLUTE = r'''
import os, random, sys, warnings
import matplotlib, matplotlib.pyplot as plt, numpy as np, pandas as pd
leaked_variable = 42
plt.rcParams["lines.linewidth"] = 9
plt.style.use("ggplot")
plt.figure(); plt.figure()
random.seed(123); np.random.seed(123)
np.seterr(all="raise"); np.set_printoptions(precision=2)
pd.set_option("display.max_rows", 3)
warnings.filterwarnings("ignore", message="unrelated to the probe")
os.environ["JAGGED_POLLUTED"] = "yes"
sys.path.insert(0, "/polluted")
os.chdir("/")
# Shown now and recorded in json's registry: only a reset of the registries shows it again
# (the filters changed before it, so they alone would not hide it).
warnings.warn_explicit("probe", UserWarning, "probe.py", 1, module="probe",
                       registry=sys.modules["json"].__dict__.setdefault("__warningregistry__", {}))
'''


def _notebook(path: Path, code: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))
    return path


def _probe(kernel, folder: Path, name: str) -> dict:
    from jagged.report import execute

    kwargs = {} if kernel is None else kernel.engine_kwargs()
    nb = execute(_notebook(folder / f"{name}.ipynb", PROBE), folder / f"{name}.out.ipynb", **kwargs)
    text = "".join(o.get("text", "") for o in nb.cells[0].outputs if o.get("name") == "stdout")
    try:
        return json.loads(text)
    except ValueError as err:
        raise AssertionError(repr(text[-300:]) + repr(nb.cells[0].outputs[1:])) from err


def test_warm_kernel_reset_leaves_nothing_from_the_previous_notebook(tmp_path):
    from jagged.report import execute
    from jagged.report.kernel import WarmKernel

    kernel = WarmKernel()
    try:
        kernel.reset()
        clean = _probe(kernel, tmp_path, "clean")
        execute(_notebook(tmp_path / "pollute.ipynb", POLLUTE), tmp_path / "pollute.out.ipynb",
                **kernel.engine_kwargs())
        polluted = _probe(kernel, tmp_path, "polluted")
        kernel.reset()
        after = _probe(kernel, tmp_path, "after")
    finally:
        kernel.shutdown()
    assert after == clean
    differs = {k for k in clean if polluted[k] != clean[k]}
    assert {"names", "rc", "figures", "random", "np_random", "np_err", "np_print", "pandas", "warnings_filters",
            "warning_shown", "cwd", "path", "env", "count"} <= differs    # the probe sees every pollution
    assert clean["warning_shown"] == 1
    fresh = _probe(None, tmp_path, "fresh")                            # papermill's default: a new kernel
    random_keys = {"random", "np_random"}
    assert {k: v for k, v in fresh.items() if k not in random_keys} == \
        {k: v for k, v in clean.items() if k not in random_keys}
