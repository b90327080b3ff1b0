"""One model against the field: tables checked against hand-worked numbers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from jagged.analysis import AnalysisOptions, metrics_table
from jagged.errors import JaggedInputError
from jagged.readers.canonical import validate_scores
from jagged.readers.dataset import Dataset
from jagged.stats.intervals import wilson_interval
from jagged.stats.metrics import domain_errors, jaggedness, jaggedness_rank
from jagged.views import model_view as mv

# Error rates (1 - score):  A: .1 .4 .7   B: .2 .2 .2   C: .5 .3 (no d3)
ROWS = [
    ("A", "d1", 0.9, 100), ("A", "d2", 0.6, 50), ("A", "d3", 0.3, 20),
    ("B", "d1", 0.8, 100), ("B", "d2", 0.8, 50), ("B", "d3", 0.8, 20),
    ("C", "d1", 0.5, 100), ("C", "d2", 0.7, 50),
]


def make_scores(rows=ROWS) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["model", "domain", "score", "n_items"])
    return validate_scores(frame, "test")


def make_dataset(rows=ROWS) -> Dataset:
    return Dataset(scores=make_scores(rows), source="test", paths=[], format="long")


@pytest.fixture
def scores() -> pd.DataFrame:
    return make_scores()


def test_domain_errors_against_the_field_by_hand(scores):
    table = domain_errors(scores, "A")
    assert list(table.columns) == ["domain", "error", "error_lo", "error_hi", "n_items", "field_n", "field_min",
                                   "field_q25", "field_median", "field_q75", "field_max", "vs_median", "rank",
                                   "ranked"]
    assert table["domain"].tolist() == ["d3", "d2", "d1"]           # worst first
    np.testing.assert_allclose(table["error"], [0.7, 0.4, 0.1])
    assert table["field_n"].tolist() == [1, 2, 2]                     # C has no d3
    # d3: only B (0.2); d2: B 0.2, C 0.3; d1: B 0.2, C 0.5 (linear quantiles)
    np.testing.assert_allclose(table["field_min"], [0.2, 0.2, 0.2])
    np.testing.assert_allclose(table["field_q25"], [0.2, 0.225, 0.275])
    np.testing.assert_allclose(table["field_median"], [0.2, 0.25, 0.35])
    np.testing.assert_allclose(table["field_q75"], [0.2, 0.275, 0.425])
    np.testing.assert_allclose(table["field_max"], [0.2, 0.3, 0.5])
    np.testing.assert_allclose(table["vs_median"], [0.5, 0.15, -0.25])
    assert table["rank"].tolist() == [2, 3, 1]
    assert table["ranked"].tolist() == [2, 3, 3]
    np.testing.assert_allclose(table["n_items"], [20, 50, 100])


def test_domain_errors_only_the_models_domains_and_ties_share_a_place(scores):
    table = domain_errors(scores, "C")
    assert sorted(table["domain"]) == ["d1", "d2"]
    # d2: C 0.3 vs A 0.4, B 0.2 -> second; d1: C 0.5 is the worst of three
    assert dict(zip(table["domain"], table["rank"])) == {"d1": 3, "d2": 2}
    tied = make_scores([("A", "d1", 0.5, 10), ("A", "d2", 0.6, 10), ("B", "d1", 0.5, 10), ("B", "d2", 0.9, 10)])
    t = domain_errors(tied, "B").set_index("domain")
    assert t.loc["d1", "rank"] == 1 and t.loc["d2", "rank"] == 1


def test_domain_errors_single_model_has_no_field():
    one = make_scores([("A", "d1", 0.9, 10), ("A", "d2", 0.6, 10)])
    table = domain_errors(one, "A")
    assert table["field_n"].tolist() == [0, 0]
    assert table["field_median"].isna().all()
    assert table["rank"].tolist() == [1, 1]


def test_domain_errors_interval_from_n_items(scores):
    table = domain_errors(scores, "A").set_index("domain")
    lo, hi = wilson_interval(np.array([0.7]), np.array([20.0]))
    assert table.loc["d3", "error_lo"] == pytest.approx(lo[0])
    assert table.loc["d3", "error_hi"] == pytest.approx(hi[0])
    assert (table["error_lo"] < table["error"]).all() and (table["error"] < table["error_hi"]).all()


def test_resolve_model(scores):
    assert mv.resolve_model(scores, "") == "A"
    assert mv.resolve_model(scores, "C") == "C"
    with pytest.raises(JaggedInputError, match="did you mean 'Alpha'"):
        mv.resolve_model(make_scores([("Alpha", "d1", 0.9, 1), ("Alpha", "d2", 0.5, 1)]), "Alph")


def test_jaggedness_rank_by_hand(scores):
    rank = jaggedness_rank(jaggedness(scores), "A")
    row = rank.iloc[0]
    assert row["cv_error"] == pytest.approx(math.sqrt(0.06) / 0.4)
    assert row["cv_rank"] == 1                      # A .612 > C .25 > B 0
    assert row["ranked"] == 3
    assert row["macro_rank"] == 2                   # B .8 first; A and C tie at .6
    assert row["field_median_cv"] == pytest.approx(0.125)   # median(0, .25)
    c = jaggedness_rank(jaggedness(scores), "C").iloc[0]
    assert c["cv_rank"] == 2 and c["macro_rank"] == 2


def test_jaggedness_rank_undefined_cv_has_no_place():
    rows = ROWS + [("D", "d1", 1.0, 100), ("D", "d2", 1.0, 50), ("D", "d3", 1.0, 20)]
    table = jaggedness(make_scores(rows))
    d = jaggedness_rank(table, "D").iloc[0]
    assert pd.isna(d["cv_rank"]) and d["ranked"] == 3 and d["macro_rank"] == 1
    assert "no defined cv_error" in mv.describe_rank(jaggedness_rank(table, "D"))
    with pytest.raises(JaggedInputError):
        jaggedness_rank(table, "nobody")


def test_jaggedness_rank_collapses_profiles_and_keeps_intervals():
    table = metrics_table(make_dataset(), AnalysisOptions(profiles=("uniform", "items")))
    assert len(table) == 6
    rank = jaggedness_rank(table, "A")
    assert len(rank) == 1 and rank.iloc[0]["cv_rank"] == 1
    fake = jaggedness(make_scores()).assign(cv_error_corrected=0.5, cv_error_lo=0.1, cv_error_hi=0.9)
    card = mv.rank_card(jaggedness_rank(fake, "A")).set_index("column")
    assert card.loc["cv_error_corrected", "lo"] == 0.1 and card.loc["cv_error_corrected", "hi"] == 0.9
    assert np.isnan(card.loc["cv_error", "lo"]) and np.isnan(card.loc["macro_score", "lo"])
    assert "cv_error_lo" not in card.index


def test_extremes(scores):
    errors = domain_errors(scores, "A")
    ext = mv.extremes(errors, n=3)                   # 3 domains: one best, one worst
    assert ext["which"].tolist() == ["best", "worst"]
    assert ext["domain"].tolist() == ["d1", "d3"]
    big = make_scores([("A", f"d{i}", s, 10) for i, s in enumerate([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3])]
                      + [("B", f"d{i}", 0.5, 10) for i in range(7)])
    ext = mv.extremes(domain_errors(big, "A"), n=2)
    assert ext["domain"].tolist() == ["d0", "d1", "d6", "d5"]
    assert "Worst domain: d6" in mv.describe_extremes(ext) and "7.0×" in mv.describe_extremes(ext)  # 0.7 / 0.1
    with pytest.raises(JaggedInputError):
        mv.extremes(errors, n=0)


def test_model_wedges():
    dataset = make_dataset()
    assert mv.model_wedges(jaggedness(dataset.scores), "A").empty
    table = metrics_table(dataset, AnalysisOptions(profiles=("uniform", "items")))
    wedges = mv.model_wedges(table, "A")
    assert wedges["profile"].tolist() == ["uniform", "items"]
    np.testing.assert_allclose(wedges["wedge"], wedges["macro_score"] - wedges["dep_score"], atol=1e-12)
    assert wedges.loc[0, "wedge"] == pytest.approx(0.0, abs=1e-12)
    # items: weights 100/170, 50/170, 20/170 -> dep = (90 + 30 + 6) / 170
    assert wedges.loc[1, "dep_score"] == pytest.approx(126 / 170)


def test_interval_columns():
    frame = pd.DataFrame(columns=["a", "a_lo", "a_hi", "b_lo", "c", "c_hi", "d_lo", "d_hi"])
    assert mv.interval_columns(frame) == ["a", "d"]


def test_describe_rank_and_intervals(scores):
    table = jaggedness(scores)
    text = mv.describe_rank(jaggedness_rank(table, "A"))
    assert "the most jagged of 3 models" in text and "0.612" in text
    errors = domain_errors(scores, "A")
    assert "Every domain's error rate has a 95% Wilson interval" in mv.describe_intervals(table, errors, "A", 0.95)
    no_items = domain_errors(make_scores([(m, d, s, None) for m, d, s, _ in ROWS]), "A")
    assert "no item counts" in mv.describe_intervals(table, no_items, "A", 0.95)
    assert "A's error rate in each of 3 domains" in mv.field_alt_text(errors, "A")


def test_plot_draws_the_field_and_escapes_names(scores):
    import matplotlib.pyplot as plt

    from jagged.plots.model import domain_errors_vs_field

    errors = domain_errors(scores, "A")
    ax = domain_errors_vs_field(errors, model="A")
    gids = {a.get_gid() for a in ax.get_children()}
    assert {"field-range", "field-iqr", "field-median", "model-error", "model-interval"} <= gids
    assert [t.get_text() for t in ax.get_yticklabels()] == ["d3", "d2", "d1"]
    points = next(a for a in ax.collections if a.get_gid() == "model-error").get_offsets()
    np.testing.assert_allclose(np.asarray(points)[:, 0], [0.7, 0.4, 0.1])
    plt.close(ax.figure)
    hostile = errors.assign(domain=["$\\frac{", "<b>x</b>", "a" * 80])
    ax = domain_errors_vs_field(hostile, model="$x$", intervals=False)
    ax.figure.canvas.draw()                          # an unescaped "$\frac{" would not parse
    assert ax.get_yticklabels()[0].get_text() == "\\$\\frac{"
    assert len(ax.get_yticklabels()[2].get_text()) == 40
    assert "model-interval" not in {a.get_gid() for a in ax.get_children()}
    with pytest.raises(ValueError, match="field_median"):
        domain_errors_vs_field(errors.drop(columns="field_median"))


# --------------------------------------------------------------------------- not tested, no intervals (issue 18)

def test_card_says_not_tested_and_has_no_interval_columns_when_every_interval_is_missing():
    scores = validate_scores(pd.DataFrame({"model": ["a"] * 3 + ["b"] * 3, "domain": list("xyz") * 2,
                                           "score": [0.9, 0.8, 0.5, 0.7, 0.6, 0.65]}), "t", line_offset=None)
    ds = Dataset(scores=scores, source="t", paths=[], format="long")
    table = metrics_table(ds, AnalysisOptions(bootstrap=40))
    assert {"cv_error_lo", "cv_error_hi"} <= set(table.columns) and table["cv_error_lo"].isna().all()
    card = mv.rank_card(jaggedness_rank(table, "a"))
    flag = card.set_index("column").loc["noise_flag"]
    assert flag["measure"] == "indistinguishable from noise" and flag["value"] == "not tested (no item counts)"
    assert "lo" not in card.columns and "hi" not in card.columns          # no column of dashes
    errors = domain_errors(scores, "a")
    text = mv.describe_intervals(table, errors, "a", 0.95)
    assert "Bootstrap intervals (95%) are shown for" not in text
    assert "There are no bootstrap intervals for this model's metrics: the scores carry no n_items" in text


def test_card_keeps_intervals_where_they_exist(scores):
    table = metrics_table(Dataset(scores=scores, source="t", paths=[], format="long"),
                          AnalysisOptions(bootstrap=40, seed=1))
    model = table["model"].iloc[0]
    card = mv.rank_card(jaggedness_rank(table, model))
    assert {"lo", "hi"} <= set(card.columns)
    row = card.set_index("column").loc["cv_error_corrected"]
    assert row["lo"] == table.set_index("model").loc[model, "cv_error_lo"]
    assert row["lo"] <= row["value"] <= row["hi"]
    assert "cv_error" in mv.describe_intervals(table, domain_errors(scores, model), model, 0.95)
