"""Bootstrap intervals (jagged/stats/bootstrap.py): paired item resampling, its vectorised replicates, settings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import jagged
from jagged.analysis import AnalysisOptions, metrics_table
from jagged.cli import main
from jagged.stats import bootstrap as boot
from jagged.stats import replicates


def long_scores(rows: dict[str, list[tuple[str, float, float]]]) -> pd.DataFrame:
    records = [{"model": m, "domain": d, "score": s, "n_items": n} for m, v in rows.items() for d, s, n in v]
    return jagged.validate_scores(pd.DataFrame(records), "t", line_offset=None)


def items_frame(correct: np.ndarray, n_per_domain: int, models: list[str]) -> pd.DataFrame:
    n_items = correct.shape[0]
    return pd.DataFrame({
        "model": np.repeat(models, n_items),
        "domain": np.tile([f"d{i // n_per_domain}" for i in range(n_items)], len(models)),
        "item": np.tile([f"q{i}" for i in range(n_items)], len(models)),
        "correct": correct.T.ravel(),
    })


@pytest.fixture
def small_items():
    rng = np.random.default_rng(3)
    x = (rng.random((60, 3)) < np.repeat([0.9, 0.6, 0.4], 20)[:, None]).astype(float)
    x = np.column_stack([x, x[:, 0]])                       # model "D" answers exactly like "A"
    frame = items_frame(x, 20, ["A", "B", "C", "D"])
    return jagged.load(frame)


def test_bootstrap_is_deterministic_for_a_seed(small_items):
    a = boot.bootstrap_intervals(small_items.scores, small_items.items, n_boot=300, seed=7)
    b = boot.bootstrap_intervals(small_items.scores, small_items.items, n_boot=300, seed=7)
    c = boot.bootstrap_intervals(small_items.scores, small_items.items, n_boot=300, seed=8)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["cv_error_hi"], c["cv_error_hi"])


def test_resampling_is_paired_across_models(small_items):
    reps = boot.bootstrap_replicates(small_items.scores, small_items.items, n_boot=200, seed=1)
    a, d = list(reps.models).index("A"), list(reps.models).index("D")
    np.testing.assert_array_equal(reps.macro_score[:, a], reps.macro_score[:, d])
    np.testing.assert_array_equal(reps.cv_error[:, a], reps.cv_error[:, d])
    assert reps.macro_score[:, a].std() > 0
    # the parametric bootstrap cannot pair: identical aggregated rows get different draws
    par = boot.bootstrap_replicates(small_items.scores, None, n_boot=200, seed=1)
    assert not np.array_equal(par.macro_score[:, a], par.macro_score[:, d])


def test_vectorised_replicates_equal_a_per_replicate_loop(small_items):
    """The count-matrix product gives exactly what resampling the rows one replicate at a time gives.

    The three domains have 20 items each: one stream spawned from the seed draws them, replicate
    after replicate, domain after domain.
    """
    n_boot, seed = 25, 11
    reps = boot.bootstrap_replicates(small_items.scores, small_items.items, n_boot=n_boot, seed=seed)
    matrix = boot.item_matrix(small_items.items)
    stream = np.random.default_rng(seed).spawn(1)[0]
    draws = stream.integers(0, 20, size=(n_boot, len(matrix.domains), 20))
    items = small_items.items
    for r in range(n_boot):
        picked = []
        for d, domain in enumerate(matrix.domains):
            names = sorted(items.loc[items["domain"] == domain, "item"].unique(), key=lambda q: int(q[1:]))
            chosen = pd.DataFrame({"item": np.asarray(names)[draws[r, d]]})
            picked.append(chosen.merge(items, on="item"))
        sample = pd.concat(picked)
        s = sample.groupby(["model", "domain"])["correct"].mean().unstack()
        n = sample.groupby(["model", "domain"])["correct"].size().unstack()
        e = 1 - s
        noise = (e * (1 - e) / (n - 1)).sum(axis=1) * (3 - 1) / 9
        v = e.var(axis=1, ddof=0)
        squared_cv = (v - noise) / e.mean(axis=1) ** 2          # the corrected CV's square, before its floor
        np.testing.assert_allclose(reps.macro_score[r], s.mean(axis=1).to_numpy(), rtol=1e-12)
        np.testing.assert_allclose(reps.cv_error[r], squared_cv.to_numpy(), rtol=1e-10)


def test_dep_and_wedge_intervals(small_items):
    from jagged.stats.weights import resolve_profiles

    weights = resolve_profiles(small_items.scores, None, ("uniform", "items"))
    iv = boot.bootstrap_intervals(small_items.scores, small_items.items, weights=weights, n_boot=300, seed=2)
    uni = iv[iv["profile"] == "uniform"]
    assert (uni["wedge_lo"] == 0).all() and (uni["wedge_hi"] == 0).all()
    np.testing.assert_allclose(uni["dep_score_lo"], uni["macro_score_lo"], rtol=1e-12)
    table = metrics_table(small_items, AnalysisOptions(profiles=("uniform", "items"), bootstrap=300, seed=2))
    for stat in boot.INTERVAL_STATISTICS:
        assert {f"{stat}_lo", f"{stat}_hi"} <= set(table.columns)
        inside = (table[f"{stat}_lo"] <= table[stat] + 1e-12) & (table[stat] <= table[f"{stat}_hi"] + 1e-12)
        if stat != "cv_error":        # the cv interval is for the noise-free CV, see the docs
            assert inside.all(), stat


def test_incomplete_coverage_uses_only_items_the_model_has():
    rng = np.random.default_rng(0)
    x = (rng.random((40, 2)) < 0.6).astype(float)
    frame = items_frame(x, 20, ["A", "B"])
    frame = frame[~((frame["model"] == "B") & frame["item"].isin(["q0", "q1", "q25"]))]
    ds = jagged.load(frame.reset_index(drop=True))
    reps = boot.bootstrap_replicates(ds.scores, ds.items, n_boot=400, seed=0)
    assert np.isfinite(reps.macro_score).all()
    # the mean of the replicate macro scores is close to the observed one (no imputation drift)
    observed = ds.scores.groupby("model")["score"].mean().to_numpy()
    np.testing.assert_allclose(reps.macro_score.mean(axis=0), observed, atol=0.01)


def test_bad_settings():
    scores = long_scores({"A": [("x", 0.9, 100), ("y", 0.8, 50)]})
    with pytest.raises(jagged.JaggedInputError, match="interval level"):
        boot.bootstrap_intervals(scores, n_boot=10, ci=1.5)
    with pytest.raises(jagged.JaggedInputError, match="positive whole number"):
        boot.bootstrap_intervals(scores, n_boot=0)


def test_cli_options(tmp_path, shared_data):
    path = shared_data / "mmlu_pro_per_category.csv"
    out1, out2 = tmp_path / "a.csv", tmp_path / "b.csv"
    for out in (out1, out2):
        result = CliRunner().invoke(main, ["metrics", str(path), "--bootstrap", "200", "--seed", "3",
                                           "--ci", "0.9", "-o", str(out)])
        assert result.exit_code == 0, result.stderr
    a, b = pd.read_csv(out1), pd.read_csv(out2)
    pd.testing.assert_frame_equal(a, b)
    assert (a["interval_method"] == boot.METHOD_BINOMIAL).all()
    assert (a["cv_error_lo"] < a["cv_error_hi"]).all()
    none = CliRunner().invoke(main, ["metrics", str(path), "--bootstrap", "0"])
    assert none.exit_code == 0 and "cv_error_lo" not in none.stdout and "noise_share" in none.stdout
    bad = CliRunner().invoke(main, ["metrics", str(path), "--ci", "95"])
    assert bad.exit_code == 2 and "--ci" in bad.stderr
    help_text = CliRunner().invoke(main, ["metrics", "--help"]).stdout
    assert "--bootstrap B" in help_text and "default: 2000" in help_text and "default: 0.95" in help_text


# --------------------------------------------------------------------------- memory and chunks (issue 28/29)

def _one_item_domains(n_domains: int, n_models: int = 3) -> jagged.Dataset:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"model": np.repeat([f"m{i}" for i in range(n_models)], n_domains),
                          "domain": np.tile([f"d{j:05d}" for j in range(n_domains)], n_models),
                          "item": np.tile([f"q{j}" for j in range(n_domains)], n_models),
                          "correct": (rng.random(n_models * n_domains) < 0.7).astype(float)})
    return jagged.load(frame)


def test_the_bootstrap_never_holds_every_replicate_of_every_model_and_domain_at_once():
    """20,000 one-item domains × 3 models × 200 replicates: 96 MiB per B × M × D array, several of them before;
    now chunks of at most replicates.CELL_BUDGET cells, the bootstrap (with the relative jaggedness) under 100 MiB."""
    import tracemalloc

    from jagged.stats.decomposition import decompose, replicate_statistic

    ds = _one_item_domains(20_000)
    statistics = {"relative_jaggedness": replicate_statistic(decompose(ds.scores))}
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        iv = boot.bootstrap_intervals(ds.scores, ds.items, n_boot=200, seed=0, statistics=statistics)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2 ** 20, f"peak {peak / 2 ** 20:.0f} MiB"
    assert iv["macro_score_lo"].notna().all() and iv["relative_jaggedness_hi"].notna().all()


@pytest.mark.parametrize("route", ["paired", "binomial", "partial"])
def test_the_same_seed_gives_the_same_intervals_however_the_replicates_are_chunked(monkeypatch, small_items, route):
    items = small_items.items
    if route == "partial":                               # partial credit: the Σ c·x² sums too
        items = items.assign(correct=np.where(items["item"].isin(["q1", "q22"]), 0.5, items["correct"]))
    data = jagged.load(items)
    scores, items = data.scores, (None if route == "binomial" else data.items)
    from jagged.stats.weights import resolve_profiles

    weights = resolve_profiles(scores, None, ("uniform", "items"))
    whole = boot.bootstrap_intervals(scores, items, weights=weights, n_boot=150, seed=5)
    monkeypatch.setattr(replicates, "CELL_BUDGET", 7)     # 150 chunks of one replicate
    monkeypatch.setattr(boot, "_BLOCK_ENTRIES", 30)      # and draws of a replicate at a time
    pd.testing.assert_frame_equal(boot.bootstrap_intervals(scores, items, weights=weights, n_boot=150, seed=5),
                                  whole)
