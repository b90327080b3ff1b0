"""The item audit: every classical statistic against an independent computation, flags, scale paths.

Independent computations: a tiny response matrix worked by hand; scipy.stats.pointbiserialr
and pearsonr(alternative="greater") per item and option; a loop for the upper/lower groups.
Truth: a 2PL simulation, and the 31 MMLU-Pro items whose key letter was revised between file
versions (``tests/data/mmlu_pro_items.csv.gz``). P(flawed) itself: tests/test_flaw.py.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import assert_bad_input, run_cli
from item_simulation import recall_and_auc, simulate
from scipy import stats

import jagged
from jagged.errors import JaggedInputError
from jagged.readers import items as items_module
from jagged.readers.items import validate_items
from jagged.stats import item_audit as ia
from jagged.stats.item_expr import UPPER_LOWER
from jagged.stats.item_sums import item_sums

ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = ROOT / "tests" / "data"
#: Items whose option list differs between MMLU-Pro file versions (shared provenance, section 7).
REVISED_OPTIONS = {2129, 2253, 2453, 3983, 5457, 5664, 5666, 6921, 8410, 8582, 8584}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def bundled() -> ia.ItemAudit:
    return ia.audit_items(items_module.load_bundled_items())


@pytest.fixture(scope="module")
def revised_keys() -> set[str]:
    """The 31 MMLU-Pro items whose key letter differs between files while their options do not."""
    table = pd.read_csv(TEST_DATA / "mmlu_pro_items.csv.gz")
    differ = set(table.loc[table["answer_key_differs_across_files"] == 1, "item_id"])
    return {str(i) for i in differ - REVISED_OPTIONS}


def tiny() -> pd.DataFrame:
    """4 models × 3 items of one domain (worked by hand below)."""
    x = {"A": (1, 1, 1), "B": (1, 1, 0), "C": (1, 0, 0), "D": (0, 0, 1)}
    choice = {"A": ("A", "A", "A"), "B": ("A", "A", "B"), "C": ("A", "C", "B"), "D": ("B", "C", "A")}
    rows = [{"model": m, "domain": "d", "item": f"i{k + 1}", "correct": x[m][k], "choice": choice[m][k], "key": "A"}
            for m in x for k in range(3)]
    return pd.DataFrame(rows)


def guttman(n_models: int = 12, n_anchor: int = 20) -> pd.DataFrame:
    """Anchor items that order the models (model j right on anchor k when j > k·n/anchor), plus target items."""
    rows = []
    models = [f"m{j:02d}" for j in range(n_models)]
    for k in range(n_anchor):
        for j, m in enumerate(models):
            right = j > k * n_models / n_anchor
            rows.append((m, "d", f"anchor{k:02d}", "A" if right else "BCD"[(j + k) % 3], "A"))
    strong = range(n_models // 2, n_models)
    for j, m in enumerate(models):
        rows.append((m, "d", "sound", "A" if j in strong else "BCD"[j % 3], "A"))
        rows.append((m, "d", "reversed", "C" if j in strong else "A", "A"))
        rows.append((m, "d", "easy", "A", "A"))
        rows.append((m, "d", "hard", "BCD"[j % 3], "A"))
        rows.append((m, "d", "keyed", "A", "A" if j % 2 else "B"))
    table = pd.DataFrame(rows, columns=["model", "domain", "item", "choice", "key"])
    table["correct"] = (table["choice"] == table["key"]).astype(int)
    table["n_options"] = 4
    return table


def independent_rest(table: pd.DataFrame) -> pd.DataFrame:
    """Each row's rest score by pandas: the model's mean correct over its other items of the domain."""
    g = table.groupby(["model", "domain"])["correct"]
    s, n = g.transform("sum"), g.transform("size")
    return table.assign(rest=(s - table["correct"]) / (n - 1))


# --------------------------------------------------------------------------- hand-worked


def test_tiny_matrix_worked_by_hand():
    a = ia.audit_items(tiny()).items.set_index("item")
    # rest scores: i1 R = (1, .5, 0, .5) with x = (1, 1, 1, 0): cov 0
    assert a.loc["i1", "r_rest"] == pytest.approx(0.0, abs=1e-12)
    # i2: x = (1, 1, 0, 0), R = (1, .5, .5, .5): r = .0625 / sqrt(.25 · .046875) = 1/sqrt(3)
    assert a.loc["i2", "r_rest"] == pytest.approx(1 / math.sqrt(3))
    # i3: x = (1, 0, 0, 1), R = (1, 1, .5, 0): r = -1/sqrt(11)
    assert a.loc["i3", "r_rest"] == pytest.approx(-1 / math.sqrt(11))
    # k = floor(.27 · 4 + .5) = 1; i2: upper A (1), lower shared by B, C, D (1/3 each): 1 - 1/3
    assert a.loc["i2", "ul_index"] == pytest.approx(2 / 3)
    assert a.loc["i1", "ul_index"] == pytest.approx(0.0)
    # i3: upper tie A, B (1/2 each: (1 + 0)/2), lower D (1): .5 - 1
    assert a.loc["i3", "ul_index"] == pytest.approx(-0.5)
    assert a.loc["i2", "p_correct"] == 0.5 and a.loc["i1", "p_correct"] == 0.75
    assert a.loc["i2", "top_wrong"] == "C" and a.loc["i2", "top_wrong_share"] == 0.5
    assert a.loc["i1", "top_wrong"] == "B" and a.loc["i1", "top_wrong_share"] == 0.25
    # 4 models < MIN_MODELS: discrimination flags are not computed, the note says so
    assert a["flag_negative_discrimination"].isna().all() and a["flag_distractor_attracts_able"].isna().all()
    assert a["note"].str.contains("discrimination not flagged").all()


def test_tiny_matrix_distractor_correlation_and_p_value_by_hand():
    o = ia.audit_items(tiny()).options.set_index(["item", "option"])
    # i3, option B: D = (0, 1, 1, 0), R = (1, 1, .5, 0): r = +1/sqrt(11)
    r = o.loc[("i3", "B"), "r_rest"]
    assert r == pytest.approx(1 / math.sqrt(11))
    # t = r sqrt(2 / (1 - r²)) = sqrt(.2); Student t with 2 df: sf(t) = 1/2 - t / (2 sqrt(2 + t²))
    t = math.sqrt(0.2)
    assert o.loc[("i3", "B"), "p_value"] == pytest.approx(0.5 - t / (2 * math.sqrt(2 + t * t)))
    # i2, option C is 1 - x: r = -1/sqrt(3)
    assert o.loc[("i2", "C"), "r_rest"] == pytest.approx(-1 / math.sqrt(3))


def test_audit_from_sums_leaves_the_sums_it_is_given_unchanged():
    """The audit keeps a copy of the sums without the item/option tables; the caller's stay whole (issue 22)."""
    sums = item_sums(validate_items(guttman(), "<item table>", line_offset=None), rest="domain")
    n_items, n_options = len(sums.items), len(sums.options)
    assert n_items == 25 and n_options > 0
    first = ia.audit_from_sums(sums)
    assert len(sums.items) == n_items and len(sums.options) == n_options
    assert len(first.sums.items) == 0 and len(first.sums.options) == 0
    second = ia.audit_from_sums(sums)  # the same sums again: the same audit
    pd.testing.assert_frame_equal(second.items, first.items)
    pd.testing.assert_frame_equal(second.options, first.options)
    pd.testing.assert_frame_equal(first.items, ia.audit_items(guttman(), model=False).items)


