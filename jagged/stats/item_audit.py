"""Item audit: which questions to look at, and how much of the jaggedness they make.

A flawed item (a wrong key, two defensible answers, no answer at all) adds errors to its
domain that say nothing about the model, so part of a domain's error rate, and of
cv_error, belongs to the benchmark. This module gives every item one ranking, P(flawed)
from the flaw model (:mod:`jagged.stats.flaw`), where the response matrix fits in memory,
and beside it the evidence a reviewer reads: what the strongest models chose, the key, the
likely answer, the classical psychometric statistics (difficulty, discrimination,
distractor behaviour) and the named flags test programmes use to send items to review
(:mod:`jagged.stats.item_evidence`), the 2PL item parameters (:mod:`jagged.stats.irt`).

* :func:`item_audit` — one row per item (the table ``jagged items`` prints);
* :func:`audit_items` — the same as an :class:`ItemAudit` with the per-option table, the
  2PL fit, the flaw model and the dataset-level notes;
* :func:`model_table` — the item table the flaw model runs on, or why it does not;
* :func:`jagged.stats.item_sensitivity.flag_sensitivity` — per model, cv_error with all
  items, with the flagged items set aside, and with likely key errors re-scored (a what-if);
* :func:`domain_flags` — per domain, how many items each flag catches and how many are
  expected to be flawed.

Flags are reasons to look at an item, never to drop it. The classical statistics are
sums over rows written once as Ibis expressions (:mod:`jagged.stats.item_expr`) that
DuckDB runs embedded or Spark on a cluster, so a 50-million-row Parquet file, or a
partitioned folder of them, gets the same evidence as a DataFrame; P(flawed) needs the
response matrix in memory.
"""


from __future__ import annotations

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.readers.dataset import Dataset
from jagged.stats.engine import Engine, in_memory_items
from jagged.stats.flaw import FlawPosterior
from jagged.stats.irt import IRTFit
from jagged.stats.item_evidence import (
    FLAGS,
    IRT_COLUMNS,
    IRT_FLAGS,
    MODEL_AUDIT_COLUMNS,
    RESCORE_BAYES_FACTOR,
    REVIEW_FLAGS,
    ItemAudit,
    audit_from_sums,
)
from jagged.stats.item_sums import ItemSums, item_sums, lake_item_sums

#: Largest model × item matrix (cells, missing ones included) the item response model builds in memory;
#: above it the audit is the classical one with a note (the EM holds a few float arrays of this size).
IRT_MAX_CELLS: int = 50_000_000
#: Fewest models the item response model and the flaw model are fitted for: with fewer, abilities and
#: slopes rest on a handful of responses per item and the posterior is mostly its prior.
IRT_MIN_MODELS: int = 5
#: How the note on an audit without the item response model ends.
NO_MODEL = "the audit gives the classical evidence and flags only, without P(flawed) or the IRT columns"

# ---------------------------------------------------------------------------------------
# Entry points


