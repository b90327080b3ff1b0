"""The bifactor 2PL (jagged.stats.bifactor): recovery on simulations with known structure, and the `mirt` package."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from jagged.errors import JaggedInputError
from jagged.stats import bifactor as bf


def simulate(n_models: int, sizes: tuple[int, ...], own: tuple[float, ...], *, seed: int = 0,
             missing: float = 0.0) -> tuple[pd.DataFrame, dict]:
    """An item table from the bifactor 2PL: general slopes U(0.8, 1.6), domain d's slopes own[d] × U(0.7, 1.3)."""
    rng = np.random.default_rng(seed)
    dom = np.repeat(np.arange(len(sizes)), sizes)
    # the factors (and a noise column e) centred and orthonormal in the sample: the true loadings and
    # correlations are those of the models drawn
    f = rng.standard_normal((n_models, 2 + len(sizes)))
    f = np.linalg.qr(f - f.mean(0))[0] * np.sqrt(n_models)
    g, s = f[:, 0], f[:, 1:-1]
    a = rng.uniform(0.8, 1.6, len(dom))
    b = np.asarray(own)[dom] * rng.uniform(0.7, 1.3, len(dom))
    c = rng.normal(0, 1, len(dom))
    y = (rng.random((n_models, len(dom))) < expit(a * g[:, None] + b * s[:, dom] + c)).astype(float)
    m, i = np.nonzero(rng.random(y.shape) >= missing)
    table = pd.DataFrame({"model": [f"m{k:03d}" for k in m], "domain": [f"d{k}" for k in dom[i]],
                          "item": [f"i{k:03d}" for k in i], "correct": y[m, i]})
    return table, {"a": a, "b": b, "g": g, "s": s, "e": f[:, -1], "dom": dom}


def true_omega(lg: np.ndarray, ls: np.ndarray, dom: np.ndarray) -> tuple[np.ndarray, float]:
    """ω_h per domain and for the test from the implied covariance matrix Λ Λᵀ + Ψ (independent of bf.omega)."""
    d = dom.max() + 1
    lam = np.zeros((len(lg), d + 1))
    lam[:, 0], lam[np.arange(len(lg)), 1 + dom] = lg, ls
    sigma = lam @ lam.T + np.diag(1 - lg ** 2 - ls ** 2)
    per = np.array([lg[dom == k].sum() ** 2 / sigma[np.ix_(dom == k, dom == k)].sum() for k in range(d)])
    return per, lg.sum() ** 2 / sigma.sum()


@pytest.fixture(scope="module")
def strong():
    """400 models, 3 domains of 20 items; domain d2 has a strong own factor, d0 and d1 moderate ones."""
    table, truth = simulate(400, (20, 20, 20), (0.8, 0.8, 2.0), seed=1, missing=0.02)
    return table, truth, bf.fit_bifactor(table, draws=200, boot=400)


def test_loadings_and_omega_are_recovered(strong):
    _, truth, fit = strong
    items = fit.items.sort_values("item")
    tg, ts = bf.standardised(truth["a"], truth["b"])
    # stated tolerances: mean absolute error of the standardised loadings per item (400 models: sampling
    # error about 0.05 per loading), and of their domain means
    lg, ls = items["general_loading"].to_numpy(), items["specific_loading"].to_numpy()
    assert np.abs(lg - tg).mean() < 0.08 and np.abs(ls - ts).mean() < 0.12
    for est, true, tol in ((lg, tg, 0.08), (ls, ts, 0.10)):
        assert np.abs(np.bincount(truth["dom"], weights=est - true) / 20).max() < tol
    # SEs are of the size of the errors (not 10 times smaller or larger)
    ratio = np.abs(items["general_loading"].to_numpy() - tg) / items["se_general_loading"].to_numpy()
    assert 0.3 < np.median(ratio) < 1.5
    per, test = true_omega(tg, ts, truth["dom"])
    dom = fit.domains.set_index("domain")
    assert np.abs(dom["omega_h"].to_numpy() - per).max() < 0.08
    assert abs(fit.omega_h - test) < 0.05
    assert fit.omega_h_lo <= fit.omega_h <= fit.omega_h_hi
    # the strong domain's own share is told apart from the weak ones' by the intervals
    assert dom.loc["d2", "omega_s_lo"] > dom.loc[["d0", "d1"], "omega_s_hi"].max()
    assert np.allclose(dom[["omega_h", "omega_s", "rest"]].sum(axis=1), 1.0)
    scores = fit.scores.pivot(index="model", columns="factor", values="score").sort_index()
    assert np.corrcoef(scores["general"], truth["g"])[0, 1] > 0.85
    assert np.corrcoef(scores["d2"], truth["s"][:, 2])[0, 1] > 0.85


