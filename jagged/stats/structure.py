"""Is it the model or the benchmark? Level-adjusted jaggedness and the dimensions behind the domains.

``cv_error`` mixes how hard each domain is for every model, how uneven one model is beyond
that, and sampling noise, and it grows with the level (it divides by the mean error).
:func:`structure` runs what separates them: the decomposition with relative jaggedness and
variance shares (:mod:`jagged.stats.decomposition`), parallel analysis and the category
check (:mod:`jagged.stats.dimensions`); :func:`add_structure` adds the per-model columns to
the metrics table and :func:`level_correlations` relates both measures to the level.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.stats.decomposition import (
    METRIC_COLUMNS,
    NOTE_FEW_DOMAINS_MODEL,
    NOTE_FEW_MODELS,
    NOTE_FLAG,
    NOTE_NO_N_ITEMS,
    Decomposition,
    decompose,
    model_structure,
    variance_shares,
)
from jagged.stats.dimensions import CategoryCheck, Dimensions, category_check, dimensions
from jagged.stats.uncertainty import EQUAL_ERROR_ALPHA, NOISE_SHARE_THRESHOLD
from jagged.text import join_note_columns


@dataclass
class Structure:
    """The decomposition, per-model table, variance shares, dimensions and category check of a table."""

    decomposition: Decomposition
    models: pd.DataFrame
    shares: pd.DataFrame
    dimensions: Dimensions
    categories: CategoryCheck | None

    def __repr__(self) -> str:
        """A few lines: the table's size, the variance shares, the dimensions (no arrays)."""
        dec = self.decomposition
        shares = ", ".join(f"{c} {s:.1%}" for c, s in zip(self.shares["component"], self.shares["share"])
                           if math.isfinite(float(s)))
        flagged = int(self.models["relative_noise_flag"].fillna(False).astype(bool).sum())
        return (f"<Structure: {len(dec.models):,} models x {len(dec.domains):,} domains\n"
                f"  variance shares: {shares or 'none'}\n"
                f"  model-specific beyond noise: {flagged:,} models; dimensions kept: "
                f"{self.dimensions.n_dimensions}>")

    def _repr_html_(self) -> str:
        """A small summary table for notebooks (every value escaped)."""
        dec = self.decomposition
        rows = [("models", f"{len(dec.models):,}"), ("domains", f"{len(dec.domains):,}")]
        rows += [(f"share: {c}", f"{s:.1%}" if math.isfinite(float(s)) else "—")
                 for c, s in zip(self.shares["component"], self.shares["share"])]
        rows.append(("dimensions kept", str(self.dimensions.n_dimensions)))
        body = "".join(f'<tr><th scope="row">{html.escape(k)}</th><td>{html.escape(v)}</td></tr>' for k, v in rows)
        return f'<table class="jagged-summary"><caption>Structure</caption><tbody>{body}</tbody></table>'

    def share(self, component: str) -> float:
        """One variance share by component name (NaN when unknown)."""
        row = self.shares.loc[self.shares["component"] == component, "share"]
        return float(row.iloc[0]) if len(row) else math.nan

    def summary(self) -> dict[str, Any]:
        """The numbers ``jagged structure --json`` prints, as plain JSON values (NaN → None; ``notes`` are reasons)."""
        dims, dec, cats = self.dimensions, self.decomposition, self.categories
        out: dict[str, Any] = {
            "models": int(len(dec.models)), "domains": int(len(dec.domains)),
            "fitted_models": int(dec.fitted.any(axis=1).sum()), "n_items": dec.has_n,
            "scale": "logit of the error rate",
            "variance_shares": {c: _plain(s) for c, s in zip(self.shares["component"], self.shares["share"])},
            "variance": {c: _plain(v) for c, v in zip(self.shares["component"], self.shares["variance"])},
            "intercept": _plain(dec.intercept),
            "median_relative_jaggedness_corrected": _plain(self.models["relative_jaggedness_corrected"].median()),
            "flagged_models": int(self.models["relative_noise_flag"].sum()),
            "untested_models": int(self.models["relative_noise_flag"].isna().sum()),
            "n_dimensions": dims.n_dimensions, "first_share": _plain(dims.first_share),
            "first_to_second": _plain(dims.first_to_second),
            "eigenvalues": [_plain(v) for v in dims.eigenvalues], "thresholds": [_plain(v) for v in dims.thresholds],
            "draws": dims.draws, "seed": dims.seed, "percentile": dims.percentile,
            "models_used": dims.n_observations, "domains_used": dims.n_variables,
            "rank": dims.rank, "rank_deficient": dims.rank_deficient,
            "notes": dec.reasons + dims.reasons,
            "categories": None,
        }
        if cats is not None:
            cd = cats.category_dimensions
            out["categories"] = {
                "names": cats.categories, "sizes": cats.sizes, "within": _plain(cats.within),
                "between": _plain(cats.between), "difference": _plain(cats.difference),
                "p_value": _plain(cats.p_value), "verdict": cats.verdict, "notes": cats.reasons,
                "n_dimensions": None if cd is None else cd.n_dimensions,
                "first_share": None if cd is None else _plain(cd.first_share),
            }
        return out


