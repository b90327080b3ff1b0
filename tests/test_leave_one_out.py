"""Leave one domain out (jagged/stats/leave_one_out.py): checked against refitting without the domain, and the
headlines that rest on one domain (issue 29: a failed run scoring 0.0 on one task named "Most jagged")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import jagged
from jagged.analysis import Analysis, AnalysisOptions, metrics_table
from jagged.readers.dataset import Dataset
from jagged.stats import leave_one_out as loo
from jagged.stats.decomposition import decompose, model_structure
from jagged.stats.deployment import deployment_metrics
from jagged.views import glance


def table(scores: np.ndarray, n: np.ndarray | None = None, *, models=None, domains=None) -> pd.DataFrame:
    m, d = scores.shape
    models = models or [f"m{i}" for i in range(m)]
    domains = domains or [f"d{j}" for j in range(d)]
    rows = [(models[i], domains[j], scores[i, j], np.nan if n is None else n[i, j])
            for i in range(m) for j in range(d) if np.isfinite(scores[i, j])]
    return jagged.validate_scores(pd.DataFrame(rows, columns=["model", "domain", "score", "n_items"]), "t",
                                  line_offset=None)


def random_scores(seed: int, m: int = 6, d: int = 5, missing: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = rng.integers(20, 300, (m, d))
    s = rng.binomial(n, rng.uniform(0.3, 0.95, (m, d))) / n
    if missing:
        s[1, 0] = s[3, 4] = np.nan
    return s, n


def test_cv_without_each_domain_equals_dropping_it():
    s, _ = random_scores(1, missing=True)
    scores = table(s)
    got = loo.cv_without(scores)
    for domain in got.columns:
        dropped = jagged.jaggedness(scores[scores["domain"] != domain]).set_index("model")["cv_error"]
        np.testing.assert_allclose(got[domain].to_numpy(), dropped.reindex(got.index).to_numpy(), rtol=1e-12)
    # a model lacking the domain keeps its own value
    assert got.loc["m1", "d0"] == pytest.approx(jagged.jaggedness(scores).set_index("model").loc["m1", "cv_error"])


@pytest.mark.parametrize("corrected", [False, True])
def test_relative_without_each_domain_equals_refitting_a_complete_table_without_it(corrected):
    s, n = random_scores(2)
    scores = table(s, n)
    got = loo.relative_without(decompose(scores), corrected=corrected)
    column = "relative_jaggedness_corrected" if corrected else "relative_jaggedness"
    for domain in got.columns:
        refit = model_structure(decompose(scores[scores["domain"] != domain])).set_index("model")[column]
        np.testing.assert_allclose(got[domain].to_numpy(), refit.reindex(got.index).to_numpy(), rtol=1e-9,
                                   atol=1e-12)


def test_wedge_without_each_domain_equals_renormalising_the_profile_without_it():
    s, _ = random_scores(3, missing=True)
    scores = table(s)
    domains = sorted(scores["domain"].unique())
    weights = pd.DataFrame([[0.4, 0.3, 0.1, 0.1, 0.1], [0.2] * 5], index=["mix", "flat"], columns=domains)
    got = loo.wedge_without(scores, weights)
    for domain in domains:
        kept = weights.drop(columns=domain)
        kept = kept.div(kept.sum(axis=1), axis=0)
        direct = deployment_metrics(scores[scores["domain"] != domain], kept).set_index(["model", "profile"])["wedge"]
        full = deployment_metrics(scores, weights).set_index(["model", "profile"])["wedge"]
        lacks = ~scores[scores["domain"] == domain].set_index("model").index.to_series().reindex(
            got.index.get_level_values("model")).notna().to_numpy()
        expected = np.where(lacks, full.reindex(got.index).to_numpy(), direct.reindex(got.index).to_numpy())
        np.testing.assert_allclose(got[domain].to_numpy(), expected, rtol=1e-10, atol=1e-14)


def failed_run() -> np.ndarray:
    """Seven tasks; model "broken" is its siblings' equal except a failed run scoring 0.0 on "coding"."""
    rng = np.random.default_rng(4)
    base = rng.uniform(0.8, 0.9, 7)
    s = np.clip(base[None, :] + rng.normal(0, 0.02, (6, 7)), 0.05, 0.98)
    s[0, 2] = 0.0
    return s


MODELS = ["broken", "a", "b", "c", "d", "e"]
TASKS = ["algebra", "biology", "coding", "drama", "ethics", "french", "geology"]


