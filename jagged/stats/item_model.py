"""The response model behind the item audit's suspicion score: a sound item, its difficulty integrated out.

A model with ability θ (the smoothed logit of its score in the item's rest group) answers
a sound item of difficulty b correctly with probability σ(a (θ − b)). For an indicator y
over the models that have an item (its correctness, or "chose option j"),

    ln Π_m σ(a(θ_m − b))^y_m (1 − σ(a(θ_m − b)))^(1 − y_m) = a Σ y θ − a b Σ y − Σ_m softplus(a(θ_m − b)),

so the likelihood on a grid of difficulties needs only Σy, Σyθ and the per-item
Σ softplus (:class:`jagged.stats.item_sums.ItemSums`). The difficulty's prior is the
nonparametric maximum-likelihood distribution on the grid (EM), and the slope a is the
value of :data:`SLOPES` with the highest marginal likelihood. See
:func:`jagged.stats.item_audit.item_audit` for how the score uses it.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from jagged.stats.item_sums import softplus

#: Candidate slopes a of the response model (the one with the highest marginal likelihood is used).
SLOPES: tuple[float, ...] = (0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0)
#: Points of the difficulty grid, and how far (in units of 1/a) it reaches beyond the abilities.
GRID_POINTS = 25
GRID_REACH = 6.0
EM_ITERATIONS = 30
#: Items (evenly spaced in item order) that choose the slope; all items when there are fewer.
SLOPE_ITEMS = 20_000
#: Items per block in the grid computations (bounds memory on very large tables).
BLOCK = 100_000


def grid_for(theta: np.ndarray, a: float) -> np.ndarray:
    """:data:`GRID_POINTS` difficulties from the lowest ability − GRID_REACH / a to the highest + GRID_REACH / a."""
    lo, hi = float(np.min(theta)), float(np.max(theta))
    return np.linspace(lo - GRID_REACH / a, hi + GRID_REACH / a, GRID_POINTS)


def log_lik(sy: np.ndarray, syt: np.ndarray, sp: np.ndarray, a: float, grid: np.ndarray) -> np.ndarray:
    """ln Π_m σ(a(θ_m − b))^y (1 − σ)^(1 − y) on the grid: a Σyθ − a b Σy − Σ softplus(a(θ − b))."""
    return a * syt[:, None] - a * grid[None, :] * sy[:, None] - sp


def em_prior(parts: Iterable[np.ndarray], n_grid: int,
             iterations: int = EM_ITERATIONS) -> tuple[np.ndarray, float, np.ndarray]:
    """Nonparametric ML prior on the grid (EM), the total log marginal likelihood, and each row's.

    Each block of log-likelihoods (rows × grid) is exponentiated once, shifted by its row
    maximum, *in place* (the blocks are consumed); an EM step is then two matrix-vector
    products per block.

    Returns
    -------
    log_prior : numpy.ndarray
        ln of the prior weights on the grid.
    total : float
        Σ over rows of ln Σ_g prior_g L_g.
    per_row : numpy.ndarray
        ln Σ_g prior_g L_g for every row, in order.
    """
    scaled = []
    for ll in parts:
        top = ll.max(axis=1)
        ll -= top[:, None]
        np.exp(ll, out=ll)
        scaled.append((ll, top))
    prior = np.full(n_grid, 1.0 / n_grid)
    for _ in range(iterations):
        weight = np.zeros(n_grid)
        for e, _top in scaled:
            weight += e.T @ (1.0 / (e @ prior))
        prior = prior * weight
        prior = np.maximum(prior / prior.sum(), 1e-300)
    per_row = np.concatenate([top + np.log(e @ prior) for e, top in scaled]) if scaled else np.zeros(0)
    return np.log(prior), float(per_row.sum()), per_row


def marginal(ll: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """ln Σ_g prior_g exp(ll_g) per row (ll: rows × grid), stably."""
    top = ll.max(axis=1)
    with np.errstate(divide="ignore"):
        return top + np.log(np.exp(ll - top[:, None]) @ prior)


def blocks(n: int, size: int = BLOCK) -> list[slice]:
    """Slices of at most ``size`` rows covering 0 … n − 1."""
    return [slice(start, min(start + size, n)) for start in range(0, max(n, 1), size)]


def choose_slope(model_group: pd.DataFrame, t: pd.DataFrame) -> tuple[float, np.ndarray]:
    """The slope in :data:`SLOPES` with the highest marginal likelihood of the scored responses.

    For the choice of a only, every model of a group is taken to have every item of it
    (so Σ softplus is a per-group constant), and at most :data:`SLOPE_ITEMS` items, evenly
    spaced in item order, are used; the audit itself uses the exact sums of every item.
    """
    mg = model_group
    theta = mg["theta"].to_numpy(dtype=float)
    groups = pd.Index(pd.unique(mg["group"]))
    group_of_row = groups.get_indexer(mg["group"])
    chosen = np.unique(np.linspace(0, len(t) - 1, min(len(t), SLOPE_ITEMS)).astype(np.int64))
    item_group = groups.get_indexer(t["group"].to_numpy(dtype=object)[chosen])
    sx = t["sx"].to_numpy(dtype=float)[chosen]
    sxt = t["sxtheta"].to_numpy(dtype=float)[chosen]
    best = (-np.inf, SLOPES[0], grid_for(theta, SLOPES[0]))
    for a in SLOPES:
        grid = grid_for(theta, a)
        per_group = np.zeros((len(groups), len(grid)))
        np.add.at(per_group, group_of_row, softplus(a * (theta[:, None] - grid[None, :])))
        parts = [log_lik(sx[b], sxt[b], per_group[item_group[b]], a, grid) for b in blocks(len(chosen))]
        _, total, _ = em_prior(parts, len(grid), iterations=10)
        if total > best[0]:
            best = (total, a, grid)
    return best[1], best[2]
