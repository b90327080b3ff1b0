"""A full disk and unwritable destinations: one line, exit 2, the earlier report kept, no half-written file.

The full disk is real: a small tmpfs mounted on a folder of the test (the suite runs as
root on Linux, here and in CI), filled with a filler file down to a chosen number of free
bytes. A report's executed notebook is about 0.9 MB and its HTML about 0.8 MB, so with
100 KB free the executed notebook cannot be written, and with 1.3 MB free it can but the
page cannot.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clitools import assert_bad_input
from conftest import BUNDLED

from jagged.errors import JaggedInputError
from jagged.fileio import atomic_write_text
from jagged.report.run import check_destination

JAGGED = [sys.executable, "-m", "jagged.cli"]
EARLIER = "<html>an earlier report</html>"


def _mount(folder: Path, *options: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(folder)],
                          capture_output=True, text=True)
    assert done.returncode == 0, f"mounting a tmpfs needs root on Linux: {done.stderr.strip()}"


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB file system of its own (unmounted afterwards)."""
    folder = tmp_path / "disk"
    _mount(folder, "size=4m")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(disk: Path, free: int) -> None:
    """Write a filler file so that about ``free`` bytes stay free on ``disk``."""
    stat = os.statvfs(disk)
    available = stat.f_bavail * stat.f_frsize
    with open(disk / "filler", "wb") as handle:
        handle.write(b"\0" * max(0, available - free))


def free_bytes(disk: Path) -> int:
    stat = os.statvfs(disk)
    return stat.f_bavail * stat.f_frsize


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_atomic_write_on_a_full_disk_keeps_the_old_file_and_leaves_no_temporary(small_disk):
    target = small_disk / "table.csv"
    target.write_text("old\n", encoding="utf-8")
    fill(small_disk, 0)
    with pytest.raises(JaggedInputError, match=f"^no space left on device writing {target}$"):
        atomic_write_text(target, "x" * 200_000)
    assert target.read_text(encoding="utf-8") == "old\n"
    assert hidden(small_disk) == []


def test_metrics_output_on_a_full_disk_is_one_line(small_disk):
    fill(small_disk, 0)
    assert_bad_input("metrics", BUNDLED, "-o", small_disk / "m.csv",
                     fragments=(f"no space left on device writing {small_disk / 'm.csv'}",))
    assert not (small_disk / "m.csv").exists() and hidden(small_disk) == []


@pytest.mark.parametrize("free", [100_000, 1_300_000], ids=["notebook-does-not-fit", "page-does-not-fit"])
def test_report_on_a_full_disk(small_disk, tmp_path, free):
    earlier = small_disk / "r.html"
    earlier.write_text(EARLIER, encoding="utf-8")
    fill(small_disk, free)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "TMPDIR": str(tmp_path)}
    done = subprocess.run([*JAGGED, "report", "-o", str(earlier), "--bootstrap", "0"], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 2, done.stderr
    errors = done.stderr.splitlines()
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert errors[0].startswith(f"jagged: error: no space left on device writing {earlier}"), errors[0]
    assert f"the earlier report {earlier} is unchanged" in errors[0]
    assert earlier.read_text(encoding="utf-8") == EARLIER                  # the earlier report is untouched
    assert not (small_disk / "r.ipynb").exists()
    failed = small_disk / "r.failed.ipynb"
    if failed.exists():                                                     # a complete notebook, or none
        assert json.loads(failed.read_text(encoding="utf-8"))["cells"]
        assert str(failed) in errors[0]
    assert hidden(small_disk) == []                                         # no temporary folder left
    assert free_bytes(small_disk) >= free - 8192                            # nothing half-written takes space
    assert not list((tmp_path / "runtime").glob("jagged-*"))


def test_unwritable_report_destinations_are_one_line(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("not a folder", encoding="utf-8")
    assert_bad_input("report", "-o", afile / "r.html", "--bootstrap", "0", fragments=(f"{afile} is not a folder",))
    assert_bad_input("report", "-o", afile / "deeper" / "r.html", fragments=(f"{afile} is not a folder",))
    folder = tmp_path / "folder.html"
    folder.mkdir()
    assert_bad_input("report", "-o", folder, fragments=("is a directory",))
    with pytest.raises(JaggedInputError, match="is a directory"):
        check_destination(folder)
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    with pytest.raises(JaggedInputError, match="exists and is not a regular file"):
        check_destination(fifo)
    assert afile.read_text(encoding="utf-8") == "not a folder"
    assert_bad_input("batch", "--out-dir", afile / "sub", "--bootstrap", "0", fragments=(f"{afile} is not a folder",))
    assert_bad_input("batch", "--out-dir", afile, "--bootstrap", "0", fragments=(f"{afile}", "not a folder"))


def test_read_only_destination_is_one_line(tmp_path):
    folder = tmp_path / "ro"
    _mount(folder, "size=1m", "ro")
    try:
        assert_bad_input("report", "-o", folder / "r.html", "--bootstrap", "0",
                         fragments=(f"cannot write the report in {folder}: Read-only file system",))
        assert_bad_input("batch", "--out-dir", folder / "out", "--bootstrap", "0", fragments=("Read-only file system",))
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_batch_on_a_full_disk_keeps_the_reports_and_says_why_there_is_no_index(tmp_path):
    from test_batch import index_rows, write_scores

    disk = tmp_path / "disk"
    _mount(disk, "size=12m")
    try:
        scores = write_scores(tmp_path / "scores.csv", ["a", "b", "c"])
        out = disk / "out"
        args = [*JAGGED, "batch", str(scores), "--out-dir", str(out), "--jobs", "2", "--bootstrap", "0"]
        first = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        reports = sorted(out.rglob("*.html"))
        before = {p: p.read_bytes() for p in reports}
        assert len(index_rows(out / "index.html")) == 3
        fill(disk, 0)
        again = subprocess.run([*args, "--force", "--models", "a"], capture_output=True, text=True, timeout=600,
                               cwd=tmp_path)
        assert again.returncode == 2, again.stderr
        last = again.stderr.strip().splitlines()[-1]
        assert last.startswith(f"jagged: error: no space left on device writing {out / 'index.html'}"), last
        assert "the index was not written; the 2 reports in place (0 made by this run) are kept" in last
        assert {p: p.read_bytes() for p in sorted(out.rglob("*.html"))} == before   # nothing lost or cut short
        assert not [p for p in out.rglob(".*") if p.is_dir()]
        assert not list(out.rglob("*.failed.ipynb")) or all(
            json.loads(p.read_text(encoding="utf-8")) for p in out.rglob("*.failed.ipynb"))
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
