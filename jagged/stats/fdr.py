"""False discovery rates: Benjamini–Hochberg q-values, computed by scipy, with one policy for missing p-values."""

from __future__ import annotations

import numpy as np

from jagged.errors import JaggedInputError


def q_values(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg q-values (``scipy.stats.false_discovery_control(p, method="bh")``) of the p-values tested.

    q_(j) = min_{k ≥ j} min(1, m p_(k) / k). NaN is "not tested": no q-value and not counted in
    m. JaggedInputError for a p-value outside [0, 1] (a bug upstream).
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
