"""Sampling noise of a jaggedness figure: how much of the spread of a model's domain error rates it explains.

A domain score s_d is an estimate from n_d items, so the observed error rates
ê_d = 1 − ŝ_d scatter around the true ones even when the model is equally good everywhere,
and CV_d(ê_d) is inflated by that scatter. This module quantifies it:

* :func:`sampling_noise` — per model, the share of the observed variance of ê_d that
  binomial sampling noise is expected to produce (``noise_share``), the CV with that
  expected noise variance removed (``cv_error_corrected``), a test of equal error in every
  domain (``p_equal_error``) and the flag "jaggedness indistinguishable from noise";
  :func:`add_noise` puts those columns into the metrics table, :func:`noise_summary` picks them out.

Intervals (the bootstrap) are in :mod:`jagged.stats.bootstrap`; the sentences a report
writes about both are in :mod:`jagged.views.uncertainty_text`. All functions are pure.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from jagged.text import flag_text, join_note_columns

NOISE_SHARE_THRESHOLD: float = 0.5
EQUAL_ERROR_ALPHA: float = 0.05
NOISE_COLUMNS: tuple[str, ...] = (
    "model", "var_error", "noise_var", "noise_share", "cv_error_corrected", "p_equal_error", "noise_flag",
    "noise_note",
)
NOTE_NO_N_ITEMS = "sampling noise unknown (no n_items)"
NOTE_SINGLE_ITEM = "sampling noise unknown (a domain has a single item)"
NOTE_NO_VARIATION = ("noise share undefined: the same error rate in every domain and no variation between items "
                     "(every item scored alike)")

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
            True when jaggedness is indistinguishable from noise (rule below), False
            when it is distinguishable, missing (``pd.NA``; pandas ``"boolean"`` dtype)
            when nothing could be tested (no ``n_items``, fewer than 2 domains, no
            errors): unknown is not False, so ``noise_flag == False`` keeps only tested
            models;
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

    Edge cases: fewer than 2 domains or ē = 0 give NaN (the CV is undefined) and a missing
    flag; a domain with unknown n_items makes the model's noise unknown (NaN, missing flag,
    note); a domain with a single item leaves the noise share unknown (NaN, note) while the
    test of equal error still decides the flag;
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
    with np.errstate(invalid="ignore"):
        flag = (share > threshold) | (p >= alpha)
    untested = np.isnan(share) & np.isnan(p)     # nothing to test: unknown, not False
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
        "noise_flag": pd.array(np.where(untested, None, flag), dtype="boolean"),
        "noise_note": notes,
    })


def _flag_note(share: float, p: float, threshold: float, alpha: float) -> str:
    reasons = []
    if share > threshold:
        reasons.append(f"noise share {share:.0%}")
    if p >= alpha:
        reasons.append(f"equal error in every domain not rejected, p = {p:.2g}")
    return "jaggedness indistinguishable from sampling noise (" + "; ".join(reasons) + ")"

# --------------------------------------------------------------------------- metrics table

def place_after(table: pd.DataFrame, anchor: str, columns: list[str]) -> pd.DataFrame:
    """Move ``columns`` (those present) right after ``anchor`` (or to the end without it); the other columns keep
    their order."""
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
        ``noise_flag`` (nullable ``"boolean"``: missing where the noise is unknown) after
        ``cv_error``, and ``noise_note`` appended to ``note``.
    """
    noise = sampling_noise(scores, items, threshold=threshold, alpha=alpha).set_index("model")
    noise = noise.reindex(table["model"].to_numpy())
    cols = ["cv_error_corrected", "noise_share", "p_equal_error", "noise_flag"]
    out = table.assign(**{c: noise[c].to_numpy() for c in cols})
    out["noise_flag"] = out["noise_flag"].astype("boolean")   # missing: not tested (pd.NA), never False
    out["note"] = join_note_columns(out["note"].to_numpy(dtype=object), noise["noise_note"].fillna("").to_numpy())
    return place_after(out, "cv_error", cols)


# --------------------------------------------------------------------------- report table

def noise_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The per-model noise and interval columns of a metrics table, for a report.

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`jagged.analysis.metrics_table` (profile rows are collapsed).

    Returns
    -------
    pandas.DataFrame
        One row per model, highest ``cv_error_corrected`` first (undefined last):
        ``model``, ``cv_error``, ``cv_error_corrected``, ``cv_error_lo``,
        ``cv_error_hi`` (when present), ``noise_share``, ``p_equal_error`` and
        ``noise_flag`` as ``"noise"``, ``""`` or ``"not tested"`` (:func:`flag_text`).
    """
    columns = ["model", "cv_error", "cv_error_corrected", "cv_error_lo", "cv_error_hi", "noise_share",
               "p_equal_error", "noise_flag"]
    rows = table.drop_duplicates("model").loc[:, [c for c in columns if c in table.columns]]
    rows = rows.sort_values(["cv_error_corrected", "model"], ascending=[False, True], na_position="last",
                            kind="mergesort").reset_index(drop=True)
    if "noise_flag" in rows.columns:
        rows["noise_flag"] = flag_text(rows["noise_flag"])
    return rows

