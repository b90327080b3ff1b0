"""Item audit: which questions to look at, and how much of the jaggedness they make.

A flawed item (a wrong key, two defensible answers, no answer at all) adds errors to its
domain that say nothing about the model, so part of a domain's error rate, and of
cv_error, belongs to the benchmark. This module gives every item the classical
psychometric evidence (difficulty, discrimination, distractor behaviour), the named flags
that test programmes use to send items to review, the classical ``suspicion`` score, and,
where the response matrix fits in memory, the 2PL item response model (parameters, standard
errors, loading and difficulty flags, abilities) and P(flawed | responses), which ranks the
items for a reviewer; and a sensitivity analysis of cv_error to the flagged items.

* :func:`item_audit` — one row per item (the table ``jagged items`` prints);
* :func:`audit_items` — the same as an :class:`ItemAudit` with the per-option table, the
  fitted response model, the 2PL fit and flaw posterior (:attr:`ItemAudit.abilities`) and
  the dataset-level notes; :func:`with_irt` adds a fit and posterior to a classical audit;
* :func:`jagged.stats.item_sensitivity.flag_sensitivity` — per model, cv_error with all
  items, with the flagged items set aside, and with likely key errors re-scored (a what-if);
* :func:`domain_flags` — per domain, how many items each flag catches.

This module owns the entry points and which input is audited (a Dataset's items, an item
table, the bundled responses, or a Parquet file out of core in DuckDB); the computation from
the sums is :mod:`jagged.stats.item_evidence`, the suspicion score :mod:`jagged.stats.item_keys`.

Flags are reasons to look at an item, never to drop it. The statistics are pure
functions of the item table; the sufficient statistics behind them are sums over rows
written once as Ibis expressions (:mod:`jagged.stats.item_expr`) that DuckDB runs embedded
or Spark on a cluster, so a 50-million-row Parquet file, or a partitioned folder of them,
gets the same audit as a DataFrame.
"""


from __future__ import annotations

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.readers.dataset import Dataset
from jagged.stats.flaw import FlawPosterior
from jagged.stats.irt import IRTFit
from jagged.stats.item_evidence import (
    AUDIT_COLUMNS,
    FLAGS,
    IRT_AUDIT_COLUMNS,
    IRT_COLUMNS,
    IRT_FLAGS,
    RESCORE_BAYES_FACTOR,
    REVIEW_FLAGS,
    ItemAudit,
    audit_from_sums,
)
from jagged.stats.item_sums import ItemSums, item_sums, lake_item_sums

#: Largest model × item matrix (cells, missing ones included) the item response model builds in memory;
#: above it the audit is the classical one with a note (the EM holds a few float arrays of this size).
IRT_MAX_CELLS: int = 50_000_000
#: Fewest models the item response model and the flaw posterior are fitted for: with fewer, abilities and
#: slopes rest on a handful of responses per item and the posterior is mostly its prior.
IRT_MIN_MODELS: int = 5
#: How the note on an audit without the item response model ends.
CLASSICAL_ONLY = "the audit is the classical one, without the IRT columns, ranked by suspicion"

# ---------------------------------------------------------------------------------------
# Entry points


