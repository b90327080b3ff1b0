"""Plots: figures after the views; each takes data and keywords, draws on ``ax`` (or a new one), returns the Axes.

Every figure function is importable from here (``jagged.plots.cv_vs_macro``) and listed
by ``dir(jagged.plots)`` and :data:`__all__`; each module is imported on first use
(PEP 562), so ``import jagged.plots`` does not import matplotlib.

>>> import jagged, jagged.plots
>>> ax = jagged.plots.cv_vs_macro(jagged.jaggedness(jagged.load_scores()))  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

#: figure function -> the module of jagged.plots that defines it
FIGURES: dict[str, str] = {
    # the cross-model report
    "error_dispersion": "dispersion", "error_heatmap": "dispersion", "cv_vs_macro": "dispersion",
    "cv_forest": "uncertainty", "category_strip": "hierarchy",
    "macro_vs_dep": "deployment", "wedge_bars": "deployment", "wedge_dots": "deployment",
    "exposure_dots": "deployment", "rank_slope": "deployment", "exposure_vs_error": "deployment",
    "drift_bound": "deployment",
    "discrimination_difficulty": "item_audit", "flagged_share_by_domain": "item_audit",
    "variance_bars": "structure", "residual_heatmap": "structure", "relative_vs_cv": "structure",
    "scree": "structure", "residual_profile_plot": "structure",
    "information_plot": "irt", "loading_difficulty_plot": "irt", "position_plot": "irt",
    "omega_bars": "bifactor", "loading_scatter": "bifactor",
    # the per-model and compare reports
    "domain_errors_vs_field": "model", "delta_forest": "compare", "a_against_b": "compare",
    "change_forest": "compare", "field_forest": "compare", "domain_shifts": "compare",
}

__all__ = sorted(FIGURES)


def __getattr__(name: str) -> Any:
    module = FIGURES.get(name)
    if module is None:
        raise AttributeError(f"module 'jagged.plots' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"jagged.plots.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(FIGURES))
