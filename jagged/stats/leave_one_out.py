"""Leave one domain out: each model's statistic without each domain, and whether a headline rests on one.

A finding such as "the most jagged model" can rest on a single cell: a failed run scoring 0.0
on one task makes a model's errors look uneven. These functions recompute a per-model
statistic with each domain left out in turn (models × domains, vectorised: no loop over
models or domains) and say where the value rests on one domain:

* :func:`cv_without` — ``cv_error`` without each domain;
* :func:`relative_without` — the relative jaggedness (raw or noise-corrected) without each
  domain, from the fitted decomposition;
* :func:`wedge_without` — each model's wedge under each profile without each domain;
* :func:`rests_on` — per model, the domain whose removal halves its value (the tables' mark);
* :func:`headline_rests_on` — for the model a headline names, the domain whose removal halves
  its value or ends its lead, with its value and the new leader;
* :func:`add_rests_on` — the marks as metrics-table columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable

import numpy as np
import pandas as pd

from jagged.stats.decomposition import Decomposition, score_grid


def _without(values: np.ndarray, present: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: (count, mean, sum of squared deviations) over the present cells with each cell left out.

    Uses SS' = SS − (n/(n − 1)) (x_d − x̄)² and x̄' = x̄ − (x_d − x̄)/(n − 1), which stay accurate
    where the deviations are small (no difference of large sums).
    """
    n = present.sum(axis=1).astype(float)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(present, values, 0.0).sum(axis=1, keepdims=True) / n
        dev = np.where(present, values - mean, 0.0)
        ss = (dev * dev).sum(axis=1, keepdims=True)
        n_out = np.where(present, n - 1.0, n)
        mean_out = np.where(present, mean - dev / (n - 1.0), mean)
        ss_out = np.where(present, np.maximum(ss - n / (n - 1.0) * dev * dev, 0.0), ss)
    return n_out, mean_out, ss_out


def cv_without(scores: pd.DataFrame) -> pd.DataFrame:
    """``cv_error`` of every model with each domain left out.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table.

    Returns
    -------
    pandas.DataFrame
        Models × domains (sorted names): the population CV of the model's error rates over
        its other domains, √(SS'/n')/ē' (:func:`jagged.stats.metrics.cv_error`); for a domain
        the model lacks, its ``cv_error`` as it is; NaN where fewer than 2 domains remain or
        no error is left (ē' = 0).
    """
    models, domains, error, _ = score_grid(scores)
    present = ~np.isnan(error)
    n, mean, ss = _without(np.nan_to_num(error), present)
    with np.errstate(invalid="ignore", divide="ignore"):
        cv = np.where((n >= 2) & (mean > 0), np.sqrt(ss / n) / np.where(mean > 0, mean, 1.0), np.nan)
    return pd.DataFrame(cv, index=pd.Index(models, name="model"), columns=pd.Index(domains, name="domain"))


def relative_without(decomposition: Decomposition, *, corrected: bool) -> pd.DataFrame:
    """The relative jaggedness of every model with each domain left out.

    Parameters
    ----------
    decomposition : Decomposition
        The fit of the whole table (:func:`jagged.stats.decomposition.decompose`).
    corrected : bool
        √max(V' − N̂', 0) (``relative_jaggedness_corrected``; needs item counts) instead of
        √V' (``relative_jaggedness``).

    Returns
    -------
    pandas.DataFrame
        Models × domains: :func:`jagged.stats.relative.model_structure`'s value over the
        model's other fitted domains; for a domain the model lacks, its value as it is; NaN
        where fewer than 2 domains remain or nothing was fitted.

    Notes
    -----
    On a complete table, leaving domain d out of the least-squares fit moves every other
    residual of model m by the same amount, r_md/(D − 1) (the model's mean changes, the
    other domains' means do not), so the spread of its remaining residuals is exactly its
    relative jaggedness refitted without d. On an unbalanced table this is the first-order
    value (the fit is not redone). The noise N̂' = ((D' − 1)/D'²) Σ_{d'≠d} v(1 − h) drops the
    domain's term, as in :func:`jagged.stats.relative.residual_spread`.
    """
    dec = decomposition
    ok = dec.fitted
    n, _, ss = _without(np.nan_to_num(dec.residual), ok)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = ss / n
        if corrected:
            term = np.where(ok, np.nan_to_num(dec.noise_var) * (1.0 - np.nan_to_num(dec.leverage)), 0.0)
            total = term.sum(axis=1, keepdims=True)
            value = value - (n - 1.0) / n ** 2 * np.where(ok, total - term, total)
            value = np.where(np.isnan(dec.noise_var).any(axis=1, where=ok, keepdims=True), np.nan, value)
        out = np.where(n >= 2, np.sqrt(np.maximum(value, 0.0)), np.nan)
    out[~ok.any(axis=1)] = np.nan
    return pd.DataFrame(out, index=pd.Index(dec.models, name="model"), columns=pd.Index(dec.domains, name="domain"))


