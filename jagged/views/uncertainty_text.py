"""Sentences about sampling noise and intervals, from the metrics table (no statistics computed here)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from jagged.stats.uncertainty import EQUAL_ERROR_ALPHA


def noise_sentences(table: pd.DataFrame) -> list[str]:
    """One plain sentence per model flagged as noise-dominated (``noise_flag``), in table order; profile rows
    collapsed."""
    rows = table.drop_duplicates("model")
    rows = rows[rows["noise_flag"].fillna(False).astype(bool)]
    out = []
    for row in rows.itertuples(index=False):
        share = row.noise_share
        text = (f"{row.model}: sampling noise alone would produce about {share:.0%} of the spread of its "
                f"domain error rates, so its jaggedness (CV {row.cv_error:.3f}, or "
                f"{row.cv_error_corrected:.3f} with the expected noise removed) cannot be told apart "
                f"from noise")
        p = row.p_equal_error
        if np.isfinite(p) and p >= EQUAL_ERROR_ALPHA:
            text += f"; the data are even compatible with equal error in every domain (p = {p:.2g})"
        out.append(text + ". More items per domain would be needed to tell.")
    return out


def uncertainty_statement(table: pd.DataFrame, *, n_boot: int, ci: float) -> str:
    """One paragraph on where the intervals come from (``n_boot`` replicates at level ``ci``), or why there are none."""
    rows = table.drop_duplicates("model")
    flagged = int(rows["noise_flag"].fillna(False).astype(bool).sum()) if "noise_flag" in rows else 0
    unknown = int(rows["noise_share"].isna().sum()) if "noise_share" in rows else len(rows)
    parts = []
    if unknown == len(rows):
        parts.append("Sampling noise cannot be assessed: the scores carry no n_items (items per domain), "
                     "so neither noise_share nor the corrected CV can be computed.")
    else:
        parts.append(f"{flagged:,} of {len(rows):,} models have jaggedness indistinguishable from sampling noise"
                     + (f"; for {unknown} the noise is unknown (no n_items)" if unknown else "") + ".")
    if n_boot <= 0 or "cv_error_lo" not in rows.columns:
        parts.append("No intervals were computed (bootstrap = 0).")
    else:
        methods = sorted({m for m in rows["interval_method"] if m})
        none = rows[rows["interval_note"] != ""]
        if methods:
            parts.append(f"Intervals: {ci:.0%} percentile intervals from {n_boot} replicates of a "
                         f"{' and a '.join(methods)}, each centred on the value it is printed with (for cv_error "
                         "and the relative jaggedness, the value with sampling noise removed), so it contains it.")
        if len(none) == len(rows):
            parts.append("No interval could be computed: the scores carry no n_items, so their sampling "
                         "noise is unknown; give item counts or item-level results to get intervals.")
        elif len(none):
            parts.append(f"No interval for {len(none)} models without n_items: "
                         f"{', '.join(map(str, none['model'].head(5)))}{' ...' if len(none) > 5 else ''}.")
    return " ".join(parts)
