"""The jaggedness penalty CV_d(e_d), the per-model summary table, and one model against the field."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError, JaggedWarning
from jagged.stats.deployment import score_matrix
from jagged.stats.intervals import wilson_interval

METRIC_COLUMNS: tuple[str, ...] = (
    "model", "n_domains", "complete", "macro_score", "mean_error", "sd_error", "cv_error", "note",
)

NOTE_NO_ERRORS = "no errors: CV undefined"
NOTE_FEW_DOMAINS = "fewer than 2 domains: CV undefined"


def cv_error(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """CV of the error rates e = 1 − s along ``axis`` (``scipy.stats.variation(e, ddof=0)``); NaN at mean 0."""
    errors = 1.0 - np.asarray(scores, dtype=float)
    return cv_from_moments(errors.mean(axis=axis), errors.std(axis=axis, ddof=0))


def cv_from_moments(mean: np.ndarray, sd: np.ndarray, n: np.ndarray | None = None) -> np.ndarray:
    """sd / mean of error rates from their mean and population sd; NaN where the mean is not positive or ``n`` < 2.

    The one CV formula of jagged (:func:`cv_error`, :func:`jaggedness`, the category level of
    :mod:`jagged.stats.hierarchy`).
    """
    mean = np.asarray(mean, dtype=float)
    sd = np.asarray(sd, dtype=float)
    defined = mean > 0
    if n is not None:
        defined = defined & (np.asarray(n) >= 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(defined, sd / np.where(mean > 0, mean, 1.0), np.nan)


def _codes(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and sorted labels of a name column (Categorical: free; else factorize).

    Unused categories are dropped so every label has at least one row.
    """
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()
        labels = np.asarray(column.cat.categories, dtype=object)
        text = labels.astype(str)
        if len(text) > 1 and not (text[:-1] <= text[1:]).all():
            order = np.argsort(text, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            codes = rank[codes]
            labels = labels[order]
        used = np.bincount(codes, minlength=len(labels)) > 0
        if not used.all():
            shift = np.cumsum(~used)
            codes = codes - shift[codes]
            labels = labels[used]
        return codes, labels
    codes, labels = pd.factorize(column, sort=True)
    return codes, np.asarray(labels, dtype=object)


def _group_summer(codes: np.ndarray, n_groups: int):
    """A function summing a per-row array within the groups of ``codes``: segment sums when the rows come grouped."""
    if len(codes) and (codes[1:] >= codes[:-1]).all():
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        present = codes[starts]

        def segment_sum(values: np.ndarray) -> np.ndarray:
            out = np.zeros(n_groups)
            out[present] = np.add.reduceat(values, starts)
            return out

        return segment_sum
    return lambda values: np.bincount(codes, weights=values, minlength=n_groups)


def jaggedness(scores: pd.DataFrame) -> pd.DataFrame:
    """Per-model jaggedness table from a canonical per-domain score table (``model, domain, score``).

    Returns
    -------
    pandas.DataFrame
        One row per model, sorted (:data:`METRIC_COLUMNS`): ``n_domains`` D, ``complete``
        (has every domain of the table), ``macro_score`` (1/D) Σ_d s_d, ``mean_error`` of
        e_d = 1 − s_d, ``sd_error`` (population, ddof 0), ``cv_error`` = sd_error /
        mean_error, ``note``.

    Raises
    ------
    JaggedInputError
        No model has scores in at least two domains.

    Warns
    -----
    JaggedWarning
        For each model with fewer than two domains.

    Notes
    -----
    ``mean_error == 0``: ``cv_error`` NaN, note :data:`NOTE_NO_ERRORS`; fewer than 2 domains:
    NaN, note and warning. The variance takes two passes (mean, then squared deviations), so
    it stays accurate for nearly equal errors; vectorised over models.
    """
    model_codes, models = _codes(scores["model"])
    model_codes = model_codes.astype(np.intp, copy=False)  # bincount would convert on every call
    if isinstance(scores["domain"].dtype, pd.CategoricalDtype):
        domain_codes = scores["domain"].cat.codes.to_numpy()
    else:
        domain_codes = pd.factorize(scores["domain"])[0]
    domain_count = int(np.count_nonzero(np.bincount(domain_codes.astype(np.intp, copy=False))))
    n_models = len(models)
    score = scores["score"].to_numpy(dtype=float)
    errors = 1.0 - score
    group_sum = _group_summer(model_codes, n_models)
    n = np.bincount(model_codes, minlength=n_models).astype(float)
    macro_score = group_sum(score) / n
    mean_error = group_sum(errors) / n
    deviation = errors - mean_error[model_codes]
    var = group_sum(deviation * deviation) / n
    sd_error = np.sqrt(var)
    few = n < 2
    no_errors = mean_error == 0
    cv = cv_from_moments(mean_error, sd_error, n)
    if few.all():
        raise JaggedInputError("no model has scores in at least 2 domains, so no CV can be computed")
    note = np.full(n_models, "", dtype=object)
    note[no_errors] = NOTE_NO_ERRORS
    note[few] = NOTE_FEW_DOMAINS
    for name in np.asarray(models)[few]:
        warnings.warn(f"model {name!r} has fewer than 2 domains: CV undefined", JaggedWarning, stacklevel=2)
    return pd.DataFrame({
        "model": np.asarray(models, dtype=object),
        "n_domains": n.astype(np.int64),
        "complete": n == domain_count,
        "macro_score": macro_score,
        "mean_error": mean_error,
        "sd_error": sd_error,
        "cv_error": cv,
        "note": note,
    })


def domain_errors(scores: pd.DataFrame, model: str, *, ci: float = 0.95) -> pd.DataFrame:
    """A model's error rate in each of its domains against the other models', worst first (ties by domain).

    Columns ``domain``, ``error``, its Wilson interval ``error_lo``/``error_hi`` at ``ci``
    (from ``n_items``; NaN when unknown), ``n_items``, ``field_n`` (other models scored there),
    ``field_min``, ``field_q25``, ``field_median``, ``field_q75``, ``field_max`` (NaN when
    ``field_n`` is 0), ``vs_median``, ``rank`` among ``ranked`` models (fewest errors first,
    ties share the best place). JaggedInputError when the model has no scores.
    """
    wide = score_matrix(scores)
    if model not in wide.index:
        raise JaggedInputError(f"no scores for model {model!r}")
    errors = 1.0 - wide.to_numpy(dtype=float)
    row = wide.index.get_loc(model)
    own, others = errors[row], np.delete(errors, row, axis=0)
    field_n = (~np.isnan(others)).sum(axis=0)
    q = np.full((5, errors.shape[1]), np.nan)
    if len(others):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns give NaN, as documented
            q = np.nanquantile(others, [0.0, 0.25, 0.5, 0.75, 1.0], axis=0)
    with np.errstate(invalid="ignore"):
        better = (others < own[None, :]).sum(axis=0)
    mine = scores.loc[scores["model"] == model]
    n_items = pd.Series(mine["n_items"].to_numpy(dtype=float), index=mine["domain"].astype(object).to_numpy()
                        ).reindex(list(wide.columns)).to_numpy(dtype=float)
    lo, hi = wilson_interval(own, n_items, ci)
    out = pd.DataFrame({
        "domain": wide.columns.to_numpy(dtype=object), "error": own, "error_lo": lo, "error_hi": hi,
        "n_items": n_items, "field_n": field_n.astype(np.int64), "field_min": q[0], "field_q25": q[1],
        "field_median": q[2], "field_q75": q[3], "field_max": q[4], "vs_median": own - q[2],
        "rank": (better + 1).astype(np.int64), "ranked": (field_n + 1).astype(np.int64),
    })[~np.isnan(own)]
    return out.sort_values(["error", "domain"], ascending=[False, True], kind="mergesort").reset_index(drop=True)


def jaggedness_rank(table: pd.DataFrame, model: str) -> pd.DataFrame:
    """A model's metrics row (first profile row) with ``macro_rank``, ``cv_rank``, ``ranked`` and ``field_median_cv``.

    Competition ranks (ties share the best place): 1 = highest macro score, 1 = most jagged
    (``<NA>`` when its cv_error is undefined) among the ``ranked`` models with a cv_error;
    ``field_median_cv`` over the other models.
    """
    rows = table.drop(columns="profile", errors="ignore").drop_duplicates("model").reset_index(drop=True)
    if model not in set(rows["model"]):
        raise JaggedInputError(f"no metrics for model {model!r}")
    cv, macro = rows["cv_error"].to_numpy(dtype=float), rows["macro_score"].to_numpy(dtype=float)
    mine = int(np.flatnonzero(rows["model"].to_numpy(dtype=object) == model)[0])
    finite = np.isfinite(cv)
    others = finite.copy()
    others[mine] = False
    out = rows.iloc[[mine]].reset_index(drop=True)
    out["macro_rank"] = np.int64((macro[np.isfinite(macro)] > macro[mine]).sum() + 1)
    out["cv_rank"] = pd.array([int((cv[finite] > cv[mine]).sum() + 1)] if finite[mine] else [pd.NA], dtype="Int64")
    out["ranked"] = np.int64(finite.sum())
    out["field_median_cv"] = float(np.median(cv[others])) if others.any() else np.nan
    return out
