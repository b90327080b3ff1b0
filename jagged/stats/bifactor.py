"""The bifactor 2PL: a general ability and one ability per domain, fitted by marginal maximum likelihood.

A model with general ability g and domain abilities s_1 … s_D (independent N(0, 1))
answers item j of domain d(j) correctly with probability

    P_j(g, s) = σ(a_j g + b_j s_d(j) + c_j).

* :func:`fit_bifactor_matrix` — the EM on one response matrix (what the benchmark times);
* :func:`fit_bifactor` — the fit of an item table (:class:`Bifactor`): standardised
  loadings with SEs, ω per domain and for the test with intervals, EAP factor scores,
  residual correlations of the domain factors, item-level parallel analysis per domain;
* :func:`external_correlations` — factor scores against the numeric columns of a table.

Intervals are :data:`LEVEL` (90 %) throughout.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from jagged.errors import JaggedInputError
from jagged.stats.bootstrap import centred_interval
from jagged.stats.decomposition import Reason
from jagged.stats.dimensions import correlation_eigenvalues, parallel_analysis
from jagged.stats.irt import (
    D_SCALE,
    INTERCEPT_PRIOR_SD,
    SLOPE_PRIOR_MEAN,
    SLOPE_PRIOR_SD,
    ResponseMatrix,
    response_matrix,
)
from jagged.text import Summarised

#: Gauss–Hermite nodes per dimension (general, then domain given general): NODES² per item and model.
NODES = 5
#: Convergence: largest change of a standardised loading over one accelerated cycle, or the relative
#: change of the log posterior between cycles.
TOL = 1e-4
REL_TOL = 1e-7
#: Or every ω (per domain and the test's) changing by less than OMEGA_TOL over OMEGA_CYCLES cycles.
OMEGA_TOL = 2e-3
OMEGA_CYCLES = 10
MAX_CYCLES = 150
#: Domains of at least this many fitted items get 3 nodes per dimension (their posteriors are near normal).
FEW_NODES_ITEMS = 100
#: Largest Newton step per parameter in one M-step.
MAX_STEP = 1.0
#: Interval level, parameter draws (ω), bootstrap draws over models, permutation draws (parallel analysis).
LEVEL = 0.90
DRAWS = 400
BOOT = 1000
PA_DRAWS = 200
#: Fewest fitted items for a domain's own factor; fewest models for a correlation.
MIN_ITEMS = 3
MIN_MODELS = 4
#: Parallel analysis leaves out items answered by fewer than this share of the domain's models.
PA_MODEL_SHARE = 0.9
#: Arrays of items × models × nodes above this many cells are held in float32.
FLOAT32_ABOVE = 2_000_000

ITEM_COLUMNS: tuple[str, ...] = (
    "item", "domain", "n_models", "general_slope", "specific_slope", "intercept", "difficulty", "general_loading",
    "se_general_loading", "specific_loading", "se_specific_loading", "note")
DOMAIN_COLUMNS: tuple[str, ...] = (
    "domain", "n_items", "n_fitted", "omega_h", "omega_h_lo", "omega_h_hi", "omega_s", "omega_s_lo", "omega_s_hi",
    "rest", "rest_lo", "rest_hi", "dimensions", "dimensions_lo", "dimensions_hi", "pa_items")
SCORE_COLUMNS: tuple[str, ...] = ("model", "factor", "score", "sd")
RESIDUAL_COLUMNS: tuple[str, ...] = ("domain_a", "domain_b", "r", "lo", "hi")
EXTERNAL_COLUMNS: tuple[str, ...] = ("factor", "column", "n_models", "r", "lo", "hi", "residual")
GENERAL = "general"


@dataclass(frozen=True)
class MatrixFit:
    """A bifactor fit of one response matrix (see :func:`fit_bifactor_matrix`); items in input order."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    cov: np.ndarray
    g: np.ndarray
    g_sd: np.ndarray
    s: np.ndarray
    s_sd: np.ndarray
    log_posterior: float
    cycles: int
    converged: bool


