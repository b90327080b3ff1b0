"""The item audit's sensitivity analysis: cv_error with the flagged items set aside, and with likely key
errors re-scored.

A sensitivity analysis, not a correction: see :func:`flag_sensitivity`.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.stats.item_audit import rescoring_options
from jagged.stats.item_evidence import FLAGS, REVIEW_FLAGS, ItemAudit

#: Columns of :func:`flag_sensitivity`.
SENSITIVITY_COLUMNS: tuple[str, ...] = (
    "model", "cv_error", "cv_error_set_aside", "cv_change", "macro_score", "macro_score_set_aside",
    "n_items", "n_set_aside", "cv_error_rescored", "cv_change_rescored", "n_rescored", "note",
)


def flag_sensitivity(audit: ItemAudit, *, flags: Iterable[str] = REVIEW_FLAGS) -> pd.DataFrame:
    """Per model: cv_error with all items, with the flagged items set aside, and a re-scoring what-if.

    Parameters
    ----------
    audit : ItemAudit
        Output of :func:`audit_items`.
    flags : iterable of str
        Flags whose items are set aside (default :data:`REVIEW_FLAGS`).

    Returns
    -------
    pandas.DataFrame
        One row per model (sorted): ``cv_error`` and ``macro_score`` from all items (the
        values of :func:`jagged.jaggedness` on the item-level scores), ``cv_error_set_aside``
        and ``macro_score_set_aside`` with the flagged items left out of every domain,
        ``cv_change`` = set aside − all, ``n_items`` and ``n_set_aside`` (the model's
        items), and the what-if ``cv_error_rescored`` / ``cv_change_rescored`` where the
        items of :func:`rescoring_options` are scored against the option the strong
        models agree on (``n_rescored`` of the model's items), ``note``.

    Notes
    -----
    This is a sensitivity analysis, not a corrected CV: the flags are reasons to look,
    and setting aside hard but valid items lowers the mean error and so *raises* the CV
    (CV = sd / mean). A domain that loses all its items leaves the model's CV over fewer
    domains (note). The re-scoring assumes the strong models are right, which is the
    hypothesis a reviewer has to check; it is labelled a what-if everywhere it is shown.
    """
    from jagged.stats.metrics import jaggedness

    flags = list(flags)
    unknown = [f for f in flags if f not in FLAGS]
    if unknown:
        raise JaggedInputError(f"unknown flag(s) {', '.join(unknown)}; flags are {', '.join(FLAGS)}")
    if audit.sums is None:
        raise JaggedInputError("this ItemAudit has no sums (made by hand?); use audit_items()")
    items = audit.items
    aside_mask = items[[f"flag_{f}" for f in flags]].fillna(False).to_numpy(dtype=bool).any(axis=1)
    aside = items.loc[aside_mask, "item"].to_numpy(dtype=object)
    rescore = rescoring_options(audit)
    md = audit.sums.model_domain_sums(aside, rescore)

    def cv(score_col: str, n_col: str) -> pd.DataFrame:
        keep = md[n_col] > 0
        frame = pd.DataFrame({"model": md.loc[keep, "model"].to_numpy(dtype=object),
                              "domain": md.loc[keep, "domain"].to_numpy(dtype=object),
                              "score": (md.loc[keep, score_col] / md.loc[keep, n_col]).to_numpy(dtype=float)})
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return jaggedness(frame).set_index("model")

    full = cv("s", "n")
    kept = cv("s_kept", "n_kept")
    rescored = cv("s_rescored", "n")
    models = full.index
    n_items = md.groupby("model")["n"].sum().reindex(models)
    n_kept = md.groupby("model")["n_kept"].sum().reindex(models)
    notes = []
    lost = md[(md["n"] > 0) & (md["n_kept"] == 0)].groupby("model")["domain"].apply(lambda d: ", ".join(map(str, d)))
    for model in models:
        note = ""
        if model in lost.index:
            note = f"every item of {lost[model]} set aside: CV over the remaining domains"
        notes.append(note)
    out = pd.DataFrame({
        "model": np.asarray(models, dtype=object),
        "cv_error": full["cv_error"].to_numpy(dtype=float),
        "cv_error_set_aside": kept["cv_error"].reindex(models).to_numpy(dtype=float),
        "macro_score": full["macro_score"].to_numpy(dtype=float),
        "macro_score_set_aside": kept["macro_score"].reindex(models).to_numpy(dtype=float),
        "n_items": n_items.to_numpy(dtype=np.int64),
        "n_set_aside": (n_items - n_kept).to_numpy(dtype=np.int64),
        "cv_error_rescored": rescored["cv_error"].reindex(models).to_numpy(dtype=float),
        "n_rescored": md.groupby("model")["n_rescored"].sum().reindex(models).fillna(0).to_numpy(dtype=np.int64),
        "note": notes,
    })
    out["cv_change"] = out["cv_error_set_aside"] - out["cv_error"]
    out["cv_change_rescored"] = out["cv_error_rescored"] - out["cv_error"]
    return out[list(SENSITIVITY_COLUMNS)]
