"""The one shape every reader produces: :class:`Dataset` (a leaf: it imports no reader)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from jagged.text import Summarised


@dataclass(repr=False)
class Dataset(Summarised):
    """Everything a loader learned from its input.

    Attributes
    ----------
    scores : pandas.DataFrame
        The canonical per-domain table (:mod:`jagged.readers.canonical`).
    source : str
        Display name of the input (file or folder name).
    format : str
        The detected format: ``"long"``, ``"wide"``, ``"items"``, ...
    items : pandas.DataFrame or None
        The item-level table when the input had one held in memory.
    item_path : pathlib.Path or None
        The Parquet file or folder of item results aggregated out of core (``items`` None).
    model_notes : dict
        Per-model remarks for the metrics ``note`` column.
    details : dict
        Format-specific facts for ``jagged validate`` and the report.
    selection : dict
        The selection options given (``where``, ``models``, ``domains``, ``n_items``).
    benchmark : str or None
        The benchmark's name when the reader knows it.
    """

    scores: pd.DataFrame
    source: str
    paths: list[Path]
    format: str
    items: pd.DataFrame | None = None
    item_path: Path | None = None
    model_notes: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    selection: dict[str, Any] = field(default_factory=dict)
    benchmark: str | None = None

    @property
    def name(self) -> str:
        """What reports call the input: :attr:`benchmark` when known, else :attr:`source` (the file or folder)."""
        return self.benchmark or self.source

    def _summary(self) -> tuple[str, list[tuple[str, str]]]:
        scores = self.scores
        rows = [("input", self.name), ("format", self.format), ("models", f"{scores['model'].nunique():,}"),
                ("domains", f"{scores['domain'].nunique():,}"), ("scores", f"{len(scores):,}")]
        if self.items is not None:
            rows.append(("item rows", f"{len(self.items):,}"))
        rows += [(key, str(list(value)) if isinstance(value, (list, tuple)) else str(value))
                 for key, value in self.selection.items()]
        return "Dataset", rows


def sha256_file(path: str | Path) -> str:
    """The hex SHA-256 digest of a file."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
