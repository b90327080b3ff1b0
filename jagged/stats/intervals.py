"""Confidence intervals of proportions: the Wilson score interval of a domain's error rate."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

from jagged.errors import JaggedInputError


def wilson_interval(errors: np.ndarray, n: np.ndarray, ci: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of an error rate estimated from ``n`` items.

    Parameters
    ----------
    errors : array_like
        Observed error rates e = k / n.
    n : array_like
        Item counts; NaN or non-positive gives a NaN interval.
    ci : float
        Interval level, in (0, 1).

    Returns
    -------
    lo, hi : numpy.ndarray
        Interval bounds, within [0, 1].

    Raises
    ------
    JaggedInputError
        When ``ci`` is not in (0, 1).

    Notes
    -----
    With z the standard normal quantile at (1 + ci) / 2::

        centre = (e + z²/2n) / (1 + z²/n)
        half   = z / (1 + z²/n) · sqrt(e(1 − e)/n + z²/4n²)

    It treats a domain's items as independent draws (sampling noise of the benchmark,
    not disagreement between runs) and stays inside [0, 1] for e = 0 or 1, unlike the
    normal approximation. Same as ``statsmodels.stats.proportion.proportion_confint(k, n,
    alpha=1 - ci, method="wilson")``.
    """
    if not 0 < ci < 1:
        raise JaggedInputError(f"interval level must be between 0 and 1, not {ci}")
    e = np.asarray(errors, dtype=float)
    n = np.asarray(n, dtype=float)
    z = NormalDist().inv_cdf((1 + ci) / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        good = n > 0
        n_ = np.where(good, n, 1.0)
        denom = 1 + z * z / n_
        centre = (e + z * z / (2 * n_)) / denom
        half = z / denom * np.sqrt(np.clip(e * (1 - e), 0, None) / n_ + z * z / (4 * n_ * n_))
    lo = np.where(good, np.clip(centre - half, 0.0, 1.0), np.nan)
    hi = np.where(good, np.clip(centre + half, 0.0, 1.0), np.nan)
    return lo, hi
