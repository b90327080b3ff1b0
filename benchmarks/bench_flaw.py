"""The flawed-item posterior (jagged.stats.flaw): its time against the 2PL fit's and the audit's, and its ranking.

Parts (``--part`` picks some; all by default):

* ``speed``: the bundled MMLU-Pro item table (29 models × 12,032 items, choices and
  keys). Timed in the same run, each the best of ``--repeat`` runs, wall clock and
  process CPU time: :func:`jagged.stats.irt.fit_2pl` (the baseline),
  :func:`jagged.stats.flaw.flaw_posterior` given that fit, and the classical audit
  :func:`jagged.stats.item_audit.item_audit`. Printed: the seconds and the posterior's
  time as a ratio of each baseline. Target (issue 19): the posterior within ~2 s on an
  idle machine, where fit_2pl takes ~1.3 s (a ratio of about 1.5 or less).
* ``mmlu``: the ranking against the 31 MMLU-Pro items whose key letter was revised
  between releases (tests/data/mmlu_pro_items.csv.gz): AUC and precision@31 of the
  posterior, the classical suspicion and the one-line rule (1 − p_correct, ties broken
  by how many models agree on one wrong option); the posterior against the classical
  score within math (where 23 of the 31 are) and outside it, and a paired bootstrap of
  the AUC difference (positives and negatives resampled, ``--boot`` draws).
* ``simulation``: tests/irt_simulation.py ``simulate_benchmark``, the class of issue
  19's held-out annotated sets (10 models × 3,000 items, 9 % flawed; 14 × 5,700,
  6.5 %; one subject 57 % flawed), with and without ``n_options``, over ``--seeds``:
  precision among the top 100 and AUC of the posterior, the one-line rule and the
  classical suspicion.

Run: ``.venv/bin/python benchmarks/bench_flaw.py [--part speed,mmlu,simulation] [--repeat 3]
[--seeds 0,1,2] [--boot 1000]``.
Timings on a shared machine vary; compare the ratios, which are measured in one run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
REVISED_OPTIONS = {2129, 2253, 2453, 3983, 5457, 5664, 5666, 6921, 8410, 8582, 8584}


def one_line_rule(table: pd.DataFrame) -> pd.Series:
    """1 − p_correct, ties broken by how many models agree on one wrong option."""
    p = table.groupby("item")["correct"].mean()
    agree = table[table["correct"] < 1].groupby(["item", "choice"]).size().groupby("item").max()
    n = table.groupby("item").size()
    return (1 - p) + agree.reindex(p.index, fill_value=0) / (n + 1) ** 2


def metrics(score: pd.Series, positives: set, k: int) -> tuple[float, float]:
    """(AUC, precision among the k highest) of a score (higher = more suspicious)."""
    from irt_simulation import precision_at
    from item_simulation import recall_and_auc

    score = score.copy()
    score.index = score.index.astype(str)
    _, auc = recall_and_auc(score, np.asarray(sorted(positives), dtype=object))
    return auc, precision_at(score, positives, k)


def timed(fn, repeat: int):
    """(result, best wall seconds, best CPU seconds) of ``repeat`` calls."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return out, min(walls), min(cpus)


def mmlu_table() -> pd.DataFrame:
    from jagged.readers import items as items_module

    return items_module.load_bundled_items().items


def revised_items() -> set[str]:
    items = pd.read_csv(ROOT / "tests" / "data" / "mmlu_pro_items.csv.gz")
    return {str(i) for i in set(items.loc[items["answer_key_differs_across_files"] == 1, "item_id"])
            - REVISED_OPTIONS}


def part_speed(table: pd.DataFrame, repeat: int) -> None:
    from jagged.stats.flaw import flaw_posterior
    from jagged.stats.irt import fit_2pl
    from jagged.stats.item_audit import item_audit

    fit, fit_wall, fit_cpu = timed(lambda: fit_2pl(table), repeat)
    post, wall, cpu = timed(lambda: flaw_posterior(table, fit), repeat)
    _, audit_wall, audit_cpu = timed(lambda: item_audit(table), repeat)
    print(f"MMLU-Pro ({table['model'].nunique()} models x {table['item'].nunique():,} items), best of {repeat}:")
    print(f"  fit_2pl        {fit_wall:6.2f} s wall {fit_cpu:6.2f} s CPU")
    print(f"  flaw_posterior {wall:6.2f} s wall {cpu:6.2f} s CPU ({post.iterations} EM steps, "
          f"converged {post.converged})")
    print(f"  item_audit     {audit_wall:6.2f} s wall {audit_cpu:6.2f} s CPU (calls the posterior too, when in memory)")
    print(f"  ratio posterior / fit_2pl: {wall / fit_wall:.2f} wall, {cpu / fit_cpu:.2f} CPU "
          f"(target <= ~1.5: ~2 s against ~1.3 s idle)")
    print(f"  ratio posterior / item_audit: {wall / audit_wall:.2f} wall, {cpu / audit_cpu:.2f} CPU")


