"""What a fitted decomposition says: per-model relative jaggedness, the variance shares, the bootstrap statistic.

* :func:`model_structure` — per model ``relative_jaggedness`` (the spread of its residuals
  across domains), the same with the expected sampling noise removed (delta method on the
  logit scale), and a noise flag like ``cv_error``'s; :func:`relative_jaggedness` from scores;
* :func:`replicate_statistic` — the same on the bootstrap replicates that
  :mod:`jagged.stats.bootstrap` draws for the other intervals (one resampling);
* :func:`variance_shares` — the variance of the logit error rates of the whole table split
  into domain difficulty, model level, model × domain residual and expected noise.

The fit itself (:func:`jagged.stats.decomposition.decompose`) is in :mod:`jagged.stats.decomposition`.
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
    """Per model (last axis: domains): D_m, the residual variance V_m and its expected noise N̂_m.

    See :func:`model_structure`, Notes: V_m = (1/D_m) Σ_d (r_md − r̄_m)² and
    N̂_m = ((D_m − 1)/D_m²) Σ_d v_md (1 − h_md), over the cells where ``ok``.
    """
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

    Parameters
    ----------
    decomposition : Decomposition
        Output of :func:`decompose`.
    threshold : float
        ``relative_noise_share`` above which a model is flagged.
    alpha : float
        Level of the model-fit test; p >= alpha is flagged.

    Returns
    -------
    pandas.DataFrame
        One row per model (sorted): ``model``, then

        ``n_domains``
            D_m, the model's fitted domains;
        ``model_effect``
            a_m, the level on the logit scale of the error (0 = the field's average;
            +1 ≈ e^1 = 2.7 times the odds of an error);
        ``relative_jaggedness``
            RJ_m = √V_m, V_m = (1/D_m) Σ_d (r_md − r̄_m)², the population sd of the
            model's residuals across its domains (logits; ddof = 0 like ``sd_error``);
        ``relative_jaggedness_corrected``
            √max(V_m − N̂_m, 0), with the expected sampling noise removed;
        ``relative_noise_share``
            N̂_m / V_m (capped at 1), the share of V_m that noise alone would produce;
        ``p_model_fit``
            p-value of the test that the model has no residual beyond noise;
        ``relative_noise_flag``
            True when its relative jaggedness is indistinguishable from noise, False when
            it is distinguishable, missing (``pd.NA``, pandas ``"boolean"`` dtype) when
            nothing was tested (no n_items, fewer than 2 domains, not fitted);
        ``structure_note``
            why a value is missing, or the flag in words.

    Notes
    -----
    *Noise correction (delta method on the logit scale).* logit(ẽ_md) carries sampling
    noise of variance v_md ≈ 1/((n + 1) ẽ(1 − ẽ)) (:func:`logit_noise`), independent
    across cells. As for ``noise_share`` (:func:`jagged.stats.uncertainty.sampling_noise`),
    centring on the model's own mean removes 1/D of it; estimating b_d from the field
    removes the cell's share h_md = 1/M_d of the domain's mean (M_d its fitted models).
    Hence

        E[V_m] ≈ V_true + N_m,   N̂_m = ((D_m − 1)/D_m²) Σ_d v_md (1 − h_md),

    exact for a complete table with equal noise (then N = (D − 1)(M − 1) v / (DM)), a
    first-order approximation otherwise. V_true − N̂ is floored at 0, which biases the
    corrected value slightly upward near 0.

    *Test and flag.* The model's part of the Pearson statistic of the fit,
    X²_m = Σ_d (n + 1)(ẽ_md − p̂_md)² / (p̂_md(1 − p̂_md)) with p̂ = expit(μ + a_m + b_d),
    is referred to χ² with
    D_m − 1 degrees of freedom (its expectation is (D_m − 1)(M − 1)/M without residuals,
    so the p-value errs large: more flags). A model is flagged "relative jaggedness
    indistinguishable from sampling noise" when ``relative_noise_share > threshold`` or
    ``p_model_fit >= alpha`` — the rule ``noise_flag`` applies to ``cv_error``. A flag
    says these items cannot show the model's own unevenness, not that it is even.

    Edge cases: a model with fewer than 2 fitted domains, or outside the fitted group,
    gets NaN and a note; without n_items the noise columns are NaN (``relative_noise_flag``
    missing: not tested) and the note says so.
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

    Parameters
    ----------
    decomposition : Decomposition
        Output of :func:`decompose`.

    Returns
    -------
    pandas.DataFrame
        One row per :data:`SHARE_COMPONENTS` entry: ``component``, ``label`` (the
        cross term's names its cause, :func:`cross_label`), ``variance`` (logits²) and
        ``share`` (of the total). Empty values when nothing
        was fitted; noise values NaN without n_items.

    Notes
    -----
    Over the N fitted cells, each counted once, with l_md = logit(ẽ_md):

    * total T = Var(l), domain = Var(b_d), model = Var(a_m), residual = Var(r_md)
      (population variances over cells);
    * cross = T − domain − model − residual: twice the covariances. It is 0 (to rounding)
      for a complete table, with or without item counts, where the fit is the two-way
      analysis of variance of the logits and domain + model + residual = T exactly; it can
      be nonzero only on an unbalanced table (missing cells), and its label says so
      (:func:`cross_causes`);
    * noise = (1/N) Σ v_md (1 − 1/M_d − 1/D_m + 1/N), the part of the residual variance
      that sampling noise is expected to produce (M_d, D_m: the fitted models of the
      cell's domain and domains of its model; (M − 1)(D − 1)/(MD) · v for a complete
      table); it is part of the residual, not an addition to it;
    * residual_beyond_noise = max(residual − noise, 0): the model × domain interaction
      the items can show.

    The shares are on the logit scale, where the model is additive; they describe this
    set of models and domains, not the benchmark in general (a field of similar models
    has a small model share whatever the domains are like).
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
    """Why the shares of a decomposition can overlap (a cross term): ``["unbalanced"]`` or none.

    ``"unbalanced"``: some (model, domain) cell of the fitted models and domains has no
    score, so model and domain effects are correlated over the cells. A complete table, with
    or without item counts, is the two-way analysis of variance of the logits: no cross term.
    """
    return [] if not decomposition.ok or decomposition.balanced else ["unbalanced"]


def cross_label(decomposition: Decomposition) -> str:
    """The label of the cross-term row of :func:`variance_shares`, naming its cause (:func:`cross_causes`)."""
    if not cross_causes(decomposition):
        return "cross terms (none: complete table)"
    return "cross terms (unbalanced table)"


# --------------------------------------------------------------------------- bootstrap

def replicate_statistic(decomposition: Decomposition) -> ReplicateStatistic:
    """The noise-corrected relative jaggedness of bootstrap replicates, for :mod:`jagged.stats.bootstrap`.

    Parameters
    ----------
    decomposition : Decomposition
        The fit to the original data (which cells are fitted).

    Returns
    -------
    callable
        ``statistic(num, den, present, models, domains)`` → b × M array, the form
        :func:`jagged.stats.bootstrap.bootstrap_replicates` calls with each chunk of
        replicate sums (Σ c·x correct answers and Σ c·present items, b × M × D, in the
        replicate's model and domain order) and with the sums of the data as observed. Its
        attribute ``squared`` is True: it returns V − N̂, the square of
        ``relative_jaggedness_corrected`` = √max(V − N̂, 0) before the floor.

    Notes
    -----
    Each replicate is refitted (least squares on the logits, all replicates of a chunk in
    one batched solve, :func:`jagged.stats.decomposition.additive_wls`) and gives V* − N̂*,
    computed as :func:`model_structure` computes V − N̂: the same statistic, the same
    correction. On the sums of the data as observed it gives V − N̂ itself, which
    :func:`jagged.stats.bootstrap.centred_interval` centres the interval on; the interval is
    one for the noise-free relative jaggedness that ``relative_jaggedness_corrected``
    estimates, and contains it. A replicate in which a model drew none of its items in a
    domain gives that model NaN, as for ``cv_error``.
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
