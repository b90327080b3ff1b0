"""REPORT.json: the key numbers written beside every report (``NAME.html`` -> ``NAME.json``), only on success."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import jagged
from jagged.options import selection
from jagged.report.notebooks import notebook_name

REPORT_FORMAT = ("format", "jagged-report/1")


def report_record(nb: Any, *, notebook: str | Path, title: str, parameters: Mapping[str, Any],
                  facts: Sequence[Sequence[str]] = (), sections: Sequence[str] | None = None) -> dict[str, Any]:
    """The key numbers of an executed report notebook, as one JSON-ready object (REPORT.json).

    Parameters
    ----------
    nb : nbformat.NotebookNode
        The executed notebook; its outputs of MIME type :data:`jagged.views.display.RECORD_MIME`
        give the tables.
    notebook, title, parameters, facts, sections
        The run's notebook, title, full parameters, provenance rows and chosen sections.

    Returns
    -------
    dict
        ``format`` (``"jagged-report/1"``), ``jagged_version``, ``notebook``, ``title``,
        ``input``, ``provenance`` (label → value), ``selection``
        (:func:`jagged.options.selection`), ``parameters``, ``sections``, ``glance`` (per
        finding: ``section``, ``label``, ``sentence``, and where recorded ``subject``,
        ``statistic``, ``value``, ``lo``, ``hi``, ``count``, ``total``, ``rests_on``),
        ``metrics`` (the metrics table's rows), then any other recorded table (the compare
        report's ``domains`` and ``change_shares``). Missing numbers are null.
    """
    from jagged.views.display import RECORD_MIME

    tables: dict[str, Any] = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []) or []:
            data = output.get("data", {}) or {}
            if isinstance(data.get(RECORD_MIME), Mapping):
                tables.update(data[RECORD_MIME])
    provenance = {str(row[0]): str(row[1]) for row in facts}
    return {REPORT_FORMAT[0]: REPORT_FORMAT[1], "jagged_version": jagged.__version__,
            "notebook": notebook_name(notebook), "title": title, "input": provenance.get("input", ""),
            "provenance": provenance, "selection": selection(parameters), "parameters": dict(parameters),
            "sections": None if sections is None else list(sections),
            "glance": tables.get("glance") or glance_from_html(nb), "metrics": tables.get("metrics", []),
            **{k: v for k, v in tables.items() if k not in ("glance", "metrics")}}


def glance_from_html(nb: Any) -> list[dict[str, str]]:
    """"At a glance" read back from its HTML (section, label, sentence), for notebooks that record no numbers."""
    import html
    import re

    found = []
    for cell in nb.cells:
        for output in cell.get("outputs", []) or []:
            markup = (output.get("data", {}) or {}).get("text/html", "")
            if isinstance(markup, list):
                markup = "".join(markup)
            if '<ul class="glance">' not in markup:
                continue
            for section, label, sentence in re.findall(
                    r'<li data-section="([^"]*)"><strong>(.*?)\.</strong> (.*?)</li>', markup, flags=re.S):
                found.append({"section": html.unescape(section), "label": html.unescape(label),
                              "sentence": html.unescape(sentence)})
    return found


def _json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities as None (strict JSON)."""
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def report_json(nb: Any, **kwargs: Any) -> str:
    """:func:`report_record` as strict JSON text (indented, UTF-8, ending in a newline)."""

    return json.dumps(_json_safe(report_record(nb, **kwargs)), indent=1, ensure_ascii=False,
                      allow_nan=False, default=str) + "\n"


def is_report_json(path: str | Path) -> bool:
    """Whether ``path`` is a REPORT.json jagged wrote (its first key is :data:`REPORT_FORMAT`)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
    except OSError:
        return False
    return head.replace(b" ", b"").replace(b"\n", b"").startswith(b'{"format":"jagged-report/')
