"""The flaw model (jagged.stats.flaw): its time against the 2PL fit's, and how well it ranks, counts and flags.

Parts (``--part`` picks some; all but ``redux`` by default):

* ``speed``: the bundled MMLU-Pro item table (29 models × 12,032 items, choices and keys),
  each the best of ``--repeat`` runs, wall clock and process CPU time, one BLAS thread (as
  the report): :func:`jagged.stats.irt.fit_2pl` (the baseline) and
  :func:`jagged.stats.flaw.flaw_posterior` given that fit, and their ratio.
* ``mmlu``: the ranking against the 31 MMLU-Pro items whose key letter was revised between
  releases (tests/data/mmlu_pro_items.csv.gz): AUC and precision@31 of P(flawed) and of the
  one-line rule (1 − p_correct, ties broken by how many models agree on one wrong option);
  the within-domain AUC (pairs of a revised and an unrevised item of one domain) against the
  retired classical score's, measured before it was retired; within and outside math.
* ``simulation``: tests/irt_simulation.py ``simulate_benchmark``, the class of the held-out
  annotated sets (10 models × 30 domains, 9 % flawed; 14 × 57, 6.5 %; 120 × 30; hard sound
  domains; one domain 57 % flawed; flaws of several kinds, about half visible), over
  ``--seeds``: precision among the top 100 and AUC of P(flawed) and of the one-line rule,
  expected flawed against planted with the total's interval, the share of domains whose
  interval holds the planted count, the hard domains' share of miskeyed items shown, the
  rank correlation of the estimated flawed share with accuracy; and a model that memorised
  80 % of the keys: its z and whether it and honest models are flagged.
* ``redux``: real expert annotations with per-item responses, when ``--redux DIR`` points at
  a copy of github.com/aryopg/mmlu-redux (its ``outputs/analyses`` folder: 10 HELM models ×
  30 subjects; ``outputs/multi_expert_helm``: 14 models × 57 subjects; one CSV per subject
  with the models' letters, ``groundtruth_answer`` and ``error_type``; nothing of it is
  kept): the held-out criteria of issue 31 on them.

Run: ``.venv/bin/python benchmarks/bench_flaw.py [--part speed,mmlu,simulation,redux] [--repeat 3]
[--seeds 0,1,2] [--redux DIR]``. Timings on a shared machine vary; compare the ratios.
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
#: The retired classical suspicion score on MMLU-Pro's revised keys, measured at 589efc6 (before it was retired):
#: AUC over all items and within domains.
CLASSICAL_AUC, CLASSICAL_WITHIN_DOMAIN_AUC = 0.927, 0.9332
#: Columns of an mmlu-redux CSV that are not a model's answers.
REDUX_META = {"question", "choices", "groundtruth_answer", "answer", "error_type", "source", "correct_answer",
              "potential_reason", "binary_error_type"}


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
    from jagged.stats.information import blas_threads_for, matrix_cells
    from jagged.stats.irt import fit_2pl

    with blas_threads_for(matrix_cells(table)):
        fit, fit_wall, fit_cpu = timed(lambda: fit_2pl(table), repeat)
        _, wall, cpu = timed(lambda: flaw_posterior(table, fit), repeat)
    print(f"MMLU-Pro ({table['model'].nunique()} models x {table['item'].nunique():,} items), best of {repeat}:")
    print(f"  fit_2pl        {fit_wall:6.2f} s wall {fit_cpu:6.2f} s CPU")
    print(f"  flaw_posterior {wall:6.2f} s wall {cpu:6.2f} s CPU (with the key-agreement check)")
    print(f"  ratio flaw_posterior / fit_2pl: {wall / fit_wall:.2f} wall, {cpu / fit_cpu:.2f} CPU")


def part_mmlu(table: pd.DataFrame) -> None:
    from test_flaw import within_domain_auc

    from jagged.stats.flaw import flaw_posterior

    revised = revised_items()
    post = flaw_posterior(table).items.set_index("item")
    post.index = post.index.astype(str)
    rule = one_line_rule(table.assign(item=table["item"].astype(str)))
    print(f"MMLU-Pro, {len(revised)} revised keys ({(post['posterior'] > 0.5).mean():.1%} of items at P > 0.5):")
    for name, score in (("P(flawed)", post["log_odds"]), ("one-line rule", rule)):
        auc, p31 = metrics(score, revised, len(revised))
        print(f"  {name:14s} AUC {auc:.3f}  precision@31 {p31:.3f}")
    print(f"  classical (retired; measured at 589efc6) AUC {CLASSICAL_AUC:.3f}")
    domain = post["domain"].astype(str)
    within = within_domain_auc(post["log_odds"], domain, revised)
    verdict = "holds" if within >= CLASSICAL_WITHIN_DOMAIN_AUC else "not met"
    print(f"  within-domain AUC: P(flawed) {within:.4f} against the classical score's "
          f"{CLASSICAL_WITHIN_DOMAIN_AUC:.4f} ({verdict})")
    for label, keep in (("within math", domain == "math"), ("outside math", domain != "math")):
        items = domain.index[keep]
        pos = revised & set(items)
        auc = metrics(post["log_odds"].reindex(items), pos, len(pos))[0]
        print(f"  {label} ({len(pos)} revised of {len(items):,}): AUC {auc:.3f}")


def evaluate(table: pd.DataFrame, flawed: set, post) -> dict[str, float]:
    """The held-out criteria of issue 31 for one benchmark with known flawed items."""
    from scipy.stats import spearmanr

    items = post.items.set_index("item")
    items.index = items.index.astype(str)
    auc, p100 = metrics(items["log_odds"], flawed, 100)
    _, rule100 = metrics(one_line_rule(table.assign(item=table["item"].astype(str))), flawed, 100)
    dom = post.domains.set_index("domain")
    true = pd.Series(items.index.isin(list(flawed)), index=items.index).groupby(items["domain"]).sum()
    true = true.reindex(dom.index).fillna(0)
    inside = ((dom["lower"] <= true) & (true <= dom["upper"])).mean()
    rho = spearmanr(dom["expected_flawed"] / dom["n_items"], dom["accuracy"]).statistic
    t = post.total
    return {"items": len(items), "flawed": len(flawed), "expected": t["expected_flawed"], "lower": t["lower"],
            "upper": t["upper"], "ratio": t["expected_flawed"] / max(len(flawed), 1), "shown": t["visible"],
            "domains_held": inside, "rho_share_accuracy": rho, "auc": auc, "p100": p100, "rule_p100": rule100,
            "flagged_models": int(post.models["flagged"].sum()), "models": len(post.models)}


def line(name: str, r: dict[str, float]) -> str:
    return (f"  {name}: expected flawed {r['expected']:,.0f} [{r['lower']:,.0f}, {r['upper']:,.0f}] against "
            f"{r['flawed']:,} ({r['ratio']:.2f}x; {r['shown']:,.0f} shown in responses); per-domain 90% intervals "
            f"hold {r['domains_held']:.0%}; rank corr(share, accuracy) {r['rho_share_accuracy']:+.2f}; AUC "
            f"{r['auc']:.3f}; P@100 {r['p100']:.2f} (rule {r['rule_p100']:.2f}); flagged models "
            f"{r['flagged_models']} of {r['models']}")


def part_simulation(seeds: list[int]) -> None:
    from irt_simulation import simulate_benchmark
    from scipy.stats import spearmanr

    from jagged.stats.flaw import flaw_posterior

    sets = {"10 models x 30 domains (9 %)": (10, 30, 0.09), "14 models x 57 domains (6.5 %)": (14, 57, 0.065),
            "120 models x 30 domains (9 %)": (120, 30, 0.09)}
    print("Simulated annotated benchmarks (tests/irt_simulation.py simulate_benchmark):")
    for name, (n_models, n_domains, share) in sets.items():
        for seed in seeds:
            table, truth = simulate_benchmark(n_models=n_models, n_domains=n_domains, flawed_share=share, seed=seed)
            post = flaw_posterior(table)
            print(line(f"{name}, seed {seed}", evaluate(table, set(truth.loc[truth["flawed"], "item"]), post)))
            dom = post.domains.set_index("domain")
            hard, hot = dom[dom.index.str.startswith("hard")], dom[dom.index.str.startswith("hot")].iloc[0]
            planted = truth.groupby("domain")["flawed"].mean().reindex(dom.index)
            print(f"    hard sound domains (accuracy {hard['accuracy'].mean():.2f}): miskeyed shown "
                  f"{(hard['visible'] / hard['n_items']).mean():.1%} of items; the 57 % domain (accuracy "
                  f"{hot['accuracy']:.2f}): {hot['visible']:.0f} shown; planted share's rank corr with accuracy "
                  f"{spearmanr(planted, dom['accuracy']).statistic:+.2f}")
        table, _ = simulate_benchmark(n_models=n_models, n_domains=n_domains, flawed_share=share, memoriser=0.8,
                                      seed=max(seeds) + 1)
        models = flaw_posterior(table).models.set_index("model")
        m = models.loc["model-000"]
        print(f"    a model with 80 % of the keys memorised: agrees {m['agree']:.0%} (peers {m['agree_peers']:.0%}), "
              f"z {m['z']:+.1f}, flagged {bool(m['flagged'])}; honest models flagged "
              f"{int(models['flagged'].drop('model-000').sum())} of {len(models) - 1}")


def redux_table(folder: Path) -> tuple[pd.DataFrame, set]:
    """An item table (model, domain, item, correct, choice, key, n_options) and the annotated items of one folder."""
    rows, flawed = [], set()
    for path in sorted(folder.glob("*.csv")):
        frame = pd.read_csv(path)
        if "error_type" not in frame or "groundtruth_answer" not in frame:
            continue
        models = [c for c in frame.columns if c not in REDUX_META and "_" in c
                  and not c.startswith(("majority", "gt_", "entropy", "pred_"))]
        key = np.array(list("ABCD"))[frame["groundtruth_answer"].astype(int).to_numpy()]
        items = np.array([f"{path.stem}/{k}" for k in range(len(frame))], dtype=object)
        flawed |= set(items[frame["error_type"].astype(str).str.lower().to_numpy() != "ok"])
        for model in models:
            choice = frame[model].astype("string").str.strip()
            choice = choice.where(choice.isin(list("ABCD")), None)
            rows.append(pd.DataFrame({"model": model, "domain": path.stem, "item": items, "choice": choice,
                                      "key": key, "n_options": 4}))
    table = pd.concat(rows, ignore_index=True)
    table["correct"] = (table["choice"] == table["key"]).fillna(False).astype(float)
    return table, flawed


def part_redux(folder: Path) -> None:
    from jagged.stats.flaw import flaw_posterior

    print(f"MMLU-Redux expert annotations with HELM per-item answers ({folder}):")
    for sub in ("outputs/analyses", "outputs/multi_expert_helm"):
        if not (folder / sub).is_dir():
            print(f"  {sub}: not found")
            continue
        table, flawed = redux_table(folder / sub)
        post = flaw_posterior(table)
        print(line(f"{sub} ({table['model'].nunique()} models, {table['domain'].nunique()} subjects)",
                   evaluate(table, flawed, post)))
        flagged = post.models[post.models["flagged"]]
        for r in flagged.itertuples():
            print(f"    flagged: {r.model} agrees {r.agree:.0%} with likely wrong keys (peers {r.agree_peers:.0%}, "
                  f"z {r.z:+.1f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="speed,mmlu,simulation")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--redux", type=Path, default=None, help="a copy of github.com/aryopg/mmlu-redux")
    args = parser.parse_args()
    parts = set(args.part.split(","))
    table = mmlu_table() if parts & {"speed", "mmlu"} else None
    if "speed" in parts:
        part_speed(table, args.repeat)
    if "mmlu" in parts:
        part_mmlu(table)
    if "simulation" in parts:
        part_simulation([int(s) for s in args.seeds.split(",")])
    if "redux" in parts or args.redux is not None:
        if args.redux is None:
            parser.error("--part redux needs --redux DIR")
        part_redux(args.redux)


if __name__ == "__main__":
    main()
