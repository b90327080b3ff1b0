"""Sufficient statistics of the item audit, computed in memory with numpy.

The item audit (:mod:`jagged.stats.item_audit`) needs only sums over rows: per (model,
domain), per item and per (item, option). :class:`ItemSums` holds them; this module
computes them from an in-memory item table, and :mod:`jagged.stats.item_sql` computes
the same tables out of core with DuckDB, as plain SQL. Everything downstream of
:class:`ItemSums` is shared, so both roads give the same audit.

Definitions (per row r = (model m, item i); g(i) is the item's rest group: its domain,
or the whole test):

* ``S_mg``, ``N_mg``: sum of ``correct`` and number of items of model m in group g;
* rest score ``R_r = (S_mg − x_r) / (N_mg − 1)`` (undefined when N_mg = 1);
* ability ``θ_mg = ln((S_mg + ½) / (N_mg − S_mg + ½))``, the smoothed logit of the
  model's score in the group;
* upper/lower weights: among the item's rows with a rest score (n_R of them), the
  ``k = max(1, ⌊0.27 n_R + ½⌋)`` highest (lowest) rest scores get weight 1; rows tied at
  the boundary share the remaining places equally (weight (k − above) / tied).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

#: Share of models in the upper and in the lower group of the discrimination index (Kelley).
UPPER_LOWER = 0.27
#: Label of "no answer extracted" in the per-option sums.
NO_ANSWER = ""

#: Columns of :attr:`ItemSums.items` (per item).
ITEM_SUM_COLUMNS: tuple[str, ...] = (
    "item", "domain", "group", "n", "sx", "sxx", "n_r", "sx_r", "sxx_r", "sr", "srr", "sxr", "stheta", "sxtheta",
    "k_ul", "sxwu", "sxwl", "n_choice", "nopt_min", "nopt_max",
)
#: Columns of :attr:`ItemSums.options` (per item and chosen label, rows with choice information).
OPTION_SUM_COLUMNS: tuple[str, ...] = (
    "pos", "label", "count", "stheta", "swu", "n_wrong", "n_wrong_r", "sr_wrong", "swu_wrong",
)


@dataclass
class ItemSums:
    """Per-group, per-item and per-option sums behind the item audit.

    Attributes
    ----------
    model_group : pandas.DataFrame
        ``model``, ``group``, ``s`` (Σ correct), ``n`` (items), ``theta`` (θ_mg).
    items : pandas.DataFrame
        One row per item (:data:`ITEM_SUM_COLUMNS`): ``n`` models, Σx, Σx²; over the
        rows with a rest score ``n_r``, Σx, Σx², ΣR, ΣR², ΣxR; Σθ and Σxθ over all rows;
        the upper/lower group size ``k_ul`` and Σw_u·x, Σw_l·x; ``n_choice`` rows with
        choice information; the smallest and largest ``n_options`` (NaN: unknown).
    options : pandas.DataFrame
        One row per (item, chosen label) over rows with choice information
        (:data:`OPTION_SUM_COLUMNS`; ``pos`` is the item's row in :attr:`items`, sorted by
        ``pos`` then label): rows choosing it, their Σθ and Σw_u, how many of them
        were wrong, how many of those have a rest score, their ΣR and Σw_u. The label
        :data:`NO_ANSWER` is "no answer".
    keys : pandas.DataFrame
        ``pos`` (the item's row in :attr:`items`), ``key``, ``count``: how many rows carry
        each key.
    has_choice, has_key : bool
        Whether the table has the columns.
    softplus : callable
        ``softplus(a, grid)`` → items × grid array of Σ_m ln(1 + exp(a (θ_m − b))) over the
        models that have the item (exact, for the chosen slope).
    model_domain_sums : callable
        ``model_domain_sums(set_aside, rescore)`` → per (model, domain) ``s, n`` over all
        items, ``s_kept, n_kept`` without the items ``set_aside``, and ``s_rescored`` with
        the items of ``rescore`` (item → option) scored against that option (``n_rescored``
        of them).
    source : str
        Where the sums come from (``"memory"`` or ``"duckdb"``).
    """

    model_group: pd.DataFrame
    items: pd.DataFrame
    options: pd.DataFrame
    keys: pd.DataFrame
    has_choice: bool
    has_key: bool
    softplus: Callable[[float, np.ndarray], np.ndarray]
    model_domain_sums: Callable[[np.ndarray, dict[str, str]], pd.DataFrame]
    source: str = "memory"


def softplus(z: np.ndarray) -> np.ndarray:
    """ln(1 + exp(z)) without overflow."""
    return np.logaddexp(0.0, z)


def upper_lower_weights(item: np.ndarray, rest: np.ndarray, n_items: int,
                        frac: float = UPPER_LOWER) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Upper- and lower-group weights of every row, and the group size per item.

    Parameters
    ----------
    item : numpy.ndarray
        Item code of each row (0 … n_items − 1).
    rest : numpy.ndarray
        Rest score of each row; NaN rows get weight 0 and do not count.
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
    ok = np.isfinite(rest)
    n_r = np.bincount(item[ok], minlength=n_items)
    k = np.where(n_r > 0, np.maximum(1, np.floor(frac * n_r + 0.5)), 0).astype(float)
    rows = np.flatnonzero(ok)
    out = []
    for sign in (1.0, -1.0):
        value = sign * rest[rows]
        by_value = np.argsort(-value, kind="stable")
        order = by_value[np.argsort(item[rows][by_value], kind="stable")]  # by item, then value descending
        it, v = item[rows][order], value[order]
        starts = np.r_[0, np.cumsum(n_r)]
        pos = np.arange(len(order)) - starts[it]
        new = np.r_[True, (it[1:] != it[:-1]) | (v[1:] != v[:-1])]
        tie_group = np.cumsum(new) - 1
        above = pos[new][tie_group]  # rows strictly better
        tied = np.bincount(tie_group)[tie_group]
        ki = k[it]
        w = np.where(above + tied <= ki, 1.0, np.clip((ki - above) / tied, 0.0, 1.0))
        weights = np.zeros(len(rest))
        weights[rows[order]] = w
        out.append(weights)
    return out[0], out[1], k


def _codes(values: pd.Series | np.ndarray, sort: bool = True) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(values, sort=sort)
    return codes.astype(np.intp), np.asarray(uniques, dtype=object)


def text_column(values: np.ndarray) -> pd.Series:
    """An object-dtype column of names (pandas would otherwise convert strings to its string dtype)."""
    return pd.Series(np.asarray(values, dtype=object), dtype=object)


def pair_codes(first: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes of (integer, label) pairs, sorted by the integer then the label.

    Returns the pair code of every row, and each pair's integer and label.
    """
    label_code, label_names = pd.factorize(pd.Series(labels, dtype=object), sort=True)
    combined = first.astype(np.int64) * len(label_names) + label_code
    unique, inverse = np.unique(combined, return_inverse=True)
    return inverse.astype(np.intp), unique // len(label_names), np.asarray(label_names, dtype=object)[
        unique % len(label_names)]


