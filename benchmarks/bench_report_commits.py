"""Time `jagged report` (bundled data) at another commit against the working tree, alternating runs.

Issue 22 asks that the report be "no slower" than before the layout refactor (commit
52e6ce6). The other commit is extracted with ``git archive SHA | tar -x`` into a temporary
folder (git state is not touched: no worktree, no checkout); both trees run with this
venv's Python as ``python -m jagged.cli report -o ...``, each with only its own tree on
``PYTHONPATH`` and a neutral, empty working directory, so neither the command nor the
notebook kernel (which inherits the environment and the working directory) can import
jagged from the other tree or through the editable install. The extracted tree gets the
build's package-dir mapping as symlinks (``jagged/notebooks`` -> ``notebooks/``,
``jagged/templates`` -> ``templates/``); without them it would run the working tree's
notebook and template, found through the editable install. A probe checks all this before
anything is timed: it prints ``jagged.__file__`` in the command's process and in a kernel
started by that tree's ``jagged.report.execution.execute``, and the folders of the bundled
data, notebooks and templates, and the benchmark stops if any is outside the tree. Both
trees' bytecode is compiled first (``compileall``).

Runs alternate (theirs, ours, theirs, ours, ...) after one warm-up run of each, so a load
that comes and goes on a shared machine falls on both. Prints per tree the median wall
time and the median CPU time (user + system of the command and its kernel:
``resource.getrusage(RUSAGE_CHILDREN)`` deltas around each run; CPU time depends far less
than wall time on what else the machine is doing), and the ratios ours / theirs.
Target: CPU and wall ratio <= 1.0 ("no slower").

Each tree runs the report it has, on the bundled data it ships: when the working tree's
report has sections the other commit's lacks (the item model, question text), the ratio
includes them. ``--ours SHA`` times another commit in place of the working tree (e.g. the
layout refactor's last commit, to isolate the refactor from later features).

Like for like: arguments after ``--`` reach ``jagged report`` on both sides (paths that exist
are made absolute, since the runs start in the neutral folder), e.g. ``-- scores.csv
--weights profiles.csv``. ``--same-work`` does this with the bundled per-category scores
copied to a plain CSV in the temporary folder (so neither side recognises the bundled data
and runs its item-level audit or item response model) and the bundled profiles passed as
``--weights`` (a copy beside it): the work that 52e6ce6 and the working tree share.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = textwrap.dedent('''
    import json
    import sys

    import jagged
    import nbformat
    from jagged.report.execution import execute

    probe, executed = sys.argv[1:3]
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells.append(nbformat.v4.new_code_cell("import jagged\\nprint(jagged.__file__, end='')"))
    nbformat.write(nb, probe)
    done = execute(probe, executed)
    kernel = "".join(out.get("text", "") for out in done.cells[0].outputs if out.get("output_type") == "stream")
    seen = {"process": jagged.__file__, "kernel": kernel}
    try:
        from jagged import resources
    except ImportError:  # a commit older than jagged.resources
        resources = None
    for name in ("data_dir", "notebooks_dir", "templates_dir"):
        if hasattr(resources, name):
            seen[name] = str(getattr(resources, name)())
    print(json.dumps(seen))
''')


def extract(sha: str, target: Path) -> str:
    """Write the tree of commit ``sha`` into ``target`` with ``git archive | tar -x``; return the full hash."""
    full = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{sha}^{{commit}}"],
                          capture_output=True, text=True)
    if full.returncode != 0:
        sys.exit(f"not a commit: {sha}\n{full.stderr.strip()}")
    target.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", full.stdout.strip()], stdout=subprocess.PIPE)
    untar = subprocess.run(["tar", "-x", "-C", str(target)], stdin=archive.stdout)
    archive.stdout.close()
    if archive.wait() != 0 or untar.returncode != 0:
        sys.exit(f"could not extract {sha} into {target}")
    return full.stdout.strip()


def map_package_dirs(tree: Path) -> None:
    """Mirror the build's ``[tool.setuptools.package-dir]`` in an extracted tree (symlinks).

    ``jagged.notebooks`` and ``jagged.templates`` are the top-level ``notebooks/`` and
    ``templates/`` folders, mapped into the package by the build. Without the links an
    extracted tree on PYTHONPATH would find them through the venv's editable install, i.e.
    in the working tree: the other commit would run the working tree's notebook.
    """
    import tomllib

    config = tomllib.loads((tree / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = config.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    for package, folder in mapping.items():
        parts = package.split(".")
        if parts[0] != "jagged" or len(parts) < 2:
            continue
        link = tree.joinpath(*parts)
        if not link.exists():
            link.symlink_to((tree / folder).resolve(), target_is_directory=True)


def tree_env(tree: Path) -> dict[str, str]:
    """This process's environment with only ``tree`` on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    return env


def check_imports(tree: Path, env: dict[str, str], cwd: Path) -> str:
    """Run the probe for ``tree``; exit unless the process, the kernel and the packaged folders are in it."""
    script = cwd / "probe.py"
    script.write_text(PROBE)
    done = subprocess.run([sys.executable, str(script), str(cwd / "probe.ipynb"), str(cwd / "probe.out.ipynb")],
                          capture_output=True, text=True, env=env, cwd=cwd)
    for leftover in ("probe.py", "probe.ipynb", "probe.out.ipynb"):
        (cwd / leftover).unlink(missing_ok=True)
    if done.returncode != 0:
        sys.exit(f"probe failed for {tree}:\n{done.stderr}")
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    for where, path in seen.items():
        if not Path(path).resolve().is_relative_to(tree.resolve()):
            sys.exit(f"the {where} imported jagged from {path}, not from {tree}: the comparison would be void")
    return seen["kernel"]


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Run a command; return its wall time and the CPU time (user + sys) of it and its reaped children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}) with PYTHONPATH={env['PYTHONPATH']}: {' '.join(command)}\n"
                 f"{done.stderr}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def absolute_if_path(argument: str) -> str:
    """``argument`` as an absolute path when it names an existing file or folder, else unchanged."""
    path = Path(argument)
    return str(path.resolve()) if not argument.startswith("-") and path.exists() else argument


