"""Bootstrap intervals of the per-model statistics: item bootstrap, binomial bootstrap, replicates.

:func:`bootstrap_intervals` gives intervals for ``cv_error`` (its noise-corrected value),
``macro_score``, ``dep_score`` and ``wedge``, each centred on its estimate
(:func:`centred_interval`), from :func:`bootstrap_replicates` (which bootstrap, and when:
there); :func:`add_intervals` puts them into the metrics table. Random draws come from
``numpy.random.default_rng(seed)``: a seed gives the same result however the replicates are
chunked. Memory is linear in the items and in models × domains: replicates are summed a
chunk at a time (:data:`jagged.stats.replicates.CELL_BUDGET`), never all B × M × D at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.stats.engine import Engine
from jagged.stats.intervals import ESTIMATE_OF
from jagged.stats.parallel import one_blas_thread
from jagged.stats.poisson_bootstrap import aligned, matrix_from_engine, poisson_replicates
from jagged.stats.replicates import (
    ItemMatrix,
    Replicates,
    ReplicateStatistic,
    chunk_size,
    item_matrix,
    summarise,
    weight_array,
)
from jagged.stats.uncertainty import place_after

INTERVAL_STATISTICS: tuple[str, ...] = ("cv_error", "macro_score", "dep_score", "wedge")
METHOD_ITEMS = "stratified item bootstrap, paired across models"
METHOD_BINOMIAL = "parametric binomial bootstrap from n_items"
REASON_NO_N_ITEMS = "no interval: the scores carry no n_items, so their sampling noise is unknown"
#: The range of a statistic, where it has one; its interval is clipped to it.
RANGES: dict[str, tuple[float, float]] = {"macro_score": (0.0, 1.0), "dep_score": (0.0, 1.0), "wedge": (-1.0, 1.0)}
#: Upper bound on the entries of one block of resampling draws (replicates × items drawn at once).
_BLOCK_ENTRIES = 4_000_000
#: Upper bound on the resampling counts (replicates × items) multiplied with the matrix at once.
_GEMM_ENTRIES = 1 << 24


def _check_settings(n_boot: int, ci: float) -> None:
    if int(n_boot) != n_boot or n_boot < 1:
        raise JaggedInputError(f"bootstrap replicates must be a positive whole number, not {n_boot!r}")
    if not 0 < ci < 1:
        raise JaggedInputError(f"interval level must be between 0 and 1 (e.g. 0.95), not {ci!r}")


def _chunks(n_boot: int, size: int) -> Iterator[int]:
    for done in range(0, n_boot, size):
        yield min(size, n_boot - done)


def domain_sums(matrix: ItemMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The M × D sums Σ x, Σ present and (partial credit) Σ x² of the data as observed (every item once)."""
    starts, empty = np.minimum(matrix.bounds[:-1], max(len(matrix.correct) - 1, 0)), np.diff(matrix.bounds) == 0

    def per_domain(values: np.ndarray) -> np.ndarray:
        if not len(values):
            return np.zeros((values.shape[1], len(empty)))
        sums = np.add.reduceat(values, starts, axis=0, dtype=float)
        sums[empty] = 0.0
        return sums.T

    x = matrix.correct
    return per_domain(x), per_domain(matrix.present), per_domain(x * x) if matrix.partial else None