def item_audit(data: Dataset | pd.DataFrame, *, rest: str = "domain") -> pd.DataFrame:
    """One row per item: difficulty, discrimination, distractors, flags, suspicion and the item response model.

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
        Ranked by ``posterior`` (most likely flawed first) when the response matrix is in
        memory, else by ``suspicion``, with the columns

        ``flaw_rank``
            1 = highest ``posterior`` (:func:`jagged.stats.flaw.flaw_posterior`); in-memory
            inputs only;
        ``suspicion_rank``
            1 = most suspicious by the classical ``suspicion`` (ties share the smaller rank);
        ``item``, ``domain``
            the item and its domain;
        ``n_models``
            models with a result for the item;
        ``n_options``, ``chance``
            options (the largest count seen; NaN when unknown) and 1 / n_options;
        ``p_correct``
            difficulty: mean ``correct`` over those models;
        ``r_rest``
            corrected item–rest correlation: Pearson correlation over models of the
            item's ``correct`` with the model's rest score (see Notes);
        ``ul_index``, ``p_upper``, ``p_lower``
            upper–lower discrimination index p_upper − p_lower of the 27% of models with
            the highest and the lowest rest score;
        ``key``, ``keys``
            the key most models were scored against, and, where keys differ, every key
            with its count (``"A×26, C×3"``);
        ``strong_choice``, ``strong_choice_share``
            the option the upper group chose most (possibly the key) and the share of the
            upper group that chose it;
        ``top_wrong``, ``top_wrong_share``, ``top_wrong_r``, ``top_wrong_q``
            the wrong option chosen most, the share of models choosing it, its
            correlation with the rest score and its Benjamini–Hochberg q-value;
        ``share_no_answer``, ``share_invalid``
            models with no extracted answer, and choosing an option the item does not
            have;
        ``likely_key``
            the option the response model finds most likely to be the true answer;
        ``suspicion``
            log Bayes factor "the scored key is wrong or the item is broken" against "the
            item is sound" (see Notes); > 0 means the responses fit a flawed item better;
        ``posterior``
            P(flawed | responses) from the mixture of a sound 2PL item and a flawed one (wrong
            key or responses unrelated to ability) with a per-domain prevalence
            (:func:`jagged.stats.flaw.flaw_posterior`); in-memory inputs only, as all below
            up to ``flag_extreme_difficulty``;
        ``slope``, ``intercept``, ``difficulty``, ``loading`` and ``se_*``
            the 2PL item parameters and their standard errors
            (:func:`jagged.stats.irt.fit_2pl`, the trait set by ``rest``): P(right) =
            σ(slope θ + intercept), difficulty = −intercept / slope, loading the
            standardised (probit) loading; NaN for items set aside (every model alike, or
            fewer than 2 models: the note says so);
        ``flag_negative_loading``, ``flag_weak_loading``, ``flag_extreme_difficulty``
            :data:`IRT_FLAGS`: loading < 0, 0 ≤ loading < 0.3, |difficulty| > 5 (PISA);
            ``<NA>`` for items set aside. They sit beside the classical flags and do not
            enter ``n_flags``, ``flagged`` or ``flags``;
        ``flag_<name>``
            the named flags of :data:`FLAGS` (nullable booleans: ``<NA>`` where the flag
            cannot be computed: no choices, or fewer than :data:`MIN_MODELS` models);
        ``n_flags``, ``flagged``, ``flags``
            how many flags, whether any review flag (:data:`REVIEW_FLAGS`) is set, and
            their names;
        ``note``
            why a statistic is missing or weak for this item (``IRT: ...`` for the
            item response model).

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

    **Suspicion.** A response model with abilities θ_m = ln((S_md + ½)/(N_md − S_md + ½))
    (the smoothed logit of the model's domain score) says a sound item with difficulty
    b is answered correctly with probability σ(a (θ_m − b)). The difficulty is
    integrated out over a grid with prior weights fitted to all items by EM (the
    nonparametric maximum-likelihood prior), and a is the value in :data:`jagged.stats.item_model.SLOPES` with
    the highest marginal likelihood. With choices (every row of the item keyed), the
    hypotheses are H_j: option j is the true answer, whose choosers follow the sound
    item, while models that did not know spread over the other categories (options, no
    answer, invalid) as a Dirichlet(1)-multinomial; and H_flat: choices unrelated to
    ability (one Dirichlet-multinomial). With k the key most models were scored against,

    suspicion = ln[½ L(H_flat) + ½ mean_{j≠k} L(H_j)] − ln L(H_k),

    over all n_options − 1 other options (those nobody chose included). Without choices,
    the alternatives are a reversed item (correctness falls with ability, as when the
    scored key is an option only guessers pick) and correctness unrelated to ability
    (Beta(1, 1)-binomial), with weights ½. The score is defined for every item, also
    where correlations are not: when every model answers alike it compares how likely
    "all chose the key" or "all chose the same other option" is for models of these
    abilities.

    *Why this score* (``benchmarks/bench_item_audit.py --part evidence`` reruns the
    comparison; recall at the planted count / AUC over 3 seeds). On 2PL simulations of 30
    models × 3,000 items with 3% planted miskeyed items (a distractor is the true answer):
    with models of mixed ability this score reaches 0.77–0.85 / 0.991–0.997, the upper
    group's margin of its top wrong option over the key 0.78–0.84 / 0.988–0.996, the
    number of flags 0.60–0.76 / 0.98–0.99, −p_correct 0.63–0.69 / 0.96–0.98, the largest
    distractor correlation 0.40–0.55 / 0.88–0.95, −ul_index 0.16–0.38 / 0.90–0.96 and
    −r_rest 0.24–0.51 / 0.55–0.73 (a miskeyed item that nobody answers "correctly" has no
    correlation at all); with trap distractors that many models fall for, 0.62–0.71 /
    0.975–0.988 against 0.58–0.63 / 0.971–0.976 for the margin; with 30 strong models
    that answer most items alike, 0.98–1.00 / 1.000 while −r_rest falls to 0.04–0.11 /
    0.21–0.31 (difficulty alone and the margin also reach 1.00 there, because in the
    simulation only miskeyed items are that hard). Real data separate the candidates: on
    the bundled MMLU-Pro responses the 31 items whose key letter was revised between
    file versions rank at a median of 389 of 12,032 with this score (19 in the top 500,
    AUC 0.93), against 627 (0.88) for the margin, 1,293 (0.76) for the number of flags
    (key_inconsistent left out, which defines these items), 1,849 (0.77) for difficulty,
    3,735 (0.62) for −r_rest and 4,031 (0.56) for the largest distractor correlation.
    Without choices the score uses correctness only and is weaker (simulated AUC
    0.91–0.95 with mixed abilities, 0.99 with strong models; on MMLU-Pro 0.60, where
    difficulty gives 0.77): choices carry most of the evidence of a wrong key.

    **Item response model.** What needs the model × item matrix in memory (the 2PL fit
    and the flaw posterior) runs on in-memory inputs of at least :data:`IRT_MIN_MODELS`
    models whose matrix has at most :data:`IRT_MAX_CELLS` cells; fewer models, an input
    aggregated out of core (a large Parquet file, a partitioned folder),
    ``engine="spark"`` or a larger matrix gets the classical audit
    without the IRT columns, ranked by ``suspicion``, and a note in
    :attr:`ItemAudit.notes` saying why. Abilities per model and trait:
    :attr:`ItemAudit.abilities`; expected flawed items per domain: :func:`domain_flags`.

    **Edge cases.** An item with one model gets statistics but no flags (note "one
    model only"); all-equal responses give NaN correlations, the ``uninformative``
    flag and a note; items whose ``n_options`` differs between models (option lists
    revised) are audited on correctness only (note), because their letters do not
    name the same options; partial credit is allowed without keys (correlations and
    the score treat ``correct`` as a number in [0, 1]).
    """
    return audit_items(data, rest=rest).items


