"""Item audit: which questions to look at, and how much of the jaggedness they make.

A flawed item (a wrong key, two defensible answers, none) adds errors that say nothing
about the model. Every item gets one ranking, P(flawed) from :mod:`jagged.stats.flaw` where
the response matrix fits in memory, and beside it the evidence a reviewer reads: what the
strongest models chose, the key, the likely answer, the classical statistics (difficulty,
discrimination, distractors), the named review flags, and the 2PL parameters. The
classical statistics come from sums over rows (:mod:`jagged.stats.item_sums`, run by DuckDB
or Spark), so an out-of-core Parquet input gets the same evidence. Flags are reasons to
look at an item, never to drop it.
"""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass, field, replace
from typing import Iterable

import numpy as np
import pandas as pd
from scipy.special import stdtr

from jagged.errors import JaggedInputError
from jagged.readers.choices import option_index
from jagged.readers.dataset import Dataset
from jagged.readers.items import validate_items
from jagged.stats.engine import Engine, in_memory_items
from jagged.stats.fdr import q_values
from jagged.stats.flaw import FlawPosterior, flaw_posterior
from jagged.stats.information import blas_threads_for, matrix_cells
from jagged.stats.irt import ABILITY_COLUMNS, EXTREME_DIFFICULTY, WEAK_LOADING, IRTFit, fit_2pl
from jagged.stats.item_expr import NO_ANSWER, text_column
from jagged.stats.item_sums import ItemSums, item_sums, lake_item_sums
from jagged.stats.metrics import jaggedness

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
#: Largest model × item matrix (cells, missing ones included) the item response model builds in memory;
#: above it the audit is the classical one with a note (the EM holds a few float arrays of this size).
IRT_MAX_CELLS: int = 50_000_000
#: Fewest models the item response model and the flaw model are fitted for: with fewer, abilities and
#: slopes rest on a handful of responses per item and the posterior is mostly its prior.
IRT_MIN_MODELS: int = 5
#: How the note on an audit without the item response model ends.
NO_MODEL = "the audit gives the classical evidence and flags only, without P(flawed) or the IRT columns"
#: Columns of :func:`flag_sensitivity`.
SENSITIVITY_COLUMNS: tuple[str, ...] = (
    "model", "cv_error", "cv_error_set_aside", "cv_change", "macro_score", "macro_score_set_aside",
    "n_items", "n_set_aside", "cv_error_rescored", "cv_change_rescored", "n_rescored", "note",
)