def resampled_sums(matrix: ItemMatrix, n_boot: int, rng: np.random.Generator
                   ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """Stratified, paired item resampling: per chunk of b replicates (:func:`chunk_size`), b × M × D sums.

    Yields Σ c·x, Σ c·present and (partial credit only) Σ c·x², where c are the resampling
    counts of the domain's items; ``rng`` spawns one stream per domain size.

    Notes
    -----
    For each domain and replicate, n_d items are drawn with replacement from the domain's
    n_d items, and c counts how often each was drawn (a multinomial(n_d, 1/n_d) vector).
    The same c serves every model (paired). Domains of one size n are drawn together, from
    a stream of their own, replicate after replicate: blocks of b' replicates × k domains ×
    n items (:data:`_BLOCK_ENTRIES`), so the draws do not depend on the chunking. The sums of
    all models are one batched matrix product ``C @ X`` (k × r × n times k × n × M) for r
    replicates at a time (:data:`_GEMM_ENTRIES`), in the matrix's dtype (float32 sums of
    0/1 credit are exact integers); a one-item domain always draws its item once. There is
    no loop over models or domains.
    """
    x, bounds = matrix.correct, matrix.bounds
    sizes = np.diff(bounds)
    n_models, n_domains = x.shape[1], len(sizes)
    complete = bool(matrix.present.all())
    sources = [x] + ([] if complete else [matrix.present.astype(x.dtype)]) + ([x * x] if matrix.partial else [])
    single = np.flatnonzero(sizes == 1)
    groups = []                                    # (domains, items per domain, k × n × M values of each source)
    for n in np.unique(sizes[sizes > 1]):
        domains = np.flatnonzero(sizes == n)
        first, k = int(domains[0]), len(domains)
        if domains[-1] - first == k - 1:           # consecutive domains: a view, and a slice to write to
            rows, at = slice(int(bounds[first]), int(bounds[first]) + k * int(n)), slice(first, first + k)
            groups.append((at, int(n), [v[rows].reshape(k, int(n), n_models) for v in sources]))
        else:
            rows = bounds[domains][:, None] + np.arange(n)
            groups.append((domains, int(n), [v[rows] for v in sources]))
    streams = rng.spawn(len(groups))
    with one_blas_thread():  # thin products: on a busy machine OpenBLAS's waiting threads cost more than they do
        for b in _chunks(n_boot, chunk_size(n_boot, n_models * n_domains)):
            targets = [np.zeros((b, n_models, n_domains)) for _ in sources]
            for target, values in zip(targets, sources):
                target[:, :, single] = values[bounds[single]].T
            for (at, n, values), stream in zip(groups, streams):
                k = values[0].shape[0]
                step = max(1, _BLOCK_ENTRIES // (k * n))
                rows_at_once = min(b, step * max(1, _GEMM_ENTRIES // (step * k * n)))
                counts = np.empty((k, rows_at_once, n), dtype=x.dtype)
                for top in range(0, b, rows_at_once):
                    r = min(rows_at_once, b - top)
                    for lo in range(0, r, step):
                        c = min(step, r - lo)
                        draws = stream.integers(0, n, size=(c, k, n))
                        draws += np.arange(c * k).reshape(c, k, 1) * n
                        counts[:, lo:lo + c] = np.bincount(draws.ravel(), minlength=c * k * n).reshape(
                            c, k, n).transpose(1, 0, 2)
                    for target, part in zip(targets, values):
                        target[top:top + r][:, :, at] = (counts[:, :r] @ part).transpose(1, 2, 0)
            num = targets[0]
            den = np.broadcast_to(sizes.astype(float), num.shape).copy() if complete else targets[1]
            yield num, den, targets[-1] if matrix.partial else None


def _binomial_replicate_sums(s: np.ndarray, n: np.ndarray, n_boot: int, rng: np.random.Generator
                             ) -> Iterator[tuple[np.ndarray, np.ndarray, None]]:
    """Per chunk: (k, n, None) with k ~ Binomial(n_d, ŝ_d) for every model and domain."""
    present = ~np.isnan(s)
    p = np.where(present, s, 0.0)
    nn = np.where(present, n, 0).astype(np.int64)
    for b in _chunks(n_boot, chunk_size(n_boot, s.size)):
        k = rng.binomial(nn[None], p[None], size=(b,) + s.shape).astype(float)
        yield k, np.broadcast_to(nn.astype(float), (b,) + s.shape), None


def replicates_from_matrix(matrix: ItemMatrix, *, weights: pd.DataFrame | None = None, n_boot: int = 2000,
                           seed: int = 0, statistics: Mapping[str, ReplicateStatistic] | None = None
                           ) -> "Replicates":
    """Paired stratified item bootstrap on an :class:`ItemMatrix` (``weights``: profiles × domains, by name)."""
    _check_settings(n_boot, 0.5)
    observed = domain_sums(matrix)
    w, profiles = weight_array(weights, matrix.domains)
    return summarise(resampled_sums(matrix, n_boot, np.random.default_rng(seed)), observed, observed[1] > 0, w,
                     statistics, matrix.models, matrix.domains, profiles, METHOD_ITEMS)


def bootstrap_replicates(scores: pd.DataFrame, items: pd.DataFrame | None = None, *,
                         weights: pd.DataFrame | None = None, n_boot: int = 2000, seed: int = 0,
                         statistics: Mapping[str, ReplicateStatistic] | None = None,
                         source: str | Path | None = None, engine: Engine | str | None = None) -> Replicates:
    """Bootstrap replicates of cv_error (noise-corrected), macro_score, dep_score and wedge.

    Parameters
    ----------
    scores, items : pandas.DataFrame
        Canonical per-domain table, and the item-level table behind it in memory (optional).
    weights : pandas.DataFrame, optional
        Profiles × domains weight matrix with a column for every score domain.
    n_boot, seed : int
        Replicates B; seed of ``numpy.random.default_rng`` (of the Poisson weights' hash).
    statistics : mapping of str to callable, optional
        Further per-model statistics of the same replicates (:data:`ReplicateStatistic`),
        e.g. :func:`jagged.stats.decomposition.replicate_statistic`; they land in ``extra``.
    source : str or pathlib.Path, optional
        The Parquet file or folder behind item-level ``scores`` aggregated out of core.
    engine : Engine or {"duckdb", "spark"}, optional
        Where item-level results out of core are read (:class:`jagged.stats.engine.Engine`).

    Returns
    -------
    Replicates
        ``method`` says which bootstrap made them; models without ``n_items`` (binomial)
        get all-NaN replicates. ``n_boot`` < 1 or a score domain without a weight column
        is a :class:`JaggedInputError`.

    Notes
    -----
    Which bootstrap: the paired item bootstrap (:func:`replicates_from_matrix`) on the item
    table in memory, or on the item matrix streamed out of DuckDB for results out of core
    while models × items stay within
    :data:`jagged.stats.poisson_bootstrap.MATRIX_CELLS` (:func:`~jagged.stats.poisson_bootstrap.matrix_from_engine`);
    the Poisson bootstrap computed in the engine
    (:func:`~jagged.stats.poisson_bootstrap.poisson_replicates`) for results out of core
    beyond that, and for any item-level results with ``engine="spark"``; else the
    parametric binomial bootstrap from ``n_items``.
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
    engine = Engine.of(engine)
    in_memory = items is not None and len(items) > 0
    matrix = None
    if in_memory and not engine.spark:
        matrix = item_matrix(items, models, domains)
    elif source is not None and not engine.spark:
        matrix = matrix_from_engine(source, models, domains, engine)
    if matrix is not None:
        return replicates_from_matrix(matrix, weights=weights, n_boot=n_boot, seed=seed, statistics=statistics)
    if in_memory or source is not None:
        return aligned(poisson_replicates(items if in_memory else Path(source), weights=weights, n_boot=n_boot,
                                          seed=seed, engine=engine, statistics=statistics), models)
    rng = np.random.default_rng(seed)
    s = wide.reindex(columns=domains).to_numpy(dtype=float)
    present = ~np.isnan(s)
    n = scores.pivot(index="model", columns="domain", values="n_items").sort_index().reindex(
        columns=domains).to_numpy(dtype=float)
    usable = ~(present & np.isnan(n)).any(axis=1)
    w, profiles = weight_array(weights, domains)
    k, size = np.where(present, s, 0.0) * np.nan_to_num(n), np.where(present, np.nan_to_num(n), 0.0)
    reps = summarise(_binomial_replicate_sums(s, np.nan_to_num(n), n_boot, rng), (k, size, None), present, w,
                     statistics, models, domains, profiles, METHOD_BINOMIAL)
    for arr in (reps.cv_error, reps.macro_score, reps.dep_score, reps.wedge, *reps.extra.values()):
        arr[:, ~usable] = np.nan
    for arr in reps.observed.values():
        arr[~usable] = np.nan
    return reps


def _quantiles(values: np.ndarray, levels: list[float]) -> np.ndarray:
    import warnings

    if not np.isnan(values).any():  # one vectorised call; nanquantile loops over columns
        return np.quantile(values, levels, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns give NaN, which is the point
        return np.nanquantile(values, levels, axis=0)


def centred_interval(estimate: np.ndarray, replicates: np.ndarray, ci: float, *, squared: bool = False,
                     bounds: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval of bootstrap replicates, moved so that their median is the estimate.

    ``replicates`` (B × the estimate's shape, NaN: none) carry the same correction as
    ``estimate``; ``squared``: the statistic is a square before a floor at 0 (V − N̂ of
    √max(V − N̂, 0)), the ends are reported as √max(·, 0); ``bounds``: the statistic's range,
    the ends are clipped to it. Returns ``lo``, ``hi`` (NaN where the estimate or every
    replicate is NaN).

    Notes
    -----
    With q_α the α-quantile of the replicates θ*,

        [θ̂ + q_{(1−ci)/2} − q_{1/2},  θ̂ + q_{(1+ci)/2} − q_{1/2}],

    the percentile interval shifted by the bootstrap's median bias q_{1/2} − θ̂: it contains
    θ̂ by construction, and a monotone map of θ̂ and both ends (floor, root, clipping) keeps
    it inside. For a statistic linear in the scores it is the plain percentile interval up
    to the resampling's discreteness; for a noise-corrected one the replicates carry the
    noise once more than the data, and the shift removes that.
    """
    lo, mid, hi = _quantiles(replicates, [(1.0 - ci) / 2.0, 0.5, (1.0 + ci) / 2.0])
    lo, hi = estimate + (lo - mid), estimate + (hi - mid)
    if squared:
        lo, hi = np.sqrt(np.maximum(lo, 0.0)), np.sqrt(np.maximum(hi, 0.0))
    if bounds is not None:
        lo, hi = np.clip(lo, *bounds), np.clip(hi, *bounds)
    return lo, hi


def _interval(reps: Replicates, name: str, values: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray]:
    return centred_interval(reps.observed[name], values, ci, squared=name in reps.squared, bounds=RANGES.get(name))


def bootstrap_intervals(scores: pd.DataFrame, items: pd.DataFrame | None = None, *, ci: float = 0.95,
                        **resampling: Any) -> pd.DataFrame:
    """Percentile bootstrap intervals for cv_error, macro_score, dep_score and wedge.

    Parameters
    ----------
    scores, items : pandas.DataFrame
        Canonical per-domain table, and the item-level table behind it (optional).
    ci : float
        Interval level, e.g. 0.95.
    **resampling
        ``weights`` (adds ``dep_score`` and ``wedge``), ``n_boot``, ``seed``,
        ``statistics`` (each adds ``<name>_lo``, ``<name>_hi`` after the ``macro_score``
        interval), ``source``, ``engine``: as in :func:`bootstrap_replicates`, which says
        which bootstrap runs.

    Returns
    -------
    pandas.DataFrame
        One row per model (sorted), or per profile × model with ``weights`` (profiles in
        matrix order, like :func:`jagged.analysis.metrics_table`): ``model``,
        [``profile``], ``<stat>_lo``, ``<stat>_hi``, ``interval_method`` and
        ``interval_note`` (why a row has no interval; empty otherwise).

    Notes
    -----
    *Resampling.* With item-level data each replicate draws, within every domain, n_d items
    with replacement: a multinomial(n_d, 1/n_d) count vector c, **the same for every
    model** (paired). A model's replicate domain score is (c · x_m) / (c · a_m), x_m its
    correctness and a_m its presence, so a model lacking items uses only those it has. The
    Poisson bootstrap gives each item a Poisson(1) weight instead, the same for every model.
    Without items each score is redrawn as Binomial(n_d, ŝ_d)/n_d; without ``n_items`` a
    model gets no interval and ``interval_note`` says why.

    *Intervals.* Each is :func:`centred_interval` of its statistic's replicates, with the
    estimate's correction and floor, so it contains the estimate. ``macro_score``,
    ``dep_score`` and ``wedge`` are linear in the scores: percentile intervals. The
    ``cv_error`` interval is for the **noise-free** CV that ``cv_error_corrected`` =
    √max(V − N̂, 0)/ē estimates (:func:`jagged.stats.uncertainty.sampling_noise`): taken on
    the scale u* = (V* − N̂*)/ē*² around u = (V − N̂)/ē² and reported as √max(·, 0); the
    replicates carry the noise twice (E*[V*] ≈ V_true + 2N), and centring on u removes it.
    """
    _check_settings(1, ci)
    reps = bootstrap_replicates(scores, items, **resampling)
    cv_lo, cv_hi = _interval(reps, "cv_error", reps.cv_error, ci)
    mac_lo, mac_hi = _interval(reps, "macro_score", reps.macro_score, ci)
    usable = ~np.isnan(reps.macro_score).all(axis=0)
    note = np.where(usable, "", REASON_NO_N_ITEMS).astype(object)
    method = np.where(usable, reps.method, "").astype(object)
    base = pd.DataFrame({"model": reps.models, "cv_error_lo": cv_lo, "cv_error_hi": cv_hi,
                         "macro_score_lo": mac_lo, "macro_score_hi": mac_hi})
    more = []
    for name, values in reps.extra.items():
        base[f"{name}_lo"], base[f"{name}_hi"] = _interval(reps, name, values, ci)
        more += [f"{name}_lo", f"{name}_hi"]
    if len(reps.profiles) == 0:
        return base.assign(interval_method=method, interval_note=note)
    dep_lo, dep_hi = _interval(reps, "dep_score", reps.dep_score, ci)     # M × P
    wed_lo, wed_hi = _interval(reps, "wedge", reps.wedge, ci)
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
                  weights: pd.DataFrame | None = None, statistics: Mapping[str, ReplicateStatistic] | None = None,
                  **settings: Any) -> pd.DataFrame:
    """Add :func:`bootstrap_intervals` columns to a metrics table (per model, or per profile × model).

    ``weights`` is the profiles × domains matrix behind the ``profile`` rows; ``statistics``
    and ``**settings`` (``ci``, ``n_boot``, ``seed``, ``source``, ``engine``) go to
    :func:`bootstrap_intervals`. Each ``<stat>_lo`` / ``<stat>_hi`` goes after the estimate
    it contains (:data:`jagged.stats.intervals.ESTIMATE_OF`: ``cv_error_lo`` after
    ``cv_error_corrected``), and ``interval_method`` and ``interval_note`` before ``note``.
    """
    by_profile = "profile" in table.columns and weights is not None and len(weights) > 0
    iv = bootstrap_intervals(scores, items, weights=weights if by_profile else None, statistics=statistics,
                             **settings)
    keys = ["model", "profile"] if by_profile else ["model"]
    out = table.merge(iv, on=keys, how="left", validate="one_to_one")
    for stat in INTERVAL_STATISTICS + tuple(statistics or ()):
        if stat in out.columns:
            anchor = ESTIMATE_OF.get(stat, stat)
            out = place_after(out, anchor if anchor in out.columns else stat, [f"{stat}_lo", f"{stat}_hi"])
        else:
            out = out.drop(columns=[c for c in (f"{stat}_lo", f"{stat}_hi") if c in out.columns])
    out["interval_method"] = out["interval_method"].fillna("")
    out["interval_note"] = out["interval_note"].fillna("")
    rest = [c for c in out.columns if c not in ("interval_method", "interval_note", "note")]
    return out[rest + ["interval_method", "interval_note"] + (["note"] if "note" in out.columns else [])]
