"""jagged.views.glance: the report's findings, from hand-made tables with known numbers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from jagged.analysis import Analysis
from jagged.options import AnalysisOptions
from jagged.readers.dataset import Dataset
from jagged.views import glance as g

NAN = math.nan


def make_analysis(table: pd.DataFrame, *, n_items: float = 100.0, categories: bool = False,
                  weights: str | None = None, ci: float = 0.95) -> Analysis:
    """An Analysis whose metrics table is ``table`` (the dataset only has to carry its models)."""
    models = pd.unique(table["model"]).tolist()
    rows = [(m, d, 0.5, n_items, (f"c{i % 2}" if categories else None)) for m in models
            for i, d in enumerate(("d1", "d2", "d3"))]
    scores = pd.DataFrame(rows, columns=["model", "domain", "score", "n_items", "category"])
    analysis = Analysis(dataset=Dataset(scores=scores, source="hand.csv", paths=[], format="long"),
                        options=AnalysisOptions(weights=weights, ci=ci))
    analysis.table = table  # the cached table: what every section reads
    analysis.leave_one_out = {}  # hand-made numbers have no domains behind them to leave out
    return analysis


def per_model_table(**extra) -> pd.DataFrame:
    base = pd.DataFrame({
        "model": ["alpha", "beta", "gamma", "delta"],
        "macro_score": [0.80, 0.60, 0.70, 0.50],
        "mean_error": [0.20, 0.40, 0.30, 0.50],
        "cv_error": [0.40, 0.10, NAN, 0.25],
        "cv_error_corrected": [0.38, 0.05, NAN, 0.20],
        "noise_share": [0.10, 0.75, NAN, 0.30],
        "noise_flag": [False, True, NAN, False],
    })
    return base.assign(**extra)


def test_most_and_least_jagged_with_their_intervals():
    table = per_model_table(cv_error_lo=[0.31, 0.0, NAN, 0.15], cv_error_hi=[0.45, 0.09, NAN, 0.26])
    found = g.jaggedness_findings(make_analysis(table))
    assert [f.label for f in found] == ["Most jagged", "Least jagged"]
    most, least = found
    # the interval is the noise-corrected value's: the finding carries that value (issue 29: beta's raw 0.10
    # was given with the interval 0.00 to 0.09)
    assert (most.subject, most.statistic, most.value, most.lo, most.hi) == ("alpha", "cv_error_corrected", 0.38,
                                                                            0.31, 0.45)
    assert (least.subject, least.value, least.lo, least.hi) == ("beta", 0.05, 0.0, 0.09)
    assert most.sentence == ("alpha: cv_error 0.400 (0.380 with sampling noise removed, 95% interval 0.310 to "
                             "0.450); its errors are the most unevenly spread across domains of the 3 models "
                             "(macro score 0.800).")
    assert "beta: cv_error 0.100 (0.050 with sampling noise removed, 95% interval 0.000 to 0.090)" in least.sentence
    assert "gamma" not in most.sentence + least.sentence  # undefined CV: not ranked


def test_a_finding_outside_its_own_interval_stops_the_glance():
    table = per_model_table(cv_error_lo=[0.31, 0.06, NAN, 0.15], cv_error_hi=[0.45, 0.09, NAN, 0.26])
    with pytest.raises(RuntimeError, match="'Least jagged' gives cv_error_corrected 0.05 outside its interval"):
        g.glance(make_analysis(table), contributors=[("jaggedness", g.jaggedness_findings)])


def test_without_intervals_or_noise_estimate_the_sentence_says_only_what_exists():
    table = per_model_table().drop(columns=["cv_error_corrected"])
    most, least = g.jaggedness_findings(make_analysis(table, ci=0.9))
    assert most.sentence.startswith("alpha: cv_error 0.400; its errors")
    assert math.isnan(most.lo) and math.isnan(least.hi)


def test_one_model_with_a_defined_cv_and_none():
    table = per_model_table(cv_error=[NAN, 0.2, NAN, NAN])
    (only,) = g.jaggedness_findings(make_analysis(table))
    assert only.subject == "beta" and "the only model with a defined cv_error" in only.sentence
    assert g.jaggedness_findings(make_analysis(per_model_table(cv_error=[NAN] * 4))) == []


def test_noise_counts_the_models_distinguishable_from_noise():
    finding = g.noise_finding(make_analysis(per_model_table()))
    assert (finding.count, finding.total) == (2, 3)  # alpha, delta clear; beta flagged; gamma unknown
    assert finding.sentence == ("For 2 of 3 models the jaggedness is larger than sampling noise alone would "
                                "produce; for 1 (beta) it cannot be told apart from noise. 1 model has no item "
                                "counts.")
    clear = g.noise_finding(make_analysis(per_model_table(noise_flag=[False] * 4, noise_share=[0.1] * 4)))
    assert clear.sentence == "For all 4 models the jaggedness is larger than sampling noise alone would produce."
    none = g.noise_finding(make_analysis(per_model_table(noise_flag=[True] * 4, noise_share=[0.9] * 4)))
    assert none.count == 0 and none.sentence.startswith("For none of the 4 models")


def test_noise_without_item_counts_says_it_cannot_be_assessed():
    table = per_model_table(noise_share=[NAN] * 4, noise_flag=[NAN] * 4)
    analysis = make_analysis(table, n_items=NAN)
    assert not analysis.sections["noise"]
    finding = g.noise_finding(analysis)
    assert finding.sentence.startswith("Cannot be assessed") and math.isnan(finding.count)


def profile_table() -> pd.DataFrame:
    rows = []
    for profile, wedges in {"uniform": [0.0, 0.0], "law": [0.03, -0.02], "clinic": [0.01, -0.06]}.items():
        for model, wedge, macro in zip(["alpha", "beta"], wedges, [0.8, 0.6]):
            rows.append({"model": model, "profile": profile, "macro_score": macro, "mean_error": 1 - macro,
                         "cv_error": 0.3 if model == "alpha" else 0.2, "cv_error_corrected": NAN,
                         "noise_share": NAN, "noise_flag": NAN, "wedge": wedge, "dep_score": macro - wedge,
                         "wedge_lo": wedge - 0.01, "wedge_hi": wedge + 0.01})
    return pd.DataFrame(rows)


def test_largest_wedge_by_size_with_its_profile_and_direction():
    finding = g.profiles_finding(make_analysis(profile_table()))
    assert (finding.subject, finding.statistic) == ("beta under clinic", "wedge")
    assert finding.value == pytest.approx(-0.06) and finding.lo == pytest.approx(-0.07)
    assert finding.sentence == ("-0.060 for beta under the profile clinic: the benchmark average understates the "
                                "score this task mix would see by 6.0 percentage points (macro 0.600, "
                                "deployment-weighted 0.660; 95% interval -0.070 to -0.050).")


def test_no_wedge_finding_without_profiles_or_with_only_the_uniform_profile():
    assert g.profiles_finding(make_analysis(per_model_table())) is None
    uniform = profile_table().query("profile == 'uniform'")
    assert g.profiles_finding(make_analysis(uniform)) is None


def test_illustrative_profiles_are_labelled():
    from jagged.stats.weights import BUNDLED_PROFILES

    finding = g.profiles_finding(make_analysis(profile_table(), weights=str(BUNDLED_PROFILES)))
    assert "(illustrative, not measured traffic)" in finding.sentence


#: The contributors of the sections this file tests (the others have their own tests).
BASIC = [("jaggedness", g.jaggedness_findings), ("noise", g.noise_finding), ("profiles", g.profiles_finding)]


def test_every_section_has_a_contributor_in_report_order():
    sections = [name for name, _ in g.CONTRIBUTORS]
    assert sections[:3] == ["jaggedness", "noise", "profiles"] and len(set(sections)) == len(sections)
    analysis = make_analysis(per_model_table())
    assert [f.section for f in g.glance(analysis, BASIC)] == ["jaggedness", "jaggedness", "noise"]
    assert g.items_finding(analysis) is None  # no item-level data


def test_the_extension_point_takes_none_one_finding_or_several_in_order():
    extra = g.Finding("items", "Items to look at", "3 of 10 items are flagged.", statistic="flagged", count=3,
                      total=10)
    contributors = [("a", lambda a: None), ("b", lambda a: extra), ("c", lambda a: [extra, extra])]
    assert g.glance(make_analysis(per_model_table()), contributors) == [extra, extra, extra]
    table = g.glance_table([extra])
    assert table.columns.tolist() == ["section", "label", "sentence", "subject", "statistic", "value", "lo", "hi",
                                      "count", "total", "rests_on"]
    assert table.loc[0, "count"] == 3 and np.isnan(table.loc[0, "value"])


def test_html_escapes_names_and_keeps_one_item_per_finding():
    table = per_model_table(model=["<script>x</script>", "b&b", "c", "d"])
    findings = g.glance(make_analysis(table), BASIC)
    markup = g.glance_html(findings)
    assert "<script>" not in markup and "&lt;script&gt;x&lt;/script&gt;" in markup and "b&amp;b" in markup
    assert markup.count("<li ") == 3 and markup.startswith('<ul class="glance">')
    assert g.glance_text(findings).count("\n- ") == 2


def test_bundled_report_glance_numbers_come_from_its_table():
    from jagged.analysis import analyse

    analysis = analyse(None, example_profiles=True, bootstrap=200, seed=0)
    found = {f.label: f for f in g.glance(analysis)}
    rows = analysis.table.drop_duplicates("model").set_index("model")
    most = found["Most jagged"]   # level-adjusted first, the raw cv_error beside it
    assert most.statistic == "relative_jaggedness_corrected"
    assert most.value == rows["relative_jaggedness_corrected"].max()
    assert most.subject == rows["relative_jaggedness_corrected"].idxmax()
    assert most.lo == rows.loc[most.subject, "relative_jaggedness_lo"]
    raw = rows["cv_error"].idxmax()
    assert raw != most.subject and f"By the raw cv_error the most jagged is {raw} (cv_error " \
        f"{rows.loc[raw, 'cv_error']:.3f}" in most.sentence
    wedge = analysis.table.loc[analysis.table["profile"] != "uniform", "wedge"]
    assert abs(found["Largest wedge"].value) == wedge.abs().max()
    assert found["Sampling noise"].total == 29


# --------------------------------------------------------------------------- level-adjusted first (issue 18)

def livebench_like() -> pd.DataFrame:
    """No item counts; the strongest model has the highest cv_error only because it makes few errors.

    logit(e) = μ + a_m + b_d + r_md with r = 0 except for "quirky" (a mid-level model weak in two
    domains and strong in two others): "frontier" follows the field's pattern exactly, but its
    low mean error makes its CV the largest.
    """
    a = {"frontier": -2.5, "strong": -1.2, "quirky": 0.0, "mid": 0.2, "weak": 1.0, "weakest": 1.6}
    b = np.array([-1.0, -0.6, -0.2, 0.2, 0.6, 1.0])
    r = {"quirky": np.array([0.9, -0.9, 0.9, -0.9, 0.0, 0.0])}
    rows = []
    for model, level in a.items():
        logits = -0.5 + level + b + r.get(model, 0.0)
        errors = 1.0 / (1.0 + np.exp(-logits))
        rows += [(model, f"task{j}", 1.0 - e) for j, e in enumerate(errors)]
    return pd.DataFrame(rows, columns=["model", "domain", "score"])


def test_livebench_like_glance_leads_with_the_level_adjusted_model_and_names_the_raw_one_beside_it():
    from jagged.analysis import Analysis
    from jagged.readers.canonical import validate_scores

    scores = validate_scores(livebench_like(), "livebench_like.csv", line_offset=None)
    analysis = Analysis(dataset=Dataset(scores=scores, source="livebench_like.csv", paths=[], format="long"),
                        options=AnalysisOptions(bootstrap=0))
    rows = analysis.table.set_index("model")
    assert rows["cv_error"].idxmax() == "frontier" and rows["macro_score"].idxmax() == "frontier"
    assert rows["relative_jaggedness"].idxmax() == "quirky"
    most, least = g.jaggedness_findings(analysis)
    assert most.label == "Most jagged" and most.subject == "quirky" and most.statistic == "relative_jaggedness"
    assert most.value == pytest.approx(rows.loc["quirky", "relative_jaggedness"])
    assert most.sentence.startswith(f"quirky: relative jaggedness {most.value:.2f} (logits; raw: no item counts")
    assert (f"By the raw cv_error the most jagged is frontier (cv_error {rows.loc['frontier', 'cv_error']:.3f}; "
            f"macro score {rows.loc['frontier', 'macro_score']:.3f})") in most.sentence
    assert least.subject != "quirky" and math.isnan(most.lo)
    # the noise finding says "not tested", and no flag reads False
    noise = g.noise_finding(analysis)
    assert "Cannot be assessed" in noise.sentence and analysis.table["noise_flag"].isna().all()
