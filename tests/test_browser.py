"""Every kind of report, opened in a real (headless) Chromium as a reader would open it.

For the cross-model report, the per-model report and the batch index: no console error, no
request leaving the file, every image decoded, every table-of-contents link landing on an
element, a screenshot in ``tests/artifacts/``. Then the index's sorting, the themes, the
print layout, and a 300 × 60 report's size (its render time is benchmarks/bench_report_scale.py's).

Skipped, with the install command, when no Chromium is found (see ``browser.py``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
from browser import (
    ARTIFACTS,
    COLOURS_JS,
    HEADINGS_JS,
    IMAGES_JS,
    TOC_TARGETS_JS,
    chromium,
    contrast,
    luminance,
    open_page,
    require_chromium,
    screenshot,
)

from jagged import report

CHROMIUM = require_chromium()
ROOT = Path(__file__).resolve().parent.parent
MODEL = "gemini-1.5-pro-002"
#: The limits of issue 7 for a 300 models × 60 domains report.
SCALE_MAX_BYTES = 5_000_000
BUNDLED_MAX_BYTES = 2_000_000


@pytest.fixture(scope="module")
def browser():
    with chromium(CHROMIUM) as launched:
        yield launched


@pytest.fixture(scope="module")
def cross_model(tmp_path_factory) -> Path:
    """The cross-model report of the bundled data, as ``jagged report`` writes it."""
    out = tmp_path_factory.mktemp("cross") / "jaggedness_report.html"
    return report.jaggedness_report(None, out)


@pytest.fixture(scope="module")
def per_model(tmp_path_factory) -> Path:
    """The per-model report of one bundled model, as ``jagged batch`` writes each."""
    out = tmp_path_factory.mktemp("model") / "model.html"
    return report.run_report("model_report", out, {"model": MODEL}, title=f"Model report: {MODEL}")


@pytest.fixture(scope="module")
def batch_index(tmp_path_factory) -> Path:
    """``jagged batch`` on three bundled models: the index, the reports it links."""
    from click.testing import CliRunner

    from jagged.cli import main

    if "batch" not in main.commands:  # pragma: no cover - fails loudly rather than skipping
        pytest.fail("jagged batch is not available")
    out = tmp_path_factory.mktemp("batch")
    models = ["Yi-6B", MODEL, "Llama-2-7b-hf"]
    args = ["batch", str(ROOT / "jagged" / "data" / "mmlu_pro_per_category.csv"), "--out-dir", str(out),
            "-j", "2", "--bootstrap", "0"]
    for model in models:
        args += ["--models", model]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return out / "index.html"


def _check_page(browser, path: Path, name: str, **page_options) -> dict:
    """The checks every report page must pass; returns what the page showed for more checks."""
    with open_page(browser, path, **page_options) as (page, log):
        images = page.evaluate(IMAGES_JS)
        toc = page.evaluate(TOC_TARGETS_JS)
        shot = screenshot(page, name)
        found = {"images": images, "toc": toc, "title": page.title(), "log": log, "screenshot": shot}
    assert not log.console_errors, log.console_errors
    assert not log.page_errors, log.page_errors
    assert not log.dialogs, log.dialogs
    assert log.requests and log.requests[0] == path.resolve().as_uri()
    assert not log.remote_requests, f"requests leaving the file: {log.remote_requests}"
    for image in images:
        assert image["complete"] and image["width"] > 0 and image["height"] > 0, image
    missing = [link for link in toc if link["target"] is None]
    assert not missing, f"table-of-contents links that land nowhere: {missing}"
    for link in toc:  # the element the link lands on is the heading it names
        assert link["text"].strip() in link["target"], link
    assert shot.stat().st_size > 10_000
    return found


def test_cross_model_report_in_the_browser(browser, cross_model):
    found = _check_page(browser, cross_model, "cross_model_report")
    assert len(found["images"]) >= 8  # dispersion, heatmap, scatter, forest, deployment plots
    assert len(found["toc"]) >= 8
    assert found["title"] == "Jaggedness report"
    assert cross_model.stat().st_size < BUNDLED_MAX_BYTES


def test_cross_model_report_opens_on_its_findings(browser, cross_model):
    """The first screen: title, "At a glance" with its findings, then the provenance, collapsed."""
    with open_page(browser, cross_model, width=1280, height=800) as (page, log):
        headings = page.evaluate(HEADINGS_JS)
        findings = page.locator("ul.glance li")
        glance_box = page.locator("ul.glance").bounding_box()
        summary_box = page.locator("details.provenance > summary").bounding_box()
        provenance_open = page.evaluate("() => document.querySelector('details.provenance').open")
        provenance_table_shown = page.locator("table[aria-label=Provenance]").is_visible()
        labels = findings.locator("strong").all_inner_texts()
        screenshot(page, "cross_model_first_screen", full_page=False)
        page.locator("details.provenance > summary").click()
        opened = page.locator("table[aria-label=Provenance]").is_visible()
        parameters = page.locator("table[aria-label=Parameters] tbody tr").count()
    assert headings[0] == {"level": 1, "text": "Jaggedness report"}
    assert headings[1] == {"level": 2, "text": "At a glance"}
    assert labels[:4] == ["Most jagged.", "Least jagged.", "Sampling noise.", "Largest wedge."]
    assert glance_box["y"] + glance_box["height"] < 800  # every finding on the first screen
    assert summary_box["y"] < 800 and summary_box["y"] > glance_box["y"] + glance_box["height"]
    assert not provenance_open and not provenance_table_shown
    from jagged.report.notebooks import notebook_parameters

    assert opened and parameters == len(notebook_parameters("jaggedness_report"))  # complete once opened
    assert not log.console_errors and not log.remote_requests


def test_per_model_report_in_the_browser(browser, per_model):
    found = _check_page(browser, per_model, "per_model_report")
    assert len(found["images"]) >= 1 and len(found["toc"]) >= 4
    assert found["title"] == f"Model report: {MODEL}"


def test_batch_index_in_the_browser_and_its_links(browser, batch_index):
    found = _check_page(browser, batch_index, "batch_index")
    assert not found["images"]  # the index has a table, no figures
    with open_page(browser, batch_index) as (page, log):
        links = page.evaluate("() => Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    local = [link for link in links if link.startswith("file:")]
    assert len(local) >= 4  # three model reports and the cross-model report
    for link in local:
        assert Path(link.removeprefix("file://")).is_file(), link


def _column(page, index: int) -> list[str]:
    return page.evaluate(f"""() => Array.from(document.querySelectorAll('#models tbody tr'))
        .map(tr => tr.cells[{index}].getAttribute('data-sort') ?? tr.cells[{index}].textContent)""")


def test_batch_index_sorts_when_a_header_is_clicked(browser, batch_index):
    with open_page(browser, batch_index) as (page, log):
        headers = page.evaluate("() => Array.from(document.querySelectorAll('#models thead th'))"
                                ".map(th => th.textContent.trim())")
        cv = headers.index("cv_error")
        model = headers.index("model")
        initial = [float(v) for v in _column(page, cv)]
        assert initial == sorted(initial, reverse=True)  # most jagged first, as written
        page.locator("#models thead th").nth(cv).locator("button").click()
        ascending = [float(v) for v in _column(page, cv)]
        assert ascending == sorted(initial) and ascending != initial
        assert page.locator("#models thead th").nth(cv).get_attribute("aria-sort") == "ascending"
        page.locator("#models thead th").nth(model).locator("button").click()
        names = _column(page, model)
        assert names == sorted(names, key=str.lower)
        page.locator("#models thead th").nth(model).locator("button").click()
        assert _column(page, model) == sorted(names, key=str.lower, reverse=True)
        screenshot(page, "batch_index_sorted")
    assert not log.console_errors and not log.page_errors and not log.remote_requests


# --- themes and print ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def themed(cross_model, tmp_path_factory) -> dict[str, Path]:
    """The cross-model report rendered again (not rerun) in each theme."""
    nb = nbformat.read(cross_model.with_suffix(".ipynb"), as_version=4)
    folder = tmp_path_factory.mktemp("themes")
    out = {}
    for theme in report.THEMES:
        path = folder / f"{theme}.html"
        path.write_text(report.render(nb, title="Themed", theme=theme), encoding="utf-8")
        out[theme] = path
    return out


@pytest.mark.parametrize("theme, scheme, dark", [
    ("light", "dark", False), ("dark", "light", True), ("auto", "light", False), ("auto", "dark", True)])
def test_theme_colours_in_the_browser(browser, themed, theme, scheme, dark):
    with open_page(browser, themed[theme], color_scheme=scheme) as (page, log):
        colours = page.evaluate(COLOURS_JS)
        table_ink = page.evaluate("() => getComputedStyle(document.querySelector('table.jagged-table td')).color")
        figure_bg = page.evaluate("() => getComputedStyle(document.querySelector('.output img')).backgroundColor")
        if theme == "dark":
            screenshot(page, "cross_model_report_dark")
    assert not log.console_errors and not log.remote_requests
    background = luminance(colours["body"])
    assert (background < 0.05) if dark else (background > 0.95), colours
    assert contrast(colours["body"], colours["ink"]) >= 7, colours  # WCAG AAA for body text
    assert contrast(colours["body"], table_ink) >= 7
    assert luminance(figure_bg) > 0.95  # figures are drawn on white: they keep a white card


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_print_layout_cuts_nothing(browser, themed, theme):
    """Printed (A4 width), nothing is wider than the page and the page is black on white."""
    width = 690  # A4 minus the @page margins, in CSS pixels
    with open_page(browser, themed[theme], width=width, media="print") as (page, log):
        overflow = page.evaluate(f"""() => Array.from(document.querySelectorAll('table, img, pre'))
            .filter(el => el.getClientRects().length)
            .filter(el => el.getBoundingClientRect().right > {width} + 1)
            .map(el => el.tagName + ' ' + (el.className || '') + ' ' + Math.round(el.getBoundingClientRect().right))""")
        clipping = page.evaluate("""() => Array.from(document.querySelectorAll('.output, .table-scroll'))
            .map(el => getComputedStyle(el).overflowX).filter(v => v !== 'visible')""")
        colours = page.evaluate(COLOURS_JS)
        images = page.evaluate("() => Array.from(document.images).map(i => getComputedStyle(i).breakInside)")
        pdf = page.pdf(path=str(ARTIFACTS / f"cross_model_report_{theme}.pdf"), format="A4",
                       print_background=True)
    assert not overflow, f"wider than a printed page: {overflow}"
    assert not clipping, "an output would clip its content in print"
    assert luminance(colours["body"]) > 0.95 and luminance(colours["ink"]) < 0.01
    assert images and set(images) == {"avoid"}
    assert pdf[:5] == b"%PDF-" and len(re.findall(rb"/Type\s*/Page\b", pdf)) >= 5


# --- accessibility ------------------------------------------------------------------------


def test_figures_have_alt_text_and_tables_have_header_cells(browser, cross_model, per_model):
    for path in (cross_model, per_model):
        with open_page(browser, path) as (page, log):
            alts = page.evaluate("() => Array.from(document.images).map(i => i.alt)")
            tables = page.evaluate("""() => Array.from(document.querySelectorAll('table')).map(t => ({
                label: (t.caption ? t.caption.textContent : '') || t.getAttribute('aria-label') || '',
                headers: t.querySelectorAll('th').length,
                columnHeaders: t.querySelectorAll('thead th').length,
                scoped: t.querySelectorAll('thead th[scope="col"]').length,
                rowHeaders: t.querySelectorAll('tbody th[scope="row"]').length,
                rows: t.querySelectorAll('tbody tr').length}))""")
        assert alts and len(set(alts)) == len(alts), "every figure needs its own alt text"
        for alt in alts:
            assert len(alt) >= 60 and not alt.startswith(("Figure", "No description")), alt
        assert tables
        for table in tables:
            assert table["label"], table
            assert table["headers"] > 0, table
            assert table["columnHeaders"] == table["scoped"], table
            if table["columnHeaders"] == 0:  # a two-column facts table: a header per row
                assert table["rowHeaders"] == table["rows"], table


# --- scale --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scale_report(tmp_path_factory) -> Path:
    """The cross-model report of 300 models × 60 domains with three weights profiles."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import scale_data
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    folder = tmp_path_factory.mktemp("scale")
    scores, weights = scale_data.write(folder)
    return report.jaggedness_report(scores, folder / "scale.html", weights=str(weights))


