"""Deployment-weighted scores, the wedge and its bound, ranks and Kendall τ."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from conftest import BUNDLED
from hypothesis import given, settings
from hypothesis import strategies as st

import jagged
from jagged.analysis import AnalysisOptions, metrics_table, resolve_profiles
from jagged.stats.deployment import (
    DEPLOYMENT_COLUMNS,
    NOTE_EQUAL_WEIGHTS,
    deployment_metrics,
    drift_bound_curve,
    exposure_profile,
    kendall_tau,
    most_reordered_profile,
    rank_agreement,
    rank_change_table,
)
from jagged.stats.metrics import METRIC_COLUMNS
from jagged.stats.weights import BUNDLED_PROFILES


def _long(scores: dict[str, list[float]]) -> pd.DataFrame:
    rows = [(m, f"d{i}", s) for m, values in scores.items() for i, s in enumerate(values) if not np.isnan(s)]
    return jagged.validate_scores(pd.DataFrame(rows, columns=["model", "domain", "score"]))


def _matrix(rows: dict[str, list[float]], n_domains: int) -> pd.DataFrame:
    raw = np.array(list(rows.values()), dtype=float)
    return pd.DataFrame(raw / raw.sum(axis=1, keepdims=True), index=list(rows),
                        columns=[f"d{i}" for i in range(n_domains)])


def test_hand_worked_example():
    """Scores s = (0.9, 0.8, 0.5), weights w = (0.2, 0.3, 0.5), D = 3.

    errors e = (0.1, 0.2, 0.5); mean(w) = 1/3, mean(e) = 0.8/3 = 0.266667.
    macro   = (0.9 + 0.8 + 0.5) / 3 = 2.2 / 3          = 0.733333
    dep     = 0.2·0.9 + 0.3·0.8 + 0.5·0.5 = 0.18 + 0.24 + 0.25 = 0.670000
    wedge   = 0.733333 − 0.670000                       = 0.063333
    Cov_pop(w, e) = mean(w·e) − mean(w)·mean(e) = (0.02 + 0.06 + 0.25)/3 − (1/3)(0.8/3)
                  = 0.110000 − 0.088889 = 0.021111;  D·Cov = 0.063333 = wedge
    σ_w = sqrt(((0.2−1/3)² + (0.3−1/3)² + (0.5−1/3)²)/3) = sqrt(0.046667/3) = 0.124722
    σ_e = sqrt(((0.1−0.2667)² + (0.2−0.2667)² + (0.5−0.2667)²)/3) = sqrt(0.086667/3) = 0.169967
    bound   = D·σ_w·σ_e = 3 · 0.124722 · 0.169967       = 0.063596 ≥ |wedge|
    corr    = Cov/(σ_w σ_e) = 0.021111 / 0.021199       = 0.995871 > 0
    (the most-used domain, weight 0.5, is the worst-handled, error 0.5).
    """
    scores = _long({"m": [0.9, 0.8, 0.5]})
    row = deployment_metrics(scores, _matrix({"p": [0.2, 0.3, 0.5]}, 3)).iloc[0]
    macro = jagged.jaggedness(scores)["macro_score"].iloc[0]
    assert round(macro, 6) == 0.733333
    assert round(row["dep_score"], 6) == 0.670000
    assert round(row["wedge"], 6) == 0.063333
    assert round(row["wedge_bound"], 6) == 0.063596
    assert round(row["sigma_w"], 6) == 0.124722
    assert round(row["exposure_error_corr"], 6) == 0.995871 and row["exposure_error_corr"] > 0
    w, e = np.array([0.2, 0.3, 0.5]), np.array([0.1, 0.2, 0.5])
    assert row["wedge"] == pytest.approx(3 * np.cov(w, e, bias=True)[0, 1], abs=1e-15)
    assert row["wedge"] == pytest.approx(macro - row["dep_score"], abs=1e-15)
    assert row["exposure_error_corr"] == pytest.approx(scipy.stats.pearsonr(w, e).statistic, abs=1e-12)
    assert row["rank_macro"] == 1 and row["rank_dep"] == 1 and row["note"] == ""


unit = st.floats(0.0, 1.0, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 12).flatmap(lambda d: st.tuples(
    st.lists(st.lists(unit, min_size=d, max_size=d), min_size=1, max_size=5),
    st.lists(st.floats(0.0, 100.0, allow_nan=False), min_size=d, max_size=d).filter(lambda w: sum(w) > 1e-3))))
def test_wedge_is_d_times_covariance_and_within_the_bound(case):
    score_rows, raw_weights = case
    d = len(raw_weights)
    scores = _long({f"m{i}": row for i, row in enumerate(score_rows)})
    weights = _matrix({"p": raw_weights, "uniform": [1.0] * d}, d)
    weights.loc["uniform"] = 1.0 / d
    table = deployment_metrics(scores, weights)
    w = weights.loc["p"].to_numpy()
    for i, row in enumerate(score_rows):
        e = 1.0 - np.array(row)
        got = table[(table["model"] == f"m{i}") & (table["profile"] == "p")].iloc[0]
        assert abs(got["wedge"] - d * np.cov(w, e, bias=True)[0, 1]) <= 1e-12
        assert abs(got["wedge"] - (np.mean(row) - w @ np.array(row))) <= 1e-12
        assert abs(got["wedge"]) <= got["wedge_bound"] + 1e-12
        assert got["wedge_bound"] == pytest.approx(d * np.std(w) * np.std(e), abs=1e-12)
        uni = table[(table["model"] == f"m{i}") & (table["profile"] == "uniform")].iloc[0]
        assert uni["wedge"] == 0.0 and uni["wedge_bound"] == 0.0
        assert abs(uni["dep_score"] - np.mean(row)) <= 1e-12


def test_uniform_builtin_gives_macro_on_bundled_data():
    scores = jagged.load_scores(BUNDLED)
    table = deployment_metrics(scores, resolve_profiles(scores, profiles=["uniform"]))
    macro = jagged.jaggedness(scores).set_index("model")["macro_score"]
    assert (table["wedge"] == 0.0).all()
    np.testing.assert_allclose(table.set_index("model")["dep_score"], macro.loc[table["model"]], atol=1e-15)
    assert table["exposure_error_corr"].isna().all() and (table["note"] == NOTE_EQUAL_WEIGHTS).all()
    assert (table["rank_macro"] == table["rank_dep"]).all()


def test_model_missing_a_weighted_domain_gets_no_dep_score():
    scores = _long({"a": [0.9, 0.8, 0.5], "b": [0.7, 0.6, np.nan], "c": [0.5, 0.5, 0.4]})
    table = deployment_metrics(scores, _matrix({"p": [1, 1, 2]}, 3)).set_index("model")
    assert np.isnan(table.loc["b", "dep_score"]) and np.isnan(table.loc["b", "wedge"])
    assert table.loc["b", "note"] == "no score for weighted domain(s) d2: dep_score undefined"
    assert pd.isna(table.loc["b", "rank_dep"]) and pd.isna(table.loc["b", "rank_macro"])
    # not renormalised over d0, d1: a and c are ranked among themselves
    assert table.loc["a", "rank_dep"] == 1 and table.loc["c", "rank_dep"] == 2


def test_model_missing_a_zero_weight_domain_uses_its_own_domains():
    scores = _long({"a": [0.9, 0.8, 0.5], "b": [0.7, 0.6, np.nan]})
    table = deployment_metrics(scores, _matrix({"p": [1, 3, 0]}, 3)).set_index("model")
    b = table.loc["b"]
    assert b["dep_score"] == pytest.approx(0.25 * 0.7 + 0.75 * 0.6, abs=1e-15)
    w, e = np.array([0.25, 0.75]), np.array([0.3, 0.4])
    assert b["wedge"] == pytest.approx(2 * np.cov(w, e, bias=True)[0, 1], abs=1e-15)
    assert b["wedge_bound"] == pytest.approx(2 * np.std(w) * np.std(e), abs=1e-15)


def test_equal_errors_give_undefined_correlation():
    table = deployment_metrics(_long({"m": [0.6, 0.6, 0.6]}), _matrix({"p": [1, 2, 3]}, 3))
    assert np.isnan(table["exposure_error_corr"].iloc[0]) and "equal errors" in table["note"].iloc[0]
    assert table["wedge"].iloc[0] == pytest.approx(0.0, abs=1e-15)


def test_ranks_ties_and_kendall():
    """Macro ranks a > b > c; weights (0, 0, 1) rank by d2 alone: c > b > a (reversed)."""
    scores = _long({"a": [0.9, 0.9, 0.1], "b": [0.6, 0.6, 0.3], "c": [0.4, 0.2, 0.5]})
    table = deployment_metrics(scores, _matrix({"p": [0, 0, 1], "q": [1, 1, 0]}, 3))
    p = table[table["profile"] == "p"].set_index("model")
    assert p["rank_macro"].tolist() == [1, 2, 3] and p["rank_dep"].tolist() == [3, 2, 1]
    agreement = rank_agreement(table).set_index("profile")
    assert agreement.loc["p", "kendall_tau"] == pytest.approx(-1.0)
    assert agreement.loc["p", "n_rank_changes"] == 2 and agreement.loc["p", "max_rank_change"] == 2
    assert agreement.loc["p", "top_macro"] == "a" and agreement.loc["p", "top_dep"] == "c"
    macro = {"a": 0.9 * 2 / 3 + 0.1 / 3, "b": 0.5, "c": 1.1 / 3}  # plain means of the scores above
    changes = rank_change_table(table.assign(macro_score=table["model"].map(macro))).set_index("model")
    assert changes["p change"].tolist() == [-2, 0, 2] and changes["p rank"].tolist() == [3, 2, 1]
    assert changes["macro rank"].tolist() == [1, 2, 3]
    tied = deployment_metrics(_long({"a": [0.5, 0.7], "b": [0.7, 0.5]}), _matrix({"u": [1, 1]}, 2))
    assert tied["rank_macro"].tolist() == [1, 1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=2, max_size=40))
def test_kendall_tau_matches_scipy(pairs):
    x, y = np.array(pairs, dtype=float).T
    expected = scipy.stats.kendalltau(x, y).statistic
    got = kendall_tau(x, y)
    if np.isnan(expected):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)


def test_kendall_tau_on_bundled_profiles_matches_scipy():
    scores = jagged.load_scores(BUNDLED)
    table = deployment_metrics(scores, resolve_profiles(scores, BUNDLED_PROFILES, profiles=["items", "law_office"]))
    macro = jagged.jaggedness(scores).set_index("model")["macro_score"]
    agreement = rank_agreement(table).set_index("profile")
    for profile, group in table.groupby("profile"):
        expected = scipy.stats.kendalltau(macro.loc[group["model"]].to_numpy(), group["dep_score"]).statistic
        got = kendall_tau(group["rank_macro"].astype(float), group["rank_dep"].astype(float))
        assert got == pytest.approx(expected, abs=1e-12)
        assert agreement.loc[profile, "kendall_tau"] == pytest.approx(expected, abs=1e-12)
    assert kendall_tau([1.0], [2.0]) != kendall_tau([1.0], [2.0])  # NaN for fewer than 2 pairs
    assert np.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))
    assert kendall_tau([1, 2, np.nan, 3], [1, 2, 0, 3]) == 1.0


def test_metrics_table_with_and_without_profiles():
    dataset = jagged.load(BUNDLED)
    plain = metrics_table(dataset)
    assert "profile" not in plain.columns and len(plain) == 29
    assert set(METRIC_COLUMNS) <= set(plain.columns) and not set(DEPLOYMENT_COLUMNS[2:-1]) & set(plain.columns)
    table = metrics_table(dataset, AnalysisOptions(weights=str(BUNDLED_PROFILES), profiles=()))
    assert len(table) == 4 * 29
    assert table.columns[:2].tolist() == ["model", "profile"] and table.columns[-1] == "note"
    for column in DEPLOYMENT_COLUMNS:
        assert column in table.columns
    merged = table[table["profile"] == "law_office"].set_index("model")
    np.testing.assert_allclose(merged["macro_score"], plain.set_index("model").loc[merged.index, "macro_score"])
    np.testing.assert_allclose(merged["wedge"], merged["macro_score"] - merged["dep_score"], atol=1e-15)
    ranks = rank_agreement(metrics_table(dataset, AnalysisOptions(weights=str(BUNDLED_PROFILES))))
    assert ranks["profile"].tolist() == ["law_office", "health_clinic", "engineering_team", "finance_desk"]


def test_exposure_profile_and_drift_curve():
    scores = _long({"m": [0.9, 0.8, 0.5]})
    exposure = exposure_profile(scores, _matrix({"p": [0.2, 0.3, 0.5]}, 3), "m")
    np.testing.assert_allclose(exposure["error"], [0.1, 0.2, 0.5])
    np.testing.assert_allclose(exposure["weight"], [0.2, 0.3, 0.5])
    curve = drift_bound_curve(0.169967, 3, num=5)
    assert curve["sigma_w"].iloc[-1] == pytest.approx(np.std([1.0, 0.0, 0.0]))
    np.testing.assert_allclose(curve["max_abs_wedge"], 3 * curve["sigma_w"] * 0.169967)


def test_cli_metrics_with_bundled_profiles(tmp_path):
    from click.testing import CliRunner

    from jagged.cli import main

    out = tmp_path / "m.csv"
    result = CliRunner().invoke(main, ["metrics", str(BUNDLED), "--weights", str(BUNDLED_PROFILES),
                                       "--profile", "law_office", "--profile", "items", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    table = pd.read_csv(out)
    assert table["profile"].unique().tolist() == ["law_office", "items"] and len(table) == 58
    assert "profile law_office: Kendall tau" in result.stderr


# ------------------------------------------------------------------ plots


@pytest.fixture
def bundled_tables():
    from jagged.analysis import profile_weights

    dataset = jagged.load(BUNDLED)
    options = AnalysisOptions(weights=str(BUNDLED_PROFILES))
    return dataset, metrics_table(dataset, options), profile_weights(dataset, options)


def test_deployment_plots_draw_and_return_axes(bundled_tables):
    from matplotlib.axes import Axes

    from jagged.plots import deployment as plots

    dataset, table, weights = bundled_tables
    ax = plots.macro_vs_dep(table)
    assert isinstance(ax, Axes) and len(ax.collections) == 4
    assert any(line.get_gid() == "identity-line" for line in ax.lines)
    ax = plots.wedge_bars(table, profile="law_office")
    assert len([p for p in ax.patches if p.get_gid() == "wedge-bar"]) == 29
    ax = plots.rank_slope(table, profile="engineering_team")
    assert len([line for line in ax.lines if line.get_gid() == "rank-line"]) == 29
    exposure = exposure_profile(dataset.scores, weights, "gemini-1.5-pro-002")
    ax = plots.exposure_vs_error(exposure, profile="law_office", model="gemini-1.5-pro-002")
    # one point per domain at (w_d, 1 - s_d), from the weights file and the scores directly
    own = dataset.scores[dataset.scores["model"] == "gemini-1.5-pro-002"].set_index("domain")["score"]
    w = weights.loc["law_office"] / weights.loc["law_office"].sum()
    (points,) = [c for c in ax.collections if c.get_gid() == "domain-point"]
    drawn = points.get_offsets()
    assert isinstance(ax, Axes) and len(drawn) == len(w) == 14
    np.testing.assert_allclose(drawn[:, 0], w.to_numpy(dtype=float), atol=1e-12)
    np.testing.assert_allclose(drawn[:, 1], 1.0 - own.reindex(w.index).to_numpy(dtype=float), atol=1e-12)
    assert sorted(t.get_text() for t in ax.texts) == sorted(w.index.astype(str))   # every domain labelled
    (uniform,) = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert uniform.get_xdata()[0] == pytest.approx(1 / 14)
    assert "law_office" in ax.get_xlabel() and "gemini-1.5-pro-002" in ax.get_title(loc="left")
    focus = table[table["model"] == "gemini-1.5-pro-002"]
    curve = drift_bound_curve(focus["sd_error"].iloc[0], int(focus["n_domains"].iloc[0]))
    ax = plots.drift_bound(curve, focus, model="gemini-1.5-pro-002")
    assert len([c for c in ax.collections if c.get_gid() == "profile-point"]) == 4
    with pytest.raises(ValueError, match="pass profile="):
        plots.wedge_bars(table)


def test_single_panel_plots_show_every_profile(bundled_tables):
    """The report's wedge and exposure charts put all profiles in one panel."""
    from jagged.plots import deployment as plots

    dataset, table, weights = bundled_tables
    ax = plots.wedge_dots(table)
    dots = [c for c in ax.collections if c.get_gid() == "wedge-dot"]
    assert len(dots) == 4 and all(len(c.get_offsets()) == 29 for c in dots)
    by_model = table.groupby("model", observed=True)["wedge"].mean().sort_values(kind="mergesort")
    assert [t.get_text() for t in ax.get_yticklabels()] == by_model.index.astype(str).tolist()
    law = table[table["profile"] == "law_office"].set_index("model")["wedge"]
    law_dots = dots[0].get_offsets()
    row = {m: i for i, m in enumerate(by_model.index.astype(str))}
    for x, y in law_dots:
        model = min(row, key=lambda m: abs(row[m] - y))
        assert x == pytest.approx(law[model])
    limited = plots.wedge_dots(table, limit=10)
    assert len(limited.get_yticklabels()) == 10
    exposure = exposure_profile(dataset.scores, weights, "gemini-1.5-pro-002")
    ax = plots.exposure_dots(exposure, model="gemini-1.5-pro-002")
    points = [c for c in ax.collections if c.get_gid() == "domain-point"]
    assert len(points) == 4 and all(len(c.get_offsets()) == 14 for c in points)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    errors = [float(label.rsplit("e=", 1)[1]) for label in labels]
    assert errors == sorted(errors) and len(labels) == 14