# --------------------------------------------------------------------------- against scipy, per item


def test_statistics_against_per_item_scipy_on_simulated_data():
    table, _ = simulate(n_models=14, n_items=240, n_domains=3, seed=5)
    audit = ia.audit_items(table)
    got = audit.items.set_index("item")
    rows = independent_rest(table)
    checked = 0
    for item, g in rows.groupby("item"):
        x, r = g["correct"].to_numpy(), g["rest"].to_numpy()
        assert got.loc[item, "p_correct"] == pytest.approx(x.mean())
        if x.std() > 0 and r.std() > 0:
            assert got.loc[item, "r_rest"] == pytest.approx(stats.pointbiserialr(x, r).statistic, abs=1e-9)
            checked += 1
        else:
            assert np.isnan(got.loc[item, "r_rest"])
    assert checked > 200
    # each wrong option: share, correlation with the rest score, one-sided p (scipy pearsonr)
    options = audit.options[audit.options["valid"] & (audit.options["n_wrong"] > 0)].set_index(["item", "option"])
    n_p = 0
    for (item, option), row in options.iterrows():
        g = rows[rows["item"] == item]
        d = ((g["choice"] == option) & (g["correct"] == 0)).to_numpy(dtype=float)
        assert row["wrong_share"] == pytest.approx(d.mean())
        if 0 < d.sum() < len(d) and g["rest"].std() > 0:
            res = stats.pearsonr(d, g["rest"].to_numpy(), alternative="greater")
            assert row["r_rest"] == pytest.approx(res.statistic, abs=1e-9)
            assert row["p_value"] == pytest.approx(res.pvalue, rel=1e-6, abs=1e-12)
            n_p += 1
    assert n_p > 300
    q = options["q_value"].to_numpy()
    ok = np.isfinite(options["p_value"].to_numpy())
    assert q[ok] == pytest.approx(stats.false_discovery_control(options["p_value"].to_numpy()[ok]))


