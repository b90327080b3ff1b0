"""What a run leaves on disk: kernel files named after their run, removed on stop, and after a kill only when
provably dead; temporary report folders removed only when their run is gone; SIGTERM while a kernel is owned."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jagged.report.debris import host_tag, make_workdir, remove_stale_kernel_files, remove_stale_workdirs
from jagged.report.kernel import Stopped, check_stopped, launch_kernel, own_kernel, stop_kernel, stopping


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """A runtime folder with a short path (IPC socket paths must fit in 104 bytes) and a TMPDIR."""
    import shutil
    import tempfile

    runtime, tmp = Path(tempfile.mkdtemp(prefix="jr", dir="/tmp")), tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR is read again
    yield runtime, tmp
    shutil.rmtree(runtime, ignore_errors=True)


def test_kernel_files_are_named_after_the_run_and_removed_on_stop(folders):
    import os
    import signal

    runtime, tmp = folders
    with own_kernel() as km:
        assert km.transport == "ipc"
        names = sorted(p.name for p in runtime.iterdir())
        stem = Path(km.connection_file).stem
        assert stem.startswith(f"jagged-{os.getpid()}-{host_tag()}-")
        assert f"{stem}.json" in names and f"{stem}.kernel" in names          # no connection file in TMPDIR
        assert (runtime / f"{stem}.kernel").read_text().strip() == str(km.provisioner.process.pid)
        assert list(tmp.iterdir()) == []
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL           # SIGTERM now cleans up first
    assert list(runtime.iterdir()) == [] and list(tmp.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL                   # and is given back


def _group(folder: Path, owner: int, *, host: str | None = None, kernel: int | None = None, tag: str = "0" * 12,
           sockets: int = 2) -> list[Path]:
    stem = folder / f"jagged-{owner}-{host or host_tag()}-{tag}"
    files = [Path(f"{stem}.json"), *(Path(f"{stem}-ipc-{i}") for i in range(1, sockets + 1))]
    if kernel is not None:
        files.append(Path(f"{stem}.kernel"))
    for path in files:
        path.write_text(f"{kernel}\n" if path.suffix == ".kernel" else "{}", encoding="ascii")
    return files


def test_a_deep_runtime_folder_falls_back_to_tcp(tmp_path, monkeypatch):
    runtime = tmp_path / ("d" * 60) / "runtime"
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    km = launch_kernel()
    try:
        assert km.transport == "tcp" and Path(km.connection_file).parent == runtime
    finally:
        stop_kernel(km)
    assert list(runtime.iterdir()) == []


def test_only_provably_dead_kernels_files_are_removed(tmp_path):
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    dead = ended.pid                                                              # a process id that has ended
    other = "0" * 8 if host_tag() != "0" * 8 else "1" * 8
    running = subprocess.Popen([sys.executable, "-c", "import time, sys; time.sleep(60)",
                                str(tmp_path / f"jagged-{dead}-{host_tag()}-{'e' * 12}.json")])
    try:
        gone = _group(tmp_path, dead, kernel=dead, tag="a" * 12)                 # owner and kernel dead
        no_record = _group(tmp_path, dead, tag="b" * 12)                        # no .kernel, no process names it
        live_kernel = _group(tmp_path, dead, kernel=running.pid, tag="c" * 12)  # the kernel still runs
        live_owner = _group(tmp_path, running.pid, kernel=dead, tag="d" * 12)   # its run still runs
        named = _group(tmp_path, dead, tag="e" * 12)                            # a running process names it
        elsewhere = _group(tmp_path, dead, host=other, kernel=dead, tag="f" * 12)
        unrelated = tmp_path / "kernel-1234.json"
        unrelated.write_text("{}")
        removed = remove_stale_kernel_files(tmp_path)
        assert sorted(removed) == sorted(gone + no_record)
        assert all(not p.exists() for p in gone + no_record)
        assert all(p.exists() for p in live_kernel + live_owner + named + elsewhere + [unrelated])
    finally:
        running.kill()
        running.wait()
    assert sorted(remove_stale_kernel_files(tmp_path)) == sorted(live_kernel + live_owner + named)
    assert remove_stale_kernel_files(tmp_path / "missing") == []


def test_only_dead_runs_folders_are_removed(tmp_path):
    mine = make_workdir(tmp_path / "a.html")
    host = mine.name.split(".")[-2].split("-")[1]
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()                                                       # a process id that has ended
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = tmp_path / f".b.{ended.pid}-{host}.abcdefgh"
        live = tmp_path / f".c.{running.pid}-{host}.abcdefgh"
        elsewhere = tmp_path / f".d.{ended.pid}-{'0' * 8 if host != '0' * 8 else '1' * 8}.abcdefgh"
        unrelated = tmp_path / ".e.abcdefgh"
        for folder in (dead, live, elsewhere, unrelated):
            folder.mkdir()
        (dead / "executed.ipynb").write_text("{}")
        assert remove_stale_workdirs(tmp_path) == [dead]
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [mine.name, live.name, elsewhere.name, unrelated.name])
    finally:
        running.kill()
        running.wait()
    assert remove_stale_workdirs(tmp_path) == [live]                   # once its process has ended
    assert remove_stale_workdirs(tmp_path / "missing") == []


def test_sigterm_stops_the_run_even_when_its_exception_is_swallowed():
    """Inside stopping(), SIGTERM raises Stopped (exit status 143); if that exception is swallowed where it lands
    (as an event loop might), every later checkpoint raises it; outside, SIGTERM has its default action."""
    import os
    import signal
    import time

    with stopping():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)                                              # interrupted by the handler
        except Stopped:
            pass
        else:
            raise AssertionError("SIGTERM raised nothing")
        with pytest.raises(Stopped) as raised:
            check_stopped()
        assert raised.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    check_stopped()                                                    # forgotten outside: nothing raised
