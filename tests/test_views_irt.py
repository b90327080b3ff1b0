"""The item response model in the reports: views (hand-made tables), the analysis (fitted once), the sections."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from irt_simulation import simulate
from nbformat.v4 import new_output

from jagged.analysis import SECTIONS, SECTIONS_MIME, analyse
from jagged.options import REPORT_SECTIONS as CHOICES
from jagged.report.notebooks import find_notebook
from jagged.report.sections import SectionFilter
from jagged.stats.information import (
    ONE_THREAD_BELOW,
    DomainInformation,
    blas_threads_for,
    measurement_range,
    place_models,
    report_fit,
)
from jagged.stats.irt import ITEM_COLUMNS, IRTFit
from jagged.views import irt as v

# --------------------------------------------------------------------------- hand-made tables

def hand_information() -> DomainInformation:
    """Two domains: 'easy' (range −2.5 … 0.5, two models above it) and 'hard' (−1 … open top, one model below)."""
    ranges = pd.DataFrame({"group": ["easy", "hard"], "n_items": [10, 12], "theta_peak": [-1.0, 0.75],
                           "peak_information": [4.0, 9.0], "se_at_peak": [0.5, 1 / 3],
                           "lower": [-2.5, -1.0], "upper": [0.5, np.nan]})
    places = pd.DataFrame({"model": ["Top", "Mid", "Low", "Top", "Mid", "Low"],
                           "group": ["easy"] * 3 + ["hard"] * 3,
                           "theta": [1.4, 0.9, -1.0, 1.2, 0.1, -1.6], "theta_sd": [0.4, 0.3, 0.2, 0.2, 0.2, 0.5],
                           "information": [1.0, 2.0, 4.0, 8.0, 6.0, 1.0], "se": [1.0, 0.7, 0.5, 0.35, 0.4, 1.0],
                           "position": ["above", "above", "within", "within", "within", "below"]})
    curves = pd.DataFrame({"group": ["easy", "easy", "hard", "hard"], "theta": [-1.0, 1.0, -1.0, 1.0],
                           "information": [4.0, 1.0, 2.0, 9.0]})
    return DomainInformation(curves, ranges, places)


def test_range_table_names_the_models_beyond_each_domain():
    table = v.range_table(hand_information())
    assert list(table.columns) == ["domain", "fitted items", "measures best at θ", "SE there", "measuring range",
                                   "models above", "models below"]
    assert table["domain"].tolist() == ["easy", "hard"]                     # 2 beyond before 1 beyond
    easy, hard = table.iloc[0], table.iloc[1]
    assert easy["models above"] == "Top, Mid" and easy["models below"] == "—"   # highest ability first
    assert hard["models above"] == "—" and hard["models below"] == "Low"
    assert easy["measuring range"] == "-2.50 to +0.50" and hard["measuring range"] == "-1.00 to above +4"
    assert hard["SE there"] == pytest.approx(1 / 3) and easy["fitted items"] == 10


def test_information_sentences_name_the_peaks_and_the_models_beyond():
    first, above, below = v.information_sentences(hand_information())
    assert "θ = -1.00 (easy" in first and "θ = +0.75 (hard" in first
    assert above.startswith("2 models of 3 sit above") and "Mid (1 domain), Top (1 domain)" in above  # ties by name
    assert below.startswith("1 model of 3 sits below") and "Low (1 domain)" in below
    info = hand_information()
    within = dataclasses.replace(info, places=info.places.assign(position="within"))
    assert "Every model sits within every domain's measuring range" in v.information_sentences(within)[-1]


def test_information_alt_says_what_the_figure_shows():
    alt = v.information_alt(hand_information())
    assert alt.startswith("Line chart: test information") and "2 domains" in alt
    assert "most informative domain is hard (peak 9 at θ = +0.75)" in alt
    assert "3 model–domain pairs of 6 lie beyond" in alt


def test_model_position_and_its_sentence():
    info = hand_information()
    table = v.model_position(info, "Top")
    assert table["domain"].tolist() == ["easy", "hard"] and table["position"].tolist() == ["above", "within"]
    assert table["ability θ"].tolist() == [1.4, 1.2] and table["SD"].tolist() == [0.4, 0.2]
    text = v.describe_position(info, "Top")
    assert text.startswith("Top sits beyond the range, above it, in 1 domain (easy)")
    assert text.endswith("It sits within the range in 1 domain.")
    assert "below it, in 1 domain (hard)" in v.describe_position(info, "Low")
    within = dataclasses.replace(info, places=info.places.assign(position="within"))
    assert v.describe_position(within, "Mid").startswith("Mid sits within every domain's measuring range (2 domains)")
    assert "no item response model" in v.describe_position(None, "Top")
    assert "no ability estimate" in v.describe_position(info, "Absent")


def hand_fit() -> IRTFit:
    items = pd.DataFrame({c: [np.nan] * 5 for c in ITEM_COLUMNS})
    items = items.assign(item=list("abcde"), domain="d", group="d", loading=[0.6, -0.2, 0.1, 0.8, np.nan],
                         difficulty=[0.0, 1.0, 2.0, 6.0, np.nan],
                         flag_zero_variance=[False, False, False, False, True],
                         flag_negative_loading=[False, True, False, False, False],
                         flag_weak_loading=[False, False, True, False, False],
                         flag_extreme_difficulty=[False, False, False, True, False])
    return IRTFit(items, pd.DataFrame(), pd.DataFrame(), "domain")


def test_loading_sentence_and_alt_count_the_flags():
    fit = hand_fit()
    assert v.loading_sentence(fit).startswith("Of 5 items, 1 are set aside")
    sentence = v.loading_sentence(fit)
    assert "1 have a negative loading" in sentence and "1 a weak one (below 0.3)" in sentence
    assert "1 an extreme difficulty (|b| > 5" in sentence
    assert v.flagged_by_model(fit).tolist() == [False, True, True, True, False]
    assert "(4 fitted)" in v.loading_alt(fit) and "3 items with a negative or weak loading" in v.loading_alt(fit)


@dataclasses.dataclass
class FakeFlaws:
    items: pd.DataFrame
    domains: pd.DataFrame
    total: dict
    models: pd.DataFrame
    level: float


def hand_flaws() -> FakeFlaws:
    items = pd.DataFrame({"item": ["x", "y", "z", "w"], "posterior": [0.9, 0.6, 0.2, 0.05], "flaw_rank": [1, 2, 3, 4]})
    domains = pd.DataFrame({"domain": ["a", "b"], "n_items": [100, 40], "accuracy": [0.8, 0.55],
                            "prevalence": [0.05, 0.2], "visible": [2.5, 6.0], "visible_lower": [0.0, 3.0],
                            "visible_upper": [6.0, 10.0], "expected_flawed": [5.5, 8.25], "lower": [2.0, 4.0],
                            "upper": [11.0, 14.0]})
    total = {"n_items": 140, "visible": 8.5, "expected_flawed": 13.75, "lower": 7.0, "upper": 22.0}
    models = pd.DataFrame({"model": ["m1", "m2"], "agree": [0.78, 0.3], "agree_peers": [0.38, 0.35],
                           "agree_expected": [0.4, 0.32], "z": [4.2, -0.3], "q_value": [0.001, 0.9],
                           "flagged": [True, False]})
    return FakeFlaws(items, domains, total, models, 0.9)


def test_flaw_table_and_sentence():
    table = v.flaw_table(hand_flaws())
    assert table["domain"].tolist() == ["b", "a"]                             # most expected first
    assert table["interval"].tolist() == ["4 – 14", "2 – 11"]
    assert table["shown interval"].tolist() == ["3 – 10", "0 – 6"]
    assert table["expected flawed"].tolist() == [8.25, 5.5] and table["accuracy"].tolist() == [0.55, 0.8]
    sentence = v.flaw_sentence(hand_flaws())
    assert "About 14 of 140 items are expected to be flawed (90% interval 7 – 22)" in sentence
    assert "the most in b: 8 (4 – 14) of 40" in sentence and "about 8 are miskeyed items the responses show" in sentence


def test_agreement_table_and_sentence_name_the_flagged_model():
    table = v.agreement_table(hand_flaws())
    assert table["finding"].tolist() == ["agrees with likely wrong keys", "—"]
    assert table["agrees with key"].tolist() == [0.78, 0.3]
    sentence = v.agreement_sentence(hand_flaws())
    assert sentence.startswith("m1 (78% against 38% for its peers) agrees with likely wrong keys")
    none = hand_flaws()
    none.models["flagged"] = False
    assert v.agreement_sentence(none).startswith("No model agrees")


# --------------------------------------------------------------------------- the analysis: fitted once

@pytest.fixture(scope="module")
def item_csv(tmp_path_factory) -> Path:
    table, _ = simulate(n_models=30, n_items=90, n_domains=3, seed=4)
    path = tmp_path_factory.mktemp("irt") / "items.csv"
    table.to_csv(path, index=False)
    return path


def test_the_analysis_fits_the_item_model_and_the_posterior_once(item_csv, monkeypatch):
    import jagged.stats.flaw
    import jagged.stats.irt
    import jagged.stats.item_audit

    calls = {"fit_2pl": 0, "flaw_posterior": 0}

    def counted(name, real):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return wrapper

    for name, real in (("fit_2pl", jagged.stats.irt.fit_2pl), ("flaw_posterior", jagged.stats.flaw.flaw_posterior)):
        for module in (jagged.stats.irt, jagged.stats.flaw, jagged.stats.item_audit):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, counted(name, real))
    analysis = analyse(str(item_csv))
    assert analysis.sections["irt"] and analysis.sections["items"]
    audit, fit, flaws, info = analysis.item_audit, analysis.item_model, analysis.flaws, analysis.information
    assert analysis.item_model is fit and analysis.flaws is flaws and analysis.information is info
    assert calls == {"fit_2pl": 1, "flaw_posterior": 1}
    # the numbers are those of an independent fit of the same table, with the report's rest
    alone = jagged.stats.irt.fit_2pl(pd.read_csv(item_csv), rest="domain")
    np.testing.assert_allclose(fit.items.set_index("item").loc[alone.items["item"], "slope"],
                               alone.items["slope"], rtol=1e-9, equal_nan=True)
    ranges = measurement_range(info.curves, items=fit.items)
    pd.testing.assert_frame_equal(info.ranges, ranges)
    pd.testing.assert_frame_equal(info.places, place_models(fit.abilities, fit.items, ranges))
    # a second analysis of the same responses in this process (a warm kernel's next page) reuses the fit
    assert analyse(str(item_csv)).item_model is fit and calls["fit_2pl"] == 2  # the second: `alone` above
    changed = pd.read_csv(item_csv)
    changed.loc[0, "correct"] = 1 - changed.loc[0, "correct"]
    assert report_fit(changed) is not fit and calls["fit_2pl"] == 3
    if "posterior" in audit.items.columns:  # the audit carries the analysis's posterior, not a second one
        mine = flaws.items.set_index("item")["posterior"]
        np.testing.assert_allclose(audit.items["posterior"], mine.loc[audit.items["item"]].to_numpy(), rtol=1e-12)


def test_the_item_model_section_applies_only_with_item_level_results_in_memory(item_csv, tmp_path):
    assert "irt" in SECTIONS and "irt" in CHOICES
    assert SECTIONS.index("items") < SECTIONS.index("irt") < SECTIONS.index("decomposition")
    per_domain = tmp_path / "scores.csv"
    pd.DataFrame({"model": ["a", "a", "b", "b"], "domain": ["x", "y", "x", "y"],
                  "score": [0.5, 0.7, 0.6, 0.9]}).to_csv(per_domain, index=False)
    flat = analyse(str(per_domain))
    assert flat.sections["irt"] is False and flat.item_model is None and flat.information is None
    assert flat.flaws is None
    assert analyse(str(item_csv)).sections["irt"] is True
    assert analyse().sections["irt"] is True                                  # the bundled responses


def _with_record(name: str, applies: bool) -> nbformat.NotebookNode:
    """The committed notebook with the analysis cell's record saying whether ``irt`` applies."""
    nb = nbformat.read(str(find_notebook(name)), as_version=4)
    cell = next(c for c in nb.cells if "analyse_notebook(globals())" in c.source)
    record = {s: True for s in SECTIONS} | {"irt": applies}
    cell.outputs = [new_output("execute_result", data={"text/plain": "Analysis", SECTIONS_MIME: record},
                               execution_count=1)]
    return nb