@dataclass(frozen=True, repr=False)
class Bifactor(Summarised):
    """A bifactor fit of an item table (see :func:`fit_bifactor`).

    Attributes
    ----------
    items : pandas.DataFrame
        :data:`ITEM_COLUMNS`; loadings standardised, specific factors signed so that a
        domain's specific loadings sum to ≥ 0; ``difficulty`` the multidimensional difficulty
        −c / √(a_g² + a_s²), where along the direction of steepest slope P = ½ (Reckase 1985).
    domains : pandas.DataFrame
        :data:`DOMAIN_COLUMNS`: ω split and the parallel analysis's count of dimensions.
    scores : pandas.DataFrame
        :data:`SCORE_COLUMNS`: EAP score and posterior SD per model and factor
        (``"general"`` or a domain).
    residual_correlations : pandas.DataFrame
        :data:`RESIDUAL_COLUMNS`, every pair of domain factors, largest |r| first.
    omega_h, omega_h_lo, omega_h_hi : float
        ω_h of the whole test and its interval.
    weights : dict
        Per domain (Σ λ_g, Σ λ_s): the composition of the domain's total score.
    log_posterior : float
    cycles : int
    converged : bool
    reasons : list of Reason
        ``("items_set_aside", {"items": k})`` (fewer than 2 models, or every model alike),
        ``("domains_left_out", {"domains": [...]})`` (fewer than :data:`MIN_ITEMS` fitted
        items), ``("pa_items_left_out", {"domain": d, "few_models": k, "no_variance": m})``,
        ``("pa_cells_filled", {"domain": d, "cells": n})``, ``("not_converged", {"cycles": n})``.
    """

    items: pd.DataFrame
    domains: pd.DataFrame
    scores: pd.DataFrame
    residual_correlations: pd.DataFrame
    omega_h: float
    omega_h_lo: float
    omega_h_hi: float
    weights: dict[str, tuple[float, float]]
    log_posterior: float
    cycles: int
    converged: bool
    reasons: list[Reason] = field(default_factory=list)

    def _summary(self) -> tuple[str, list[tuple[str, str]]]:
        return "Bifactor", [("items", f"{len(self.items):,}"), ("domains", f"{len(self.domains):,}"),
                            ("models", f"{self.scores['model'].nunique():,}"),
                            ("omega_h", f"{self.omega_h:.2f} [{self.omega_h_lo:.2f}, {self.omega_h_hi:.2f}]")]


# ---------------------------------------------------------------------------------------
# The EM on one matrix