@dataclass
class ItemAudit:
    """Everything the item audit found.

    ``items`` (see :func:`item_audit`); ``options``, one row per (item, chosen option)
    (:data:`OPTION_COLUMNS`; ``domain`` and ``option`` categorical, ``option`` empty for no
    answer); ``rest``; ``n_models``; ``notes`` (dataset-level remarks); ``sums``; ``fit`` and
    ``flaws``, the 2PL and flaw model (None without the response matrix in memory).
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
        rows = [("models", f"{self.n_models:,}")] + [(k, f"{v:,}") for k, v in self._counts()]
        body = "".join(f'<tr><th scope="row">{html.escape(k)}</th><td>{html.escape(v)}</td></tr>' for k, v in rows)
        return f'<table class="jagged-summary"><caption>Item audit</caption><tbody>{body}</tbody></table>'


def item_audit(data: Dataset | pd.DataFrame, *, rest: str = "domain") -> pd.DataFrame:
    """One row per item: P(flawed) with the evidence behind it, most likely flawed first.

    Parameters
    ----------
    data : Dataset or pandas.DataFrame
        An item-level dataset (:func:`jagged.load`; out-of-core Parquet is audited in
        DuckDB) or an item table (``model, domain, item, correct``, optionally ``choice,
        key, n_options``; checked as the loader checks it).
    rest : {"domain", "test"}
        Rest score (and the 2PL's trait) over the item's domain (default) or the whole test.

    Returns
    -------
    pandas.DataFrame
        With the response matrix in memory, :data:`MODEL_AUDIT_COLUMNS` ranked by
        ``flaw_rank``: ``strong_choice`` (the option the upper 27 % by rest score chose
        most) and its share; ``key``, ``keys`` (every key with its count where they
        differ, ``"A×26, C×3"``); ``flags``; ``likely_key``, ``posterior`` with its interval
        and ``log_bayes_factor`` (:func:`jagged.stats.flaw.flaw_posterior`); ``n_models``,
        ``n_options``, ``chance`` = 1 / n_options; ``p_correct``; ``r_rest``; ``ul_index`` =
        ``p_upper`` − ``p_lower``; ``top_wrong`` (the wrong option chosen most) with its share,
        correlation with the rest score and q-value; ``share_no_answer``, ``share_invalid``;
        the 2PL ``slope, intercept, difficulty, loading`` and ``se_*`` and
        :data:`IRT_FLAGS` (NaN / ``<NA>`` for items set aside; not in ``n_flags``,
        ``flagged`` or ``flags``); ``flag_<name>`` for :data:`FLAGS` (``<NA>`` where not
        computable); ``n_flags``; ``flagged`` (any :data:`REVIEW_FLAGS`); ``note``.
        Without the model (out of core, ``engine="spark"``, fewer than
        :data:`IRT_MIN_MODELS` models, more than :data:`IRT_MAX_CELLS` cells):
        :data:`AUDIT_COLUMNS` by domain and item, and a note saying why.

    Raises
    ------
    JaggedInputError
        No item-level results, or bad item rows.

    Notes
    -----
    **Rest score.** R_mi = (S_md − x_mi) / (N_md − 1), model m's mean ``correct`` on the
    other items of the domain it has. Within the domain because a whole-test rest score
    would call the models' jaggedness an item flaw; ``rest="test"`` is for benchmarks with
    small domains. r_rest is NaN (with a note) with fewer than 3 models with a rest score,
    or when the item's scores or the rest scores are all equal.

    **Discrimination.** r_rest = cov(x, R) / (sd(x) sd(R)) over the models with the item
    (``scipy.stats.pointbiserialr`` for 0/1). The upper–lower index takes the
    k = max(1, ⌊0.27 n + ½⌋) models with the highest (lowest) rest score; ties at the
    boundary share the remaining places, so row order does not matter.

    **Distractors** (with ``choice``). Per wrong option o: its share and
    r_o = (M_o − M) / s · √(p / (1 − p)) (M_o the choosers' mean rest score, M and s the
    mean and population sd, p their share); one-sided p-value of
    t = r √((n − 2) / (1 − r²)) on n − 2 df (``scipy.stats.pearsonr(...,
    alternative="greater")``); Benjamini–Hochberg q-values over every (item, wrong option).
    "No answer" and options beyond ``n_options`` go to ``share_no_answer``, ``share_invalid``.

    **Flags**: r_rest < 0; 0 ≤ r_rest < 0.20; p_correct < max(0.20, chance);
    p_correct > 0.90; a wrong option with r_o > 0.05 and q < 0.05; half the upper group on
    one wrong option; more than one key; every model right or every model wrong (≥ 2
    models). With fewer than :data:`MIN_MODELS` models the four discrimination flags are
    ``<NA>`` (a correlation of 0.3 cannot be told from 0). ``too_hard``, ``too_easy`` and
    ``uninformative`` say an item tells little about these models, not that it is wrong.

    **Edge cases.** One model: statistics, no flags (note); all-equal responses: NaN
    correlations and ``uninformative``; ``n_options`` differing between models: correctness
    only (note); partial credit without keys is a number in [0, 1].
    """
    return audit_items(data, rest=rest).items


def audit_items(data: Dataset | pd.DataFrame, *, rest: str = "domain", engine: Engine | str | None = None,
                fit: IRTFit | None = None, flaws: FlawPosterior | None = None, model: bool = True) -> ItemAudit:
    """The full item audit as an :class:`ItemAudit` (statistics and Notes: :func:`item_audit`).

    ``engine`` (:class:`jagged.stats.engine.Engine` or its kind) says where the sums over rows
    run (default embedded DuckDB). ``fit`` and ``flaws``, the 2PL and flaw model of the same
    items and ``rest`` computed once by the caller, are used as given (a ``fit`` with another
    ``rest`` raises JaggedInputError); otherwise they are computed when ``model`` (default), or left out.
    """
    if rest not in ("domain", "test"):
        raise JaggedInputError(f"rest score must be 'domain' or 'test', not {rest!r}")
    if fit is not None and fit.rest != rest:
        raise JaggedInputError(f"the IRT fit given has rest={fit.rest!r}, the audit asks rest={rest!r}")
    if isinstance(data, pd.DataFrame):
        data = validate_items(data, "<item table>", line_offset=None)
    audit = audit_from_sums(sums_of(data, rest=rest, engine=engine), rest=rest)
    if fit is not None and flaws is not None:
        return with_model(audit, fit, flaws)
    if not model:
        return audit
    table, reason = model_table(data, audit.n_models, engine)
    if table is None:
        return without_model(audit, reason)
    with blas_threads_for(matrix_cells(table)):  # small matrices: one BLAS thread (see there)
        fit = fit_2pl(table, rest=rest) if fit is None else fit
        flaws = flaw_posterior(table, fit) if flaws is None else flaws
    return with_model(audit, fit, flaws)


def model_table(data: Dataset | pd.DataFrame, n_models: int,
                engine: Engine | str | None) -> tuple[pd.DataFrame | None, str]:
    """The item table the 2PL and flaw models run on (the matrix in memory), or None and the reason why not."""
    what = "the item response model (P(flawed) and the IRT columns)"
    try:
        items = in_memory_items(data, what, engine=engine)
    except JaggedInputError as exc:
        return None, str(exc)
    if n_models < IRT_MIN_MODELS:
        return None, f"{what} needs at least {IRT_MIN_MODELS} models ({n_models} here)"
    n_items = items["item"].nunique()
    cells = n_models * n_items
    if cells > IRT_MAX_CELLS:
        return None, (f"{what} needs a {n_models:,} × {n_items:,} response matrix ({cells:,} cells), above the "
                      f"in-memory budget of {IRT_MAX_CELLS:,} cells (select models or domains to fit it)")
    return items, ""


def without_model(audit: ItemAudit, reason: str) -> ItemAudit:
    """The classical audit with the note saying why it has no P(flawed) (``reason`` from :func:`model_table`)."""
    audit.notes.append(f"{reason}; {NO_MODEL}")
    return audit


def with_model(audit: ItemAudit, fit: IRTFit, flaws: FlawPosterior) -> ItemAudit:
    """A classical audit with the 2PL's and the flaw model's columns (:data:`MODEL_AUDIT_COLUMNS`), a new ItemAudit.

    Sorted by ``flaw_rank``; items the model lacks last, by domain and item.
    """
    items = audit.items
    ids = pd.Index(items["item"].astype(str))
    per_item = fit.items.assign(item=fit.items["item"].astype(str)).set_index("item").reindex(ids)
    post = flaws.items.assign(item=flaws.items["item"].astype(str)).set_index("item").reindex(ids)
    columns = {name: items[name] for name in items.columns}
    for name in ("likely_key", "posterior", "posterior_lower", "posterior_upper", "log_bayes_factor"):
        columns[name] = post[name].to_numpy()
    aside = ~np.isfinite(per_item["slope"].to_numpy(dtype=float))
    for name in IRT_COLUMNS:
        if name.startswith("flag_"):
            value = per_item[name].fillna(False).to_numpy(dtype=bool)
            columns[name] = pd.arrays.BooleanArray(value & ~aside, aside.copy())
        else:
            columns[name] = per_item[name].to_numpy(dtype=float)
    fit_note = per_item["note"].fillna("").astype(str).to_numpy(dtype=object)
    fit_note = np.where(fit_note != "", "IRT: " + fit_note, np.where(aside & per_item["group"].isna(),
                                                                     "IRT: not in the fit", ""))
    note = items["note"].astype(object).fillna("").to_numpy(dtype=object)
    columns["note"] = np.where((note != "") & (fit_note != ""), note + "; " + fit_note, note + fit_note)
    rank = post["flaw_rank"].to_numpy(dtype=float)
    columns["flaw_rank"] = pd.array(np.nan_to_num(rank, nan=0).astype(np.int64), dtype="Int64")
    columns["flaw_rank"][~np.isfinite(rank)] = pd.NA
    order = pd.DataFrame({"r": np.nan_to_num(rank, nan=np.inf), "d": items["domain"].astype(str).to_numpy(),
                          "i": ids.to_numpy()}).sort_values(["r", "d", "i"], kind="mergesort").index
    table = pd.DataFrame({name: columns[name] for name in MODEL_AUDIT_COLUMNS}, index=items.index, copy=False)
    table = table.iloc[order].reset_index(drop=True)
    if not pd.isna(table["flaw_rank"]).any():
        table["flaw_rank"] = table["flaw_rank"].astype(np.int64)
    return replace(audit, items=table, fit=fit, flaws=flaws, notes=list(audit.notes))


def sums_of(data: Dataset | pd.DataFrame, *, rest: str = "domain", engine: Engine | str | None = None) -> ItemSums:
    """The sufficient statistics of a Dataset or a validated item table, computed by the engine.

    A Dataset read out of core (its ``item_path``) is read again by the engine.
    """
    if isinstance(data, pd.DataFrame):
        return item_sums(data, rest=rest, engine=engine)
    if not isinstance(data, Dataset):
        raise TypeError(f"expected a Dataset or a DataFrame, not {type(data).__name__}")
    if data.items is not None:
        return item_sums(data.items, rest=rest, engine=engine)
    if data.item_path is not None:
        return lake_item_sums(data.item_path, rest=rest, engine=engine)
    raise JaggedInputError(f"{data.source}: {data.format} scores have no item-level results; the item audit needs "
                           "a table with model, domain, item, correct (and optionally choice, key)")


def rescoring_options(audit: ItemAudit) -> dict[str, str]:
    """Likely key errors with a clear alternative: item → the option strong models agree on.

    An item qualifies when at least half of the upper group chose one wrong option
    (``flag_strong_agree_wrong``), that option is the one the flaw model finds most likely
    to be the answer (``likely_key``), and the evidence is decisive: ``log_bayes_factor``
    above ln(:data:`RESCORE_BAYES_FACTOR`). None without the flaw model.
    """
    items = audit.items
    if "log_bayes_factor" not in items:
        return {}
    chosen = (items["flag_strong_agree_wrong"].fillna(False).to_numpy(dtype=bool)
              & (items["strong_choice"].to_numpy(dtype=object) != items["key"].to_numpy(dtype=object))
              & (items["strong_choice"].to_numpy(dtype=object) == items["likely_key"].to_numpy(dtype=object))
              & (items["log_bayes_factor"].to_numpy(dtype=float) > np.log(RESCORE_BAYES_FACTOR)))
    sub = items.loc[chosen]
    return dict(zip(sub["item"].astype(str), sub["strong_choice"].astype(str)))


def domain_flags(audit: ItemAudit) -> pd.DataFrame:
    """Per domain: items, flagged items and the share each flag catches, highest ``share_flagged`` first.

    Columns ``domain, n_items, n_flagged, share_flagged`` (review flags), ``n_rescored``
    (items with a what-if key) and ``share_<flag>`` per :data:`FLAGS` (NA counts as not
    flagged); with the flaw model also :data:`IRT_FLAGS` shares, ``visible`` and
    ``expected_flawed`` with their ``_lower``/``_upper`` bounds (:attr:`FlawPosterior.domains`).
    """
    items = audit.items
    rescore = rescoring_options(audit)
    names = list(FLAGS) + [name for name in IRT_FLAGS if f"flag_{name}" in items]
    flags = items[[f"flag_{f}" for f in names]].fillna(False).astype(bool)
    frame = pd.concat([items[["domain"]], flags, items[["flagged"]].astype(bool),
                       items[["item"]].isin(list(rescore)).rename(columns={"item": "rescored"})], axis=1)
    grouped = frame.groupby("domain", sort=True)
    out = pd.DataFrame({"n_items": grouped.size(), "n_flagged": grouped["flagged"].sum(),
                        "n_rescored": grouped["rescored"].sum()})
    out["share_flagged"] = out["n_flagged"] / out["n_items"]
    for name in names:
        out[f"share_{name}"] = grouped[f"flag_{name}"].mean()
    out = out.reset_index()
    columns = ["domain", "n_items", "n_flagged", "share_flagged", "n_rescored"] + [f"share_{n}" for n in names]
    if audit.flaws is not None:
        expected = audit.flaws.domains.assign(domain=audit.flaws.domains["domain"].astype(str)).set_index("domain")
        for name, source in (("visible", "visible"), ("visible_lower", "visible_lower"),
                             ("visible_upper", "visible_upper"), ("expected_flawed", "expected_flawed"),
                             ("expected_flawed_lower", "lower"), ("expected_flawed_upper", "upper")):
            out[name] = out["domain"].astype(str).map(expected[source]).to_numpy(dtype=float)
            columns.append(name)
    return out[columns].sort_values(["share_flagged", "domain"], ascending=[False, True],
                                    kind="mergesort").reset_index(drop=True)


def flag_counts(audit: ItemAudit) -> pd.DataFrame:
    """Per flag (:data:`FLAGS`, then :data:`IRT_FLAGS`, then ``flagged``): items caught and their share.

    Columns ``flag, meaning, review`` (whether it makes an item ``flagged``), ``n_items``,
    ``share`` (of all items), ``n_computed``, ``share_computed`` (of the items it was computed for).
    """
    items = audit.items
    rows = []
    meanings = {**FLAGS, **{name: text for name, text in IRT_FLAGS.items() if f"flag_{name}" in items}}
    for name, meaning in meanings.items():
        column = items[f"flag_{name}"]
        computed = int(column.notna().sum())
        hits = int(column.fillna(False).astype(bool).sum())
        rows.append({"flag": name, "meaning": meaning, "review": name in REVIEW_FLAGS, "n_items": hits,
                     "share": hits / len(items) if len(items) else np.nan, "n_computed": computed,
                     "share_computed": hits / computed if computed else np.nan})
    hits = int(items["flagged"].sum())
    rows.append({"flag": "flagged", "meaning": "any review flag", "review": True, "n_items": hits,
                 "share": hits / len(items) if len(items) else np.nan, "n_computed": len(items),
                 "share_computed": hits / len(items) if len(items) else np.nan})
    return pd.DataFrame(rows)


def flag_sensitivity(audit: ItemAudit, *, flags: Iterable[str] = REVIEW_FLAGS) -> pd.DataFrame:
    """Per model: cv_error with all items, with the flagged items set aside, and a re-scoring what-if.

    Returns one row per model (:data:`SENSITIVITY_COLUMNS`): ``cv_error``, ``macro_score``
    from all items; ``_set_aside`` with the items of ``flags`` (default :data:`REVIEW_FLAGS`)
    left out, ``cv_change`` = set aside − all; ``n_items``, ``n_set_aside``; the what-if
    ``cv_error_rescored`` / ``cv_change_rescored`` with the items of
    :func:`rescoring_options` scored against the strong models' option (``n_rescored``); ``note``.

    Notes
    -----
    A sensitivity analysis, not a corrected CV: setting aside hard but valid items lowers
    the mean error and so *raises* CV = sd / mean. A domain that loses every item leaves
    the CV over fewer domains (note). The re-scoring assumes the strong models are right.
    """
    flags = list(flags)
    unknown = [f for f in flags if f not in FLAGS]
    if unknown:
        raise JaggedInputError(f"unknown flag(s) {', '.join(unknown)}; flags are {', '.join(FLAGS)}")
    if audit.sums is None:
        raise JaggedInputError("this ItemAudit has no sums (made by hand?); use audit_items()")
    items = audit.items
    aside_mask = items[[f"flag_{f}" for f in flags]].fillna(False).to_numpy(dtype=bool).any(axis=1)
    aside = items.loc[aside_mask, "item"].to_numpy(dtype=object)
    rescore = rescoring_options(audit)
    md = audit.sums.model_domain_sums(aside, rescore)

    def cv(score_col: str, n_col: str) -> pd.DataFrame:
        keep = md[n_col] > 0
        frame = pd.DataFrame({"model": md.loc[keep, "model"].to_numpy(dtype=object),
                              "domain": md.loc[keep, "domain"].to_numpy(dtype=object),
                              "score": (md.loc[keep, score_col] / md.loc[keep, n_col]).to_numpy(dtype=float)})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return jaggedness(frame).set_index("model")

    full = cv("s", "n")
    kept = cv("s_kept", "n_kept")
    rescored = cv("s_rescored", "n")
    models = full.index
    n_items = md.groupby("model")["n"].sum().reindex(models)
    n_kept = md.groupby("model")["n_kept"].sum().reindex(models)
    lost = md[(md["n"] > 0) & (md["n_kept"] == 0)].groupby("model")["domain"].apply(lambda d: ", ".join(map(str, d)))
    notes = [f"every item of {lost[m]} set aside: CV over the remaining domains" if m in lost.index else ""
             for m in models]
    out = pd.DataFrame({
        "model": np.asarray(models, dtype=object),
        "cv_error": full["cv_error"].to_numpy(dtype=float),
        "cv_error_set_aside": kept["cv_error"].reindex(models).to_numpy(dtype=float),
        "macro_score": full["macro_score"].to_numpy(dtype=float),
        "macro_score_set_aside": kept["macro_score"].reindex(models).to_numpy(dtype=float),
        "n_items": n_items.to_numpy(dtype=np.int64),
        "n_set_aside": (n_items - n_kept).to_numpy(dtype=np.int64),
        "cv_error_rescored": rescored["cv_error"].reindex(models).to_numpy(dtype=float),
        "n_rescored": md.groupby("model")["n_rescored"].sum().reindex(models).fillna(0).to_numpy(dtype=np.int64),
        "note": notes,
    })
    out["cv_change"] = out["cv_error_set_aside"] - out["cv_error"]
    out["cv_change_rescored"] = out["cv_error_rescored"] - out["cv_error"]
    return out[list(SENSITIVITY_COLUMNS)]


def audit_from_sums(sums: ItemSums, *, rest: str = "domain") -> ItemAudit:
    """The classical item audit from its sufficient statistics (``sums`` is left unchanged)."""
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
