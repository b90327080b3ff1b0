"""The likelihood pieces of the flawed-item mixture (:mod:`jagged.stats.flaw`).

* :func:`choice_matrix` — the chosen options as codes (models × items), each item's key,
  its valid options and the option labels.
* :func:`trait_abilities` — each model's ability in each trait of a 2PL fit.
* :func:`option_logliks` — for every item, option o and point g of the parameter grid,
  ln p(responses | o is the true answer, (a, c) = grid point g): the choosers of o follow
  the 2PL with a guessing floor, q = γ + (1 − γ) σ(a θ + c), as matrix products.
* :func:`option_mixture` — the same mixed over the grid with weights G, block by block
  (the items × options × grid array is never held whole).
* :func:`dirmult` / :func:`rest_dirmult` — Dirichlet(κ)-multinomial sequence
  probabilities of the choices that do not follow the 2PL.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import gammaln

from jagged.stats.irt import IRTFit, ResponseMatrix
from jagged.stats.parallel import thread_map


def choice_matrix(table: pd.DataFrame, mat: ResponseMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Option codes (models × items; −1 no row, L no answer or invalid), the key code, valid options, labels."""
    m = pd.Index(mat.models).get_indexer(table["model"].astype(str))
    i = pd.Index(mat.items).get_indexer(table["item"].astype(str))
    choice = table["choice"].astype("string").fillna("").str.strip()
    key = table["key"].astype("string").fillna("").str.strip()
    names = pd.unique(pd.concat([choice, key], ignore_index=True).to_numpy(dtype=object))
    labels = np.array(sorted(str(x) for x in names if x), dtype=object)
    letters = all(len(x) == 1 and "A" <= x <= "Z" for x in labels)
    if letters and len(labels):
        labels = np.array([chr(65 + k) for k in range(max(ord(x) - 64 for x in labels))], dtype=object)
    n_lab = len(labels)
    lab_index = pd.Index(labels)
    code = lab_index.get_indexer(choice.to_numpy(dtype=object))
    code = np.where(code >= 0, code, n_lab).astype(np.int16)
    codes = np.full((len(mat.models), len(mat.items)), -1, dtype=np.int16)
    codes[m, i] = code
    key_code = lab_index.get_indexer(key.to_numpy(dtype=object))
    kc = pd.DataFrame({"i": i, "k": key_code})
    kc = kc[kc["k"] >= 0]
    majority = kc.groupby(["i", "k"]).size().reset_index(name="n").sort_values(["i", "n", "k"],
                                                                                ascending=[True, False, True])
    item_key = np.full(len(mat.items), -1)
    first = majority.drop_duplicates("i")
    item_key[first["i"].to_numpy()] = first["k"].to_numpy()
    valid = np.zeros((len(mat.items), n_lab), dtype=bool)
    if letters:
        # options A.. up to n_options; without it (or where missing), up to the last letter seen or keyed
        k_opt = np.full(len(mat.items), np.nan)
        if "n_options" in table.columns:
            n_opt = pd.to_numeric(table["n_options"], errors="coerce").groupby(i).max()
            k_opt[n_opt.index.to_numpy()] = n_opt.to_numpy()
        seen = np.where(codes < n_lab, codes, -1).max(axis=0)
        k_opt = np.where(np.isfinite(k_opt), k_opt, np.maximum(seen, item_key) + 1)
        valid = np.arange(n_lab)[None, :] < k_opt[:, None]
    else:
        seen_rows = code < n_lab
        valid[i[seen_rows], code[seen_rows]] = True
        ok = key_code >= 0
        valid[i[ok], key_code[ok]] = True
    valid[np.arange(len(mat.items))[item_key >= 0], item_key[item_key >= 0]] = True
    # a choice outside the item's options counts as "no answer or invalid"
    inval = (codes >= 0) & (codes < n_lab)
    rows, cols = np.nonzero(inval)
    bad = ~valid[cols, codes[rows, cols]]
    codes[rows[bad], cols[bad]] = n_lab
    return codes, item_key, valid, labels


