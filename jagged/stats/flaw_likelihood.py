"""The likelihood pieces of the flawed-item model (:mod:`jagged.stats.flaw`).

* :func:`choice_matrix` — the chosen options as codes (models × items), each item's key,
  its valid options and the option labels;
* :func:`trait_abilities` — each model's ability in each trait of a 2PL fit;
* :class:`Grid` — the points (slope a, intercept c, guessing share s) a knowing
  probability q = γ + (1 − γ) σ(a θ + c), γ = s / K, is integrated over;
* :class:`GridTerms` — the terms of those likelihoods per block of items (a trait and a
  floor), computed once;
* :func:`grid_loglik` — ln Π_m q^x (1 − q)^(w − x) per item, option and grid point (float32),
  as matrix products, one block at a time;
* :func:`mixed_loglik` — the same mixed over the grid with per-item weights, block by block,
  so that the items × options × grid array is never held whole;
* :func:`rest_dirmult` — the Dirichlet(κ)-multinomial probability of the choices that do not
  follow the 2PL, for every item and option.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import gammaln

from jagged.stats.irt import IRTFit, ResponseMatrix
from jagged.stats.parallel import thread_map

#: Items per block of :func:`grid_loglik` (bounds a block to items × options × grid float32 values).
BLOCK_ITEMS = 2048


@dataclass(frozen=True)
class Grid:
    """Flattened grid points: slope ``a``, intercept ``c`` and guessing share ``s`` (γ = s / K)."""

    a: np.ndarray
    c: np.ndarray
    s: np.ndarray

    @classmethod
    def of(cls, slopes: np.ndarray, intercepts: np.ndarray, shares: np.ndarray) -> Grid:
        """The product grid, slopes slowest, shares fastest."""
        a, c, s = np.meshgrid(slopes, intercepts, shares, indexing="ij")
        return cls(a.ravel(), c.ravel(), s.ravel())


def choice_matrix(table: pd.DataFrame, mat: ResponseMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Option codes (models × items; −1 no row, L no answer or invalid), the key code, valid options, labels.

    The key of an item is its most frequent key over the rows (ties: the first label; −1
    without one). Single capital letters are options A … up to ``n_options`` (else up to
    the last letter chosen or keyed); other labels are options of the items where they are
    chosen or keyed. A choice that is not a valid option of its item counts as "no answer".
    """
    m = pd.Index(mat.models).get_indexer(table["model"].astype(str))
    i = pd.Index(mat.items).get_indexer(table["item"].astype(str))
    choice = table["choice"].astype("string").fillna("").str.strip()
    key = table["key"].astype("string").fillna("").str.strip()
    names = pd.unique(pd.concat([choice, key], ignore_index=True).to_numpy(dtype=object))
    labels = np.array(sorted(str(x) for x in names if x), dtype=object)
    letters = all(len(x) == 1 and "A" <= x <= "Z" for x in labels)
    if letters and len(labels):
        labels = np.array([chr(65 + k) for k in range(max(ord(x) - 64 for x in labels))], dtype=object)
    n_lab, n_items = len(labels), len(mat.items)
    lab_index = pd.Index(labels)
    code = lab_index.get_indexer(choice.to_numpy(dtype=object))
    code = np.where(code >= 0, code, n_lab).astype(np.int16)
    codes = np.full((len(mat.models), n_items), -1, dtype=np.int16)
    codes[m, i] = code
    key_code = lab_index.get_indexer(key.to_numpy(dtype=object))
    kc = pd.DataFrame({"i": i, "k": key_code})
    kc = kc[kc["k"] >= 0].groupby(["i", "k"]).size().reset_index(name="n")
    first = kc.sort_values(["i", "n", "k"], ascending=[True, False, True]).drop_duplicates("i")
    item_key = np.full(n_items, -1)
    item_key[first["i"].to_numpy()] = first["k"].to_numpy()
    if letters:
        k_opt = np.full(n_items, np.nan)
        if "n_options" in table.columns:
            n_opt = pd.to_numeric(table["n_options"], errors="coerce").groupby(i).max()
            k_opt[n_opt.index.to_numpy()] = n_opt.to_numpy()
        seen = np.where(codes < n_lab, codes, -1).max(axis=0)
        k_opt = np.where(np.isfinite(k_opt), k_opt, np.maximum(seen, item_key) + 1)
        valid = np.arange(n_lab)[None, :] < k_opt[:, None]
    else:
        valid = np.zeros((n_items, n_lab), dtype=bool)
        seen_rows = code < n_lab
        valid[i[seen_rows], code[seen_rows]] = True
        ok = key_code >= 0
        valid[i[ok], key_code[ok]] = True
    keyed = np.flatnonzero(item_key >= 0)
    valid[keyed, item_key[keyed]] = True
    rows, cols = np.nonzero((codes >= 0) & (codes < n_lab))
    bad = ~valid[cols, codes[rows, cols]]
    codes[rows[bad], cols[bad]] = n_lab
    return codes, item_key, valid, labels


def trait_abilities(fit: IRTFit, mat: ResponseMatrix) -> tuple[np.ndarray, np.ndarray]:
    """θ per model and trait (models × traits; 0 where the model has none there) and each item's trait index."""
    groups = fit.items.set_index("item").reindex(mat.items)["group"].astype(str).to_numpy(dtype=object)
    g_index = pd.Index(pd.unique(groups))
    ab = fit.abilities
    table = np.zeros((len(mat.models), len(g_index)))
    mi = pd.Index(mat.models).get_indexer(ab["model"].astype(str))
    gi = g_index.get_indexer(ab["group"].astype(str))
    keep = (mi >= 0) & (gi >= 0)
    table[mi[keep], gi[keep]] = np.nan_to_num(ab["theta"].to_numpy(dtype=float)[keep])
    return table, g_index.get_indexer(groups)


