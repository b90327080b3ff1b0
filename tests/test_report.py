"""`jagged report`: the rendered HTML, provenance, atomic replacement and failures.

The default report is rendered once per module through the CLI (it takes seconds).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from importlib.metadata import version
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from conftest import BUNDLED

from jagged import report
from jagged.cli import main
from jagged.errors import JaggedInputError

OWN_OPTIONS = {"scores", "output", "title", "show_code", "params_file", "notebook", "sections"}  # page choices


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("report") / "jaggedness_report.html"
    stale = out.with_suffix(".failed.ipynb")
    stale.write_text("{}")  # a failure record from an earlier run
    result = CliRunner().invoke(main, ["report", "-o", str(out), "--title", "Audit <of> models"])
    assert result.exit_code == 0, result.output
    return out, out.read_text(encoding="utf-8")


def bundled_models() -> set[str]:
    with open(BUNDLED, newline="") as handle:
        return {row["model"] for row in csv.DictReader(handle)}


def test_html_names_every_model(rendered):
    _, html = rendered
    missing = [m for m in bundled_models() if m not in html]
    assert not missing and len(bundled_models()) == 29


def test_plots_are_embedded_pngs_with_alt_text(rendered):
    _, html = rendered
    images = re.findall(r"<img\b[^>]*>", html)
    assert len(images) >= 3
    for tag in images:
        assert 'src="data:image/png;base64,' in tag
        alt = re.search(r'alt="([^"]*)"', tag)
        assert alt and len(alt.group(1)) > 20


def test_no_code_no_traceback_nothing_from_the_network(rendered):
    _, html = rendered
    assert 'class="input"' not in html and "error_dispersion(" not in html and "import jagged" not in html
    assert "Traceback" not in html and 'class="error"' not in html
    assert "<script" not in html.lower()
    assert "<link" not in html.lower()
    external = re.findall(r'(?:src|href)\s*=\s*["\']?\s*(?:https?:|//|ftp:)', html, flags=re.I)
    assert not external
    assert "@import" not in html and "url(http" not in html


def test_provenance_block(rendered):
    _, html = rendered
    digest = hashlib.sha256(BUNDLED.read_bytes()).hexdigest()
    assert digest in html
    assert "mmlu_pro_per_category.csv" in html
    for name in ("pandas", "papermill"):
        assert re.search(rf"<th scope=\"row\">{name}</th><td>{re.escape(version(name))}</td>", html)
    assert re.search(r"run started \(UTC\)</th><td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d</td>", html)
    assert re.search(r"run duration</th><td>\d+\.\d s</td>", html)
    assert re.search(r"<th scope=\"row\">models</th><td>29</td>", html)
    assert re.search(r"<th scope=\"row\">domains</th><td>14</td>", html)
    assert re.search(r"<th scope=\"row\">scores \(rows\)</th><td>406</td>", html)
    assert "<code>score_scale</code></th><td><code>'fraction'</code>" in html


def test_title_is_escaped_and_toc_links_to_headings(rendered):
    _, html = rendered
    assert "<h1>Audit &lt;of&gt; models</h1>" in html and "<of>" not in html
    toc = re.search(r'<nav aria-label="Contents" class="toc">(.*?)</nav>', html, flags=re.S).group(1)
    anchors = re.findall(r'href="#([^"]+)"', toc)
    assert len(anchors) >= 5
    ids = set(re.findall(r'<h[23] id="([^"]+)"', html))
    assert set(anchors) <= ids
    assert html.index('class="toc"') < html.index("<main>")


def test_executed_notebook_kept_beside_and_stale_failure_removed(rendered):
    out, _ = rendered
    nb = nbformat.read(out.with_suffix(".ipynb"), as_version=4)
    assert nb.metadata.papermill.parameters["score_scale"] == "fraction"
    assert nb.metadata.papermill.parameters["scores"] == ""
    assert all(cell.metadata.papermill.status == "completed" for cell in nb.cells)
    assert not out.with_suffix(".failed.ipynb").exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # temp folder gone


def test_report_is_small(rendered):
    out, _ = rendered
    assert out.stat().st_size < 2_000_000


def test_show_code_renders_code_cells(rendered):
    out, _ = rendered
    nb = nbformat.read(out.with_suffix(".ipynb"), as_version=4)
    html = report.render(nb, title="t", show_code=True)
    assert "error_dispersion" in html and 'class="input"' in html
    assert "Jaggedness report</h1>" not in html.split("<main>")[1]  # the report-skip cell stays out


def test_theme_and_content_security_policy(rendered):
    out, html = rendered
    assert '<html data-theme="light" lang="en">' in html
    csp = re.search(r'<meta content="([^"]*)" http-equiv="Content-Security-Policy"/>', html).group(1)
    assert "default-src 'none'" in csp and "script-src" not in csp and "img-src data:" in csp
    nb = nbformat.read(out.with_suffix(".ipynb"), as_version=4)
    dark = report.render(nb, title="t", theme="dark")
    assert '<html data-theme="dark" lang="en">' in dark and '<meta content="dark" name="color-scheme"/>' in dark
    auto = report.render(nb, title="t", theme="auto")
    assert '<meta content="light dark" name="color-scheme"/>' in auto
    refused = "parameter 'theme' must be one of 'light', 'dark', 'auto', not 'neon'"
    with pytest.raises(JaggedInputError, match=refused):
        report.render(nb, title="t", theme="neon")


def test_the_themes_are_light_dark_and_auto_on_every_road(tmp_path):
    """--theme offers exactly the themes the page renders; any other is refused before a kernel starts."""
    theme = next(p for p in main.commands["report"].params if p.name == "theme")
    assert tuple(theme.type.choices) == ("light", "dark", "auto")
    nb = nbformat.v4.new_notebook()
    schemes = {"light": "light", "dark": "dark", "auto": "light dark"}
    for name, scheme in schemes.items():
        page = report.render(nb, title="t", theme=name)
        assert f'<html data-theme="{name}" lang="en">' in page
        assert f'<meta content="{scheme}" name="color-scheme"/>' in page
    result = CliRunner().invoke(main, ["report", "-o", str(tmp_path / "r.html"), "--theme", "neon"])
    assert result.exit_code == 2 and "'neon' is not one of 'light', 'dark', 'auto'" in result.output


def test_bad_theme_exits_2_before_any_kernel(tmp_path):
    with pytest.raises(JaggedInputError, match="parameter 'theme' must be one of 'light', 'dark', 'auto', not 'neon'"):
        report.jaggedness_report(None, tmp_path / "r.html", theme="neon")
    assert not list(tmp_path.iterdir())


def test_every_report_option_is_a_notebook_parameter():
    declared = {p.name for p in report.notebook_parameters(report.REPORT_NOTEBOOK)}
    options = {p.name for p in main.commands["report"].params} - OWN_OPTIONS
    assert options <= declared, f"options without a notebook parameter: {sorted(options - declared)}"
    assert "scores" in declared


def test_notebook_parameters_have_type_and_help():
    for p in report.notebook_parameters(report.REPORT_NOTEBOOK):
        assert p.type and p.help, p


# --- failures --------------------------------------------------------------------------


def _failing_notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    params = nbformat.v4.new_code_cell('word: str = "boom"  # what to shout\nscores: str = ""  # unused')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_code_cell('raise ValueError(f"{word} from the notebook\\nsecond line")')]
    nbformat.write(nb, path)
    return path


def test_failing_run_keeps_earlier_report_and_failed_notebook(tmp_path):
    out = tmp_path / "r.html"
    out.write_bytes(b"<html>earlier report</html>")
    out.with_suffix(".ipynb").write_bytes(b"earlier notebook")
    notebook = _failing_notebook(tmp_path / "failing.ipynb")
    with pytest.raises(report.ReportError) as caught:
        report.run_report(notebook, out, {"word": "kaboom"}, title="t")
    message = str(caught.value)
    assert "ValueError: kaboom from the notebook second line" in message
    assert "\n" not in message and "Traceback" not in message
    assert str(out.with_suffix(".failed.ipynb")) in message
    assert caught.value.ename == "ValueError"
    assert out.read_bytes() == b"<html>earlier report</html>"
    assert out.with_suffix(".ipynb").read_bytes() == b"earlier notebook"
    failed = nbformat.read(out.with_suffix(".failed.ipynb"), as_version=4)
    assert any(o.get("ename") == "ValueError" for c in failed.cells for o in c.get("outputs", []))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["failing.ipynb", "r.failed.ipynb", "r.html", "r.ipynb"]


def test_failing_cell_of_the_report_notebook_exits_1(tmp_path, monkeypatch):
    """A parameter that makes a cell of the real notebook raise (max_models=1).

    The CLI and stored parameters refuse max_models=1 before a kernel starts; ``run_report``
    executes what it is given, so the notebook's own failure path is still exercised here.
    """
    out = tmp_path / "r.html"
    out.write_text("earlier")
    with pytest.raises(report.ReportError, match=r"ValueError: limit must be at least 2"):
        report.run_report("jaggedness_report", out, {"max_models": 1, "bootstrap": 0})
    assert out.read_text() == "earlier" and out.with_suffix(".failed.ipynb").exists()


def test_cli_failing_notebook_exits_1_with_one_paragraph(tmp_path, monkeypatch):
    """A monkeypatched report notebook that raises: exit 1, the cell's error, no traceback."""
    import jagged.report.jaggedness as single

    monkeypatch.setattr(single, "REPORT_NOTEBOOK", str(_failing_notebook(tmp_path / "failing.ipynb")))
    out = tmp_path / "r.html"
    out.write_text("earlier")
    result = CliRunner().invoke(main, ["report", "-o", str(out)])
    assert result.exit_code == 1, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("jagged: report failed: failing.ipynb failed in cell [")
    assert "ValueError: boom from the notebook second line" in last
    assert "Traceback" not in result.output
    assert out.read_text() == "earlier" and out.with_suffix(".failed.ipynb").exists()


