"""Notebook display helpers (figures with alt text, escaped tables) and the overview tables."""

from __future__ import annotations

import base64
import csv
import re
import statistics

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from conftest import BUNDLED

import jagged
from jagged.views import display, overview

HOSTILE = '<script>alert("x")</script> & co'


def test_table_html_escapes_every_name_and_has_header_cells():
    frame = pd.DataFrame({"model": [HOSTILE, "plain"], "cv_error": [0.25, np.nan], "complete": [True, False]})
    markup = display.table_html(frame, caption="<i>caption</i>")
    assert "<script>" not in markup and "<i>" not in markup
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co" in markup.replace("<wbr/>", "")
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


def test_left_out_and_median_errors_summarise_the_cut():
    metrics = pd.DataFrame({"model": list("abcdef"), "cv_error": [0.6, 0.5, 0.4, 0.3, 0.2, np.nan]})
    assert overview.left_out(metrics, limit=4) == ["c", "d"]  # shown: a, b (top) and e, f (bottom)
    assert overview.left_out(metrics) == [] and overview.left_out(metrics, limit=6) == []
    scores = pd.DataFrame({"model": ["c", "c", "d", "d", "a"], "domain": ["x", "y", "x", "y", "x"],
                           "score": [0.9, 0.2, 0.7, 0.6, 0.0]})
    summary = overview.median_errors(scores, ["c", "d"])
    assert summary.index.tolist() == ["x", "y"]
    np.testing.assert_allclose(summary.to_numpy(), [0.2, 0.6])  # medians of (0.1, 0.3) and (0.8, 0.4)
    assert overview.median_errors(scores, []).empty
    assert overview.others_label(1) == "median of 1 other model"


def test_error_matrix_table_has_the_heatmaps_summary_row(monkeypatch, dataset):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.append(a[0]))
    metrics = jagged.jaggedness(dataset.scores)
    display.show_error_matrix(dataset.scores, metrics, limit=6)
    text = shown[0]["text/plain"].splitlines()
    assert len(text) == 1 + 6 + 1 and text[4].lstrip().startswith("median of 23 other models")


def test_long_tables_scroll_in_a_labelled_region(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.append(a[0]))
    display.show_table(pd.DataFrame({"model": range(display.SCROLL_ROWS)}), caption="short")
    display.show_table(pd.DataFrame({"model": range(display.SCROLL_ROWS + 1)}), caption='long "<x>"')
    assert shown[0]["text/html"].startswith('<div class="table-wrap" role="region" tabindex="0" aria-label="short">')
    assert shown[1]["text/html"].startswith(
        '<div class="table-scroll" role="region" tabindex="0" aria-label="long &quot;&lt;x&gt;&quot;">')


@pytest.mark.parametrize("name", ["<script>alert(1)</script>", '"><svg onload=alert(1)>', "*b* _c_ `d` [l](x)",
                                  "$x^2$ & &amp; \\ # 1. - + !", "模型-Ü 🚀"])
def test_markdown_text_renders_a_name_as_exactly_that_text(name):
    from html.parser import HTMLParser

    from nbconvert.filters import markdown2html

    rendered = markdown2html(f"### About {display.markdown_text(name)}\n\nText {display.markdown_text(name)}.")

    class Collect(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.tags, self.text = [], []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)

        def handle_data(self, data):
            self.text.append(data)

    parsed = Collect()
    parsed.feed(rendered)
    assert set(parsed.tags) <= {"h3", "a", "p"}, parsed.tags  # no markup from the name, not even emphasis
    text = "".join(parsed.text)
    assert f"About {name}" in text and f"Text {name}." in text


def test_show_heading_is_escaped_markdown_at_its_level(monkeypatch):
    from nbconvert.filters import markdown2html

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.append(a[0]))
    display.show_heading("Why: <b>x</b> *y*", level=3)
    assert shown[0]["text/markdown"] == "### Why\\: &lt;b&gt;x&lt;/b&gt; \\*y\\*"
    assert shown[0]["text/plain"] == "Why: <b>x</b> *y*"
    rendered = markdown2html(shown[0]["text/markdown"])
    assert rendered.startswith("<h3") and "<b>" not in rendered and "<em>" not in rendered
    with pytest.raises(ValueError, match="level"):
        display.show_heading("x", level=1)


def test_long_names_get_line_break_opportunities_at_their_joints_and_stay_the_same_text():
    name = "some-organisation/a-model_name-with-many.parts-v0.1-" + "x" * 40
    markup = display.cell_markup(name)
    assert markup.startswith('<span class="wrap">') and markup.endswith("</span>")
    inner = markup[len('<span class="wrap">'):-len("</span>")]
    assert inner.replace("<wbr/>", "") == name
    pieces = inner.split("<wbr/>")
    assert len(pieces) >= 4 and all(p[-1] in "/_-." for p in pieces[:-1])  # breaks only after a joint
    assert all(len(p) >= display.WRAP_STEP for p in pieces[:-1])  # and not after every one
    assert display.cell_markup("a" * display.WRAP_MIN) == "a" * display.WRAP_MIN  # short: as it is
    note = "lm-eval --limit 10: 240 of 5761 items scored, a note with spaces"
    assert display.cell_markup(note) == f'<span class="wrap">{note}</span>'  # wraps at its spaces
    hostile = display.cell_markup("<b>-x" * 10)
    assert "<b>" not in hostile and hostile.replace("<wbr/>", "").count("&lt;b&gt;-x") == 10


