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

    ``scores`` is the canonical per-domain table (:mod:`jagged.readers.canonical`); ``items``
    the item table when held in memory, ``item_path`` the Parquet file or folder of item
    results aggregated out of core (``items`` None then); ``model_notes`` per-model remarks
    for the metrics ``note`` column; ``details`` format facts for ``jagged validate`` and the
    report; ``selection`` the selection options given; ``benchmark`` the benchmark's name when
    the reader knows it.
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
