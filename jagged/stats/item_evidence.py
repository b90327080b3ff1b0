"""The item audit's classical evidence from sufficient statistics: difficulty, discrimination, options, flags.

:func:`audit_from_sums` turns the sums of :mod:`jagged.stats.item_sums` (Ibis expressions run by
DuckDB or Spark, :mod:`jagged.stats.item_expr`) into an :class:`ItemAudit`: the classical
psychometric evidence per item and per option and the named flags (:data:`FLAGS`). They are
evidence beside the one ranking, P(flawed) of :mod:`jagged.stats.flaw`, never a ranking of
their own. The entry points and the formulas' Notes are in :mod:`jagged.stats.item_audit`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy.special import stdtr

from jagged.stats.fdr import q_values
from jagged.stats.flaw import FlawPosterior
from jagged.stats.irt import ABILITY_COLUMNS, EXTREME_DIFFICULTY, WEAK_LOADING, IRTFit
from jagged.stats.item_expr import NO_ANSWER, text_column
from jagged.stats.item_sums import ItemSums

#: Fewer models than this: discrimination and distractor flags are not computed (a note instead).
MIN_MODELS = 10
#: Thresholds of the named flags (see :data:`FLAGS`).
WEAK_DISCRIMINATION = 0.20
HARD_P = 0.20
EASY_P = 0.90
DISTRACTOR_R = 0.05
FDR_Q = 0.05
STRONG_AGREE = 0.5
#: Bayes factor above which a likely key error with a clear alternative is re-scored in the what-if
#: (100: "decisive" on Jeffreys' scale).
RESCORE_BAYES_FACTOR = 100.0
#: Rows per block of the option computations (bounds the temporaries on very large tables).
BLOCK = 100_000
#: Every named flag and what it means, in report order.
FLAGS: dict[str, str] = {
    "negative_discrimination": "item–rest correlation below 0: weaker models do better on it",
    "weak_discrimination": f"item–rest correlation from 0 up to {WEAK_DISCRIMINATION:.2f}",
    "distractor_attracts_able": (f"a wrong option correlates with the rest score above {DISTRACTOR_R:.2f}, "
                                 f"Benjamini–Hochberg q below {FDR_Q:.2f}"),
    "strong_agree_wrong": "at least half of the strongest 27% of models chose the same wrong option",
    "key_inconsistent": "the key differs between models",
    "too_hard": f"p_correct below {HARD_P:.2f} (or below chance where chance is higher)",
    "too_easy": f"p_correct above {EASY_P:.2f}",
    "uninformative": "every model right, or every model wrong",
}
#: Flags that point at the item itself; an item with any of them is ``flagged`` (set aside in the sensitivity).
REVIEW_FLAGS: tuple[str, ...] = ("negative_discrimination", "weak_discrimination", "distractor_attracts_able",
                                 "strong_agree_wrong", "key_inconsistent")
#: Flags computed only with at least :data:`MIN_MODELS` models.
DISCRIMINATION_FLAGS: tuple[str, ...] = ("negative_discrimination", "weak_discrimination",
                                         "distractor_attracts_able", "strong_agree_wrong")

#: Columns of the classical audit (:func:`audit_from_sums`), in order.
AUDIT_COLUMNS: tuple[str, ...] = (
    "item", "domain", "strong_choice", "strong_choice_share", "key", "keys", "flags", "n_models", "n_options",
    "chance", "p_correct", "r_rest", "ul_index", "p_upper", "p_lower", "top_wrong", "top_wrong_share",
    "top_wrong_r", "top_wrong_q", "share_no_answer", "share_invalid", *[f"flag_{name}" for name in FLAGS],
    "n_flags", "flagged", "note",
)
#: The item response model's flags (:mod:`jagged.stats.irt`), beside :data:`FLAGS`: they do not make an item
#: ``flagged`` and are not counted in ``n_flags`` / ``flags`` (those keep their classical meaning).
IRT_FLAGS: dict[str, str] = {
    "negative_loading": "2PL loading below 0: the item's trait falls as correctness rises (a miskey's sign)",
    "weak_loading": f"2PL loading from 0 up to {WEAK_LOADING}",
    "extreme_difficulty": f"2PL difficulty |b| above {EXTREME_DIFFICULTY:g} (PISA's rule)",
}
#: The flaw model's columns of :func:`item_audit` (in-memory inputs): after ``flags``.
MODEL_COLUMNS: tuple[str, ...] = ("likely_key", "posterior", "posterior_lower", "posterior_upper", "log_bayes_factor")
#: The 2PL's columns of :func:`item_audit` (in-memory inputs): after ``share_invalid``.
IRT_COLUMNS: tuple[str, ...] = (
    "slope", "se_slope", "intercept", "se_intercept", "difficulty", "se_difficulty", "loading", "se_loading",
    *[f"flag_{name}" for name in IRT_FLAGS],
)
#: Columns of :func:`item_audit` with the item response model (in-memory inputs), in order: what a reviewer
#: reads first (what the strongest models chose, the key, the likely answer, the flags), then P(flawed).
MODEL_AUDIT_COLUMNS: tuple[str, ...] = (
    "flaw_rank", *AUDIT_COLUMNS[:AUDIT_COLUMNS.index("flags") + 1], *MODEL_COLUMNS,
    *AUDIT_COLUMNS[AUDIT_COLUMNS.index("flags") + 1:AUDIT_COLUMNS.index("share_invalid") + 1], *IRT_COLUMNS,
    *AUDIT_COLUMNS[AUDIT_COLUMNS.index("share_invalid") + 1:],
)
#: Columns of :attr:`ItemAudit.options`.
OPTION_COLUMNS: tuple[str, ...] = ("item", "domain", "option", "is_key", "valid", "n_chose", "share", "n_wrong",
                                   "wrong_share", "upper_share", "r_rest", "p_value", "q_value")


@dataclass
class ItemAudit:
    """Everything the item audit found.

    Attributes
    ----------
    items : pandas.DataFrame
        One row per item (:data:`AUDIT_COLUMNS`, by domain and item; with the item response
        model :data:`MODEL_AUDIT_COLUMNS`, most likely flawed first; see :func:`item_audit`).
    options : pandas.DataFrame
        One row per (item, chosen option) with choice information (:data:`OPTION_COLUMNS`):
        shares, the option's correlation with the rest score, its one-sided p-value and
        its Benjamini–Hochberg q-value over all (item, wrong option) pairs; ``domain`` and
        ``option`` are categoricals, ``option`` is empty for "no answer".
    rest : str
        ``"domain"`` or ``"test"``.
    n_models : int
        Models in the data.
    notes : list of str
        Dataset-level remarks (few models, no choices, why the IRT columns are absent, ...).
    fit : IRTFit or None
        The 2PL fit behind the IRT columns (:func:`jagged.stats.irt.fit_2pl`); None when the
        response matrix was not in memory.
    flaws : FlawPosterior or None
        The flaw model behind ``posterior`` and ``flaw_rank``
        (:func:`jagged.stats.flaw.flaw_posterior`); None likewise.
    """

    items: pd.DataFrame
    options: pd.DataFrame
    rest: str
    n_models: int
    notes: list[str] = field(default_factory=list)
    sums: ItemSums | None = field(default=None, repr=False)
    fit: IRTFit | None = field(default=None, repr=False)
    flaws: FlawPosterior | None = field(default=None, repr=False)

    @property
    def abilities(self) -> pd.DataFrame:
        """Per model and trait: ``model, group, n_items, theta, theta_sd`` (EAP ability and its posterior SD).

        ``group`` is the domain (``rest="domain"``) or ``"test"`` (one trait); empty without a fit.
        """
        if self.fit is None:
            return pd.DataFrame(columns=list(ABILITY_COLUMNS))
        return self.fit.abilities

    @property
    def flag_columns(self) -> list[str]:
        """The ``flag_*`` columns of :attr:`items`."""
        return [f"flag_{name}" for name in FLAGS]

    def _counts(self) -> list[tuple[str, int]]:
        """(name, items) for every item, the flagged ones and each flag."""
        items = self.items
        out = [("items", len(items)), ("flagged", int(items["flagged"].sum()) if "flagged" in items else 0)]
        out += [(c[len("flag_"):], int(items[c].sum())) for c in self.flag_columns if c in items]
        return out

    def __repr__(self) -> str:
        """A few lines: items, models, flagged counts (no arrays)."""
        counts = dict(self._counts())
        flags = ", ".join(f"{k} {v:,}" for k, v in self._counts()[2:])
        domains = self.items["domain"].nunique() if "domain" in self.items else 0
        irt = ""
        if self.flaws is not None:
            t = self.flaws.total
            irt = (f"\n  2PL by {'domain' if self.rest == 'domain' else 'test'}; expected flawed items "
                   f"{t['expected_flawed']:,.0f} ({t['lower']:,.0f}–{t['upper']:,.0f})")
        return (f"<ItemAudit: {counts['items']:,} items in {domains:,} domains from {self.n_models:,} models\n"
                f"  flagged: {counts['flagged']:,} ({flags or 'no flags'}){irt}>")

    def _repr_html_(self) -> str:
        """A small summary table for notebooks (every value escaped)."""
        import html

        rows = [("models", f"{self.n_models:,}")] + [(k, f"{v:,}") for k, v in self._counts()]
        body = "".join(f'<tr><th scope="row">{html.escape(k)}</th><td>{html.escape(v)}</td></tr>' for k, v in rows)
        return f'<table class="jagged-summary"><caption>Item audit</caption><tbody>{body}</tbody></table>'


# ---------------------------------------------------------------------------------------
# From the sums to the audit


def audit_from_sums(sums: ItemSums, *, rest: str = "domain") -> ItemAudit:
    """Compute the item audit from its sufficient statistics (shared by the in-memory and DuckDB roads).

    ``sums`` is not changed: the returned audit holds a copy of it without the item and
    option tables (:attr:`ItemAudit.sums`).
    """
    t = sums.items
    n_models = int(sums.model_group["model"].nunique())
    n = t["n"].to_numpy(dtype=float)
    p = t["sx"].to_numpy(dtype=float) / n
    nopt = t["nopt_max"].to_numpy(dtype=float)
    revised = np.isfinite(nopt) & (t["nopt_min"].to_numpy(dtype=float) != nopt)
    chance = 1.0 / nopt
    r_rest = _rest_correlation(t)
    n_r = t["n_r"].to_numpy(dtype=float)
    k_ul = t["k_ul"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_upper = np.where(n_r >= 2, t["sxwu"].to_numpy(dtype=float) / k_ul, np.nan)
        p_lower = np.where(n_r >= 2, t["sxwl"].to_numpy(dtype=float) / k_ul, np.nan)
    keys = _keys(sums, t)
    choice_ok = (t["n_choice"].to_numpy(dtype=float) == n) & (t["n_choice"].to_numpy(dtype=float) > 0) & ~revised
    options = _options(sums, t, keys["key"], choice_ok)
    options["q_value"] = q_values(options["p_value"].to_numpy(dtype=float))
    per_item = _option_summary(options, t, choice_ok)
    for column in ("_pos", "_swu_wrong"):
        del options[column]  # in place: no copy of the option table
    table: dict[str, np.ndarray] = {
        "item": t["item"].to_numpy(dtype=object), "domain": t["domain"].to_numpy(dtype=object),
        "n_models": n.astype(np.int64), "n_options": nopt, "chance": chance, "p_correct": p, "r_rest": r_rest,
        "ul_index": p_upper - p_lower, "p_upper": p_upper, "p_lower": p_lower,
        "key": keys["key"], "keys": keys["keys"], **per_item,
    }
    var_x = t["sxx"].to_numpy(dtype=float) / n - p * p
    _flags(table, choice_ok, keys["n_keys"], var_x <= 1e-12)
    table["note"] = np.asarray(_notes(table, n_r, revised), dtype=object)
    items = _ordered(table)
    notes = _dataset_notes(sums, n_models, choice_ok)
    # The audit keeps the sums without their item and option tables (its own tables have what they held;
    # the sensitivity analysis needs only the other sums). The caller's ItemSums is left as it was given.
    kept = replace(sums, items=pd.DataFrame(columns=sums.items.columns),
                   options=pd.DataFrame(columns=sums.options.columns))
    return ItemAudit(items=items, options=options, rest=rest, n_models=n_models, notes=notes, sums=kept)


def _rest_correlation(t: pd.DataFrame) -> np.ndarray:
    n = t["n_r"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = t["sx_r"].to_numpy(dtype=float) / n
        mr = t["sr"].to_numpy(dtype=float) / n
        vx = t["sxx_r"].to_numpy(dtype=float) / n - mx * mx
        vr = t["srr"].to_numpy(dtype=float) / n - mr * mr
        cov = t["sxr"].to_numpy(dtype=float) / n - mx * mr
        r = cov / np.sqrt(vx * vr)
    undefined = (n < 3) | ~(vx > 1e-12) | ~(vr > 1e-14)
    return np.where(undefined, np.nan, np.clip(r, -1.0, 1.0))


def _keys(sums: ItemSums, t: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per item: the key most rows carry (ties: the first label), how many keys, and the list."""
    n_items = len(t)
    k = sums.keys
    key = np.full(n_items, None, dtype=object)
    n_keys = np.zeros(n_items, dtype=np.int64)
    listing = np.full(n_items, "", dtype=object)
    if len(k):
        ordered = k.sort_values(["pos", "count", "key"], ascending=[True, False, True], kind="mergesort")
        first = ordered.drop_duplicates("pos")
        key[first["pos"].to_numpy()] = first["key"].to_numpy(dtype=object)
        n_keys = np.bincount(ordered["pos"].to_numpy(), minlength=n_items).astype(np.int64)
        several = ordered[n_keys[ordered["pos"].to_numpy()] > 1]
        if len(several):
            text = (several["key"].astype(str) + "×" + several["count"].astype(np.int64).astype(str)).groupby(
                several["pos"].to_numpy(), sort=False).agg(", ".join)
            listing[text.index.to_numpy()] = text.to_numpy(dtype=object)
    return {"key": key, "n_keys": n_keys, "keys": listing}