def upper_lower_weights(item: np.ndarray, rest: np.ndarray, n_items: int,
                        frac: float = UPPER_LOWER) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Upper- and lower-group weights of every row, and the group size per item, by the audit's expression in DuckDB.

    The same window expression as the audit's (:func:`jagged.stats.item_expr.weighted_rows_expr`),
    for rows given as arrays.

    Parameters
    ----------
    item : numpy.ndarray
        Item code of each row (0 … n_items − 1).
    rest : numpy.ndarray
        Rest score of each row in [0, 1]; NaN rows get weight 0 and do not count.
    n_items : int
        Number of items.
    frac : float
        Share of the item's models in each group.

    Returns
    -------
    w_upper, w_lower : numpy.ndarray
        Per-row weights in [0, 1]; they sum to ``k`` within each item.
    k : numpy.ndarray
        Per item, ``max(1, floor(frac · n_R + 0.5))`` (0 when no row has a rest score).
    """
    import ibis

    from jagged.stats.engine import Engine, table_from_frame
    from jagged.stats.item_expr import fetch, weighted_rows_expr

    item = np.asarray(item, dtype=np.int64)
    rest = np.asarray(rest, dtype=float)
    # one "model" per row whose group holds the row and one other: the rest score comes out as given
    # (s - x) / (n - 1) with x = 0, s = rest, n = 2
    frame = pd.DataFrame({"row": np.arange(len(item)), "item": item.astype(str), "rest_in": rest})
    with Engine().backend() as con:
        t = table_from_frame(con, frame, {"row": "int64", "item": "string", "rest_in": "float64"})
        mg = t.select(model=t.row.cast("string"), grp=ibis.literal("g"),
                      s=t.rest_in, n=ibis.ifelse(t.rest_in.isnan() | t.rest_in.isnull(), 1, 2).cast("int64"))
        rows = t.select(model=t.row.cast("string"), grp=ibis.literal("g"), item=t.item, domain=ibis.literal("d"),
                        x=ibis.literal(0.0), choice=ibis.null("string"), informed=ibis.literal(False),
                        n_options=ibis.null("float64"))
        w = weighted_rows_expr(rows, mg, frac)
        out = fetch(con, w.select(row=w.model.cast("int64"), w_u=w.w_u, w_l=w.w_l, k=w.k))
    order = np.argsort(out["row"].to_numpy(dtype=np.int64))
    k = np.zeros(n_items)
    row_k = out["k"].to_numpy(dtype=float)[order]
    k[item] = row_k
    return out["w_u"].to_numpy(dtype=float)[order], out["w_l"].to_numpy(dtype=float)[order], k


def _loop_weights(item: np.ndarray, rest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Upper/lower weights by a plain loop: sort each item's models, share the boundary among ties."""
    wu, wl = np.zeros(len(rest)), np.zeros(len(rest))
    for it in np.unique(item):
        rows = np.flatnonzero(item == it)
        k = max(1, math.floor(0.27 * len(rows) + 0.5))
        for out, sign in ((wu, 1), (wl, -1)):
            values = sign * rest[rows]
            for r, v in zip(rows, values):
                above = int((values > v).sum())
                tied = int((values == v).sum())
                out[r] = min(1.0, max(0.0, (k - above) / tied)) if above + tied > k else 1.0
    return wu, wl


def test_upper_lower_weights_against_a_loop_with_ties():
    rng = np.random.default_rng(1)
    item = np.repeat(np.arange(40), rng.integers(2, 30, 40))
    rest = rng.integers(0, 5, len(item)) / 4.0  # many ties
    wu, wl, k = upper_lower_weights(item, rest, 40)
    lu, ll = _loop_weights(item, rest)
    assert wu == pytest.approx(lu) and wl == pytest.approx(ll)
    assert np.bincount(item, wu) == pytest.approx(k) and np.bincount(item, wl) == pytest.approx(k)


# --------------------------------------------------------------------------- flags


def test_named_flags_on_constructed_items():
    audit = ia.audit_items(guttman())
    a = audit.items.set_index("item")
    rows = independent_rest(guttman())
    for item, g in rows.groupby("item"):
        x, r = g["correct"].to_numpy(), g["rest"].to_numpy()
        if x.std() > 0:
            rr = stats.pointbiserialr(x, r).statistic
            assert bool(a.loc[item, "flag_negative_discrimination"]) == (rr < 0)
            assert bool(a.loc[item, "flag_weak_discrimination"]) == (0 <= rr < 0.20)
        p = x.mean()
        assert bool(a.loc[item, "flag_too_hard"]) == (p < 0.25)  # chance 1/4 is above 0.20
        assert bool(a.loc[item, "flag_too_easy"]) == (p > 0.90)
    assert a.loc["reversed", "flag_negative_discrimination"] and a.loc["reversed", "flag_strong_agree_wrong"]
    assert a.loc["reversed", "flag_distractor_attracts_able"] and a.loc["reversed", "top_wrong"] == "C"
    assert a.loc["reversed", "strong_choice"] == "C" and a.loc["reversed", "likely_key"] == "C"
    assert not a.loc["sound", "flagged"] and a.loc["sound", "r_rest"] > 0.5
    assert a.loc["easy", "flag_uninformative"] and a.loc["easy", "flag_too_easy"]
    assert a.loc["hard", "flag_uninformative"] and a.loc["hard", "flag_too_hard"]
    assert "every model wrong" in a.loc["hard", "note"] and pd.isna(a.loc["hard", "flag_weak_discrimination"])
    assert a.loc["keyed", "flag_key_inconsistent"] and a.loc["keyed", "keys"] == "A×6, B×6"
    assert not a.loc["sound", "flag_key_inconsistent"]
    # the reversed item (able models agree on C) is the most likely flawed; the sound one is not
    assert a["flaw_rank"].idxmin() == "reversed" and a.loc["sound", "posterior"] < 0.2
    assert set(a.index[a["flagged"]]) >= {"reversed", "keyed"}


