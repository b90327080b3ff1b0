"""Shared test setup: Agg backend, seeded random generators, figures closed after each test."""

from __future__ import annotations

import os
import random
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
BUNDLED = ROOT / "jagged" / "data" / "mmlu_pro_per_category.csv"
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(autouse=True)
def _seed_and_close():
    random.seed(0)
    np.random.seed(0)
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture
def shared_data() -> Path:
    """The shared real-data folder; tests that need it skip loudly when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} not found")
    return SHARED_DATA
