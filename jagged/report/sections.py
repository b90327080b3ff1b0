"""Render-time removal of report sections that do not apply (an nbconvert preprocessor).

A report notebook marks the cells of an optional section with the tag ``section-NAME``
(``section-hierarchy``, ``section-profiles`` ...; the names are
:data:`jagged.stats.analysis.SECTIONS`). Its analysis cell shows the
:class:`~jagged.stats.analysis.Analysis`, whose display output carries, under the MIME type
:data:`~jagged.stats.analysis.SECTIONS_MIME`, which sections apply to this input (a JSON
object ``{"hierarchy": false, ...}``). :class:`SectionFilter` reads that record, removes
the output that carries it, and removes every cell with a ``section-NAME`` tag whose
section does not apply. It is registered in ``templates/jagged/conf.json``, so every
render with the jagged template runs it.

A notebook run without the renderer (papermill alone, Jupyter) keeps every cell; its code
cells guard with ``if analysis.sections["NAME"]:`` and print nothing for a section that
does not apply. A notebook without a record keeps every cell here too; a tag naming a
section the record does not know is kept (and listed in ``resources["jagged_sections"]``).
See ``notebooks/SECTIONS.md`` for how to add a section.
"""

from __future__ import annotations

from typing import Any

from nbconvert.preprocessors import Preprocessor
from traitlets import Unicode

from jagged.analysis import SECTIONS_MIME

#: Prefix of the cell tags that put a cell in a section.
TAG_PREFIX = "section-"


def cell_sections(cell: Any, prefix: str = TAG_PREFIX) -> list[str]:
    """The section names a cell's tags put it in (``section-noise`` → ``noise``)."""
    tags = cell.get("metadata", {}).get("tags", []) or []
    return [tag[len(prefix):] for tag in tags if tag.startswith(prefix) and len(tag) > len(prefix)]


def sections_record(nb: Any) -> dict[str, bool] | None:
    """The last sections record in an executed notebook's outputs (None when it has none)."""
    record = None
    for cell in nb.cells:
        for output in cell.get("outputs", []) or []:
            data = output.get("data", {}) or {}
            if SECTIONS_MIME in data:
                record = {str(k): bool(v) for k, v in dict(data[SECTIONS_MIME]).items()}
    return record


class SectionFilter(Preprocessor):
    """Remove the cells of sections that do not apply, and the record that says which.

    Notes
    -----
    After it ran, ``resources["jagged_sections"]`` holds ``applies`` (the record, or
    ``None`` when the notebook had none), ``removed`` (the section names whose cells were
    removed) and ``unknown`` (tagged section names the record does not mention).
    """

    tag_prefix = Unicode(TAG_PREFIX, help="Prefix of the cell tags naming a section.").tag(config=True)

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Drop the record's output and the cells of sections that do not apply."""
        applies = sections_record(nb)
        for cell in nb.cells:
            if cell.get("outputs"):
                cell.outputs = [o for o in cell.outputs if SECTIONS_MIME not in (o.get("data", {}) or {})]
        removed: set[str] = set()
        unknown: set[str] = set()
        if applies is not None:
            kept = []
            for cell in nb.cells:
                names = cell_sections(cell, self.tag_prefix)
                unknown.update(n for n in names if n not in applies)
                off = [n for n in names if applies.get(n) is False]
                if off:
                    removed.update(off)
                    continue
                kept.append(cell)
            nb.cells = kept
        resources["jagged_sections"] = {"applies": applies, "removed": sorted(removed), "unknown": sorted(unknown)}
        return nb, resources
