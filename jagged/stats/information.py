"""Item and test information of the 2PL: where on the ability scale each domain measures.

For item j, P_j(θ) = σ(a_j θ + c_j) and I_j(θ) = a_j² P_j(θ)(1 − P_j(θ)) (logistic scale);
a trait's test information I_g(θ) = Σ_{j ∈ g} I_j(θ), and 1/√I_g(θ) is the standard error
of a maximum-likelihood ability there. :func:`domain_information` gives the curves, each
trait's measuring range and the models' places on it; :func:`report_fit` is the fit the
reports use, kept for the process.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.stats import irt
from jagged.stats.parallel import one_blas_thread
from jagged.text import Summarised

#: Default ability grid.
THETA_GRID = np.linspace(-4.0, 4.0, 161)
#: Share of the peak that bounds the measurement range.
HALF = 0.5

CURVE_COLUMNS: tuple[str, ...] = ("group", "theta", "information")
RANGE_COLUMNS: tuple[str, ...] = ("group", "n_items", "theta_peak", "peak_information", "se_at_peak", "lower", "upper")
PLACE_COLUMNS: tuple[str, ...] = ("model", "group", "theta", "theta_sd", "information", "se", "position")


def item_information(slope: np.ndarray, intercept: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """I_j(θ) = a_j² P_j(θ)(1 − P_j(θ)) for every item (rows) on the grid (columns)."""
    p = irt.item_probability(slope, intercept, theta)
    return np.asarray(slope, float)[:, None] ** 2 * p * (1 - p)


def information_curves(items: pd.DataFrame, *, theta: np.ndarray | None = None, by: str = "group") -> pd.DataFrame:
    """Test information per group on an ability grid: ``group, theta, information`` (groups in order of appearance).

    ``items`` holds ``slope``, ``intercept`` and the column ``by`` (``"group"``, the fitted
    traits, or ``"domain"``); items with a NaN slope are left out; ``theta`` defaults to
    :data:`THETA_GRID`. JaggedInputError when a column is missing.

    Notes
    -----
    I_g(θ) = Σ_j a_j² σ(a_j θ + c_j)(1 − σ(a_j θ + c_j)). A negative slope adds information
    like a positive one (a²); the flags say which. Each group's curve is on its own N(0, 1)
    scale: curves compare where each domain measures relative to its own models.
    """
    missing = [c for c in ("slope", "intercept", by) if c not in items.columns]
    if missing:
        raise JaggedInputError(f"item parameters lack column(s) {', '.join(missing)}")
    grid = THETA_GRID if theta is None else np.asarray(theta, dtype=float)
    fitted = items[np.isfinite(items["slope"].to_numpy(dtype=float))]
    groups = pd.unique(items[by])
    codes = pd.Index(groups).get_indexer(fitted[by])
    info = item_information(fitted["slope"].to_numpy(float), fitted["intercept"].to_numpy(float), grid)
    total = np.zeros((len(groups), len(grid)))
    np.add.at(total, codes, info)
    return pd.DataFrame({"group": np.repeat(np.asarray(groups, dtype=object), len(grid)),
                         "theta": np.tile(grid, len(groups)), "information": total.ravel()},
                        columns=list(CURVE_COLUMNS))


def measurement_range(curves: pd.DataFrame, *, items: pd.DataFrame | None = None, by: str = "group") -> pd.DataFrame:
    """Where each group measures (:data:`RANGE_COLUMNS`): the peak of its information and the half-peak range.

    ``theta_peak`` and ``peak_information`` at the grid's largest information, ``se_at_peak``
    = 1/√peak, ``lower`` and ``upper`` the ends of the contiguous stretch around the peak with
    information ≥ half the peak (NaN where it reaches beyond the grid); ``n_items`` fitted
    items from ``items``. A group with no fitted items: NaN peak, range and SE.
    """
    groups = pd.unique(curves["group"])
    n_grid = len(curves) // max(len(groups), 1)
    th = curves["theta"].to_numpy(float)[:n_grid]
    info = curves["information"].to_numpy(float).reshape(len(groups), n_grid)  # rows: groups in order
    k = info.argmax(axis=1) if n_grid else np.zeros(len(groups), dtype=int)
    peak = info[np.arange(len(groups)), k] if n_grid else np.zeros(len(groups))
    above = info >= HALF * peak[:, None]
    idx = np.arange(n_grid)[None, :]
    # the contiguous stretch around the peak: after the last point below half before it, before the first after it
    lo = np.where(~above & (idx < k[:, None]), idx, -1).max(axis=1, initial=-1) + 1
    hi = np.where(~above & (idx > k[:, None]), idx, n_grid).min(axis=1, initial=n_grid) - 1
    fitted = peak > 0
    counts = (items[np.isfinite(items["slope"].to_numpy(float))].groupby(by, sort=False).size()
              .reindex(groups).fillna(0).to_numpy(int) if items is not None else np.full(len(groups), np.nan))
    return pd.DataFrame({
        "group": groups, "n_items": np.where(fitted, counts, 0), "theta_peak": np.where(fitted, th[k], np.nan),
        "peak_information": peak, "se_at_peak": np.where(fitted, 1 / np.sqrt(np.maximum(peak, 1e-300)), np.nan),
        "lower": np.where(fitted & (lo > 0), th[np.minimum(lo, n_grid - 1)], np.nan),
        "upper": np.where(fitted & (hi < n_grid - 1), th[np.maximum(hi, 0)], np.nan)}, columns=list(RANGE_COLUMNS))


def place_models(abilities: pd.DataFrame, items: pd.DataFrame, ranges: pd.DataFrame, *,
                 by: str = "group") -> pd.DataFrame:
    """Each model on each group's information curve (:data:`PLACE_COLUMNS`).

    The test information at the model's EAP ability, ``se`` = 1/√ of it, and ``position``
    ``"below"``, ``"within"`` or ``"above"`` the group's half-peak range (a missing bound is open).
    """
    fitted = items[np.isfinite(items["slope"].to_numpy(float))]
    out = abilities[["model", "group", "theta", "theta_sd"]].copy()
    # every (ability, item of its group) pair once: linear in models × items, whatever the number of groups
    pairs = out[["group", "theta"]].reset_index(drop=True).reset_index().merge(
        fitted[[by, "slope", "intercept"]].rename(columns={by: "group"}), on="group")
    a = pairs["slope"].to_numpy(float)
    p = 1 / (1 + np.exp(-(a * pairs["theta"].to_numpy(float) + pairs["intercept"].to_numpy(float))))
    info = np.bincount(pairs["index"].to_numpy(), weights=a * a * p * (1 - p), minlength=len(out))
    out["information"] = info
    with np.errstate(divide="ignore"):
        out["se"] = np.where(info > 0, 1 / np.sqrt(np.maximum(info, 1e-300)), np.inf)
    r = ranges.set_index("group")
    lower = out["group"].map(r["lower"]).to_numpy(float)
    upper = out["group"].map(r["upper"]).to_numpy(float)
    th = out["theta"].to_numpy(float)
    out["position"] = np.where(np.isfinite(lower) & (th < lower), "below",
                               np.where(np.isfinite(upper) & (th > upper), "above", "within"))
    return out[list(PLACE_COLUMNS)].reset_index(drop=True)


@dataclass(frozen=True, repr=False)
class DomainInformation(Summarised):
    """Where each trait measures and where the models sit (:func:`domain_information`)."""

    curves: pd.DataFrame
    ranges: pd.DataFrame
    places: pd.DataFrame

    def _summary(self) -> tuple[str, list[tuple[str, str]]]:
        return "DomainInformation", [("traits", f"{len(self.ranges):,}"),
                                     ("models placed", f"{self.places['model'].nunique():,}")]


def domain_information(fit: irt.IRTFit, *, theta: np.ndarray | None = None) -> DomainInformation:
    """:func:`information_curves`, :func:`measurement_range` and :func:`place_models` of a fit, by its trait."""
    curves = information_curves(fit.items, theta=theta)
    ranges = measurement_range(curves, items=fit.items)
    places = place_models(fit.abilities, fit.items, ranges)
    return DomainInformation(curves, ranges, places)


#: Item response models fitted in this process, by trait and digest of the responses, oldest first: a warm
#: kernel (the per-model pages of ``jagged batch``) fits an input once, not once per page.
_FITS: dict[tuple[str, str], irt.IRTFit] = {}
#: How many fits :func:`report_fit` keeps.
FITS_KEPT = 2
#: Below this many models × items cells the item response model runs on one BLAS thread (see
#: :func:`blas_threads_for`).
ONE_THREAD_BELOW = 5_000_000


def blas_threads_for(cells: int) -> contextlib.AbstractContextManager:
    """One BLAS thread for a response matrix of fewer than :data:`ONE_THREAD_BELOW` cells, the default above.

    The EM's products on a small matrix gain nothing from threads, and on a busy machine
    OpenBLAS's waiting threads cost more than the work (:func:`jagged.stats.parallel.one_blas_thread`).
    """
    return one_blas_thread(cells < ONE_THREAD_BELOW)


def matrix_cells(table: pd.DataFrame) -> int:
    """Models × items of an item table: the size of its response matrix."""
    return int(table["model"].nunique()) * int(table["item"].nunique())


def report_fit(table: pd.DataFrame, rest: str = "domain") -> irt.IRTFit:
    """:func:`jagged.stats.irt.fit_2pl` of an item table, reused within the process for the same responses.

    The same object (read-only) for the same ``model, domain, item, correct`` rows (SHA-256 of
    their row hashes) and ``rest`` while among the last :data:`FITS_KEPT` fits, so a warm
    kernel's next page fits once; run under :func:`blas_threads_for`.
    """
    rows = pd.util.hash_pandas_object(table[["model", "domain", "item", "correct"]], index=False)
    key = (rest, hashlib.sha256(rows.to_numpy().tobytes()).hexdigest())
    if key not in _FITS:
        with blas_threads_for(matrix_cells(table)):
            fit = irt.fit_2pl(table, rest=rest)
        while len(_FITS) >= FITS_KEPT:
            _FITS.pop(next(iter(_FITS)))
        _FITS[key] = fit
    return _FITS[key]
