"""The single-report kernel: it answers, and stops without leftovers; the command line starts without pandas."""

from __future__ import annotations

import glob
import subprocess
import sys

from jagged.report.kernel import launch_kernel, stop_kernel


def test_launched_kernel_answers_and_stop_leaves_nothing_behind():
    from jupyter_core.utils import run_sync

    km = launch_kernel()
    assert km.transport == "ipc"                     # local sockets on POSIX (the suite runs on Linux)
    pattern = f"{glob.escape(km.ip)}-*"
    client = km.client()
    client.start_channels()
    try:
        run_sync(client.wait_for_ready)(timeout=60)
        reply = run_sync(client.execute_interactive)("x = 6 * 7", timeout=30)
        assert reply["content"]["status"] == "ok"
    finally:
        client.stop_channels()
    process = km.provisioner.process
    assert glob.glob(pattern) and glob.glob(str(km.connection_file))   # there was something to remove
    stop_kernel(km)
    assert process.poll() is not None  # reaped, not a zombie left running
    assert not glob.glob(str(km.connection_file))
    assert not glob.glob(pattern)


def test_importing_the_cli_does_not_import_pandas():
    """`jagged report` starts its kernel before the heavy imports of validation."""
    code = "import sys, jagged.cli, jagged.report.run; print('pandas' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_lazy_package_names_resolve():
    import jagged

    assert callable(jagged.jaggedness) and callable(jagged.load) and jagged.BUNDLED_SCORES.is_file()
    assert {"jaggedness", "load_scores", "resolve_profiles"} <= set(dir(jagged))