def test_undeclared_parameter_is_refused_before_running(tmp_path):
    notebook = _failing_notebook(tmp_path / "n.ipynb")
    with pytest.raises(ValueError, match="declares no parameter nope"):
        report.execute(notebook, tmp_path / "out.ipynb", {"nope": 1})
    assert not (tmp_path / "out.ipynb").exists()


@pytest.mark.parametrize("args, fragment", [
    (["missing.csv"], "missing.csv: no such file"),
    (["bad.csv"], "column 'score' has non-numeric value 'abc'"),
    (["good.csv", "-o", "report.txt"], "must end in .html"),
    (["good.csv", "--weights", "nope.yaml"], "nope.yaml"),
])
def test_bad_input_exits_2_before_any_kernel(tmp_path, monkeypatch, args, fragment):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.csv").write_text("model,domain,score\nm,a,0.5\nm,b,abc\n")
    (tmp_path / "good.csv").write_text("model,domain,score\nm,a,0.5\nm,b,0.7\n")

    def no_kernel(*a, **k):  # pragma: no cover - reached only on a bug
        raise AssertionError("a kernel was started for bad input")

    monkeypatch.setattr(report, "execute", no_kernel)
    extra = [] if "-o" in args else ["-o", "out.html"]
    result = CliRunner().invoke(main, ["report", *args, *extra])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jagged: error: ") and fragment in lines[0]
    assert "Traceback" not in result.output
    assert not list(tmp_path.glob("*.html")) and not list(tmp_path.glob("*.ipynb"))