def test_most_reordered_profile_has_the_lowest_kendall_tau(bundled_tables):
    _, table, _ = bundled_tables
    agreement = rank_agreement(table).set_index("profile")["kendall_tau"]
    chosen = most_reordered_profile(table)
    assert agreement[chosen] == agreement.min()
    order = pd.unique(table["profile"]).tolist()
    assert chosen == min((p for p in order if agreement[p] == agreement.min()), key=order.index)


def test_plots_draw_interval_columns_when_present(bundled_tables):
    from jagged.plots import deployment as plots

    _, table, _ = bundled_tables
    law = table[table["profile"] == "law_office"]
    assert not any(c.get_gid() == "interval" for c in plots.macro_vs_dep(law).collections)
    with_ci = law.assign(dep_score_lo=law["dep_score"] - 0.01, dep_score_hi=law["dep_score"] + 0.02,
                         wedge_lo=law["wedge"] - 0.01, wedge_hi=law["wedge"] + 0.01)
    assert any(c.get_gid() == "interval" for c in plots.macro_vs_dep(with_ci).collections)
    assert any(c.get_gid() == "interval" for c in plots.wedge_bars(with_ci).collections)


# ------------------------------------------------------------------ the report section

SECTION_ALTS = (
    "Scatter plot of deployment-weighted score against macro score",
    "Dot chart of the wedge (macro score minus deployment-weighted score) per model, one dot per profile",
    "Slope chart of rank change from the macro ranking to the ranking under profile",
    "Dot chart for gemini-1.5-pro-002: domains in rows from highest to lowest error rate",
    "Line chart of the largest possible |wedge| against the spread of the weights for gemini-1.5-pro-002",
)