def test_flagged_means_any_review_flag_and_counts_add_up(bundled):
    items = bundled.items
    review = items[[f"flag_{f}" for f in ia.REVIEW_FLAGS]].fillna(False).to_numpy(dtype=bool).any(axis=1)
    assert (items["flagged"].to_numpy() == review).all()
    counts = ia.flag_counts(bundled).set_index("flag")
    for name in ia.FLAGS:
        assert counts.loc[name, "n_items"] == int(items[f"flag_{name}"].fillna(False).sum())
    assert counts.loc["flagged", "n_items"] == int(review.sum())
    # rows ranked by P(flawed), the one ranking
    assert items["flaw_rank"].tolist() == list(range(1, len(items) + 1))
    assert (np.diff(items["posterior"].to_numpy()) <= 1e-12).all()
    assert list(items.columns) == list(ia.MODEL_AUDIT_COLUMNS)


def test_single_model_items_and_few_models_get_notes_not_flags():
    table = tiny()
    extra = pd.DataFrame([{"model": "A", "domain": "d", "item": "solo", "correct": 1, "choice": "A", "key": "A"}])
    audit = ia.audit_items(pd.concat([table, extra], ignore_index=True))
    solo = audit.items.set_index("item").loc["solo"]
    assert solo["n_models"] == 1 and "one model only" in solo["note"]
    assert pd.isna(solo["flag_uninformative"]) and pd.isna(solo["flag_too_easy"]) and not solo["flagged"]
    assert any("only 4 models" in n for n in audit.notes)


def test_partial_credit_without_keys_is_audited_and_constant_items_are_uninformative():
    table = guttman()[["model", "domain", "item", "correct"]].astype({"correct": float})
    table.loc[table["item"] == "easy", "correct"] = 0.5  # every model the same partial score
    a = ia.audit_items(table).items.set_index("item")
    assert a.loc["easy", "flag_uninformative"] and np.isnan(a.loc["easy", "r_rest"])
    assert a.loc["easy", "p_correct"] == 0.5


def test_choices_beyond_n_options_are_counted_not_distractors():
    table = guttman()
    table.loc[(table["item"] == "hard") & (table["model"] == "m00"), "choice"] = "H"  # 4 options: H does not exist
    audit = ia.audit_items(table)
    hard = audit.items.set_index("item").loc["hard"]
    assert hard["share_invalid"] == pytest.approx(1 / 12) and "option the item does not have" in hard["note"]
    opts = audit.options.set_index(["item", "option"])
    assert not opts.loc[("hard", "H"), "valid"] and np.isnan(opts.loc[("hard", "H"), "r_rest"])
    assert hard["top_wrong"] != "H"


def test_revised_option_lists_are_audited_on_correctness_only():
    table = guttman()
    table.loc[(table["item"] == "sound") & (table["model"] == "m00"), "n_options"] = 2
    table.loc[(table["item"] == "sound") & (table["model"] == "m00"), "choice"] = "B"
    a = ia.audit_items(table).items.set_index("item")
    assert "option list revised" in a.loc["sound", "note"] and pd.isna(a.loc["sound", "top_wrong"])
    assert pd.isna(a.loc["sound", "flag_strong_agree_wrong"])


def test_rest_within_domain_or_whole_test():
    table, _ = simulate(n_models=14, n_items=120, n_domains=3, seed=8)
    whole = ia.item_audit(table, rest="test").set_index("item")
    rows = table.assign(domain_was=table["domain"], domain="all")
    rows = independent_rest(rows)
    g = rows[rows["item"] == "q00007"]
    assert whole.loc["q00007", "r_rest"] == pytest.approx(stats.pointbiserialr(g["correct"], g["rest"]).statistic)
    with pytest.raises(JaggedInputError, match="domain' or 'test"):
        ia.item_audit(table, rest="nope")


# --------------------------------------------------------------------------- truth: simulation and MMLU-Pro


def test_revised_key_items_rank_high_on_mmlu_pro(bundled, revised_keys):
    items = bundled.items.set_index("item")
    assert len(revised_keys) == 31
    assert set(items.index[items["flag_key_inconsistent"].fillna(False)]) == revised_keys
    _, auc = recall_and_auc(items["posterior"], np.asarray(sorted(revised_keys), dtype=object))
    assert auc > 0.85  # the flaw model's own checks on them: tests/test_flaw.py
    # discrimination alone ranks them far lower
    _, auc_r = recall_and_auc(-items["r_rest"], np.asarray(sorted(revised_keys), dtype=object))
    assert auc_r < auc - 0.2


def test_likely_answer_of_revised_items_is_mostly_the_revised_key(bundled, revised_keys):
    """The newest files (gemini, jamba) carry the revised key; the audit's likely answer is that key."""
    raw = pd.read_csv(TEST_DATA / "mmlu_pro_responses.csv.gz", keep_default_na=False, dtype=str)
    newest = raw[raw["model"].isin(["gemini-1.5-pro-002", "jamba-1.5-large"]) & raw["item_id"].isin(revised_keys)]
    revised = newest.groupby("item_id")["answer"].first()
    likely = bundled.items.set_index("item").loc[revised.index, "likely_key"]
    assert (likely == revised).mean() > 0.75


# --------------------------------------------------------------------------- sensitivity