def _plain(value: Any) -> Any:
    value = float(value)
    return value if math.isfinite(value) else None


def structure(scores: pd.DataFrame, *, draws: int | None = None, seed: int = 0, ci: float = 0.95,
              threshold: float = NOISE_SHARE_THRESHOLD, decomposition: Decomposition | None = None) -> Structure:
    """Decomposition, relative jaggedness, variance shares, dimensions and categories of a table.

    ``draws`` and ``seed``: permutation draws of the parallel analysis and the category check
    (None: :func:`jagged.stats.dimensions.default_draws`); 1 − ``ci`` is the level of the noise
    flag and the category test; ``threshold`` the noise share that flags; ``decomposition``
    the table's :func:`~jagged.stats.decomposition.decompose` when already computed.
    """
    if not 0 < ci < 1:
        raise JaggedInputError(f"interval level must be between 0 and 1 (e.g. 0.95), not {ci!r}")
    dec = decompose(scores) if decomposition is None else decomposition
    dims = dimensions(scores, draws=draws, seed=seed)
    return Structure(decomposition=dec, models=model_structure(dec, threshold=threshold, alpha=1.0 - ci),
                     shares=variance_shares(dec), dimensions=dims,
                     categories=category_check(scores, dec, dims, draws=draws, seed=seed, alpha=1.0 - ci))


def level_correlations(table: pd.DataFrame, relative: str = "relative_jaggedness_corrected") -> dict[str, float]:
    """Spearman ρ of ``cv_error`` and of ``relative`` with ``macro_score``, and between the two (``rank_agreement``).

    NaN with fewer than 3 models having all three (profile rows collapsed). cv_error divides
    by the mean error, so it tends to rise with the macro score; a level-adjusted measure
    should not.
    """
    rows = table.drop_duplicates("model")
    cols = ["macro_score", "cv_error", relative]
    empty = {"cv_error": math.nan, relative: math.nan, "rank_agreement": math.nan}
    if not set(cols) <= set(rows.columns):
        return empty
    data = rows[cols].astype(float).dropna()
    if len(data) < 3:
        return empty
    ranks = data.rank()
    corr = ranks.corr()
    return {"cv_error": float(corr.loc["cv_error", "macro_score"]),
            relative: float(corr.loc[relative, "macro_score"]),
            "rank_agreement": float(corr.loc["cv_error", relative])}


def add_structure(table: pd.DataFrame, decomposition: Decomposition, *, threshold: float = NOISE_SHARE_THRESHOLD,
                  alpha: float = EQUAL_ERROR_ALPHA) -> pd.DataFrame:
    """``table`` with the :func:`~jagged.stats.decomposition.model_structure` columns before ``note``.

    Only a model left out of the fit gets its reason appended to ``note``; the others are said
    elsewhere (fewer than 2 domains already in the note, a small table by the section, the
    flag in its column).
    """
    per = model_structure(decomposition, threshold=threshold, alpha=alpha).set_index("model")
    per = per.reindex(table["model"].to_numpy())
    out = table.assign(**{c: per[c].to_numpy() for c in METRIC_COLUMNS})
    out["relative_noise_flag"] = out["relative_noise_flag"].astype("boolean")   # missing: not tested
    extra = per["structure_note"].fillna("").to_numpy(dtype=object)
    quiet = {NOTE_FEW_DOMAINS_MODEL, NOTE_NO_N_ITEMS, NOTE_FEW_MODELS, ""}  # said elsewhere, or by the section
    extra = np.where([e in quiet or e.startswith(NOTE_FLAG) for e in extra], "", extra)
    if "note" not in out.columns:
        return out
    out["note"] = join_note_columns(out["note"].to_numpy(dtype=object), extra)
    rest = [c for c in out.columns if c != "note"]
    return out[rest + ["note"]]