def same_work_arguments(folder: Path) -> list[str]:
    """Copy the bundled per-category scores and profiles into ``folder``; return ``[SCORES, --weights, FILE]``.

    Both come from this tree's ``jagged/data``; the commits compared ship the same bytes
    (``git diff 52e6ce6 HEAD -- jagged/data`` adds only question text and provenance).
    """
    folder.mkdir(parents=True)
    data = ROOT / "jagged" / "data"
    scores = shutil.copyfile(data / "mmlu_pro_per_category.csv", folder / "scores.csv")
    weights = shutil.copyfile(data / "profiles_mmlu_pro.csv", folder / "weights.csv")
    return [str(scores), "--weights", str(weights)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="52e6ce6", help="commit to compare with (default 52e6ce6)")
    parser.add_argument("--ours", default="", help="commit to time instead of the working tree (default: the "
                                                    "working tree holding this benchmark)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each tree (median reported; "
                                                                "default 5)")
    parser.add_argument("--same-work", action="store_true",
                        help="run both sides on the bundled per-category scores copied to a plain CSV, with "
                             "the bundled profiles as --weights (no item-level work on either side)")
    parser.add_argument("report_args", nargs=argparse.REMAINDER,
                        help="after --: arguments given to `jagged report` on both sides (SCORES, --weights ...)")
    args = parser.parse_args()
    repeats = max(1, args.repeats)
    given = args.report_args[1:] if args.report_args[:1] == ["--"] else args.report_args
    report_args = [absolute_if_path(a) for a in given]
    with tempfile.TemporaryDirectory(prefix="bench-commits-") as tmp:
        tmp_path = Path(tmp)
        if args.same_work:
            if report_args:
                sys.exit("--same-work sets the report's arguments; give either it or arguments after --")
            report_args = same_work_arguments(tmp_path / "inputs")
        theirs_sha = extract(args.against, tmp_path / "theirs")
        map_package_dirs(tmp_path / "theirs")
        trees = {f"{args.against} ({theirs_sha[:10]})": tmp_path / "theirs"}
        if args.ours:
            ours_sha = extract(args.ours, tmp_path / "ours")
            map_package_dirs(tmp_path / "ours")
            trees[f"{args.ours} ({ours_sha[:10]})"] = tmp_path / "ours"
        else:
            trees[f"working tree ({ROOT})"] = ROOT
        neutral = tmp_path / "cwd"
        neutral.mkdir()
        for name, tree in trees.items():
            compileall.compile_dir(str(tree / "jagged"), quiet=1)
            kernel_file = check_imports(tree, tree_env(tree), neutral)
            print(f"{name}: command and kernel import jagged from {Path(kernel_file).parent}; notebooks, "
                  "templates and data from the same tree")
        commands = {name: [sys.executable, "-m", "jagged.cli", "report", *report_args, "-o",
                           str(tmp_path / f"report{k}.html")] for k, name in enumerate(trees)}
        for name, tree in trees.items():  # warm-up: file cache, matplotlib's font cache
            timed(commands[name], tree_env(tree), neutral)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for _ in range(repeats):
            for name, tree in trees.items():
                runs[name].append(timed(commands[name], tree_env(tree), neutral))
        sizes = {name: (tmp_path / f"report{k}.html").stat().st_size / 1e6 for k, name in enumerate(trees)}
    work = ("bundled data" if not report_args else
            "same work: " + " ".join(Path(a).name if Path(a).is_absolute() else a for a in report_args))
    print(f"jagged report ({work}), {repeats} timed run(s) of each, alternating, after one warm-up each")
    medians = []
    for name in trees:
        wall = [w for w, _ in runs[name]]
        cpu = [c for _, c in runs[name]]
        medians.append((statistics.median(wall), statistics.median(cpu)))
        print(f"{name}: median {medians[-1][0]:.2f} s wall (min {min(wall):.2f}, max {max(wall):.2f}), "
              f"CPU {medians[-1][1]:.2f} s (min {min(cpu):.2f}, max {max(cpu):.2f}); HTML {sizes[name]:.2f} MB")
    (theirs_wall, theirs_cpu), (ours_wall, ours_cpu) = medians
    cpu_ratio, wall_ratio = ours_cpu / theirs_cpu, ours_wall / theirs_wall
    # a busy machine only ever adds time, so the fastest runs are the least disturbed ones
    theirs_runs, ours_runs = runs.values()
    min_cpu_ratio = min(c for _, c in ours_runs) / min(c for _, c in theirs_runs)
    print(f"ours / {args.against}: {cpu_ratio:.2f}x CPU, {wall_ratio:.2f}x wall (medians); {min_cpu_ratio:.2f}x CPU "
          f"(fastest runs) (target <= 1.0x: {'no slower' if cpu_ratio <= 1.0 and wall_ratio <= 1.0 else 'SLOWER'})")


if __name__ == "__main__":
    main()
