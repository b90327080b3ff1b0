"""The report's intervals of item-level results out of core: the paired bootstrap on the item matrix streamed out
of DuckDB (the same intervals as in memory), the Poisson bootstrap beyond the cell budget.

Which bootstrap runs and its record (``interval_method``), the analysis layer routing an out-of-core Parquet
input, and the Poisson bootstrap's coverage on simulated data with known truth beside the paired bootstrap.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import jagged
from jagged.readers import items as items_module
from jagged.stats import poisson_bootstrap
from jagged.stats.bootstrap import METHOD_BINOMIAL, METHOD_ITEMS, bootstrap_intervals
from jagged.stats.poisson_bootstrap import METHOD_POISSON

ALPHAS = ((4.0, 2.0), (2.0, 3.0))  # Beta(α, β) of the item difficulties of the two domains


def simulate(n_models: int, n_items: int, seed: int) -> tuple[pd.DataFrame, float]:
    """Every model answers its own draw of items (p ~ Beta per domain, x ~ Bernoulli(p)); the true macro score."""
    rng = np.random.default_rng(seed)
    frames = []
    for d, (a, b) in enumerate(ALPHAS):
        p = rng.beta(a, b, size=(n_models, n_items))
        x = (rng.random((n_models, n_items)) < p).astype(float)
        frames.append(pd.DataFrame({"model": np.repeat([f"m{m:03d}" for m in range(n_models)], n_items),
                                    "domain": f"d{d}", "item": np.tile([f"d{d}-{j:03d}" for j in range(n_items)],
                                                                        n_models),
                                    "correct": x.ravel()}))
    return pd.concat(frames, ignore_index=True), float(np.mean([a / (a + b) for a, b in ALPHAS]))


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    """The simulated table as one Parquet file: read in memory, and out of core under a 3-row budget."""
    table, truth = simulate(300, 60, seed=5)
    path = tmp_path_factory.mktemp("poisson") / "items.parquet"
    table.to_parquet(path, index=False)
    in_memory = jagged.load(path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(items_module, "IN_MEMORY_MAX_ROWS", 3)
        out_of_core = jagged.load(path)
    return in_memory, out_of_core, truth


def test_out_of_core_items_within_the_budget_get_the_paired_intervals_of_the_table_in_memory(lake):
    """The item matrix streamed out of DuckDB is the matrix of the table (items in name order): the same intervals."""
    in_memory, out_of_core, _ = lake
    paired = bootstrap_intervals(in_memory.scores, in_memory.items, n_boot=200, seed=3)
    streamed = bootstrap_intervals(out_of_core.scores, None, n_boot=200, seed=3, source=out_of_core.item_path)
    assert set(streamed["interval_method"]) == {METHOD_ITEMS}
    pd.testing.assert_frame_equal(streamed, paired)
    table = pd.DataFrame({"model": ["a"], "domain": ["d"], "item": ["i"], "correct": [1.0]})
    scores = table.assign(score=1.0, n_items=1.0)[["model", "domain", "score", "n_items"]]
    assert set(bootstrap_intervals(scores, table.iloc[:0], n_boot=5)["interval_method"]) == {METHOD_BINOMIAL}


def test_out_of_core_parquet_beyond_the_budget_gets_poisson_intervals_covering_like_the_paired(lake, monkeypatch):
    """300 models with known truth: the 95% interval of the macro score covers it about 95% of the time with the
    Poisson bootstrap (out of core beyond the cell budget, in DuckDB) and with the paired bootstrap."""
    in_memory, out_of_core, truth = lake
    monkeypatch.setattr(poisson_bootstrap, "MATRIX_CELLS", 300 * 120 - 1)
    assert in_memory.items is not None and out_of_core.items is None and out_of_core.item_path is not None
    n_boot, ci = 400, 0.95
    paired = bootstrap_intervals(in_memory.scores, in_memory.items, n_boot=n_boot, seed=1, ci=ci)
    poisson = bootstrap_intervals(out_of_core.scores, out_of_core.items, n_boot=n_boot, seed=1, ci=ci,
                                  source=out_of_core.item_path)
    assert set(paired["interval_method"]) == {METHOD_ITEMS}
    assert set(poisson["interval_method"]) == {METHOD_POISSON}
    assert list(poisson["model"]) == list(paired["model"]) == sorted(in_memory.scores["model"].unique())
    cover = {}
    for name, iv in (("paired", paired), ("poisson", poisson)):
        cover[name] = float(((iv["macro_score_lo"] <= truth) & (truth <= iv["macro_score_hi"])).mean())
    width = {name: float((iv["macro_score_hi"] - iv["macro_score_lo"]).mean())
             for name, iv in (("paired", paired), ("poisson", poisson))}
    print(f"coverage of the 95% interval: Poisson {cover['poisson']:.3f}, paired {cover['paired']:.3f}; "
          f"mean width {width['poisson']:.4f} vs {width['paired']:.4f}")
    # binomial standard error of a coverage over 300 models: 0.013
    assert abs(cover["poisson"] - ci) < 0.04 and abs(cover["paired"] - ci) < 0.04
    assert abs(cover["poisson"] - cover["paired"]) < 0.05
    assert width["poisson"] == pytest.approx(width["paired"], rel=0.1)
    # the per-model intervals agree: the same data, two resampling schemes of the same items
    np.testing.assert_allclose(poisson["macro_score_lo"], paired["macro_score_lo"], atol=0.03)
    np.testing.assert_allclose(poisson["macro_score_hi"], paired["macro_score_hi"], atol=0.03)


def test_the_analysis_routes_an_out_of_core_input_by_its_size(lake, monkeypatch):
    from jagged.analysis import metrics_table
    from jagged.options import AnalysisOptions

    in_memory, out_of_core, _ = lake
    memory = metrics_table(in_memory, AnalysisOptions(bootstrap=50, seed=2))
    pd.testing.assert_frame_equal(metrics_table(out_of_core, AnalysisOptions(bootstrap=50, seed=2)), memory)
    monkeypatch.setattr(poisson_bootstrap, "MATRIX_CELLS", 1000)
    lake_table = metrics_table(out_of_core, AnalysisOptions(bootstrap=50, seed=2))
    assert set(memory["interval_method"]) == {METHOD_ITEMS}
    assert set(lake_table["interval_method"]) == {METHOD_POISSON}
    assert lake_table["macro_score_lo"].notna().all() and (lake_table["macro_score_lo"] <= lake_table["macro_score"]
                                                           ).mean() > 0.9