def test_scale_report_is_small_and_shows_a_cut(browser, scale_report):
    """Size and rendering; the render *time* is measured by benchmarks/bench_report_scale.py,
    against the 3 s limit, because timings are no test assertions."""
    size = scale_report.stat().st_size
    assert size < SCALE_MAX_BYTES, f"{size / 1e6:.2f} MB"
    found = _check_page(browser, scale_report, "scale_report_300x60")
    html = scale_report.read_text(encoding="utf-8")
    assert "median of 260 other models" in html  # the summary row of the heatmap's table
    alts = [image["alt"] for image in found["images"]]
    assert any("40 of 300 models are shown" in alt for alt in alts)
    heatmap = next(image for image in found["images"] if image["alt"].startswith("Heatmap"))
    assert heatmap["width"] <= 952  # fits the page's text column: shown at its natural size


# --- long names at leaderboard scale ------------------------------------------------------

#: Open LLM Leaderboard scale: 4,496 models with ids up to 102 characters, six benchmarks.
N_LONG_MODELS = 4500


@pytest.fixture(scope="module")
def long_names_page(tmp_path_factory) -> Path:
    """The per-model table of 4,500 models with 100-character names, rendered as the report renders it."""
    import numpy as np
    import pandas as pd
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    import jagged
    from jagged.views import display
    from jagged.views.overview import ranked

    rng = np.random.default_rng(7)
    orgs = ["meta-llama", "Qwen", "mistralai", "some-research-lab_with_a-long-name", "user/merges"]
    models = []
    for i in range(N_LONG_MODELS):
        base = f"{orgs[i % len(orgs)]}/{'Merged-Model_' * 3}SFT-DPO_lora-r64_v{i % 7}.{i % 3}-{i:05d}"
        models.append((base + "-x" * 60)[:100])
    domains = ["IFEval", "BBH", "MATH Lvl 5", "GPQA", "MUSR", "MMLU-PRO"]
    scores = pd.DataFrame([(m, d, float(rng.uniform(0.05, 0.9))) for m in models for d in domains],
                          columns=["model", "domain", "score"])
    scores["n_items"], scores["category"] = np.nan, None
    table = jagged.jaggedness(scores)
    table.loc[table.index % 3 == 0, "note"] = ("jaggedness indistinguishable from sampling noise (noise share "
                                              "62% > 50%; equal-error test p = 0.31)")
    cell = new_code_cell("display.show_metrics(table)")
    cell.outputs = [new_output("display_data", data={
        "text/html": display.table_block(ranked(table), caption="Per-model jaggedness", formats=display.METRIC_FORMATS),
        "text/plain": "table"})]
    nb = new_notebook(cells=[new_markdown_cell("## Jaggedness per model"), cell])
    path = tmp_path_factory.mktemp("long") / "long_names.html"
    path.write_text(report.render(nb, title="Long names"), encoding="utf-8")
    return path


