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
>>> dataset = jagged.load(jagged.data_path("mmlu_pro_responses.csv.gz"))   # bundled item-level responses

The names are imported on first use (PEP 562), so ``import jagged.cli`` stays light and
``jagged report`` can start its kernel before pandas is even imported.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jagged.errors import JaggedInputError, JaggedWarning

__version__ = "0.1.0"

#: public name -> module that defines it (``__all__`` and ``dir(jagged)`` follow from it; the imports for type
#: checkers below must name the same, ``tests/test_api.py`` checks)
_LAZY: dict[str, str] = {
    "BUNDLED_SCORES": "jagged.readers.load", "Dataset": "jagged.readers.dataset", "load": "jagged.readers.load",
    "load_scores": "jagged.readers.load", "cv_error": "jagged.stats.metrics", "jaggedness": "jagged.stats.metrics",
    "summarize": "jagged.readers.canonical", "validate_scores": "jagged.readers.canonical",
    "deployment_metrics": "jagged.stats.deployment", "resolve_profiles": "jagged.analysis",
    "bootstrap_intervals": "jagged.stats.bootstrap", "sampling_noise": "jagged.stats.uncertainty",
    "analyse": "jagged.analysis", "metrics_table": "jagged.analysis",
    "AnalysisOptions": "jagged.options", "item_audit": "jagged.stats.item_audit",
    "structure": "jagged.stats.structure", "relative_jaggedness": "jagged.stats.decomposition",
    "compare": "jagged.stats.compare",
}
#: subpackages imported on first use (``jagged.plots.cv_vs_macro`` after ``import jagged``)
_SUBMODULES = ("plots",)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from jagged.analysis import analyse, metrics_table, resolve_profiles
    from jagged.options import AnalysisOptions
    from jagged.readers.canonical import summarize, validate_scores
    from jagged.readers.dataset import Dataset
    from jagged.readers.load import BUNDLED_SCORES, load, load_scores
    from jagged.stats.bootstrap import bootstrap_intervals
    from jagged.stats.compare import compare
    from jagged.stats.decomposition import relative_jaggedness
    from jagged.stats.deployment import deployment_metrics
    from jagged.stats.item_audit import item_audit
    from jagged.stats.metrics import cv_error, jaggedness
    from jagged.stats.structure import structure
    from jagged.stats.uncertainty import sampling_noise


def data_path(name: str = "mmlu_pro_per_category.csv") -> Path:
    """The path of a data file bundled with jagged, from any install.

    ``name``: ``"mmlu_pro_per_category.csv"`` (:data:`BUNDLED_SCORES`),
    ``"mmlu_pro_responses.csv.gz"`` (the item-level responses behind them) or
    ``"profiles_mmlu_pro.csv"`` (illustrative profiles). Raises :class:`JaggedInputError`
    listing the bundled files for any other name.
    """
    from jagged.resources import data_dir

    folder = data_dir()
    available = sorted(p.name for p in folder.iterdir() if p.is_file() and p.suffix in (".csv", ".gz"))
    if name not in available:
        raise JaggedInputError(f"no bundled data file {name!r} (bundled: {', '.join(available)})")
    return folder / name


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"jagged.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jagged' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))


__all__ = [*_LAZY, *_SUBMODULES, "data_path", "JaggedInputError", "JaggedWarning", "__version__"]