def test_sensitivity_against_an_independent_recomputation(bundled):
    s = ia.flag_sensitivity(bundled).set_index("model")
    per_category = pd.read_csv(ROOT / "jagged" / "data" / "mmlu_pro_per_category.csv")
    expected = jagged.jaggedness(per_category).set_index("model")["cv_error"]
    assert s["cv_error"].to_numpy() == pytest.approx(expected.reindex(s.index).to_numpy())
    table = items_module.load_bundled_items().items
    aside = set(bundled.items.loc[bundled.items["flagged"], "item"])
    kept = table[~table["item"].isin(aside)]
    scores = kept.groupby(["model", "domain"])["correct"].mean().rename("score").reset_index()
    cv_kept = jagged.jaggedness(scores).set_index("model")["cv_error"]
    assert s["cv_error_set_aside"].to_numpy() == pytest.approx(cv_kept.reindex(s.index).to_numpy())
    assert s["cv_change"].to_numpy() == pytest.approx((s["cv_error_set_aside"] - s["cv_error"]).to_numpy())
    alt = ia.rescoring_options(bundled)
    assert 0 < len(alt) < 0.1 * len(bundled.items)
    option = table["item"].map(alt)
    rescored = table["correct"].where(option.isna(), (table["choice"] == option).astype(float))
    scores = table.assign(correct=rescored).groupby(["model", "domain"])["correct"].mean().rename("score")
    cv_alt = jagged.jaggedness(scores.reset_index()).set_index("model")["cv_error"]
    assert s["cv_error_rescored"].to_numpy() == pytest.approx(cv_alt.reindex(s.index).to_numpy())


def test_domain_flags_share(bundled):
    d = ia.domain_flags(bundled).set_index("domain")
    items = bundled.items
    for domain, g in items.groupby("domain"):
        assert d.loc[domain, "n_items"] == len(g)
        assert d.loc[domain, "share_flagged"] == pytest.approx(g["flagged"].mean())
    assert d["share_flagged"].is_monotonic_decreasing
    # with the flaw model: the expected flawed items, the sum of the domain's P(flawed)
    assert d["expected_flawed"].to_numpy() == pytest.approx(items.groupby("domain")["posterior"].sum().reindex(
        d.index).to_numpy(), rel=1e-6)
    assert (d["visible_lower"] <= d["visible"]).all() and (d["expected_flawed"] <= d["expected_flawed_upper"]).all()


# --------------------------------------------------------------------------- inputs and paths


def test_per_domain_scores_have_no_items_one_line_error():
    dataset = jagged.load()
    with pytest.raises(JaggedInputError, match="no item-level results"):
        ia.item_audit(dataset)
    assert_bad_input("items", str(ROOT / "jagged" / "data" / "mmlu_pro_per_category.csv"),
                     fragments=("no item-level results",))


def test_bad_choice_rows_are_one_line_errors(tmp_path):
    table = guttman()
    bad = table.copy()
    bad.loc[3, "correct"] = 1 - bad.loc[3, "correct"]
    path = tmp_path / "bad.csv"
    bad.to_csv(path, index=False)
    row = bad.loc[3]
    assert_bad_input("items", path, fragments=(f"model '{row['model']}'", f"item '{row['item']}'", "line 5"))
    bad = table.copy()
    bad.loc[0, "choice"] = "A B"
    bad.to_csv(path, index=False)
    assert_bad_input("items", path, fragments=("malformed value 'A B'", "line 2"))


def test_out_of_core_parquet_gives_the_same_audit(tmp_path, monkeypatch):
    table, _ = simulate(n_models=12, n_items=400, n_domains=3, seed=9)
    table.loc[table.sample(frac=0.05, random_state=1).index, "correct"] = np.nan
    table = table.dropna(subset=["correct"])  # models lack some items
    path = tmp_path / "items.parquet"
    table.to_parquet(path)
    monkeypatch.setattr(items_module, "IN_MEMORY_MAX_ROWS", 10)
    dataset = jagged.load(path)
    assert dataset.items is None
    for rest in ("domain", "test"):
        ooc = ia.audit_items(dataset, rest=rest)
        mem = ia.audit_items(table, rest=rest, model=False)
        assert ooc.sums.source == "duckdb" and mem.sums.source == "memory"
        # out of core: the classical evidence by domain and item (P(flawed) needs the matrix in memory)
        assert list(ooc.items.columns) == list(ia.AUDIT_COLUMNS) and ooc.fit is None and ooc.flaws is None
        assert any("response matrix in memory" in note for note in ooc.notes)
        a, b = mem.items.set_index("item"), ooc.items.set_index("item").loc[mem.items["item"]]
        for column in a.columns:
            if a[column].dtype.kind == "f":
                assert np.allclose(a[column], b[column], equal_nan=True, atol=1e-9), column
            else:
                assert a[column].astype(object).fillna("-").tolist() == b[column].astype(object).fillna("-").tolist()
        sa, sb = ia.flag_sensitivity(mem), ia.flag_sensitivity(ooc)
        assert np.allclose(sa.select_dtypes("number"), sb.select_dtypes("number"), equal_nan=True)


