"""jagged: how unevenly a model's errors are spread across a benchmark's domains.

Python API
----------
>>> import jagged
>>> scores = jagged.load_scores()          # bundled MMLU-Pro per-category scores
>>> table = jagged.jaggedness(scores)      # one row per model: macro_score, cv_error, ...
>>> weights = jagged.resolve_profiles(scores, profiles=["items"])   # profiles x domains
>>> dep = jagged.deployment_metrics(scores, weights)   # dep_score, wedge, wedge_bound, ranks
>>> noise = jagged.sampling_noise(scores)   # noise_share, cv_error_corrected, noise_flag
>>> ci = jagged.bootstrap_intervals(scores, n_boot=2000, seed=0)   # <stat>_lo / <stat>_hi

The names are imported on first use (PEP 562), so ``import jagged.cli`` stays light and
``jagged report`` can start its kernel before pandas is even imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from jagged.errors import JaggedInputError, JaggedWarning

__version__ = "0.1.0"

#: public name -> module that defines it
_LAZY: dict[str, str] = {
    "BUNDLED_SCORES": "jagged.readers.load", "Dataset": "jagged.readers.dataset", "load": "jagged.readers.load",
    "load_scores": "jagged.readers.load", "cv_error": "jagged.stats.metrics", "jaggedness": "jagged.stats.metrics",
    "summarize": "jagged.readers.table", "validate_scores": "jagged.readers.table",
    "deployment_metrics": "jagged.stats.deployment", "resolve_profiles": "jagged.stats.weights",
    "bootstrap_intervals": "jagged.stats.bootstrap", "sampling_noise": "jagged.stats.uncertainty",
    "analyse": "jagged.analysis", "metrics_table": "jagged.analysis",
    "AnalysisOptions": "jagged.options", "item_audit": "jagged.stats.item_audit",
    "structure": "jagged.stats.structure", "relative_jaggedness": "jagged.stats.relative",
    "compare": "jagged.stats.compare",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from jagged.options import AnalysisOptions
    from jagged.analysis import analyse, metrics_table
    from jagged.stats.compare import compare
    from jagged.stats.relative import relative_jaggedness
    from jagged.stats.deployment import deployment_metrics
    from jagged.stats.item_audit import item_audit
    from jagged.stats.structure import structure
    from jagged.readers.dataset import Dataset
    from jagged.readers.load import BUNDLED_SCORES, load, load_scores
    from jagged.stats.metrics import cv_error, jaggedness
    from jagged.readers.table import summarize, validate_scores
    from jagged.stats.bootstrap import bootstrap_intervals
    from jagged.stats.uncertainty import sampling_noise
    from jagged.stats.weights import resolve_profiles


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jagged' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AnalysisOptions", "BUNDLED_SCORES", "Dataset", "analyse", "compare", "item_audit", "metrics_table",
    "relative_jaggedness", "structure", "JaggedInputError", "JaggedWarning", "__version__", "bootstrap_intervals",
    "cv_error", "deployment_metrics", "jaggedness", "load", "load_scores", "resolve_profiles",
    "sampling_noise", "summarize", "validate_scores",
]
