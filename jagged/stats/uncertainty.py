"""How much of a jaggedness figure is sampling noise, and how sure can we be of it.

A domain score s_d is an estimate from n_d items, so the observed error rates
ê_d = 1 − ŝ_d scatter around the true ones even when the model is equally good everywhere,
and CV_d(ê_d) is inflated by that scatter. This module quantifies it:

* :func:`sampling_noise` — per model, the share of the observed variance of ê_d that
  binomial sampling noise is expected to produce (``noise_share``), the CV with that
  expected noise variance removed (``cv_error_corrected``), a test of equal error in every
  domain (``p_equal_error``) and the flag "jaggedness indistinguishable from noise".
* :func:`bootstrap_intervals` — percentile intervals for ``cv_error``, ``macro_score``,
  ``dep_score`` and ``wedge``: a paired stratified bootstrap over items when item-level
  results exist, else a parametric (binomial) bootstrap from ``n_items``, else none (with
  the reason).
* :func:`noise_sentences` — one plain-language sentence per flagged model.

All functions are pure: DataFrames in, DataFrames out; random draws come from
``numpy.random.default_rng(seed)``, so a seed gives the same result every time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.text import join_note_columns

NOISE_SHARE_THRESHOLD: float = 0.5
EQUAL_ERROR_ALPHA: float = 0.05
INTERVAL_STATISTICS: tuple[str, ...] = ("cv_error", "macro_score", "dep_score", "wedge")
NOISE_COLUMNS: tuple[str, ...] = (
    "model", "var_error", "noise_var", "noise_share", "cv_error_corrected", "p_equal_error", "noise_flag",
    "noise_note",
)
METHOD_ITEMS = "stratified item bootstrap, paired across models"
METHOD_BINOMIAL = "parametric binomial bootstrap from n_items"
REASON_NO_N_ITEMS = "no interval: the scores carry no n_items, so their sampling noise is unknown"
NOTE_NO_N_ITEMS = "sampling noise unknown (no n_items)"
NOTE_SINGLE_ITEM = "sampling noise unknown (a domain has a single item)"
NOTE_NO_VARIATION = ("noise share undefined: the same error rate in every domain and no variation between items "
                     "(every item scored alike)")
#: Upper bound on the entries of one resampling-count block (replicates × items of a domain).
_BLOCK_ENTRIES = 4_000_000


# --------------------------------------------------------------------------- noise

def chi2_sf(x: float, df: int) -> float:
    """Survival function of the chi-square distribution for a whole number of degrees of freedom.

    Parameters
    ----------
    x : float
        Statistic, >= 0.
    df : int
        Degrees of freedom, >= 1.

    Returns
    -------
    float
        P(X >= x) for X ~ chi2(df).

    Notes
    -----
    Closed forms of the regularized upper incomplete gamma Q(df/2, x/2), y = x/2:
    even df = 2k: Q = e^(−y) Σ_{j<k} y^j / j!; odd df = 2k + 1:
    Q = erfc(√y) + e^(−y) Σ_{j=1..k} y^(j−1/2) / Γ(j + 1/2). The terms are summed in log
    space, so there is no overflow for large df or x (numpy only, no scipy).
    """
    if df < 1 or int(df) != df:
        raise ValueError("df must be a positive whole number")
    if not x > 0:
        return 1.0
    y = x / 2.0
    k = int(df) // 2
    if df % 2 == 0:
        j = np.arange(k, dtype=float)
        log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, k, dtype=float)))])[:k]
        terms = -y + j * math.log(y) - log_fact
        return float(min(1.0, np.exp(terms).sum()))
    if k == 0:
        return math.erfc(math.sqrt(y))
    j = np.arange(1, k + 1, dtype=float)
    log_gamma = math.lgamma(0.5) + np.cumsum(np.log(j - 0.5))  # log Γ(j + 1/2)
    terms = -y + (j - 0.5) * math.log(y) - log_gamma
    return float(min(1.0, math.erfc(math.sqrt(y)) + np.exp(terms).sum()))


def domain_noise(scores: pd.DataFrame, items: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (model, domain) sampling variance of the domain error rate.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table (``model``, ``domain``, ``score``, ``n_items``).
    items : pandas.DataFrame, optional
        Item-level table (``model``, ``domain``, ``item``, ``correct``) behind ``scores``.

    Returns
    -------
    pandas.DataFrame
        ``model``, ``domain``, ``error`` (ê_d = 1 − s_d), ``n_items`` (n_d) and
        ``noise_var`` (σ̂_d², NaN when n_d is unknown or 1), in the row order of ``scores``.

    Notes
    -----
    σ_d² = Var(ê_d) = v_d / n_d, with v_d the variance of one item's ``correct`` in the
    domain. It is estimated without bias by σ̂_d² = s_d² / n_d, where s_d² is the sample
    variance with n_d − 1 in the denominator. With item-level data s_d² comes from the
    items (exact for partial credit). From aggregated scores the items are taken as 0/1,
    s_d² = n_d ê_d(1 − ê_d)/(n_d − 1), so σ̂_d² = ê_d(1 − ê_d)/(n_d − 1); for partial
    credit this is an upper bound (a [0, 1] variable with mean p has variance ≤ p(1 − p)),
    so the noise is then overstated, never understated.
    """
    error = 1.0 - scores["score"].to_numpy(dtype=float)
    n = scores["n_items"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = np.where(n > 1, error * (1.0 - error) / (n - 1.0), np.nan)
    out = pd.DataFrame({"model": scores["model"].to_numpy(dtype=object),
                        "domain": scores["domain"].to_numpy(dtype=object),
                        "error": error, "n_items": n, "noise_var": var})
    if items is not None and len(items):
        x = items["correct"].to_numpy(dtype=float)
        if ((x > 0) & (x < 1)).any():
            g = pd.DataFrame({"model": items["model"].to_numpy(dtype=object),
                              "domain": items["domain"].to_numpy(dtype=object), "x": x})
            stats = g.groupby(["model", "domain"], sort=False)["x"].agg(["var", "size"])
            item_var = stats["var"] / stats["size"]
            key = pd.MultiIndex.from_arrays([out["model"], out["domain"]])
            found = item_var.reindex(key).to_numpy(dtype=float)
            out["noise_var"] = np.where(np.isnan(found) & (n > 1), out["noise_var"], found)
    return out


def sampling_noise(scores: pd.DataFrame, items: pd.DataFrame | None = None, *,
                   threshold: float = NOISE_SHARE_THRESHOLD, alpha: float = EQUAL_ERROR_ALPHA) -> pd.DataFrame:
    """How much of each model's spread of domain errors binomial sampling noise explains.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table; ``n_items`` is needed (NaN gives NaN results).
    items : pandas.DataFrame, optional
        Item-level table behind ``scores`` (exact noise for partial credit).
    threshold : float
        ``noise_share`` above which a model is flagged.
    alpha : float
        Level of the test of equal error in every domain; p >= alpha is flagged.

    Returns
    -------
    pandas.DataFrame
        One row per model (sorted by name) with columns

        ``model``
            model name;
        ``var_error``
            V_obs = (1/D) Σ_d (ê_d − ē)², the observed population variance (ddof=0);
        ``noise_var``
            N̂ = ((D − 1)/D²) Σ_d σ̂_d², the part of V_obs sampling noise is expected to add;
        ``noise_share``
            N̂ / V_obs, capped at 1 (1 when V_obs = 0 < N̂; NaN without n_items);
        ``cv_error_corrected``
            √max(V_obs − N̂, 0) / ē, the CV with the expected noise variance removed;
        ``p_equal_error``
            p-value of the chi-square test that every domain has the same error rate;
        ``noise_flag``
            True when jaggedness is indistinguishable from noise (rule below);
        ``noise_note``
            the flag in words, or why the noise is unknown; empty otherwise.

    Notes
    -----
    *Derivation.* Write ê_d = e_d + ε_d with E[ε_d] = 0, Var(ε_d) = σ_d², independent
    across domains (different items), and ē = (1/D) Σ_d ê_d. Then ê_d − ē =
    (e_d − e̅) + (ε_d − ε̄) and, since the cross term has expectation 0,

        E[V_obs] = V_true + E[(1/D) Σ_d (ε_d − ε̄)²]
                 = V_true + (1/D) (Σ_d σ_d² − D · Var(ε̄))
                 = V_true + (1/D) (Σ_d σ_d² − (1/D) Σ_d σ_d²)
                 = V_true + ((D − 1)/D²) Σ_d σ_d²,

    with V_true = (1/D) Σ_d (e_d − e̅)² the population variance of the true rates. The
    (D − 1)/D factor is what ddof=0 brings: the noise in ē itself absorbs one D-th of it.
    σ_d² is estimated without bias by σ̂_d² (see :func:`domain_noise`), so
    V̂_true = V_obs − N̂ is unbiased for V_true, and

        noise_share        = N̂ / V_obs
        cv_error_corrected = √max(V̂_true, 0) / ē.

    The floor at 0 makes the corrected CV slightly biased upward when the true CV is near
    0 (it cannot be negative); it is still far closer to the truth than the raw CV there.
    The corrected CV is an estimate, not an observation: for a single model it can be 0
    while the true CV is not, and vice versa.

    *Test of equal error.* Pearson's chi-square for the D × 2 table of (wrong, right)
    counts: X² = Σ_d n_d (ê_d − ẽ)² / (ẽ(1 − ẽ)) with ẽ = Σ n_d ê_d / Σ n_d, on D − 1
    degrees of freedom (for partial credit, ẽ(1 − ẽ) bounds the item variance from above,
    so the test is conservative and flags more).

    *Flag rule.* A model is flagged "jaggedness indistinguishable from sampling noise"
    when ``noise_share > threshold`` (noise is expected to produce most of the observed
    spread) **or** ``p_equal_error >= alpha`` (equal error in every domain is compatible
    with the data). When every domain has the same true error, noise_share is above 0.5
    with probability P(χ²_{D−1} < 2(D − 1)) (0.91 at D = 5, 0.97 at D = 10) and the test
    does not reject with probability 1 − alpha, so the flag fires with probability at
    least 0.95 whatever D is.

    Edge cases: fewer than 2 domains or ē = 0 give NaN (the CV is undefined); a domain
    with unknown n_items or a single item makes the model's noise unknown (NaN, note);
    the same error in every domain with no variation between items (every item wrong,
    or every item given the same partial credit) leaves the noise share 0/0 (NaN, note
    :data:`NOTE_NO_VARIATION`), while the test of equal error has p = 1.
    """
    noise = domain_noise(scores, items)
    codes, models = pd.factorize(noise["model"], sort=True)
    m = len(models)

    def total(values: np.ndarray) -> np.ndarray:
        return np.bincount(codes, weights=values, minlength=m)

    e = noise["error"].to_numpy(dtype=float)
    n = noise["n_items"].to_numpy(dtype=float)
    var = noise["noise_var"].to_numpy(dtype=float)
    d = np.bincount(codes, minlength=m).astype(float)
    mean_e = total(e) / d
    dev = e - mean_e[codes]
    v_obs = total(dev * dev) / d
    unknown_n = total(np.isnan(n).astype(float)) > 0
    unknown_var = total(np.isnan(var).astype(float)) > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        n_hat = (d - 1.0) / d ** 2 * total(np.nan_to_num(var))
        n_hat[unknown_var] = np.nan
        share = np.where(v_obs > 0, n_hat / np.where(v_obs > 0, v_obs, 1.0), np.where(n_hat > 0, 1.0, np.nan))
        share = np.minimum(share, 1.0)
        corrected = np.sqrt(np.maximum(v_obs - n_hat, 0.0)) / mean_e
        corrected[np.isnan(n_hat)] = np.nan
        pooled = total(np.nan_to_num(n * e)) / total(np.nan_to_num(n))
        x2 = total(np.nan_to_num(n * (e - pooled[codes]) ** 2)) / (pooled * (1.0 - pooled))
    undefined = (d < 2) | ~(mean_e > 0)
    share[undefined] = np.nan
    corrected[undefined] = np.nan
    p = np.full(m, np.nan)
    for k in np.flatnonzero(~undefined & ~unknown_n):
        p[k] = 1.0 if not np.isfinite(x2[k]) else chi2_sf(float(x2[k]), int(d[k]) - 1)
    flag = (share > threshold) | (p >= alpha)
    notes = np.full(m, "", dtype=object)
    for k in range(m):
        if undefined[k]:
            continue
        if unknown_n[k]:
            notes[k] = NOTE_NO_N_ITEMS
            continue
        if unknown_var[k]:
            notes[k] = NOTE_SINGLE_ITEM
        elif np.isnan(share[k]):                 # V_obs = 0 = N̂: nothing varies, not even the items
            notes[k] = NOTE_NO_VARIATION
        if flag[k]:                              # the flag's own reason, after why the share is missing
            notes[k] = "; ".join(filter(None, (notes[k], _flag_note(share[k], p[k], threshold, alpha))))
    return pd.DataFrame({
        "model": np.asarray(models, dtype=object),
        "var_error": v_obs,
        "noise_var": n_hat,
        "noise_share": share,
        "cv_error_corrected": corrected,
        "p_equal_error": p,
        "noise_flag": flag,
        "noise_note": notes,
    })


def _flag_note(share: float, p: float, threshold: float, alpha: float) -> str:
    reasons = []
    if share > threshold:
        reasons.append(f"noise share {share:.0%}")
    if p >= alpha:
        reasons.append(f"equal error in every domain not rejected, p = {p:.2g}")
    return "jaggedness indistinguishable from sampling noise (" + "; ".join(reasons) + ")"


def noise_sentences(table: pd.DataFrame) -> list[str]:
    """One plain-language sentence per model flagged as noise-dominated.

    Parameters
    ----------
    table : pandas.DataFrame
        A metrics table with ``model``, ``cv_error``, ``noise_share``,
        ``cv_error_corrected``, ``p_equal_error`` and ``noise_flag`` (one row per model;
        profile rows of the same model are collapsed).

    Returns
    -------
    list of str
        Sentences in table order; empty when no model is flagged.
    """
    rows = table.drop_duplicates("model")
    rows = rows[rows["noise_flag"].fillna(False).astype(bool)]
    out = []
    for row in rows.itertuples(index=False):
        share = getattr(row, "noise_share")
        text = (f"{row.model}: sampling noise alone would produce about {share:.0%} of the spread of its "
                f"domain error rates, so its jaggedness (CV {row.cv_error:.3f}, or "
                f"{row.cv_error_corrected:.3f} with the expected noise removed) cannot be told apart "
                f"from noise")
        p = getattr(row, "p_equal_error")
        if np.isfinite(p) and p >= EQUAL_ERROR_ALPHA:
            text += f"; the data are even compatible with equal error in every domain (p = {p:.2g})"
        out.append(text + ". More items per domain would be needed to tell.")
    return out


# --------------------------------------------------------------------------- bootstrap

@dataclass
class Replicates:
    """Bootstrap replicates of the per-model statistics.

    Attributes
    ----------
    models : numpy.ndarray
        Model names (sorted), length M.
    profiles : numpy.ndarray
        Profile names, length P (0 without weights).
    cv_error : numpy.ndarray
        B × M noise-corrected CV replicates (see :func:`bootstrap_intervals`, Notes).
    macro_score : numpy.ndarray
        B × M.
    dep_score, wedge : numpy.ndarray
        B × M × P.
    method : str
        Which bootstrap produced them.
    extra : dict
        B × M replicates of further statistics computed on the same replicates (the
        ``statistics`` of :func:`bootstrap_replicates`), by name.
    """

    models: np.ndarray
    profiles: np.ndarray
    cv_error: np.ndarray
    macro_score: np.ndarray
    dep_score: np.ndarray
    wedge: np.ndarray
    method: str
    extra: dict[str, np.ndarray] = field(default_factory=dict)


#: A further per-model statistic of the replicates: ``f(num, den, present, models, domains)``
#: → b × M, called with each chunk's b × M × D sums Σ c·x and Σ c·present (see
#: :func:`resampled_sums`), the M × D ``present`` mask and the model and domain names.
ReplicateStatistic = Callable[..., np.ndarray]


def _collect(chunks: Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]], present: np.ndarray,
             weights: np.ndarray, statistics: Mapping[str, ReplicateStatistic] | None, models: np.ndarray,
             domains: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """:func:`replicate_statistics` and the extra ``statistics`` over every chunk of replicate sums."""
    statistics = dict(statistics or {})
    parts, extra = [], {name: [] for name in statistics}
    for num, den, sq in chunks:
        parts.append(replicate_statistics(num, den, sq, present, weights))
        for name, func in statistics.items():
            extra[name].append(func(num, den, present, models, domains))
    cv, macro, dep, wedge = (np.concatenate([p[i] for p in parts]) for i in range(4))
    return cv, macro, dep, wedge, {name: np.concatenate(v) for name, v in extra.items()}


