"""Render an executed notebook to one self-contained HTML page with the ``templates/jagged`` template.

Code is hidden unless asked for; the page has a header, a provenance block, a table of
contents and figures with their alt text, and fetches nothing from the network.
"""

from __future__ import annotations

import html as html_lib
import re
import sys
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import jagged
from jagged.options import check_value
from jagged.report.notebooks import notebook_parameters, plain
from jagged.resources import templates_dir
from jagged.text import one_line, printable

TEMPLATES_DIR = templates_dir()
TEMPLATE_NAME = "jagged"
#: Cells with this tag are left out of the HTML (e.g. the notebook's own title cell).
SKIP_TAG = "report-skip"
#: Versions shown in the provenance block.
VERSIONED = ("pandas", "numpy", "matplotlib", "papermill", "nbconvert")


def _heading_entries(content: str) -> list[tuple[int, str, str]]:
    """Level, id and text of each ``<h2 id>`` / ``<h3 id>`` in rendered HTML (the TOC)."""
    entries = []
    for level, anchor, inner in re.findall(r'<h([23])\s+id="([^"]+)"[^>]*>(.*?)</h\1>', content, flags=re.S):
        inner = re.sub(r'<a class="anchor-link".*?</a>', "", inner, flags=re.S)
        text = html_lib.unescape(re.sub(r"<[^>]+>", "", inner)).strip()
        entries.append((int(level), html_lib.unescape(anchor), text))
    return entries


#: One render at a time: the exporters are shared by the threads of a batch.
_RENDERING = threading.Lock()


@lru_cache(maxsize=4)
def _exporter(show_code: bool) -> Any:
    """One HTMLExporter per setting, reused across renders (its template is compiled once)."""
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    config = Config()
    config.TagRemovePreprocessor.enabled = True
    config.TagRemovePreprocessor.remove_cell_tags = {SKIP_TAG}
    config.HTMLExporter.exclude_input = not show_code
    config.HTMLExporter.exclude_input_prompt = True
    config.HTMLExporter.exclude_output_prompt = True
    exporter = HTMLExporter(config=config, template_name=TEMPLATE_NAME,
                            extra_template_basedirs=[str(TEMPLATES_DIR)])
    exporter.register_filter("jagged_headings", _heading_entries)
    return exporter


class Warmup(threading.Thread):
    """Import nbconvert and compile the template in a thread while the kernel works.

    An error here (nbconvert missing, a broken template) is the one the real render would
    raise: :meth:`wait` raises it in the rendering thread; a run that fails earlier never waits.
    """

    def __init__(self, show_code: bool) -> None:
        super().__init__(name="jagged-render-warmup", daemon=True)
        self.show_code = bool(show_code)
        self.error: Exception | None = None

    def run(self) -> None:
        import nbformat

        try:
            with _RENDERING:
                _exporter(self.show_code).from_notebook_node(nbformat.v4.new_notebook(), resources={"jagged": {}})
        except Exception as exc:  # handed over to the rendering thread by wait()
            self.error = exc

    def wait(self) -> None:
        """Wait for the warm-up; raise what it raised."""
        self.join()
        if self.error is not None:
            raise self.error


def run_facts(nb: Any) -> list[tuple[str, str, str]]:
    """Provenance rows from papermill's metadata of an executed notebook (start, duration)."""
    meta = nb.get("metadata", {}).get("papermill", {})
    rows = []
    if meta.get("start_time"):
        rows.append(("run started (UTC)", str(meta["start_time"]).replace("T", " ")[:19], ""))
    if meta.get("duration") is not None:
        rows.append(("run duration", f"{float(meta['duration']):.1f} s", ""))
    return rows


def version_facts() -> list[tuple[str, str, str]]:
    """Provenance rows: versions of jagged, Python and the main libraries."""
    from importlib.metadata import PackageNotFoundError, version

    rows = [("jagged", jagged.__version__, ""), ("Python", sys.version.split()[0], "")]
    for name in VERSIONED:
        try:
            rows.append((name, version(name), ""))
        except PackageNotFoundError:  # pragma: no cover - all are dependencies
            continue
    return rows