def test_find_notebook_is_relative_to_the_package(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jaggedness_report.ipynb").write_text("{}")  # e.g. an executed copy in reports/
    path = report.find_notebook("jaggedness_report")
    assert path == report.NOTEBOOKS_DIR / "jaggedness_report.ipynb" and path.is_file()
    assert (report.TEMPLATES_DIR / report.TEMPLATE_NAME / "index.html.j2").is_file()
    with pytest.raises(FileNotFoundError):
        report.find_notebook("no_such_notebook")


def test_committed_notebook_has_outputs_only_in_checked_cells():
    nb = json.loads(report.find_notebook(report.REPORT_NOTEBOOK).read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            checked = "# NBVAL_CHECK_OUTPUT" in "".join(cell["source"])
            assert bool(cell["outputs"]) == checked, cell["id"]
    first_code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    assert first_code["metadata"]["tags"] == ["parameters"]


def _text_between(html: str, start: str, end: str) -> str:
    """The page's visible text from the heading ``start`` to the next ``end`` (tags dropped, spaces folded)."""
    import html as html_lib

    body = html.split("<main>", 1)[1]
    i = body.index(start)
    part = body[i:body.index(end, i)]
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", part)))


def test_where_each_domain_measures_names_domains_and_the_models_beyond(rendered):
    """Issue 19: information per domain with the models placed; the loadings plot; both with alt text."""
    _, html = rendered
    body = html.split("<main>", 1)[1]
    start = body.index('id="Where-each-domain-measures"')
    section = body[start:body.index("Is it the model or the benchmark?", start)]
    alts = re.findall(r'<img\b[^>]*alt="([^"]*)"', section)
    assert len(alts) == 2
    assert alts[0].startswith("Line charts, one panel per domain (14), on shared axes: test information")
    assert alts[1].startswith("Scatter plot: one dot per item") and "standardised loading" in alts[1]
    text = _text_between(html, 'id="Where-each-domain-measures"', "Is it the model or the benchmark?")
    # the range table: the law domain, measured best above the middle, and the strongest model beyond its top
    row = re.search(r"law \d+ \+1\.00 0\.\d\d -2\.60 to \+3\.55 ([^\n]*?) Llama-2-7b-hf", text)
    assert row and "gemini-1.5-pro-002" in row.group(1)
    assert "sit above a domain's range" in text and "gemini-1.5-pro-002 (13 domains)" in text
    assert "have a negative loading" in text


def test_the_items_list_is_ranked_by_the_flaw_posterior_with_expected_counts(rendered):
    out, html = rendered
    intro = _text_between(html, "Items to look at", "The items most likely flawed in each domain")
    assert re.search(r"About [\d,]+ of 12,032 items are expected to be flawed \(90% interval [\d,]+ – [\d,]+\)", intro)
    counts = _text_between(html, "How many items are flawed, per domain", "Flagged items per domain")
    assert re.search(r"domain items accuracy miskeyed shown shown interval expected flawed interval \w+", counts)
    assert "model agrees with key peers expected z q finding" in counts
    top = _text_between(html, "The items most likely flawed in each domain", "How many items are flawed, per domain")
    # evidence first: what the models chose, the key, the likely answer and the flags, then P(flawed)
    assert re.search(r"domain item rank strong models chose key likely answer flags top models chose question options "
                     r"P\(flawed\) P lower P upper p_correct discrimination", top)
    nb = nbformat.read(out.with_suffix(".ipynb"), as_version=4)
    cell = next(c for c in nb.cells if c.get("id") == "items-top")
    shown = next(o for o in cell.outputs if "text/html" in o.get("data", {}))["data"]["text/html"]
    row = re.search(r"<tbody>\s*<tr>(.*?)</tr>", shown, re.S).group(1)
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
    header = re.findall(r"<th[^>]*>([^<]*)</th>", shown.split("<tbody>")[0])
    assert cells[header.index("rank")] == "1" and float(cells[header.index("P(flawed)")]) > 0.5  # the top item leads


def test_the_model_report_says_where_the_model_sits(tmp_path):
    out = report.run_report("model_report", tmp_path / "m.html", {"model": "gemini-1.5-pro-002"},
                            title="Model report")
    html = out.read_text(encoding="utf-8")
    text = _text_between(html, "Where it sits on each domain", "Where it departs from the field")
    assert "gemini-1.5-pro-002 sits beyond the range, above it, in 13 domains" in text
    assert re.search(r"law \+\d\.\d\d 0\.\d\d -2\.60 to \+3\.55 above", text)


def test_kernel_warnings_stay_off_the_page_and_reach_the_command_line(tmp_path):
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    params = nbformat.v4.new_code_cell('scores: str = ""  # unused')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(
        "import sys, warnings\nfrom jagged.errors import JaggedWarning\n"
        "warnings.warn('layout gave up', UserWarning)\nwarnings.warn('already said by the loader', JaggedWarning)\n"
        "warnings.warn('layout gave up', UserWarning)\nprint('a line on stderr', file=sys.stderr)\nprint('kept')")]
    notebook = tmp_path / "warns.ipynb"
    nbformat.write(nb, notebook)
    out = tmp_path / "r.html"
    with pytest.warns(Warning) as caught:
        report.run_report(notebook, out, {}, title="t")
    said = [str(w.message) for w in caught if "warns:" in str(w.message)]
    assert said == ["warns: UserWarning: layout gave up (kept in r.ipynb)", "warns: a line on stderr (kept in r.ipynb)"]
    page = out.read_text(encoding="utf-8")
    assert 'class="stderr"' not in page and "layout gave up" not in page and "warnings.warn" not in page
    assert "kept" in page
    kept = nbformat.read(out.with_suffix(".ipynb"), as_version=4)
    streams = "".join(o.get("text", "") for c in kept.cells for o in c.get("outputs", []) if o.get("name") == "stderr")
    assert "UserWarning: layout gave up" in streams and "JaggedWarning: already said" in streams