def test_long_names_leave_the_numbers_in_view_and_rows_short(browser, long_names_page):
    with open_page(browser, long_names_page, width=1280, height=900) as (page, log):
        found = page.evaluate("""() => {
            const region = document.querySelector('.table-scroll').getBoundingClientRect();
            const heads = Array.from(document.querySelectorAll('.table-scroll thead th'));
            const rows = Array.from(document.querySelectorAll('.table-scroll tbody tr')).slice(0, 60);
            const cell = document.querySelector('.table-scroll tbody td');
            return {regionLeft: region.left, regionRight: region.right,
                    heads: heads.map(h => ({text: h.textContent, left: h.getBoundingClientRect().left,
                                           right: h.getBoundingClientRect().right})),
                    heights: rows.map(r => r.getBoundingClientRect().height),
                    nameWidth: rows[0].cells[0].getBoundingClientRect().width,
                    lineHeight: parseFloat(getComputedStyle(cell).lineHeight),
                    rowCount: document.querySelectorAll('.table-scroll tbody tr').length,
                    firstName: rows[0].cells[0].textContent};
        }""")
        screenshot(page, "long_names_table", full_page=False)
    assert found["rowCount"] == N_LONG_MODELS and len(found["firstName"]) == 100  # the whole name, as text
    columns = {h["text"]: h for h in found["heads"]}
    for name in ("n_domains", "complete", "macro_score", "mean_error", "sd_error", "cv_error"):
        assert columns[name]["right"] <= found["regionRight"] + 1, (name, columns[name], found["regionRight"])
    assert found["nameWidth"] <= 0.45 * (found["regionRight"] - found["regionLeft"])
    tallest = max(found["heights"])
    assert tallest <= 2 * found["lineHeight"] + 12, (tallest, found["lineHeight"])  # two lines and padding
    assert not log.console_errors and not log.remote_requests


