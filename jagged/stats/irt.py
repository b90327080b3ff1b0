"""The two-parameter logistic (2PL) item response model, fitted by marginal maximum likelihood.

A model with ability θ answers item j correctly with probability P_j(θ) = σ(a_j θ + c_j)
(slope–intercept form); the difficulty is b_j = −c_j / a_j and the standardised loading
the normal-ogive approximation λ_j = α_j / √(1 + α_j²), α_j = a_j / 1.702.
:func:`fit_2pl` fits an item table (a trait per domain, or one for the test) with standard
errors, flags and EAP abilities; :func:`fit_2pl_matrix` fits one response matrix in memory
(float32 above :data:`FLOAT32_ABOVE` cells, E-step in blocks of :data:`BLOCK_ITEMS` items).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

from jagged.errors import JaggedInputError
from jagged.stats.parallel import thread_map
from jagged.text import Summarised

#: Normal-ogive scaling constant between logistic and probit slopes.
D_SCALE = 1.702
#: Equally spaced ability nodes on [−GRID_HALF_WIDTH, GRID_HALF_WIDTH]: fewest and most (None = chosen
#: from the items' information so that the spacing is below a model's posterior SD).
MIN_NODES = 41
MAX_NODES = 401
GRID_HALF_WIDTH = 5.0
NODES = None
#: Node spacing in posterior SDs (trapezoid error of order exp(−2π²/SPACING²) ≈ 2e-4 at 1.5).
SPACING = 1.5
#: Prior on slopes: N(SLOPE_PRIOR_MEAN, SLOPE_PRIOR_SD²). Weak: a slope of −1.5 costs 0.78 nats.
SLOPE_PRIOR_MEAN = 1.0
SLOPE_PRIOR_SD = 2.0
#: Prior on intercepts: N(0, INTERCEPT_PRIOR_SD²).
INTERCEPT_PRIOR_SD = 5.0
#: Convergence: largest absolute change of any slope or intercept over one accelerated cycle below TOL,
#: or the log posterior rising by less than REL_TOL of its size over a cycle.
TOL = 1e-4
REL_TOL = 1e-8
#: The same for float32 matrices, whose log posterior carries rounding noise of about this size.
REL_TOL_FLOAT32 = 1e-6
MAX_CYCLES = 500
#: Largest Newton step per parameter in one M-step (keeps early steps from overshooting).
MAX_STEP = 2.0
#: Matrices with more cells than this are held in float32.
FLOAT32_ABOVE = 20_000_000
#: Below this share of missing cells the mask enters as 1 − (a sparse matrix of the missing cells).
SPARSE_MISSING_BELOW = 0.25
#: Items per block of the E-step.
BLOCK_ITEMS = 4096
#: Fewest fitted items of a domain's own trait; smaller domains share one trait, named SMALL_DOMAINS.
MIN_TRAIT_ITEMS = 3
SMALL_DOMAINS = "(small domains)"
#: Flag thresholds: weak loading (rule of thumb of the seed source), extreme difficulty (PISA).
WEAK_LOADING = 0.3
EXTREME_DIFFICULTY = 5.0

#: Columns of :attr:`IRTFit.items`.
ITEM_COLUMNS: tuple[str, ...] = (
    "item", "domain", "group", "n_models", "p_correct", "slope", "se_slope", "intercept", "se_intercept",
    "difficulty", "se_difficulty", "loading", "se_loading", "flag_zero_variance", "flag_negative_loading",
    "flag_weak_loading", "flag_extreme_difficulty", "note",
)
#: Columns of :attr:`IRTFit.abilities`.
ABILITY_COLUMNS: tuple[str, ...] = ("model", "group", "n_items", "theta", "theta_sd")
#: Columns of :attr:`IRTFit.groups`.
GROUP_COLUMNS: tuple[str, ...] = ("group", "n_items", "n_fitted", "n_models", "cycles", "converged", "log_posterior")


@dataclass(frozen=True)
class ResponseMatrix:
    """An item table as matrices (rows: models, columns: items).

    ``models``, ``items`` (ids), ``domains`` (each item's), ``y`` (``correct``, 0 where
    missing), ``w`` (1.0 where the model has the item).
    """

    models: np.ndarray
    items: np.ndarray
    domains: np.ndarray
    y: np.ndarray
    w: np.ndarray


@dataclass(frozen=True)
class MatrixFit:
    """A 2PL fit of one response matrix (see :func:`fit_2pl_matrix`)."""

    slope: np.ndarray
    intercept: np.ndarray
    se_slope: np.ndarray
    se_intercept: np.ndarray
    cov_slope_intercept: np.ndarray
    theta: np.ndarray
    theta_sd: np.ndarray
    log_posterior: float
    cycles: int
    converged: bool


@dataclass(frozen=True, repr=False)
class IRTFit(Summarised):
    """A 2PL fit of an item table (:func:`fit_2pl`).

    ``items`` (:data:`ITEM_COLUMNS`), ``abilities`` (:data:`ABILITY_COLUMNS`), ``groups``
    (:data:`GROUP_COLUMNS`), ``rest`` (``"domain"`` or ``"test"``).
    """

    items: pd.DataFrame
    abilities: pd.DataFrame
    groups: pd.DataFrame
    rest: str

    def _summary(self) -> tuple[str, list[tuple[str, str]]]:
        return "IRTFit", [("model", f"2PL, a trait per {'domain' if self.rest == 'domain' else 'test'}"),
                          ("items", f"{len(self.items):,}"), ("traits", f"{len(self.groups):,}"),
                          ("models", f"{self.abilities['model'].nunique():,}")]


def response_matrix(table: pd.DataFrame) -> ResponseMatrix:
    """The model × item matrices of an item table (``model, domain, item, correct``; other columns ignored).

    Raises JaggedInputError for a missing column, ``correct`` missing or outside [0, 1], an
    item in two domains, or a (model, item) pair given twice.
    """
    missing = [c for c in ("model", "domain", "item", "correct") if c not in table.columns]
    if missing:
        raise JaggedInputError(f"<item table>: missing column(s) {', '.join(missing)}")
    correct = pd.to_numeric(table["correct"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(correct) | (correct < 0) | (correct > 1)
    if bad.any():
        value = table['correct'].iloc[np.flatnonzero(bad)[0]]
        raise JaggedInputError(f"<item table>: column 'correct' has value {value!r} "
                               "outside [0, 1]")
    m_code, models = pd.factorize(table["model"].astype(str), sort=True)
    i_code, items = pd.factorize(table["item"].astype(str), sort=True)
    dom = table["domain"].astype(str).to_numpy()
    domains = np.empty(len(items), dtype=object)
    domains[i_code] = dom
    if (domains[i_code] != dom).any():
        j = int(i_code[np.flatnonzero(domains[i_code] != dom)[0]])
        raise JaggedInputError(f"<item table>: item {items[j]!r} appears in more than one domain")
    cells = len(models) * len(items)
    dtype = np.float32 if cells > FLOAT32_ABOVE else np.float64
    w = np.zeros((len(models), len(items)), dtype=dtype)
    np.add.at(w, (m_code, i_code), 1.0)
    if (w > 1).any():
        m, j = np.argwhere(w > 1)[0]
        raise JaggedInputError(f"<item table>: model {models[m]!r} has item {items[j]!r} more than once")
    y = np.zeros_like(w)
    y[m_code, i_code] = correct
    return ResponseMatrix(np.asarray(models, dtype=object), np.asarray(items, dtype=object), domains, y, w)


def ability_grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    """n equally spaced nodes on [−5, 5] and their N(0, 1) weights (summing to 1): the trapezoid rule."""
    x = np.linspace(-GRID_HALF_WIDTH, GRID_HALF_WIDTH, n)
    w = np.exp(-0.5 * x ** 2)
    return x, w / w.sum()


def nodes_for(w: np.ndarray, slope: np.ndarray) -> int:
    """Nodes so that the spacing is at most :data:`SPACING` posterior SDs of a well-measured model.

    The posterior SD is 1 / √(1 + 0.2 Σ_j a_j²) at the 90th percentile of Σ_j W_mj a_j² over
    models; clipped to [:data:`MIN_NODES`, :data:`MAX_NODES`].
    """
    info = np.quantile(w @ (slope ** 2).astype(w.dtype), 0.9) if w.size else 0.0
    sd = 1.0 / np.sqrt(1.0 + 0.2 * float(info))
    return int(np.clip(np.ceil(2 * GRID_HALF_WIDTH / (SPACING * sd)) + 1, MIN_NODES, MAX_NODES))


class _Mask:
    """The float mask W, or 1 − M with M the sparse matrix of missing cells (when few are missing).

    W·S = 1·colsum(S) − M·S: a dense product becomes a broadcast and a sparse product.
    """

    def __init__(self, w: np.ndarray) -> None:
        self.w = w
        missing = w.size - np.count_nonzero(w)
        self.sparse = None
        if w.size and missing / w.size < SPARSE_MISSING_BELOW:
            from scipy import sparse

            self.sparse = sparse.csc_matrix((w == 0).astype(w.dtype))

    def times(self, sl: slice, s: np.ndarray) -> np.ndarray:
        """W[:, sl] @ s (models × Q)."""
        if self.sparse is None:
            return self.w[:, sl] @ s
        return s.sum(axis=0)[None, :] - self.sparse[:, sl] @ s

    def t_times(self, sl: slice, p: np.ndarray) -> np.ndarray:
        """W[:, sl]ᵀ @ p (items × Q)."""
        if self.sparse is None:
            return self.w[:, sl].T @ p
        return p.sum(axis=0)[None, :] - self.sparse[:, sl].T @ p


def _estep(y: np.ndarray, mask: _Mask, a: np.ndarray, c: np.ndarray, nodes: np.ndarray,
           log_weights: np.ndarray, block: int) -> tuple[np.ndarray, float]:
    """Posterior over nodes per model (M × Q) and the log marginal likelihood."""
    loglik = np.zeros((y.shape[0], len(nodes)))
    for start in range(0, y.shape[1], block):
        sl = slice(start, start + block)
        z = (a[sl, None] * nodes[None, :] + c[sl, None]).astype(y.dtype)
        loglik += y[:, sl] @ z
        loglik -= mask.times(sl, np.logaddexp(0.0, z))
    loglik += log_weights[None, :]
    top = loglik.max(axis=1, keepdims=True)
    post = np.exp(loglik - top)
    total = post.sum(axis=1, keepdims=True)
    post /= total
    return post, float((top[:, 0] + np.log(total[:, 0])).sum())


def _counts(y: np.ndarray, mask: _Mask, post: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """Expected responders n_jq and expected correct r_jq at each node (J × Q)."""
    n = np.empty((y.shape[1], post.shape[1]))
    r = np.empty_like(n)
    p = post.astype(y.dtype)
    for start in range(0, y.shape[1], block):
        sl = slice(start, start + block)
        n[sl] = mask.t_times(sl, p)
        r[sl] = y[:, sl].T @ p
    return n, r


def _log_prior(a: np.ndarray, c: np.ndarray) -> float:
    return float(-0.5 * (((a - SLOPE_PRIOR_MEAN) / SLOPE_PRIOR_SD) ** 2).sum()
                 - 0.5 * ((c / INTERCEPT_PRIOR_SD) ** 2).sum())


def _mstep(a: np.ndarray, c: np.ndarray, n: np.ndarray, r: np.ndarray,
           nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One Newton step on every item's expected complete-data log posterior (2 × 2 per item, closed form)."""
    p = expit(a[:, None] * nodes[None, :] + c[:, None])
    resid = r - n * p
    info = n * p * (1.0 - p)
    g_a = resid @ nodes - (a - SLOPE_PRIOR_MEAN) / SLOPE_PRIOR_SD ** 2
    g_c = resid.sum(axis=1) - c / INTERCEPT_PRIOR_SD ** 2
    h_aa = info @ nodes ** 2 + 1.0 / SLOPE_PRIOR_SD ** 2
    h_ac = info @ nodes
    h_cc = info.sum(axis=1) + 1.0 / INTERCEPT_PRIOR_SD ** 2
    det = h_aa * h_cc - h_ac ** 2
    step_a = np.clip((h_cc * g_a - h_ac * g_c) / det, -MAX_STEP, MAX_STEP)
    step_c = np.clip((h_aa * g_c - h_ac * g_a) / det, -MAX_STEP, MAX_STEP)
    return a + step_a, c + step_c


