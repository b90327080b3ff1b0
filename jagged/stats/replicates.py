"""Bootstrap replicates of the per-model statistics and the statistics of one replicate's domain sums.

Shared by the paired item bootstrap (:mod:`jagged.stats.bootstrap`) and the Poisson bootstrap
computed in the engine (:mod:`jagged.stats.poisson_bootstrap`): both produce replicate domain
sums and turn them into :class:`Replicates` with :func:`replicate_statistics`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Iterable, Mapping

import numpy as np
import pandas as pd

#: Upper bound on the replicate × model × domain cells summed at once (one chunk of replicates).
CELL_BUDGET = 1 << 19


def chunk_size(n_boot: int, cells: int) -> int:
    """Replicates per chunk: as many as keep ``replicates × cells`` within :data:`CELL_BUDGET`, at least 1."""
    return int(max(1, min(n_boot, CELL_BUDGET // max(cells, 1))))


@dataclass
class Replicates:
    """Bootstrap replicates of the per-model statistics.

    Attributes
    ----------
    models, profiles : numpy.ndarray
        Model names (sorted), length M; profile names, length P (0 without weights).
    cv_error : numpy.ndarray
        B × M replicates of the squared noise-corrected CV before its floor,
        (V* − N̂*)/ē*² (:func:`replicate_statistics`).
    macro_score : numpy.ndarray
        B × M.
    dep_score, wedge : numpy.ndarray
        B × M × P.
    method : str
        Which bootstrap produced them.
    extra : dict
        B × M replicates of further statistics of the same replicates, by name.
    observed : dict
        Each statistic of the data as observed (length M, M × P for ``dep_score`` and
        ``wedge``): what the intervals are centred on.
    squared : frozenset of str
        The statistics that are squares before a floor at 0: their interval ends are √max(·, 0).
    """

    models: np.ndarray
    profiles: np.ndarray
    cv_error: np.ndarray
    macro_score: np.ndarray
    dep_score: np.ndarray
    wedge: np.ndarray
    method: str
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    observed: dict[str, np.ndarray] = field(default_factory=dict)
    squared: frozenset[str] = frozenset({"cv_error"})


#: A further per-model statistic of the replicates: ``f(num, den, present, models, domains)``
#: → b × M, called with each chunk's b × M × D sums Σ c·x and Σ c·present (see
#: :func:`resampled_sums`), the M × D ``present`` mask and the model and domain names; once
#: more with the sums of the data as observed (b = 1). A function with the attribute
#: ``squared = True`` returns a square before its floor at 0 (V − N̂ for √max(V − N̂, 0)).
ReplicateStatistic = Callable[..., np.ndarray]


def summarise(chunks: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray | None]],
              observed: tuple[np.ndarray, np.ndarray, np.ndarray | None], present: np.ndarray, weights: np.ndarray,
              statistics: Mapping[str, ReplicateStatistic] | None, models: np.ndarray, domains: np.ndarray,
              profiles: np.ndarray, method: str) -> Replicates:
    """:class:`Replicates` from chunks of b × M × D replicate sums and the M × D sums of the data as observed.

    Each sum is (Σ c·x, Σ c·present, Σ c·x² or None); memory: one chunk. See
    :func:`replicate_statistics`.
    """
    statistics = dict(statistics or {})
    parts, extra = [], {name: [] for name in statistics}
    for num, den, sq in chunks:
        parts.append(replicate_statistics(num, den, sq, present, weights))
        for name, func in statistics.items():
            extra[name].append(func(num, den, present, models, domains))
    num0, den0, sq0 = (None if a is None else a[None] for a in observed)
    first = replicate_statistics(num0, den0, sq0, present, weights)
    names = ("cv_error", "macro_score", "dep_score", "wedge")
    seen = {name: value[0] for name, value in zip(names, first)}
    seen.update({name: func(num0, den0, present, models, domains)[0] for name, func in statistics.items()})
    cv, macro, dep, wedge = (np.concatenate([p[i] for p in parts]) for i in range(4))
    squared = {"cv_error"} | {name for name, func in statistics.items() if getattr(func, "squared", False)}
    return Replicates(models=models, profiles=profiles, cv_error=cv, macro_score=macro, dep_score=dep, wedge=wedge,
                      method=method, extra={name: np.concatenate(v) for name, v in extra.items()}, observed=seen,
                      squared=frozenset(squared))


def replicate_statistics(num: np.ndarray, den: np.ndarray, sq: np.ndarray | None, present: np.ndarray,
                         weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-replicate statistics from b × M × D replicate domain sums.

    ``num``, ``den``: Σ c·x and Σ c·present (domain score num / den); ``sq``: Σ c·x² with
    partial credit, None for 0/1 data; ``present``: M × D, the model has the domain;
    ``weights``: P × D (P may be 0).

    Returns
    -------
    (cv_error, macro_score, dep_score, wedge)
        b × M, b × M, b × M × P, b × M × P. ``cv_error`` is (V* − N̂*)/ē*², V* and N̂* as in
        :func:`jagged.stats.uncertainty.sampling_noise` (``cv_error_corrected`` is √max(·, 0)
        of it on the data as observed); ``wedge`` is Σ_d (1/D − w_d) s_d.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(present[None] & (den > 0), num / den, np.nan)
        e = 1.0 - s
        ok = ~np.isnan(s)
        d = present.sum(axis=1).astype(float)[None]              # 1 × M: the model's own D
        e0 = np.where(ok, e, 0.0)
        mean_e = e0.sum(axis=2) / d
        dev = np.where(ok, e - mean_e[..., None], 0.0)
        v = (dev * dev).sum(axis=2) / d
        if sq is None:
            item_var = e * (1.0 - e) * den / (den - 1.0)         # sample variance of 0/1 items
        else:
            item_var = (sq - num * num / den) / (den - 1.0)
        sigma2 = np.where(ok & (den > 1), item_var / den, np.nan)
        noise = (d - 1.0) / d ** 2 * np.where(ok, sigma2, 0.0).sum(axis=2)
        noise[(ok & np.isnan(sigma2)).any(axis=2)] = np.nan       # a single-item domain: unknown
        cv = (v - noise) / (mean_e * mean_e)
        lost = ~(ok == present[None]).all(axis=2)                  # a domain drew none of its items
        cv[lost | (d < 2) | ~(mean_e > 0)] = np.nan
        s0 = np.where(ok, s, 0.0)
        macro = s0.sum(axis=2) / d
        macro[lost] = np.nan
        uniform = present / present.sum(axis=1, keepdims=True)    # M × D: 1/D_m on own domains
        dep = s0 @ weights.T                                       # b × M × P
        wedge = np.einsum("bmd,mpd->bmp", s0, uniform[:, None, :] - weights[None, :, :])
        lacking = ((~ok).astype(float) @ (weights > 0).T.astype(float)) > 0
        dep[lacking] = np.nan
        wedge[lacking] = np.nan
    return cv, macro, dep, wedge


@dataclass
class ItemMatrix:
    """Item-level results as an items × models matrix, items grouped by domain.

    Attributes
    ----------
    correct : numpy.ndarray
        N × M ``correct``, float64 or (0/1 credit) float32; 0 where the model lacks the item.
    present : numpy.ndarray
        N × M bool, True where the model has a result for the item.
    bounds : numpy.ndarray
        D + 1 row offsets: domain d owns rows ``bounds[d]:bounds[d + 1]``.
    models, domains : numpy.ndarray
        Names, length M and D.
    """

    correct: np.ndarray
    present: np.ndarray
    bounds: np.ndarray
    models: np.ndarray
    domains: np.ndarray

    @cached_property
    def partial(self) -> bool:
        """True when some ``correct`` lies strictly between 0 and 1."""
        return bool(((self.correct > 0) & (self.correct < 1)).any())


def item_matrix(items: pd.DataFrame, models: np.ndarray | None = None,
                domains: np.ndarray | None = None) -> ItemMatrix:
    """A validated item table as an :class:`ItemMatrix`: models and domains in the order given (default: sorted).

    Items keep their order of first appearance within their domain; a domain without
    items gets no rows.
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


def weight_array(weights: pd.DataFrame | None, domains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if weights is None or len(weights) == 0:
        return np.zeros((0, len(domains))), np.asarray([], dtype=object)
    w = np.nan_to_num(weights.reindex(columns=list(domains)).to_numpy(dtype=float))
    return w, np.asarray(weights.index, dtype=object)
