"""Every Eval Ever at the Open LLM Leaderboard's scale: read ~4,500 aggregate files, then report on them.

1. **Generate** a datastore collection ``data/leaderboard/<developer>/<model>/<uuid>.json`` of N
   files (default 4,500, the Open LLM Leaderboard v2's size) from the shape of a real file,
   ``tests/data/eee/data/global-mmlu-lite/alibaba/…`` (schema 0.2.0: 19 results, 16 languages
   and 3 aggregate rows, metric configs, source metadata, confidence intervals): every file is
   that document with a new model id (up to 102 characters, as on the leaderboard), new
   scores, a per-language ``uncertainty.num_samples`` of 400 (Global-MMLU-Lite's sample
   count, so the report has intervals), and the leaderboard's quirks: 2 % of the models have
   an older re-scrape (superseded), 2 % a float16 and a bfloat16 file with the same
   ``retrieved_timestamp`` (ties), 1 % a "not evaluated" -1.
2. **Read**: ``jagged.load(folder)`` against a plain loop of ``json.load`` over the same files
   (the same ``rglob`` listing, then ``open`` + ``json.load`` each), alternating, median of R
   runs, in the same process; prints both times and the ratio. The issue asks for "a few
   seconds".
3. **Report**: ``jaggedness_report(folder, ...)`` (what ``jagged report FOLDER`` runs, CLI
   defaults: 2,000 bootstrap replicates) on the collection; prints the HTML size against
   the 5 MB limit (issue 13) and checks the most/least-jagged cut of the figures.

Exits 1 when the report is over 5 MB.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SHAPE = next((HERE.parent / "tests" / "data" / "eee" / "data" / "global-mmlu-lite" / "alibaba").rglob("*.json"))
REPORT_MAX_BYTES = 5_000_000
AGGREGATES = {"Global MMLU Lite", "Culturally Sensitive", "Culturally Agnostic"}


def model_id(i: int, rng: np.random.Generator) -> tuple[str, str]:
    """A leaderboard-like ``developer/model`` id; some run to 102 characters."""
    developer = f"org-{i % 700:03d}"
    stem = f"Model-{i:05d}-Instruct-v{i % 9}.{i % 5}"
    if i % 3 == 0:  # long merge names, as on the leaderboard
        stem += "-slerp-merge-with-" + "-".join(f"part{j}" for j in range(int(rng.integers(2, 12))))
    full = f"{developer}/{stem}"[:102]
    return developer, full.split("/", 1)[1]


def write_collection(root: Path, n: int, seed: int = 0) -> dict[str, int]:
    """Write the synthetic collection under ``root/data/leaderboard``; return what it holds."""
    rng = np.random.default_rng(seed)
    shape = json.loads(SHAPE.read_text())
    languages = [r["evaluation_name"] for r in shape["evaluation_results"] if r["evaluation_name"] not in AGGREGATES]
    stamp = float(shape["retrieved_timestamp"])
    counts = {"files": 0, "models": 0, "superseded": 0, "ties": 0, "not evaluated": 0}
    for i in range(n):
        developer, name = model_id(i, rng)
        level = rng.uniform(0.2, 0.9)
        variants = [("bfloat16", stamp)]
        if i % 50 == 7:
            variants.append(("bfloat16", stamp - 86400 * 30))  # an older scrape
            counts["superseded"] += 1
        elif i % 50 == 21:
            variants.append(("float16", stamp))  # the same scrape, another precision: a tie
            counts["ties"] += 1
        for precision, retrieved in variants:
            doc = copy.deepcopy(shape)
            doc["retrieved_timestamp"] = f"{retrieved:.6f}"
            doc["evaluation_id"] = f"leaderboard/{developer}_{name}/{retrieved:.6f}"
            doc["model_info"].update(id=f"{developer}/{name}", name=name, developer=developer,
                                     additional_details={"precision": precision})
            for result in doc["evaluation_results"]:
                score = float(np.clip(level + rng.normal(0, 0.08), 0.01, 0.99))
                result["score_details"]["score"] = round(score, 4)
                if result["evaluation_name"] in languages:
                    result["score_details"].setdefault("uncertainty", {})["num_samples"] = 400
            if i % 100 == 42 and precision == "bfloat16" and retrieved == stamp:
                doc["evaluation_results"][-1]["score_details"]["score"] = -1.0
                counts["not evaluated"] += 1
            folder = root / "data" / "leaderboard" / developer / name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{uuid.UUID(int=int(rng.integers(0, 2**63)) << 64 | i)}.json").write_text(json.dumps(doc))
            counts["files"] += 1
        counts["models"] += 1
    return counts


def plain_loop(folder: Path) -> int:
    """The baseline: list the files the same way, then json.load each."""
    n = 0
    for path in sorted(folder.rglob("*")):
        if path.suffix == ".json" and path.is_file():
            with open(path, encoding="utf-8") as handle:
                json.load(handle)
            n += 1
    return n


def time_reads(folder: Path, repeats: int) -> tuple[list[float], list[float], object]:
    import jagged

    ours, base, dataset = [], [], None
    for _ in range(repeats):
        start = time.perf_counter()
        plain_loop(folder)
        base.append(time.perf_counter() - start)
        start = time.perf_counter()
        dataset = jagged.load(folder)
        ours.append(time.perf_counter() - start)
    return ours, base, dataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4500, help="models in the collection")
    parser.add_argument("--repeats", type=int, default=3, help="timed reads of each kind (median)")
    parser.add_argument("--no-report", action="store_true", help="skip the report")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-eee-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        counts = write_collection(root, args.files)
        size = sum(p.stat().st_size for p in root.rglob("*.json"))
        print(f"generated {counts['files']:,} files ({size / 1e6:.0f} MB) for {counts['models']:,} models in "
              f"{time.perf_counter() - started:.1f} s, from the shape of {SHAPE.name}")
        ours, base, dataset = time_reads(root, max(1, args.repeats))
        mine, plain = statistics.median(ours), statistics.median(base)
        print(f"jagged.load: {mine:.2f} s; plain json.load loop: {plain:.2f} s; ratio {mine / plain:.2f}x "
              f"(medians of {len(ours)})")
        scores = dataset.scores
        superseded = dataset.details.get("superseded", [])
        ties = sum("tie on retrieved_timestamp" in s for s in superseded)
        print(f"read {scores['model'].nunique():,} models x {scores['domain'].nunique()} domains "
              f"({len(scores):,} scores); superseded {len(superseded)} ({ties} ties; generated "
              f"{counts['superseded']} re-scrapes and {counts['ties']} ties); left out: "
              f"{'; '.join(dataset.details.get('left out', []))}")
        assert (scores["model"].nunique() == counts["models"]
                and len(superseded) == counts["superseded"] + counts["ties"])
        if args.no_report:
            return
        from jagged.report import jaggedness_report

        started = time.perf_counter()
        html = jaggedness_report(str(root), root / "report" / "eee.html", title="Leaderboard at scale")
        built = time.perf_counter() - started
        size = html.stat().st_size
        print(f"jagged report on {scores['model'].nunique():,} models: {size / 1e6:.2f} MB = "
              f"{size / REPORT_MAX_BYTES:.2f} x the 5 MB limit; written in {built:.1f} s")
        if size >= REPORT_MAX_BYTES:
            sys.exit(f"report is {size / 1e6:.2f} MB, over the 5 MB limit")


if __name__ == "__main__":
    main()
