"""Optional report sections: cells tagged section-NAME leave the rendered report when NAME does not apply."""

from __future__ import annotations

import re

import nbformat
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from jagged import report
from jagged.analysis import SECTIONS_MIME
from jagged.errors import JaggedInputError
from jagged.options import REPORT_SECTIONS as CHOICES
from jagged.options import parse_sections
from jagged.report.notebooks import find_notebook
from jagged.report.sections import (
    SectionFilter,
    cell_blocks,
    cell_sections,
    heading_section,
    sections_record,
)


def tagged(cell, *tags):
    cell.metadata["tags"] = list(tags)
    return cell


def html_output(text: str):
    return new_output("display_data", data={"text/html": f"<p>{text}</p>", "text/plain": text})


def executed(record: dict | None) -> nbformat.NotebookNode:
    """A small executed report notebook: a record, a lead, one section that applies and one that does not."""
    analysis = new_code_cell("analysis")
    if record is not None:
        analysis.outputs = [new_output("execute_result", data={"text/plain": "Analysis ...", SECTIONS_MIME: record},
                                       execution_count=1)]
    glance = tagged(new_code_cell("glance"), "report-lead")
    glance.outputs = [html_output("finding one")]
    kept = tagged(new_code_cell("noise"), "section-noise")
    kept.outputs = [html_output("noise table")]
    dropped = tagged(new_code_cell("hier"), "section-hierarchy")
    dropped.outputs = [html_output("hierarchy table")]
    return new_notebook(cells=[
        tagged(new_markdown_cell("# Notebook title"), "report-skip"), analysis,
        tagged(new_markdown_cell("## At a glance"), "report-lead"), glance,
        new_markdown_cell("## Always shown"),
        tagged(new_markdown_cell("## Noise section"), "section-noise"), kept,
        tagged(new_markdown_cell("## Two levels"), "section-hierarchy"), dropped,
        tagged(new_markdown_cell("## Someone's new section"), "section-future"),
    ])


def test_record_tags_and_filter():
    nb = executed({"noise": True, "hierarchy": False})
    assert sections_record(nb) == {"noise": True, "hierarchy": False}
    assert [cell_sections(c) for c in nb.cells[5:]] == [["noise"], ["noise"], ["hierarchy"], ["hierarchy"],
                                                        ["future"]]
    out, resources = SectionFilter().preprocess(nb, {})
    sources = [c.source for c in out.cells]
    assert "hier" not in sources and "## Two levels" not in sources
    assert "noise" in sources and "## Someone's new section" in sources  # unknown: kept
    assert not out.cells[1].outputs  # the record itself is no content
    assert resources["jagged_sections"] == {"applies": {"noise": True, "hierarchy": False},
                                            "removed": ["hierarchy"], "unknown": ["future"]}


def test_without_a_record_every_cell_stays():
    out, resources = SectionFilter().preprocess(executed(None), {})
    assert len(out.cells) == 10 and resources["jagged_sections"]["applies"] is None


def test_rendered_page_leads_with_the_glance_then_collapsed_provenance_then_contents():
    page = report.render(executed({"noise": True, "hierarchy": False}), title="T",
                         facts=[("input", "scores.csv")], parameters=[("scores", "'scores.csv'", "input")])
    body = page[page.index("<body>"):]
    assert "hierarchy table" not in body and "Two levels" not in body and SECTIONS_MIME not in body
    assert "Analysis ..." not in body and "Notebook title" not in body
    headings = re.findall(r"<h([12])[^>]*>([^<]*)", body)
    assert headings[:3] == [("1", "T"), ("2", "At a glance"), ("2", "Contents")]
    order = [body.index(s) for s in ('class="lead"', "finding one", '<details class="provenance">',
                                     'class="toc"', "<main>")]
    assert order == sorted(order)
    main = body[body.index("<main>"):]
    assert main.index("Always shown") < main.index("noise table") and "finding one" not in main
    assert re.search(r'<details class="provenance">', body) and '<details class="provenance" open' not in body
    toc = body[body.index('class="toc"'):body.index("</nav>")]
    assert "At a glance" not in toc and "Always shown" in toc and "Noise section" in toc
    assert "<!-- jagged:lead-end -->" not in body


def test_a_notebook_without_lead_cells_starts_with_the_provenance():
    nb = new_notebook(cells=[new_markdown_cell("## Only section")])
    body = report.render(nb, title="T")
    assert body.index('<details class="provenance">') < body.index('class="toc"') < body.index("Only section")
    assert 'class="lead"' not in body


# --------------------------------------------------------------------------- --sections