def test_a_failed_run_is_marked_in_the_metrics_table_and_said_in_the_glance():
    s = failed_run()
    dataset = Dataset(scores=table(s, np.full(s.shape, 200), models=MODELS, domains=TASKS), source="t", paths=[],
                      format="long")
    metrics = metrics_table(dataset, AnalysisOptions(bootstrap=0)).set_index("model")
    assert metrics.loc["broken", "cv_error_rests_on"] == "coding"
    assert metrics.loc["broken", "relative_jaggedness_rests_on"] == "coding"
    assert (metrics.drop(index="broken")["cv_error_rests_on"] == "").all()
    analysis = Analysis(dataset=dataset, options=AnalysisOptions(bootstrap=0))
    most = glance.jaggedness_findings(analysis)[0]
    without = analysis.leave_one_out["relative_jaggedness_corrected"].loc["broken", "coding"]
    assert most.subject == "broken" and most.rests_on == "coding"
    assert (f"This rests on one domain: without coding (where it scores 0.000) its relative jaggedness would "
            f"be {without:.2f} and ") in most.sentence
    leader = analysis.leave_one_out["relative_jaggedness_corrected"]["coding"].drop("broken").idxmax()
    assert f"and {leader} would replace it." in most.sentence


def test_a_headline_that_does_not_rest_on_one_domain_says_nothing_more():
    z = np.linspace(-1, 1, 12)
    errors = 0.3 * (1 + np.array([0.6, 0.4, 0.25, 0.1])[:, None] * z[None, :])   # evenly spread, well apart
    analysis = Analysis(dataset=Dataset(scores=table(1 - errors), source="t", paths=[], format="long"),
                        options=AnalysisOptions(bootstrap=0))
    findings = glance.jaggedness_findings(analysis)
    assert len(findings) == 2 and findings[0].subject == "m0"
    for finding in findings:
        assert finding.rests_on == "" and "rests on one domain" not in finding.sentence


def test_headline_rests_on_ranks_and_halves():
    values = pd.Series([1.0, 0.9, 0.2], index=["x", "y", "z"])
    without = pd.DataFrame({"p": [0.95, 0.9, 0.2], "q": [0.8, 0.85, 0.2], "r": [0.4, 0.9, 0.3]},
                           index=["x", "y", "z"])
    found = loo.headline_rests_on(values, without, "x")
    assert found == loo.Reliance("r", 0.4, "y")                  # r ends the lead with the widest margin
    assert loo.headline_rests_on(values, without[["p"]], "x") is None
    halved = loo.headline_rests_on(values.drop("y"), without.drop(index="y")[["p", "r"]], "x")
    assert halved == loo.Reliance("r", 0.4, None)                 # still leads, but at 0.4 of 1.0
    assert loo.headline_rests_on(values, without, "z", largest=False) is None
    assert loo.rests_on(values, without).tolist() == ["r", "", ""]


def test_the_largest_wedge_says_when_it_rests_on_one_domain(tmp_path):
    s = failed_run()
    path = tmp_path / "weights.csv"
    path.write_text("profile,domain,weight\n" + "".join(f"coders,{t},{0.4 if t == 'coding' else 0.1}\n" for t in TASKS))
    dataset = Dataset(scores=table(s, np.full(s.shape, 200), models=MODELS, domains=TASKS), source="t", paths=[],
                      format="long")
    analysis = Analysis(dataset=dataset, options=AnalysisOptions(bootstrap=0, weights=str(path)))
    finding = glance.profiles_finding(analysis)
    without = analysis.leave_one_out["wedge"].loc[("broken", "coders"), "coding"]
    assert finding.subject == "broken under coders" and finding.rests_on == "coding"
    assert f"without coding (where it scores 0.000) its wedge would be {without:+.3f}" in finding.sentence


def test_the_report_table_shows_the_mark_beside_cv_error_only_when_a_model_has_one(monkeypatch):
    import IPython.display

    from jagged.views import display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append(obj["text/plain"]))
    s = failed_run()
    marked = metrics_table(Dataset(scores=table(s, models=MODELS, domains=TASKS), source="t", paths=[],
                                   format="long"), AnalysisOptions(bootstrap=0))
    display.show_metrics(marked)
    header, *rows = shown[0].splitlines()
    assert header.split().index("cv_error_rests_on") == header.split().index("cv_error") + 1
    assert any(line.split()[0] == "broken" and "coding" in line.split() for line in rows)
    display.show_metrics(marked.assign(cv_error_rests_on=""))
    assert "cv_error_rests_on" not in shown[1]
