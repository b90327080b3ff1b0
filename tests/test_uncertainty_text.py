"""Sentences about sampling noise and intervals (jagged/views/uncertainty_text.py)."""

from __future__ import annotations

import pandas as pd

import jagged
from jagged.analysis import AnalysisOptions, metrics_table
from jagged.stats import uncertainty as u
from jagged.views import uncertainty_text as ut


def test_noise_sentences_only_for_flagged_models():
    table = pd.DataFrame({"model": ["a", "b"], "cv_error": [0.06, 0.3], "cv_error_corrected": [0.02, 0.29],
                          "noise_share": [0.8, 0.05], "p_equal_error": [0.3, 1e-9], "noise_flag": [True, False]})
    sentences = ut.noise_sentences(table)
    assert len(sentences) == 1
    assert sentences[0].startswith("a: sampling noise alone would produce about 80%")
    assert "CV 0.060, or 0.020 with the expected noise removed" in sentences[0]
    assert "equal error in every domain (p = 0.3)" in sentences[0]


def test_report_summary_and_statement(shared_data):
    ds = jagged.load(shared_data / "mmlu_per_subject_lmeval_5shot.csv")
    table = metrics_table(ds, AnalysisOptions(bootstrap=100))
    summary = u.noise_summary(table)
    assert summary["model"].iloc[0] == "llama-30B" and (summary["noise_flag"] == "noise").sum() == 16
    assert summary["cv_error_corrected"].is_monotonic_decreasing
    text = ut.uncertainty_statement(table, n_boot=100, ci=0.95)
    assert text.startswith("16 of 20 models have jaggedness indistinguishable from sampling noise.")
    assert "95% percentile intervals from 100 replicates of a parametric binomial bootstrap" in text
    bare = jagged.load(shared_data / "mmlu_hendrycks_readme_4categories.csv")
    text = ut.uncertainty_statement(metrics_table(bare, AnalysisOptions(bootstrap=100)), n_boot=100, ci=0.95)
    assert "no n_items" in text and "No interval could be computed" in text