def item_audit(data: Dataset | pd.DataFrame, *, rest: str = "domain") -> pd.DataFrame:
    """One row per item: P(flawed) with the evidence behind it, most likely flawed first.

    Parameters
    ----------
    data : Dataset or pandas.DataFrame
        A loaded item-level dataset (:func:`jagged.load`; an out-of-core Parquet dataset
        is audited in DuckDB), or an item table (``model, domain, item, correct`` and
        optionally ``choice, key, n_options``; checked as the loader checks it).
    rest : {"domain", "test"}
        Where the rest score comes from: the other items of the item's domain (default)
        or of the whole test; likewise the item response model's trait (one per domain,
        or one for the whole test).

    Returns
    -------
    pandas.DataFrame
        When the response matrix is in memory (:data:`MODEL_AUDIT_COLUMNS`), ranked by
        ``posterior``, what a reviewer reads first, then the numbers:

        ``flaw_rank``
            1 = most likely flawed (:func:`jagged.stats.flaw.flaw_posterior`);
        ``item``, ``domain``
            the item and its domain;
        ``strong_choice``, ``strong_choice_share``
            the option the upper group (the 27 % of models with the highest rest score)
            chose most (possibly the key) and the share of the upper group that chose it;
        ``key``, ``keys``
            the key most models were scored against, and, where keys differ, every key
            with its count (``"A×26, C×3"``);
        ``flags``
            the names of the review flags set;
        ``likely_key``
            the option the responses make most likely the answer;
        ``posterior``, ``posterior_lower``, ``posterior_upper``
            P(flawed | responses) and its interval over the domain's prevalence
            (:func:`jagged.stats.flaw.flaw_posterior`: a flaw the responses show, or one
            they cannot);
        ``log_bayes_factor``
            ln p(y | miskeyed) − ln p(y | sound);
        ``n_models``, ``n_options``, ``chance``
            models with a result for the item, options (the largest count seen; NaN when
            unknown) and 1 / n_options;
        ``p_correct``
            difficulty: mean ``correct`` over those models;
        ``r_rest``
            corrected item–rest correlation (see Notes);
        ``ul_index``, ``p_upper``, ``p_lower``
            upper–lower discrimination index p_upper − p_lower of the 27% of models with
            the highest and the lowest rest score;
        ``top_wrong``, ``top_wrong_share``, ``top_wrong_r``, ``top_wrong_q``
            the wrong option chosen most, the share of models choosing it, its
            correlation with the rest score and its Benjamini–Hochberg q-value;
        ``share_no_answer``, ``share_invalid``
            models with no extracted answer, and choosing an option the item does not
            have;
        ``slope``, ``intercept``, ``difficulty``, ``loading`` and ``se_*``
            the 2PL item parameters and their standard errors
            (:func:`jagged.stats.irt.fit_2pl`, the trait set by ``rest``); NaN for items
            set aside (every model alike, or fewer than 2 models);
        ``flag_negative_loading``, ``flag_weak_loading``, ``flag_extreme_difficulty``
            :data:`IRT_FLAGS` (``<NA>`` for items set aside); they do not enter
            ``n_flags``, ``flagged`` or ``flags``;
        ``flag_<name>``
            the named flags of :data:`FLAGS` (nullable booleans: ``<NA>`` where the flag
            cannot be computed: no choices, or fewer than :data:`MIN_MODELS` models);
        ``n_flags``, ``flagged``
            how many flags, whether any review flag (:data:`REVIEW_FLAGS`) is set;
        ``note``
            why a statistic is missing or weak for this item (``IRT: ...`` for the
            item response model).

        Without the model (an input aggregated out of core, ``engine="spark"``, fewer than
        :data:`IRT_MIN_MODELS` models or a matrix above :data:`IRT_MAX_CELLS` cells) the
        classical columns only (:data:`jagged.stats.item_evidence.AUDIT_COLUMNS`), by
        domain and item: the evidence without a ranking, and a note saying why.

    Raises
    ------
    JaggedInputError
        The data have no item-level results (per-domain scores only), or bad item rows.

    Notes
    -----
    **Rest score.** For model m and item i in domain d, the rest score is
    R_mi = (S_md − x_mi) / (N_md − 1), the model's mean ``correct`` on the *other* items
    of the domain it has (a proportion, so models lacking items are comparable). Within
    the domain rather than the whole test because the domains are what jaggedness is
    about: a whole-test rest score would mark as "weakly discriminating" the items of a
    domain where the models' order differs from their overall order, i.e. it would call
    the models' jaggedness an item flaw, and setting those items aside would remove the
    jaggedness being measured. On the bundled MMLU-Pro data (domains of 381–1,351
    items) the two agree closely (r_rest correlates 0.97 between them; 9.8% vs 10.2% of
    items negative, 13.3% vs 14.2% weak); ``rest="test"`` is there for benchmarks with
    small domains. The correlation is undefined (NaN, with a note) with fewer than 3
    models with a rest score, when every model scores the item alike, or when their
    rest scores are all equal.

    **Discrimination.** r_rest is the point-biserial correlation
    r = cov(x, R) / (sd(x) sd(R)) over the models that have the item (for 0/1 ``correct``
    it equals ``scipy.stats.pointbiserialr``). The upper–lower index takes the
    k = max(1, ⌊0.27 n + ½⌋) models with the highest (lowest) rest score; models tied at
    the boundary share the remaining places equally, so the index does not depend on
    row order.

    **Distractors** (with ``choice``). For each wrong option o: its share (models that
    chose it and were scored wrong, over n), and r_o = corr(D_o, R) with D_o = 1 for
    those models, r_o = (M_o − M) / s · √(p / (1 − p)) (M_o the mean rest score of the
    choosers, M and s the mean and population sd over all, p their share). The
    one-sided p-value for "able models are drawn to it" (ρ > 0) is that of
    t = r √((n − 2) / (1 − r²)) with n − 2 degrees of freedom (what
    ``scipy.stats.pearsonr(..., alternative="greater")`` gives), and the q-values are
    Benjamini–Hochberg over every (item, wrong option) pair with a p-value:
    q_(j) = min_{k ≥ j} p_(k) m / k. "No answer" and options beyond ``n_options`` are not
    distractors; they are counted in ``share_no_answer`` and ``share_invalid``.

    **Flags** (thresholds from the test programmes post 1 of the seed excerpts cites):
    r_rest < 0; 0 ≤ r_rest < 0.20; p_correct < max(0.20, chance); p_correct > 0.90; a
    wrong option with r_o > 0.05 and q < 0.05; at least half of the upper group on one
    wrong option; more than one key; every model right or every model wrong (at least 2
    models). With fewer than :data:`MIN_MODELS` models the four discrimination flags
    are ``<NA>`` and the note says why: with so few models a correlation of 0.3 is
    indistinguishable from 0. ``flagged`` uses the review flags only: ``too_hard``,
    ``too_easy`` and ``uninformative`` say that an item tells little about *these*
    models, not that it is wrong.

    **Edge cases.** An item with one model gets statistics but no flags (note "one
    model only"); all-equal responses give NaN correlations, the ``uninformative``
    flag and a note; items whose ``n_options`` differs between models (option lists
    revised) are audited on correctness only (note), because their letters do not
    name the same options; partial credit is allowed without keys (correlations and
    the flaw model treat ``correct`` as a number in [0, 1]).

    **P(flawed)**, its interval, the likely answer and the expected number of flawed items
    per domain: :func:`jagged.stats.flaw.flaw_posterior` (Notes there). Abilities per model
    and trait: :attr:`ItemAudit.abilities`; per domain: :func:`domain_flags`.
    """
    return audit_items(data, rest=rest).items