def wedge_without(scores: pd.DataFrame, weights: pd.DataFrame) -> pd.DataFrame:
    """The wedge of every model under every profile with each domain left out.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table.
    weights : pandas.DataFrame
        Profiles × domains weight matrix (:func:`jagged.stats.weights.resolve_profiles`).

    Returns
    -------
    pandas.DataFrame
        Index (``model``, ``profile``), columns the score domains: macro' − dep' over the
        model's other domains, the profile's weights renormalised to them,
        dep' = (dep − w_d s_d)/(1 − w_d); for a domain the model lacks, its wedge as it is;
        NaN where its dep_score is undefined (a weighted domain unscored) or the profile puts
        all its weight on the domain left out.
    """
    models, domains, error, _ = score_grid(scores)
    s = 1.0 - error                                                   # M × D, NaN where missing
    present = ~np.isnan(s)
    w = np.nan_to_num(weights.reindex(columns=list(domains)).to_numpy(dtype=float))      # P × D
    lacking = (~present).astype(float) @ (w > 0).T.astype(float) > 0                       # M × P
    s0 = np.nan_to_num(s)
    n = present.sum(axis=1, keepdims=True).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        macro = s0.sum(axis=1, keepdims=True) / n
        macro_out = np.where(present, (macro * n - s0) / (n - 1.0), macro)                 # M × D
        dep = np.where(lacking, np.nan, s0 @ w.T)                                          # M × P
        dep_out = np.where(present[:, None, :], (dep[:, :, None] - w[None] * s0[:, None, :]) / (1.0 - w[None]),
                           dep[:, :, None])                                                # M × P × D
        out = np.where(n[:, :, None] - present[:, None, :] >= 1, macro_out[:, None, :] - dep_out, np.nan)
    out[(w[None] >= 1.0) & present[:, None, :]] = np.nan
    index = pd.MultiIndex.from_product([models, list(weights.index)], names=["model", "profile"])
    return pd.DataFrame(out.reshape(len(models) * len(weights), len(domains)), index=index,
                        columns=pd.Index(domains, name="domain"))


def rests_on(values: pd.Series, without: pd.DataFrame) -> pd.Series:
    """Per model, the domain whose removal at least halves its value ("" where none does).

    Parameters
    ----------
    values : pandas.Series
        The statistic per model (index: model).
    without : pandas.DataFrame
        The same statistic without each domain (:func:`cv_without`, :func:`relative_without`).

    Returns
    -------
    pandas.Series
        Index ``values.index``: the domain with the smallest value left when it is left out,
        when that is at most half the value (and the value is positive); "" otherwise.
    """
    grid = without.reindex(index=values.index).to_numpy(dtype=float)
    value = values.to_numpy(dtype=float)
    if grid.size == 0:
        return pd.Series("", index=values.index, dtype=object)
    filled = np.where(np.isnan(grid), np.inf, grid)
    at = filled.argmin(axis=1)
    low = filled[np.arange(len(value)), at]
    with np.errstate(invalid="ignore"):
        halves = (value > 0) & (low <= value / 2.0)
    names = np.asarray(without.columns, dtype=object)[at]
    return pd.Series(np.where(halves, names, ""), index=values.index, dtype=object)


@dataclass(frozen=True)
class Reliance:
    """Where a headline's value rests on one domain (:func:`headline_rests_on`).

    Attributes
    ----------
    domain : str
        The domain left out.
    value : float
        The named model's statistic without it.
    leader : hashable or None
        The label (model, or (model, profile)) that leads without it, when that is another;
        None when the named one still leads (then its value at least halves).
    """

    domain: str
    value: float
    leader: Hashable | None