def audit_items(data: Dataset | pd.DataFrame, *, rest: str = "domain", engine: str | None = None,
                spark_master: str | None = None, fit: IRTFit | None = None, flaws: FlawPosterior | None = None,
                irt: bool = True) -> ItemAudit:
    """The full item audit (see :func:`item_audit` for the statistics and the Notes).

    Parameters
    ----------
    data : Dataset or pandas.DataFrame
        Item-level dataset or item table.
    rest : {"domain", "test"}
        Rest score within the item's domain, or over the whole test; likewise the 2PL trait.
    engine : {"duckdb", "spark"}, optional
        Where the sums over rows run (default: embedded DuckDB).
    spark_master : str, optional
        Spark master (see :func:`jagged.stats.engine.spark_session`).
    fit : IRTFit, optional
        A 2PL fit of the same items with the same ``rest`` (:func:`jagged.stats.irt.fit_2pl`),
        computed once by the caller; fitted here when not given.
    flaws : FlawPosterior, optional
        The flaw posterior of the same items (:func:`jagged.stats.flaw.flaw_posterior`);
        computed here (from ``fit``) when not given.
    irt : bool
        Add the item response model (default); False gives the classical audit only.

    Returns
    -------
    ItemAudit
        With :attr:`ItemAudit.fit` and :attr:`ItemAudit.flaws` set when the item
        response model ran (see the Notes of :func:`item_audit`).

    Raises
    ------
    JaggedInputError
        Bad input, or ``fit`` made with another ``rest``.
    """
    if rest not in ("domain", "test"):
        raise JaggedInputError(f"rest score must be 'domain' or 'test', not {rest!r}")
    if fit is not None and fit.rest != rest:
        raise JaggedInputError(f"the IRT fit given has rest={fit.rest!r}, the audit asks rest={rest!r}")
    table = None
    if isinstance(data, pd.DataFrame):
        from jagged.readers.items import validate_items

        table = validate_items(data, "<item table>", line_offset=None)
    audit = audit_from_sums(sums_of(data if table is None else table, rest=rest, engine=engine,
                                    spark_master=spark_master, validated=table is not None), rest=rest)
    if not irt:
        return audit
    if fit is None or flaws is None:
        items, note = _irt_table(data if table is None else table, audit, engine)
        if items is None:
            audit.notes.append(note)
            return audit
        from jagged.stats.flaw import flaw_posterior
        from jagged.stats.information import blas_threads_for, matrix_cells
        from jagged.stats.irt import fit_2pl

        with blas_threads_for(matrix_cells(items)):  # small matrices: one BLAS thread (see there)
            fit = fit_2pl(items, rest=rest) if fit is None else fit
            flaws = flaw_posterior(items, fit) if flaws is None else flaws
    return with_irt(audit, fit, flaws)


