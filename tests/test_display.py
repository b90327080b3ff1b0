"""Notebook display helpers (figures with alt text, escaped tables) and the overview tables."""

from __future__ import annotations

import base64
import csv
import statistics

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import jagged
from jagged import display, overview
from conftest import BUNDLED

HOSTILE = '<script>alert("x")</script> & co'


def test_table_html_escapes_every_name_and_has_header_cells():
    frame = pd.DataFrame({"model": [HOSTILE, "plain"], "cv_error": [0.25, np.nan], "complete": [True, False]})
    markup = display.table_html(frame, caption="<i>caption</i>")
    assert "<script>" not in markup and "<i>" not in markup
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co" in markup
    assert "&lt;i&gt;caption&lt;/i&gt;" in markup
    assert markup.count('<th scope="col">') == 3
    assert markup.count('<th scope="row">') == 2  # first cell of each row names the row
    assert "<td class=\"num\">0.2500</td>" in markup and f"<td class=\"num\">{display.NA_TEXT}</td>" in markup
    assert "<td>yes</td>" in markup and "<td>no</td>" in markup


def test_table_html_escapes_column_names_and_custom_formats():
    frame = pd.DataFrame({"a<b": [1.23456], "n": [3]})
    markup = display.table_html(frame, formats={"a<b": "{:.1f}"}, row_header=False)
    assert '<th scope="col">a&lt;b</th>' in markup
    assert '<td class="num">1.2</td>' in markup and '<th scope="row">' not in markup


def test_format_table_text_twin_matches_html_cells():
    frame = pd.DataFrame({"model": ["m"], "x": [0.123456], "n": pd.array([pd.NA], dtype="Int64")})
    text = display.format_table(frame, {"n": "{:.0f}"})
    assert text.iloc[0].tolist() == ["m", "0.1235", display.NA_TEXT]
    assert "0.1235" in display.table_text(frame)


def test_figure_bundle_is_png_with_alt_text_and_css_size():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1])
    data, metadata = display.figure_bundle(ax, "A diagonal line", dpi=50)
    png = base64.b64decode(data["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert metadata["image/png"]["alt"] == "A diagonal line"
    assert (metadata["image/png"]["width"], metadata["image/png"]["height"]) == (200, 150)
    assert "A diagonal line" in data["text/plain"]
    with pytest.raises(ValueError, match="alt text"):
        display.figure_bundle(ax, "  ")
    with pytest.raises(TypeError):
        display.figure_png("not a figure")


def test_palette_png_is_indexed_and_smaller():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.scatter(np.linspace(0, 1, 200), np.sin(np.linspace(0, 9, 200)), alpha=0.5)
    full = display.figure_png(ax, dpi=80)
    small = display.figure_png(ax, dpi=80, colors=64)
    assert full[25] == 6 and small[25] == 3  # IHDR colour type: RGBA vs indexed
    assert len(small) < len(full)
    assert small[16:24] == full[16:24]  # same width and height
    with pytest.raises(ValueError, match="between 2 and 256"):
        display.figure_png(ax, colors=1000)


def test_show_figure_publishes_alt_metadata_and_closes(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.append((a, k)))
    fig, ax = plt.subplots()
    display.show_figure(ax, "Empty axes")
    (args, kwargs), = shown
    assert kwargs["raw"] is True and kwargs["metadata"]["image/png"]["alt"] == "Empty axes"
    assert "image/png" in args[0]
    assert not plt.fignum_exists(fig.number)


def test_show_table_collapsed_wraps_in_details(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.append(a[0]))
    display.show_table(pd.DataFrame({"model": ["<m>"]}), collapsed="More & more")
    markup = shown[0]["text/html"]
    assert markup.startswith("<details><summary>More &amp; more</summary>") and "&lt;m&gt;" in markup


# --- overview ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dataset():
    return jagged.load()


def test_per_model_collapses_profile_rows(dataset):
    metrics = jagged.jaggedness(dataset.scores)
    doubled = pd.concat([metrics.assign(profile="a", dep_score=0.1), metrics.assign(profile="b", dep_score=0.2)])
    rows = overview.per_model(doubled)
    assert len(rows) == 29 and "profile" not in rows and "dep_score" not in rows
    pd.testing.assert_frame_equal(rows, metrics.reset_index(drop=True))


def test_ranked_and_model_order_put_undefined_last():
    metrics = pd.DataFrame({"model": ["b", "a", "c", "d"], "cv_error": [0.2, 0.2, np.nan, 0.5]})
    assert overview.ranked(metrics)["model"].tolist() == ["d", "a", "b", "c"]
    assert overview.model_order(metrics) == (["d", "a", "b", "c"], 0)
    assert overview.model_order(metrics, limit=3) == (["d", "a", "c"], 2)


def test_error_matrix_matches_raw_csv(dataset):
    with open(BUNDLED, newline="") as handle:
        raw = {(r["model"], r["domain"]): 1.0 - float(r["score"]) for r in csv.DictReader(handle)}
    matrix = overview.error_matrix(dataset.scores, order="name")
    assert matrix.columns[0] == "model" and list(matrix.columns[1:]) == sorted({d for _, d in raw})
    for row in matrix.itertuples(index=False):
        for domain, value in zip(matrix.columns[1:], row[1:]):
            assert value == pytest.approx(raw[(row[0], domain)], abs=1e-12)


def test_dataset_facts_and_domain_table(dataset):
    facts = dict(overview.dataset_facts(dataset).itertuples(index=False))
    assert facts["models"] == "29" and facts["domains"] == "14"
    assert facts["models with every domain"] == "29 of 29"
    with open(BUNDLED, newline="") as handle:
        rows = list(csv.DictReader(handle))
    domains = overview.domain_table(dataset.scores)
    assert len(domains) == 14 and set(domains["models"]) == {29}
    law = [float(r["n_items"]) for r in rows if r["domain"] == "law"]
    assert domains.set_index("domain").loc["law", "n_items"] == round(statistics.median(law))
