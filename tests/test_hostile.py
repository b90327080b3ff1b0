"""Names are data, never markup: reports of a table whose every name is hostile.

Model, domain, category and profile names, the focus model and the ``--title`` are script
tags, event-handler attributes, attribute breakers, mathtext, paths (``../``, absolute),
a reserved device name, 300 characters and non-ASCII text. The cross-model report (and the
per-model reports and the index of ``jagged batch``) must

* write nothing outside the output folder;
* never contain the markup unescaped, nor any script, event handler or foreign element
  (checked on the parsed HTML of every file written, not on the executed notebooks);
* never fire a dialog in the browser, and show every name as text (DOM ``textContent``).
"""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from browser import chromium, luminance, open_page, require_chromium, screenshot
from click.testing import CliRunner

from jagged.cli import main

CHROMIUM = require_chromium()
MARKUP = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", '"><svg onload=alert(1)>']
OTHERS = ["../../outside/escape", "CON", "m" * 299 + "z", "模型-Ünïcödé-🚀",
          r"a$\frac{$b *b* _c_ {{7*7}} &amp; `d`", "' onmouseover='alert(1)"]
CATEGORIES = ["<b onclick=alert(3)>cat</b>", r"$\x$ cat"]
PROFILES = ["<i onmouseover=alert(2)>p</i>", r"$\q$ mix"]
TITLE = '<script>alert("title")</script> & "quotes"'
FOCUS = MARKUP[0]


def _names(root: Path) -> list[str]:
    """Every hostile name, with an absolute path pointing into the watched ``outside`` folder."""
    return MARKUP + OTHERS + [str(root / "outside" / "absolute")]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    """Write the inputs, run ``jagged report`` (and ``jagged batch``) in a separate cwd, list new files."""
    root = tmp_path_factory.mktemp("hostile")
    for folder in ("in", "out", "outside", "cwd"):
        (root / folder).mkdir()
    names = _names(root)
    rng = np.random.default_rng(11)
    rows = [(m, d, round(float(rng.uniform(0.15, 0.95)), 3), int(rng.integers(60, 400)), CATEGORIES[j % 2])
            for m in names for j, d in enumerate(names)]
    pd.DataFrame(rows, columns=["model", "domain", "score", "n_items", "category"]).to_csv(
        root / "in" / "scores.csv", index=False)
    weights = [(p, d, float(w)) for p in PROFILES for d, w in zip(names, rng.uniform(1, 10, len(names)))]
    pd.DataFrame(weights, columns=["profile", "domain", "weight"]).to_csv(root / "in" / "weights.csv", index=False)
    before = {p for p in root.rglob("*")}
    out = root / "out"
    previous = os.getcwd()
    os.chdir(root / "cwd")
    try:
        inputs = [str(root / "in" / "scores.csv"), "--weights", str(root / "in" / "weights.csv"), "--bootstrap", "0"]
        chosen = [word for name in names for word in ("--models", name)]  # every model: the selection names them
        result = CliRunner().invoke(main, ["report", *inputs, "-o", str(out / "report.html"), "--title", TITLE,
                                           "--focus-model", FOCUS, "--theme", "dark", *chosen])
        assert result.exit_code == 0, result.output
        batch = None
        if "batch" in main.commands:
            batch = CliRunner().invoke(main, ["batch", *inputs, "--out-dir", str(out / "batch"), "-j", "2"])
            assert batch.exit_code == 0, batch.output
    finally:
        os.chdir(previous)
    written = sorted(p for p in root.rglob("*") if p not in before and p.is_file())
    return {"root": root, "out": out, "names": names, "written": written, "batched": batch is not None}