def _options(sums: ItemSums, t: pd.DataFrame, key: np.ndarray, choice_ok: np.ndarray) -> pd.DataFrame:
    """The per-(item, option) table with correlations, p- and q-values (computed in blocks of rows)."""
    from jagged.readers.choices import option_index

    o = sums.options
    internal = ("_pos", "_swu_wrong")
    if not len(o):
        return pd.DataFrame({c: pd.Series(dtype=object) for c in (*OPTION_COLUMNS, *internal)})
    keep = choice_ok[o["pos"].to_numpy()]
    everything = bool(keep.all())
    kept = np.flatnonzero(keep)
    size = len(kept)
    columns = {name: o[name].to_numpy() for name in o.columns}

    labels_seen = pd.unique(pd.Series(columns["label"], dtype=object))
    option_names = pd.Index(sorted(str(v) for v in labels_seen if v is not None and v != NO_ANSWER), dtype=object)

    def passed(name: str, dtype: type) -> np.ndarray:
        """A sums column as an output column: the same array when every row is kept (no copy)."""
        values = columns[name] if everything else columns[name][kept]
        return values if values.dtype == dtype else values.astype(dtype)

    item_names, domains = t["item"].to_numpy(dtype=object), t["domain"].to_numpy(dtype=object)
    per_item = {name: t[name].to_numpy(dtype=float) for name in ("n", "n_r", "nopt_max", "sr", "srr", "k_ul")}
    out = {"item": np.empty(size, dtype=object),
           "option": np.full(size, -1, dtype=np.int32), "is_key": np.zeros(size, dtype=bool),
           "valid": np.zeros(size, dtype=bool), "n_chose": passed("count", np.int32),
           "share": np.zeros(size), "n_wrong": passed("n_wrong", np.int32), "wrong_share": np.zeros(size),
           "upper_share": np.zeros(size), "r_rest": np.full(size, np.nan), "p_value": np.full(size, np.nan),
           "_pos": passed("pos", np.int32), "_swu_wrong": passed("swu_wrong", np.float64)}
    for b in _blocks(size):
        rows = kept[b]
        pos = columns["pos"][rows].astype(np.int64)
        label = columns["label"][rows].astype(object)
        n, n_r = per_item["n"][pos], per_item["n_r"][pos]
        idx = option_index(np.where(label == NO_ANSWER, None, label))
        valid = (label != NO_ANSWER) & ~(idx >= per_item["nopt_max"][pos])
        count = columns["count"][rows].astype(float)
        n_wrong = columns["n_wrong"][rows].astype(float)
        k_wrong = columns["n_wrong_r"][rows].astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = per_item["sr"][pos] / n_r
            var = per_item["srr"][pos] / n_r - mean * mean
            share_r = k_wrong / n_r
            r = ((columns["sr_wrong"][rows] / k_wrong - mean) / np.sqrt(var) * np.sqrt(share_r / (1 - share_r)))
            k_ul = per_item["k_ul"][pos]
            upper = np.where(k_ul > 0, columns["swu"][rows] / k_ul, np.nan)
        defined = valid & (n_wrong > 0) & (n_r >= 3) & (var > 1e-14) & (k_wrong > 0) & (k_wrong < n_r)
        r = np.where(defined, np.clip(r, -1.0, 1.0), np.nan)
        p_value = np.full(len(rows), np.nan)
        df, rd = n_r[defined] - 2, r[defined]
        with np.errstate(invalid="ignore", divide="ignore"):
            tstat = rd * np.sqrt(df / np.maximum(1 - rd * rd, 0.0))
        p_value[defined] = np.where(rd >= 1.0, 0.0, stdtr(df, -tstat))  # Student t upper tail
        out["item"][b] = item_names[pos]
        out["option"][b] = option_names.get_indexer(label)  # -1: no answer
        out["is_key"][b], out["valid"][b] = label == key[pos], valid
        out["share"][b], out["wrong_share"][b] = count / n, n_wrong / n
        out["upper_share"][b], out["r_rest"][b], out["p_value"][b] = upper, r, p_value
    out["q_value"] = np.full(size, np.nan)  # filled by audit_from_sums once the sums are released
    # domain and option as categoricals (a few distinct names, millions of rows on big benchmarks)
    domain_codes, domain_names = pd.factorize(pd.Series(domains, dtype=object), sort=True)
    out["domain"] = pd.Categorical.from_codes(domain_codes.astype(np.int32)[out["_pos"]], categories=domain_names)
    out["option"] = pd.Categorical.from_codes(out["option"], categories=option_names)
    out["item"] = text_column(out["item"])
    frame = pd.DataFrame({name: out[name] for name in (*OPTION_COLUMNS, *internal)}, copy=False)  # no copy
    return frame