@pytest.mark.parametrize("name, heading", [("jaggedness_report", "## Where each domain measures"),
                                           ("model_report", "## Where it sits on each domain's scale")])
def test_the_section_is_dropped_without_an_item_model_and_kept_with_one(name, heading):
    kept, _ = SectionFilter().preprocess(_with_record(name, True), {})
    dropped, resources = SectionFilter().preprocess(_with_record(name, False), {})
    assert any(c.source.startswith(heading) for c in kept.cells)
    assert not any(c.source.startswith(heading) for c in dropped.cells)
    assert not any("irt_views.information" in c.source or "describe_position" in c.source for c in dropped.cells)
    assert "irt" in resources["jagged_sections"]["removed"]
    # the items section stays, with its posterior table (it needs the item model, and says nothing without it)
    assert (name == "model_report") or any("flaw_table" in c.source for c in dropped.cells)


def test_small_matrices_run_on_one_blas_thread_large_ones_as_configured():
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads() -> set[int]:
        return {d["num_threads"] for d in threadpoolctl.threadpool_info() if d["user_api"] == "blas"}

    outside = blas_threads()
    with blas_threads_for(ONE_THREAD_BELOW - 1):
        assert blas_threads() <= {1}
    with blas_threads_for(ONE_THREAD_BELOW):
        assert blas_threads() == outside
    assert blas_threads() == outside


def test_beyond_glance_names_the_model_beyond_the_most_ranges():
    info = hand_information()
    one = v.beyond_glance(info)              # each model is beyond one domain: ties go by name
    assert one["subject"] == "Low" and (one["count"], one["total"]) == (1.0, 2.0)
    assert one["sentence"] == "Low sits below the measuring range of 1 of 2 domains."
    places = info.places.copy()
    places.loc[(places["model"] == "Top") & (places["group"] == "hard"), "position"] = "above"
    two = v.beyond_glance(dataclasses.replace(info, places=places))
    assert two["subject"] == "Top" and two["count"] == 2.0
    assert two["sentence"] == "Top sits above the measuring range of 2 of 2 domains."
    within = v.beyond_glance(dataclasses.replace(info, places=info.places.assign(position="within")))
    assert within["count"] == 0.0 and within["subject"] == "" and "Every model sits within" in within["sentence"]
    assert v.beyond_glance(None) is None
