"""Peak memory and time of ``jagged structure`` and ``jagged report`` on tables with many domains.

Writes synthetic long tables (``model,domain,score,n_items``: ``scale_data.scores``, binomial
draws around a model level minus a domain difficulty) of 3 models × 1,000 domains and
30 models × 2,000 domains, and runs ``jagged structure`` and ``jagged report`` on each in a
subprocess of its own. The peak resident memory is sampled (every 20 ms, with psutil) over
the command and all its descendants (the report's kernel included): the largest sum over
the process tree. The baseline, measured in the same run, is the same command on the
bundled MMLU-Pro table (29 models × 14 domains); times are printed as ratios to it.

The limit (issue 17): a 1,000-domain table within 2 GB. Exits 1 when a run fails or a
1,000-domain run exceeds it. ``--quick`` runs ``jagged structure`` only.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scale_data  # noqa: E402

LIMIT_BYTES = 2 * 1024 ** 3
SIZES = ((3, 1000), (30, 2000))
JAGGED = [sys.executable, "-m", "jagged.cli"]


def tree_rss(process: psutil.Process) -> int:
    """Resident bytes of a process and all its descendants (those that vanish meanwhile count 0)."""
    total = 0
    try:
        members = [process] + process.children(recursive=True)
    except psutil.NoSuchProcess:
        return 0
    for member in members:
        try:
            total += member.memory_info().rss
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            pass
    return total


def measure(args: list[str], cwd: Path) -> tuple[float, int, int, str]:
    """Run ``jagged ARGS``; return wall seconds, peak tree RSS (bytes), exit status and stderr's last line."""
    started = time.perf_counter()
    child = subprocess.Popen(JAGGED + args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    watched = psutil.Process(child.pid)
    peak = 0
    while child.poll() is None:
        peak = max(peak, tree_rss(watched))
        time.sleep(0.02)
    seconds = time.perf_counter() - started
    stderr = child.stderr.read() if child.stderr else ""
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    return seconds, peak, child.returncode, last


def command(kind: str, scores: Path | None, out: Path) -> list[str]:
    """The arguments of one run: ``structure SCORES`` or ``report SCORES -o OUT`` (no bootstrap)."""
    source = [str(scores)] if scores is not None else []
    if kind == "structure":
        return ["structure"] + (source or [str(Path(__file__).resolve().parent.parent / "jagged" / "data"
                                                   / "mmlu_pro_per_category.csv")])
    return ["report"] + source + ["-o", str(out)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="jagged structure only (no report)")
    args = parser.parse_args()
    kinds = ("structure",) if args.quick else ("structure", "report")
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench-domains-") as tmp:
        folder = Path(tmp)
        tables = {}
        for models, domains in SIZES:
            path = folder / f"scores_{models}x{domains}.csv"
            scale_data.scores(models, domains).to_csv(path, index=False)
            tables[(models, domains)] = path
        for kind in kinds:
            base_s, base_rss, code, last = measure(command(kind, None, folder / "bundled.html"), folder)
            print(f"jagged {kind}: bundled 29 models x 14 domains (baseline): {base_s:.1f} s, "
                  f"peak RSS {base_rss / 2 ** 20:,.0f} MiB")
            failed |= code != 0
            for (models, domains), path in tables.items():
                seconds, rss, code, last = measure(command(kind, path, folder / f"r{models}x{domains}.html"), folder)
                over = domains <= 1000 and rss > LIMIT_BYTES
                failed |= code != 0 or over
                status = "ok" if code == 0 else f"exit {code}: {last}"
                print(f"jagged {kind}: {models} models x {domains:,} domains: peak RSS {rss / 2 ** 20:,.0f} MiB "
                      f"({rss / LIMIT_BYTES:.2f} x the 2 GiB limit), {seconds:.1f} s = {seconds / base_s:.1f} x "
                      f"the baseline; {status}{' OVER THE LIMIT' if over else ''}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