def audit_items(data: Dataset | pd.DataFrame, *, rest: str = "domain", engine: Engine | str | None = None,
                fit: IRTFit | None = None, flaws: FlawPosterior | None = None, model: bool = True) -> ItemAudit:
    """The full item audit (see :func:`item_audit` for the statistics and the Notes).

    Parameters
    ----------
    data : Dataset or pandas.DataFrame
        Item-level dataset or item table.
    rest : {"domain", "test"}
        Rest score within the item's domain, or over the whole test; likewise the 2PL trait.
    engine : Engine or {"duckdb", "spark"}, optional
        Where the sums over rows run (:class:`jagged.stats.engine.Engine`; default: embedded DuckDB).
    fit, flaws : IRTFit, FlawPosterior, optional
        The 2PL fit and the flaw model of the same items with the same ``rest``, computed
        once by the caller (``Analysis``); computed here when not given and ``model``.
    model : bool
        Add the item response and flaw models (default); False gives the classical
        evidence only (unless ``fit`` and ``flaws`` are given).

    Returns
    -------
    ItemAudit
        With :attr:`ItemAudit.fit` and :attr:`ItemAudit.flaws` set when the models ran.

    Raises
    ------
    JaggedInputError
        Bad input, or ``fit`` made with another ``rest``.
    """
    if rest not in ("domain", "test"):
        raise JaggedInputError(f"rest score must be 'domain' or 'test', not {rest!r}")
    if fit is not None and fit.rest != rest:
        raise JaggedInputError(f"the IRT fit given has rest={fit.rest!r}, the audit asks rest={rest!r}")
    if isinstance(data, pd.DataFrame):
        from jagged.readers.items import validate_items

        data = validate_items(data, "<item table>", line_offset=None)
    audit = audit_from_sums(sums_of(data, rest=rest, engine=engine), rest=rest)
    if fit is not None and flaws is not None:
        return with_model(audit, fit, flaws)
    if not model:
        return audit
    table, reason = model_table(data, audit.n_models, engine)
    if table is None:
        return without_model(audit, reason)
    from jagged.stats.flaw import flaw_posterior
    from jagged.stats.information import blas_threads_for, matrix_cells
    from jagged.stats.irt import fit_2pl

    with blas_threads_for(matrix_cells(table)):  # small matrices: one BLAS thread (see there)
        fit = fit_2pl(table, rest=rest) if fit is None else fit
        flaws = flaw_posterior(table, fit) if flaws is None else flaws
    return with_model(audit, fit, flaws)


