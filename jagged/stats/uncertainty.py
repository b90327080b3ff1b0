"""Sampling noise of a jaggedness figure: how much of the spread of a model's domain error rates it explains.

A domain's error rate ê_d = 1 − ŝ_d is estimated from n_d items, so CV_d(ê_d) is inflated
by binomial scatter even for a model equally good everywhere. :func:`sampling_noise` gives,
per model, the expected noise share of the observed variance, the CV with it removed, a test
of equal error and a flag; :func:`add_noise` puts them in the metrics table. numpy only.
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


def chi2_sf(x: float, df: int) -> float:
    """P(X ≥ x) for X ~ χ²(df), df a positive whole number (numpy only, no scipy).

    Q(df/2, x/2) in closed form, y = x/2: even df = 2k, e^(−y) Σ_{j<k} y^j / j!; odd df = 2k + 1,
    erfc(√y) + e^(−y) Σ_{j=1..k} y^(j−½) / Γ(j + ½); terms summed in log space (no overflow).
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
    """Per (model, domain) sampling variance of the error rate: ``model, domain, error, n_items, noise_var``.

    Notes
    -----
    σ̂_d² = s_d² / n_d, unbiased for Var(ê_d), with s_d² the sample variance (ddof 1) of one
    item's ``correct``: from the ``items`` when they hold partial credit, else from 0/1 items,
    σ̂_d² = ê_d(1 − ê_d)/(n_d − 1) (an upper bound for partial credit: noise overstated, never
    understated). NaN when n_d is unknown or 1.
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
    threshold, alpha : float
        Flag when ``noise_share`` > threshold or ``p_equal_error`` ≥ alpha.

    Returns
    -------
    pandas.DataFrame
        One row per model (sorted, :data:`NOISE_COLUMNS`): ``var_error`` V_obs (ddof 0),
        ``noise_var`` N̂, ``noise_share`` = N̂ / V_obs capped at 1 (1 when V_obs = 0 < N̂),
        ``cv_error_corrected`` = √max(V_obs − N̂, 0) / ē, ``p_equal_error``, ``noise_flag``
        (nullable boolean: ``<NA>`` when nothing could be tested), ``noise_note``.

    Notes
    -----
    With ê_d = e_d + ε_d, Var ε_d = σ_d² independent across domains, E[V_obs] = V_true +
    ((D − 1)/D²) Σ_d σ_d² (the noise in ē absorbs one D-th), so N̂ = ((D − 1)/D²) Σ_d σ̂_d²
    (:func:`domain_noise`) makes V_obs − N̂ unbiased for V_true; the floor at 0 biases the
    corrected CV slightly upward near 0. The test of equal error is Pearson's
    X² = Σ_d n_d (ê_d − ẽ)² / (ẽ(1 − ẽ)), ẽ = Σ n_d ê_d / Σ n_d, on D − 1 df (conservative for
    partial credit). Under equal true error the flag fires with probability ≥ 1 − alpha.

    Edge cases: D < 2 or ē = 0: NaN and ``<NA>``; a domain with unknown n_items: NaN,
    ``<NA>``, note; a single-item domain: noise share unknown (note), the test still decides;
    the same error everywhere and no variation between items: share 0/0 (NaN,
    :data:`NOTE_NO_VARIATION`), p = 1.
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


def place_after(table: pd.DataFrame, anchor: str, columns: list[str]) -> pd.DataFrame:
    """Move ``columns`` (those present) right after ``anchor`` (or to the end); the others keep their order."""
    columns = [c for c in columns if c in table.columns]
    rest = [c for c in table.columns if c not in columns]
    at = rest.index(anchor) + 1 if anchor in rest else len(rest)
    return table[rest[:at] + columns + rest[at:]]


def add_noise(table: pd.DataFrame, scores: pd.DataFrame, items: pd.DataFrame | None = None, *,
              threshold: float = NOISE_SHARE_THRESHOLD, alpha: float = EQUAL_ERROR_ALPHA) -> pd.DataFrame:
    """``table`` (:func:`jagged.jaggedness`) with :func:`sampling_noise`'s columns after ``cv_error``, notes joined."""
    noise = sampling_noise(scores, items, threshold=threshold, alpha=alpha).set_index("model")
    noise = noise.reindex(table["model"].to_numpy())
    cols = ["cv_error_corrected", "noise_share", "p_equal_error", "noise_flag"]
    out = table.assign(**{c: noise[c].to_numpy() for c in cols})
    out["noise_flag"] = out["noise_flag"].astype("boolean")   # missing: not tested (pd.NA), never False
    out["note"] = join_note_columns(out["note"].to_numpy(dtype=object), noise["noise_note"].fillna("").to_numpy())
    return place_after(out, "cv_error", cols)


def noise_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per model, highest ``cv_error_corrected`` first: the noise and interval columns, ``noise_flag`` as text."""
    columns = ["model", "cv_error", "cv_error_corrected", "cv_error_lo", "cv_error_hi", "noise_share",
               "p_equal_error", "noise_flag"]
    rows = table.drop_duplicates("model").loc[:, [c for c in columns if c in table.columns]]
    rows = rows.sort_values(["cv_error_corrected", "model"], ascending=[False, True], na_position="last",
                            kind="mergesort").reset_index(drop=True)
    if "noise_flag" in rows.columns:
        rows["noise_flag"] = flag_text(rows["noise_flag"])
    return rows