def test_bundled_responses_rebuilt_from_the_shared_copies():
    items = pd.read_csv(TEST_DATA / "mmlu_pro_item_level.csv.gz")
    raw = pd.read_csv(TEST_DATA / "mmlu_pro_responses.csv.gz", keep_default_na=False,
                      dtype={"pred": str, "answer": str})
    assert (items[["model", "item_id"]].to_numpy() == raw[["model", "item_id"]].to_numpy()).all()
    revised = raw["item_id"].isin(REVISED_OPTIONS)
    table = pd.DataFrame({"model": items["model"], "item_id": items["item_id"], "domain": items["domain"],
                          "correct": items["correct"], "choice": raw["pred"].where(~revised, ""),
                          "key": raw["answer"].where(~revised, ""), "n_options": raw["n_options"]})
    text = table.to_csv(index=False, lineterminator="\n").encode()
    shipped = (ROOT / "jagged" / "data" / items_module.BUNDLED_ITEMS_NAME).read_bytes()
    assert gzip.decompress(shipped) == text


def test_bundled_items_reproduce_the_bundled_scores():
    items = items_module.load_bundled_items()
    per_category = pd.read_csv(ROOT / "jagged" / "data" / "mmlu_pro_per_category.csv")
    merged = items.scores.merge(per_category, on=["model", "domain"], suffixes=("", "_file"))
    assert len(merged) == len(per_category) == 406
    assert (merged["score"] == merged["score_file"]).all() and (merged["n_items"] == merged["n_items_file"]).all()


# --------------------------------------------------------------------------- command line


def test_cli_items_csv_json_and_top(tmp_path):
    code, out, err = run_cli("items", "--top", "5")
    assert code == 0, err
    table = pd.read_csv(io.StringIO(out))
    assert len(table) == 5 and table["flaw_rank"].tolist() == [1, 2, 3, 4, 5]
    assert list(table.columns) == [*ia.MODEL_AUDIT_COLUMNS, "text", "options", "top_models_chose"]
    assert "12,032 items from 29 models" in err and "expected flawed items" in err
    models = tmp_path / "models.csv"
    code, _, err = run_cli("items", "--top", "1", "--models-out", models, "-o", tmp_path / "top.csv")
    assert code == 0, err
    agreement = pd.read_csv(models)
    assert list(agreement.columns)[:4] == ["model", "n_items", "weight", "agree"] and len(agreement) == 29
    # hostile destinations: refused in one line before any work, nothing written
    odd = tmp_path / "m*[1] ?.csv"                                  # glob characters are a plain name
    code, _, err = run_cli("items", "--top", "1", "--models-out", odd, "-o", tmp_path / "top2.csv")
    assert code == 0 and odd.is_file(), err
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    (tmp_path / "folder.csv").mkdir()
    for args, fragment in (((tmp_path / "models.txt",), "must end in .csv or .json"), ((fifo,), "not a regular file"),
                           ((tmp_path / "folder.csv",), "is a directory"),
                           ((tmp_path / "top3.csv",), "are the same file")):
        code, out, err = run_cli("items", "--top", "1", "-o", tmp_path / "top3.csv", "--models-out", *args)
        assert code == 2 and fragment in err and "Traceback" not in err, err
        assert not (tmp_path / "top3.csv").exists()
    target = tmp_path / "items.json"
    code, _, err = run_cli("items", str(TEST_DATA / "mmlu_pro_responses.csv.gz"), "-o", target, "--top", "3")
    assert code == 2  # the raw shared file has pred/answer, not choice/key: no item column either
    path = tmp_path / "items.csv"
    guttman().to_csv(path, index=False)
    code, _, err = run_cli("items", path, "-o", target)
    assert code == 0, err
    records = pd.read_json(target)
    assert records.loc[0, "item"] == "reversed" and len(records) == 25


def test_validate_says_whether_choices_and_keys_are_present(tmp_path):
    path = tmp_path / "with.csv"
    guttman().to_csv(path, index=False)
    code, out, _ = run_cli("validate", path)
    assert code == 0 and "choices present (4 labels: A, B, C, D" in out and "1 items keyed differently" in out
    path = tmp_path / "without.csv"
    guttman().drop(columns=["choice", "key"]).to_csv(path, index=False)
    code, out, _ = run_cli("validate", path)
    assert code == 0 and "no choice or key columns" in out


# --------------------------------------------------------------------------- views, plots, analysis