def model_table(data: Dataset | pd.DataFrame, n_models: int,
                engine: Engine | str | None) -> tuple[pd.DataFrame | None, str]:
    """The item table the item response and flaw models run on, or None and the one-line reason why not.

    They need the model × item matrix in memory: an input aggregated out of core,
    ``engine="spark"``, fewer than :data:`IRT_MIN_MODELS` models or a matrix above
    :data:`IRT_MAX_CELLS` cells has none.
    """
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
    """The audit with the flaw model's and the 2PL's columns, ranked by P(flawed) (a new ItemAudit).

    Parameters
    ----------
    audit : ItemAudit
        A classical audit (:func:`audit_items` with ``model=False``).
    fit : IRTFit
        The 2PL fit of the same items.
    flaws : FlawPosterior
        Their flaw model.

    Returns
    -------
    ItemAudit
        ``items`` with :data:`MODEL_AUDIT_COLUMNS`, sorted by ``flaw_rank`` (items the model
        lacks last, by domain and item); ``fit`` and ``flaws`` set.
    """
    from dataclasses import replace

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
    """The sufficient statistics of a Dataset or a validated item table, computed by the engine (DuckDB by default).

    An item table in memory is registered with the engine; a Dataset read out of core
    (its ``item_path``) is read again by it.
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
    """Per domain: items, flagged items and the share each flag catches.

    Returns
    -------
    pandas.DataFrame
        One row per domain: ``domain``, ``n_items``, ``n_flagged``, ``share_flagged``
        (review flags), ``n_rescored`` (items with a what-if alternative key) and
        ``share_<flag>`` for every flag of :data:`FLAGS` (share of the domain's items; NA
        counts as not flagged), sorted by ``share_flagged`` (highest first); with the flaw
        model also ``share_<flag>`` for :data:`IRT_FLAGS`, ``visible`` (miskeyed items the
        responses show) with ``visible_lower``, ``visible_upper``, and ``expected_flawed``
        (every flaw, shown or not) with ``expected_flawed_lower``, ``expected_flawed_upper``
        (:attr:`jagged.stats.flaw.FlawPosterior.domains`, intervals at its ``level``; per
        domain also with ``rest="test"``).
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
    """Per flag: how many items it catches and their share of all items (and of the items it could be computed for).

    Returns
    -------
    pandas.DataFrame
        ``flag``, ``meaning`` (:data:`FLAGS`, then :data:`IRT_FLAGS` when the audit has
        them), ``review`` (whether it makes an item ``flagged``; never for the IRT flags),
        ``n_items``, ``share`` (of all items), ``n_computed``, ``share_computed``; last a
        row ``flagged`` (any review flag).
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
