"""The item audit's suspicion score: how likely each item's key is wrong, from a response model with the
difficulty integrated out.

See the Notes of :func:`jagged.stats.item_audit.item_audit` ("Suspicion") for the model.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import gammaln

from jagged.stats.item_model import blocks, choose_slope, em_prior, log_lik, marginal
from jagged.stats.item_sums import ItemSums

#: Dirichlet concentration of the "did not know" choice distribution.
DIRICHLET = 1.0
#: Items per block of the choice score (each block holds its options × the grid).
CHOICE_BLOCK = 20_000

# ---------------------------------------------------------------------------------------
# The suspicion score: a response model with the difficulty integrated out


def _dirichlet_multinomial(total: np.ndarray, lg_sum: np.ndarray, categories: np.ndarray) -> np.ndarray:
    """ln of the Dirichlet(α)-multinomial probability of a sequence with these counts."""
    return gammaln(categories * DIRICHLET) - gammaln(total + categories * DIRICHLET) + lg_sum


def item_suspicion(sums: ItemSums, t: pd.DataFrame, key: np.ndarray, choice_ok: np.ndarray, nopt: np.ndarray,
               options: pd.DataFrame) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(slope, grid, prior, suspicion, likely_key) per item; see the Notes of :func:`item_audit`."""
    a, grid = choose_slope(sums.model_group, t)
    sp = sums.softplus(a, grid)
    n = t["n"].to_numpy(dtype=float)
    sx = t["sx"].to_numpy(dtype=float)
    sxt = t["sxtheta"].to_numpy(dtype=float)
    st = t["stheta"].to_numpy(dtype=float)
    parts = [log_lik(sx[b], sxt[b], sp[b], a, grid) for b in blocks(len(t))]
    log_prior, _, l_sound = em_prior(parts, len(grid))  # consumes the blocks
    del parts
    prior = np.exp(log_prior)
    # reversed item: σ(−a(θ − b)); Σ softplus(−a(θ − b)) = Σ softplus(a(θ − b)) − a Σθ + a b n
    l_rev = np.concatenate([
        marginal(-a * sxt[b, None] + a * grid[None, :] * sx[b, None]
                  - (sp[b] - a * st[b, None] + a * grid[None, :] * n[b, None]), prior)
        for b in blocks(len(t))])
    l_flat = gammaln(sx + 1) - gammaln(n + 2) + gammaln(n - sx + 1)
    suspicion = np.logaddexp(l_rev, l_flat) - np.log(2.0) - l_sound
    likely = np.full(len(t), None, dtype=object)
    if choice_ok.any() and len(options):
        s_choice, likely_choice = _choice_suspicion(options, t, key, nopt, a, grid, sp, prior)
        suspicion = np.where(choice_ok, s_choice, suspicion)
        likely = np.where(choice_ok, likely_choice, None)
    return a, grid, np.exp(log_prior), suspicion, likely


def _choice_suspicion(options: pd.DataFrame, t: pd.DataFrame, key: np.ndarray, nopt: np.ndarray, a: float,
                      grid: np.ndarray, sp: np.ndarray, prior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The choice version of the score (hypotheses H_j, H_flat; see :func:`item_audit`), in blocks of items.

    ``options`` is the audit's option table (rows sorted by item position, then label).
    """
    n_items = len(t)
    suspicion = np.full(n_items, np.nan)
    likely = np.full(n_items, None, dtype=object)
    pos_all = options["_pos"].to_numpy()
    option = options["option"]
    label_all = (np.asarray(option.cat.categories, dtype=object)[np.maximum(option.cat.codes.to_numpy(), 0)]
                 if isinstance(option.dtype, pd.CategoricalDtype) and len(option.cat.categories)
                 else option.to_numpy(dtype=object))  # "no answer" rows are never valid, so their label is unused
    valid_all = options["valid"].to_numpy(dtype=bool)
    is_key_all = options["is_key"].to_numpy(dtype=bool)
    count_all = options["n_chose"].to_numpy(dtype=float)
    st_all = options["_stheta"].to_numpy(dtype=float)
    n_all = t["n"].to_numpy(dtype=float)
    for b in blocks(n_items, CHOICE_BLOCK):
        lo, hi = np.searchsorted(pos_all, [b.start, b.stop])
        pos = pos_all[lo:hi] - b.start
        label, valid, is_key = label_all[lo:hi], valid_all[lo:hi], is_key_all[lo:hi] & valid_all[lo:hi]
        count, st = count_all[lo:hi], st_all[lo:hi]
        m = b.stop - b.start
        n, spb, key_b, nopt_b = n_all[b], sp[b], key[b], nopt[b]
        # options of the item: n_options where known, else the valid labels seen (and the key)
        seen = np.bincount(pos[valid], minlength=m)
        key_seen = np.bincount(pos[is_key], minlength=m) > 0
        n_opt = np.maximum(np.where(np.isfinite(nopt_b), nopt_b, 0), seen + (~key_seen & pd.notna(key_b))).astype(float)
        categories = n_opt + 2  # the options, "no answer" and "invalid"
        lg = gammaln(count + DIRICHLET) - gammaln(DIRICHLET)
        lg_all = np.bincount(pos, lg, m)
        l_flat = _dirichlet_multinomial(n, lg_all, categories)
        # sound marginal of the choosers of each option, and of "nobody chose it"
        l_choose = marginal(log_lik(count, st, spb[pos], a, grid), prior) if len(pos) else np.zeros(0)
        l_j = l_choose + _dirichlet_multinomial(n[pos] - count, lg_all[pos] - lg, categories[pos] - 1)
        l_unseen = marginal(-spb, prior) + _dirichlet_multinomial(n, lg_all, categories - 1)
        l_key = l_unseen.copy()
        l_key[pos[is_key]] = l_j[is_key]
        alt = valid & ~is_key
        n_alt_seen = np.bincount(pos[alt], minlength=m)
        n_unseen = np.maximum(n_opt - 1 - n_alt_seen, 0)
        top = l_unseen.copy()
        np.maximum.at(top, pos[alt], l_j[alt])
        mass = np.bincount(pos[alt], np.exp(l_j[alt] - top[pos[alt]]), m) + n_unseen * np.exp(l_unseen - top)
        n_alt = n_alt_seen + n_unseen
        with np.errstate(divide="ignore"):
            l_alt = np.where(n_alt > 0, top + np.log(mass) - np.log(np.maximum(n_alt, 1)), -np.inf)
        suspicion[b] = np.logaddexp(l_flat, l_alt) - np.log(2.0) - l_key
        rows = np.flatnonzero(valid)
        order = rows[np.lexsort((-l_j[rows], pos[rows]))]  # stable: ties keep label order
        first = order[np.r_[True, pos[order][1:] != pos[order][:-1]]] if len(order) else order
        likely[b.start + pos[first]] = label[first]
    return suspicion, likely