def item_sums(items: pd.DataFrame, *, rest: str = "domain") -> ItemSums:
    """The sufficient statistics of the item audit from a validated item table.

    Parameters
    ----------
    items : pandas.DataFrame
        Output of :func:`jagged.readers.items.validate_items` (``model, domain, item,
        correct`` and optionally ``choice, key, n_options``).
    rest : {"domain", "test"}
        Rest scores and abilities within the item's domain, or over the whole test.

    Returns
    -------
    ItemSums
    """
    model_code, models = _codes(items["model"])
    domain_code, domains = _codes(items["domain"])
    item_code, item_names = _codes(items["item"])
    n_items = len(item_names)
    x = items["correct"].to_numpy(dtype=float)
    group_code = domain_code if rest == "domain" else np.zeros(len(x), dtype=np.intp)
    groups = domains if rest == "domain" else np.asarray(["(all)"], dtype=object)
    n_groups = len(groups)
    mg = model_code * n_groups + group_code
    size = len(models) * n_groups
    s_mg = np.bincount(mg, x, size)
    n_mg = np.bincount(mg, minlength=size).astype(float)
    theta_mg = np.log((s_mg + 0.5) / (n_mg - s_mg + 0.5))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(n_mg[mg] > 1, (s_mg[mg] - x) / (n_mg[mg] - 1), np.nan)
    theta = theta_mg[mg]
    ok = np.isfinite(r)
    r0 = np.where(ok, r, 0.0)
    w_u, w_l, k = upper_lower_weights(item_code, r, n_items)

    def per_item(values: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(item_code, values, n_items) if values is not None else \
            np.bincount(item_code, minlength=n_items).astype(float)

    item_domain = np.zeros(n_items, dtype=np.intp)
    item_domain[item_code] = domain_code
    has_choice, has_key = "choice" in items.columns, "key" in items.columns
    choice = items["choice"].to_numpy(dtype=object) if has_choice else None
    key = items["key"].to_numpy(dtype=object) if has_key else None
    if has_key:
        informed = pd.notna(key)
    elif has_choice:
        informed = np.ones(len(x), dtype=bool)
    else:
        informed = np.zeros(len(x), dtype=bool)
    nopt = items["n_options"].to_numpy(dtype=float) if "n_options" in items.columns else np.full(len(x), np.nan)
    known = np.isfinite(nopt)
    nopt_min = np.full(n_items, np.nan)
    nopt_max = np.full(n_items, np.nan)
    if known.any():
        lo = np.full(n_items, np.inf)
        hi = np.full(n_items, -np.inf)
        np.minimum.at(lo, item_code[known], nopt[known])
        np.maximum.at(hi, item_code[known], nopt[known])
        nopt_min = np.where(np.isfinite(lo), lo, np.nan)
        nopt_max = np.where(np.isfinite(hi), hi, np.nan)
    table = pd.DataFrame({
        "item": text_column(item_names), "domain": text_column(domains[item_domain]),
        "group": text_column(groups[item_domain if rest == "domain" else np.zeros(n_items, dtype=np.intp)]),
        "n": per_item(), "sx": per_item(x), "sxx": per_item(x * x), "n_r": per_item(ok.astype(float)),
        "sx_r": per_item(x * ok), "sxx_r": per_item(x * x * ok), "sr": per_item(r0), "srr": per_item(r0 * r0),
        "sxr": per_item(x * r0), "stheta": per_item(theta), "sxtheta": per_item(x * theta), "k_ul": k,
        "sxwu": per_item(x * w_u), "sxwl": per_item(x * w_l), "n_choice": per_item(informed.astype(float)),
        "nopt_min": nopt_min, "nopt_max": nopt_max,
    }, copy=False)
    options = _option_sums(item_code, x, r, theta, w_u, informed, choice)
    keys = _key_counts(item_code, x, key, choice)
    mg_table = pd.DataFrame({"model": text_column(np.repeat(models, n_groups)),
                             "group": text_column(np.tile(groups, len(models))),
                             "s": s_mg, "n": n_mg, "theta": theta_mg})
    mg_table = mg_table[mg_table["n"] > 0].reset_index(drop=True)

    def softplus_sums(a: float, grid: np.ndarray) -> np.ndarray:
        table_mg = softplus(a * (theta_mg[:, None] - np.asarray(grid)[None, :]))
        out = np.empty((n_items, len(grid)))
        for g in range(len(grid)):  # every row is one (model, item): sum its model's value per item
            out[:, g] = np.bincount(item_code, table_mg[mg, g], n_items)
        return out

    def model_domain_sums(set_aside: np.ndarray, rescore: dict[str, str]) -> pd.DataFrame:
        return _model_domain_sums(model_code, models, domain_code, domains, item_code, item_names, x, choice,
                                  set_aside, rescore)

    return ItemSums(model_group=mg_table, items=table, options=options, keys=keys, has_choice=has_choice,
                    has_key=has_key, softplus=softplus_sums, model_domain_sums=model_domain_sums, source="memory")


def _option_sums(item_code: np.ndarray, x: np.ndarray, r: np.ndarray, theta: np.ndarray, w_u: np.ndarray,
                 informed: np.ndarray, choice: np.ndarray | None) -> pd.DataFrame:
    if choice is None or not informed.any():
        return pd.DataFrame({c: pd.Series(dtype=object if c == "label" else (np.int64 if c == "pos" else float))
                             for c in OPTION_SUM_COLUMNS})
    rows = np.flatnonzero(informed)
    label = np.where(pd.isna(choice[rows]), NO_ANSWER, choice[rows]).astype(object)
    pair_code, pair_item, pair_label = pair_codes(item_code[rows], label)
    n_pairs = len(pair_item)
    wrong = x[rows] == 0
    ok = np.isfinite(r[rows])

    def per_pair(values: np.ndarray | None = None) -> np.ndarray:
        if values is None:
            return np.bincount(pair_code, minlength=n_pairs).astype(float)
        return np.bincount(pair_code, values, n_pairs)

    return pd.DataFrame({
        "pos": pair_item.astype(np.int64),
        "label": text_column(pair_label),
        "count": per_pair(), "stheta": per_pair(theta[rows]), "swu": per_pair(w_u[rows]),
        "n_wrong": per_pair(wrong.astype(float)), "n_wrong_r": per_pair((wrong & ok).astype(float)),
        "sr_wrong": per_pair(np.where(wrong & ok, r[rows], 0.0)), "swu_wrong": per_pair(np.where(wrong, w_u[rows], 0.0)),
    }, copy=False)


def _key_counts(item_code: np.ndarray, x: np.ndarray, key: np.ndarray | None,
                choice: np.ndarray | None) -> pd.DataFrame:
    """Rows per (item, key); without a key column, the choices of correct rows stand for the key."""
    if key is not None:
        keyed = pd.notna(key)
        values = key
    elif choice is not None:
        keyed = pd.notna(choice) & (x == 1)
        values = choice
    else:
        return pd.DataFrame({"pos": pd.Series(dtype=np.int64), "key": pd.Series(dtype=object),
                             "count": pd.Series(dtype=float)})
    rows = np.flatnonzero(keyed)
    pair_code, pair_item, pair_label = pair_codes(item_code[rows], values[rows].astype(object))
    return pd.DataFrame({"pos": pair_item.astype(np.int64), "key": text_column(pair_label),
                         "count": np.bincount(pair_code, minlength=len(pair_item)).astype(float)})


def _model_domain_sums(model_code: np.ndarray, models: np.ndarray, domain_code: np.ndarray, domains: np.ndarray,
                       item_code: np.ndarray, item_names: np.ndarray, x: np.ndarray, choice: np.ndarray | None,
                       set_aside: np.ndarray, rescore: dict[str, str]) -> pd.DataFrame:
    """Per (model, domain): Σx and n over all items, over the items not set aside, and re-scored.

    ``set_aside`` are item names; ``rescore`` maps item names to the option that is scored
    as correct in the what-if (a row is then correct when its choice equals it).
    """
    n_domains = len(domains)
    md = model_code * n_domains + domain_code
    size = len(models) * n_domains
    aside = pd.Index(item_names).isin(list(set_aside))[item_code]
    alt_of_item = pd.Series(rescore, dtype=object).reindex(item_names).to_numpy(dtype=object)
    alt = alt_of_item[item_code]
    has_alt = pd.notna(alt)
    x_alt = x.copy()
    if has_alt.any() and choice is not None:
        x_alt[has_alt] = (choice[has_alt] == alt[has_alt]).astype(float)
    out = pd.DataFrame({
        "model": text_column(np.repeat(models, n_domains)), "domain": text_column(np.tile(domains, len(models))),
        "s": np.bincount(md, x, size), "n": np.bincount(md, minlength=size).astype(float),
        "s_kept": np.bincount(md, np.where(aside, 0.0, x), size),
        "n_kept": np.bincount(md, (~aside).astype(float), size),
        "s_rescored": np.bincount(md, x_alt, size),
        "n_rescored": np.bincount(md, has_alt.astype(float), size),
    })
    return out[out["n"] > 0].reset_index(drop=True)
