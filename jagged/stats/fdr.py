"""False discovery rates: Benjamini–Hochberg q-values, computed by scipy, with one policy for missing p-values."""

from __future__ import annotations

import numpy as np

from jagged.errors import JaggedInputError


def q_values(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (q-values) of the p-values that were computed.

    Parameters
    ----------
    p : array_like
        p-values in [0, 1]; NaN marks a test that was not made.

    Returns
    -------
    numpy.ndarray
        ``scipy.stats.false_discovery_control(p, method="bh")`` over the non-NaN p-values
        (q_(j) = min_{k ≥ j} min(1, m p_(k) / k), m their number); NaN where p is NaN.

    Raises
    ------
    JaggedInputError
        A p-value outside [0, 1] or infinite (a bug upstream, not a test to skip).

    Notes
    -----
    NaN is "not tested": it gets no q-value and does not count in m, so an item whose
    statistic is undefined neither raises nor lowers the others' q-values.
    """
    p = np.asarray(p, dtype=float)
    q = np.full(p.shape, np.nan)
    tested = ~np.isnan(p)
    bad = tested & ~((p >= 0) & (p <= 1))
    if bad.any():
        raise JaggedInputError(f"p-value {p[bad][0]!r} is not in [0, 1]")
    if tested.any():
        from scipy.stats import false_discovery_control  # here: scipy.stats is slow to import

        q[tested] = false_discovery_control(p[tested], method="bh")
    return q
