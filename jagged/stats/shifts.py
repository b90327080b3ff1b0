"""What changed: the benchmark or the models? The two-way view of a like-for-like change.

Each shared cell's change Δ_md = s^B_md − s^A_md = μ + δ_d + β_m + ε_md: μ the overall
shift, δ_d the domain's shift beyond it, β_m the model's change relative to the field, ε_md
the residual. :func:`field_change` fits it, with intervals from the comparison's bootstrap
replicates (:mod:`jagged.stats.compare`), and :func:`change_shares` gives the benchmark's and
the models' shares of the squared change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from jagged.stats.bootstrap import centred_interval
from jagged.stats.decomposition import _components, additive_wls

NOTE_NOT_CONNECTED = "shares no model or domain with the main table: not in the two-way view"
NOTE_FEW_MODELS = "the two-way view needs at least 2 models on both sides"


def fit_cells(present: np.ndarray) -> np.ndarray:
    """The present cells of the largest connected group (most cells) of M × D ``present``; none with < 2 models."""
    present = np.asarray(present, dtype=bool)
    if not present.any():
        return present
    model_label, domain_label = _components(present)
    main = int(np.argmax(np.bincount(model_label, weights=present.sum(axis=1))))
    keep = present & (model_label == main)[:, None] & (domain_label == main)[None, :]
    return keep if keep.any(axis=1).sum() >= 2 else np.zeros_like(keep)


def additive_parts(delta: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Least-squares fit of Δ_md = μ + δ_d + β_m on the cells ``keep``, vectorised over leading axes.

    Returns μ (...), the field's shift μ + δ_d (..., D), β_m (..., M) and the fitted table
    (..., M, D); NaN outside ``keep``'s group, and NaN parts for a table with NaN in a kept cell.

    Notes
    -----
    The fitted table F of :func:`jagged.stats.decomposition.additive_wls` (unit weights on the
    kept cells, one connected group) gives μ = mean F, shift_d = mean_m F_md,
    β_m = mean_d F_md − μ, so Σ δ_d = Σ β_m = 0. On a complete table these are the two-way
    analysis of variance means (β_m = macro_delta_m − mean macro_delta); on an incomplete one a
    model missing a domain does not move its shift.
    """
    km, kd = keep.any(axis=1), keep.any(axis=0)
    complete = bool(keep[np.ix_(km, kd)].all())  # then the fitted table's means are the data's
    fitted = np.asarray(delta, dtype=float) if complete else additive_wls(keep.astype(float), delta)
    sub = fitted[..., km, :][..., kd]
    shift = np.full(fitted.shape[:-2] + (keep.shape[1],), np.nan)
    effect = np.full(fitted.shape[:-2] + (keep.shape[0],), np.nan)
    shift[..., kd] = sub.mean(axis=-2)
    mu = shift[..., kd].mean(axis=-1)
    effect[..., km] = sub.mean(axis=-1) - mu[..., None]
    return mu, shift, effect, shift[..., None, :] + effect[..., :, None]


