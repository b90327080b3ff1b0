"""Render-time removal of report sections that do not apply, or were not chosen (an nbconvert preprocessor).

The cells of an optional section carry the tag ``section-NAME``. The analysis cell's output
carries, under :data:`~jagged.analysis.SECTIONS_MIME`, which sections apply (``{"hierarchy":
false, ...}``); :class:`SectionFilter` (registered in ``templates/jagged/conf.json``) reads
it, drops that record and every cell of a section that does not apply. Without a record
every cell stays, as in a run without the renderer (the cells guard with
``if analysis.sections["NAME"]:``); see ``notebooks/SECTIONS.md``.

For ``--sections`` every cell belongs to one of :data:`jagged.options.REPORT_SECTIONS`: a
``report-lead`` cell to ``glance``, a ``section-NAME`` cell to ``NAME``, an untagged cell to
the block its last ``##`` heading opens (:data:`HEADINGS`); cells before the first heading
always stay.
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
    """The section each cell belongs to (None: before the first heading; "": an unknown heading's block)."""
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
    """Remove the cells of sections that do not apply or were not chosen, and the records that say which.

    Afterwards ``resources["jagged_sections"]`` holds ``applies`` (the record, or None),
    ``removed`` (sections whose cells went) and ``unknown`` (tagged names the record lacks).
    """

    tag_prefix = Unicode(TAG_PREFIX, help="Prefix of the cell tags naming a section.").tag(config=True)

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Drop the records, the cells not chosen (``resources["jagged"]["sections"]``) and those that do not apply."""
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
