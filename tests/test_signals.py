"""Stopping a batch or a report leaves no process behind (Jupyter kernels), nothing half-made, and no
kernel connection file, socket or temporary file (each run gets its own Jupyter runtime folder and TMPDIR);
what a run killed outright leaves, the next run removes.

Each test starts ``jagged`` in a process of its own, watches its descendants with psutil
until the run is under way, sends one signal, and then waits (bounded) for every process
it saw to be gone. SIGINT goes to the process group (what Ctrl-C in a terminal does),
SIGTERM and SIGKILL to the process alone (what ``timeout``, ``kill`` and CI cancellation
do). Kernels run in a session of their own, so no signal to the group reaches them: they
must be stopped, or notice by themselves that their parent died.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from test_batch import index_rows, plan_as_cli, write_scores

from jagged.report.batch_plan import up_to_date
from jagged.report.debris import make_workdir
from jagged.report.slug import unique_slugs

JAGGED = [sys.executable, "-m", "jagged.cli"]
N_MODELS = 4
#: How long every process may take to disappear after the signal (they take well under a second).
GONE_WITHIN = 20.0


def descendants(process: psutil.Process) -> list[psutil.Process]:
    try:
        return process.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def is_kernel(process: psutil.Process) -> bool:
    try:
        return "ipykernel_launcher" in " ".join(process.cmdline())
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return False


def survivors(processes: list[psutil.Process], within: float = GONE_WITHIN) -> list[psutil.Process]:
    """The processes still running (zombies count as gone) after waiting at most ``within`` seconds."""
    def running(p: psutil.Process) -> bool:
        try:
            return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    deadline = time.monotonic() + within
    alive = [p for p in processes if running(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if running(p)]
    return alive


def watch_until(popen: subprocess.Popen, ready, timeout: float = 180) -> dict[int, psutil.Process]:
    """Every descendant seen until ``ready()`` holds (the process must still run then)."""
    parent = psutil.Process(popen.pid)
    seen: dict[int, psutil.Process] = {}
    deadline = time.monotonic() + timeout
    while not ready():
        assert popen.poll() is None, f"jagged ended before the signal: {popen.communicate()}"
        assert time.monotonic() < deadline, "jagged made no progress"
        seen.update((p.pid, p) for p in descendants(parent))
        time.sleep(0.05)
    seen.update((p.pid, p) for p in descendants(parent))
    return seen


def start(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([*JAGGED, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                            start_new_session=True, env=env)


@pytest.fixture
def places(tmp_path):
    """The environment of a run whose Jupyter runtime folder and TMPDIR are this test's own.

    The runtime folder has a short path (IPC socket paths must fit in 104 bytes).
    """
    import shutil
    import tempfile

    runtime = Path(tempfile.mkdtemp(prefix="jr", dir="/tmp"))
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    yield {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime), "TMPDIR": str(tmp)}, runtime, tmp
    shutil.rmtree(runtime, ignore_errors=True)


def kernel_files(runtime: Path) -> list[str]:
    return sorted(p.name for p in runtime.iterdir() if p.name.startswith("jagged-"))


def live_group(runtime: Path) -> list[Path]:
    """Kernel files of a live run (this test process's): no run may remove them."""
    from jagged.report.debris import host_tag

    stem = runtime / f"jagged-{os.getpid()}-{host_tag()}-{'0' * 12}"
    files = [Path(f"{stem}.json"), Path(f"{stem}.kernel"), Path(f"{stem}-ipc-1")]
    for path in files:
        path.write_text(f"{os.getpid()}\n", encoding="ascii")
    return files


@pytest.fixture(autouse=True)
def _no_strays():
    """Whatever a failed assertion leaves running is killed (the assertion already failed)."""
    before = {p.pid for p in descendants(psutil.Process())}
    yield
    for p in descendants(psutil.Process()):
        if p.pid not in before:
            p.kill()


MODELS = [f"model {i:02d}" for i in range(N_MODELS)]
SLUGS = dict(zip(MODELS, unique_slugs(MODELS)))


def batch_args(tmp_path: Path) -> tuple[list[str], Path]:
    scores = write_scores(tmp_path / "scores.csv", MODELS)
    out = tmp_path / "out"
    return ["batch", str(scores), "--out-dir", str(out), "--jobs", "2", "--bootstrap", "0"], out


@pytest.mark.parametrize("signum, to_group", [(signal.SIGINT, True), (signal.SIGTERM, False),
                                              (signal.SIGKILL, False)], ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_stopped_batch_leaves_no_kernel_and_resumes(tmp_path, places, signum, to_group):
    env, runtime, tmp = places
    args, out = batch_args(tmp_path)
    popen = start(args, tmp_path, env)
    models = out / "models"
    seen = watch_until(popen, lambda: len(list(models.glob("*.html"))) >= 1
                       and sum(is_kernel(p) for p in descendants(psutil.Process(popen.pid))) == 2)
    assert sum(is_kernel(p) for p in seen.values()) >= 2               # two warm kernels, no other process waited for
    (os.killpg if to_group else os.kill)(popen.pid, signum)
    _, stderr = popen.communicate(timeout=60)
    assert not survivors(list(seen.values())), "a kernel outlived the batch"

    done = {p.stem for p in models.glob("*.html")}
    for report in models.glob("*.html"):                               # complete files only
        text = report.read_text(encoding="utf-8")
        assert text.rstrip().endswith("</html>") and "jagged-input-hash" in text
    assert list(tmp.iterdir()) == []                                   # no temporary file
    if signum == signal.SIGKILL:
        assert popen.returncode == -signal.SIGKILL
        assert {n.split("-")[1] for n in kernel_files(runtime)} <= {str(popen.pid)}  # the next run's to remove
    else:
        assert popen.returncode == 128 + signum, stderr
        assert "run the same command again to resume" in stderr
        assert kernel_files(runtime) == []                             # no connection file or socket
        rows = index_rows(out / "index.html")                          # the index of what finished
        assert {SLUGS[name] for name in rows} == done
        assert all(row[1] == "ok" for row in rows.values())
        assert not [p for p in out.rglob(".*") if p.is_dir()]          # no unfinished report's folder
        assert not list(out.rglob("*.failed.ipynb"))                   # a stopped report is no failure
    assert 1 <= len(done) < N_MODELS                                   # it did stop part-way

    finished = len(done) + (out / "jaggedness_report.html").is_file()  # the cross-model report starts first
    plan = plan_as_cli(args[1:])
    stale = [j.html_path.name for j in plan.jobs if j.html_path.is_file() and not up_to_date(j)]
    assert not stale, f"finished reports the next run would redo: {stale}"
    live = live_group(runtime)
    resumed = subprocess.run([*JAGGED, *args], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stderr                     # the lock died with the killed batch
    assert kernel_files(runtime) == sorted(p.name for p in live)       # a dead run's files removed, a live run's kept
    assert list(tmp.iterdir()) == []
    assert f"{N_MODELS + 1 - finished} written, {finished} up to date, 0 failed" in resumed.stderr
    assert len(list(models.glob("*.html"))) == N_MODELS
    assert len(index_rows(out / "index.html")) == N_MODELS
    assert not [p for p in out.rglob(".*") if p.is_dir()]              # a killed run's folders are removed


@pytest.mark.parametrize("moment", ["kernel-starting", "notebook-running"])
def test_terminated_report_leaves_nothing_behind(tmp_path, places, moment):
    """SIGTERM to `jagged report`: its kernel stopped, its connection file, sockets, temporary files and
    folder removed, the earlier report untouched, exit status 143."""
    env, runtime, tmp = places
    out = tmp_path / "out"
    out.mkdir()
    earlier = out / "report.html"
    earlier.write_text("<html>an earlier report</html>", encoding="utf-8")
    popen = start(["report", "-o", str(earlier), "--bootstrap", "0"], tmp_path, env)
    if moment == "kernel-starting":
        ready = lambda: any(n.endswith(".json") for n in kernel_files(runtime))  # noqa: E731
    else:
        ready = lambda: any(p.name.startswith(".report.") for p in out.iterdir()) and any(  # noqa: E731
            is_kernel(p) for p in descendants(psutil.Process(popen.pid)))
    seen = watch_until(popen, ready)
    if moment == "notebook-running":
        time.sleep(1.0)                                                # cells are running
        seen.update((p.pid, p) for p in descendants(psutil.Process(popen.pid)))
    popen.terminate()
    _, stderr = popen.communicate(timeout=60)
    assert popen.returncode == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr, stderr
    assert not survivors(list(seen.values())), "the report's kernel outlived it"
    assert kernel_files(runtime) == []
    assert list(tmp.iterdir()) == []
    assert sorted(p.name for p in out.iterdir()) == ["report.html"]    # no temporary folder, no .ipynb
    assert earlier.read_text(encoding="utf-8") == "<html>an earlier report</html>"


def test_killed_report_leaves_no_kernel_and_the_next_run_cleans_up(tmp_path, places):
    env, runtime, tmp = places
    out = tmp_path / "out"
    out.mkdir()
    earlier = out / "report.html"
    earlier.write_text("<html>an earlier report</html>", encoding="utf-8")
    live = make_workdir(out / "other.html")                            # a live run's folder (this process's)
    live_files = live_group(runtime)                                   # and kernel files
    popen = start(["report", "-o", str(earlier), "--bootstrap", "0"], tmp_path, env)
    temporary = lambda: [p for p in out.iterdir() if p.name.startswith(".report.")]  # noqa: E731
    seen = watch_until(popen, lambda: bool(temporary()))
    kernels = [p for p in seen.values() if is_kernel(p)]
    assert kernels
    popen.kill()
    popen.communicate(timeout=60)
    assert not survivors(list(seen.values())), "the report's kernel outlived it"
    left = temporary()
    assert len(left) == 1 and f".{popen.pid}-" in left[0].name          # what the dead run left ...
    debris = [n for n in kernel_files(runtime) if n.startswith(f"jagged-{popen.pid}-")]
    assert any(n.endswith(".json") for n in debris) and any("-ipc-" in n for n in debris)
    assert earlier.read_text(encoding="utf-8") == "<html>an earlier report</html>"

    small = write_scores(tmp_path / "scores.csv", MODELS[:3])            # a quick report is enough to clean up
    again = subprocess.run([*JAGGED, "report", str(small), "-o", str(out / "second.html"), "--bootstrap", "0"],
                           capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr
    assert not left[0].exists()                                        # ... the next run removed
    assert kernel_files(runtime) == sorted(p.name for p in live_files)
    assert list(tmp.iterdir()) == []
    assert live.is_dir()                                               # and nothing else
    assert earlier.read_text(encoding="utf-8") == "<html>an earlier report</html>"
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "report.html", "second.html", "second.ipynb", "second.json"]
