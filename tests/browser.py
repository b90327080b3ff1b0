"""Open jagged's HTML files in the system Chromium, driven by Playwright (no browser download).

The browser tests (``test_browser.py``, ``test_hostile.py``) import this module. Without a
Chromium they skip with one line that says how to install it; ``.ci/run`` installs Debian's
``chromium`` so CI always runs them.

Each page is opened from ``file://`` with every request, console message, page error and
dialog recorded in a :class:`PageLog`, so a test can assert that nothing left the file,
nothing complained and nothing executed.
"""

from __future__ import annotations

import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
INSTALL_HINT = ("chromium not found: apt-get install -y chromium (Debian/Ubuntu; .ci/run does it), "
                "or set JAGGED_CHROMIUM=/path/to/chromium")
#: Headless flags; without the background-networking ones Chromium phones home at start-up.
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CANDIDATES = ("chromium", "chromium-browser", "/usr/bin/chromium", "/usr/lib/chromium/chromium")
#: Schemes a self-contained report may load from.
LOCAL_SCHEMES = ("file:", "data:")


def find_chromium() -> str | None:
    """Path of a Chromium executable: ``$JAGGED_CHROMIUM``, else the system's ``chromium``."""
    given = os.environ.get("JAGGED_CHROMIUM")
    if given:
        return given if Path(given).is_file() else None
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def require_chromium() -> str:
    """The Chromium path and Playwright; skip the calling test module when either is missing."""
    path = find_chromium()
    if path is None:
        pytest.skip(INSTALL_HINT, allow_module_level=True)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:  # pragma: no cover - a test dependency
        pytest.skip("playwright not installed: pip install -e '.[test]'", allow_module_level=True)
    return path


@dataclass
class PageLog:
    """What a page did while it was open."""

    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    render_seconds: float = float("nan")

    @property
    def remote_requests(self) -> list[str]:
        """Requests for anything but the file itself and data: URLs."""
        return [url for url in self.requests if not url.startswith(LOCAL_SCHEMES)]


@contextmanager
def chromium(executable: str) -> Iterator[Any]:
    """A headless Chromium (Playwright ``Browser``) for the duration of the block."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=LAUNCH_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def open_page(browser: Any, path: Path, *, width: int = 1280, height: int = 900,
              color_scheme: str = "light", media: str = "screen") -> Iterator[tuple[Any, PageLog]]:
    """Open ``path`` from ``file://`` in a fresh context, recording everything it does.

    Every dialog (``alert``, ``confirm``...) is recorded and dismissed. ``render_seconds``
    is the wall time from navigation until the load event has fired and two animation
    frames have been painted.
    """
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=color_scheme,
                                  java_script_enabled=True)
    page = context.new_page()
    page.emulate_media(media=media)
    log = PageLog()
    page.on("request", lambda request: log.requests.append(request.url))
    page.on("console", lambda message: log.console_errors.append(message.text)
            if message.type == "error" else None)
    page.on("pageerror", lambda error: log.page_errors.append(str(error)))

    def on_dialog(dialog: Any) -> None:
        log.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    try:
        started = time.perf_counter()
        page.goto(Path(path).resolve().as_uri(), wait_until="load")
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        log.render_seconds = time.perf_counter() - started
        yield page, log
    finally:
        context.close()


def screenshot(page: Any, name: str, *, full_page: bool = True) -> Path:
    """Save a screenshot (the whole page, or the first screen) as ``tests/artifacts/NAME.png`` (git-ignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    target = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(target), full_page=full_page)
    return target


# --- page checks shared by the tests ------------------------------------------------------

#: Every <img>: its natural size and whether it finished loading.
IMAGES_JS = """() => Array.from(document.images).map(img => ({
    alt: img.getAttribute('alt'), complete: img.complete, width: img.naturalWidth, height: img.naturalHeight}))"""

#: Each table-of-contents link and the element that becomes :target when it is followed.
TOC_TARGETS_JS = """() => Array.from(document.querySelectorAll('nav.toc a[href^="#"]')).map(a => {
    location.hash = a.hash;
    const target = document.querySelector(':target');
    return {href: a.getAttribute('href'), text: a.textContent,
            target: target ? target.tagName + ':' + target.textContent.replace('\\u00b6', '').trim() : null};
})"""

#: The page's headings in order (h1 to h3), without anchor marks.
HEADINGS_JS = """() => Array.from(document.querySelectorAll('h1, h2, h3'))
    .map(h => ({level: Number(h.tagName[1]), text: h.textContent.replace('\\u00b6', '').trim()}))"""

#: Background and text colours of the page as the reader sees them.
COLOURS_JS = """() => ({body: getComputedStyle(document.body).backgroundColor,
    ink: getComputedStyle(document.body).color,
    main: getComputedStyle(document.querySelector('main') || document.body).color})"""


def luminance(css_colour: str) -> float:
    """Relative luminance (0 black … 1 white) of a computed ``rgb(...)``/``rgba(...)`` colour."""
    inner = css_colour[css_colour.index("(") + 1:css_colour.index(")")]
    r, g, b = (float(v) / 255 for v in inner.replace("/", ",").split(",")[:3])

    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two computed colours."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


#: Overflow on the page: the document's width against the viewport, and every table or figure
#: wider than its box without a scrolling wrapper (``.table-wrap``/``.table-scroll``) to hold it.
OVERFLOW_JS = """() => {
  const box = el => el.getBoundingClientRect();
  const viewport = document.documentElement.clientWidth;
  const out = {viewport, scrollWidth: document.documentElement.scrollWidth, tables: [], figures: [], wrappers: []};
  for (const t of document.querySelectorAll('main table, .lead table')) {
    const wrap = t.closest('.table-wrap, .table-scroll');
    const holder = wrap || t.parentElement;
    if (!wrap && t.scrollWidth > holder.clientWidth + 1)
      out.tables.push({caption: (t.caption || {}).textContent || '', width: t.scrollWidth, box: holder.clientWidth});
  }
  for (const w of document.querySelectorAll('.table-wrap, .table-scroll'))
    if (box(w).right > viewport + 1) out.wrappers.push({label: w.getAttribute('aria-label'), right: box(w).right});
  for (const img of document.querySelectorAll('main img, .lead img')) {
    // a figure may be wider than its box only when the box scrolls sideways (phones); the box stays in view
    const holder = img.closest('.output') || img.parentElement;
    const scrolls = ['auto', 'scroll'].includes(getComputedStyle(holder).overflowX);
    if (box(holder).right > viewport + 1 || (!scrolls && box(img).width > holder.clientWidth + 1))
      out.figures.push({alt: img.alt.slice(0, 60), right: box(img).right});
  }
  return out;
}"""

#: Text boxes in the glance box (the list items and any headings or cells in it) that overlap another.
GLANCE_OVERLAP_JS = """() => {
  const els = Array.from(document.querySelectorAll('.lead h2, .lead li, .lead th, .lead td, .lead p'));
  const rects = els.map(e => e.getBoundingClientRect());
  const lead = document.querySelector('.lead');
  const hits = [];
  for (let i = 0; i < rects.length; i++) {
    if (lead && rects[i].right > lead.getBoundingClientRect().right + 1)
      hits.push({outside: els[i].textContent.slice(0, 60)});
    for (let j = i + 1; j < rects.length; j++) {
      if (els[i].contains(els[j]) || els[j].contains(els[i])) continue;
      const a = rects[i], b = rects[j];
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1)
        hits.push({a: els[i].textContent.slice(0, 40), b: els[j].textContent.slice(0, 40)});
    }
  }
  return {count: els.length, hits};
}"""
