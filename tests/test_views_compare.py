"""The compare report's tables, sentences and figures (jagged.views.compare, jagged.plots.compare)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from compare_pairs import grader_bug_pair, hand_pair, items_dataset, scores_dataset
from matplotlib.colors import to_hex

from jagged.analysis import SECTIONS_MIME
from jagged.plots.compare import (
    BEYOND_COLOR,
    NO_INTERVAL_COLOR,
    WITHIN_COLOR,
    a_against_b,
    delta_forest,
    domain_shifts,
    field_forest,
)
from jagged.stats.compare import compare
from jagged.stats.ledger import item_ledger
from jagged.views import compare as views

# Like-for-like macro scores of the hand pair (tests/test_compare.py works them out):
# m1 0.5 -> 5/6, m2 5/6 -> 2/3, m3 0.5 -> 1.
HAND_DELTA = {"m1": 1 / 3, "m2": -1 / 6, "m3": 0.5}


@pytest.fixture(scope="module")
def hand():
    a, b = hand_pair()
    return compare(a, b, n_boot=400, seed=3)


def _models(rows):
    """A hand-made Comparison.models: (model, a, b, lo, hi)."""
    frame = pd.DataFrame(rows, columns=["model", "macro_score_a", "macro_score_b", "macro_score_delta_lo",
                                        "macro_score_delta_hi"])
    return frame.assign(macro_score_delta=frame["macro_score_b"] - frame["macro_score_a"])


def test_beyond_noise_means_the_interval_excludes_zero():
    table = _models([("up", 0.5, 0.6, 0.02, 0.18), ("down", 0.5, 0.4, -0.2, -0.01), ("span", 0.5, 0.55, -0.01, 0.1),
                     ("edge", 0.5, 0.55, 0.0, 0.1), ("none", 0.5, 0.6, np.nan, np.nan)])
    assert views.beyond_noise(table).tolist() == [True, True, False, False, False]


def test_model_moves_largest_change_first_with_ranks(hand):
    moves = views.model_moves(hand)
    assert moves["model"].tolist() == ["m3", "m1", "m2"]
    for row in moves.itertuples(index=False):
        assert row.macro_score_delta == pytest.approx(HAND_DELTA[row.model])
        assert row.n_items == 5
    # ranks by like-for-like macro score: A m2 (5/6) 1st, m1 and m3 (0.5) share 2nd; B m3, m1, m2
    ranks = moves.set_index("model")[["rank_a", "rank_b"]]
    assert ranks.loc["m2"].tolist() == [1, 3] and ranks.loc["m1"].tolist() == [2, 2]
    assert ranks.loc["m3"].tolist() == [2, 1]
    expected = views.beyond_noise(hand.models.set_index("model").loc[moves["model"]].reset_index())
    assert moves["beyond_noise"].tolist() == expected.tolist()


def test_item_counts_and_domains_of_the_hand_pair(hand):
    # i2 (d1) only in A, i7 (d3) only in B, i4 (d2) re-keyed A -> B; 3 models cannot move a difficulty
    counts = views.change_counts(hand).set_index("change")["n_items"]
    assert counts.to_dict() == {"added": 1, "removed": 1, "key_changed": 1, "text_changed": 0, "difficulty_moved": 0}
    domains = views.domain_changes(hand).set_index("domain")
    assert domains.loc["d1", "removed"] == 1 and domains.loc["d2", "key_changed"] == 1
    assert domains.loc["d3", "added"] == 1 and set(domains["status"]) == {"both"}
    assert domains["n_changed"].tolist() == [1, 1, 1]


def test_an_item_with_two_changes_counts_in_both():
    ledger = pd.DataFrame({"item": ["x", "y"], "domain": ["d", "d"], "change": ["key_changed", "difficulty_moved"],
                           "changes": ["key_changed; difficulty_moved", "difficulty_moved"]})
    comparison = type("C", (), {"ledger": ledger})()
    counts = views.change_counts(comparison).set_index("change")["n_items"]
    assert counts["key_changed"] == 1 and counts["difficulty_moved"] == 2 and counts["added"] == 0


def test_domain_changes_of_domain_level_inputs_list_added_and_removed_domains():
    a = scores_dataset([("m", "d1", 0.5, 10), ("m", "d2", 0.6, 10)], "a")
    b = scores_dataset([("m", "d1", 0.5, 10), ("m", "d3", 0.6, 10)], "b")
    table = views.domain_changes(compare(a, b, n_boot=0)).set_index("domain")
    assert table["status"].to_dict() == {"d2": "removed", "d3": "added"}


def test_ledger_top_puts_the_best_established_changes_first_and_clips_text():
    rows = []
    for model, got in zip("pqrstuvw", range(8)):
        rows += [(model, "d", "moved", 0, "old words"), (model, "d", "same", got % 2, "kept"),
                 (model, "d", "gone", 1, "gone text")]
    a = pd.DataFrame(rows, columns=["model", "domain", "item", "correct", "text"])
    b = a[a["item"] != "gone"].copy()
    b.loc[b["item"] == "moved", "correct"] = 1
    b.loc[b["item"] == "moved", "text"] = "new words " + "w" * 400
    ledger = item_ledger(a, b)  # "moved": all 8 models flip (p = 2/256), its text changed; "gone": removed
    top = views.ledger_top(ledger)
    assert top["item"].tolist() == ["moved", "gone"]
    assert top.loc[0, "changes"] == "text_changed; difficulty_moved"
    assert top.loc[0, "text_a"] == "old words"
    assert len(top.loc[0, "text_b"]) == views.TEXT_MAX and top.loc[0, "text_b"].endswith("…")
    assert views.ledger_top(ledger, top=1)["item"].tolist() == ["moved"]
    assert views.ledger_top(None) is None


def test_sections_and_the_record_the_renderer_reads(hand):
    assert views.compare_sections(hand) == {"field": True, "changes": False, "items": True, "rescoring": True,
                                            "profiles": False, "repeats": False}
    bundle = views.CompareView(hand, "hand_a", "hand_b")._repr_mimebundle_()
    assert bundle[SECTIONS_MIME] == views.compare_sections(hand)
    assert "hand_a" in bundle["text/plain"]
    a = scores_dataset([("m", "d1", 0.5, 10), ("m", "d2", 0.6, 10), ("gone", "d1", 0.3, 10)], "a")
    b = scores_dataset([("m", "d1", 0.5, 10), ("m", "d2", 0.7, 10)], "b")
    weights = pd.DataFrame([[0.75, 0.25]], index=["p"], columns=["d1", "d2"])
    sections = views.compare_sections(compare(a, b, weights, n_boot=0))
    # one model on both sides: the benchmark's part cannot be told from the model's (no "field" section)
    assert sections == {"field": False, "changes": True, "items": False, "rescoring": False, "profiles": True,
                        "repeats": False}


def test_findings_of_the_hand_pair(hand):
    text = views.findings(views.CompareView(hand, "hand_a", "hand_b"))
    assert text[0].startswith("A is hand_a, B is hand_b; 3 models on both sides")
    assert text[1] == "What changed: items: 1 added, 1 removed, 1 key changed."
    # changes of the 9 cells (m × d): m1 (0, +1/2, +1/2), m2 (0, 0, -1/2), m3 (+1, +1/2, 0): μ = 2/9; the shares
    # are tested in tests/test_shifts.py, the sentence says them
    assert text[2].startswith("33% of the squared change on the 9 shared cells is the benchmark's")
    assert "an overall shift of +0.2222" in text[2] and "67% is the models'" in text[2]
    # d1: only m3 changed, on a domain of one common item: the replicates never vary, so no domain is called
    assert text[3] == "No domain moved for every model beyond noise; the largest shift for the field is d1 " \
                      "+0.3333 [+0.3333, +0.3333]."
    assert text[4].startswith("Relative to the field (each model's change minus the field's mean change, +0.2222)")
    moved = int(views.model_moves(hand)["beyond_noise"].sum())
    field = int(views.model_moves(hand)["vs_field_beyond_noise"].sum())
    assert text[5].startswith(f"The macro score changed beyond noise for {moved} of 3 models")
    assert f"relative to the field, {field})" in text[5] and "from -0.1667 to +0.5000" in text[5]
    assert text[6].startswith("Largest macro-score changes (B − A, like for like): m3 +0.5000 [")
    assert any(s.startswith("Ranking by macro score: Kendall's tau between the sides is -0.816") for s in text)
    # re-scoring: m1 chose the new key of i4 (gains 1, d2 0.5 -> 1: macro +1/6), m2 chose the old one (-1/6)
    rescoring = next(s for s in text if s.startswith("Re-scoring"))
    assert "by -0.1667 to +0.1667 (most: m1, 1 result gained and 0 lost)" in rescoring


def test_findings_name_added_and_removed_models_and_say_when_there_are_no_intervals():
    a = scores_dataset([("m", "d1", 0.5, 10), ("m", "d2", 0.6, 10), ("old", "d1", 0.3, 10), ("old", "d2", 0.3, 10)],
                       "v1")
    b = scores_dataset([("m", "d1", 0.5, 10), ("m", "d2", 0.7, 10), ("new", "d1", 0.4, 10), ("new", "d2", 0.4, 10)],
                       "v2")
    comparison = compare(a, b, n_boot=0)
    for column in ("macro_score_delta_lo", "macro_score_delta_hi"):  # as jagged compare --bootstrap 0 leaves them
        comparison.models[column] = np.nan
    text = views.findings(views.CompareView(comparison, "v1", "v2"))
    assert text[1] == "What changed: 1 model added (new: only in v2); 1 model removed (old: only in v1)."
    assert text[2].startswith("The benchmark's part of the change cannot be told from the models'")
    assert text[3].startswith("The like-for-like macro-score changes range from +0.0500 to +0.0500; no intervals "
                              "were computed for them")


def test_findings_with_nothing_changed_say_so_in_plain_words():
    a, _ = hand_pair()
    comparison = compare(a, a, n_boot=200, seed=1)
    text = views.findings(views.CompareView(comparison, "x", "x"))
    assert text[1] == ("Nothing was added or removed: the same models and domains are on both sides, and no item's "
                       "key, text or difficulty changed.")
    assert text[2] == ("No shared cell changed: every model scores the same in A and B on the items each model "
                       "answered on both sides.")
    assert text[3] == "Ranking by macro score: the same on both sides."
    assert "+0.0000" not in " ".join(text) and "[1.000, 1.000]" not in " ".join(text)
    assert not views.compare_sections(comparison)["field"]
    # without item counts: no interval for the changes, and none shown for tau either
    rows = [(m, d, s, None) for m, s in (("m", 0.5), ("n", 0.7)) for d in ("d1", "d2")]
    same = compare(scores_dataset(rows, "v"), scores_dataset(rows, "v"), n_boot=200)
    table = views.glance_table(same).set_index("measure")["value"]
    assert table["Kendall's tau of the macro rankings"] == "1.000"
    assert table["benchmark's share of the squared change (overall + domain shifts)"] == "no shared cell changed"
    assert views.findings(views.CompareView(same, "v", "v"))[2].startswith("No shared cell changed")


def test_findings_html_escapes_names():
    markup = views.findings_html(["model <script>alert(1)</script> & co"])
    assert "<script>" not in markup and "&lt;script&gt;" in markup and "&amp; co" in markup


def test_glance_table_counts(hand):
    table = views.glance_table(hand).set_index("measure")["value"]
    assert table["models on both sides"] == "3" and table["compared on"] == "common items"
    assert table["items key changed"] == "1" and table["models added"] == "0"
    assert table["Kendall's tau of the macro rankings"].startswith("-0.816 [")
    assert table["benchmark's share of the squared change (overall + domain shifts)"] == "33.3%"
    assert table["domains shifted beyond noise for every model"] == "0 of 3"


def test_profile_moves_per_profile_and_model():
    a = scores_dataset([("m", "d1", 0.5, 100), ("m", "d2", 0.6, 100)], "a")
    b = scores_dataset([("m", "d1", 0.7, 100), ("m", "d2", 0.6, 100)], "b")
    weights = pd.DataFrame([[0.75, 0.25], [0.5, 0.5]], index=["p", "q"], columns=["d1", "d2"])
    table = views.profile_moves(compare(a, b, weights, n_boot=100)).set_index("profile")
    # dep_score: p 0.75*0.5+0.25*0.6 = 0.525 -> 0.675 (+0.15); q 0.55 -> 0.65 (+0.10)
    assert table.loc["p", "dep_score_delta"] == pytest.approx(0.15)
    assert table.loc["q", "dep_score_delta"] == pytest.approx(0.10)
    # wedge = macro - dep: p 0.55-0.525 = 0.025 -> 0.65-0.675 = -0.025
    assert table.loc["p", "wedge_delta"] == pytest.approx(-0.05)
    assert views.profile_moves(compare(a, b, n_boot=0)) is None


# --------------------------------------------------------------------------- figures

def test_delta_forest_draws_each_change_with_its_interval_and_colour():
    table = _models([("up", 0.5, 0.6, 0.02, 0.18), ("span", 0.5, 0.55, -0.01, 0.1), ("none", 0.5, 0.45, np.nan,
                                                                                     np.nan)])
    ax = delta_forest(table)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["none", "span", "up"]  # sorted by change, largest at the top
    points = ax.collections[-1]
    assert points.get_offsets()[:, 0].tolist() == pytest.approx([-0.05, 0.05, 0.1])
    colours = [to_hex(c) for c in points.get_facecolors()]
    assert colours == [to_hex(NO_INTERVAL_COLOR), to_hex(WITHIN_COLOR), to_hex(BEYOND_COLOR)]
    segments = ax.collections[0].get_segments()
    assert [tuple(s[:, 0]) for s in segments] == [pytest.approx((-0.01, 0.1)), pytest.approx((0.02, 0.18))]


def test_delta_forest_limit_keeps_the_largest_changes():
    table = _models([(f"m{k}", 0.5, 0.5 + d, d - 0.01, d + 0.01) for k, d in enumerate([0.01, -0.2, 0.05, 0.3])])
    ax = delta_forest(table, limit=2)
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == ["m1", "m3"]
    assert "2 largest of 4" in ax.get_title()


def test_a_against_b_places_each_model_and_its_paired_interval():
    table = _models([("x", 0.4, 0.5, 0.05, 0.15), ("y", 0.7, 0.69, -0.03, 0.01)])
    ax = a_against_b(table)
    points = ax.collections[-1].get_offsets()
    assert points.tolist() == [pytest.approx([0.4, 0.5]), pytest.approx([0.7, 0.69])]
    bars = ax.collections[0].get_segments()  # A + the interval of the change
    assert tuple(bars[0][:, 1]) == pytest.approx((0.45, 0.55)) and tuple(bars[1][:, 1]) == pytest.approx((0.67, 0.71))


def test_alt_texts_state_the_numbers():
    table = _models([("up", 0.5, 0.6, 0.02, 0.18), ("span", 0.5, 0.45, -0.1, 0.01)])
    alt = views.forest_alt(table)
    assert "2 models" in alt and "1 exclude 0" in alt and "up +0.1000" in alt and "span -0.0500" in alt
    assert "1 lie above it" in views.pairs_alt(table)


def test_plots_refuse_a_table_without_the_columns():
    with pytest.raises(ValueError, match="macro_score_delta"):
        delta_forest(pd.DataFrame({"model": ["m"], "macro_score_a": [0.5], "macro_score_b": [0.6]}))


def test_items_scope_is_said_in_the_first_finding():
    a = items_dataset([("m", "d1", "i1", 1), ("m", "d2", "i2", 0), ("m", "d2", "i3", 1)], "a")
    b = items_dataset([("m", "d1", "i1", 1), ("m", "d2", "i2", 1), ("m", "d2", "i3", 1)], "b")
    text = views.findings(views.CompareView(compare(a, b, n_boot=0), "a", "b"))
    assert "the items each model answered on both sides (up to 3)" in text[0]


def test_a_benchmark_change_is_told_as_one_that_every_model_shares():
    c = compare(*grader_bug_pair(), n_boot=300, seed=1)
    text = views.findings(views.CompareView(c, "a", "b"))
    assert text[2].startswith("100% of the squared change on the 24 shared cells is the benchmark's")
    assert "0% is the models'" in text[2]
    assert text[3].startswith("1 of 3 domains moved for every model beyond noise (the field's mean change with its "
                              "95% interval): law -0.3750 [")
    assert text[4].endswith("no model's change is beyond noise: the models moved together.")
    assert text[5].startswith("The macro score changed beyond noise for 8 of 8 models (0 up, 8 down") and \
        "relative to the field, 0)" in text[5]
    shifts = views.domain_shifts(c)
    assert shifts["domain"].tolist()[0] == "law" and "interval_method" not in shifts.columns
    shares = views.shares_table(c).set_index("part")["share"]
    assert shares.iloc[:2].sum() == pytest.approx(1.0) and shares.iloc[2:].sum() == pytest.approx(0.0)
    found = {f.section: f for f in views.glance(views.CompareView(c, "a", "b"))}
    assert found["domains"].subject == "law" and found["domains"].value == pytest.approx(-0.375)
    assert found["domains"].count == 1 and found["models"].count == 0 and found["changes"].count == 8
    by_field = views.model_moves(c, by="macro_delta_vs_field")
    assert not by_field["vs_field_beyond_noise"].any() and by_field["beyond_noise"].all()
    ax = domain_shifts(c.domains)
    assert [t.get_text() for t in ax.get_yticklabels()][0] == "law"  # the largest fall at the bottom
    assert to_hex(ax.collections[-1].get_facecolors()[0]) == to_hex(BEYOND_COLOR)
    assert "the field's shift" in ax.get_xlabel()
    alt = views.shifts_alt(c.domains)
    assert "3 domains" in alt and "1 exclude 0" in alt and "law -0.3750" in alt
    assert "relative to the field" in field_forest(c.models).get_xlabel()
    assert "8 models" in views.forest_alt(c.models, "field")


def test_an_interval_is_named_by_how_it_was_computed_when_the_changes_have_none():
    rows_a = [(m, d, s, None) for m, base in (("p", 0.5), ("q", 0.6), ("r", 0.7)) for d, s in
              (("d1", base), ("d2", base + 0.1), ("d3", base - 0.1))]
    rows_b = [(m, d, s + (0.4 if (m, d) == ("p", "d1") else 0.0), n) for m, d, s, n in rows_a]  # p passes q
    text = views.findings(views.CompareView(compare(scores_dataset(rows_a, "a"), scores_dataset(rows_b, "b"),
                                                    n_boot=300, seed=2), "a", "b"))
    noise = next(t for t in text if t.startswith("The like-for-like macro-score changes range"))
    assert "no intervals were computed for them" in noise
    rank = next(t for t in text if t.startswith("Ranking by macro score"))
    assert " [" in rank and "(its interval from resampling the domains)" in rank