def test_omega_matches_the_covariance_definition():
    rng = np.random.default_rng(3)
    dom = np.repeat([0, 1, 2], [4, 6, 5])
    lg, ls = rng.uniform(0.3, 0.7, 15), rng.uniform(0.0, 0.5, 15)
    per, test = true_omega(lg, ls, dom)
    oh, os_, oh_test = bf.omega(lg, ls, np.array([0, 4, 10, 15]))
    assert np.allclose(oh, per) and np.isclose(oh_test, test)
    spec = np.array([ls[dom == k].sum() ** 2 for k in range(3)])
    sigma = np.outer(lg, lg) + np.outer(ls, ls) + np.diag(1 - lg ** 2 - ls ** 2)
    totals = np.array([sigma[np.ix_(dom == k, dom == k)].sum() for k in range(3)])
    assert np.allclose(os_, spec / totals)


def test_external_index_is_recovered_raw_and_without_the_general_part(strong):
    _, truth, fit = strong
    rng = np.random.default_rng(7)
    basis = np.column_stack([np.ones(len(truth["g"])), truth["g"], truth["s"], truth["e"]])
    noise = rng.standard_normal(len(truth["g"]))
    noise -= basis @ np.linalg.lstsq(basis, noise, rcond=None)[0]  # uncorrelated with every factor in the sample
    index = 0.6 * truth["g"] + 0.6 * truth["s"][:, 2] + 0.5 * truth["e"]
    external = pd.DataFrame({"model": [f"m{k:03d}" for k in range(len(index))], "index": index,
                             "noise": noise})
    ext = bf.external_correlations(fit, external, boot=1000).set_index(["factor", "column", "residual"])
    sd = np.sqrt(0.6 ** 2 * 2 + 0.5 ** 2)
    for key, true in {("general", "index", False): 0.6 / sd, ("d2", "index", True): 0.6 / sd}.items():
        row = ext.loc[key]
        assert abs(row["r"] - true) < 0.12 and row["lo"] < true < row["hi"]
    for d in ("d0", "d1"):  # no own-factor link: small (the domain EAPs carry a little of g)
        assert abs(ext.loc[(d, "index", True), "r"]) < 0.15
    unrelated = ext.xs("noise", level="column")
    assert ((unrelated["lo"] < 0) & (unrelated["hi"] > 0)).all()
    assert (ext["n_models"] == 400).all()


def test_few_models_give_wide_intervals_not_findings():
    # 15 models, no domain factor at all: nothing domain-specific may be claimed
    table, truth = simulate(15, (20, 20, 20), (0.0, 0.0, 0.0), seed=5)
    fit = bf.fit_bifactor(table, draws=200, boot=400)
    external = pd.DataFrame({"model": [f"m{k:03d}" for k in range(15)], "index": truth["g"]})
    ext = bf.external_correlations(fit, external, boot=1000)
    own = ext[ext["residual"]]
    assert ((own["lo"] < 0) & (own["hi"] > 0)).all() and (own["hi"] - own["lo"]).min() > 0.5
    res = fit.residual_correlations  # 90 % intervals: one pair of three may miss 0 by chance
    assert (res["hi"] - res["lo"]).min() > 0.5 and ((res["lo"] < 0) & (res["hi"] > 0)).sum() >= 2
    assert (fit.domains["omega_s_hi"] - fit.domains["omega_s_lo"] > 0.05).all()
    assert (fit.domains["dimensions_lo"] <= 1).all()