def _blocks(n: int, size: int = BLOCK) -> list[slice]:
    """Slices of at most ``size`` rows covering 0 … n − 1."""
    return [slice(start, min(start + size, n)) for start in range(0, max(n, 1), size)]


def _best(pos: np.ndarray, label: np.ndarray, mask: np.ndarray, value: np.ndarray) -> dict[str, np.ndarray]:
    """Per item, the row with the highest value (ties: the first label; rows sorted by item, label)."""
    rows = np.flatnonzero(mask)
    order = rows[np.lexsort((-value[rows], pos[rows]))]  # stable: ties keep label order
    first = order[np.r_[True, pos[order][1:] != pos[order][:-1]]] if len(order) else order
    return {"pos": pos[first], "value": value[first], "label": label[first], "row": first}


def _option_summary(options: pd.DataFrame, t: pd.DataFrame, choice_ok: np.ndarray) -> dict[str, np.ndarray]:
    """Per-item evidence from the option table: strong choice, top wrong option, shares, attracting distractor."""
    n_items = len(t)
    out: dict[str, np.ndarray] = {
        "strong_choice": np.full(n_items, None, dtype=object), "strong_choice_share": np.full(n_items, np.nan),
        "top_wrong": np.full(n_items, None, dtype=object), "top_wrong_share": np.full(n_items, np.nan),
        "top_wrong_r": np.full(n_items, np.nan), "top_wrong_q": np.full(n_items, np.nan),
        "share_no_answer": np.where(choice_ok, 0.0, np.nan), "share_invalid": np.where(choice_ok, 0.0, np.nan),
        "_attracts": np.zeros(n_items, dtype=bool), "_strong_wrong_share": np.where(choice_ok, 0.0, np.nan),
        "_strong_wrong": np.full(n_items, None, dtype=object),
    }
    if not len(options):
        return out
    pos_all = options["_pos"].to_numpy()
    valid_all = options["valid"].to_numpy(dtype=bool)
    option = options["option"]
    codes_all = option.cat.codes.to_numpy() if isinstance(option.dtype, pd.CategoricalDtype) else None
    categories = np.asarray(option.cat.categories, dtype=object) if codes_all is not None else None
    share_all = options["share"].to_numpy(dtype=float)
    upper_all = options["upper_share"].to_numpy(dtype=float)
    wrong_share_all = options["wrong_share"].to_numpy(dtype=float)
    n_wrong_all = options["n_wrong"].to_numpy()
    r_all = options["r_rest"].to_numpy(dtype=float)
    q_all = options["q_value"].to_numpy(dtype=float)
    swu_all = options["_swu_wrong"].to_numpy(dtype=float)
    k_ul_items = t["k_ul"].to_numpy(dtype=float)
    for b in _blocks(n_items):  # blocks of items: temporaries stay small
        lo, hi = np.searchsorted(pos_all, [b.start, b.stop])
        pos, valid = pos_all[lo:hi], valid_all[lo:hi]
        if codes_all is not None:
            codes = codes_all[lo:hi]
            label = np.where(codes >= 0, categories[np.maximum(codes, 0)], None) if len(categories) else \
                np.full(len(codes), None, dtype=object)
        else:
            label = option.to_numpy(dtype=object)[lo:hi]
        none = pd.isna(label)
        np.add.at(out["share_no_answer"], pos[none], share_all[lo:hi][none])
        invalid = ~valid & ~none
        np.add.at(out["share_invalid"], pos[invalid], share_all[lo:hi][invalid])
        upper = upper_all[lo:hi]
        strong = _best(pos, label, valid & np.isfinite(upper), upper)
        out["strong_choice"][strong["pos"]] = strong["label"]
        out["strong_choice_share"][strong["pos"]] = strong["value"]
        wrong = valid & (n_wrong_all[lo:hi] > 0)
        top = _best(pos, label, wrong, wrong_share_all[lo:hi])
        out["top_wrong"][top["pos"]] = top["label"]
        out["top_wrong_share"][top["pos"]] = top["value"]
        out["top_wrong_r"][top["pos"]] = r_all[lo:hi][top["row"]]
        out["top_wrong_q"][top["pos"]] = q_all[lo:hi][top["row"]]
        attracts = wrong & (r_all[lo:hi] > DISTRACTOR_R) & (q_all[lo:hi] < FDR_Q)
        out["_attracts"][pos[attracts]] = True
        k_ul = k_ul_items[pos]
        with np.errstate(invalid="ignore", divide="ignore"):
            strong_wrong = np.where(k_ul > 0, swu_all[lo:hi] / k_ul, np.nan)
        sw = _best(pos, label, wrong & np.isfinite(strong_wrong), strong_wrong)
        out["_strong_wrong_share"][sw["pos"]] = sw["value"]
        out["_strong_wrong"][sw["pos"]] = sw["label"]
    return out