def _section_cells(notebook_path):
    import nbformat

    nb = nbformat.read(notebook_path, as_version=4)
    return [c for c in nb.cells if c.cell_type == "code" and "section-profiles" in c.metadata.get("tags", [])]


def test_report_with_bundled_profiles_has_every_deployment_plot_and_the_rank_table(tmp_path):
    import html

    from jagged.report import jaggedness_report

    out = jaggedness_report(None, tmp_path / "r.html")
    page = html.unescape(out.read_text())
    assert 'id="What-your-task-mix-changes"' in out.read_text()
    for alt in SECTION_ALTS:
        assert f'alt="{alt}' in page, alt
    assert "Rank change: macro rank and, per profile, deployment rank and change" in page
    assert "law_office change" in page and "engineering_team rank" in page
    assert "These profiles are illustrative." in page and "Deployment profiles (illustrative)" in page
    assert "ILLUSTRATIVE, not measured" in page
    assert "Kendall τ" in page


def test_report_without_weights_prints_no_deployment_section_and_leaves_no_open_kernel_socket(tmp_path):
    """No profiles, no deployment cells; and papermill's client for our kernel is closed (no ResourceWarning)."""
    import gc
    import warnings

    from jagged.report import jaggedness_report

    scores = tmp_path / "scores.csv"
    scores.write_text(pd.read_csv(BUNDLED).head(60).to_csv(index=False))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        out = jaggedness_report(str(scores), tmp_path / "r.html")
        gc.collect()
    assert not [str(w.message) for w in caught if "Unclosed" in str(w.message)]
    assert "What your task mix changes" not in out.read_text()
    cells = _section_cells(out.with_suffix(".ipynb"))
    assert len(cells) >= 5 and all(c.outputs == [] for c in cells)


def test_report_bad_focus_model_exits_2(tmp_path):
    from click.testing import CliRunner

    from jagged.cli import main

    result = CliRunner().invoke(main, ["report", "--profile", "uniform", "--focus-model", "nobody",
                                       "--bootstrap", "0", "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 2, result.stderr
    assert "focus model 'nobody' is not in the scores" in result.stderr and "Traceback" not in result.stderr
