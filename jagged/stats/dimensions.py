"""How many dimensions lie behind the domains, and do the categories behave like distinct ones?

:func:`parallel_analysis` (Horn 1965) compares the eigenvalues of the domains' correlation
matrix (models as observations) with the 95th percentile of those of column-permuted data;
:func:`category_check` asks whether domains of one category share more than the general
level. Draws are batched and seeded; memory is linear in the domains (eigenvalues from the
smaller Gram matrix, no domains × domains matrix in the category check).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.stats.decomposition import Decomposition, Reason, score_grid
from jagged.stats.uncertainty import EQUAL_ERROR_ALPHA
from jagged.text import Summarised

#: Permutation draws of the parallel analysis and of the category check.
DEFAULT_DRAWS: int = 500
#: Percentile of the permuted eigenvalues a dimension must exceed (Glorfeld's 95th).
PERCENTILE: float = 0.95
#: Upper bound on the entries of one block of permuted data (draws × models × domains).
_BLOCK_ENTRIES = 4_000_000
#: Multiply-adds the default number of draws may cost (draws × n × p × min(n, p), the permuted correlations).
WORK_BUDGET: float = 2e10
#: The fewest draws the work budget may leave.
MIN_DRAWS: int = 50


def default_draws(n: int, p: int) -> int:
    """:data:`DEFAULT_DRAWS`, fewer (≥ :data:`MIN_DRAWS`) when n × p × min(n, p) × draws exceeds :data:`WORK_BUDGET`."""
    return int(max(MIN_DRAWS, min(DEFAULT_DRAWS, WORK_BUDGET // max(n * p * min(n, p), 1))))


@dataclass(repr=False)
class Dimensions(Summarised):
    """Parallel analysis of the domains (see :func:`parallel_analysis`).

    Attributes
    ----------
    eigenvalues, thresholds : numpy.ndarray
        Eigenvalues of the correlation matrix, largest first, and the ``percentile`` of each
        rank's eigenvalue over ``draws`` permuted data sets.
    n_dimensions : int or None
        Leading eigenvalues above their threshold (None: not computable).
    first_share, first_to_second : float
        λ₁ / p and λ₁ / λ₂.
    n_observations, n_variables, rank : int
        Models, domains and min(n − 1, p); ``rank_deficient`` when n − 1 < p.
    variables : list of str
        The domains (or categories) used, in column order.
    reasons : list of Reason
        ``too_few_observations``, ``rank_deficient``, ``incomplete_models``,
        ``constant_domains``, ``fewer_draws`` with their numbers.
    """

    eigenvalues: np.ndarray
    thresholds: np.ndarray
    n_dimensions: int | None
    first_share: float
    first_to_second: float
    n_observations: int
    n_variables: int
    rank: int
    rank_deficient: bool
    draws: int
    seed: int
    percentile: float
    variables: list[str] = field(default_factory=list)
    reasons: list[Reason] = field(default_factory=list)

    def _summary(self) -> tuple[str, list[tuple[str, str]]]:
        kept = "not computable" if self.n_dimensions is None else str(self.n_dimensions)
        return "Dimensions", [("kept", kept), ("first share", f"{self.first_share:.1%}"),
                              ("models", f"{self.n_observations:,}"), ("variables", f"{self.n_variables:,}"),
                              ("draws", f"{self.draws:,}")]

    def table(self) -> pd.DataFrame:
        """``dimension`` (1, 2, …), ``eigenvalue``, ``threshold``, ``share`` (λ/p) and ``retained``."""
        k = np.arange(1, len(self.eigenvalues) + 1)
        kept = k <= (self.n_dimensions or 0)
        return pd.DataFrame({"dimension": k, "eigenvalue": self.eigenvalues, "threshold": self.thresholds,
                             "share": self.eigenvalues / max(self.n_variables, 1), "retained": kept})


def correlation_eigenvalues(z: np.ndarray) -> np.ndarray:
    """Eigenvalues of the correlation matrices Zᵀ Z / n of standardised (..., n, p) data, largest first.

    Zᵀ Z / n and Z Zᵀ / n share their nonzero eigenvalues: the smaller is decomposed (one
    batched ``eigvalsh``), the rest are exact zeros and rounding below 0 is set to 0, so memory
    is O(n p + min(n, p)²).
    """
    n, p = z.shape[-2:]
    if p <= n:
        return np.maximum(np.linalg.eigvalsh(np.swapaxes(z, -1, -2) @ z / n)[..., ::-1], 0.0)
    out = np.zeros(z.shape[:-2] + (p,))
    out[..., :n] = np.maximum(np.linalg.eigvalsh(z @ np.swapaxes(z, -1, -2) / n)[..., ::-1], 0.0)
    return out


def permuted_eigenvalues(z: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """draws × p eigenvalues of the correlations of column-permuted n × p standardised data, largest first.

    Each draw permutes every column independently (``Generator.permuted``), keeping each
    domain's distribution and destroying the correlations; blocks of at most 4 million entries.
    """
    n, p = z.shape
    size = max(1, min(draws, _BLOCK_ENTRIES // max(n * p, 1)))
    out = np.empty((draws, p))
    for start in range(0, draws, size):
        b = min(size, draws - start)
        shuffled = rng.permuted(np.broadcast_to(z, (b, n, p)), axis=1)
        out[start:start + b] = correlation_eigenvalues(shuffled)
    return out


def parallel_analysis(data: np.ndarray, *, draws: int = DEFAULT_DRAWS, seed: int = 0,
                      percentile: float = PERCENTILE, variables: list[str] | None = None) -> Dimensions:
    """Horn's (1965) parallel analysis of a complete observations × variables matrix.

    Parameters
    ----------
    data : numpy.ndarray
        n × p, complete, every column with some variance.
    draws, seed : int
        Permuted data sets and the seed of ``numpy.random.default_rng``.
    percentile : float
        A dimension is retained when its eigenvalue exceeds this percentile of the same-rank
        permuted eigenvalues (0.95, Glorfeld 1995; Horn used the mean).
    variables : list of str, optional
        Column names.

    Notes
    -----
    λ₁ ≥ … ≥ λ_p of the Pearson correlation matrix (trace p); retained are the leading k with
    λ_j > t_j for every j ≤ k. With n ≤ p at most n − 1 eigenvalues are nonzero, so at most
    n − 1 dimensions are retained and ``rank_deficient`` is set; the count and the first share
    still compare like for like, the loadings cannot be estimated. Fewer than 3 observations
    or 2 variables: nothing computed (reason).
    """
    x = np.asarray(data, dtype=float)
    if x.ndim != 2 or np.isnan(x).any():
        raise JaggedInputError("parallel analysis needs a complete observations × variables matrix")
    n, p = x.shape
    if int(draws) != draws or draws < 1:
        raise JaggedInputError(f"parallel-analysis draws must be a positive whole number, not {draws!r}")
    if not 0 < percentile < 1:
        raise JaggedInputError(f"percentile must be between 0 and 1, not {percentile!r}")
    names = list(variables) if variables is not None else [str(j) for j in range(p)]
    rank = max(min(n - 1, p), 0)
    empty = np.full(p, np.nan)
    if n < 3 or p < 2:
        return Dimensions(eigenvalues=empty, thresholds=empty, n_dimensions=None, first_share=math.nan,
                          first_to_second=math.nan, n_observations=n, n_variables=p, rank=rank,
                          rank_deficient=n - 1 < p, draws=int(draws), seed=int(seed), percentile=percentile,
                          variables=names, reasons=[("too_few_observations", {"observations": n, "variables": p})])
    sd = x.std(axis=0)
    if not (sd > 0).all():
        raise JaggedInputError("parallel analysis: a variable has no variance")
    z = _standardised_columns(x)[0]
    eig = correlation_eigenvalues(z)
    rng = np.random.default_rng(seed)
    perm = permuted_eigenvalues(z, int(draws), rng)
    thresholds = np.quantile(perm, percentile, axis=0)
    above = eig > thresholds
    above[rank:] = False
    count = int(np.argmin(above)) if not above.all() else p
    reasons: list[Reason] = [("rank_deficient", {"models": n, "domains": p, "rank": rank})] if n - 1 < p else []
    second = eig[1] if p > 1 else math.nan
    return Dimensions(eigenvalues=eig, thresholds=thresholds, n_dimensions=count, first_share=float(eig[0] / p),
                      first_to_second=float(eig[0] / second) if second > 0 else math.inf, n_observations=n,
                      n_variables=p, rank=rank, rank_deficient=n - 1 < p, draws=int(draws), seed=int(seed),
                      percentile=percentile, variables=names, reasons=reasons)


def dimensions(scores: pd.DataFrame, *, draws: int | None = None, seed: int = 0,
               percentile: float = PERCENTILE) -> Dimensions:
    """:func:`parallel_analysis` of a score table's domains, the models as observations.

    Models lacking a domain are left out, constant domains dropped (reasons); ``draws`` None
    means :func:`default_draws` (a reason when fewer than the default).
    """
    _, domains, error, _ = score_grid(scores)
    complete = ~np.isnan(error).any(axis=1)
    reasons: list[Reason] = []
    if (~complete).any():
        reasons.append(("incomplete_models", {"models": int((~complete).sum())}))
    x = 1.0 - error[complete]
    varies = x.std(axis=0) > 0 if len(x) else np.zeros(len(domains), dtype=bool)
    if len(x) and (~varies).any():
        reasons.append(("constant_domains", {"domains": [str(d) for d in domains[~varies]]}))
    if draws is None:
        draws = default_draws(*x[:, varies].shape)
        if draws < DEFAULT_DRAWS:
            reasons.append(("fewer_draws", {"draws": draws, "default": DEFAULT_DRAWS, "models": len(x),
                                            "domains": int(varies.sum())}))
    result = parallel_analysis(x[:, varies], draws=draws, seed=seed, percentile=percentile,
                               variables=[str(d) for d in domains[varies]])
    result.reasons = reasons + result.reasons
    return result


@dataclass(repr=False)
class CategoryCheck(Summarised):
    """Do the domain categories behave like distinct dimensions? (:func:`category_check`).

    ``within`` and ``between``: mean correlation across models of the residuals of two domains
    of the same, and of different categories; ``difference``, its permutation ``p_value``,
    ``verdict`` (``"distinct"``, ``"trace"``, ``"not distinct"``, ``"undetermined"``),
    ``category_dimensions`` (parallel analysis of the category means), ``reasons``
    (``too_few_models``, ``undefined_correlations``).
    """

    categories: list[str]
    sizes: list[int]
    within: float
    between: float
    difference: float
    p_value: float
    draws: int
    verdict: str
    category_dimensions: Dimensions | None = None
    reasons: list[Reason] = field(default_factory=list)

    def _summary(self) -> tuple[str, list[tuple[str, str]]]:
        return "CategoryCheck", [("categories", f"{len(self.categories):,}"), ("verdict", self.verdict),
                                 ("within - between", f"{self.difference:.3f}"), ("p", f"{self.p_value:.3g}")]


def _category_of(scores: pd.DataFrame, domains: np.ndarray) -> np.ndarray | None:
    if "category" not in scores.columns or scores["category"].dropna().nunique() < 2:
        return None
    first = scores.dropna(subset=["category"]).drop_duplicates("domain").set_index("domain")["category"]
    first.index = first.index.astype(object)
    return first.astype(object).reindex(list(domains)).fillna("(none)").astype(str).to_numpy(dtype=object)


def _standardised_columns(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Columns centred and scaled to population sd 1 (0 where a column has no variance), and which have one."""
    centred = data - data.mean(axis=0, keepdims=True)
    sd = np.sqrt((centred * centred).mean(axis=0))
    valid = np.isfinite(sd) & (sd > 0)
    return np.where(valid, centred / np.where(valid, sd, 1.0), 0.0), valid