# ---------------------------------------------------------------------------------------
# Flags, notes, rank


def _flags(table: dict[str, np.ndarray], choice_ok: np.ndarray, n_keys: np.ndarray, constant: np.ndarray) -> None:
    """Add the ``flag_*`` columns (nullable booleans), ``n_flags``, ``flagged`` and ``flags`` to ``table``."""
    n = table["n_models"]
    r = table["r_rest"]
    p = table["p_correct"]
    chance = np.nan_to_num(table["chance"], nan=0.0)
    enough = n >= MIN_MODELS
    attracts = table.pop("_attracts").astype(bool)
    strong_share = table.pop("_strong_wrong_share").astype(float)
    table.pop("_strong_wrong")
    values = {
        "negative_discrimination": (r < 0, enough & np.isfinite(r)),
        "weak_discrimination": ((r >= 0) & (r < WEAK_DISCRIMINATION), enough & np.isfinite(r)),
        "distractor_attracts_able": (attracts, enough & choice_ok),
        "strong_agree_wrong": (strong_share >= STRONG_AGREE, enough & choice_ok),
        "key_inconsistent": (n_keys > 1, np.ones(len(n), dtype=bool)),
        "too_hard": (p < np.maximum(HARD_P, chance), n >= 2),
        "too_easy": (p > EASY_P, n >= 2),
        "uninformative": (constant, n >= 2),
    }
    hits = np.zeros((len(n), len(FLAGS)), dtype=bool)
    for k, name in enumerate(FLAGS):
        value, computed = values[name]
        computed = np.asarray(computed, dtype=bool)
        hits[:, k] = np.asarray(value, dtype=bool) & computed
        table[f"flag_{name}"] = pd.arrays.BooleanArray(hits[:, k].copy(), ~computed)
    table["n_flags"] = hits.sum(axis=1)
    review = [list(FLAGS).index(name) for name in REVIEW_FLAGS]
    table["flagged"] = hits[:, review].any(axis=1)
    names = np.asarray(list(FLAGS), dtype=object)
    codes, patterns = np.unique(np.packbits(hits, axis=1, bitorder="little"), axis=0, return_inverse=True)
    text = np.asarray([", ".join(names[np.unpackbits(c, bitorder="little")[:len(FLAGS)].astype(bool)])
                       for c in codes], dtype=object)
    table["flags"] = text[patterns.ravel()]


