"""Size and browser render time of a 300 models × 60 domains report, against the limits.

Generates the synthetic table of ``scale_data.py`` (300 × 60 with item counts and three
weights profiles), writes its cross-model report with ``jagged report`` (the library call
the command makes), and does the same for the bundled MMLU-Pro data in the same run. Each
HTML file is then opened from ``file://`` in headless Chromium (the system ``chromium``,
driven by Playwright, as in ``tests/test_browser.py``); the render time is the wall time
from navigation until the load event has fired and two frames have been painted, the
median of N openings in fresh browser contexts.

Prints, for both reports: size (and its ratio to the limit), render time (and its ratio to
the limit), and the scale report's ratios to the bundled one. Limits (issue 7): 300 × 60
under 5 MB and under 3 s; the bundled report under 2 MB. Exits 1 when a limit is broken.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import scale_data  # noqa: E402

SCALE_MAX_BYTES = 5_000_000
SCALE_MAX_SECONDS = 3.0
BUNDLED_MAX_BYTES = 2_000_000


def render_times(paths: list[Path], repeats: int) -> list[list[float]] | None:
    """Median-ready render times of each page, alternating pages; None without Chromium."""
    from browser import chromium, find_chromium, open_page

    executable = find_chromium()
    if executable is None:
        return None
    times: list[list[float]] = [[] for _ in paths]
    with chromium(executable) as browser:
        for path in paths:  # warm the file cache and the browser once
            with open_page(browser, path):
                pass
        for _ in range(repeats):
            for i, path in enumerate(paths):
                with open_page(browser, path) as (page, log):
                    if log.console_errors or log.remote_requests:
                        sys.exit(f"{path.name}: console errors {log.console_errors} or requests "
                                 f"{log.remote_requests}")
                    times[i].append(log.render_seconds)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="browser openings of each page (median; at least 3)")
    parser.add_argument("--models", type=int, default=300)
    parser.add_argument("--domains", type=int, default=60)
    args = parser.parse_args()
    from jagged.report import jaggedness_report

    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        folder = Path(tmp)
        scores, weights = scale_data.write(folder / "input", args.models, args.domains)
        started = time.perf_counter()
        scale = jaggedness_report(scores, folder / "scale.html", weights=str(weights))
        scale_build = time.perf_counter() - started
        started = time.perf_counter()
        bundled = jaggedness_report(None, folder / "bundled.html")
        bundled_build = time.perf_counter() - started
        sizes = [scale.stat().st_size, bundled.stat().st_size]
        times = render_times([scale, bundled], max(3, args.repeats))

    label = f"{args.models} × {args.domains}"
    print(f"report of {label} (3 profiles): {sizes[0] / 1e6:.2f} MB = {sizes[0] / SCALE_MAX_BYTES:.2f} × the "
          f"5 MB limit; {sizes[0] / sizes[1]:.2f} × the bundled report; written in {scale_build:.1f} s")
    print(f"bundled report (29 × 14): {sizes[1] / 1e6:.2f} MB = {sizes[1] / BUNDLED_MAX_BYTES:.2f} × the 2 MB limit; "
          f"written in {bundled_build:.1f} s")
    broken = sizes[0] >= SCALE_MAX_BYTES or sizes[1] >= BUNDLED_MAX_BYTES
    if times is None:
        print("render time: not measured (chromium not found: apt-get install -y chromium)")
    else:
        scale_t, bundled_t = (statistics.median(t) for t in times)
        print(f"browser render of {label}: {scale_t:.2f} s (median of {len(times[0])}) = "
              f"{scale_t / SCALE_MAX_SECONDS:.2f} × the 3 s limit; {scale_t / bundled_t:.2f} × the bundled "
              f"report's {bundled_t:.2f} s")
        broken = broken or scale_t >= SCALE_MAX_SECONDS
    print("limits: " + ("BROKEN" if broken else "met"))
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