def models_sum_of_squares(delta: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The field's shift, β_m and SS_models = Σ_kept (Δ_md − shift_d)² of (..., M, D) changes (kept per replicate)."""
    _, shift, effect, _ = additive_parts(delta, keep)
    rest = np.where(keep, delta - shift[..., None, :], 0.0)
    return shift, effect, (rest ** 2).sum(axis=(-2, -1))


def change_shares(delta: np.ndarray, keep: np.ndarray, models_ss: np.ndarray | None = None) -> dict[str, float]:
    """The share of the squared change that is the benchmark's and the models'.

    Returns ``benchmark`` = ``overall`` + ``domains`` and ``models`` = ``model_effects`` +
    ``residual`` (summing to 1; NaN when no cell changed), ``noise`` (the share noise alone is
    expected to put in the models' part; NaN without ``models_ss``), ``overall_shift`` μ,
    ``sum_of_squares`` Σ Δ², ``n_cells``, ``n_models``, ``n_domains``, ``complete``.

    Notes
    -----
    Over the n kept cells: SS_overall = n μ², SS_domains = Σ δ_d², SS_effects = Σ β_m²,
    SS_residual = Σ ε_md²; shares of their sum. On a complete table they are orthogonal and
    sum to Σ Δ² (two-way ANOVA); on an incomplete one cross terms remain. A change every model
    shares is the benchmark's. SS_models is a quadratic form of the changes, so its noise
    expectation E Σ (e_md − ē_d)² is estimated as the mean of the replicates' SS_models minus
    the observed value (at least 0); ``noise`` is that over the parts' sum.
    """
    n = int(keep.sum())
    out = {"benchmark": math.nan, "models": math.nan, "overall": math.nan, "domains": math.nan,
           "model_effects": math.nan, "residual": math.nan, "noise": math.nan, "overall_shift": math.nan,
           "sum_of_squares": float(np.nansum(np.asarray(delta, dtype=float) ** 2)), "n_cells": n,
           "n_models": int(keep.any(axis=1).sum()), "n_domains": int(keep.any(axis=0).sum()),
           "complete": bool(n and n == keep.any(axis=1).sum() * keep.any(axis=0).sum())}
    if not n:
        return out
    mu, shift, effect, fitted = additive_parts(delta, keep)
    rows, cols = np.nonzero(keep)
    parts = {"overall": n * float(mu) ** 2, "domains": float(np.sum((shift[cols] - mu) ** 2)),
             "model_effects": float(np.sum(effect[rows] ** 2)),
             "residual": float(np.sum((delta[rows, cols] - fitted[rows, cols]) ** 2))}
    total = sum(parts.values())
    out["overall_shift"] = float(mu)
    if total <= 1e-24 * max(n, 1):
        return out
    out.update({k: v / total for k, v in parts.items()})
    out["benchmark"], out["models"] = out["overall"] + out["domains"], out["model_effects"] + out["residual"]
    if models_ss is not None and np.isfinite(models_ss).any():
        observed = parts["model_effects"] + parts["residual"]
        out["noise"] = max(float(np.nanmean(models_ss)) - observed, 0.0) / total
    return out


@dataclass
class FieldChange:
    """The two-way view of a change (see :func:`field_change`)."""

    domains: pd.DataFrame
    models: pd.DataFrame
    shares: dict[str, float]


def _interval(reps: np.ndarray | None, point: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray]:
    if reps is None or not len(reps):
        return np.full_like(point, np.nan), np.full_like(point, np.nan)
    lo, hi = centred_interval(point, reps, ci)
    ok = np.isfinite(point)
    return np.where(ok, lo, np.nan), np.where(ok, hi, np.nan)


def _beyond(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The interval excludes 0 and has a width (replicates that never vary measured no noise)."""
    return ((np.nan_to_num(lo, nan=-np.inf) > 0) | (np.nan_to_num(hi, nan=np.inf) < 0)) & (hi > lo)


def field_change(scores_a: pd.DataFrame, scores_b: pd.DataFrame, models: np.ndarray, *,
                 replicates: tuple | None = None, ci: float = 0.95) -> FieldChange:
    """Per domain the field's shift, per model its change relative to the field, and the shares.

    Parameters
    ----------
    scores_a, scores_b : pandas.DataFrame
        Each side on the shared scope (the same rows, sorted by model and domain).
    models : numpy.ndarray
        The models on both sides (one without a shared cell gets NaN).
    replicates : (shift, effect, models_ss, method), optional
        B × D, B × M and B replicates of :func:`models_sum_of_squares` (a NaN row lost a cell)
        and the ``interval_method``.
    ci : float
        Interval level.

    Returns
    -------
    FieldChange
        ``domains``: ``n_models``, ``score_a``, ``score_b``, ``shift`` μ + δ_d with
        ``_lo``/``_hi``, ``beyond_noise``, ``interval_method``, ``note``; ``models``:
        ``macro_delta_vs_field`` β_m with ``_lo``/``_hi`` and ``vs_field_beyond_noise``;
        ``shares``: :func:`change_shares`.

    Notes
    -----
    Intervals are replicate percentiles (the comparison's noise model). Beyond noise: the
    interval excludes 0 and has a width (replicates that never vary measured no noise). Domains
    and models outside the fit have NaN and a note.
    """
    domains = np.asarray(sorted(set(scores_a["domain"])), dtype=object)
    grid = scores_a[["model", "domain"]].assign(a=scores_a["score"].to_numpy(dtype=float),
                                                 b=scores_b["score"].to_numpy(dtype=float))
    a, b = (grid.pivot(index="model", columns="domain", values=c).reindex(index=models, columns=domains)
            .to_numpy(dtype=float) for c in ("a", "b"))
    delta = b - a
    keep = fit_cells(~np.isnan(delta))
    shift, effect = np.full(len(domains), np.nan), np.full(len(models), np.nan)
    if keep.any():
        _, shift, effect, _ = additive_parts(delta, keep)
    shift_reps, effect_reps, models_ss, method = replicates or (None, None, None, "")
    shift_lo, shift_hi = _interval(shift_reps, shift, ci)
    effect_lo, effect_hi = _interval(effect_reps, effect, ci)
    n_models = keep.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        score_a, score_b = (np.where(keep, x, 0.0).sum(axis=0) / n_models for x in (a, b))
    note = np.where(n_models > 0, "", NOTE_NOT_CONNECTED if keep.any() else NOTE_FEW_MODELS).astype(object)
    domain_table = pd.DataFrame({
        "domain": domains, "n_models": n_models.astype(np.int64), "score_a": score_a, "score_b": score_b,
        "shift": shift, "shift_lo": shift_lo, "shift_hi": shift_hi, "beyond_noise": _beyond(shift_lo, shift_hi),
        "interval_method": np.where(np.isfinite(shift_lo), method, "").astype(object), "note": note})
    model_table = pd.DataFrame({"model": np.asarray(models, dtype=object), "macro_delta_vs_field": effect,
                                "macro_delta_vs_field_lo": effect_lo, "macro_delta_vs_field_hi": effect_hi,
                                "vs_field_beyond_noise": _beyond(effect_lo, effect_hi)})
    return FieldChange(domain_table, model_table, change_shares(delta, keep, models_ss))

