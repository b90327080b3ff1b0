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
"""

from __future__ import annotations

__version__ = "0.1.0"

from jagged.deployment import deployment_metrics
from jagged.errors import JaggedInputError, JaggedWarning
from jagged.loaders import BUNDLED_SCORES, Dataset, load, load_scores
from jagged.metrics import cv_error, jaggedness
from jagged.table import summarize, validate_scores
from jagged.uncertainty import bootstrap_intervals, sampling_noise
from jagged.weights import resolve_profiles

__all__ = [
    "BUNDLED_SCORES", "Dataset", "JaggedInputError", "JaggedWarning", "__version__", "bootstrap_intervals",
    "cv_error", "deployment_metrics", "jaggedness", "load", "load_scores", "resolve_profiles",
    "sampling_noise", "summarize", "validate_scores",
]