def test_table_limit_keeps_the_ends_and_says_what_was_left_out():
    frame = pd.DataFrame({"model": [f"m{i:02d}" for i in range(50)], "cv_error": np.linspace(0.5, 0.01, 50)})
    block = display.table_block(frame, caption="Per model", limit=10)
    shown = re.findall(r'<th scope="row">(m\d\d)</th>', block)
    assert shown == [f"m{i:02d}" for i in range(5)] + [f"m{i:02d}" for i in range(45, 50)]
    assert block.count('<tr class="cut">') == 1 and "40 of 50 rows not shown" in block
    assert "Per model — the first 5 and the last 5 of 50" in block
    assert block.index("m04") < block.index('class="cut"') < block.index("m45")
    whole = display.table_block(frame, caption="Per model", limit=60)
    assert 'class="cut"' not in whole and len(re.findall(r'<th scope="row">', whole)) == 50


def test_a_very_long_cell_collapses_into_details_with_its_start_and_the_whole_text():
    superseded = "superseded:" + "/".join(f"run-{i:04d}" for i in range(150))  # 1,500 characters, no space
    page = display.table_html(pd.DataFrame({"model": ["m"], "files": [superseded]}), row_header=False)
    cell = re.findall(r"<td>(.*?)</td>", page, flags=re.S)[1]
    assert cell.startswith('<details class="long-cell"><summary>' + superseded[:display.COLLAPSE_SHOWN])
    assert f"({len(superseded):,} characters)" in cell
    # the whole text is inside, unchanged (no <wbr/>, nothing cut)
    assert re.search(r'<span class="wrap">(.*?)</span></details>', cell).group(1) == superseded
    short = "x" * display.COLLAPSE_MIN
    assert "<details" not in display.table_html(pd.DataFrame({"model": [short]}))


def test_a_note_repeated_on_many_rows_is_said_once_under_the_table():
    common = "intervals are binomial from n_items"
    frame = pd.DataFrame({"model": list("abcde"), "cv_error": [0.1, 0.2, 0.3, 0.4, 0.5],
                          "note": [common, f"incomplete; {common}", common, "", f"{common}; 3 domains"]})
    page = display.table_html(frame)
    assert page.count(common) == 1
    assert re.findall(r"<td>([^<]*)</td>", page) == ["[1]", "incomplete; [1]", "[1]", "", "[1]; 3 domains"]
    assert page.endswith(f'<ol class="table-notes">\n<li value="1">{common}</li>\n</ol>')
    # a note on a minority of rows (or on fewer than REPEAT_MIN) stays in its row
    few = frame.assign(note=["x", "x", "", "", ""])
    assert "table-notes" not in display.table_html(few)
    text, notes = display.shared_notes(display.format_table(few))
    assert notes == [] and text["note"].tolist() == ["x", "x", "", "", ""]


def test_the_record_carries_the_metrics_and_glance_as_json_records_for_report_json(monkeypatch):
    """show_record displays only the machine record: the metrics table and the glance, as plain JSON."""
    import json

    from jagged.analysis import analyse
    from jagged.views import glance

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.append(a[0]))
    analysis = analyse(bootstrap=0)
    analysis.table.loc[0, "cv_error"] = float("nan")
    glance.show_record(analysis)
    assert list(shown[0]) == [display.RECORD_MIME]  # nothing to see
    records = shown[0][display.RECORD_MIME]["metrics"]
    assert len(records) == len(analysis.table) and records[0]["cv_error"] is None
    assert records[1]["cv_error"] == pytest.approx(analysis.table["cv_error"].iloc[1])
    findings = shown[0][display.RECORD_MIME]["glance"]
    assert {"label", "sentence", "statistic", "value"} <= set(findings[0])
    assert findings[0]["label"] == "Most jagged"
    json.dumps(shown[0][display.RECORD_MIME], allow_nan=False)  # plain JSON: no NaN, no numpy scalars


def test_a_title_wider_than_a_narrow_heatmap_is_wrapped_inside_the_figure(dataset):
    from jagged.plots import dispersion

    scores = dataset.scores[dataset.scores["domain"].isin(sorted(dataset.scores["domain"].unique())[:3])]
    ax = dispersion.error_heatmap(scores, jagged.jaggedness(scores))
    title = ax.get_title(loc="left")
    display.figure_png(ax)  # lays the figure out as the report does
    wrapped = ax.get_title(loc="left")
    assert "\n" in wrapped and wrapped.replace("\n", " ") == title  # the same words, on more lines
    renderer = ax.figure.canvas.get_renderer()
    box = next(t for t in ax.get_children() if getattr(t, "get_text", None) and t.get_text() == wrapped
               ).get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= ax.figure.bbox.x1 and box.y1 <= ax.figure.bbox.y1


def test_point_labels_that_would_overlap_are_hidden_first_drawn_first_kept():
    from matplotlib.text import Text

    from jagged.plots import deployment

    n = 30  # every model on nearly the same spot, one profile: the 8 largest |wedge| get labels
    table = pd.DataFrame({"model": [f"model-{i:02d}" for i in range(n)], "profile": "p",
                          "macro_score": 0.5 + np.arange(n) * 1e-4, "dep_score": 0.4 + np.arange(n) * 1e-4,
                          "wedge": 0.1 + np.arange(n) * 1e-3})
    ax = deployment.macro_vs_dep(table)
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    labels = [t for t in ax.texts if t.get_gid() == "model-label"]
    shown = [t for t in labels if t.get_visible()]
    assert len(labels) == 8 and len(shown) == 1 and shown[0].get_text() == "model-29"  # the largest wedge
    boxes = [Text.get_window_extent(t, renderer) for t in shown]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
