"""jagged.stats.intervals: the Wilson interval against statsmodels, scipy and a hand-worked case."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jagged.errors import JaggedInputError
from jagged.stats.intervals import wilson_interval

CASES = [(30, 100, 0.95), (0, 20, 0.95), (20, 20, 0.9), (7, 13, 0.99), (1, 1, 0.8)]


def test_wilson_interval_matches_statsmodels():
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    k = np.array([c[0] for c in CASES], dtype=float)
    n = np.array([c[1] for c in CASES], dtype=float)
    for ci in (0.8, 0.9, 0.95, 0.99):
        lo, hi = wilson_interval(k / n, n, ci)                     # vectorised over all cases at once
        ref_lo, ref_hi = proportion.proportion_confint(k, n, alpha=1 - ci, method="wilson")
        np.testing.assert_allclose(lo, ref_lo, rtol=0, atol=1e-12)
        np.testing.assert_allclose(hi, ref_hi, rtol=0, atol=1e-12)


def test_wilson_interval_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    for k, n, ci in CASES:
        lo, hi = wilson_interval(np.array([k / n]), np.array([n]), ci)
        ref = stats.binomtest(k, n).proportion_ci(confidence_level=ci, method="wilson")
        assert lo[0] == pytest.approx(ref.low, abs=1e-12)
        assert hi[0] == pytest.approx(ref.high, abs=1e-12)


def test_wilson_interval_by_hand():
    # e = 0.5, n = 4, z = 1.959964: centre 0.5; half = z/(1 + z²/4) · sqrt(1/16 + z²/64)
    z = 1.959963984540054
    half = z / (1 + z * z / 4) * math.sqrt(0.25 / 4 + z * z / 64)
    lo, hi = wilson_interval(np.array([0.5]), np.array([4.0]))
    assert lo[0] == pytest.approx(0.5 - half, abs=1e-12) and hi[0] == pytest.approx(0.5 + half, abs=1e-12)
    assert (lo[0], hi[0]) == pytest.approx((0.1500, 0.8500), abs=1e-4)


def test_wilson_interval_unknown_items_and_bad_level():
    lo, hi = wilson_interval(np.array([0.3, 0.3, 0.3]), np.array([np.nan, 0.0, -5.0]))
    assert np.isnan(lo).all() and np.isnan(hi).all()
    for ci in (0.0, 1.0, 1.5):
        with pytest.raises(JaggedInputError, match="interval level"):
            wilson_interval(np.array([0.3]), np.array([10]), ci=ci)
