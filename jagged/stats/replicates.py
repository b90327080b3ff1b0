"""Bootstrap replicates of the per-model statistics and the statistics of one replicate's domain sums.

Shared by the paired item bootstrap (:mod:`jagged.stats.bootstrap`) and the Poisson bootstrap
computed in the engine (:mod:`jagged.stats.poisson_bootstrap`): both produce replicate domain
sums and turn them into :class:`Replicates` with :func:`replicate_statistics`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass
class Replicates:
    """Bootstrap replicates of the per-model statistics.

    Attributes
    ----------
    models : numpy.ndarray
        Model names (sorted), length M.
    profiles : numpy.ndarray
        Profile names, length P (0 without weights).
    cv_error : numpy.ndarray
        B × M noise-corrected CV replicates (see :func:`bootstrap_intervals`, Notes).
    macro_score : numpy.ndarray
        B × M.
    dep_score, wedge : numpy.ndarray
        B × M × P.
    method : str
        Which bootstrap produced them.
    extra : dict
        B × M replicates of further statistics computed on the same replicates (the
        ``statistics`` of :func:`bootstrap_replicates`), by name.
    """

    models: np.ndarray
    profiles: np.ndarray
    cv_error: np.ndarray
    macro_score: np.ndarray
    dep_score: np.ndarray
    wedge: np.ndarray
    method: str
    extra: dict[str, np.ndarray] = field(default_factory=dict)


#: A further per-model statistic of the replicates: ``f(num, den, present, models, domains)``
#: → b × M, called with each chunk's b × M × D sums Σ c·x and Σ c·present (see
#: :func:`resampled_sums`), the M × D ``present`` mask and the model and domain names.
ReplicateStatistic = Callable[..., np.ndarray]


def replicate_statistics(num: np.ndarray, den: np.ndarray, sq: np.ndarray | None, present: np.ndarray,
                         weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-replicate statistics from replicate domain sums.

    Parameters
    ----------
    num, den : numpy.ndarray
        b × M × D: Σ c·x and Σ c·present (replicate domain score = num / den).
    sq : numpy.ndarray or None
        b × M × D Σ c·x² for partial credit; None for 0/1 data.
    present : numpy.ndarray
        M × D bool: the model has the domain in the original data.
    weights : numpy.ndarray
        P × D weight matrix (P may be 0).

    Returns
    -------
    (cv_error, macro_score, dep_score, wedge)
        b × M, b × M, b × M × P, b × M × P. ``cv_error`` is the twice-corrected replicate
        √max(V* − 2N̂*, 0)/ē* (see :func:`bootstrap_intervals`); ``wedge`` is
        Σ_d (1/D − w_d) s_d, exactly 0 for uniform weights.
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
        cv = np.sqrt(np.maximum(v - 2.0 * noise, 0.0)) / mean_e
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