def headline_rests_on(values: pd.Series, without: pd.DataFrame, model: Hashable, *, largest: bool = True
                      ) -> Reliance | None:
    """Whether the headline "``model`` has the largest (or smallest) value" rests on one domain.

    Parameters
    ----------
    values : pandas.Series
        The statistic per model (index: model); ``model`` leads it.
    without : pandas.DataFrame
        The same statistic without each domain, models × domains.
    model : hashable
        The model the headline names (a label of ``values``' index: a (model, profile) pair for
        the wedge).
    largest : bool
        The headline is about the largest value (else the smallest).

    Returns
    -------
    Reliance or None
        None when no domain matters that much. Otherwise the domain whose removal ends the
        model's lead (another model's value passes its own) or at least halves its value;
        among several, one that ends the lead first, the one with the widest margin to the
        new leader, else the one that moves the value most.

    Notes
    -----
    Leaving domain d out of the table changes every model's statistic (``without[:, d]``); a
    model whose value is undefined without d drops out of that ranking, and a domain whose
    removal leaves the named model's value undefined is not counted against it.
    """
    grid = without.reindex(index=values.index)
    if model not in grid.index or grid.shape[1] == 0:
        return None
    sign = 1.0 if largest else -1.0
    value = float(values.loc[model])
    own = grid.loc[model].to_numpy(dtype=float)
    others = grid.drop(index=model).to_numpy(dtype=float) * sign
    best = np.full(len(own), -np.inf) if others.size == 0 else np.where(
        np.isnan(others), -np.inf, others).max(axis=0)
    with np.errstate(invalid="ignore"):
        margin = own * sign - best                                # < 0: another model leads without d
        dethroned = np.isfinite(own) & (margin < 0)
        halves = np.isfinite(own) & (value > 0) & (own <= value / 2.0)
    if dethroned.any():
        at = int(np.argmin(np.where(dethroned, margin, np.inf)))
        rows = grid.drop(index=model).index
        leader = rows[int(np.nanargmax(np.where(np.isnan(others[:, at]), -np.inf, others[:, at])))]
        return Reliance(str(grid.columns[at]), float(own[at]), leader)
    if halves.any():
        at = int(np.argmax(np.where(halves, np.abs(value - own), -np.inf)))
        return Reliance(str(grid.columns[at]), float(own[at]), None)
    return None


#: The columns :func:`add_rests_on` adds to the metrics table, before ``note``.
RESTS_ON_COLUMNS: tuple[str, ...] = ("cv_error_rests_on", "relative_jaggedness_rests_on")


def add_rests_on(table: pd.DataFrame, scores: pd.DataFrame, decomposition: Decomposition) -> pd.DataFrame:
    """Mark the models whose jaggedness rests on one domain in a metrics table (:func:`rests_on`).

    Parameters
    ----------
    table : pandas.DataFrame
        A metrics table with ``model``, ``cv_error`` and the relative jaggedness columns
        (:func:`jagged.stats.structure.add_structure`).
    scores : pandas.DataFrame
        The canonical table behind it.
    decomposition : Decomposition
        Its decomposition.

    Returns
    -------
    pandas.DataFrame
        ``table`` with :data:`RESTS_ON_COLUMNS` before ``note``: the domain without which the
        model's ``cv_error``, and its relative jaggedness (noise-corrected with item counts,
        raw without), would be at most half what it is; "" where no single domain carries
        that much.
    """
    per = table.drop_duplicates("model").set_index("model")
    relative = "relative_jaggedness_corrected" if decomposition.has_n else "relative_jaggedness"
    marks = {"cv_error_rests_on": rests_on(per["cv_error"].astype(float), cv_without(scores)),
             "relative_jaggedness_rests_on": rests_on(per[relative].astype(float),
                                                      relative_without(decomposition, corrected=decomposition.has_n))}
    out = table.assign(**{c: marks[c].reindex(table["model"].to_numpy()).fillna("").to_numpy(dtype=object)
                          for c in RESTS_ON_COLUMNS})
    rest = [c for c in out.columns if c != "note"]
    return out[rest + (["note"] if "note" in out.columns else [])]


__all__ = ["RESTS_ON_COLUMNS", "Reliance", "add_rests_on", "cv_without", "headline_rests_on", "relative_without",
           "rests_on", "wedge_without"]
