"""Leave one domain out: each model's statistic without each domain, and whether a headline rests on one.

A finding such as "the most jagged model" can rest on one cell (a failed run scoring 0.0 on
one task). :func:`cv_without`, :func:`relative_without` and :func:`wedge_without` recompute a
statistic with each domain left out (models × domains, vectorised); :func:`rests_on`,
:func:`headline_rests_on` and :func:`add_rests_on` say where a value rests on one domain.
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
    """Models × domains: ``cv_error`` over the model's other domains, √(SS'/n')/ē'.

    For a domain the model lacks, its ``cv_error`` as it is; NaN where fewer than 2 domains
    remain or no error is left.
    """
    models, domains, error, _ = score_grid(scores)
    present = ~np.isnan(error)
    n, mean, ss = _without(np.nan_to_num(error), present)
    with np.errstate(invalid="ignore", divide="ignore"):
        cv = np.where((n >= 2) & (mean > 0), np.sqrt(ss / n) / np.where(mean > 0, mean, 1.0), np.nan)
    return pd.DataFrame(cv, index=pd.Index(models, name="model"), columns=pd.Index(domains, name="domain"))


def relative_without(decomposition: Decomposition, *, corrected: bool) -> pd.DataFrame:
    """Models × domains: the relative jaggedness over the model's other fitted domains.

    √max(V' − N̂', 0) when ``corrected`` (needs item counts), else √V'. For a domain the model
    lacks, its value as it is; NaN where fewer than 2 domains remain or nothing was fitted.

    Notes
    -----
    On a complete table, leaving d out of the fit moves every other residual of model m by
    r_md/(D − 1), so the spread of the remaining residuals is exactly the refitted value; on an
    unbalanced table it is the first-order value. N̂' drops the domain's noise term.
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
    """The wedge of every (model, profile) with each domain left out, index (``model``, ``profile``).

    macro' − dep' with dep' = (dep − w_d s_d)/(1 − w_d). For a domain the model lacks, its
    wedge as it is; NaN where its dep_score is undefined or the profile puts all its weight on
    the domain left out.
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
    """Per model, the domain whose removal leaves at most half its (positive) value ("" where none does)."""
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
    """Where a headline's value rests on one domain.

    The ``domain`` left out, the model's ``value`` without it, and the ``leader`` without it
    (None when the named model still leads).
    """

    domain: str
    value: float
    leader: Hashable | None


def headline_rests_on(values: pd.Series, without: pd.DataFrame, model: Hashable, *, largest: bool = True
                      ) -> Reliance | None:
    """Whether the headline "``model`` has the largest (or smallest) value" rests on one domain (None when not).

    Returns the domain whose removal ends the model's lead (another's value passes its own; the
    widest margin first) or else at least halves its value (the largest move). A model whose
    value is undefined without d drops out of that ranking; a domain leaving the named model's
    value undefined does not count against it.
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
    """``table`` with :data:`RESTS_ON_COLUMNS` before ``note``: the :func:`rests_on` domain of each jaggedness.

    For ``cv_error`` and the relative jaggedness (noise-corrected with item counts, raw
    without); "" where no single domain carries that much.
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