def _notes(table: dict[str, np.ndarray], n_r: np.ndarray, revised: np.ndarray) -> list[str]:
    n = table["n_models"]
    p = table["p_correct"]
    r = table["r_rest"]
    parts: list[list[str]] = [[] for _ in range(len(n))]
    for i in np.flatnonzero(n == 1):
        parts[i].append("one model only: nothing to compare")
    for i in np.flatnonzero((n > 1) & (n < MIN_MODELS)):
        parts[i].append(f"{n[i]} models (< {MIN_MODELS}): discrimination not flagged, too noisy")
    for i in np.flatnonzero((n > 1) & (p == 1)):
        parts[i].append("every model right: discrimination undefined")
    for i in np.flatnonzero((n > 1) & (p == 0)):
        parts[i].append("every model wrong: discrimination undefined")
    for i in np.flatnonzero((n > 1) & (p > 0) & (p < 1) & ~np.isfinite(r)):
        parts[i].append("item–rest correlation undefined (models score alike or have no rest score)")
    for i in np.flatnonzero(n_r < n):
        parts[i].append(f"{int(n[i] - n_r[i])} model(s) without other items in the group: no rest score")
    for i in np.flatnonzero(revised):
        parts[i].append("n_options differs between models (option list revised): letters not compared, "
                        "correctness only")
    invalid = np.asarray(table["share_invalid"], dtype=float)
    for i in np.flatnonzero(np.nan_to_num(invalid) > 0):
        parts[i].append(f"{invalid[i]:.0%} chose an option the item does not have")
    return ["; ".join(p) for p in parts]


def _ordered(table: dict[str, np.ndarray]) -> pd.DataFrame:
    """The item table by domain, then item, built column by column in :data:`AUDIT_COLUMNS` order."""
    order = pd.DataFrame({"d": text_column(table["domain"]), "i": text_column(table["item"])}).sort_values(
        ["d", "i"], kind="mergesort").index.to_numpy()
    out = {}
    for name in AUDIT_COLUMNS:
        values = table.pop(name)[order]
        out[name] = text_column(values) if getattr(values, "dtype", None) == np.dtype(object) else values
    return pd.DataFrame(out, copy=False)


def _dataset_notes(sums: ItemSums, n_models: int, choice_ok: np.ndarray) -> list[str]:
    notes = []
    if n_models < MIN_MODELS:
        notes.append(f"only {n_models} models: discrimination and distractor flags need at least {MIN_MODELS} "
                     "(with fewer, a correlation of 0.3 cannot be told from 0); only difficulty and key are "
                     "given")
    if not sums.has_choice:
        notes.append("no choice column: no distractor analysis; P(flawed) from correctness only")
    elif not choice_ok.all():
        notes.append(f"{int((~choice_ok).sum()):,} items without complete choice information are audited on "
                     "correctness only")
    return notes