def _irt_table(data: Dataset | pd.DataFrame, audit: ItemAudit, engine: str | None) -> tuple[pd.DataFrame | None, str]:
    """The item table for the item response model, or None and the one-line reason why not."""
    from jagged.stats.engine import in_memory_items

    what = "the item response model (IRT columns and flaw posterior)"
    try:
        items = in_memory_items(data, what, engine=engine)
    except JaggedInputError as exc:
        return None, f"{exc}; {CLASSICAL_ONLY}"
    if audit.n_models < IRT_MIN_MODELS:
        return None, (f"{what} needs at least {IRT_MIN_MODELS} models ({audit.n_models} here); {CLASSICAL_ONLY}")
    cells = audit.n_models * len(audit.items)
    if cells > IRT_MAX_CELLS:
        return None, (f"{what} needs a {audit.n_models:,} × {len(audit.items):,} response matrix ({cells:,} cells), "
                      f"above the in-memory budget of {IRT_MAX_CELLS:,} cells (select models or domains to fit it); "
                      f"{CLASSICAL_ONLY}")
    return items, ""


def with_irt(audit: ItemAudit, fit: IRTFit, flaws: FlawPosterior) -> ItemAudit:
    """The audit with the item response model's columns, ranked by the flaw posterior (a new ItemAudit).

    Parameters
    ----------
    audit : ItemAudit
        A classical audit (:func:`audit_items` with ``irt=False``).
    fit : IRTFit
        The 2PL fit of the same items.
    flaws : FlawPosterior
        Their flaw posterior.

    Returns
    -------
    ItemAudit
        ``items`` with ``flaw_rank`` first and :data:`IRT_COLUMNS` after ``suspicion``,
        sorted by ``flaw_rank`` (ties: ``suspicion_rank``, domain, item); ``fit`` and
        ``flaws`` set. Items the fit or the posterior lack get NaN / ``<NA>``.
    """
    from dataclasses import replace

    items = audit.items
    ids = pd.Index(items["item"].astype(str))
    per_item = fit.items.assign(item=fit.items["item"].astype(str)).set_index("item").reindex(ids)
    post = flaws.items.assign(item=flaws.items["item"].astype(str)).set_index("item").reindex(ids)
    out = {"posterior": post["posterior"].to_numpy(dtype=float)}
    out.update({name: per_item[name].to_numpy(dtype=float) for name in IRT_COLUMNS[1:] if not name.startswith("flag_")})
    aside = ~np.isfinite(out["slope"])
    for name in IRT_FLAGS:
        value = per_item[f"flag_{name}"].fillna(False).to_numpy(dtype=bool)
        out[f"flag_{name}"] = pd.arrays.BooleanArray(value & ~aside, aside.copy())
    fit_note = per_item["note"].fillna("").astype(str).to_numpy(dtype=object)
    fit_note = np.where(fit_note != "", "IRT: " + fit_note, np.where(per_item["slope"].isna() & per_item[
        "group"].isna(), "IRT: not in the fit", ""))
    note = items["note"].astype(object).fillna("").to_numpy(dtype=object)
    note = np.where((note != "") & (fit_note != ""), note + "; " + fit_note, note + fit_note)
    flaw_rank = post["flaw_rank"].to_numpy(dtype=float)
    ranked = pd.DataFrame({"flaw_rank": np.nan_to_num(flaw_rank, nan=np.inf),
                           "s": items["suspicion_rank"].to_numpy(), "d": items["domain"].astype(str).to_numpy(),
                           "i": ids.to_numpy()}).sort_values(["flaw_rank", "s", "d", "i"], kind="mergesort").index
    index = items.index
    whole = np.isfinite(flaw_rank).all()
    columns: dict[str, object] = {"flaw_rank": pd.Series(flaw_rank.astype(np.int64), index=index) if whole
                                  else pd.Series(flaw_rank, index=index).astype("Int64")}
    for name in AUDIT_COLUMNS:
        columns[name] = items[name] if name != "note" else pd.Series(note, index=index, dtype=object)
        if name == "suspicion":
            columns.update({k: pd.Series(v, index=index) for k, v in out.items()})
    table = pd.DataFrame(columns, copy=False)[list(IRT_AUDIT_COLUMNS)].iloc[ranked].reset_index(drop=True)
    return replace(audit, items=table, fit=fit, flaws=flaws, notes=list(audit.notes))