def _start(y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starting values from the item–total correlation and the proportion correct."""
    n_item = w.sum(axis=0).astype(float)
    score = (y.sum(axis=1) / np.maximum(w.sum(axis=1), 1)).astype(float)
    p = y.sum(axis=0) / np.maximum(n_item, 1)
    mean_s = (w.T @ score) / np.maximum(n_item, 1)
    cov = (y.T @ score) / np.maximum(n_item, 1) - p * mean_s
    var_s = (w.T @ score ** 2) / np.maximum(n_item, 1) - mean_s ** 2
    r = cov / np.sqrt(np.maximum(p * (1 - p) * var_s, 1e-12))
    r = np.clip(r, -0.9, 0.9)
    a = np.clip(D_SCALE * r / np.sqrt(1 - r ** 2), -2.0, 3.0)
    pc = np.clip(p, 0.01, 0.99)
    c = np.log(pc / (1 - pc)) * np.sqrt(1 + np.pi * a ** 2 / 8)
    return a.astype(float), c.astype(float)


def fit_2pl_matrix(y: np.ndarray, w: np.ndarray, *, nodes: int | None = NODES, tol: float = TOL,
                   max_cycles: int = MAX_CYCLES, block: int = BLOCK_ITEMS) -> MatrixFit:
    """Fit the 2PL to one response matrix by Bock–Aitkin EM with SQUAREM acceleration.

    Parameters
    ----------
    y, w : numpy.ndarray
        Models × items: ``correct`` in [0, 1] (0 where missing) and the mask (1.0 where present).
    nodes : int, optional
        Equally spaced nodes on [−5, 5]; None chooses them (:func:`nodes_for`).
    tol : float
        Largest absolute parameter change over a cycle at convergence.
    max_cycles : int
        Accelerated cycles (three EM steps each).
    block : int
        Items per block of the E-step.

    Returns
    -------
    MatrixFit
        Slopes, intercepts, their SEs and covariance, EAP abilities and posterior SDs, the log
        posterior, cycles, convergence.

    Notes
    -----
    **Model.** θ_m ~ N(0, 1); P(y_mj = 1 | θ) = σ(a_j θ + c_j); priors a_j ~ N(1, 2²),
    c_j ~ N(0, 5²) (a = −1.5 costs 0.78 nats: clearly negative slopes survive, near-separated
    items stay finite).

    **Quadrature.** Equally spaced nodes with weights ∝ φ(θ_q) (trapezoid rule, error of order
    exp(−2π²σ²/h²)), spacing h at most 1.5 posterior SDs of a well-measured model (≈ 2·10⁻⁴).
    Gauss–Hermite nodes are too sparse for the narrow posteriors of hundreds of items and
    shrink the slopes.

    **E-step.** ℓ_mq = Σ_j W_mj [y_mj z_jq − log(1 + e^{z_jq})], z_jq = a_j θ_q + c_j: two
    matrix products; the posterior ω_mq ∝ π_q e^{ℓ_mq} gives the expected counts
    n_jq = Σ_m W_mj ω_mq and r_jq = Σ_m y_mj ω_mq.

    **M-step.** One Newton step per item on Σ_q [r_jq z_jq − n_jq log(1 + e^{z_jq})] + log
    prior, the 2 × 2 Hessian inverted in closed form (steps capped at ±2). SQUAREM (Varadhan &
    Roland 2008, α = −max(1, ‖r‖/‖v‖)) falls back to the plain step when the extrapolated point
    lowers the log posterior. Converged when the largest change of any a_j or c_j is below
    ``tol``, or the log posterior moves by less than :data:`REL_TOL` of its size (10⁻⁶ for
    float32 matrices, whose sums carry that much rounding).

    **Standard errors**: Louis's (1982) observed information per item (its diagonal block):
    I_j = Σ_m E[−∂²ℓ_mj] − Var[∂ℓ_mj] under each model's posterior, plus the prior's curvature.
    **Abilities**: EAP θ̂_m = Σ_q ω_mq θ_q and the posterior SD.
    """
    y = np.asarray(y)
    if y.size > FLOAT32_ABOVE and y.dtype != np.float32:
        y = y.astype(np.float32)
    w = np.asarray(w, dtype=y.dtype)
    mask = _Mask(w)
    rel_tol = REL_TOL_FLOAT32 if y.dtype == np.float32 else REL_TOL
    a, c = _start(y, w)
    theta, weights = ability_grid(nodes if nodes is not None else nodes_for(w, np.maximum(np.abs(a), 0.5)))
    logw = np.log(weights)
    n_items = len(a)

    def em(a_: np.ndarray, c_: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        post, ll = _estep(y, mask, a_, c_, theta, logw, block)
        n, r = _counts(y, mask, post, block)
        a_new, c_new = _mstep(a_, c_, n, r, theta)
        return a_new, c_new, ll + _log_prior(a_, c_)

    converged = False
    cycles = 0
    last = -np.inf
    for _ in range(max_cycles):
        cycles += 1
        x0 = np.concatenate([a, c])
        a1, c1, lp0 = em(a, c)
        a2, c2, lp1 = em(a1, c1)
        x1, x2 = np.concatenate([a1, c1]), np.concatenate([a2, c2])
        r_vec, v_vec = x1 - x0, x2 - 2 * x1 + x0
        nv = np.linalg.norm(v_vec)
        alpha = -max(1.0, np.linalg.norm(r_vec) / nv) if nv > 0 else -1.0
        xp = x0 - 2 * alpha * r_vec + alpha ** 2 * v_vec
        a3, c3, lpp = em(xp[:n_items], xp[n_items:])
        if not np.isfinite(lpp) or lpp < lp1:
            a3, c3, _ = em(a2, c2)
        change = float(np.max(np.abs(np.concatenate([a3, c3]) - x0))) if n_items else 0.0
        a, c = a3, c3
        if change < tol or abs(lp0 - last) < rel_tol * abs(lp0):
            converged = True
            break
        last = lp0
    post, ll = _estep(y, mask, a, c, theta, logw, block)
    n, r = _counts(y, mask, post, block)
    se_a, se_c, cov_ac = _louis_se(y, w, a, c, post, n, r, theta, block)
    eap = post @ theta
    sd = np.sqrt(np.maximum(post @ theta ** 2 - eap ** 2, 0.0))
    return MatrixFit(a, c, se_a, se_c, cov_ac, eap, sd, ll + _log_prior(a, c), cycles, converged)


def _louis_se(y: np.ndarray, w: np.ndarray, a: np.ndarray, c: np.ndarray, post: np.ndarray, n: np.ndarray,
              r: np.ndarray, theta: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-item Louis observed information → SE(a), SE(c), cov(a, c)."""
    p = expit(a[:, None] * theta[None, :] + c[:, None])
    info = n * p * (1 - p)
    # E[s s^T] summed over models: Σ_q Σ_m ω_mq W_mj (y_mj − P_jq)² (θ², θ, 1);
    # for y in {0, 1} (and as the quasi-likelihood value for partial credit) Σ_m ω W (y − P)² = r(1 − 2P) + n P².
    sq = r * (1 - 2 * p) + n * p ** 2
    e_aa = info @ theta ** 2 - sq @ theta ** 2
    e_ac = info @ theta - sq @ theta
    e_cc = info.sum(axis=1) - sq.sum(axis=1)
    # + Σ_m E[s] E[s]^T with E_m[s] = W (y (Eθ, 1) − Σ_q ω P (θ, 1))
    eap = post @ theta
    pt = post.astype(y.dtype)
    for start in range(0, y.shape[1], block):
        sl = slice(start, start + block)
        e0 = y[:, sl] - w[:, sl] * (pt @ p[sl].T.astype(y.dtype))
        e1 = y[:, sl] * eap[:, None].astype(y.dtype) - w[:, sl] * (pt @ (p[sl] * theta[None, :]).T.astype(y.dtype))
        e_aa[sl] += (e1 * e1).sum(axis=0)
        e_ac[sl] += (e1 * e0).sum(axis=0)
        e_cc[sl] += (e0 * e0).sum(axis=0)
    h_aa = e_aa + 1 / SLOPE_PRIOR_SD ** 2
    h_cc = e_cc + 1 / INTERCEPT_PRIOR_SD ** 2
    det = h_aa * h_cc - e_ac ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = (det > 0) & (h_aa > 0) & (h_cc > 0)
        var_a = np.where(ok, h_cc / det, np.nan)
        var_c = np.where(ok, h_aa / det, np.nan)
        cov = np.where(ok, -e_ac / det, np.nan)
    return np.sqrt(var_a), np.sqrt(var_c), cov


def loading_of(slope: np.ndarray | float) -> np.ndarray:
    """Standardised loading λ = (a/1.702) / √(1 + (a/1.702)²) (normal-ogive approximation)."""
    u = np.asarray(slope, dtype=float) / D_SCALE
    return u / np.sqrt(1 + u ** 2)


def fit_2pl(table: pd.DataFrame | ResponseMatrix, *, rest: str = "domain", nodes: int | None = NODES,
            tol: float = TOL) -> IRTFit:
    """Fit the 2PL to an item table (or its :func:`response_matrix`), a trait per domain or one for the test.

    Parameters
    ----------
    table : pandas.DataFrame or ResponseMatrix
        Item table (``model, domain, item, correct``).
    rest : {"domain", "test"}
        A trait per domain, fitted separately (default), or one for the whole test.
    nodes, tol
        As :func:`fit_2pl_matrix`.

    Returns
    -------
    IRTFit
        ``items``: ``slope``, ``intercept``, ``difficulty`` b = −c/a, ``loading`` λ with
        ``se_*`` (b and λ by the delta method: var b = (c/a²)² var a + (1/a)² var c −
        2 (c/a³) cov(a, c), se λ = se a · (1/1.702)(1 + (a/1.702)²)^(−3/2)), ``n_models``,
        ``p_correct``, ``flag_zero_variance`` (all responders alike: set aside, NaN),
        ``flag_negative_loading`` (λ < 0), ``flag_weak_loading`` (0 ≤ λ < 0.3),
        ``flag_extreme_difficulty`` (|b| > 5, PISA), ``note``; ``abilities``: EAP ``theta`` and
        ``theta_sd`` per (model, group) on the group's N(0, 1) scale.

    Notes
    -----
    Items with fewer than 2 responders are set aside; a model with no response in a group
    gets no ability there. Domains with fewer than :data:`MIN_TRAIT_ITEMS` fitted items share
    one trait, :data:`SMALL_DOMAINS` (a note); a lone such group is fitted alone, its scale
    resting on the priors. Groups come from one sort: linear in items and domains.
    """
    if rest not in ("domain", "test"):
        raise JaggedInputError(f"rest must be 'domain' or 'test', not {rest!r}")
    mat = table if isinstance(table, ResponseMatrix) else response_matrix(table)
    groups = np.full(len(mat.items), "test", dtype=object) if rest == "test" else mat.domains
    n_models = mat.w.sum(axis=0)
    p_correct = np.where(n_models > 0, mat.y.sum(axis=0) / np.maximum(n_models, 1), np.nan)
    sy = mat.y.sum(axis=0)
    zero_var = (n_models < 2) | (sy <= 0) | (sy >= n_models)
    # partial credit: zero variance means every responder has the same value
    if ((mat.y > 0) & (mat.y < 1)).any():
        ymax = np.where(mat.w > 0, mat.y, -np.inf).max(axis=0)
        ymin = np.where(mat.w > 0, mat.y, np.inf).min(axis=0)
        zero_var = (n_models < 2) | (ymax == ymin)
    out = {k: np.full(len(mat.items), np.nan) for k in ("slope", "se_slope", "intercept", "se_intercept", "cov")}
    notes = np.where(zero_var, np.where(n_models < 2, "fewer than 2 models: set aside",
                                        "every model alike: set aside"), "").astype(object)
    # domains with too few items to define a trait share one (not one tiny fit per domain)
    fitted_per = pd.Series(~zero_var).groupby(groups).transform("sum").to_numpy()
    small = fitted_per < MIN_TRAIT_ITEMS
    if rest == "domain" and len(pd.unique(groups[small])) > 1:
        groups = np.where(small, SMALL_DOMAINS, groups).astype(object)
        notes = np.where(small & ~zero_var, f"fewer than {MIN_TRAIT_ITEMS} fitted items in the domain: one trait "
                         "shared with the other such domains", notes).astype(object)
    ability_rows, group_rows = [], []
    # each group's item indices from one sort: memory linear in items and groups
    codes, names = pd.factorize(groups)
    order = np.argsort(codes, kind="stable")
    members = np.split(order, np.flatnonzero(np.diff(codes[order])) + 1) if len(order) else []
    members = [(idx, idx[~zero_var[idx]], np.flatnonzero(mat.w[:, idx].sum(axis=1) > 0)) for idx in members]

    def fit_group(member: tuple[np.ndarray, np.ndarray, np.ndarray]) -> MatrixFit | None:
        _, cols, rows = member
        if not (len(cols) and len(rows)):
            return None
        return fit_2pl_matrix(mat.y[np.ix_(rows, cols)], mat.w[np.ix_(rows, cols)], nodes=nodes, tol=tol)

    # the groups' fits are independent: spread over the cores (the same numbers as one by one)
    fits = thread_map(fit_group, members, sizes=[len(cols) * len(rows) for _, cols, rows in members])
    for g, (idx, cols, rows), fit in zip(names, members, fits, strict=True):
        if fit is not None:
            out["slope"][cols], out["intercept"][cols] = fit.slope, fit.intercept
            out["se_slope"][cols], out["se_intercept"][cols], out["cov"][cols] = (fit.se_slope, fit.se_intercept,
                                                                                   fit.cov_slope_intercept)
            if len(cols) < 3:
                notes[cols] = "fewer than 3 fitted items in the group: scale rests on the priors"
            ability_rows.append(pd.DataFrame({
                "model": mat.models[rows], "group": g, "n_items": mat.w[np.ix_(rows, idx)].sum(axis=1).astype(int),
                "theta": fit.theta, "theta_sd": fit.theta_sd}))
        group_rows.append({"group": g, "n_items": len(idx), "n_fitted": len(cols), "n_models": len(rows),
                           "cycles": fit.cycles if fit else 0, "converged": bool(fit.converged) if fit else True,
                           "log_posterior": fit.log_posterior if fit else np.nan})
    a, c = out["slope"], out["intercept"]
    with np.errstate(divide="ignore", invalid="ignore"):
        b = -c / a
        var_b = (c / a ** 2) ** 2 * out["se_slope"] ** 2 + (1 / a) ** 2 * out["se_intercept"] ** 2 \
            - 2 * (c / a ** 3) * out["cov"]
    lam = loading_of(a)
    u = a / D_SCALE
    se_lam = out["se_slope"] / D_SCALE * (1 + u ** 2) ** -1.5
    fitted = ~zero_var
    items = pd.DataFrame({
        "item": mat.items, "domain": mat.domains, "group": groups, "n_models": n_models.astype(int),
        "p_correct": p_correct, "slope": a, "se_slope": out["se_slope"], "intercept": c,
        "se_intercept": out["se_intercept"], "difficulty": b, "se_difficulty": np.sqrt(np.maximum(var_b, 0)),
        "loading": lam, "se_loading": se_lam, "flag_zero_variance": zero_var,
        "flag_negative_loading": fitted & (lam < 0), "flag_weak_loading": fitted & (lam >= 0) & (lam < WEAK_LOADING),
        "flag_extreme_difficulty": fitted & (np.abs(b) > EXTREME_DIFFICULTY), "note": notes,
    }, columns=list(ITEM_COLUMNS))
    abilities = (pd.concat(ability_rows, ignore_index=True) if ability_rows
                 else pd.DataFrame(columns=list(ABILITY_COLUMNS)))
    return IRTFit(items, abilities[list(ABILITY_COLUMNS)], pd.DataFrame(group_rows, columns=list(GROUP_COLUMNS)), rest)


def item_probability(slope: np.ndarray, intercept: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """P_j(θ) = σ(a_j θ + c_j) on a grid (items × len(theta))."""
    return expit(np.asarray(slope, float)[:, None] * np.asarray(theta, float)[None, :]
                 + np.asarray(intercept, float)[:, None])