def test_views_tables_pick_the_audit_numbers(bundled):
    from jagged.views import item_audit as views

    flags = views.flag_table(bundled).set_index("flag")
    items = bundled.items
    for name in ia.FLAGS:
        hits = int(items[f"flag_{name}"].fillna(False).sum())
        assert flags.loc[name.replace("_", " "), "items"] == hits
        assert flags.loc[name.replace("_", " "), "share of items"] == pytest.approx(hits / len(items))
    domains = views.domain_table(bundled)
    assert domains["share flagged"].is_monotonic_decreasing and domains["items"].sum() == len(items)
    shares = [c for c in domains.columns if c not in ("domain", "items", "flagged", "what-if re-scored")]
    assert sorted(views.DOMAIN_TABLE_FORMATS) == sorted(shares) and domains[shares].le(1).all().all()
    top = views.top_items(bundled, per_domain=2)
    assert top.groupby("domain").size().max() == 2 and set(top["domain"]) == set(items["domain"])
    first = top.iloc[0]
    assert first["rank"] == 1 and first["item"] == items["item"].iloc[0]  # ranked by the flaw posterior
    assert first["P(flawed)"] == items["posterior"].iloc[0]
    assert first["P lower"] <= first["P(flawed)"] <= first["P upper"]
    assert first["strong models chose"].startswith(str(items["strong_choice"].iloc[0]) + " (")
    # evidence first: what the models chose, the key, the likely answer and the flags before P(flawed)
    assert list(top.columns)[:8] == ["domain", "item", "rank", "strong models chose", "key", "likely answer", "flags",
                                     "P(flawed)"]
    sens = views.sensitivity_table(ia.flag_sensitivity(bundled))
    assert sens["change"].abs().is_monotonic_decreasing
    assert list(sens.columns)[-2:] == ["what-if: key errors re-scored", "what-if change"]


def test_views_sentences_and_alt_text(bundled):
    from jagged.views import item_audit as views

    items = bundled.items
    flagged = int(items["flagged"].sum())
    sentences = views.audit_sentences(bundled, ia.flag_sensitivity(bundled))
    assert sentences[0].startswith(f"{flagged:,} of {len(items):,} items ({flagged / len(items):.1%})")
    assert any("not a corrected CV" in s for s in sentences)
    assert any(f"{len(ia.rescoring_options(bundled))} items look like key errors" in s for s in sentences)
    alt = views.discrimination_alt(bundled)
    assert f"{int(items['r_rest'].notna().sum()):,} items" in alt
    assert f"{int((items['r_rest'] < 0).sum()):,} below zero" in alt


def test_plots_draw_what_they_are_given(bundled):
    from matplotlib.axes import Axes

    from jagged.plots import item_audit as plots

    items = bundled.items
    ax = plots.discrimination_difficulty(items)
    assert isinstance(ax, Axes)
    by_gid = {c.get_gid(): c for c in ax.collections}
    shown = items["r_rest"].notna()
    assert len(by_gid["flagged"].get_offsets()) == int((shown & items["flagged"]).sum())
    assert len(by_gid["sound"].get_offsets()) == int((shown & ~items["flagged"]).sum())
    assert f"{int((~shown).sum()):,} items with an undefined correlation" in ax.get_title(loc="left")
    domains = ia.domain_flags(bundled)
    ax = plots.flagged_share_by_domain(domains)
    widths = [p.get_width() for p in ax.patches]
    assert widths == pytest.approx(domains["share_flagged"].tolist())
    with pytest.raises(ValueError, match="lacks column"):
        plots.discrimination_difficulty(items.drop(columns="flagged"))


def test_analysis_section_and_glance_finding(tmp_path):
    from jagged.analysis import SECTIONS, analyse
    from jagged.views.glance import glance

    assert "items" in SECTIONS
    analysis = analyse(None, example_profiles=True)
    assert analysis.sections["items"] and analysis.item_audit is not None
    finding = next(f for f in glance(analysis) if f.section == "items")
    items = analysis.item_audit.items
    assert finding.count == int(items["flagged"].sum()) and finding.total == len(items) == 12032
    median = float(np.median(analysis.item_sensitivity["cv_change"]))
    assert finding.value == pytest.approx(median) and f"{median:+.3f}" in finding.sentence
    t = analysis.flaws.total  # the one ranking: the expected flawed items with their interval, the first to read
    assert finding.sentence.startswith(f"About {t['expected_flawed']:,.0f} of 12,032 items are expected to be flawed "
                                       f"({t['lower']:,.0f}–{t['upper']:,.0f}, 90%; about {t['visible']:,.0f} shown "
                                       f"by the answers, the rest assumed), item {items['item'].iloc[0]}")
    assert 0 < t["visible"] < t["expected_flawed"]  # the visible part is a measurement, the rest the prior
    # the report's other numbers still come from the per-category file
    assert analysis.dataset.format == "long" and analysis.dataset.items is None
    path = tmp_path / "scores.csv"
    pd.read_csv(ROOT / "jagged" / "data" / "mmlu_pro_per_category.csv").to_csv(path, index=False)
    plain = analyse(path)
    assert not plain.sections["items"] and plain.item_audit is None
    assert all(f.section != "items" for f in glance(plain))


# --------------------------------------------------------------------------- look at the items (text, options)


def test_strongest_models_and_their_choices_by_hand():
    from jagged.analysis import strongest_models
    from jagged.views import item_audit as views

    table = tiny()  # A right on all, B on i1 i2, C on i1, D on i3
    scores = table.groupby("model", as_index=False)["correct"].mean().rename(columns={"correct": "score"})
    two_domains = pd.concat([scores.assign(domain="d"), scores.assign(domain="e")], ignore_index=True)
    assert strongest_models(two_domains, 3) == ["A", "B", "C"]  # 1, 2/3, then C and D tie at 1/3: by name
    assert strongest_models(scores.assign(domain="d"), 2) == ["A", "B"]  # one domain: its score
    chose = views.strongest_choices(table, ["A", "B", "C"], keys=pd.Series({"i1": "A", "i2": "A", "i3": "A"}))
    assert chose.to_dict() == {"i1": "A (key): A, B, C", "i2": "A (key): A, B; C: C",
                               "i3": "B: B, C; A (key): A"}  # most common answer first, models strongest first
    unkeyed = views.strongest_choices(table.drop(columns="choice"), ["D", "A"], ["i3"])
    assert unkeyed.to_dict() == {"i3": "right: D, A"}
    missing = table.assign(choice=table["choice"].where(table["model"] != "A", None))
    assert views.strongest_choices(missing, ["A"], ["i1"]).to_dict() == {"i1": "no answer: A"}


