"""Which model × domain residuals depart from the field beyond sampling noise (Bonferroni over a model's domains)."""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError


def residual_departures(cells: pd.DataFrame, *, ci: float = 0.95) -> pd.DataFrame:
    """Sampling intervals of the residuals and a per-model Bonferroni test of "departs from the field".

    ``cells`` as :meth:`jagged.stats.decomposition.Decomposition.residuals` returns them; one
    row per cell in their order: ``model, domain, error, expected_error, residual``,
    ``residual_lo``/``residual_hi``, ``z``, ``z_limit``, ``departs`` (+1 more errors than
    expected, −1 fewer, 0 within noise or z unknown). JaggedInputError when ``ci`` is not in
    (0, 1) or a column is missing.

    Notes
    -----
    With D_m the model's cells and se = ``residual_se``::

        interval = residual ∓ Φ⁻¹((1 + ci) / 2) · se
        z_limit  = Φ⁻¹(1 − (1 − ci) / (2 D_m))
        departs  = sign(z) · [|z| > z_limit]

    so an even model (pure noise) is flagged in some domain with probability at most 1 − ci.
    """
    if not 0 < ci < 1:
        raise JaggedInputError(f"interval level must be between 0 and 1, not {ci}")
    needed = ("model", "domain", "error", "expected_error", "residual", "residual_se", "z")
    missing = [c for c in needed if c not in cells.columns]
    if missing:
        raise JaggedInputError(f"residual table lacks column(s) {', '.join(missing)}")
    normal = NormalDist()
    z_ci = normal.inv_cdf((1 + ci) / 2)
    d = cells.groupby("model", sort=False, observed=True)["domain"].transform("size").to_numpy(dtype=float)
    tail = (1 - ci) / (2 * np.maximum(d, 1.0))
    z_limit = np.array([normal.inv_cdf(1 - t) for t in np.unique(tail)]) if len(tail) else np.empty(0)
    z_limit = z_limit[np.searchsorted(np.unique(tail), tail)] if len(tail) else z_limit
    z = cells["z"].to_numpy(dtype=float)
    residual = cells["residual"].to_numpy(dtype=float)
    se = cells["residual_se"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        departs = np.where(z > z_limit, 1, np.where(z < -z_limit, -1, 0)).astype(np.int64)
    return pd.DataFrame({
        "model": cells["model"].to_numpy(dtype=object), "domain": cells["domain"].to_numpy(dtype=object),
        "error": cells["error"].to_numpy(dtype=float), "expected_error": cells["expected_error"].to_numpy(dtype=float),
        "residual": residual, "residual_lo": residual - z_ci * se, "residual_hi": residual + z_ci * se,
        "z": z, "z_limit": z_limit, "departs": departs,
    })


def residual_profile(decomposition: Any, model: str, *, ci: float = 0.95) -> pd.DataFrame:
    """One model's :func:`residual_departures` by domain, largest residual first (no rows when not fitted)."""
    cells = decomposition.residuals()
    mine = residual_departures(cells[cells["model"].astype(str) == str(model)], ci=ci)
    columns = ["domain", "error", "expected_error", "residual", "residual_lo", "residual_hi", "z", "departs"]
    return mine.loc[:, columns].sort_values(["residual", "domain"], ascending=[False, True],
                                            kind="mergesort").reset_index(drop=True)
