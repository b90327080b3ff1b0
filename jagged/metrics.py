"""The jaggedness penalty CV_d(e_d) and the per-model summary table."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError, JaggedWarning

METRIC_COLUMNS: tuple[str, ...] = (
    "model", "n_domains", "complete", "macro_score", "mean_error", "sd_error", "cv_error", "note",
)

NOTE_NO_ERRORS = "no errors: CV undefined"
NOTE_FEW_DOMAINS = "fewer than 2 domains: CV undefined"


def cv_error(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Coefficient of variation of the error rates e = 1 - s along an axis.

    Parameters
    ----------
    scores : array_like
        Domain scores s_d in [0, 1].
    axis : int
        Axis over domains.

    Returns
    -------
    numpy.ndarray
        sqrt(Var_d(e_d)) / E_d[e_d] with the population variance (ddof=0); NaN where
        the mean error is 0.

    Notes
    -----
    Same recipe as the reference card and ``scipy.stats.variation(e, ddof=0)``.
    """
    errors = 1.0 - np.asarray(scores, dtype=float)
    mean = errors.mean(axis=axis)
    sd = errors.std(axis=axis, ddof=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(mean > 0, sd / np.where(mean > 0, mean, 1.0), np.nan)


def jaggedness(scores: pd.DataFrame) -> pd.DataFrame:
    """Per-model jaggedness table from a canonical per-domain score table.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical table with columns ``model``, ``domain``, ``score`` (see
        :func:`jagged.validate_scores`).

    Returns
    -------
    pandas.DataFrame
        One row per model, sorted by model name, with columns

        ``model``
            model name;
        ``n_domains``
            D, the number of domains the model has a score for;
        ``complete``
            True when the model has every domain that appears in the table;
        ``macro_score``
            S_macro = (1/D) sum_d s_d;
        ``mean_error``
            E_d[e_d] with e_d = 1 - s_d;
        ``sd_error``
            population standard deviation sqrt((1/D) sum_d (e_d - E[e])^2) (ddof=0);
        ``cv_error``
            the jaggedness penalty CV_d(e_d) = sd_error / mean_error;
        ``note``
            empty unless something needs saying.

    Raises
    ------
    JaggedInputError
        When no model has scores in at least two domains.

    Warns
    -----
    JaggedWarning
        For each model with fewer than two domains.

    Notes
    -----
    Edge-case policy:

    * ``mean_error == 0`` (every domain perfect): ``cv_error`` is NaN (empty in CSV) and
      the note is ``"no errors: CV undefined"``.
    * fewer than 2 domains: ``cv_error`` is NaN, the note says so and a warning is issued.
    * no model with 2 or more domains: error.

    The variance is computed in two passes (mean first, then squared deviations), so it
    stays accurate when errors are nearly equal. Everything is vectorised over models
    with ``numpy.bincount``; there is no per-model Python loop.
    """
    model_codes, models = pd.factorize(scores["model"], sort=True)
    domain_count = scores["domain"].nunique()
    n_models = len(models)
    score = scores["score"].to_numpy(dtype=float)
    errors = 1.0 - score
    n = np.bincount(model_codes, minlength=n_models).astype(float)
    macro_score = np.bincount(model_codes, weights=score, minlength=n_models) / n
    mean_error = np.bincount(model_codes, weights=errors, minlength=n_models) / n
    deviation = errors - mean_error[model_codes]
    var = np.bincount(model_codes, weights=deviation * deviation, minlength=n_models) / n
    sd_error = np.sqrt(var)
    few = n < 2
    no_errors = mean_error == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = np.where(few | no_errors, np.nan, sd_error / np.where(no_errors, 1.0, mean_error))
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
