"""Evaluator outputs (lm-evaluation-harness, Inspect): placeholder until implemented."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jagged.errors import JaggedInputError


def handles_directory(path: Path) -> bool:
    """Return True when a folder holds evaluator outputs this module can read."""
    return False


def load_file(path: Path, kind: str, **options: Any):
    """Load one evaluator output file (JSON or zip) into a Dataset."""
    raise JaggedInputError(f"{path.name}: {kind.upper()} evaluator outputs are not supported yet")


def load_directory(path: Path, **options: Any):
    """Load a folder of evaluator outputs into a Dataset."""
    raise JaggedInputError(f"{path}: is a directory, expected a score file")
