"""Bootstrap intervals of the per-model statistics: item bootstrap, binomial bootstrap, replicates.

* :func:`bootstrap_intervals` — percentile intervals for ``cv_error``, ``macro_score``,
  ``dep_score`` and ``wedge``: a paired stratified bootstrap over items when the item
  table is in memory, a Poisson bootstrap over items computed in the engine
  (:mod:`jagged.stats.poisson_bootstrap`) when the item-level results are out of core (a
  large Parquet file or a partitioned folder) or ``engine="spark"``, else a parametric
  (binomial) bootstrap from ``n_items``, else none (with the reason); :func:`interval_route`
  states the rule, ``interval_method`` records which was used, and :func:`add_intervals`
  puts them into the metrics table.
* :func:`bootstrap_replicates` — the replicates themselves, with further statistics
  (:data:`ReplicateStatistic`) computed on the same resampling.

All functions are pure: DataFrames in, DataFrames out; random draws come from
``numpy.random.default_rng(seed)``, so a seed gives the same result every time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.stats.replicates import Replicates, ReplicateStatistic, replicate_statistics
from jagged.stats.uncertainty import place_after

INTERVAL_STATISTICS: tuple[str, ...] = ("cv_error", "macro_score", "dep_score", "wedge")
METHOD_ITEMS = "stratified item bootstrap, paired across models"
METHOD_BINOMIAL = "parametric binomial bootstrap from n_items"
#: The routes of :func:`interval_route`.
ROUTES: tuple[str, ...] = ("paired", "poisson", "binomial")
REASON_NO_N_ITEMS = "no interval: the scores carry no n_items, so their sampling noise is unknown"
#: Upper bound on the entries of one resampling-count block (replicates × items of a domain).
_BLOCK_ENTRIES = 4_000_000

# --------------------------------------------------------------------------- bootstrap

def _collect(chunks: Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]], present: np.ndarray,
             weights: np.ndarray, statistics: Mapping[str, ReplicateStatistic] | None, models: np.ndarray,
             domains: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """:func:`replicate_statistics` and the extra ``statistics`` over every chunk of replicate sums."""
    statistics = dict(statistics or {})
    parts, extra = [], {name: [] for name in statistics}
    for num, den, sq in chunks:
        parts.append(replicate_statistics(num, den, sq, present, weights))
        for name, func in statistics.items():
            extra[name].append(func(num, den, present, models, domains))
    cv, macro, dep, wedge = (np.concatenate([p[i] for p in parts]) for i in range(4))
    return cv, macro, dep, wedge, {name: np.concatenate(v) for name, v in extra.items()}


def _check_settings(n_boot: int, ci: float) -> None:
    if int(n_boot) != n_boot or n_boot < 1:
        raise JaggedInputError(f"bootstrap replicates must be a positive whole number, not {n_boot!r}")
    if not 0 < ci < 1:
        raise JaggedInputError(f"interval level must be between 0 and 1 (e.g. 0.95), not {ci!r}")


@dataclass
class ItemMatrix:
    """Item-level results as an items × models matrix, items grouped by domain.

    Attributes
    ----------
    correct : numpy.ndarray
        N × M float ``correct`` (0 where the model lacks the item).
    present : numpy.ndarray
        N × M bool, True where the model has a result for the item.
    bounds : numpy.ndarray
        D + 1 row offsets: domain d owns rows ``bounds[d]:bounds[d + 1]``.
    models : numpy.ndarray
        Model names, length M.
    domains : numpy.ndarray
        Domain names, length D.
    """

    correct: np.ndarray
    present: np.ndarray
    bounds: np.ndarray
    models: np.ndarray
    domains: np.ndarray

    @property
    def partial(self) -> bool:
        """True when some ``correct`` lies strictly between 0 and 1."""
        return bool(((self.correct > 0) & (self.correct < 1)).any())


def item_matrix(items: pd.DataFrame, models: np.ndarray | None = None,
                domains: np.ndarray | None = None) -> ItemMatrix:
    """Arrange an item-level table as an :class:`ItemMatrix`.

    Parameters
    ----------
    items : pandas.DataFrame
        Validated item table (``model``, ``domain``, ``item``, ``correct``).
    models, domains : numpy.ndarray, optional
        Column and domain order (default: sorted names). Domains without items get no
        rows.

    Returns
    -------
    ItemMatrix
    """
    models = np.asarray(sorted(pd.unique(items["model"])) if models is None else models, dtype=object)
    domains = np.asarray(sorted(pd.unique(items["domain"])) if domains is None else domains, dtype=object)
    item_codes, item_names = pd.factorize(items["item"])
    model_codes = pd.Index(models).get_indexer(items["model"])
    domain_of_row = pd.Index(domains).get_indexer(items["domain"])
    item_domain = np.empty(len(item_names), dtype=np.int64)
    item_domain[item_codes] = domain_of_row
    order = np.argsort(item_domain, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    rows = position[item_codes]
    x = np.zeros((len(item_names), len(models)), dtype=float)
    a = np.zeros((len(item_names), len(models)), dtype=bool)
    x[rows, model_codes] = items["correct"].to_numpy(dtype=float)
    a[rows, model_codes] = True
    bounds = np.concatenate([[0], np.cumsum(np.bincount(item_domain, minlength=len(domains)))])
    return ItemMatrix(correct=x, present=a, bounds=bounds, models=models, domains=domains)


def _chunks(n_boot: int, size: int) -> Iterator[int]:
    done = 0
    while done < n_boot:
        step = min(size, n_boot - done)
        yield step
        done += step


def resampled_sums(matrix: ItemMatrix, n_boot: int, rng: np.random.Generator
                   ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """Stratified, paired item resampling: per chunk of replicates, the domain sums.

    Parameters
    ----------
    matrix : ItemMatrix
        The item-level results.
    n_boot : int
        Replicates in total.
    rng : numpy.random.Generator
        Source of the draws.

    Yields
    ------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray or None)
        b × M × D arrays Σ c·x, Σ c·present and (partial credit only) Σ c·x² for the next
        b replicates, where c are the resampling counts of the domain's items.

    Notes
    -----
    For each domain and replicate, n_d items are drawn with replacement from the domain's
    n_d items, and c counts how often each was drawn (a multinomial(n_d, 1/n_d) vector).
    The same c serves every model (paired). The sums of all models are one matrix
    product ``C @ X_d`` (b × n_d times n_d × M) per domain; there is no loop over
    replicates or models.
    """
    x, bounds = matrix.correct, matrix.bounds
    complete = bool(matrix.present.all())
    af = matrix.present.astype(float)
    x2 = x * x if matrix.partial else None
    widest = int(np.diff(bounds).max()) if len(bounds) > 1 else 1
    size = int(max(1, min(n_boot, _BLOCK_ENTRIES // max(widest, 1))))
    n_models, n_domains = x.shape[1], len(bounds) - 1
    for b in _chunks(n_boot, size):
        num = np.zeros((b, n_models, n_domains))
        den = np.zeros((b, n_models, n_domains))
        sq = np.zeros((b, n_models, n_domains)) if x2 is not None else None
        for d in range(n_domains):
            lo, hi = int(bounds[d]), int(bounds[d + 1])
            n_d = hi - lo
            if n_d == 0:
                continue
            draws = rng.integers(0, n_d, size=(b, n_d)) + np.arange(b)[:, None] * n_d
            counts = np.bincount(draws.ravel(), minlength=b * n_d).reshape(b, n_d).astype(float)
            num[:, :, d] = counts @ x[lo:hi]
            den[:, :, d] = n_d if complete else counts @ af[lo:hi]
            if sq is not None:
                sq[:, :, d] = counts @ x2[lo:hi]
        yield num, den, sq


def _binomial_replicate_sums(s: np.ndarray, n: np.ndarray, n_boot: int, rng: np.random.Generator
                             ) -> Iterator[tuple[np.ndarray, np.ndarray, None]]:
    """Per chunk: (k, n, None) with k ~ Binomial(n_d, ŝ_d) for every model and domain."""
    present = ~np.isnan(s)
    p = np.where(present, s, 0.0)
    nn = np.where(present, n, 0).astype(np.int64)
    size = int(max(1, min(n_boot, _BLOCK_ENTRIES // max(s.size, 1))))
    for b in _chunks(n_boot, size):
        k = rng.binomial(nn[None], p[None], size=(b,) + s.shape).astype(float)
        yield k, np.broadcast_to(nn.astype(float), (b,) + s.shape), None


def _weight_array(weights: pd.DataFrame | None, domains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if weights is None or len(weights) == 0:
        return np.zeros((0, len(domains))), np.asarray([], dtype=object)
    w = np.nan_to_num(weights.reindex(columns=list(domains)).to_numpy(dtype=float))
    return w, np.asarray(weights.index, dtype=object)


def replicates_from_matrix(matrix: ItemMatrix, *, weights: pd.DataFrame | None = None, n_boot: int = 2000,
                           seed: int = 0, statistics: Mapping[str, ReplicateStatistic] | None = None
                           ) -> "Replicates":
    """Paired stratified item bootstrap on an :class:`ItemMatrix`.

    Parameters
    ----------
    matrix : ItemMatrix
        Item-level results.
    weights : pandas.DataFrame, optional
        Profiles × domains weight matrix (columns matched to ``matrix.domains`` by name).
    n_boot : int
        Replicates B.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    Replicates
    """
    _check_settings(n_boot, 0.5)
    rng = np.random.default_rng(seed)
    present = np.zeros((len(matrix.models), len(matrix.domains)), dtype=bool)
    for d in range(len(matrix.domains)):
        present[:, d] = matrix.present[matrix.bounds[d]:matrix.bounds[d + 1]].any(axis=0)
    w, profiles = _weight_array(weights, matrix.domains)
    cv, macro, dep, wedge, extra = _collect(resampled_sums(matrix, n_boot, rng), present, w, statistics,
                                            matrix.models, matrix.domains)
    return Replicates(models=matrix.models, profiles=profiles, cv_error=cv, macro_score=macro, dep_score=dep,
                      wedge=wedge, method=METHOD_ITEMS, extra=extra)


def interval_route(items: pd.DataFrame | None, source: str | Path | None = None, engine: str | None = None) -> str:
    """Which bootstrap the intervals use: ``"paired"``, ``"poisson"`` or ``"binomial"``.

    * ``"paired"`` (:func:`replicates_from_matrix`): the item table is in memory and the
      engine is not Spark — the stratified multinomial bootstrap over items on the
      items × models matrix;
    * ``"poisson"`` (:func:`jagged.stats.poisson_bootstrap.poisson_replicates`): item-level
      results that are not in memory (``source``, a Parquet file or partitioned folder
      aggregated out of core), or any item-level results with ``engine="spark"`` — the
      Poisson(1) weights per item and replicate are computed where the rows lie;
    * ``"binomial"``: no item-level results (per-domain scores with ``n_items``).
    """
    has_items = items is not None and len(items) > 0
    if has_items and engine != "spark":
        return "paired"
    if has_items or source is not None:
        return "poisson"
    return "binomial"


def bootstrap_replicates(scores: pd.DataFrame, items: pd.DataFrame | None = None, *,
                         weights: pd.DataFrame | None = None, n_boot: int = 2000, seed: int = 0,
                         statistics: Mapping[str, ReplicateStatistic] | None = None,
                         source: str | Path | None = None, engine: str | None = None,
                         spark_master: str | None = None) -> Replicates:
    """Bootstrap replicates of cv_error (noise-corrected), macro_score, dep_score and wedge.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table.
    items : pandas.DataFrame, optional
        Item-level table behind ``scores``; when given, the paired stratified item
        bootstrap is used (:func:`replicates_from_matrix`), else the parametric binomial
        bootstrap from ``n_items`` (the rule, with ``source`` and ``engine``:
        :func:`interval_route`).
    weights : pandas.DataFrame, optional
        Profiles × domains weight matrix (:func:`jagged.stats.weights.resolve_profiles`); it
        must have a column for every score domain.
    n_boot : int
        Number of replicates B.
    seed : int
        Seed of ``numpy.random.default_rng``.
    statistics : mapping of str to callable, optional
        Further per-model statistics to compute on the same replicates
        (:data:`ReplicateStatistic`), e.g. the relative jaggedness of
        :func:`jagged.stats.structure.replicate_statistic`; they land in ``extra``.
    source : str or pathlib.Path, optional
        The Parquet file or partitioned folder behind item-level ``scores`` aggregated out
        of core (``Dataset.item_path``): the Poisson bootstrap runs
        on it in the engine.
    engine : {"duckdb", "spark"}, optional
        Where the Poisson bootstrap runs; ``"spark"`` sends item tables in memory there too.
    spark_master : str, optional
        See :func:`jagged.stats.engine.spark_session`.

    Returns
    -------
    Replicates
        Models without ``n_items`` (parametric case) get all-NaN replicates; ``method``
        says which bootstrap made them.

    Raises
    ------
    JaggedInputError
        ``n_boot`` < 1; a score domain without a weight column.
    """
    _check_settings(n_boot, 0.5)
    wide = scores.pivot(index="model", columns="domain", values="score").sort_index()
    models = np.asarray(wide.index, dtype=object)
    score_domains = sorted(wide.columns)
    if weights is not None and len(weights):
        lacking = [d for d in score_domains if d not in set(weights.columns)]
        if lacking:
            raise JaggedInputError(f"weight matrix has no column for score domain(s) {', '.join(lacking[:5])}")
    extra = [] if weights is None else sorted(d for d in weights.columns if d not in set(score_domains))
    domains = np.asarray(score_domains + extra, dtype=object)  # extra: weighted but never scored
    route = interval_route(items, source, engine)
    if route == "paired":
        return replicates_from_matrix(item_matrix(items, models, domains), weights=weights, n_boot=n_boot,
                                      seed=seed, statistics=statistics)
    if route == "poisson":
        from jagged.stats.poisson_bootstrap import aligned, poisson_replicates

        data = items if items is not None and len(items) else Path(source)
        reps = poisson_replicates(data, weights=weights, n_boot=n_boot, seed=seed, engine=engine,
                                  spark_master=spark_master, statistics=statistics)
        return aligned(reps, models)
    rng = np.random.default_rng(seed)
    s = wide.reindex(columns=domains).to_numpy(dtype=float)
    present = ~np.isnan(s)
    n = scores.pivot(index="model", columns="domain", values="n_items").sort_index().reindex(
        columns=domains).to_numpy(dtype=float)
    usable = ~(present & np.isnan(n)).any(axis=1)
    w, profiles = _weight_array(weights, domains)
    cv, macro, dep, wedge, more = _collect(_binomial_replicate_sums(s, np.nan_to_num(n), n_boot, rng), present, w,
                                           statistics, models, domains)
    for arr in (cv, macro, dep, wedge, *more.values()):
        arr[:, ~usable] = np.nan
    return Replicates(models=models, profiles=profiles, cv_error=cv, macro_score=macro, dep_score=dep,
                      wedge=wedge, method=METHOD_BINOMIAL, extra=more)


def _quantiles(values: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray]:
    import warnings

    levels = [(1.0 - ci) / 2.0, (1.0 + ci) / 2.0]
    if not np.isnan(values).any():  # one vectorised call; nanquantile loops over columns
        lo, hi = np.quantile(values, levels, axis=0)
        return lo, hi
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns give NaN, which is the point
        lo, hi = np.nanquantile(values, levels, axis=0)
    return lo, hi


def bootstrap_intervals(scores: pd.DataFrame, items: pd.DataFrame | None = None, *,
                        weights: pd.DataFrame | None = None, n_boot: int = 2000, seed: int = 0,
                        ci: float = 0.95, statistics: Mapping[str, ReplicateStatistic] | None = None,
                        source: str | Path | None = None, engine: str | None = None,
                        spark_master: str | None = None) -> pd.DataFrame:
    """Percentile bootstrap intervals for cv_error, macro_score, dep_score and wedge.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table.
    items : pandas.DataFrame, optional
        Item-level table behind ``scores`` (paired stratified item bootstrap).
    weights : pandas.DataFrame, optional
        Profiles × domains weight matrix; adds ``dep_score`` and ``wedge`` intervals.
    n_boot : int
        Number of replicates B (the CLI default is 2000).
    seed : int
        Seed of ``numpy.random.default_rng``; the same seed gives the same intervals.
    ci : float
        Interval level, e.g. 0.95.
    statistics : mapping of str to callable, optional
        Further per-model statistics of the same replicates (see
        :func:`bootstrap_replicates`); each adds ``<name>_lo`` and ``<name>_hi`` after the
        ``macro_score`` interval.
    source, engine, spark_master
        Item-level results out of core and where the Poisson bootstrap runs (see
        :func:`bootstrap_replicates` and :func:`interval_route`).

    Returns
    -------
    pandas.DataFrame
        One row per model (sorted), or per profile × model with ``weights`` (profiles in
        matrix order, models sorted, like :func:`jagged.analysis.metrics_table`), with
        ``model``, [``profile``], ``cv_error_lo``, ``cv_error_hi``, ``macro_score_lo``,
        ``macro_score_hi``, [``dep_score_lo``, ``dep_score_hi``, ``wedge_lo``,
        ``wedge_hi``], ``interval_method`` and ``interval_note`` (why a row has no
        interval; empty otherwise).

    Notes
    -----
    *Resampling.* With item-level data, each replicate draws, within every domain, n_d
    items with replacement from the domain's n_d items — one multinomial(n_d, 1/n_d)
    count vector c per domain, **the same for every model** (paired). A model's replicate
    domain score is (c · x_m) / (c · a_m), x_m its correctness and a_m its presence over
    the domain's items, so models lacking items use only items they have (never imputed).
    All models' replicate domain scores come from one matrix product c @ X per domain and
    chunk of replicates; there is no loop over replicates or models. Without items, each
    score is redrawn as Binomial(n_d, ŝ_d)/n_d (parametric; independent across models).
    Without ``n_items`` a model gets no interval and ``interval_note`` says why. Item-level
    results out of core (or on Spark) get the Poisson bootstrap instead of the multinomial
    count: each item's weight is Poisson(1), independently, the same for every model
    (:mod:`jagged.stats.poisson_bootstrap`; ``interval_method`` says which was used).

    *Intervals.* ``macro_score``, ``dep_score`` = Σ_d w_d s_d (S_rep @ W.T) and ``wedge``
    = macro − dep are linear in the scores, so their percentile intervals
    [q_{(1−ci)/2}, q_{(1+ci)/2}] over replicates are used as is.

    The raw CV is biased upward by noise (see :func:`jagged.stats.uncertainty.sampling_noise`), and a replicate
    is noisier still: in the bootstrap world the "true" rates are the observed ones, which
    already carry the noise N once, and resampling adds it again, so E*[V*] ≈ V_true + 2N.
    Each replicate is therefore corrected twice, cv* = √max(V* − 2N̂*, 0) / ē*, with N̂*
    computed from the replicate as in :func:`jagged.stats.uncertainty.sampling_noise`. This centres the replicates
    on the corrected estimate V_obs − N̂ with the spread of the estimator, and the
    percentile interval of cv* is an interval for the **noise-free** CV (what
    ``cv_error_corrected`` estimates). It is not centred on the raw ``cv_error``, which can
    lie above it when noise is large. Its lower end is 0 when equal error in every domain
    cannot be excluded.
    """
    _check_settings(n_boot, ci)
    reps = bootstrap_replicates(scores, items, weights=weights, n_boot=n_boot, seed=seed, statistics=statistics,
                                source=source, engine=engine, spark_master=spark_master)
    cv_lo, cv_hi = _quantiles(reps.cv_error, ci)
    mac_lo, mac_hi = _quantiles(reps.macro_score, ci)
    usable = ~np.isnan(reps.macro_score).all(axis=0)
    note = np.where(usable, "", REASON_NO_N_ITEMS).astype(object)
    method = np.where(usable, reps.method, "").astype(object)
    base = pd.DataFrame({"model": reps.models, "cv_error_lo": cv_lo, "cv_error_hi": cv_hi,
                         "macro_score_lo": mac_lo, "macro_score_hi": mac_hi})
    more = []
    for name, values in reps.extra.items():
        base[f"{name}_lo"], base[f"{name}_hi"] = _quantiles(values, ci)
        more += [f"{name}_lo", f"{name}_hi"]
    if len(reps.profiles) == 0:
        return base.assign(interval_method=method, interval_note=note)
    dep_lo, dep_hi = _quantiles(reps.dep_score, ci)     # M × P
    wed_lo, wed_hi = _quantiles(reps.wedge, ci)
    n_models, n_profiles = len(reps.models), len(reps.profiles)
    per_profile = pd.DataFrame({
        "model": np.tile(reps.models, n_profiles),
        "profile": np.repeat(reps.profiles, n_models),
        "dep_score_lo": dep_lo.T.ravel(), "dep_score_hi": dep_hi.T.ravel(),
        "wedge_lo": wed_lo.T.ravel(), "wedge_hi": wed_hi.T.ravel(),
    })
    out = per_profile.merge(base, on="model", how="left")
    out["interval_method"] = np.tile(method, n_profiles)
    out["interval_note"] = np.tile(note, n_profiles)
    cols = ["model", "profile", "cv_error_lo", "cv_error_hi", "macro_score_lo", "macro_score_hi", *more,
            "dep_score_lo", "dep_score_hi", "wedge_lo", "wedge_hi", "interval_method", "interval_note"]
    return out[cols]


def add_intervals(table: pd.DataFrame, scores: pd.DataFrame, items: pd.DataFrame | None = None, *,
                  weights: pd.DataFrame | None = None, n_boot: int = 2000, seed: int = 0,
                  ci: float = 0.95, statistics: Mapping[str, ReplicateStatistic] | None = None,
                  source: str | Path | None = None, engine: str | None = None,
                  spark_master: str | None = None) -> pd.DataFrame:
    """Add :func:`bootstrap_intervals` columns to a metrics table.

    Parameters
    ----------
    table : pandas.DataFrame
        A metrics table, per model or per profile × model (with ``profile``).
    scores, items : pandas.DataFrame
        The data behind it (``items`` optional).
    weights : pandas.DataFrame, optional
        The profiles × domains matrix behind the ``profile`` rows.
    n_boot, seed, ci, statistics
        See :func:`bootstrap_intervals`; a statistic's interval goes after its column
        when the table has one.
    source, engine, spark_master
        Item-level results out of core and where the Poisson bootstrap runs
        (:func:`interval_route`).

    Returns
    -------
    pandas.DataFrame
        ``table`` with ``<stat>_lo`` / ``<stat>_hi`` after each statistic, and
        ``interval_method`` and ``interval_note`` before ``note``.
    """
    by_profile = "profile" in table.columns and weights is not None and len(weights) > 0
    iv = bootstrap_intervals(scores, items, weights=weights if by_profile else None, n_boot=n_boot, seed=seed,
                             ci=ci, statistics=statistics, source=source, engine=engine, spark_master=spark_master)
    keys = ["model", "profile"] if by_profile else ["model"]
    out = table.merge(iv, on=keys, how="left", validate="one_to_one")
    for stat in INTERVAL_STATISTICS + tuple(statistics or ()):
        if stat in out.columns:
            out = place_after(out, stat, [f"{stat}_lo", f"{stat}_hi"])
        else:
            out = out.drop(columns=[c for c in (f"{stat}_lo", f"{stat}_hi") if c in out.columns])
    out["interval_method"] = out["interval_method"].fillna("")
    out["interval_note"] = out["interval_note"].fillna("")
    rest = [c for c in out.columns if c not in ("interval_method", "interval_note", "note")]
    return out[rest + ["interval_method", "interval_note"] + (["note"] if "note" in out.columns else [])]