def _check_settings(n_boot: int, ci: float) -> None:
    if int(n_boot) != n_boot or n_boot < 1:
        raise JaggedInputError(f"bootstrap replicates must be a positive whole number, not {n_boot!r}")
    if not 0 < ci < 1:
        raise JaggedInputError(f"interval level must be between 0 and 1 (e.g. 0.95), not {ci!r}")


@dataclass
class ItemMatrix:
    """Item-level results as an items × models matrix, items grouped by domain.

    Attributes
    ----------
    correct : numpy.ndarray
        N × M float ``correct`` (0 where the model lacks the item).
    present : numpy.ndarray
        N × M bool, True where the model has a result for the item.
    bounds : numpy.ndarray
        D + 1 row offsets: domain d owns rows ``bounds[d]:bounds[d + 1]``.
    models : numpy.ndarray
        Model names, length M.
    domains : numpy.ndarray
        Domain names, length D.
    """

    correct: np.ndarray
    present: np.ndarray
    bounds: np.ndarray
    models: np.ndarray
    domains: np.ndarray

    @property
    def partial(self) -> bool:
        """True when some ``correct`` lies strictly between 0 and 1."""
        return bool(((self.correct > 0) & (self.correct < 1)).any())


def item_matrix(items: pd.DataFrame, models: np.ndarray | None = None,
                domains: np.ndarray | None = None) -> ItemMatrix:
    """Arrange an item-level table as an :class:`ItemMatrix`.

    Parameters
    ----------
    items : pandas.DataFrame
        Validated item table (``model``, ``domain``, ``item``, ``correct``).
    models, domains : numpy.ndarray, optional
        Column and domain order (default: sorted names). Domains without items get no
        rows.

    Returns
    -------
    ItemMatrix
    """
    models = np.asarray(sorted(pd.unique(items["model"])) if models is None else models, dtype=object)
    domains = np.asarray(sorted(pd.unique(items["domain"])) if domains is None else domains, dtype=object)
    item_codes, item_names = pd.factorize(items["item"])
    model_codes = pd.Index(models).get_indexer(items["model"])
    domain_of_row = pd.Index(domains).get_indexer(items["domain"])
    item_domain = np.empty(len(item_names), dtype=np.int64)
    item_domain[item_codes] = domain_of_row
    order = np.argsort(item_domain, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    rows = position[item_codes]
    x = np.zeros((len(item_names), len(models)), dtype=float)
    a = np.zeros((len(item_names), len(models)), dtype=bool)
    x[rows, model_codes] = items["correct"].to_numpy(dtype=float)
    a[rows, model_codes] = True
    bounds = np.concatenate([[0], np.cumsum(np.bincount(item_domain, minlength=len(domains)))])
    return ItemMatrix(correct=x, present=a, bounds=bounds, models=models, domains=domains)


def _chunks(n_boot: int, size: int) -> Iterator[int]:
    done = 0
    while done < n_boot:
        step = min(size, n_boot - done)
        yield step
        done += step


def resampled_sums(matrix: ItemMatrix, n_boot: int, rng: np.random.Generator
                   ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """Stratified, paired item resampling: per chunk of replicates, the domain sums.

    Parameters
    ----------
    matrix : ItemMatrix
        The item-level results.
    n_boot : int
        Replicates in total.
    rng : numpy.random.Generator
        Source of the draws.

    Yields
    ------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray or None)
        b × M × D arrays Σ c·x, Σ c·present and (partial credit only) Σ c·x² for the next
        b replicates, where c are the resampling counts of the domain's items.

    Notes
    -----
    For each domain and replicate, n_d items are drawn with replacement from the domain's
    n_d items, and c counts how often each was drawn (a multinomial(n_d, 1/n_d) vector).
    The same c serves every model (paired). The sums of all models are one matrix
    product ``C @ X_d`` (b × n_d times n_d × M) per domain; there is no loop over
    replicates or models.
    """
    x, bounds = matrix.correct, matrix.bounds
    complete = bool(matrix.present.all())
    af = matrix.present.astype(float)
    x2 = x * x if matrix.partial else None
    widest = int(np.diff(bounds).max()) if len(bounds) > 1 else 1
    size = int(max(1, min(n_boot, _BLOCK_ENTRIES // max(widest, 1))))
    n_models, n_domains = x.shape[1], len(bounds) - 1
    for b in _chunks(n_boot, size):
        num = np.zeros((b, n_models, n_domains))
        den = np.zeros((b, n_models, n_domains))
        sq = np.zeros((b, n_models, n_domains)) if x2 is not None else None
        for d in range(n_domains):
            lo, hi = int(bounds[d]), int(bounds[d + 1])
            n_d = hi - lo
            if n_d == 0:
                continue
            draws = rng.integers(0, n_d, size=(b, n_d)) + np.arange(b)[:, None] * n_d
            counts = np.bincount(draws.ravel(), minlength=b * n_d).reshape(b, n_d).astype(float)
            num[:, :, d] = counts @ x[lo:hi]
            den[:, :, d] = n_d if complete else counts @ af[lo:hi]
            if sq is not None:
                sq[:, :, d] = counts @ x2[lo:hi]
        yield num, den, sq


def _binomial_replicate_sums(s: np.ndarray, n: np.ndarray, n_boot: int, rng: np.random.Generator
                             ) -> Iterator[tuple[np.ndarray, np.ndarray, None]]:
    """Per chunk: (k, n, None) with k ~ Binomial(n_d, ŝ_d) for every model and domain."""
    present = ~np.isnan(s)
    p = np.where(present, s, 0.0)
    nn = np.where(present, n, 0).astype(np.int64)
    size = int(max(1, min(n_boot, _BLOCK_ENTRIES // max(s.size, 1))))
    for b in _chunks(n_boot, size):
        k = rng.binomial(nn[None], p[None], size=(b,) + s.shape).astype(float)
        yield k, np.broadcast_to(nn.astype(float), (b,) + s.shape), None


def replicate_statistics(num: np.ndarray, den: np.ndarray, sq: np.ndarray | None, present: np.ndarray,
                         weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-replicate statistics from replicate domain sums.

    Parameters
    ----------
    num, den : numpy.ndarray
        b × M × D: Σ c·x and Σ c·present (replicate domain score = num / den).
    sq : numpy.ndarray or None
        b × M × D Σ c·x² for partial credit; None for 0/1 data.
    present : numpy.ndarray
        M × D bool: the model has the domain in the original data.
    weights : numpy.ndarray
        P × D weight matrix (P may be 0).

    Returns
    -------
    (cv_error, macro_score, dep_score, wedge)
        b × M, b × M, b × M × P, b × M × P. ``cv_error`` is the twice-corrected replicate
        √max(V* − 2N̂*, 0)/ē* (see :func:`bootstrap_intervals`); ``wedge`` is
        Σ_d (1/D − w_d) s_d, exactly 0 for uniform weights.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(present[None] & (den > 0), num / den, np.nan)
        e = 1.0 - s
        ok = ~np.isnan(s)
        d = present.sum(axis=1).astype(float)[None]              # 1 × M: the model's own D
        e0 = np.where(ok, e, 0.0)
        mean_e = e0.sum(axis=2) / d
        dev = np.where(ok, e - mean_e[..., None], 0.0)
        v = (dev * dev).sum(axis=2) / d
        if sq is None:
            item_var = e * (1.0 - e) * den / (den - 1.0)         # sample variance of 0/1 items
        else:
            item_var = (sq - num * num / den) / (den - 1.0)
        sigma2 = np.where(ok & (den > 1), item_var / den, np.nan)
        noise = (d - 1.0) / d ** 2 * np.where(ok, sigma2, 0.0).sum(axis=2)
        noise[(ok & np.isnan(sigma2)).any(axis=2)] = np.nan       # a single-item domain: unknown
        cv = np.sqrt(np.maximum(v - 2.0 * noise, 0.0)) / mean_e
        lost = ~(ok == present[None]).all(axis=2)                  # a domain drew none of its items
        cv[lost | (d < 2) | ~(mean_e > 0)] = np.nan
        s0 = np.where(ok, s, 0.0)
        macro = s0.sum(axis=2) / d
        macro[lost] = np.nan
        uniform = present / present.sum(axis=1, keepdims=True)    # M × D: 1/D_m on own domains
        dep = s0 @ weights.T                                       # b × M × P
        wedge = np.einsum("bmd,mpd->bmp", s0, uniform[:, None, :] - weights[None, :, :])
        lacking = ((~ok).astype(float) @ (weights > 0).T.astype(float)) > 0
        dep[lacking] = np.nan
        wedge[lacking] = np.nan
    return cv, macro, dep, wedge


def _weight_array(weights: pd.DataFrame | None, domains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if weights is None or len(weights) == 0:
        return np.zeros((0, len(domains))), np.asarray([], dtype=object)
    w = np.nan_to_num(weights.reindex(columns=list(domains)).to_numpy(dtype=float))
    return w, np.asarray(weights.index, dtype=object)


def replicates_from_matrix(matrix: ItemMatrix, *, weights: pd.DataFrame | None = None, n_boot: int = 2000,
                           seed: int = 0, statistics: Mapping[str, ReplicateStatistic] | None = None
                           ) -> "Replicates":
    """Paired stratified item bootstrap on an :class:`ItemMatrix`.

    Parameters
    ----------
    matrix : ItemMatrix
        Item-level results.
    weights : pandas.DataFrame, optional
        Profiles × domains weight matrix (columns matched to ``matrix.domains`` by name).
    n_boot : int
        Replicates B.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    Replicates
    """
    _check_settings(n_boot, 0.5)
    rng = np.random.default_rng(seed)
    present = np.zeros((len(matrix.models), len(matrix.domains)), dtype=bool)
    for d in range(len(matrix.domains)):
        present[:, d] = matrix.present[matrix.bounds[d]:matrix.bounds[d + 1]].any(axis=0)
    w, profiles = _weight_array(weights, matrix.domains)
    cv, macro, dep, wedge, extra = _collect(resampled_sums(matrix, n_boot, rng), present, w, statistics,
                                            matrix.models, matrix.domains)
    return Replicates(models=matrix.models, profiles=profiles, cv_error=cv, macro_score=macro, dep_score=dep,
                      wedge=wedge, method=METHOD_ITEMS, extra=extra)


def bootstrap_replicates(scores: pd.DataFrame, items: pd.DataFrame | None = None, *,
                         weights: pd.DataFrame | None = None, n_boot: int = 2000, seed: int = 0,
                         statistics: Mapping[str, ReplicateStatistic] | None = None) -> Replicates:
    """Bootstrap replicates of cv_error (noise-corrected), macro_score, dep_score and wedge.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table.
    items : pandas.DataFrame, optional
        Item-level table behind ``scores``; when given, the paired stratified item
        bootstrap is used (:func:`replicates_from_matrix`), else the parametric binomial
        bootstrap from ``n_items``.
    weights : pandas.DataFrame, optional
        Profiles × domains weight matrix (:func:`jagged.stats.weights.resolve_profiles`); it
        must have a column for every score domain.
    n_boot : int
        Number of replicates B.
    seed : int
        Seed of ``numpy.random.default_rng``.
    statistics : mapping of str to callable, optional
        Further per-model statistics to compute on the same replicates
        (:data:`ReplicateStatistic`), e.g. the relative jaggedness of
        :func:`jagged.stats.structure.replicate_statistic`; they land in ``extra``.

    Returns
    -------
    Replicates
        Models without ``n_items`` (parametric case) get all-NaN replicates.

    Raises
    ------
    JaggedInputError
        ``n_boot`` < 1; a score domain without a weight column.
    """
    _check_settings(n_boot, 0.5)
    wide = scores.pivot(index="model", columns="domain", values="score").sort_index()
    models = np.asarray(wide.index, dtype=object)
    score_domains = sorted(wide.columns)
    if weights is not None and len(weights):
        lacking = [d for d in score_domains if d not in set(weights.columns)]
        if lacking:
            raise JaggedInputError(f"weight matrix has no column for score domain(s) {', '.join(lacking[:5])}")
    extra = [] if weights is None else sorted(d for d in weights.columns if d not in set(score_domains))
    domains = np.asarray(score_domains + extra, dtype=object)  # extra: weighted but never scored
    if items is not None and len(items):
        return replicates_from_matrix(item_matrix(items, models, domains), weights=weights, n_boot=n_boot,
                                      seed=seed, statistics=statistics)
    rng = np.random.default_rng(seed)
    s = wide.reindex(columns=domains).to_numpy(dtype=float)
    present = ~np.isnan(s)
    n = scores.pivot(index="model", columns="domain", values="n_items").sort_index().reindex(
        columns=domains).to_numpy(dtype=float)
    usable = ~(present & np.isnan(n)).any(axis=1)
    w, profiles = _weight_array(weights, domains)
    cv, macro, dep, wedge, more = _collect(_binomial_replicate_sums(s, np.nan_to_num(n), n_boot, rng), present, w,
                                           statistics, models, domains)
    for arr in (cv, macro, dep, wedge, *more.values()):
        arr[:, ~usable] = np.nan
    return Replicates(models=models, profiles=profiles, cv_error=cv, macro_score=macro, dep_score=dep,
                      wedge=wedge, method=METHOD_BINOMIAL, extra=more)


def _quantiles(values: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray]:
    import warnings

    levels = [(1.0 - ci) / 2.0, (1.0 + ci) / 2.0]
    if not np.isnan(values).any():  # one vectorised call; nanquantile loops over columns
        lo, hi = np.quantile(values, levels, axis=0)
        return lo, hi
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns give NaN, which is the point
        lo, hi = np.nanquantile(values, levels, axis=0)
    return lo, hi


def bootstrap_intervals(scores: pd.DataFrame, items: pd.DataFrame | None = None, *,
                        weights: pd.DataFrame | None = None, n_boot: int = 2000, seed: int = 0,
                        ci: float = 0.95, statistics: Mapping[str, ReplicateStatistic] | None = None
                        ) -> pd.DataFrame:
    """Percentile bootstrap intervals for cv_error, macro_score, dep_score and wedge.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table.
    items : pandas.DataFrame, optional
        Item-level table behind ``scores`` (paired stratified item bootstrap).
    weights : pandas.DataFrame, optional
        Profiles × domains weight matrix; adds ``dep_score`` and ``wedge`` intervals.
    n_boot : int
        Number of replicates B (the CLI default is 2000).
    seed : int
        Seed of ``numpy.random.default_rng``; the same seed gives the same intervals.
    ci : float
        Interval level, e.g. 0.95.
    statistics : mapping of str to callable, optional
        Further per-model statistics of the same replicates (see
        :func:`bootstrap_replicates`); each adds ``<name>_lo`` and ``<name>_hi`` after the
        ``macro_score`` interval.

    Returns
    -------
    pandas.DataFrame
        One row per model (sorted), or per profile × model with ``weights`` (profiles in
        matrix order, models sorted, like :func:`jagged.stats.analysis.metrics_table`), with
        ``model``, [``profile``], ``cv_error_lo``, ``cv_error_hi``, ``macro_score_lo``,
        ``macro_score_hi``, [``dep_score_lo``, ``dep_score_hi``, ``wedge_lo``,
        ``wedge_hi``], ``interval_method`` and ``interval_note`` (why a row has no
        interval; empty otherwise).

    Notes
    -----
    *Resampling.* With item-level data, each replicate draws, within every domain, n_d
    items with replacement from the domain's n_d items — one multinomial(n_d, 1/n_d)
    count vector c per domain, **the same for every model** (paired). A model's replicate
    domain score is (c · x_m) / (c · a_m), x_m its correctness and a_m its presence over
    the domain's items, so models lacking items use only items they have (never imputed).
    All models' replicate domain scores come from one matrix product c @ X per domain and
    chunk of replicates; there is no loop over replicates or models. Without items, each
    score is redrawn as Binomial(n_d, ŝ_d)/n_d (parametric; independent across models).
    Without ``n_items`` a model gets no interval and ``interval_note`` says why.

    *Intervals.* ``macro_score``, ``dep_score`` = Σ_d w_d s_d (S_rep @ W.T) and ``wedge``
    = macro − dep are linear in the scores, so their percentile intervals
    [q_{(1−ci)/2}, q_{(1+ci)/2}] over replicates are used as is.

    The raw CV is biased upward by noise (see :func:`sampling_noise`), and a replicate
    is noisier still: in the bootstrap world the "true" rates are the observed ones, which
    already carry the noise N once, and resampling adds it again, so E*[V*] ≈ V_true + 2N.
    Each replicate is therefore corrected twice, cv* = √max(V* − 2N̂*, 0) / ē*, with N̂*
    computed from the replicate as in :func:`sampling_noise`. This centres the replicates
    on the corrected estimate V_obs − N̂ with the spread of the estimator, and the
    percentile interval of cv* is an interval for the **noise-free** CV (what
    ``cv_error_corrected`` estimates). It is not centred on the raw ``cv_error``, which can
    lie above it when noise is large. Its lower end is 0 when equal error in every domain
    cannot be excluded.
    """
    _check_settings(n_boot, ci)
    reps = bootstrap_replicates(scores, items, weights=weights, n_boot=n_boot, seed=seed, statistics=statistics)
    cv_lo, cv_hi = _quantiles(reps.cv_error, ci)
    mac_lo, mac_hi = _quantiles(reps.macro_score, ci)
    usable = ~np.isnan(reps.macro_score).all(axis=0)
    note = np.where(usable, "", REASON_NO_N_ITEMS).astype(object)
    method = np.where(usable, reps.method, "").astype(object)
    base = pd.DataFrame({"model": reps.models, "cv_error_lo": cv_lo, "cv_error_hi": cv_hi,
                         "macro_score_lo": mac_lo, "macro_score_hi": mac_hi})
    more = []
    for name, values in reps.extra.items():
        base[f"{name}_lo"], base[f"{name}_hi"] = _quantiles(values, ci)
        more += [f"{name}_lo", f"{name}_hi"]
    if len(reps.profiles) == 0:
        return base.assign(interval_method=method, interval_note=note)
    dep_lo, dep_hi = _quantiles(reps.dep_score, ci)     # M × P
    wed_lo, wed_hi = _quantiles(reps.wedge, ci)
    n_models, n_profiles = len(reps.models), len(reps.profiles)
    per_profile = pd.DataFrame({
        "model": np.tile(reps.models, n_profiles),
        "profile": np.repeat(reps.profiles, n_models),
        "dep_score_lo": dep_lo.T.ravel(), "dep_score_hi": dep_hi.T.ravel(),
        "wedge_lo": wed_lo.T.ravel(), "wedge_hi": wed_hi.T.ravel(),
    })
    out = per_profile.merge(base, on="model", how="left")
    out["interval_method"] = np.tile(method, n_profiles)
    out["interval_note"] = np.tile(note, n_profiles)
    cols = ["model", "profile", "cv_error_lo", "cv_error_hi", "macro_score_lo", "macro_score_hi", *more,
            "dep_score_lo", "dep_score_hi", "wedge_lo", "wedge_hi", "interval_method", "interval_note"]
    return out[cols]


# --------------------------------------------------------------------------- metrics table

def _place_after(table: pd.DataFrame, anchor: str, columns: list[str]) -> pd.DataFrame:
    """Move ``columns`` (those present) right after ``anchor`` (or to the end without it)."""
    columns = [c for c in columns if c in table.columns]
    rest = [c for c in table.columns if c not in columns]
    at = rest.index(anchor) + 1 if anchor in rest else len(rest)
    return table[rest[:at] + columns + rest[at:]]


def add_noise(table: pd.DataFrame, scores: pd.DataFrame, items: pd.DataFrame | None = None, *,
              threshold: float = NOISE_SHARE_THRESHOLD, alpha: float = EQUAL_ERROR_ALPHA) -> pd.DataFrame:
    """Add the :func:`sampling_noise` columns to a per-model metrics table.

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`jagged.jaggedness` (one row per model, with ``note``).
    scores, items : pandas.DataFrame
        The data behind it (``items`` optional).
    threshold, alpha : float
        The flag rule of :func:`sampling_noise`.

    Returns
    -------
    pandas.DataFrame
        ``table`` with ``cv_error_corrected``, ``noise_share``, ``p_equal_error`` and
        ``noise_flag`` after ``cv_error``, and ``noise_note`` appended to ``note``.
    """
    noise = sampling_noise(scores, items, threshold=threshold, alpha=alpha).set_index("model")
    noise = noise.reindex(table["model"].to_numpy())
    cols = ["cv_error_corrected", "noise_share", "p_equal_error", "noise_flag"]
    out = table.assign(**{c: noise[c].to_numpy() for c in cols})
    out["noise_flag"] = out["noise_flag"].fillna(False).astype(bool)
    out["note"] = join_note_columns(out["note"].to_numpy(dtype=object), noise["noise_note"].fillna("").to_numpy())
    return _place_after(out, "cv_error", cols)


def add_intervals(table: pd.DataFrame, scores: pd.DataFrame, items: pd.DataFrame | None = None, *,
                  weights: pd.DataFrame | None = None, n_boot: int = 2000, seed: int = 0,
                  ci: float = 0.95, statistics: Mapping[str, ReplicateStatistic] | None = None) -> pd.DataFrame:
    """Add :func:`bootstrap_intervals` columns to a metrics table.

    Parameters
    ----------
    table : pandas.DataFrame
        A metrics table, per model or per profile × model (with ``profile``).
    scores, items : pandas.DataFrame
        The data behind it (``items`` optional).
    weights : pandas.DataFrame, optional
        The profiles × domains matrix behind the ``profile`` rows.
    n_boot, seed, ci, statistics
        See :func:`bootstrap_intervals`; a statistic's interval goes after its column
        when the table has one.

    Returns
    -------
    pandas.DataFrame
        ``table`` with ``<stat>_lo`` / ``<stat>_hi`` after each statistic, and
        ``interval_method`` and ``interval_note`` before ``note``.
    """
    by_profile = "profile" in table.columns and weights is not None and len(weights) > 0
    iv = bootstrap_intervals(scores, items, weights=weights if by_profile else None, n_boot=n_boot, seed=seed,
                             ci=ci, statistics=statistics)
    keys = ["model", "profile"] if by_profile else ["model"]
    out = table.merge(iv, on=keys, how="left", validate="one_to_one")
    for stat in INTERVAL_STATISTICS + tuple(statistics or ()):
        if stat in out.columns:
            out = _place_after(out, stat, [f"{stat}_lo", f"{stat}_hi"])
        else:
            out = out.drop(columns=[c for c in (f"{stat}_lo", f"{stat}_hi") if c in out.columns])
    out["interval_method"] = out["interval_method"].fillna("")
    out["interval_note"] = out["interval_note"].fillna("")
    rest = [c for c in out.columns if c not in ("interval_method", "interval_note", "note")]
    return out[rest + ["interval_method", "interval_note"] + (["note"] if "note" in out.columns else [])]


# --------------------------------------------------------------------------- report text

def noise_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The per-model noise and interval columns of a metrics table, for a report.

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`jagged.stats.analysis.metrics_table` (profile rows are collapsed).

    Returns
    -------
    pandas.DataFrame
        One row per model, highest ``cv_error_corrected`` first (undefined last):
        ``model``, ``cv_error``, ``cv_error_corrected``, ``cv_error_lo``,
        ``cv_error_hi`` (when present), ``noise_share``, ``p_equal_error`` and
        ``noise_flag`` as ``"noise"`` or ``""``.
    """
    columns = ["model", "cv_error", "cv_error_corrected", "cv_error_lo", "cv_error_hi", "noise_share",
               "p_equal_error", "noise_flag"]
    rows = table.drop_duplicates("model").loc[:, [c for c in columns if c in table.columns]]
    rows = rows.sort_values(["cv_error_corrected", "model"], ascending=[False, True], na_position="last",
                            kind="mergesort").reset_index(drop=True)
    if "noise_flag" in rows.columns:
        rows["noise_flag"] = np.where(rows["noise_flag"].fillna(False).astype(bool), "noise", "")
    return rows


def uncertainty_statement(table: pd.DataFrame, *, n_boot: int, ci: float) -> str:
    """One paragraph on where the intervals come from, or why there are none.

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`jagged.stats.analysis.metrics_table`.
    n_boot : int
        The bootstrap replicates asked for (0: none).
    ci : float
        The interval level.

    Returns
    -------
    str
    """
    rows = table.drop_duplicates("model")
    flagged = int(rows["noise_flag"].fillna(False).astype(bool).sum()) if "noise_flag" in rows else 0
    unknown = int(rows["noise_share"].isna().sum()) if "noise_share" in rows else len(rows)
    parts = []
    if unknown == len(rows):
        parts.append("Sampling noise cannot be assessed: the scores carry no n_items (items per domain), "
                     "so neither noise_share nor the corrected CV can be computed.")
    else:
        parts.append(f"{flagged:,} of {len(rows):,} models have jaggedness indistinguishable from sampling noise"
                     + (f"; for {unknown} the noise is unknown (no n_items)" if unknown else "") + ".")
    if n_boot <= 0 or "cv_error_lo" not in rows.columns:
        parts.append("No intervals were computed (bootstrap = 0).")
    else:
        methods = sorted({m for m in rows["interval_method"] if m})
        none = rows[rows["interval_note"] != ""]
        if methods:
            parts.append(f"Intervals: {ci:.0%} percentile intervals from {n_boot} replicates of a "
                         f"{' and a '.join(methods)}.")
        if len(none) == len(rows):
            parts.append("No interval could be computed: the scores carry no n_items, so their sampling "
                         "noise is unknown; give item counts or item-level results to get intervals.")
        elif len(none):
            parts.append(f"No interval for {len(none)} models without n_items: "
                         f"{', '.join(map(str, none['model'].head(5)))}{' ...' if len(none) > 5 else ''}.")
    return " ".join(parts)