def test_every_file_written_is_inside_the_output_folder(run):
    out = run["out"].resolve()
    assert run["written"], "nothing was written"
    outside = [p for p in run["written"] if not p.resolve().is_relative_to(out)]
    assert not outside, outside
    assert not any((run["root"] / "outside").iterdir())
    assert not any((run["root"] / "cwd").iterdir())
    for path in run["written"]:
        assert len(path.name.encode("utf-8")) <= 100, path  # slugs are bounded (the OS would stop at 255)
        assert path.name.split(".")[0].upper() not in {"CON", "PRN", "AUX", "NUL"}, path
    if run["batched"]:  # one page per model, each in the models folder
        pages = [p for p in run["written"] if p.suffix == ".html" and p.parent.name == "models"]
        assert len(pages) == len(run["names"])


class _Markup(HTMLParser):
    """Collect what a parsed page would execute: script elements, on* attributes, foreign tags."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.handlers: list[str] = []
        self.urls: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)
        self._in_script = tag == "script"
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append(f"<{tag} {name}={value}>")
            if name in ("src", "href", "action", "formaction") and value is not None:
                self.urls.append(value)

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False


def _html_files(run: dict) -> list[Path]:
    files = [p for p in run["written"] if p.suffix == ".html"]
    assert files
    return files


def test_no_markup_from_the_data_in_any_html_written(run):
    sort_js = (Path(__file__).resolve().parent.parent / "templates" / "batch" / "sort.js")
    allowed_scripts = {sort_js.read_text(encoding="utf-8").strip()} if sort_js.is_file() else set()
    for path in _html_files(run):
        page = path.read_text(encoding="utf-8")
        for raw in [t for t in MARKUP + CATEGORIES + PROFILES + [TITLE] if "<" in t]:
            assert raw not in page, f"{raw!r} unescaped in {path.name}"
        parsed = _Markup()
        parsed.feed(page)
        assert not parsed.handlers, (path.name, parsed.handlers[:3])
        assert {"svg", "b", "i"}.isdisjoint(parsed.tags), path.name
        assert all(s.strip() in allowed_scripts for s in parsed.scripts), path.name
        for url in parsed.urls:  # fragments, relative links and embedded PNGs only
            scheme = re.match(r"^\s*([a-zA-Z][a-zA-Z0-9+.-]*):", url)
            assert scheme is None or url.startswith("data:image/png;base64,"), (path.name, url[:80])
        assert 'class="stderr"' not in page, f"kernel warnings in {path.name}"


def test_names_show_as_text_and_nothing_runs_in_the_browser(run):
    # a cell's text, or for a very long cell folded into <details class="long-cell">, the whole text inside it
    texts_js = """() => Array.from(document.querySelectorAll('th, td, caption, h1, h2, h3, title, li, a'))
        .map(el => { const folded = el.querySelector(':scope > details.long-cell > .wrap');
                     return (folded || el).textContent.replace('\\u00b6', '').trim(); })"""
    cross_model = run["out"] / "report.html"
    seen: set[str] = set()
    with chromium(CHROMIUM) as browser:
        for path in _html_files(run):
            with open_page(browser, path) as (page, log):
                texts = page.evaluate(texts_js)
                title = page.title()
                background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
                if path == cross_model:
                    screenshot(page, "hostile_cross_model_report")
                    h1 = page.evaluate("() => document.querySelector('h1').textContent")
                    alts = page.evaluate("() => Array.from(document.images).map(i => i.alt)")
            assert not log.dialogs, (path.name, log.dialogs)
            assert not log.page_errors and not log.console_errors, (path.name, log.console_errors)
            assert not log.remote_requests, (path.name, log.remote_requests)
            seen.update(texts)
            if path == cross_model:
                assert title == TITLE and h1 == TITLE
                assert luminance(background) < 0.05  # --theme dark reached the page
                assert f"Why: exposure against error for {FOCUS}" in texts
                assert any(FOCUS in alt for alt in alts)
                assert set(run["names"]) <= set(texts)  # each name is a table cell of its own
                assert set(CATEGORIES) <= set(texts) and set(PROFILES) <= set(texts)
    assert set(run["names"]) <= seen
    if run["batched"]:  # each per-model report is titled with its model, as text
        assert {f"Model report: {name}" for name in run["names"]} <= seen