def log_q(theta: np.ndarray, grid: Grid, floor: float | np.ndarray, sign: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """ln q and ln(1 − q) (rows × grid) for q = γ + (1 − γ) σ(±a θ + c), γ = s · floor.

    ``theta`` and ``floor`` are per row (``floor`` may be one number): a model's abilities,
    or one model's ability in each item's trait with each item's floor.
    """
    z = sign * theta[:, None] * grid.a[None, :] + grid.c[None, :]
    gamma = grid.s[None, :] * np.reshape(floor, (-1, 1))
    with np.errstate(divide="ignore"):
        log_g, log_1g = np.log(gamma), np.log1p(-gamma)
    return np.logaddexp(log_g, log_1g - np.logaddexp(0, -z)), log_1g - np.logaddexp(0, z)


class GridTerms:
    """The per-block terms of the grid likelihoods: ln q − ln(1 − q) and ln(1 − q) (models × grid, float32).

    One block is the items of one trait and guessing floor (at most :data:`BLOCK_ITEMS`);
    the terms are computed once per (trait, floor) and shared by every likelihood that uses
    the same abilities.

    Parameters
    ----------
    theta : numpy.ndarray
        Abilities, models × traits.
    item_group : numpy.ndarray
        Each item's trait (column of ``theta``).
    floor : numpy.ndarray
        Each item's 1/K (0: no guessing).
    grid : Grid
        The grid points.
    sign : float
        −1 for the sign-flipped item (knowing falls with ability).
    """

    def __init__(self, theta: np.ndarray, item_group: np.ndarray, floor: np.ndarray, grid: Grid,
                 sign: float = 1.0) -> None:
        self.n_grid = len(grid.a)
        self.blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for (g, f), cols in pd.DataFrame({"g": item_group, "f": floor}).groupby(["g", "f"]).indices.items():
            lq, l1q = log_q(theta[:, int(g)], grid, float(f), sign)
            diff, l1q = (lq - l1q).astype(np.float32), l1q.astype(np.float32)
            self.blocks += [(cols[k:k + BLOCK_ITEMS], diff, l1q) for k in range(0, len(cols), BLOCK_ITEMS)]

    def loglik(self, x: np.ndarray, w: np.ndarray, block: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        """The log-likelihoods of one block's items: items × options × grid (float32)."""
        cols, diff, l1q = block
        out = (x[:, cols, :].reshape(x.shape[0], -1).T @ diff).reshape(len(cols), x.shape[2], -1)
        out += (w[:, cols].T @ l1q)[:, None, :]
        return out


def grid_loglik(x: np.ndarray, w: np.ndarray, terms: GridTerms) -> np.ndarray:
    """ln Π_m q^x (1 − q)^(w − x) for every item, option and grid point (items × options × grid, float32).

    ``x[m, j, o]`` is 1 where model m chose option o of item j (or, with one "option", its
    ``correct``), ``w`` 1 where it has the item. Computed as xᵀ [ln q − ln(1 − q)] +
    wᵀ ln(1 − q): one matrix product per block of ``terms``.
    """
    out = np.empty((x.shape[1], x.shape[2], terms.n_grid), dtype=np.float32)
    for block in terms.blocks:
        out[block[0]] = terms.loglik(x, w, block)
    return out


def mixed_loglik(x: np.ndarray, w: np.ndarray, terms: GridTerms, weights: np.ndarray) -> np.ndarray:
    """ln Σ_g G_jg Π_m q_g^x (1 − q_g)^(w − x) per item and option (items × options), G_j = ``weights[j]``.

    :func:`grid_loglik` mixed over the grid one block at a time (each scaled by its largest
    term before exponentiating), the blocks spread over the cores
    (:func:`jagged.stats.parallel.thread_map`), so the items × options × grid array is never
    held whole; −inf where every term is −inf or has no weight.
    """
    def mixed(block: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        ll = terms.loglik(x, w, block)
        top = ll.max(axis=-1)
        top = np.where(np.isfinite(top), top, 0.0).astype(np.float32)
        np.exp(ll - top[..., None], out=ll)
        with np.errstate(divide="ignore"):
            return top + np.log(np.einsum("jog,jg->jo", ll, weights[block[0]].astype(np.float32)).astype(float))

    out = np.empty(x.shape[1:])
    values = thread_map(mixed, terms.blocks, sizes=[len(b[0]) for b in terms.blocks])
    for block, value in zip(terms.blocks, values, strict=True):
        out[block[0]] = value
    return out


def rest_dirmult(counts: np.ndarray, valid: np.ndarray, kappa: float) -> np.ndarray:
    """For every item and option o: ln DM(κ) of the choices of the other valid options, over those options.

    ``counts``: items × L (how many models chose each option; "no answer" is not a choice
    and not counted). ln DM(n; C, κ) = ln Γ(Cκ) − ln Γ(N + Cκ) + Σ_c [ln Γ(n_c + κ) − ln Γ(κ)]
    with C = (valid options) − 1 and N the choices of the others; −inf where o is not valid;
    0 where o is the only option (nothing else to choose).
    """
    n_cat = valid.sum(axis=1).astype(float) - 1.0
    terms = gammaln(counts + kappa) - gammaln(kappa)
    n = counts.sum(axis=1)
    with np.errstate(invalid="ignore"):
        out = (gammaln(np.maximum(n_cat, 1.0) * kappa)[:, None] - gammaln((n[:, None] - counts)
                                                                          + np.maximum(n_cat, 1.0)[:, None] * kappa)
               + terms.sum(axis=1)[:, None] - terms)
    out = np.where((n_cat > 0)[:, None], out, 0.0)
    return np.where(valid, out, -np.inf)
