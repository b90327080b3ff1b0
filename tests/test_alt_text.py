"""Alt texts of the report's figures and plot labels: what they say follows the data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import jagged
from jagged.plots.labels import plain, shorten
from jagged.views import alt_text


@pytest.fixture(scope="module")
def bundled():
    dataset = jagged.load()
    return dataset.scores, jagged.jaggedness(dataset.scores)


def _many(n_models: int = 50, n_domains: int = 4) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(2)
    scores = pd.DataFrame([(f"m{i:02d}", f"d{j}", rng.uniform(0.2, 0.9)) for i in range(n_models)
                           for j in range(n_domains)], columns=["model", "domain", "score"])
    return scores, jagged.jaggedness(scores)


def test_dispersion_and_heatmap_alt_name_counts_extremes_and_order(bundled):
    scores, metrics = bundled
    ranked = metrics.sort_values("cv_error", ascending=False)
    text = alt_text.dispersion_alt(scores, metrics, limit=40)
    assert "29 models" in text and "14 domains" in text and "shown" not in text
    assert f"Most jagged: {ranked['model'].iloc[0]} (cv_error {ranked['cv_error'].iloc[0]:.2f})" in text
    assert f"least jagged: {ranked['model'].iloc[-1]}" in text
    errors = (1 - scores.pivot_table(index="model", columns="domain", values="score", observed=True)).median()
    heat = alt_text.heatmap_alt(scores, metrics, limit=40)
    assert f"lowest median error ({errors.idxmin()})" in heat and f"highest ({errors.idxmax()})" in heat


def test_alt_texts_say_what_a_cut_leaves_out():
    scores, metrics = _many(50)
    for text in (alt_text.dispersion_alt(scores, metrics, limit=10), alt_text.heatmap_alt(scores, metrics, limit=10)):
        assert "10 of 50 models are shown: the 5 most and the 5 least jagged; the other 40 are summarised" in text
    assert alt_text.subset_note(metrics, 10, "the {limit} at either end by wedge") == \
        " Of the 50 models, only the 10 at either end by wedge are drawn."
    assert alt_text.subset_note(metrics, 50, "x") == "" and alt_text.subset_note(metrics, None, "x") == ""
    assert "the 5 most and 5 least jagged labelled" in alt_text.scatter_alt(metrics)


def test_scatter_alt_names_the_best_and_leaves_out_undefined(bundled):
    _, metrics = bundled
    text = alt_text.scatter_alt(metrics)
    best = metrics.sort_values("macro_score", ascending=False).iloc[0]
    assert "29 models with a defined cv_error, each labelled" in text
    assert f"Highest macro score: {best['model']} ({best['macro_score']:.2f})" in text
    some_undefined = metrics.assign(cv_error=[np.nan] * 28 + [0.3])
    assert "The only model with a defined cv_error is" in alt_text.scatter_alt(some_undefined)


def test_shorten_keeps_start_and_end_and_plain_escapes_mathtext():
    assert shorten("short") == "short"
    long = "vendor-" + "x" * 100 + "-v2.3"
    cut = shorten(long, 20)
    assert len(cut) == 20 and cut.startswith("vendor-") and cut.endswith("-v2.3") and "…" in cut
    assert plain("a$b$c") == r"a\$b\$c" and plain("m" * 300).count("…") == 1
    assert plain("m" * 300, limit=None) == "m" * 300
    with pytest.raises(ValueError):
        shorten("abc", 2)
