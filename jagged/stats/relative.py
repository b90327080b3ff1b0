"""What a fitted decomposition says: per-model relative jaggedness, the variance shares, the bootstrap statistic.

:func:`model_structure` gives per model the spread of its residuals across domains, the same
with the expected sampling noise removed, and a noise flag like ``cv_error``'s;
:func:`replicate_statistic` computes it on the bootstrap replicates of
:mod:`jagged.stats.bootstrap`; :func:`variance_shares` splits the variance of the whole table.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from jagged.stats.bootstrap import ReplicateStatistic
from jagged.stats.decomposition import (
    CONTINUITY,
    NOTE_FEW_DOMAINS_MODEL,
    NOTE_FEW_MODELS,
    NOTE_FLAG,
    NOTE_NO_N_ITEMS,
    SHARE_COMPONENTS,
    SHARE_LABELS,
    Decomposition,
    additive_wls,
    decompose,
    expit,
    logit,
    logit_noise,
)
from jagged.stats.uncertainty import EQUAL_ERROR_ALPHA, NOISE_SHARE_THRESHOLD, chi2_sf


def residual_spread(residual: np.ndarray, noise: np.ndarray, leverage: np.ndarray, ok: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per model (last axis: domains): D_m, V_m and N̂_m of :func:`model_structure` over the cells ``ok``."""
    d = ok.sum(axis=-1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(ok, residual, 0.0).sum(axis=-1) / d
        dev = np.where(ok, residual - mean[..., None], 0.0)
        v_obs = (dev * dev).sum(axis=-1) / d
        n_hat = (d - 1.0) / d ** 2 * np.where(ok, noise * (1.0 - leverage), 0.0).sum(axis=-1)
    return d, v_obs, n_hat


def model_structure(decomposition: Decomposition, *, threshold: float = NOISE_SHARE_THRESHOLD,
                    alpha: float = EQUAL_ERROR_ALPHA) -> pd.DataFrame:
    """Per model: level, relative jaggedness, its noise-corrected value and a noise flag.

    Returns
    -------
    pandas.DataFrame
        One row per model (sorted): ``n_domains`` D_m; ``model_effect`` a_m (logit of the
        error, 0 = the field's average); ``relative_jaggedness`` √V_m (ddof 0, logits);
        ``relative_jaggedness_corrected`` √max(V_m − N̂_m, 0); ``relative_noise_share``
        N̂_m / V_m capped at 1; ``p_model_fit``; ``relative_noise_flag`` (nullable boolean,
        ``<NA>`` when not tested); ``structure_note``.

    Notes
    -----
    *Noise correction.* logit(ẽ_md) carries noise of variance v_md (:func:`logit_noise`),
    independent across cells; centring on the model's mean removes 1/D of it and estimating
    b_d removes the cell's share h_md = 1/M_d, so E[V_m] ≈ V_true + N_m with
    N̂_m = ((D_m − 1)/D_m²) Σ_d v_md (1 − h_md) (exact for a complete table with equal noise,
    first order otherwise); the floor at 0 biases the corrected value up near 0.

    *Test and flag.* X²_m = Σ_d (n + 1)(ẽ_md − p̂_md)² / (p̂_md(1 − p̂_md)), p̂ = expit(η), on
    D_m − 1 df (its null expectation is (D_m − 1)(M − 1)/M, so p errs large: more flags).
    Flagged when ``relative_noise_share`` > ``threshold`` or ``p_model_fit`` ≥ ``alpha``, the
    rule of ``noise_flag``: these items cannot show the model's own unevenness.

    Edge cases: fewer than 2 fitted domains or outside the fitted group: NaN and a note;
    without n_items the noise columns are NaN, the flag ``<NA>``, and the note says so.
    """
    dec = decomposition
    ok = dec.fitted
    d, v_obs, n_hat = residual_spread(dec.residual, dec.noise_var, dec.leverage, ok)
    undefined = d < 2
    with np.errstate(invalid="ignore", divide="ignore"):
        rj = np.where(undefined, np.nan, np.sqrt(v_obs))
        if dec.has_n:
            corrected = np.where(undefined, np.nan, np.sqrt(np.maximum(v_obs - n_hat, 0.0)))
            share = np.where(v_obs > 0, n_hat / np.where(v_obs > 0, v_obs, 1.0), np.where(n_hat > 0, 1.0, np.nan))
            share = np.where(undefined, np.nan, np.minimum(share, 1.0))
            p_hat = np.clip(expit(dec.eta), 1e-12, 1.0 - 1e-12)
            trials = dec.n_items + 2 * CONTINUITY
            x2 = np.where(ok, trials * (dec.adjusted - p_hat) ** 2 / (p_hat * (1.0 - p_hat)), 0.0).sum(axis=1)
        else:
            corrected = share = x2 = np.full(len(dec.models), np.nan)
    p = np.full(len(dec.models), np.nan)
    for k in np.flatnonzero(~undefined & np.isfinite(x2)):  # a scalar tail probability per model
        p[k] = chi2_sf(float(x2[k]), int(d[k]) - 1)
    with np.errstate(invalid="ignore"):
        flag = ((share > threshold) | (p >= alpha)) & ~undefined
    untested = undefined | (np.isnan(share) & np.isnan(p))     # unknown is not False
    notes = np.full(len(dec.models), "", dtype=object)
    for k, name in enumerate(dec.models):
        if str(name) in dec.model_notes:
            notes[k] = dec.model_notes[str(name)]
        elif not dec.ok:
            notes[k] = NOTE_FEW_MODELS
        elif undefined[k]:
            notes[k] = NOTE_FEW_DOMAINS_MODEL
        elif not dec.has_n:
            notes[k] = NOTE_NO_N_ITEMS
        elif flag[k]:
            why = [f"noise share {share[k]:.0%}"] if share[k] > threshold else []
            why += [f"'no residual beyond noise' not rejected, p = {p[k]:.2g}"] if p[k] >= alpha else []
            notes[k] = f"{NOTE_FLAG} ({'; '.join(why)})"
    return pd.DataFrame({
        "model": dec.models, "n_domains": d.astype(np.int64), "model_effect": dec.model_effect,
        "relative_jaggedness": rj, "relative_jaggedness_corrected": corrected, "relative_noise_share": share,
        "p_model_fit": p,
        "relative_noise_flag": pd.array(np.where(untested, None, flag), dtype="boolean"), "structure_note": notes,
    })


def relative_jaggedness(scores: pd.DataFrame, *, threshold: float = NOISE_SHARE_THRESHOLD,
                        alpha: float = EQUAL_ERROR_ALPHA) -> pd.DataFrame:
    """:func:`model_structure` of :func:`decompose` of a canonical table (a shortcut)."""
    return model_structure(decompose(scores), threshold=threshold, alpha=alpha)


def variance_shares(decomposition: Decomposition) -> pd.DataFrame:
    """How much of the variance of the logit error rates each part of the table explains.

    One row per :data:`SHARE_COMPONENTS`: ``component``, ``label`` (the cross term's names its
    cause), ``variance`` (logits²) and ``share`` of the total; NaN when nothing was fitted,
    noise NaN without n_items.

    Notes
    -----
    Over the N fitted cells, l_md = logit(ẽ_md): total T = Var(l), domain = Var(b_d),
    model = Var(a_m), residual = Var(r_md) (population variances over cells);
    cross = T − domain − model − residual, 0 on a complete table (the two-way analysis of
    variance), nonzero only when cells are missing; noise = (1/N) Σ v_md (1 − 1/M_d − 1/D_m +
    1/N), the part of the residual noise is expected to produce ((M − 1)(D − 1)/(MD) · v when
    complete); residual_beyond_noise = max(residual − noise, 0). The shares describe this set of
    models and domains, on the logit scale.
    """
    dec = decomposition
    labels = [SHARE_LABELS[c] for c in SHARE_COMPONENTS]
    if not dec.ok:
        return pd.DataFrame({"component": list(SHARE_COMPONENTS), "label": labels,
                             "variance": np.nan, "share": np.nan})
    rows, cols = np.nonzero(dec.fitted)
    observed = logit(dec.adjusted[rows, cols])
    total = observed.var()
    domain = dec.domain_effect[cols].var()
    model = dec.model_effect[rows].var()
    residual = dec.residual[rows, cols].var()
    noise = np.nan
    if dec.has_n:
        per_domain, per_model = dec.fitted.sum(axis=0)[cols], dec.fitted.sum(axis=1)[rows]
        noise = float(np.mean(dec.noise_var[rows, cols] * (1.0 - 1.0 / per_domain - 1.0 / per_model + 1.0 / len(rows))))
    beyond = max(residual - noise, 0.0) if np.isfinite(noise) else np.nan
    cross = total - domain - model - residual
    variance = np.array([domain, model, residual, noise, beyond, cross], dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = variance / total if total > 0 else np.full(len(variance), np.nan)
    labels[SHARE_COMPONENTS.index("cross")] = cross_label(dec)
    return pd.DataFrame({"component": list(SHARE_COMPONENTS), "label": labels, "variance": variance,
                         "share": share})


def cross_causes(decomposition: Decomposition) -> list[str]:
    """Why the shares can overlap: ``["unbalanced"]`` when a fitted model lacks a fitted domain, else none."""
    return [] if not decomposition.ok or decomposition.balanced else ["unbalanced"]


def cross_label(decomposition: Decomposition) -> str:
    """The label of the cross-term row of :func:`variance_shares`, naming its cause."""
    if not cross_causes(decomposition):
        return "cross terms (none: complete table)"
    return "cross terms (unbalanced table)"


def replicate_statistic(decomposition: Decomposition) -> ReplicateStatistic:
    """The noise-corrected relative jaggedness of bootstrap replicates, for :mod:`jagged.stats.bootstrap`.

    Returns ``statistic(num, den, present, models, domains)`` → b × M, called with each chunk
    of replicate sums (b × M × D) and with the observed sums; ``squared`` is True: it returns
    V − N̂, the square of ``relative_jaggedness_corrected`` before the floor.

    Notes
    -----
    Each replicate is refitted (one batched :func:`~jagged.stats.decomposition.additive_wls`
    per chunk) and gives V* − N̂* as :func:`model_structure` computes V − N̂, so the interval,
    centred on the observed value, is one for the noise-free relative jaggedness. A model that
    drew none of its items in a domain is NaN in that replicate.
    """
    dec = decomposition

    def statistic(num: np.ndarray, den: np.ndarray, present: np.ndarray, models: Any, domains: Any
                  ) -> np.ndarray:
        out = np.full(num.shape[:2], np.nan)
        if not dec.ok or not dec.has_n:
            return out
        mi = pd.Index(list(models)).get_indexer(list(dec.models))
        di = pd.Index(list(domains)).get_indexer(list(dec.domains))
        if (mi < 0).any() or (di < 0).any():
            return out
        n = np.asarray(den, dtype=float)[:, mi][:, :, di]
        wrong = n - np.asarray(num, dtype=float)[:, mi][:, :, di]
        ok = dec.fitted[None] & (n > 0)
        lost = (dec.fitted[None] & ~ok).any(axis=2)
        adjusted = np.where(ok, (wrong + CONTINUITY) / (n + 2 * CONTINUITY), 0.5)
        weight = ok.astype(float)
        residual = logit(adjusted) - additive_wls(weight, logit(adjusted))
        noise = logit_noise(adjusted, np.where(ok, n, 1.0))
        with np.errstate(invalid="ignore", divide="ignore"):
            leverage = weight / weight.sum(axis=1, keepdims=True)
        d, v_obs, n_hat = residual_spread(residual, noise, leverage, ok)
        value = v_obs - n_hat
        value[lost | (d < 2)] = np.nan
        out[:, mi] = value
        return out

    statistic.squared = True  # type: ignore[attr-defined]
    return statistic
