"""Intervals: the Wilson score interval of a domain's error rate, and which estimate each interval contains.

* :func:`wilson_interval` — the interval of one domain's error rate;
* :func:`interval_triples` and :func:`outside_intervals` — every ``<stat>_lo`` / ``<stat>_hi``
  pair of a table with the column it contains (:data:`ESTIMATE_OF`), and the rows where it
  does not: the invariant the metrics table is checked against (a number in a report is a
  claim, and its interval contains it).
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Iterable

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError

#: The estimate an interval contains, where it is not the column of the interval's own name: the
#: intervals of the noise-corrected statistics are for the noise-free value that the corrected
#: column estimates.
ESTIMATE_OF: dict[str, str] = {"cv_error": "cv_error_corrected",
                               "relative_jaggedness": "relative_jaggedness_corrected"}
#: Slack of the containment check, relative to max(1, |value|) (rounding of the same sums).
TOLERANCE = 1e-9


def interval_triples(columns: Iterable[str]) -> list[tuple[str, str, str]]:
    """``(estimate, lo, hi)`` column names for every ``<stat>_lo`` / ``<stat>_hi`` pair among ``columns``.

    The estimate is ``ESTIMATE_OF.get(stat, stat)``; pairs whose estimate column is absent are
    left out.
    """
    names = [str(c) for c in columns]
    present = set(names)
    out = []
    for name in names:
        stat = name[:-3]
        if name.endswith("_lo") and f"{stat}_hi" in present:
            estimate = ESTIMATE_OF.get(stat, stat)
            if estimate in present:
                out.append((estimate, name, f"{stat}_hi"))
    return out


def outside(value: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Where a finite ``value`` with a finite interval lies outside ``[lo, hi]`` (beyond :data:`TOLERANCE`)."""
    value, lo, hi = (np.asarray(a, dtype=float) for a in (value, lo, hi))
    slack = TOLERANCE * np.maximum(1.0, np.abs(np.nan_to_num(value)))
    with np.errstate(invalid="ignore"):
        return np.isfinite(value) & np.isfinite(lo) & np.isfinite(hi) & ((value < lo - slack) | (value > hi + slack))


def outside_intervals(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a table whose estimate lies outside its own interval: ``row, estimate, value, lo, hi``.

    Empty when every estimate lies in its interval; an estimate or an end that is NaN is no
    claim and never counted.
    """
    found = []
    for estimate, lo, hi in interval_triples(table.columns):
        v, a, b = (pd.to_numeric(table[c], errors="coerce").to_numpy(dtype=float) for c in (estimate, lo, hi))
        for k in np.flatnonzero(outside(v, a, b)):
            found.append({"row": table.index[k], "estimate": estimate, "value": v[k], "lo": a[k], "hi": b[k]})
    return pd.DataFrame(found, columns=["row", "estimate", "value", "lo", "hi"])


def check_intervals(table: pd.DataFrame, what: str = "metrics table") -> None:
    """Raise when an estimate of ``table`` lies outside its own interval (:func:`outside_intervals`).

    Raises
    ------
    RuntimeError
        Naming the first case: an internal inconsistency (exit 1), never the user's input.
    """
    bad = outside_intervals(table)
    if len(bad):
        first = bad.iloc[0]
        raise RuntimeError(f"internal check failed: {len(bad)} estimate(s) of the {what} outside their own interval, "
                           f"e.g. {first['estimate']} {first['value']:.6g} not in [{first['lo']:.6g}, "
                           f"{first['hi']:.6g}] (row {first['row']})")


def wilson_interval(errors: np.ndarray, n: np.ndarray, ci: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval (``lo``, ``hi`` within [0, 1]) of error rates ``errors`` = k / n from ``n`` items.

    NaN or non-positive ``n`` gives a NaN interval; ``ci`` outside (0, 1) is a
    :class:`JaggedInputError`.

    Notes
    -----
    With z the standard normal quantile at (1 + ci) / 2::

        centre = (e + z²/2n) / (1 + z²/n)
        half   = z / (1 + z²/n) · sqrt(e(1 − e)/n + z²/4n²)

    A domain's items are treated as independent draws (the benchmark's sampling noise);
    the interval stays inside [0, 1] for e = 0 or 1. Same as statsmodels'
    ``proportion_confint(k, n, alpha=1 - ci, method="wilson")``.
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
