"""Time `jagged report` on the bundled data against a hand-written notebook and the floor of any papermill report.

Three commands are timed in the same run, alternating, each in a fresh Python process:

* ``jagged report`` on the bundled MMLU-Pro data (every section that applies);
* the **hand-written baseline**: ``benchmarks/handwritten_report.ipynb``, the notebook an
  analyst would write by hand with pandas, scipy, seaborn and the ``mirt`` package on the
  same bundled files (error rates, CV, macro and deployment-weighted scores and wedges, the
  rank slope chart of the most reordered profile, the focus model's exposure per domain and
  its drift bound D·σ_w·σ_e, a paired stratified bootstrap of 2,000 replicates, item
  p-values, item-rest correlations and flags, a 2PL per domain with information curves and
  loadings, the logit decomposition with its variance shares (sampling noise by the delta
  method) as bars, relative jaggedness against cv_error and a parallel-analysis scree
  plot), drawing the same figures as the report with seaborn;
* the **floor**: a notebook whose only cell imports pandas, matplotlib and seaborn.

The two notebooks run through papermill and are rendered with nbconvert's default HTML
exporter, with the kernel settings the report uses (IPC transport, immediate shutdown),
so each ratio is what the report's own work costs against the same analysis written by
hand, and against starting a kernel and rendering a notebook at all.

Prints, for each command, the median wall time of N runs and the median CPU time (user +
system of the process and its kernel: ``resource.getrusage(RUSAGE_CHILDREN)`` deltas
around each run, which are less sensitive than wall time to a loaded machine), then the
ratios. Targets (issue 32): report / hand-written <= 0.8, report / floor <= 1.3. Every run is
cold: nothing computed in one run is reused by the next. It also counts the
figures (image outputs) of the report's and the hand-written notebook's executed notebooks in
every run and prints both, with a warning when they differ (the comparison is then not like
for like).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HANDWRITTEN = Path(__file__).with_name("handwritten_report.ipynb")
TARGET_HANDWRITTEN = 0.8
TARGET_FLOOR = 1.3

NOTEBOOK_SCRIPT = textwrap.dedent('''
    import json
    import sys
    import papermill
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    source, executed, html, parameters = sys.argv[1:5]
    config = Config()
    config.KernelManager.transport = "ipc"
    nb = papermill.execute_notebook(source, executed, parameters=json.loads(parameters), kernel_name="python3",
                                    progress_bar=False, request_save_on_cell_execute=False,
                                    shutdown_kernel="immediate", config=config)
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


def timed(command: list[str]) -> tuple[float, float]:
    """Run a command; return its wall time and the CPU time (user + sys) of it and its reaped children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def count_figures(notebook: Path) -> int:
    """The image outputs (figures) of an executed notebook; several formats of one figure count once."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    return sum(any(kind.startswith("image/") for kind in output.get("data", {}))
               for cell in nb.cells if cell.cell_type == "code" for output in cell.get("outputs", []))


def figure_counts(counts: list[int]) -> str:
    """One count, or every distinct count over the runs ("17" or "16/17")."""
    return "/".join(str(n) for n in sorted(set(counts)))


def summary(name: str, runs: list[tuple[float, float]]) -> tuple[float, float]:
    """Print one command's median wall and CPU time; return both medians."""
    wall = [w for w, _ in runs]
    cpu = [c for _, c in runs]
    wall_median, cpu_median = statistics.median(wall), statistics.median(cpu)
    print(f"{name}: median {wall_median:.2f} s wall (min {min(wall):.2f}, max {max(wall):.2f}), "
          f"CPU {cpu_median:.2f} s (min {min(cpu):.2f}, max {max(cpu):.2f})")
    return wall_median, cpu_median


def verdict(ratio: float, target: float) -> str:
    return "OK" if ratio <= target else "OVER TARGET"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each (median reported; default 5)")
    args = parser.parse_args()
    repeats = max(1, args.repeats)
    # Bytecode for jagged, as a regular install (and `make`) has it: with an editable
    # install and PYTHONDONTWRITEBYTECODE set, every run would otherwise recompile it.
    import compileall

    import jagged

    compileall.compile_dir(str(Path(jagged.__file__).parent), quiet=1)
    data_dir = Path(jagged.__file__).parent / "data"
    jagged_cli = Path(sys.executable).with_name("jagged")
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        tmp_path = Path(tmp)
        floor_nb = tmp_path / "floor.ipynb"
        floor_notebook(floor_nb)
        script = tmp_path / "run_notebook.py"
        script.write_text(NOTEBOOK_SCRIPT)
        commands = {
            "jagged report (bundled data)": [str(jagged_cli), "report", "-o", str(tmp_path / "report.html")],
            "hand-written notebook (pandas + scipy + seaborn + mirt, papermill + nbconvert)": [
                sys.executable, str(script), str(HANDWRITTEN), str(tmp_path / "hand.out.ipynb"),
                str(tmp_path / "hand.html"), json.dumps({"data_dir": str(data_dir)})],
            "floor (papermill + nbconvert, import pandas/matplotlib/seaborn)": [
                sys.executable, str(script), str(floor_nb), str(tmp_path / "floor.out.ipynb"),
                str(tmp_path / "floor.html"), "{}"],
        }
        for command in commands.values():  # warm the file cache once for each
            timed(command)
        report_name, hand_name = list(commands)[:2]
        executed = {report_name: tmp_path / "report.ipynb", hand_name: tmp_path / "hand.out.ipynb"}
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        figures: dict[str, list[int]] = {name: [] for name in executed}
        for _ in range(repeats):
            for name, command in commands.items():
                runs[name].append(timed(command))
                if name in executed:
                    figures[name].append(count_figures(executed[name]))
        sizes = {name: (tmp_path / stem).stat().st_size / 1e6
                 for name, stem in zip(commands, ("report.html", "hand.html", "floor.html"))}
    print(f"{repeats} run(s) of each, alternating")
    medians = {}
    for name in commands:
        medians[name] = summary(name, runs[name])
        print(f"    HTML {sizes[name]:.2f} MB")
    report_figures, hand_figures = figure_counts(figures[report_name]), figure_counts(figures[hand_name])
    print(f"figures: report {report_figures}, hand-written {hand_figures}")
    if len(set(figures[report_name]) | set(figures[hand_name])) != 1:
        print(f"WARNING: the report drew {report_figures} figure(s) and the hand-written notebook {hand_figures}: "
              "the report / hand-written ratio does not compare the same figures")
    (report_wall, report_cpu), (hand_wall, hand_cpu), (floor_wall, floor_cpu) = medians.values()
    for label, (wall, cpu), target in (("hand-written", (hand_wall, hand_cpu), TARGET_HANDWRITTEN),
                                       ("floor", (floor_wall, floor_cpu), TARGET_FLOOR)):
        print(f"report / {label}: {report_wall / wall:.2f}x wall, {report_cpu / cpu:.2f}x CPU "
              f"(target <= {target:.1f}x) {verdict(report_wall / wall, target)}")


if __name__ == "__main__":
    main()
