"""Time `jagged report` on the bundled data against the floor of any papermill report.

The floor is a papermill + nbconvert run, in a fresh Python process like the command, of
a notebook whose only cell imports pandas, matplotlib and seaborn, rendered with
nbconvert's default HTML exporter. Both are measured in the same run, alternating, with
the same kernel settings (IPC transport, immediate shutdown), so the ratio is what the
report's own work (input validation, its cells, figures, template) costs on top of
starting a kernel and rendering a notebook at all.

Prints the median of N runs of each and the ratio. Target: ratio <= 1.3.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

FLOOR_SCRIPT = textwrap.dedent('''
    import sys
    import nbformat
    import papermill
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    source, executed, html = sys.argv[1:4]
    config = Config()
    config.KernelManager.transport = "ipc"
    nb = papermill.execute_notebook(source, executed, kernel_name="python3", progress_bar=False,
                                    request_save_on_cell_execute=False, shutdown_kernel="immediate",
                                    config=config)
    body, _ = HTMLExporter().from_notebook_node(nb)
    open(html, "w", encoding="utf-8").write(body)
''')


def floor_notebook(path: Path) -> None:
    """Write the floor notebook: one cell importing pandas, matplotlib and seaborn."""
    import nbformat

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells.append(nbformat.v4.new_code_cell("import pandas\nimport matplotlib\nimport seaborn"))
    nbformat.write(nb, path)


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each (median reported; at least 3)")
    args = parser.parse_args()
    repeats = max(3, args.repeats)
    # Bytecode for jagged, as a regular install (and `make`) has it: with an editable
    # install and PYTHONDONTWRITEBYTECODE set, every run would otherwise recompile it.
    import compileall

    import jagged

    compileall.compile_dir(str(Path(jagged.__file__).parent), quiet=1)
    jagged_cli = Path(sys.executable).with_name("jagged")
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        tmp_path = Path(tmp)
        floor_nb = tmp_path / "floor.ipynb"
        floor_notebook(floor_nb)
        script = tmp_path / "floor.py"
        script.write_text(FLOOR_SCRIPT)
        report_cmd = [str(jagged_cli), "report", "-o", str(tmp_path / "report.html")]
        floor_cmd = [sys.executable, str(script), str(floor_nb), str(tmp_path / "floor.out.ipynb"),
                     str(tmp_path / "floor.html")]
        timed(floor_cmd)  # warm the file cache once for both
        timed(report_cmd)
        report_times, floor_times = [], []
        for _ in range(repeats):
            floor_times.append(timed(floor_cmd))
            report_times.append(timed(report_cmd))
        report_size = (tmp_path / "report.html").stat().st_size
    report_median = statistics.median(report_times)
    floor_median = statistics.median(floor_times)
    ratio = report_median / floor_median
    print(f"jagged report (bundled data): median {report_median:.2f} s over {repeats} runs "
          f"(min {min(report_times):.2f}, max {max(report_times):.2f}); HTML {report_size / 1e6:.2f} MB")
    print(f"floor (papermill + nbconvert, import pandas/matplotlib/seaborn): median {floor_median:.2f} s "
          f"(min {min(floor_times):.2f}, max {max(floor_times):.2f})")
    print(f"ratio: {ratio:.2f}x (target <= 1.3x) {'OK' if ratio <= 1.3 else 'OVER TARGET'}")


if __name__ == "__main__":
    main()