def sums_of(data: Dataset | pd.DataFrame, *, rest: str = "domain", engine: str | None = None,
            spark_master: str | None = None, validated: bool = False) -> ItemSums:
    """The sufficient statistics of a dataset or item table, computed by the engine (DuckDB by default).

    An item table in memory is registered with the engine (checked first unless
    ``validated``); a Parquet file or partitioned folder aggregated out of core is read
    again by it.
    """
    from jagged.readers.items import validate_items
    from jagged.readers.items_parquet import lake_path

    if isinstance(data, pd.DataFrame):
        table = data if validated else validate_items(data, "<item table>", line_offset=None)
        return item_sums(table, rest=rest, engine=engine, spark_master=spark_master)
    if not isinstance(data, Dataset):
        raise TypeError(f"expected a Dataset or a DataFrame, not {type(data).__name__}")
    if data.items is not None:
        return item_sums(data.items, rest=rest, engine=engine, spark_master=spark_master)
    path = lake_path(data)
    if path is not None:
        return lake_item_sums(path, rest=rest, engine=engine, spark_master=spark_master)
    raise JaggedInputError(f"{data.source}: {data.format} scores have no item-level results; the item audit needs "
                           "a table with model, domain, item, correct (and optionally choice, key)")


def audit_source(dataset: Dataset, *, bundled: bool = False) -> Dataset | None:
    """What the item audit of a report reads: the dataset's own item-level results, or None.

    Parameters
    ----------
    dataset : Dataset
        The report's dataset.
    bundled : bool
        Whether it is the bundled per-category data; then the bundled item-level responses
        behind it are audited (same scores), so the report's other numbers stay those of
        the per-category file.
    """
    from jagged.readers.items import load_bundled_items
    from jagged.readers.items_parquet import lake_path

    if dataset.items is not None or lake_path(dataset) is not None:
        return dataset
    if bundled:
        return load_bundled_items()
    return None


def has_item_results(dataset: Dataset, *, bundled: bool = False) -> bool:
    """Whether :func:`audit_source` finds item-level results (without loading anything)."""
    from jagged.readers.items_parquet import lake_path

    return bool(bundled or dataset.items is not None or lake_path(dataset) is not None)



def rescoring_options(audit: ItemAudit) -> dict[str, str]:
    """Likely key errors with a clear alternative: item → the option strong models agree on.

    An item qualifies when at least half of the upper group chose one wrong option
    (``flag_strong_agree_wrong``), that option is the one the response model finds most
    likely to be the answer (``likely_key``), and the evidence is decisive: ``suspicion``
    above ln(:data:`RESCORE_BAYES_FACTOR`).
    """
    items = audit.items
    chosen = (items["flag_strong_agree_wrong"].fillna(False).to_numpy(dtype=bool)
              & (items["strong_choice"].to_numpy(dtype=object) != items["key"].to_numpy(dtype=object))
              & (items["strong_choice"].to_numpy(dtype=object) == items["likely_key"].to_numpy(dtype=object))
              & (items["suspicion"].to_numpy(dtype=float) > np.log(RESCORE_BAYES_FACTOR)))
    sub = items.loc[chosen]
    return dict(zip(sub["item"].astype(str), sub["strong_choice"].astype(str)))


def domain_flags(audit: ItemAudit) -> pd.DataFrame:
    """Per domain: items, flagged items and the share each flag catches.

    Returns
    -------
    pandas.DataFrame
        One row per domain (sorted by ``share_flagged``, highest first): ``domain``,
        ``n_items``, ``n_flagged``, ``share_flagged`` (review flags), ``n_rescored`` (items
        with a what-if alternative key) and ``share_<flag>`` for every flag of
        :data:`FLAGS` (share of the domain's items; NA counts as not flagged); with the
        item response model also ``share_<flag>`` for :data:`IRT_FLAGS` and
        ``expected_flawed``, ``expected_flawed_lower``, ``expected_flawed_upper``: the
        expected number of flawed items (sum of the posteriors) and its 95 % interval
        (:attr:`jagged.stats.flaw.FlawPosterior.domains`; with ``rest="test"`` too, the
        prevalence is per domain).
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
        for name, source in (("expected_flawed", "expected_flawed"), ("expected_flawed_lower", "lower"),
                             ("expected_flawed_upper", "upper")):
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