def parameter_rows(notebook: str | Path, parameters: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """Each declared parameter with the value it ran with (given, or the notebook default)."""
    rows = []
    for p in notebook_parameters(notebook):
        value = repr(plain(parameters[p.name])) if p.name in parameters else p.default
        rows.append((p.name, value, p.help))
    return rows


def render(nb: Any, *, title: str, show_code: bool = False, facts: Iterable[Sequence[str]] = (),
           parameters: Iterable[Sequence[str]] = (), subtitle: str | None = None,
           footer: str | None = None, meta: Mapping[str, str] | None = None, theme: str = "light",
           sections: Sequence[str] | None = None) -> str:
    """Render an executed notebook to a self-contained HTML page.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        An executed notebook.
    title : str
        Page title and heading.
    show_code : bool
        Show code cells (hidden by default).
    facts : iterable of (label, value[, kind])
        Provenance rows (``kind == "hash"``: monospace); papermill's start and duration follow.
    parameters : iterable of (name, value, help)
        Parameter rows (:func:`parameter_rows`).
    subtitle, footer : str, optional
        A line under the title; a line at the end.
    meta : mapping, optional
        Report metadata (:mod:`jagged.report.rerun`), each ``<meta name="jagged-KEY">`` in the
        head; ``parameters`` (YAML) is also shown in the provenance block.
    theme : {"light", "dark", "auto"}
        Page colours (``"auto"`` follows ``prefers-color-scheme``); figures stay white.
    sections : sequence of str, optional
        The sections to show (:data:`jagged.options.REPORT_SECTIONS`); None: all that apply.

    Returns
    -------
    str
        The HTML: every text autoescaped, control characters and bidi overrides written as
        visible escapes (:func:`jagged.text.printable`).

    Raises
    ------
    JaggedInputError
        An unknown theme.
    """
    theme = check_value("theme", theme)
    rows = [tuple(f) + ("",) * (3 - len(f)) for f in facts] + run_facts(nb)
    meta = dict(meta or {})
    resources = {"jagged": {"title": title, "subtitle": subtitle, "facts": rows,
                            "parameters": [tuple(p) for p in parameters], "footer": footer,
                            "meta": list(meta.items()), "parameters_yaml": meta.get("parameters"),
                            "theme": theme, "sections": None if sections is None else list(sections)}}
    with _RENDERING:
        body, _ = _exporter(bool(show_code)).from_notebook_node(without_stderr(nb), resources=resources)
    return printable(body, keep="\t\n\r")  # NUL, controls and bidi overrides from names: shown as escapes


def _is_stderr(output: Any) -> bool:
    return output.get("output_type") == "stream" and output.get("name") == "stderr"


def without_stderr(nb: Any) -> Any:
    """The notebook without what its kernel wrote to stderr (warnings); ``nb`` is not changed.

    The page never shows raw warning text; the kept notebook does, and :func:`kernel_warnings`
    passes it on to the command line.
    """
    import nbformat

    cells = [nbformat.NotebookNode({**cell, "outputs": [o for o in cell["outputs"] if not _is_stderr(o)]})
             if any(_is_stderr(o) for o in cell.get("outputs", ())) else cell for cell in nb.cells]
    return nbformat.NotebookNode({**nb, "cells": cells})


def kernel_warnings(nb: Any) -> list[str]:
    """What the kernel wrote to stderr, each warning once as ``Category: message``, jagged's own left out.

    ``path:line: UserWarning: text`` becomes ``UserWarning: text`` (its source line dropped);
    ``JaggedWarning`` s are left out: the command already warned about the same input.
    """
    found: dict[str, None] = {}
    for cell in nb.cells:
        for output in cell.get("outputs", ()):
            if not _is_stderr(output):
                continue
            text = output.get("text", "")
            for line in ("".join(text) if isinstance(text, list) else str(text)).splitlines():
                warning = re.match(r"^.*?:\d+: (\w+): (.*)$", line)
                if warning is not None:
                    line = f"{warning.group(1)}: {warning.group(2)}"
                elif not line.strip() or line[:1].isspace():  # the warning's source line
                    continue
                if not line.startswith("JaggedWarning:"):
                    found[one_line(line, 300)] = None
    return list(found)