def test_item_parallel_analysis_counts_dimensions_and_leaves_out_sparse_items():
    rng = np.random.default_rng(11)
    f = rng.standard_normal((80, 2))
    load = np.zeros((40, 2))
    load[:20, 0], load[20:, 1] = 1.5, 1.5
    y = (rng.random((80, 40)) < expit(f @ load.T)).astype(float)
    w = np.ones_like(y)
    w[:40, :3] = 0  # three items answered by half the models
    count, lo, hi, used, reasons = bf.item_dimensions(y * w, w, draws=100, boot=100)
    assert count == 2 and lo <= 2 <= hi and used == 37
    assert ("pa_items_left_out", {"few_models": 3, "no_variance": 0}) in reasons
    one = (rng.random((80, 40)) < expit(1.5 * f[:, :1] + np.zeros((1, 40)))).astype(float)
    count, lo, hi, _, _ = bf.item_dimensions(one, np.ones_like(one), draws=100, boot=100)
    assert count == 1 and lo <= 1


def test_bad_inputs_are_one_line_errors(strong):
    table, _, fit = strong
    with pytest.raises(JaggedInputError, match="at least 2 domains"):
        bf.fit_bifactor(table[table["domain"] == "d0"])
    bad = [pd.DataFrame({"name": ["m000"], "x": [1.0]}), pd.DataFrame({"model": ["m000", "m000"], "x": [1.0, 2.0]}),
           pd.DataFrame({"model": ["m000"], "x": ["high"]}), pd.DataFrame({"model": ["m000"]})]
    for frame, message in zip(bad, ("no 'model'", "listed twice", "'x' is not numeric", "no column"), strict=True):
        with pytest.raises(JaggedInputError, match=message):
            bf.external_correlations(fit, frame)
    few = bf.external_correlations(fit, pd.DataFrame({"model": ["m000", "m001"], "x": [1.0, 2.0]}))
    assert few["r"].isna().all() and (few["n_models"] == 2).all()


def test_agreement_with_the_mirt_package():
    mirt = pytest.importorskip("mirt")
    table, truth = simulate(400, (12, 12, 12), (0.6, 0.6, 1.5), seed=2)
    fit = bf.fit_bifactor(table, draws=50, boot=50)
    wide = table.pivot(index="model", columns="item", values="correct")
    res = mirt.bfactor(wide.to_numpy().astype(int), truth["dom"], compute_standard_errors=False)
    mg, ms = bf.standardised(res.model.general_loadings, res.model.specific_loadings)
    ms = ms * np.sign(np.bincount(truth["dom"], weights=ms))[truth["dom"]]
    ours = fit.items.set_index("item").loc[wide.columns]
    # stated tolerance: standardised loadings within 0.01 on average and 0.03 at most (measured: 0.002 and
    # 0.007 general, 0.006 and 0.015 specific; mirt's fixed 21-point grid is adequate at 400 models x 12 items)
    for mine, theirs in ((ours["general_loading"], mg), (ours["specific_loading"], ms)):
        diff = np.abs(mine.to_numpy() - theirs)
        assert diff.mean() < 0.01 and diff.max() < 0.03


def test_structure_level_item_writes_loadings_and_json(tmp_path):
    import json

    from clitools import run_cli

    table, truth = simulate(30, (12, 12, 12), (0.5, 0.5, 1.5), seed=4)
    table.to_csv(tmp_path / "items.csv", index=False)
    pd.DataFrame({"model": [f"m{k:03d}" for k in range(30)], "index": truth["g"]}).to_csv(tmp_path / "ext.csv",
                                                                                         index=False)
    code, out, err = run_cli("structure", tmp_path / "items.csv", "--level", "item", "--json", "--items-out",
                             tmp_path / "loadings.csv", "--external", tmp_path / "ext.csv")
    assert code == 0, err
    summary = json.loads(out)
    assert [d["domain"] for d in summary["domains"]] == ["d0", "d1", "d2"]
    assert {"omega_h", "omega_s", "rest"} <= set(summary["domains"][0])
    assert {(e["factor"], e["residual"]) for e in summary["external"]} == {
        ("general", False), *((d, r) for d in ("d0", "d1", "d2") for r in (False, True))}
    assert all({"factor", "column", "r", "lo", "hi", "residual"} <= set(e) for e in summary["external"])
    loadings = pd.read_csv(tmp_path / "loadings.csv")
    assert list(loadings.columns) == ["item", "domain", "general_loading", "se_general_loading", "specific_loading",
                                      "se_specific_loading"] and len(loadings) == 36
