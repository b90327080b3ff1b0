"""Optional report sections: cells tagged section-NAME leave the rendered report when NAME does not apply."""

from __future__ import annotations

import re

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from jagged import report
from jagged.report.sections import SectionFilter, cell_sections, sections_record
from jagged.analysis import SECTIONS_MIME


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
