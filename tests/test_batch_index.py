"""jagged.report.batch_index: the index rows of a batch, from a metrics table (no kernel runs here)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import jagged
from jagged.analysis import AnalysisOptions, metrics_table
from jagged.readers.dataset import Dataset
from jagged.report.batch_index import index_rows
from jagged.report.batch_plan import Job, Outcome, Plan


def _plan(table: pd.DataFrame, out: Path) -> tuple[Plan, list[Outcome]]:
    models = sorted(table["model"].unique())
    jobs = [Job(kind="model", model=m, notebook="model_report.ipynb", html_path=out / f"{m}.html", parameters={},
                title=m, subtitle="", facts=(), input_hash="") for m in models]
    plan = Plan(out_dir=out, jobs=jobs, todo=jobs, table=table, models=models, profiles=[])
    return plan, [Outcome(job=j, status="written") for j in jobs]


def _dataset(n_items: float | None) -> Dataset:
    rows = [("even", d, 0.70) for d in "abcd"] + [("uneven", d, s) for d, s in zip("abcd", (0.9, 0.3, 0.8, 0.5))]
    rows += [("mid", d, s) for d, s in zip("abcd", (0.6, 0.5, 0.7, 0.55))]
    frame = pd.DataFrame(rows, columns=["model", "domain", "score"]).assign(n_items=n_items)
    scores = jagged.validate_scores(frame, "t.csv", line_offset=None)
    return Dataset(scores=scores, source="t.csv", paths=[], format="long")


def test_index_rows_say_not_tested_without_item_counts(tmp_path):
    table = metrics_table(_dataset(None), AnalysisOptions(bootstrap=0))
    plan, outcomes = _plan(table, tmp_path)
    rows = {r["model"]: r for r in index_rows(plan, outcomes)}
    assert all(r["noise_flag"] == "not tested" and r["relative_noise_flag"] == "not tested" for r in rows.values())
    assert all(r["relative_column"] == "relative_jaggedness" for r in rows.values())   # raw: corrected is empty
    per = table.set_index("model")
    assert rows["uneven"]["relative_jaggedness"] == per.loc["uneven", "relative_jaggedness"]


def test_index_rows_keep_true_and_false_with_item_counts(tmp_path):
    table = metrics_table(_dataset(400.0), AnalysisOptions(bootstrap=0))
    plan, outcomes = _plan(table, tmp_path)
    rows = {r["model"]: r for r in index_rows(plan, outcomes)}
    per = table.set_index("model")
    assert rows["even"]["noise_flag"] == "noise" and bool(per.loc["even", "noise_flag"]) is True
    assert rows["uneven"]["noise_flag"] == "" and bool(per.loc["uneven", "noise_flag"]) is False
    assert rows["uneven"]["relative_column"] == "relative_jaggedness_corrected"
    assert rows["uneven"]["relative_jaggedness"] == per.loc["uneven", "relative_jaggedness_corrected"]
