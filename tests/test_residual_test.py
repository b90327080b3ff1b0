"""jagged.stats.residual_test: intervals and the per-model Bonferroni test on hand-made residuals."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

from jagged.errors import JaggedInputError
from jagged.stats.residual_test import residual_departures

COLUMNS = ["model", "domain", "error", "expected_error", "residual", "residual_lo", "residual_hi", "z", "z_limit",
           "departs"]


def cells(rows) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["model", "domain", "residual", "residual_se"])
    return frame.assign(error=0.3, expected_error=0.25, z=frame["residual"] / frame["residual_se"])


def test_bonferroni_limit_per_model():
    # A has 4 domains: limit Φ⁻¹(1 − 0.05/8) = 2.4977; B has 1 domain: limit Φ⁻¹(0.975) = 1.9600
    table = cells([("A", "d1", 2.6, 1.0), ("A", "d2", -2.6, 1.0), ("A", "d3", 2.4, 1.0), ("A", "d4", 0.0, 1.0),
                   ("B", "d1", 2.2, 1.0)])
    out = residual_departures(table, ci=0.95)
    assert list(out.columns) == COLUMNS
    assert out["z_limit"].to_numpy() == pytest.approx([2.497705] * 4 + [1.959964], abs=1e-6)
    assert out["departs"].tolist() == [1, -1, 0, 0, 1]             # 2.4 < 2.4977 for A; 2.2 > 1.96 for B
    assert out["model"].tolist() == table["model"].tolist() and out["domain"].tolist() == table["domain"].tolist()


def test_intervals_are_residual_plus_minus_z_se():
    table = cells([("A", "d1", 0.5, 0.2), ("A", "d2", -0.1, 0.4)])
    out = residual_departures(table, ci=0.9)
    z = NormalDist().inv_cdf(0.95)
    np.testing.assert_allclose(out["residual_lo"], [0.5 - z * 0.2, -0.1 - z * 0.4])
    np.testing.assert_allclose(out["residual_hi"], [0.5 + z * 0.2, -0.1 + z * 0.4])


def test_unknown_noise_never_departs():
    table = cells([("A", "d1", 3.0, np.nan), ("A", "d2", -3.0, np.nan)])
    out = residual_departures(table)
    assert out["departs"].tolist() == [0, 0]
    assert out["residual_lo"].isna().all() and out["residual_hi"].isna().all()


def test_even_model_is_flagged_at_most_one_minus_ci_of_the_time():
    rng = np.random.default_rng(7)
    n_models, n_domains = 4000, 12
    z = rng.standard_normal((n_models, n_domains))
    table = cells([(f"m{i}", f"d{j}", z[i, j], 1.0) for i in range(n_models) for j in range(n_domains)])
    out = residual_departures(table, ci=0.9)
    flagged = (out["departs"].to_numpy().reshape(n_models, n_domains) != 0).any(axis=1).mean()
    # exact family-wise rate 1 − (1 − 0.1/12)^12 = 0.0955 ≤ 0.1
    assert flagged == pytest.approx(1 - (1 - 0.1 / 12) ** 12, abs=0.015)
    assert flagged <= 0.1 + 0.015


def test_bad_input():
    with pytest.raises(JaggedInputError, match="interval level"):
        residual_departures(cells([("A", "d1", 0.1, 0.1)]), ci=1.0)
    with pytest.raises(JaggedInputError, match="residual_se"):
        residual_departures(pd.DataFrame({"model": ["A"], "domain": ["d"], "error": [0.1], "expected_error": [0.1],
                                          "residual": [0.0], "z": [0.0]}))
    empty = residual_departures(cells([]))
    assert list(empty.columns) == COLUMNS and len(empty) == 0