def _within_between(z: np.ndarray, valid: np.ndarray, labels: np.ndarray, categories: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Mean correlation of two distinct valid columns within and between categories, one pair of means per labelling.

    With a_c the indicator of category c, the within sum is ‖Z a_c‖² / n − Σ_{d∈c} v_d over
    (Σ_{d∈c} v_d)² − Σ_{d∈c} v_d pairs (v: the column has variance); between is all pairs less
    those within. One sparse product for every labelling (k × D ``labels``), never the D × D
    matrix; NaN when a set of pairs is empty.
    """
    from scipy import sparse  # here: the report kernel need not import scipy

    k, d = labels.shape
    rows = (np.arange(k)[:, None] * categories + labels).ravel()
    onehot = sparse.csr_array((np.ones(k * d), (rows, np.tile(np.arange(d), k))), shape=(k * categories, d))
    sums = (onehot @ z.T).reshape(k, categories, -1)                    # Z a_c, k × C × n
    counts = (onehot @ valid.astype(float)).reshape(k, categories)      # Σ_{d∈c} v_d
    n, n_valid = z.shape[0], float(valid.sum())
    s_in = (sums * sums).sum(axis=(1, 2)) / n - n_valid
    n_in = (counts * counts).sum(axis=1) - n_valid
    total = z.sum(axis=1)
    s_all = float(total @ total) / n - n_valid
    n_all = n_valid * n_valid - n_valid
    with np.errstate(invalid="ignore", divide="ignore"):
        return s_in / n_in, (s_all - s_in) / (n_all - n_in)


def category_check(scores: pd.DataFrame, decomposition: Decomposition, dims: Dimensions, *,
                   draws: int | None = None, seed: int = 0, alpha: float = EQUAL_ERROR_ALPHA
                   ) -> CategoryCheck | None:
    """Whether domains of the same category share more than the general level (None without two categories).

    Notes
    -----
    What two domains share beyond each model's level and each domain's difficulty is the
    correlation of their residuals across the complete fitted models. The statistic is
    within − between (means over domain pairs); its p-value (1 + #≥)/(draws + 1) over random
    reassignments of the labels (sizes kept). Verdict: ``"distinct"`` when p < ``alpha`` and
    parallel analysis keeps ≥ 2 dimensions; ``"trace"`` when p < alpha with one; ``"not
    distinct"`` otherwise; ``"undetermined"`` with fewer than 3 complete models or no
    category of 2 domains. ``draws`` None: as many as ``dims`` used.
    """
    dec = decomposition
    labels = _category_of(scores, dec.domains)
    if labels is None:
        return None
    draws = int(dims.draws if draws is None else draws)
    names, codes = np.unique(labels, return_inverse=True)
    sizes = np.bincount(codes, minlength=len(names))
    wide = 1.0 - dec.error
    complete = ~np.isnan(wide).any(axis=1)
    cat_dims = None
    if complete.sum() >= 3:
        means = (wide[complete] @ (codes[:, None] == np.arange(len(names))[None, :])) / sizes
        varies = means.std(axis=0) > 0
        cat_dims = parallel_analysis(means[:, varies], draws=draws, seed=seed,
                                     variables=[str(n) for n in names[varies]])
    rows = dec.fitted.all(axis=1)
    undetermined = CategoryCheck(categories=[str(n) for n in names], sizes=sizes.tolist(), within=math.nan,
                                 between=math.nan, difference=math.nan, p_value=math.nan, draws=int(draws),
                                 verdict="undetermined", category_dimensions=cat_dims)
    if rows.sum() < 3 or sizes.max() < 2 or not dec.ok:
        undetermined.reasons.append(("too_few_models", {}))
        return undetermined
    r = dec.residual[rows]
    z, valid = _standardised_columns(r)
    within, between = (float(v[0]) for v in _within_between(z, valid, codes[None], len(names)))
    observed = within - between
    if not np.isfinite(observed):
        undetermined.reasons.append(("undefined_correlations", {}))
        return undetermined
    rng = np.random.default_rng(seed)
    shuffled = rng.permuted(np.broadcast_to(codes, (int(draws), len(codes))), axis=1)
    null_in, null_between = _within_between(z, valid, shuffled, len(names))
    p = float((1 + np.sum(null_in - null_between >= observed - 1e-12)) / (draws + 1))
    clustered = p < alpha and observed > 0
    several = (dims.n_dimensions or 0) >= 2
    verdict = "distinct" if clustered and several else "trace" if clustered else "not distinct"
    return CategoryCheck(categories=[str(n) for n in names], sizes=sizes.tolist(), within=within,
                         between=between, difference=observed, p_value=p, draws=int(draws),
                         verdict=verdict, category_dimensions=cat_dims)