def test_top_items_show_the_bundled_question_options_key_and_top_models(bundled):
    import html

    from jagged.analysis import analyse, strongest_models
    from jagged.views import display
    from jagged.views import item_audit as views

    analysis = analyse(None)
    listed = views.top_items(analysis.item_audit)["item"]
    text = analysis.item_text(listed)
    assert sorted(text.index) == sorted(listed)  # read for the listed items only
    source = analysis.item_source.items
    choices = views.strongest_choices(source, strongest_models(analysis.scores), listed,
                                      keys=analysis.item_audit.items.set_index("item")["key"])
    top = views.top_items(analysis.item_audit, text=text, choices=choices)
    raw = pd.read_csv(ROOT / "jagged" / "data" / "mmlu_pro_item_text.csv.gz").set_index("item_id")
    first = top.iloc[0]
    truth = raw.loc[int(first["item"])]
    assert first["question"] == truth["question"].strip()
    letters = "ABCDEFGHIJ"
    key = analysis.item_audit.items.set_index("item").loc[first["item"], "key"]
    expected = " | ".join(f"{letters[k]}) {o}" + (" (key)" if letters[k] == key else "")
                          for k, o in enumerate(json.loads(truth["options"])))
    assert first["options"] == expected
    # the five strongest models' own rows, read independently
    macro = analysis.scores.groupby("model")["score"].mean()  # every bundled model has all 14 domains
    best = macro.sort_values(ascending=False).index[:5].tolist()
    rows = source[(source["item"] == first["item"]) & source["model"].isin(best)]
    named = [m for part in first["top models chose"].split("; ") for m in part.split(": ")[1].split(", ")]
    assert sorted(named) == sorted(rows["model"])
    for part in first["top models chose"].split("; "):
        label, models = part.split(": ")
        letter = label.replace(" (key)", "")
        assert set(rows.loc[rows["choice"].fillna("no answer") == letter, "model"]) == set(models.split(", "))
    # the report's table: every question escaped, long text folded in a <details>
    markup = display.table_block(top, caption="Most suspicious items per domain")
    for question in top["question"]:
        shown = question if len(question) <= display.COLLAPSE_MIN else question[:display.COLLAPSE_SHOWN].rstrip()
        assert html.escape(shown) in markup
    assert markup.count('<details class="long-cell">') >= int((top["options"].str.len() > display.COLLAPSE_MIN).sum())


def test_hostile_text_is_escaped_and_cut_in_the_report_table():
    import html

    from jagged.views import display
    from jagged.views import item_audit as views

    table = guttman()
    hostile = "<script>alert('x')</script><img src=x onerror=alert(1)>" + "A" * 1_000_000
    table["text"] = np.where(table["item"] == "reversed", hostile, "plain question?")
    table["options"] = '["<b>bold</b>", "two", "three", "four"]'
    audit = ia.audit_items(validate_items(table, "t"))
    text = items_module.item_texts(validate_items(table, "t"))
    top = views.top_items(audit, per_domain=3, text=text)
    row = top.set_index("item").loc["reversed"]
    assert len(row["question"]) == 4_000 and row["question"].endswith("…")
    assert row["options"] == "A) <b>bold</b> (key) | B) two | C) three | D) four"
    markup = display.table_block(top, caption="t")
    assert "<script>" not in markup and "<img" not in markup and "<b>bold" not in markup
    assert html.escape("<script>alert('x')</script>") in markup and "&lt;b&gt;bold&lt;/b&gt;" in markup
    assert len(markup) < 20_000  # the 1 MB text is cut at 4,000 characters


def test_cli_items_gives_text_options_and_top_models(tmp_path):
    target = tmp_path / "items.json"
    code, _, err = run_cli("items", "--top", "4", "-o", target)
    assert code == 0, err
    records = pd.read_json(target, dtype={"item": str})
    raw = pd.read_csv(ROOT / "jagged" / "data" / "mmlu_pro_item_text.csv.gz").set_index("item_id")
    for record in records.itertuples():
        assert record.text == raw.loc[int(record.item), "question"].strip()
        assert json.loads(record.options) == json.loads(raw.loc[int(record.item), "options"])
        assert len(record.top_models_chose.replace(";", ",").split(",")) == 5
    path = tmp_path / "texted.csv"
    table = guttman().assign(text=lambda t: "Question " + t["item"] + "?")
    table.to_csv(path, index=False)
    code, out, err = run_cli("items", path)
    assert code == 0, err
    listing = pd.read_csv(io.StringIO(out))
    assert (listing["text"] == "Question " + listing["item"] + "?").all() and listing["options"].isna().all()