def test_parse_sections_keeps_report_order_and_names_unknown_ones_in_one_line():
    assert parse_sections(None) is None and parse_sections(" ") is None
    assert parse_sections("noise, Glance,noise") == ("glance", "noise")
    with pytest.raises(JaggedInputError) as error:
        parse_sections("glance,nosie,tables")
    message = str(error.value)
    assert "\n" not in message and message.startswith("--sections: unknown sections 'nosie', 'tables'")
    assert "(known: " + ", ".join(CHOICES) + ")" in message
    with pytest.raises(JaggedInputError, match=r"^--sections: names no section \(known: glance, "):
        parse_sections(" , ,")                                       # commas only: not "show nothing"


def test_every_cell_of_the_report_notebook_belongs_to_a_known_section():
    nb = nbformat.read(str(find_notebook("jaggedness_report")), as_version=4)
    blocks = cell_blocks(nb.cells)
    headings = [c.source.lstrip().splitlines()[0] for c in nb.cells
                if c.cell_type == "markdown" and c.source.lstrip().startswith("## ")]
    # every "##" heading is named (tagged, the lead, or in HEADINGS): a new one must be added there
    for cell, block in zip(nb.cells, blocks):
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("## "):
            assert block in CHOICES, cell.source.splitlines()[0]
    assert len(headings) >= 10
    # only the cells before the first heading (title, parameters, the analysis) are in no section
    first = next(i for i, b in enumerate(blocks) if b is not None)
    assert all(b is None for b in blocks[:first]) and all(b in CHOICES for b in blocks[first:])
    assert "analysis = analyse_notebook(globals())" in "".join(c.source for c in nb.cells[:first])
    # the always-on blocks and every optional section are reachable
    assert {"glance", "data", "metrics", "overview", "noise", "meaning", "hierarchy", "profiles", "items",
            "decomposition"} <= set(blocks)


def test_heading_section_matches_untagged_headings_by_prefix():
    assert heading_section("## Jaggedness per model\n\ntext") == "metrics"
    assert heading_section("### a subheading") is None and heading_section("text") is None
    assert heading_section("## Something new") == ""


def test_the_filter_keeps_only_the_chosen_sections_and_the_cells_before_the_first_heading():
    nb = executed({"noise": True, "hierarchy": True})
    nb.cells.insert(4, new_markdown_cell("## Jaggedness per model"))
    out, resources = SectionFilter().preprocess(nb, {"jagged": {"sections": ["noise"]}})
    sources = [c.source for c in out.cells]
    assert sources == ["# Notebook title", "analysis", "## Noise section", "noise"]
    assert resources["jagged_sections"]["removed"] == []  # both apply; they were not chosen
    out, _ = SectionFilter().preprocess(executed({"noise": True}), {"jagged": {"sections": None}})
    assert "## Noise section" in [c.source for c in out.cells] and "glance" in [c.source for c in out.cells]


def test_records_for_report_json_never_reach_the_page_but_their_outputs_do():
    from jagged.views.display import RECORD_MIME

    nb = executed({"noise": True, "hierarchy": True})
    nb.cells[3].outputs[0]["data"][RECORD_MIME] = {"glance": [{"label": "secret-record"}]}
    page = report.render(nb, title="t")
    assert "finding one" in page and "secret-record" not in page


def test_without_provenance_chosen_the_page_has_no_provenance_block():
    nb = executed({"noise": True, "hierarchy": False})
    page = report.render(nb, title="t", facts=[("input", "x.csv")], sections=["glance", "noise"])
    assert 'class="provenance"' not in page and "noise table" in page and "finding one" in page
    page = report.render(nb, title="t", facts=[("input", "x.csv")], sections=["provenance"])
    assert 'class="provenance"' in page and "noise table" not in page and "finding one" not in page


def test_the_notebooks_tag_exactly_the_declared_optional_sections(tmp_path):
    """One declaration (options.REPORT_SECTIONS): the report notebook tags every optional section and nothing else,
    the model report a subset, Analysis.sections answers for each in report order; the compare report tags its own."""
    from jagged.analysis import analyse
    from jagged.options import REPORT_SECTIONS
    from jagged.views.compare import compare_sections

    optional = [name for name, is_optional in REPORT_SECTIONS.items() if is_optional]

    def tags(name):
        return {s for c in nbformat.read(str(find_notebook(name)), as_version=4).cells for s in cell_sections(c)}

    assert tags("jaggedness_report") == set(optional) and tags("model_report") <= set(optional)
    assert list(analyse(bootstrap=0).sections) == optional
    compared = compare_sections(type("C", (), {"shares": {}, "ledger": None, "changes": [], "rescoring": None,
                                               "models": pd.DataFrame(), "floor": None})())
    assert tags("compare_report") == set(compared)
