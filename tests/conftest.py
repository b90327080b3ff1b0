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
TEST_DATA = ROOT / "tests" / "data"
BUNDLED = ROOT / "jagged" / "data" / "mmlu_pro_per_category.csv"
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(autouse=True)
def _seed_and_close():
    random.seed(0)
    np.random.seed(0)
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture(scope="session")
def shared_data(tmp_path_factory) -> Path:
    """The real benchmark data (tests/data, copied with provenance from the shared folder).

    A folder laid out like the shared data folder: ``lmeval/``, ``inspect/``,
    ``mmlu_per_subject_lmeval_5shot.csv``, ``mmlu_hendrycks_readme_4categories.csv``,
    ``mmlu_pro_per_category.csv`` and
    ``mmlu_pro_item_level.csv`` (decompressed once per session from the ``.gz`` copy).
    """
    import gzip
    import shutil

    folder = tmp_path_factory.mktemp("shared_data")
    for name in ("lmeval", "inspect", "mmlu_per_subject_lmeval_5shot.csv", "mmlu_hendrycks_readme_4categories.csv"):
        (folder / name).symlink_to(TEST_DATA / name)
    (folder / "mmlu_pro_per_category.csv").symlink_to(BUNDLED)
    with gzip.open(TEST_DATA / "mmlu_pro_item_level.csv.gz", "rb") as source, \
            open(folder / "mmlu_pro_item_level.csv", "wb") as target:
        shutil.copyfileobj(source, target)
    return folder


@pytest.fixture(scope="session")
def spark():
    """ONE local Spark session for the whole test run (``local[2]``, 4 shuffle partitions, no UI).

    Skipped with a hint when PySpark (``pip install 'jagged[spark]'``) or Java 17 is missing.
    ``engine="spark"`` picks it up as the active session; it is stopped when the run ends.
    """
    import shutil

    pytest.importorskip("pyspark", reason="the Spark tests need pip install 'jagged[spark]'")
    if shutil.which("java") is None:
        pytest.skip("the Spark tests need Java 17 (apt-get install openjdk-17-jre-headless)")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("jagged-tests")
               .config("spark.sql.shuffle.partitions", "4").config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC").config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
