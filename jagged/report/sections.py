"""Render-time removal of report sections that do not apply (an nbconvert preprocessor).

A report notebook marks the cells of an optional section with the tag ``section-NAME``
(``section-hierarchy``, ``section-profiles`` ...; the optional names of
:data:`jagged.options.REPORT_SECTIONS`). Its analysis cell shows the
:class:`~jagged.analysis.Analysis`, whose display output carries, under the MIME type
:data:`~jagged.analysis.SECTIONS_MIME`, which sections apply to this input (a JSON
object ``{"hierarchy": false, ...}``). :class:`SectionFilter` reads that record, removes
the output that carries it, and removes every cell with a ``section-NAME`` tag whose
section does not apply. It is registered in ``templates/jagged/conf.json``, so every
render with the jagged template runs it.

A notebook run without the renderer (papermill alone, Jupyter) keeps every cell; its code
cells guard with ``if analysis.sections["NAME"]:`` and print nothing for a section that
does not apply. A notebook without a record keeps every cell here too; a tag naming a
section the record does not know is kept (and listed in ``resources["jagged_sections"]``).
See ``notebooks/SECTIONS.md`` for how to add a section.

Choosing sections (``jagged report --sections glance,metrics``): every cell of the report
notebook belongs to one of :data:`jagged.options.REPORT_SECTIONS`: a ``report-lead`` cell to ``glance``, a
``section-NAME`` cell to ``NAME``, and an untagged cell to the block its last ``##``
heading opens (:data:`HEADINGS` names the untagged headings).
:func:`jagged.options.parse_sections` checks a choice before anything runs;
:class:`SectionFilter` keeps only the chosen blocks (cells before the first heading, such
as the analysis cell, always stay), and the template leaves the provenance out when
``provenance`` is not chosen.
"""

from __future__ import annotations

from typing import Any

from nbconvert.preprocessors import Preprocessor
from traitlets import Unicode

from jagged.analysis import SECTIONS_MIME

#: Prefix of the cell tags that put a cell in a section.
TAG_PREFIX = "section-"
#: The tag of the cells of "At a glance" (shown before the provenance).
LEAD_TAG = "report-lead"
#: Untagged ``##`` headings of the report notebook and the section each opens (matched by prefix).
HEADINGS: tuple[tuple[str, str], ...] = (
    ("What the data is", "data"),
    ("Jaggedness per model", "metrics"),
    ("How each model's errors spread", "overview"),
    ("Error rate by model and domain", "overview"),
    ("Jaggedness against overall level", "overview"),
    ("How much of the jaggedness is sampling noise", "noise"),
    ("What the numbers mean", "meaning"),
)
#: MIME types of outputs that are records for machines (REPORT.json), never shown in the HTML.
RECORD_MIMES: tuple[str, ...] = (SECTIONS_MIME, "application/vnd.jagged.record+json")


def heading_section(source: str) -> str | None:
    """The section an untagged Markdown cell opens, from its ``## `` heading (None: no heading)."""
    first = source.lstrip().split("\n", 1)[0]
    if not first.startswith("## "):
        return None
    text = first[3:].strip()
    for prefix, name in HEADINGS:
        if text.startswith(prefix):
            return name
    return ""


def cell_blocks(cells: Any, prefix: str = TAG_PREFIX) -> list[str | None]:
    """The section each cell belongs to (None: before the first heading; "": an unknown heading's block).

    A ``report-lead`` cell is in ``glance``, a ``section-NAME`` cell in ``NAME``, any other
    cell in the block the last heading opened (a tagged Markdown heading opens its own).
    """
    blocks: list[str | None] = []
    current: str | None = None
    for cell in cells:
        tags = cell.get("metadata", {}).get("tags", []) or []
        named = cell_sections(cell, prefix)
        if LEAD_TAG in tags:
            blocks.append("glance")
            continue
        if cell.get("cell_type") == "markdown":
            opened = heading_section("".join(cell.get("source", "")))
            if opened is not None:  # a heading nobody named ("") stays in the block before it
                current = named[0] if named else (opened or current)
        blocks.append(named[0] if named else current)
    return blocks


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
        """Drop the records' outputs, the cells of sections that do not apply and of sections not chosen.

        The choice is ``resources["jagged"]["sections"]`` (a sequence of :data:`jagged.options.REPORT_SECTIONS`;
        None or absent: every section).
        """
        applies = sections_record(nb)
        chosen = (resources.get("jagged") or {}).get("sections")
        if chosen is not None:
            wanted = set(chosen)
            blocks = cell_blocks(nb.cells, self.tag_prefix)
            nb.cells = [cell for cell, block in zip(nb.cells, blocks) if block is None or block in wanted]
        for cell in nb.cells:
            if cell.get("outputs"):  # the sections record's output goes; other records leave their output
                cell.outputs = [o for o in cell.outputs if SECTIONS_MIME not in (o.get("data", {}) or {})]
                for output in cell.outputs:
                    for mime in RECORD_MIMES:
                        (output.get("data", {}) or {}).pop(mime, None)
                # an output that was only a record (REPORT.json's) has nothing left to show
                cell.outputs = [o for o in cell.outputs if "data" not in o or o["data"]]
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