def part_mmlu(table: pd.DataFrame, boot: int = 1000) -> None:
    from jagged.stats.flaw import flaw_posterior
    from jagged.stats.item_audit import item_audit

    revised = revised_items()
    post = flaw_posterior(table)
    rows = {"posterior": post.items.set_index("item")["posterior"],
            "classical suspicion": item_audit(table).set_index("item")["suspicion"],
            "one-line rule": one_line_rule(table.assign(item=table["item"].astype(str)))}
    print(f"MMLU-Pro, {len(revised)} revised keys ({(post.items['posterior'] > 0.5).mean():.1%} of items "
          "given posterior > 0.5):")
    for name, score in rows.items():
        auc, p31 = metrics(score, revised, len(revised))
        print(f"  {name:20s} AUC {auc:.3f}  precision@31 {p31:.3f}")
    ours, classical = (rows[k].set_axis(rows[k].index.astype(str)) for k in ("posterior", "classical suspicion"))
    domain = post.items.set_index("item")["domain"].astype(str)
    for label, keep in (("within math", domain == "math"), ("outside math", domain != "math")):
        items = domain.index[keep]
        pos = revised & set(items)
        print(f"  {label} ({len(pos)} revised of {len(items):,}): AUC posterior "
              f"{metrics(ours.reindex(items), pos, len(pos))[0]:.3f}, classical "
              f"{metrics(classical.reindex(items), pos, len(pos))[0]:.3f}")
    diff, lo, hi, share = auc_difference(ours, classical.reindex(ours.index), revised, boot)
    print(f"  AUC posterior - classical {diff:+.4f}, 95 % bootstrap interval [{lo:+.4f}, {hi:+.4f}], "
          f"posterior ahead in {share:.0%} of {boot} draws")


def auc_difference(a: pd.Series, b: pd.Series, positives: set, boot: int,
                   seed: int = 0) -> tuple[float, float, float, float]:
    """AUC(a) − AUC(b) on the same items, its paired bootstrap 95 % interval and the share of draws above 0."""
    from scipy.stats import rankdata

    y = a.index.isin(list(positives))
    a, b = a.to_numpy(dtype=float), b.to_numpy(dtype=float)

    def auc(score: np.ndarray, yy: np.ndarray) -> float:
        r = rankdata(score)
        n1 = yy.sum()
        return float((r[yy].sum() - n1 * (n1 + 1) / 2) / (n1 * (len(yy) - n1)))

    rng = np.random.default_rng(seed)
    pi, ni = np.flatnonzero(y), np.flatnonzero(~y)
    yy = np.r_[np.ones(len(pi), dtype=bool), np.zeros(len(ni), dtype=bool)]
    draws = np.empty(boot)
    for k in range(boot):
        idx = np.concatenate([rng.choice(pi, len(pi)), rng.choice(ni, len(ni))])
        draws[k] = auc(a[idx], yy) - auc(b[idx], yy)
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return auc(a, y) - auc(b, y), float(lo), float(hi), float((draws > 0).mean())


def part_simulation(seeds: list[int]) -> None:
    from irt_simulation import simulate_benchmark

    from jagged.stats.flaw import flaw_posterior
    from jagged.stats.item_audit import item_audit

    sets = {"10 models x 3,000 (9 %)": (10, 3000, 30, 0.09), "14 models x 5,700 (6.5 %)": (14, 5700, 57, 0.065)}
    print("Simulated annotated sets (tests/irt_simulation.py simulate_benchmark): top-100 precision / AUC")
    for name, (n_models, n_items, n_domains, share) in sets.items():
        for with_n in (True, False):
            res: dict[str, list[tuple[float, float]]] = {"posterior": [], "one-line rule": [], "classical": []}
            for seed in seeds:
                table, truth = simulate_benchmark(n_models=n_models, n_items=n_items, n_domains=n_domains,
                                                  flawed_share=share, with_n_options=with_n, seed=seed)
                planted = set(truth.loc[truth["flawed"], "item"])
                res["posterior"].append(metrics(flaw_posterior(table).items.set_index("item")["posterior"],
                                                planted, 100))
                res["one-line rule"].append(metrics(one_line_rule(table), planted, 100))
                res["classical"].append(metrics(item_audit(table).set_index("item")["suspicion"], planted, 100))
            cells = "  ".join(f"{k} P@100 {np.mean([p for _, p in v]):.2f} AUC {np.mean([a for a, _ in v]):.3f}"
                              for k, v in res.items())
            print(f"  {name}, {'with' if with_n else 'without'} n_options (seeds {seeds}): {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="speed,mmlu,simulation")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--boot", type=int, default=1000)
    args = parser.parse_args()
    parts = set(args.part.split(","))
    table = mmlu_table() if parts & {"speed", "mmlu"} else None
    if "speed" in parts:
        part_speed(table, args.repeat)
    if "mmlu" in parts:
        part_mmlu(table, args.boot)
    if "simulation" in parts:
        part_simulation([int(s) for s in args.seeds.split(",")])


if __name__ == "__main__":
    main()