# --- issue 18: nothing cut off or stacked, at a desktop and a phone width -----------------------

from browser import GLANCE_OVERLAP_JS, OVERFLOW_JS  # noqa: E402

WIDTHS = (1400, 390)
LONG_NAME = "organisation-with-a-long-name/" + "model-" * 12 + "instruct-v2.1-preview-2026-11-30"


@pytest.fixture(scope="module")
def thousand_models(tmp_path_factory) -> Path:
    """A 1,000-model x 14-domain report with item counts, one model with a 100-character name."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(18)
    models = [f"org-{i // 50:02d}/model-{i:04d}" for i in range(999)] + [LONG_NAME]
    domains = [f"domain_{d:02d}" for d in range(14)]
    level = rng.normal(0.6, 0.12, len(models))[:, None]
    difficulty = rng.normal(0, 0.1, len(domains))[None, :]
    own = rng.normal(0, rng.uniform(0.01, 0.12, len(models)))[:, None] * rng.normal(0, 1, (1, len(domains)))
    n_items = rng.integers(80, 1200, len(domains))
    truth = np.clip(level - difficulty + own, 0.02, 0.98)
    score = rng.binomial(np.broadcast_to(n_items, truth.shape), truth) / n_items
    folder = tmp_path_factory.mktemp("thousand")
    frame = pd.DataFrame({"model": np.repeat(models, len(domains)), "domain": np.tile(domains, len(models)),
                          "score": score.ravel(), "n_items": np.tile(n_items, len(models))})
    frame.to_csv(folder / "scores.csv", index=False)
    return report.jaggedness_report(folder / "scores.csv", folder / "thousand.html", bootstrap=20)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("which", ["cross_model", "thousand_models"])
def test_no_table_or_figure_overflows_and_no_glance_text_overlaps(browser, request, which, width):
    path = request.getfixturevalue(which)
    with open_page(browser, path, width=width, height=900) as (page, log):
        overflow = page.evaluate(OVERFLOW_JS)
        glance = page.evaluate(GLANCE_OVERLAP_JS)
        screenshot(page, f"{which}_{width}", full_page=False)
        screenshot(page, f"{which}_{width}_full")
    assert overflow["scrollWidth"] <= overflow["viewport"], overflow  # the page never scrolls sideways
    assert overflow["tables"] == [], overflow["tables"]  # a wide table scrolls inside its wrapper
    assert overflow["wrappers"] == [] and overflow["figures"] == [], overflow
    assert glance["count"] >= 3 and glance["hits"] == [], glance


def test_a_wide_table_scrolls_inside_its_box_at_phone_width(browser, cross_model):
    with open_page(browser, cross_model, width=390) as (page, log):
        wide = page.evaluate("""() => Array.from(document.querySelectorAll('.table-wrap, .table-scroll'))
            .filter(w => w.scrollWidth > w.clientWidth + 1)
            .map(w => ({label: w.getAttribute('aria-label'), overflow: getComputedStyle(w).overflowX}))""")
    assert wide, "at 390 px some table must be wider than the page (the per-model table)"
    assert all(w["overflow"] == "auto" for w in wide), wide


def test_the_thousand_model_figures_label_the_extremes_without_overlap():
    """The plots' own label-overlap check (matplotlib's renderer) at 1,000 models."""
    import numpy as np
    import pandas as pd

    import jagged.plots
    from jagged.views.overview import ends  # noqa: F401 - the cut the plots use

    rng = np.random.default_rng(5)
    table = pd.DataFrame({"model": [f"org/model-{i:04d}" for i in range(1000)],
                          "macro_score": rng.uniform(0.2, 0.9, 1000), "cv_error": rng.uniform(0.05, 0.5, 1000)})
    table["mean_error"] = 1 - table["macro_score"]
    ax = jagged.plots.cv_vs_macro(table)
    figure = ax.figure
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    texts = [t for t in ax.texts if t.get_visible() and t.get_text()]
    assert 0 < len(texts) <= 20  # the extremes, not everyone
    boxes = [t.get_window_extent(renderer) for t in texts]
    overlaps = [(texts[i].get_text(), texts[j].get_text()) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
                if boxes[i].overlaps(boxes[j])]
    assert overlaps == []


def test_figures_keep_a_readable_size_at_phone_width_and_scroll_sideways(browser, cross_model):
    figures_js = """() => Array.from(document.querySelectorAll('main img')).map(img => {
        const box = img.closest('.output');
        return {alt: img.alt.slice(0, 40), shown: img.getBoundingClientRect().width, own: +img.getAttribute('width'),
                box: box.clientWidth, scrolls: box.scrollWidth > box.clientWidth + 1,
                overflow: getComputedStyle(box).overflowX};
    })"""
    with open_page(browser, cross_model, width=390) as (page, log):
        phone = page.evaluate(figures_js)
    with open_page(browser, cross_model, width=1400) as (page, log):
        desk = page.evaluate(figures_js)
    assert len(phone) >= 8 and all(f["own"] > 0 for f in phone)
    for figure in phone:  # at its own size (its 8 pt text ~10 px), never shrunk to the 350 px column
        assert abs(figure["shown"] - figure["own"]) <= 1, figure
        assert figure["scrolls"] == (figure["own"] > figure["box"] + 1) and figure["overflow"] == "auto", figure
    assert any(f["scrolls"] for f in phone)
    for figure in desk:  # a page wide: every figure fits its column as it is
        assert figure["shown"] <= figure["box"] + 1 and not figure["scrolls"], figure
