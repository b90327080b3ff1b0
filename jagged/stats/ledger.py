"""The item ledger: which items changed between two runs or releases, and what that does to scores.

Pure, vectorised functions on two item-level tables, *A* (earlier) and *B* (later):
:func:`item_status` and :func:`item_ledger` (presence, keys, text, difficulty moved beyond
noise), :func:`rescore_by_domain` and :func:`rescore_by_model` (B's changed keys applied to
A's choices), :func:`paired_items`, :func:`run_noise` and :func:`noise_floor` (repeated runs:
a model name on both sides is a repeat of that model).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from jagged.errors import JaggedInputError
from jagged.stats.fdr import q_values

#: The kinds of change, in the order that decides an item's primary ``change``.
CHANGES: tuple[str, ...] = ("added", "removed", "key_changed", "text_changed", "difficulty_moved")
#: Columns compared for ``text_changed`` when both sides have them.
TEXT_COLUMNS: tuple[str, ...] = ("text", "options")
TEST_PAIRED = "exact sign test (McNemar) on models answering on both sides"
TEST_UNPAIRED = "two-proportion z-test (no model answered on both sides)"
STATUS_COLUMNS: tuple[str, ...] = (
    "item", "domain", "change", "changes", "in_a", "in_b", "key_a", "key_b", "n_models_a", "n_models_b",
    "n_paired", "share_a", "share_b", "share_delta", "p_value", "q_value", "test",
)


def names(column: pd.Series) -> np.ndarray:
    """A name column as an object array of str (factorized: the distinct values are converted once)."""
    codes, uniques = pd.factorize(column)
    labels = np.append(np.asarray(pd.Index(uniques).astype(str), dtype=object), None)
    return labels[codes]  # code -1 (missing) picks the trailing None


def _plain(items: pd.DataFrame, side: str,
           optional: tuple[str, ...] = ("choice", "key", *TEXT_COLUMNS)) -> pd.DataFrame:
    """The columns the ledger uses, as plain object/float columns (Categoricals of two files never mix)."""
    missing = [c for c in ("model", "domain", "item", "correct") if c not in items.columns]
    if missing:
        raise JaggedInputError(f"item table of side {side} has no column {missing[0]!r}")
    out = pd.DataFrame({
        "model": names(items["model"]), "domain": names(items["domain"]), "item": names(items["item"]),
        "correct": items["correct"].to_numpy(dtype=float),
    })
    for column in optional:
        if column in items.columns:
            out[column] = names(items[column])
    return out


def _modal(frame: pd.DataFrame, column: str) -> pd.Series:
    """Per item, the most frequent non-empty value of ``column`` (ties: the smallest)."""
    known = frame.loc[frame[column].notna(), ["item", column]]
    if known.empty:
        return pd.Series(dtype=object)
    counts = known.groupby(["item", column], sort=False).size().reset_index(name="n")
    counts = counts.sort_values(["item", "n", column], ascending=[True, False, True], kind="mergesort")
    return counts.drop_duplicates("item").set_index("item")[column]


def _side_summary(frame: pd.DataFrame) -> pd.DataFrame:
    grouped = frame.groupby("item", sort=False)
    out = pd.DataFrame({"domain": grouped["domain"].first(), "n_models": grouped.size(),
                        "share_all": grouped["correct"].mean()})
    for column in ("key", *TEXT_COLUMNS):
        if column in frame.columns:
            out[column] = _modal(frame, column).reindex(out.index)
    return out


def _difficulty_tests(a: pd.DataFrame, b: pd.DataFrame, status: pd.DataFrame) -> pd.DataFrame:
    """Per item: paired share correct and the sign-test p-value; the z-test where nothing pairs."""
    paired = a[["model", "item", "correct"]].merge(b[["model", "item", "correct"]], on=["model", "item"],
                                                   suffixes=("_a", "_b"))
    diff = paired["correct_b"].to_numpy() - paired["correct_a"].to_numpy()
    paired = paired.assign(up=diff > 0, down=diff < 0)
    g = paired.groupby("item", sort=False)
    tests = pd.DataFrame({"n_paired": g.size(), "share_a": g["correct_a"].mean(), "share_b": g["correct_b"].mean(),
                          "up": g["up"].sum(), "down": g["down"].sum()})
    out = pd.DataFrame(index=status.index)
    out["n_paired"] = tests["n_paired"].reindex(out.index).fillna(0).astype(np.int64)
    out["share_a"] = tests["share_a"].reindex(out.index)
    out["share_b"] = tests["share_b"].reindex(out.index)
    up = tests["up"].reindex(out.index).fillna(0).to_numpy(dtype=float)
    down = tests["down"].reindex(out.index).fillna(0).to_numpy(dtype=float)
    n_disc = up + down
    p = np.full(len(out), np.nan)
    has_pairs = out["n_paired"].to_numpy() > 0
    with np.errstate(invalid="ignore"):
        sign_p = np.minimum(1.0, 2.0 * sps.binom.cdf(np.minimum(up, down), n_disc, 0.5))
    p[has_pairs] = np.where(n_disc[has_pairs] > 0, sign_p[has_pairs], 1.0)
    test = np.where(has_pairs, TEST_PAIRED, "").astype(object)
    both = status["in_a"].to_numpy() & status["in_b"].to_numpy()
    unpaired = both & ~has_pairs
    if unpaired.any():
        pa = status["share_all_a"].to_numpy(dtype=float)
        pb = status["share_all_b"].to_numpy(dtype=float)
        na = status["n_models_a"].to_numpy(dtype=float)
        nb = status["n_models_b"].to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            pooled = (pa * na + pb * nb) / (na + nb)
            se = np.sqrt(pooled * (1.0 - pooled) * (1.0 / na + 1.0 / nb))
            z_p = np.where(se > 0, 2.0 * sps.norm.sf(np.abs(pb - pa) / np.where(se > 0, se, 1.0)), 1.0)
        p[unpaired] = z_p[unpaired]
        out.loc[unpaired, "share_a"] = pa[unpaired]
        out.loc[unpaired, "share_b"] = pb[unpaired]
        test[unpaired] = TEST_UNPAIRED
    out["p_value"] = p
    out["test"] = test
    return out


def item_status(items_a: pd.DataFrame, items_b: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """Every item of either side: presence, keys, text, share correct and whether its difficulty moved.

    Parameters
    ----------
    items_a, items_b : pandas.DataFrame
        Item tables (``model, domain, item, correct``; optional ``choice, key, text, options``).
    alpha : float
        False discovery rate for ``difficulty_moved`` (q < alpha).

    Returns
    -------
    pandas.DataFrame
        One row per item by domain and item (:data:`STATUS_COLUMNS`): ``domain`` (B's where
        in B); ``change``, the first of :data:`CHANGES` that applies ("" unchanged), and
        ``changes``, all of them "; "-joined; ``in_a``, ``in_b``; ``key_a``, ``key_b`` (the
        side's most frequent key); ``n_models_a/_b``; ``n_paired``; ``share_a``, ``share_b``
        (over the paired models, or all the side's models when none pairs) and
        ``share_delta``; ``p_value``, ``q_value``, ``test``; ``text_a/_b``, ``options_a/_b``
        when both sides have the column.

    Notes
    -----
    ``key_changed``: both keys known and different; ``text_changed``: both sides give a text
    (or options) and they differ after stripping; ``difficulty_moved``: q < alpha.
    *Difficulty*: of the paired models, u score higher in B and v lower; p =
    min(1, 2 F(min(u, v); u + v, ½)) (exact McNemar for 0/1; u + v = 0 gives 1). On both sides
    without a paired model: pooled two-proportion z-test, z = (p_b − p_a) / √(p̄(1 − p̄)(1/n_a
    + 1/n_b)) (p = 1 when p̄ is 0 or 1). Benjamini–Hochberg q-values over all tested items. A
    key change moves the share by itself: ``change`` then says ``key_changed``.
    """
    if not 0 < alpha < 1:
        raise JaggedInputError(f"false discovery rate alpha must lie between 0 and 1, not {alpha!r}")
    a, b = _plain(items_a, "A"), _plain(items_b, "B")
    sa, sb = _side_summary(a), _side_summary(b)
    index = sa.index.union(sb.index)
    status = pd.DataFrame(index=index)
    status["in_a"] = index.isin(sa.index)
    status["in_b"] = index.isin(sb.index)
    status["domain"] = sb["domain"].reindex(index).fillna(sa["domain"].reindex(index))
    for name, side in (("a", sa), ("b", sb)):
        status[f"n_models_{name}"] = side["n_models"].reindex(index).fillna(0).astype(np.int64)
        status[f"share_all_{name}"] = side["share_all"].reindex(index)
        status[f"key_{name}"] = (side["key"].reindex(index) if "key" in side else pd.Series(None, index=index)
                                 ).astype(object).where(lambda s: s.notna(), None)
    tests = _difficulty_tests(a, b, status)
    status = status.join(tests)
    status["share_delta"] = status["share_b"] - status["share_a"]
    status["q_value"] = q_values(status["p_value"].to_numpy())
    flags = {
        "added": status["in_b"] & ~status["in_a"],
        "removed": status["in_a"] & ~status["in_b"],
        "key_changed": status["key_a"].notna() & status["key_b"].notna() & (status["key_a"] != status["key_b"]),
        "text_changed": pd.Series(False, index=index),
        "difficulty_moved": status["q_value"] < alpha,
    }
    text_cols = []
    for column in TEXT_COLUMNS:
        if column in sa and column in sb:
            ta, tb = sa[column].reindex(index), sb[column].reindex(index)
            status[f"{column}_a"], status[f"{column}_b"] = ta, tb
            text_cols += [f"{column}_a", f"{column}_b"]
            flags["text_changed"] |= ta.notna() & tb.notna() & (ta.str.strip() != tb.str.strip())
    matrix = np.column_stack([flags[c].to_numpy(dtype=bool) for c in CHANGES])
    names = np.asarray(CHANGES, dtype=object)
    status["change"] = np.where(matrix.any(axis=1), names[np.argmax(matrix, axis=1)], "").astype(object)
    joined = np.full(len(status), "", dtype=object)
    for k, name in enumerate(CHANGES):  # five kinds, each a vectorised string concatenation
        joined = joined + np.where(matrix[:, k], name + "; ", "")
    status["changes"] = pd.Series(joined, index=index).str.rstrip("; ").to_numpy(dtype=object)
    status = status.rename_axis("item").reset_index()
    status = status.sort_values(["domain", "item"], kind="mergesort").reset_index(drop=True)
    return status[list(STATUS_COLUMNS) + text_cols]


def item_ledger(items_a: pd.DataFrame, items_b: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """The rows of :func:`item_status` with a change, in :data:`CHANGES` order, then by q-value, domain and item."""
    status = item_status(items_a, items_b, alpha=alpha)
    out = status[status["change"] != ""].copy()
    out["_order"] = out["change"].map({c: k for k, c in enumerate(CHANGES)})
    out = out.sort_values(["_order", "q_value", "domain", "item"], kind="mergesort", na_position="last")
    return out.drop(columns="_order").reset_index(drop=True)


def rescore_by_domain(items_a: pd.DataFrame, new_keys: pd.Series | pd.DataFrame) -> pd.DataFrame:
    """A's (model, domain) scores with A's recorded choices re-scored against changed keys.

    ``new_keys`` is a Series item → new key, or a ledger (its ``key_changed`` rows' ``key_b``).
    Returns ``model, domain, n_items, n_rescored, n_gained`` (wrong → right), ``n_lost``,
    ``score_before``, ``score_after``, ``score_delta``. A result on a re-keyed item scores 1
    when its choice is the new key, else 0 (no choice: 0); others keep ``correct``, so
    ``score_before`` equals A's scores. JaggedInputError when A has no ``choice``.
    """
    if "choice" not in items_a.columns:
        raise JaggedInputError("the item table of side A has no 'choice' column: key changes cannot be re-scored")
    if isinstance(new_keys, pd.DataFrame):
        rows = new_keys[new_keys["changes"].str.contains("key_changed", regex=False)]
        new_keys = pd.Series(rows["key_b"].to_numpy(dtype=object), index=rows["item"].astype(str).to_numpy())
    a = _plain(items_a, "A")
    key = pd.Series(new_keys.to_numpy(dtype=object), index=new_keys.index.astype(str)).reindex(a["item"]).to_numpy()
    hit = pd.notna(key)
    choice = a["choice"].to_numpy(dtype=object)
    rescored = np.where(choice == key, 1.0, 0.0)
    before = a["correct"].to_numpy(dtype=float)
    after = np.where(hit, rescored, before)
    frame = pd.DataFrame({"model": a["model"], "domain": a["domain"], "before": before, "after": after,
                          "hit": hit, "gained": after > before, "lost": after < before})
    g = frame.groupby(["model", "domain"], sort=True)
    out = pd.DataFrame({"n_items": g.size(), "n_rescored": g["hit"].sum(), "n_gained": g["gained"].sum(),
                        "n_lost": g["lost"].sum(), "score_before": g["before"].mean(),
                        "score_after": g["after"].mean()}).reset_index()
    out["score_delta"] = out["score_after"] - out["score_before"]
    for column in ("n_items", "n_rescored", "n_gained", "n_lost"):
        out[column] = out[column].astype(np.int64)
    return out


def rescore_by_model(by_domain: pd.DataFrame) -> pd.DataFrame:
    """Per model, :func:`rescore_by_domain`'s counts and its macro score and cv_error before, after and their delta.

    cv_error = population sd of e_d = 1 − s_d over their mean (NaN with no error or fewer than 2 domains).
    """
    frame = by_domain.assign(e_before=1.0 - by_domain["score_before"], e_after=1.0 - by_domain["score_after"])
    g = frame.groupby("model", sort=True)
    out = pd.DataFrame({
        "n_rescored": g["n_rescored"].sum(), "n_gained": g["n_gained"].sum(), "n_lost": g["n_lost"].sum(),
        "macro_score_before": g["score_before"].mean(), "macro_score_after": g["score_after"].mean(),
    })
    out["macro_score_delta"] = out["macro_score_after"] - out["macro_score_before"]
    n_dom = g.size()
    for when in ("before", "after"):
        mean = g[f"e_{when}"].mean()
        sd = g[f"e_{when}"].std(ddof=0)
        out[f"cv_error_{when}"] = np.where((mean > 0) & (n_dom >= 2), sd / mean.where(mean > 0, 1.0), np.nan)
    out["cv_error_delta"] = out["cv_error_after"] - out["cv_error_before"]
    return out.reset_index()


def paired_items(items_a: pd.DataFrame, items_b: pd.DataFrame) -> pd.DataFrame:
    """The (model, item) results on both sides in the same domain: ``model, domain, item, correct_a, correct_b``."""
    keys = ["model", "domain", "item"]
    out = _plain(items_a, "A", ()).merge(_plain(items_b, "B", ()), on=keys, suffixes=("_a", "_b"))
    return out.sort_values(keys, kind="mergesort").reset_index(drop=True)


def run_noise(items_a: pd.DataFrame, items_b: pd.DataFrame) -> pd.DataFrame:
    """Per model, how much its macro score moves between two repeated runs on the same items.

    Returns ``model, n_domains, n_items`` (paired results), ``n_flips``, ``flip_share``,
    ``macro_score_delta`` (B − A) and ``macro_delta_sd``; JaggedInputError when no result pairs.

    Notes
    -----
    With δ_i = x_B,i − x_A,i, Δ = (1/D) Σ_d (1/n_d) Σ_{i∈d} δ_i. For exchangeable runs
    E δ_i = 0 and Var δ_i is estimated by δ_i², independently across items:
    Var(Δ) = (1/D²) Σ_d (1/n_d²) Σ_{i∈d} δ_i², ``macro_delta_sd`` = √Var(Δ).
    """
    paired = paired_items(items_a, items_b)
    if paired.empty:
        raise JaggedInputError("the two runs share no (model, item) result: no repeated run to compare")
    delta = paired["correct_b"].to_numpy() - paired["correct_a"].to_numpy()
    frame = paired[["model", "domain"]].assign(delta=delta, sq=delta * delta, flip=delta != 0)
    cell = frame.groupby(["model", "domain"], sort=True).agg(n=("delta", "size"), mean=("delta", "mean"),
                                                              sq=("sq", "sum"), flips=("flip", "sum"))
    cell["var"] = cell["sq"] / cell["n"] ** 2
    g = cell.groupby(level="model", sort=True)
    d = g.size().astype(float)
    out = pd.DataFrame({"n_domains": d.astype(np.int64), "n_items": g["n"].sum().astype(np.int64),
                        "n_flips": g["flips"].sum().astype(np.int64)})
    out["flip_share"] = out["n_flips"] / out["n_items"]
    out["macro_score_delta"] = g["mean"].sum() / d
    out["macro_delta_sd"] = np.sqrt(g["var"].sum() / d ** 2)
    return out.rename_axis("model").reset_index().astype({"model": object})


def noise_floor(runs: pd.DataFrame, *, z: float = 1.96) -> pd.DataFrame:
    """The run-to-run noise floor of a field of models, from :func:`run_noise` (one row).

    ``n_models``, ``n_items``, pooled ``flip_share``, ``macro_delta_rms`` = √mean_m Δ_m²
    (observed), ``noise_floor`` = √mean_m Var(Δ_m) (the expected sd of a difference of two
    single runs), ``min_detectable_difference`` = z · noise_floor. The rms should be close to
    the floor when the runs are exchangeable.
    """
    if runs.empty:
        raise JaggedInputError("no repeated runs: the noise floor needs models on both sides")
    floor = float(np.sqrt(np.mean(runs["macro_delta_sd"].to_numpy(dtype=float) ** 2)))
    return pd.DataFrame([{
        "n_models": int(len(runs)), "n_items": int(runs["n_items"].sum()),
        "flip_share": float(runs["n_flips"].sum() / runs["n_items"].sum()),
        "macro_delta_rms": float(np.sqrt(np.mean(runs["macro_score_delta"].to_numpy(dtype=float) ** 2))),
        "noise_floor": floor, "min_detectable_difference": z * floor,
    }])