def _log_q(theta: np.ndarray, grid_a: np.ndarray, grid_c: np.ndarray, guess: np.ndarray,
           sign: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """ln q and ln(1 − q) (models × grid) for q = γ_g + (1 − γ_g) σ(±a_g θ + c_g)."""
    z = sign * theta[:, None] * grid_a[None, :] + grid_c[None, :]
    log_s, log_1s = -np.logaddexp(0, -z), -np.logaddexp(0, z)
    with np.errstate(divide="ignore"):
        log_g, log_1g = np.log(guess)[None, :], np.log1p(-guess)[None, :]
    return np.logaddexp(log_g, log_1g + log_s), log_1g + log_1s


def option_logliks(indicators: np.ndarray, w: np.ndarray, theta: np.ndarray, guess: np.ndarray,
                   grid_a: np.ndarray, grid_c: np.ndarray, sign: float = 1.0,
                   item_group: np.ndarray | None = None, grid_g: np.ndarray | None = None) -> np.ndarray:
    """ln Π_m q^x (1 − q)^(w − x) per item, option and grid point (items × options × grid, float32).

    ``indicators[m, j, o]`` is 1 where model m chose option o of item j (or, with one
    "option", ``correct``); ``theta`` the abilities (models, or models × traits with
    ``item_group`` the trait of each item); ``guess`` the floor 1/K_j per item and
    ``grid_g`` the share of it at each grid point (γ_jg = guess_j · grid_g; default 1). Computed as
    xᵀ [ln q − ln(1 − q)] + wᵀ ln(1 − q): one matrix product per trait and distinct floor.
    """
    n_models, n_items, n_opt = indicators.shape
    out = np.empty((n_items, n_opt, len(grid_a)), dtype=np.float32)
    for key, cols in _pairs(item_group, guess, n_items):
        out[cols] = _block(key, cols, indicators, w, theta, grid_a, grid_c, sign, grid_g)
    return out


def option_mixture(indicators: np.ndarray, w: np.ndarray, theta: np.ndarray, guess: np.ndarray,
                   grid_a: np.ndarray, grid_c: np.ndarray, weights: np.ndarray, sign: float = 1.0,
                   item_group: np.ndarray | None = None, grid_g: np.ndarray | None = None) -> np.ndarray:
    """ln Σ_g G_g Π_m q_g^x (1 − q_g)^(w − x) per item and option (items × options, float).

    :func:`option_logliks` mixed over the grid with the weights ``weights`` (G, summing to
    1), one block of items (a trait and floor) at a time, the blocks spread over the
    cores (:func:`jagged.stats.parallel.thread_map`): the items × options × grid array is
    never held whole (on a large benchmark it is the biggest array of the posterior).
    Each block is scaled by its largest term before exponentiating (float32), so
    ln Σ_g G_g e^(ℓ_g) = max ℓ + ln Σ_g G_g e^(ℓ_g − max ℓ); −inf where every term is −inf
    or G gives them no weight.
    """
    n_models, n_items, n_opt = indicators.shape
    g32 = np.asarray(weights, dtype=np.float32)

    def mixed(pair: tuple[tuple[int, float], np.ndarray]) -> np.ndarray:
        block = _block(*pair, indicators, w, theta, grid_a, grid_c, sign, grid_g)
        top = block.max(axis=-1)
        top = np.where(np.isfinite(top), top, 0.0).astype(np.float32)
        block -= top[..., None]
        np.exp(block, out=block)
        with np.errstate(divide="ignore"):
            return top + np.log((block @ g32).astype(float))

    pairs = _pairs(item_group, guess, n_items)
    out = np.empty((n_items, n_opt))
    for (_, cols), values in zip(pairs, thread_map(mixed, pairs, sizes=[len(c) for _, c in pairs]), strict=True):
        out[cols] = values
    return out


def _pairs(item_group: np.ndarray | None, guess: np.ndarray,
           n_items: int) -> list[tuple[tuple[int, float], np.ndarray]]:
    """The items of each (trait, floor): ``[((trait, floor), item indices), ...]``."""
    item_group = np.zeros(n_items, dtype=int) if item_group is None else item_group
    return list(pd.DataFrame({"g": item_group, "q": guess}).groupby(["g", "q"]).indices.items())


def _block(key: tuple[int, float], cols: np.ndarray, indicators: np.ndarray, w: np.ndarray, theta: np.ndarray,
           grid_a: np.ndarray, grid_c: np.ndarray, sign: float, grid_g: np.ndarray | None) -> np.ndarray:
    """The log-likelihoods of the items ``cols`` of one (trait, floor): items × options × grid (float32)."""
    n_models, _, n_opt = indicators.shape
    g, gamma = key
    share = np.ones(len(grid_a)) if grid_g is None else grid_g
    lq, l1q = _log_q(theta.reshape(n_models, -1)[:, g], grid_a, grid_c, float(gamma) * share, sign)
    base = (w[:, cols].T @ l1q.astype(np.float32))[:, None, :]
    x = indicators[:, cols, :].reshape(n_models, -1)
    block = (x.T @ (lq - l1q).astype(np.float32)).reshape(len(cols), n_opt, -1)
    block += base
    return block


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


def dirmult(counts: np.ndarray, n_cat: np.ndarray, kappa: float = 1.0) -> np.ndarray:
    """ln of a sequence's Dirichlet(κ)-multinomial probability over C categories (counts: … × C').

    ln Γ(Cκ) − ln Γ(n + Cκ) + Σ_c [ln Γ(n_c + κ) − ln Γ(κ)]; with κ = 1, ln Γ(C) − ln Γ(n + C) +
    Σ ln Γ(n_c + 1) (a Pólya urn). Empty categories add nothing, so ``counts`` may list
    fewer than C.
    """
    n = counts.sum(axis=-1)
    return (gammaln(n_cat * kappa) - gammaln(n + n_cat * kappa)
            + (gammaln(counts + kappa) - gammaln(kappa)).sum(axis=-1))


def rest_dirmult(counts: np.ndarray, valid: np.ndarray, kappa: float) -> np.ndarray:
    """For every item and option o: :func:`dirmult` of the choices other than o over the other categories.

    ``counts``: items × (L + 1) (the last column "no answer or invalid"); ``valid``: items × L.
    Options that are not valid get −inf.
    """
    n_cat = valid.sum(axis=1) + 1.0  # the item's options and "no answer or invalid"
    n = counts.sum(axis=1)
    lab = counts[:, :-1]
    all_terms = (gammaln(counts + kappa) - gammaln(kappa)).sum(axis=1)
    out = (gammaln((n_cat - 1)[:, None] * kappa) - gammaln((n[:, None] - lab) + (n_cat - 1)[:, None] * kappa)
           + all_terms[:, None] - (gammaln(lab + kappa) - gammaln(kappa)))
    return np.where(valid, out, -np.inf)