def _softplus_sigmoid(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log(1 + e^η) and σ(η) from one exponential."""
    e = np.exp(-np.abs(eta))
    return np.maximum(eta, 0) + np.log1p(e), np.where(eta >= 0, 1, e) / (1 + e)


class _EM:
    """The E- and M-steps with per-model adaptive quadrature; items sorted by domain."""

    def __init__(self, y: np.ndarray, w: np.ndarray, bounds: np.ndarray, nodes: int) -> None:
        cells = y.shape[1] * y.shape[0] * nodes ** 2
        self.dtype = np.float32 if cells > FLOAT32_ABOVE else np.float64
        self.yt, self.wt = (np.ascontiguousarray(m.T, dtype=self.dtype) for m in (y, w))
        self.slices = [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
        z, wz = np.polynomial.hermite_e.hermegauss(nodes)
        self.z, self.lw, self.q = z, np.log(wz / wz.sum()) + 0.5 * z ** 2, nodes
        n_models, n_dom = y.shape[0], len(self.slices)
        score = y.sum(1) / np.maximum(w.sum(1), 1)
        self.mu = (score - score.mean()) / (score.std() + 1e-9)
        self.sig = np.full(n_models, 0.3)
        self.m, self.beta = np.zeros((n_dom, n_models)), np.zeros((n_dom, n_models))
        self.tau = np.full((n_dom, n_models), 0.5)

    def nodes(self) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
        """General nodes (J × Q) with log weights, and per domain (S (J × Q·R), log weights (J × Q × R))."""
        z, lw = self.z, self.lw
        g = self.mu[:, None] + self.sig[:, None] * z
        lwg = lw - 0.5 * g ** 2 + np.log(self.sig)[:, None]
        per = []
        for d in range(len(self.slices)):
            s = (self.m[d][:, None] + self.beta[d][:, None] * (g - self.mu[:, None]))[:, :, None] \
                + self.tau[d][:, None, None] * z
            per.append((s.reshape(len(g), -1), lw - 0.5 * s ** 2 + np.log(self.tau[d])[:, None, None]))
        return g, lwg, per

    def estep(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[float, list, np.ndarray, np.ndarray]:
        """Log marginal likelihood, per-domain caches, P(general node) (J × Q), general nodes."""
        g, total, per = self.nodes()
        gk = np.repeat(g, self.q, axis=1)
        dt = self.dtype
        cache = []
        for sl, (sk, lws) in zip(self.slices, per, strict=True):
            ad, bd, cd = (v[sl].astype(dt) for v in (a, b, c))
            eta = ad[:, None, None] * gk.astype(dt) + bd[:, None, None] * sk.astype(dt) + cd[:, None, None]
            sp, sig = _softplus_sigmoid(eta)
            ys = self.yt[sl]
            ll = gk * (ys.T @ ad)[:, None] + sk * (ys.T @ bd)[:, None] + (ys.T @ cd)[:, None] \
                - np.einsum("ij,ijk->jk", self.wt[sl], sp)
            lj = ll.reshape(lws.shape) + lws
            ell = logsumexp(lj, axis=2)
            total = total + ell
            cache.append((sk, lj, ell, sig))
        log_l = logsumexp(total, axis=1)
        return float(log_l.sum()), cache, np.exp(total - log_l[:, None]), g

    def posterior(self, ell: np.ndarray, lj: np.ndarray, pq: np.ndarray) -> np.ndarray:
        """Joint posterior over a domain's nodes (J × Q·R)."""
        return (pq[:, :, None] * np.exp(lj - ell[:, :, None])).reshape(len(pq), -1)

    def adapt(self, cache: list, pq: np.ndarray, g: np.ndarray) -> None:
        """Centre each model's nodes on its posterior: mean and SD of g, and of s_d given g (linear)."""
        mu = (pq * g).sum(1)
        var = np.maximum((pq * (g - mu[:, None]) ** 2).sum(1), 1e-8)
        gk = np.repeat(g - mu[:, None], self.q, axis=1)
        for d, (sk, lj, ell, _) in enumerate(cache):
            p = self.posterior(ell, lj, pq)
            m = (p * sk).sum(1)
            v = (p * (sk - m[:, None]) ** 2).sum(1)
            beta = (p * gk * (sk - m[:, None])).sum(1) / var
            self.m[d], self.beta[d], self.tau[d] = m, beta, np.sqrt(np.maximum(v - beta ** 2 * var, 1e-8))
        self.mu, self.sig = mu, np.sqrt(var)

    def features(self, g: np.ndarray, sk: np.ndarray) -> np.ndarray:
        """(g, s, 1) at each node: J·K × 3."""
        gk = np.repeat(g, self.q, axis=1)
        return np.stack([gk.ravel(), sk.ravel(), np.ones(sk.size)], axis=1)

    def sums(self, cache: list, pq: np.ndarray, g: np.ndarray
             ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Per domain: expected gradient (I × 3) and information (I × 3 × 3) of the complete data, posterior, F, σ."""
        out = []
        for sl, (sk, lj, ell, sig) in zip(self.slices, cache, strict=True):
            p = self.posterior(ell, lj, pq).astype(self.dtype)
            f = self.features(g, sk)
            n = sig.shape[0]
            ws = self.wt[sl][:, :, None] * sig
            grad = ((self.yt[sl][:, :, None] - ws) * p).reshape(n, -1) @ f.astype(self.dtype)
            h = ((ws * (1 - sig)) * p).reshape(n, -1) @ _outer(f).astype(self.dtype)
            out.append((grad.astype(float), h.reshape(n, 3, 3).astype(float), p, f, sig))
        return out


def _outer(f: np.ndarray) -> np.ndarray:
    """Row-wise outer products of f (n × 3) flattened: n × 9."""
    return (f[:, :, None] * f[:, None, :]).reshape(-1, 9)


def _prior(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Log prior, its gradient (I × 3) and curvature (3,): a ~ N(1, 2²), b ~ N(0, 2²), c ~ N(0, 5²)."""
    sd = np.array([SLOPE_PRIOR_SD, SLOPE_PRIOR_SD, INTERCEPT_PRIOR_SD])
    dev = np.stack([a - SLOPE_PRIOR_MEAN, b, c], axis=1) / sd
    return float(-0.5 * (dev ** 2).sum()), -dev / sd, 1 / sd ** 2


def fit_bifactor_matrix(y: np.ndarray, w: np.ndarray, domain: np.ndarray, *, nodes: int = NODES, tol: float = TOL,
                        max_cycles: int = MAX_CYCLES) -> MatrixFit:
    """Fit the bifactor 2PL to one response matrix by EM with adaptive quadrature and SQUAREM.

    Parameters
    ----------
    y, w : numpy.ndarray
        Models × items: ``correct`` in [0, 1] (0 where missing) and 1.0 where the model
        has the item.
    domain : numpy.ndarray
        Integer domain code of each item (0 … D − 1, every code with items).
    nodes : int
        Gauss–Hermite nodes per dimension.
    tol : float
        Largest change of a standardised loading over a cycle at convergence.
    max_cycles : int
        Largest number of accelerated cycles (three EM steps each).

    Returns
    -------
    MatrixFit
        Slopes a (general), b (domain), intercepts c, their covariance (items × 3 × 3),
        EAP scores and posterior SDs of g (J) and s (J × D), the log posterior, cycles
        and whether it converged.

    Notes
    -----
    **Dimension reduction** (Gibbons & Hedeker 1992): given g the domains are
    independent, so L_m = ∫ φ(g) Π_d ∫ φ(s) Π_{j∈d} P_j^y (1 − P_j)^{1−y} ds dg and every
    item needs a two-dimensional quadrature only (arrays items_d × models × Q·R).
    **Adaptive quadrature** (Schilling & Bock 2005): a model's posterior is far narrower
    than N(0, 1) (SD 0.03–0.2 with hundreds of items), so the nodes are placed per model
    at g = μ_m + σ_m z_q and s_d = m_md + β_md (g − μ_m) + τ_md z_r (the posterior mean
    and SD of g, the linear regression of s_d on g), with weights w_q φ(g)/φ(z_q) σ_m
    (likewise for s); μ, σ, m, β, τ are the posterior moments of the last E-step.
    **M-step**: one Newton step per item on (a, b, c) with its 3 × 3 Hessian, steps capped
    at ±1; priors a ~ N(1, 2²), b ~ N(0, 2²), c ~ N(0, 5²) (as the 2PL). SQUAREM
    (Varadhan & Roland 2008) accelerates, falling back to the EM step when the
    extrapolated point lowers the log posterior. **Convergence**: standardised loadings
    change by less than ``tol`` over a cycle, every ω (:func:`omega`) by less than
    :data:`OMEGA_TOL` over :data:`OMEGA_CYCLES` cycles, or the log posterior by less than
    :data:`REL_TOL` of its size (with few models, intercepts of items nearly every model
    gets right or wrong creep towards the prior's limit for hundreds of cycles, raising
    the log posterior while loadings and ω stay put). **Covariance**: Louis's (1982) observed information per
    item (3 × 3 block, cross-item terms ignored) plus the prior's curvature, inverted.
    Scale: g and s are N(0, 1); the signs are left as fitted (see :func:`fit_bifactor`).
    """
    domain = np.asarray(domain, dtype=int)
    order = np.argsort(domain, kind="stable")
    bounds = np.searchsorted(domain[order], np.arange(domain.max() + 2))
    em = _EM(np.asarray(y)[:, order], np.asarray(w)[:, order], bounds, nodes)
    n = len(order)
    x = np.concatenate([np.ones(n), np.full(n, 0.5), np.zeros(n)])
    p = (em.yt.sum(1) + 0.5) / (em.wt.sum(1) + 1)
    x[2 * n:] = np.log(p / (1 - p))

    def step(x: np.ndarray) -> tuple[np.ndarray, float]:
        a, b, c = x[:n], x[n:2 * n], x[2 * n:]
        ll, cache, pq, g = em.estep(a, b, c)
        lp, pgrad, pcurv = _prior(a, b, c)
        new = x.copy()
        for sl, (grad, h, *_) in zip(em.slices, em.sums(cache, pq, g), strict=True):
            h = h + np.diag(pcurv)
            d = np.clip(np.linalg.solve(h, (grad + pgrad[sl])[..., None])[..., 0], -MAX_STEP, MAX_STEP)
            new[sl], new[n + sl.start:n + sl.stop], new[2 * n + sl.start:2 * n + sl.stop] = (
                a[sl] + d[:, 0], b[sl] + d[:, 1], c[sl] + d[:, 2])
        em.adapt(cache, pq, g)
        return new, ll + lp

    def loadings(x: np.ndarray) -> np.ndarray:
        return np.concatenate(standardised(x[:n], x[n:2 * n]))

    converged, cycles, last, omegas = False, 0, -np.inf, []
    while cycles < max_cycles:
        cycles += 1
        x1, lp0 = step(x)
        x2, lp1 = step(x1)
        r, v = x1 - x, x2 - 2 * x1 + x
        nv = np.linalg.norm(v)
        alpha = -max(1.0, np.linalg.norm(r) / nv) if nv > 0 else -1.0
        x3, lpp = step(x - 2 * alpha * r + alpha ** 2 * v)
        if not np.isfinite(lpp) or lpp < lp1:
            x3, _ = step(x2)
        change = np.abs(loadings(x3) - loadings(x)).max() if n else 0.0
        x = x3
        oh, os_, ot = omega(*standardised(x[:n], x[n:2 * n]), bounds)
        omegas.append(np.concatenate([oh, os_, [ot]]))
        settled = len(omegas) > OMEGA_CYCLES and np.abs(omegas[-1] - omegas[-1 - OMEGA_CYCLES]).max() < OMEGA_TOL
        if change < tol or settled or abs(lp0 - last) < REL_TOL * abs(lp0):
            converged = True
            break
        last = lp0
    a, b, c = x[:n], x[n:2 * n], x[2 * n:]
    ll, cache, pq, g = em.estep(a, b, c)
    lp, _, pcurv = _prior(a, b, c)
    cov = np.empty((n, 3, 3))
    s_sd = np.empty_like(em.m)
    for d, (sl, (_, h, p, f, sig), (sk, *_)) in enumerate(zip(em.slices, em.sums(cache, pq, g), cache, strict=True)):
        ys, ws = em.yt[sl][:, :, None], em.wt[sl][:, :, None]
        ni, nm = ys.shape[:2]
        # Louis: E[−∂²ℓ] − E[s sᵀ] + Σ_m E_m[s] E_m[s]ᵀ, s = w (y − σ) f at each node
        sq = (ws * (ys - sig) ** 2 * p).reshape(ni, -1) @ _outer(f).astype(em.dtype)
        e = np.einsum("ijk,jkf->ijf", (ys - ws * sig) * p, f.reshape(nm, -1, 3).astype(em.dtype))
        info = h - sq.reshape(ni, 3, 3) + np.einsum("ijf,ijg->ifg", e, e) + np.diag(pcurv)
        with np.errstate(invalid="ignore"):
            ok = np.linalg.eigvalsh(info)[:, 0] > 0
        cov[sl] = np.where(ok[:, None, None], np.linalg.inv(np.where(ok[:, None, None], info, np.eye(3))), np.nan)
        pj = em.posterior(cache[d][2], cache[d][1], pq)
        s_sd[d] = np.sqrt(np.maximum((pj * sk ** 2).sum(1) - ((pj * sk).sum(1)) ** 2, 0))
    em.adapt(cache, pq, g)
    inv = np.empty(n, dtype=int)
    inv[order] = np.arange(n)
    return MatrixFit(a[inv], b[inv], c[inv], cov[inv], em.mu, em.sig, em.m.T, s_sd.T, ll + lp, cycles, converged)


# ---------------------------------------------------------------------------------------
# Loadings and ω


def standardised(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """λ_g = A / √(1 + A² + B²), λ_s = B / √(1 + A² + B²) with A = a/1.702, B = b/1.702."""
    big_a, big_b = np.asarray(a) / D_SCALE, np.asarray(b) / D_SCALE
    den = np.sqrt(1 + big_a ** 2 + big_b ** 2)
    return big_a / den, big_b / den


def omega(lg: np.ndarray, ls: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ω_h and ω_s per domain and ω_h of the test, from loadings (..., items sorted by domain).

    With G_d = Σ_{j∈d} λ_gj, S_d = Σ_{j∈d} λ_sj and U_d = Σ_{j∈d} (1 − λ_gj² − λ_sj²),
    ω_h,d = G_d² / (G_d² + S_d² + U_d), ω_s,d = S_d² / (G_d² + S_d² + U_d); for the test
    ω_h = (Σ_d G_d)² / ((Σ_d G_d)² + Σ_d S_d² + Σ_d U_d) (McDonald; as ``psych::omega``).
    """
    starts = bounds[:-1]
    gd, sd = np.add.reduceat(lg, starts, axis=-1), np.add.reduceat(ls, starts, axis=-1)
    ud = np.add.reduceat(1 - lg ** 2 - ls ** 2, starts, axis=-1)
    total = gd ** 2 + sd ** 2 + ud
    test = gd.sum(-1) ** 2
    return gd ** 2 / total, sd ** 2 / total, test / (test + (sd ** 2).sum(-1) + ud.sum(-1))


def _omega_draws(a: np.ndarray, b: np.ndarray, cov: np.ndarray, bounds: np.ndarray, draws: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ω of ``draws`` parameter sets drawn from N((a, b), cov_ab) item by item."""
    cab = np.nan_to_num(cov[:, :2, :2])
    chol = np.linalg.cholesky(cab + 1e-12 * np.eye(2))
    z = rng.standard_normal((draws, len(a), 2))
    ab = np.stack([a, b], axis=1) + np.einsum("ixy,diy->dix", chol, z)
    return omega(*standardised(ab[..., 0], ab[..., 1]), bounds)


# ---------------------------------------------------------------------------------------
# Correlations over models


def _corr(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson correlations of the columns of x and y (..., n, p) and (..., n, q) → (..., p, q)."""
    x, y = x - x.mean(-2, keepdims=True), y - y.mean(-2, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.swapaxes(x, -1, -2) @ y) / np.sqrt((x * x).sum(-2)[..., :, None] * (y * y).sum(-2)[..., None, :])


def boot_correlations(x: np.ndarray, y: np.ndarray, *, boot: int = BOOT, level: float = LEVEL,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Correlations of the columns of x and y (rows: models) and their bootstrap-over-models interval.

    The interval is :func:`~jagged.stats.bootstrap.centred_interval` of ``boot`` resamples
    of the rows (so it contains the estimate), clipped to [−1, 1]; resamples in which a
    column is constant are left out of that entry's quantiles.
    """
    r = _corr(x, y)
    idx = rng.integers(0, len(x), size=(boot, len(x)))
    reps = _corr(x[idx], y[idx])
    lo, hi = centred_interval(r, reps, level, bounds=(-1.0, 1.0))
    return r, lo, hi


# ---------------------------------------------------------------------------------------
# Parallel analysis of a domain's items


def item_dimensions(y: np.ndarray, w: np.ndarray, *, draws: int = PA_DRAWS, boot: int = BOOT // 5,
                    level: float = LEVEL, seed: int = 0) -> tuple[int | None, float, float, int, list[Reason]]:
    """Parallel analysis of one domain's items (models × items) with a bootstrap interval on the count.

    Returns
    -------
    (int or None, float, float, int, list of Reason)
        Dimensions retained (Horn, :func:`~jagged.stats.dimensions.parallel_analysis`), the
        centred ``level`` interval of the count over ``boot`` reweightings of the models,
        the items used, and reasons (``("pa_items_left_out", ...)``,
        ``("pa_cells_filled", ...)``; no ``domain`` field: the caller adds it).

    Notes
    -----
    Models without an item of the domain are left out; items answered by fewer than
    :data:`PA_MODEL_SHARE` of the others, or alike for every model, are left out (a
    correlation over a few shared models would be mostly noise); the few missing cells
    left are filled with the item's mean. With fewer models than items the correlation
    matrix has rank ≤ J − 1 and its nonzero eigenvalues are those of the J × J matrix
    Z Zᵀ / J (:func:`~jagged.stats.dimensions.correlation_eigenvalues`). A resample
    counts the leading eigenvalues above the permutation thresholds of the data; the
    resamples are Bayesian bootstrap ones (Dirichlet weights on the models, Rubin 1981),
    the weighted correlations' eigenvalues from √w Z: resampling with replacement would
    repeat models, and repeated rows inflate the leading eigenvalues. Resampled leading
    eigenvalues are biased upwards all the same (a noisier matrix spreads its spectrum),
    so the interval is centred like
    :func:`~jagged.stats.bootstrap.centred_interval`: the count plus the resamples'
    quantiles less their median.
    """
    rows = w.sum(1) > 0
    y, w = y[rows], w[rows]
    n = w.sum(0)
    few = n < PA_MODEL_SHARE * len(w)
    mean = y.sum(0) / np.maximum(n, 1)
    x = np.where(w > 0, y, mean)
    flat = x.std(0) <= 0
    keep = ~few & ~flat
    reasons: list[Reason] = []
    if (few | flat).any():
        reasons.append(("pa_items_left_out", {"few_models": int(few.sum()), "no_variance": int((flat & ~few).sum())}))
    filled = int((w[:, keep] == 0).sum())
    if filled:
        reasons.append(("pa_cells_filled", {"cells": filled}))
    x = x[:, keep]
    if len(x) < 3 or x.shape[1] < 2:
        return None, np.nan, np.nan, int(keep.sum()), reasons
    pa = parallel_analysis(x, draws=draws, seed=seed)
    rng = np.random.default_rng(seed)
    counts = np.empty(boot)
    for start in range(0, boot, 50):
        wts = rng.dirichlet(np.ones(len(x)), size=min(50, boot - start))[:, :, None] * len(x)
        xb = x - (wts * x).mean(1, keepdims=True)
        sd = np.sqrt((wts * xb * xb).mean(1, keepdims=True))
        eig = correlation_eigenvalues(np.divide(xb * np.sqrt(wts), sd, out=np.zeros_like(xb), where=sd > 0))
        above = (eig > pa.thresholds)[:, :pa.rank]
        counts[start:start + len(eig)] = np.where(above.all(1), pa.rank, np.argmin(above, axis=1))
    lo, mid, hi = np.quantile(counts, [(1 - level) / 2, 0.5, (1 + level) / 2], method="nearest")
    lo, hi = np.clip([pa.n_dimensions + lo - mid, pa.n_dimensions + hi - mid], 0, pa.rank)
    return pa.n_dimensions, float(lo), float(hi), x.shape[1], reasons


# ---------------------------------------------------------------------------------------
# The fit of an item table


def fit_bifactor(table: pd.DataFrame | ResponseMatrix, *, nodes: int | None = None, tol: float = TOL,
                 draws: int = DRAWS, boot: int = BOOT, level: float = LEVEL, seed: int = 0) -> Bifactor:
    """Fit the bifactor 2PL to an item table: a general factor and one factor per domain.

    Parameters
    ----------
    table : pandas.DataFrame or ResponseMatrix
        Item table (``model, domain, item, correct``) or its
        :func:`~jagged.stats.irt.response_matrix`.
    nodes, tol
        See :func:`fit_bifactor_matrix`; ``nodes`` None: 3 when every domain has
        :data:`FEW_NODES_ITEMS` fitted items, else :data:`NODES`.
    draws, boot : int
        Parameter draws for the ω intervals; bootstrap resamples of the models.
    level : float
        Interval level.
    seed : int

    Returns
    -------
    Bifactor

    Raises
    ------
    JaggedInputError
        Bad item table, or fewer than 2 domains with :data:`MIN_ITEMS` fitted items.

    Notes
    -----
    Items answered by fewer than 2 models, or alike for every model, are set aside
    (parameters NaN); so are the items of domains with fewer than :data:`MIN_ITEMS` fitted
    items. Standardised loadings (normal-ogive approximation) :func:`standardised`, their
    SEs by the delta method from the (a, b) covariance; ω: :func:`omega`, intervals the
    ``level`` quantiles of ω over ``draws`` parameter sets drawn from their sampling
    distribution. Each specific factor is signed so that its loadings sum to ≥ 0.
    Residual correlations are those of the domain factors' EAP scores across models: the
    factors are independent in the model, and EAP scores are shrunk towards 0, so a nonzero
    correlation is a link the general factor misses, understated in size.
    """
    mat = table if isinstance(table, ResponseMatrix) else response_matrix(table)
    n_models = mat.w.sum(0)
    ymax = np.where(mat.w > 0, mat.y, -np.inf).max(0, initial=-np.inf)
    ymin = np.where(mat.w > 0, mat.y, np.inf).min(0, initial=np.inf)
    fitted = (n_models >= 2) & (ymax > ymin)
    reasons: list[Reason] = [("items_set_aside", {"items": int((~fitted).sum())})] if (~fitted).any() else []
    per = pd.Series(fitted).groupby(mat.domains).transform("sum").to_numpy()
    small = sorted(set(mat.domains[per < MIN_ITEMS]))
    fitted &= per >= MIN_ITEMS
    if small:
        reasons.append(("domains_left_out", {"domains": [str(d) for d in small]}))
    names, codes = np.unique(mat.domains[fitted].astype(str), return_inverse=True)
    if len(names) < 2:
        raise JaggedInputError(f"a general and a domain factor need at least 2 domains with {MIN_ITEMS} or more "
                               f"items on which the models differ; this table has {len(names)}")
    cols = np.flatnonzero(fitted)
    rows = np.flatnonzero(mat.w[:, cols].sum(1) > 0)
    y, w = mat.y[np.ix_(rows, cols)], mat.w[np.ix_(rows, cols)]
    if nodes is None:
        nodes = 3 if np.bincount(codes).min() >= FEW_NODES_ITEMS else NODES
    fit = fit_bifactor_matrix(y, w, codes, nodes=nodes, tol=tol)
    if not fit.converged:
        reasons.append(("not_converged", {"cycles": fit.cycles}))
    a, b, cov, s = fit.a.copy(), fit.b.copy(), fit.cov.copy(), fit.s.copy()
    flip = np.where(np.bincount(codes, weights=b) < 0, -1.0, 1.0)
    b *= flip[codes]
    s *= flip
    sign = np.stack([np.ones(len(b)), flip[codes], np.ones(len(b))], 1)
    cov *= sign[:, :, None] * sign[:, None, :]
    lg, ls = standardised(a, b)
    big_a, big_b = a / D_SCALE, b / D_SCALE
    den3 = (1 + big_a ** 2 + big_b ** 2) ** 1.5 * D_SCALE
    jac = np.stack([np.stack([1 + big_b ** 2, -big_a * big_b], 1), np.stack([-big_a * big_b, 1 + big_a ** 2], 1)], 1)
    jac /= den3[:, None, None]
    var = np.einsum("ixy,iyz,ixz->ix", jac, cov[:, :2, :2], jac)
    full = {k: np.full(len(mat.items), np.nan) for k in ("a", "b", "c", "lg", "ls", "se_g", "se_s")}
    for k, v in zip(full, (a, b, fit.c, lg, ls, *np.sqrt(var.T)), strict=True):
        full[k][cols] = v
    note = np.where(fitted, "", "set aside").astype(object)
    items = pd.DataFrame({"item": mat.items, "domain": mat.domains, "n_models": n_models.astype(int),
                          "general_slope": full["a"], "specific_slope": full["b"], "intercept": full["c"],
                          "difficulty": -full["c"] / np.hypot(full["a"], full["b"]),  # MDIFF (Reckase 1985)
                          "general_loading": full["lg"], "se_general_loading": full["se_g"],
                          "specific_loading": full["ls"], "se_specific_loading": full["se_s"], "note": note},
                         columns=list(ITEM_COLUMNS))
    # ω on the items sorted by domain, with parameter draws
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    oh, os_, oh_test = omega(lg[order], ls[order], bounds)
    rng = np.random.default_rng(seed)
    dh, ds, dt = _omega_draws(a[order], b[order], cov[order], bounds, draws, rng)
    q = [(1 - level) / 2, (1 + level) / 2]
    (hl, hh), (sl_, sh), (tl, th) = (np.quantile(v, q, axis=0) for v in (dh, ds, dt))
    rest, (rl, rh) = 1 - oh - os_, np.quantile(1 - dh - ds, q, axis=0)
    dom_rows = []
    for d, name in enumerate(names):
        members = cols[codes == d]
        dims, dlo, dhi, used, why = item_dimensions(mat.y[:, members], mat.w[:, members], boot=max(boot // 5, 20),
                                                    level=level, seed=seed)
        reasons += [(code, {"domain": str(name), **fields}) for code, fields in why]
        dom_rows.append({"domain": str(name), "n_items": int((mat.domains.astype(str) == name).sum()),
                         "n_fitted": len(members), "omega_h": oh[d], "omega_h_lo": min(hl[d], oh[d]),
                         "omega_h_hi": max(hh[d], oh[d]), "omega_s": os_[d], "omega_s_lo": min(sl_[d], os_[d]),
                         "omega_s_hi": max(sh[d], os_[d]), "rest": rest[d], "rest_lo": min(rl[d], rest[d]),
                         "rest_hi": max(rh[d], rest[d]), "dimensions": dims, "dimensions_lo": dlo,
                         "dimensions_hi": dhi, "pa_items": used})
    models = mat.models[rows]
    scores = pd.DataFrame({"model": np.tile(models, len(names) + 1),
                           "factor": np.repeat([GENERAL, *names], len(models)),
                           "score": np.concatenate([fit.g, s.T.ravel()]),
                           "sd": np.concatenate([fit.g_sd, fit.s_sd.T.ravel()])}, columns=list(SCORE_COLUMNS))
    r, lo, hi = boot_correlations(s, s, boot=boot, level=level, rng=rng)
    i, j = np.triu_indices(len(names), 1)
    resid = pd.DataFrame({"domain_a": names[i], "domain_b": names[j], "r": r[i, j], "lo": lo[i, j], "hi": hi[i, j]},
                         columns=list(RESIDUAL_COLUMNS))
    resid = resid.iloc[np.argsort(-np.abs(resid["r"].to_numpy()), kind="stable")].reset_index(drop=True)
    weights = {str(name): (float(lg[codes == d].sum()), float(ls[codes == d].sum())) for d, name in enumerate(names)}
    return Bifactor(items, pd.DataFrame(dom_rows, columns=list(DOMAIN_COLUMNS)), scores, resid, float(oh_test),
                    float(min(tl, oh_test)), float(max(th, oh_test)), weights, fit.log_posterior, fit.cycles,
                    fit.converged, reasons)


def external_correlations(fit: Bifactor, external: pd.DataFrame, *, boot: int = BOOT * 2, level: float = LEVEL,
                          seed: int = 0, source: str = "<external table>") -> pd.DataFrame:
    """Correlations of the factor scores with each numeric column of a table of models.

    Parameters
    ----------
    fit : Bifactor
    external : pandas.DataFrame
        A ``model`` column and one or more numeric columns (a capability index, a
        release date as a number, parameters …); NaN cells leave that model out of that
        column.
    boot, level, seed
        Bootstrap resamples of the models, interval level, seed.
    source : str
        Name of the table in error messages.

    Returns
    -------
    pandas.DataFrame
        :data:`EXTERNAL_COLUMNS`, one row per (factor, column) and, for a domain factor, a
        second row with ``residual`` True. ``r`` is NaN with fewer than :data:`MIN_MODELS`
        models.

    Raises
    ------
    JaggedInputError
        No ``model`` column, a model listed twice, a non-numeric column, or no column.

    Notes
    -----
    The general factor is its EAP score. A domain factor is, raw, the common part of the
    domain's total score, (Σλ_g) ĝ + (Σλ_s) ŝ_d (its loadings' sums as weights), and
    with the general component removed, the domain's own factor ŝ_d alone.
    These are correlations of EAP scores, attenuated by their measurement error (by
    corr(EAP, θ), about 0.85–0.95 with tens of items per domain). Interval:
    :func:`boot_correlations` over the models having both values.
    """
    if "model" not in external.columns:
        raise JaggedInputError(f"{source}: no 'model' column")
    models = external["model"].astype(str)
    if models.duplicated().any():
        raise JaggedInputError(f"{source}: model {models[models.duplicated()].iloc[0]!r} is listed twice")
    values = external.drop(columns="model")
    if values.shape[1] == 0:
        raise JaggedInputError(f"{source}: no column besides 'model'")
    for col in values.columns:
        if not pd.api.types.is_numeric_dtype(values[col]) or pd.api.types.is_bool_dtype(values[col]):
            raise JaggedInputError(f"{source}: column {str(col)!r} is not numeric")
    wide = fit.scores.pivot(index="model", columns="factor", values="score")
    g = wide[GENERAL]
    factors = {(GENERAL, False): g}
    for d in fit.weights:
        wg, ws = fit.weights[d]
        factors[(d, False)], factors[(d, True)] = wg * g + ws * wide[d], wide[d]
    table = values.set_axis(models).astype(float)
    common = wide.index.intersection(table.index)
    scores = np.stack([v.reindex(common).to_numpy(float) for v in factors.values()], axis=1)
    rng = np.random.default_rng(seed)
    out = []
    for col in table.columns:
        v = table.loc[common, col].to_numpy()
        ok = np.isfinite(v)
        if ok.sum() >= MIN_MODELS:
            r, lo, hi = (e[:, 0] for e in boot_correlations(scores[ok], v[ok, None], boot=boot, level=level, rng=rng))
        else:
            r = lo = hi = np.full(len(factors), np.nan)
        out += [{"factor": f, "column": str(col), "n_models": int(ok.sum()), "r": r[k], "lo": lo[k], "hi": hi[k],
                 "residual": res} for k, (f, res) in enumerate(factors)]
    return pd.DataFrame(out, columns=list(EXTERNAL_COLUMNS))
