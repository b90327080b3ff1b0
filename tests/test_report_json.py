"""REPORT.json: the key numbers written beside every report (``r.html`` -> ``r.json``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from jagged import report
from jagged.errors import JaggedInputError
from jagged.report.record import glance_from_html, is_report_json, report_json, report_record
from jagged.report.run import check_destination
from jagged.views.display import RECORD_MIME, json_records


def record_bundle(name: str, frame: pd.DataFrame) -> dict:
    """A display bundle carrying one table for REPORT.json, as jagged.views.glance.show_record writes it."""
    return {RECORD_MIME: {name: json_records(frame)}}


def _notebook(metrics: pd.DataFrame | None, glance_html: str) -> nbformat.NotebookNode:
    glance = new_code_cell("glance")
    glance.outputs = [new_output("display_data", data={"text/html": glance_html, "text/plain": "-"})]
    table = new_code_cell("metrics")
    data = {"text/html": "<table></table>", "text/plain": "-"}
    if metrics is not None:
        data.update(record_bundle("metrics", metrics))
    table.outputs = [new_output("display_data", data=data)]
    return new_notebook(cells=[glance, table])


GLANCE = ('<ul class="glance">\n<li data-section="jaggedness"><strong>Most jagged.</strong> '
          'a&lt;b&gt; &amp; co: cv_error 0.371.</li>\n<li data-section="noise"><strong>Sampling noise.</strong> '
          "Not tested.</li>\n</ul>")


def test_the_record_holds_version_input_parameters_glance_and_metrics_as_strict_json():
    metrics = pd.DataFrame({"model": ["a<b> & co", "m2"], "cv_error": [0.371, math.nan],
                            "noise_flag": pd.array([True, pd.NA], dtype="boolean"), "n_domains": np.array([3, 4])})
    nb = _notebook(metrics, GLANCE)
    facts = [("input", "s.csv", ""), ("input SHA-256", "ab" * 32, "hash"), ("models", "2", "")]
    text = report_json(nb, notebook="jaggedness_report", title="T", parameters={"bootstrap": 0, "ci": 0.95},
                       facts=facts, sections=["glance", "metrics"])
    assert text.startswith('{\n "format": "jagged-report/1"') and text.endswith("}\n")
    record = json.loads(text)  # strict: json.loads accepts NaN, so check there is none
    assert "NaN" not in text and "Infinity" not in text
    import jagged

    assert record["jagged_version"] == jagged.__version__ and record["notebook"] == "jaggedness_report"
    assert record["input"] == "s.csv" and record["provenance"]["input SHA-256"] == "ab" * 32
    assert record["parameters"] == {"bootstrap": 0, "ci": 0.95} and record["sections"] == ["glance", "metrics"]
    assert record["metrics"] == [{"model": "a<b> & co", "cv_error": 0.371, "noise_flag": True, "n_domains": 3},
                                 {"model": "m2", "cv_error": None, "noise_flag": None, "n_domains": 4}]
    # without a glance record the findings are read back from the glance's HTML, unescaped
    assert record["glance"] == [
        {"section": "jaggedness", "label": "Most jagged", "sentence": "a<b> & co: cv_error 0.371."},
        {"section": "noise", "label": "Sampling noise", "sentence": "Not tested."}]


def test_a_glance_record_with_numbers_wins_over_the_html():
    nb = _notebook(None, GLANCE)
    findings = pd.DataFrame({"section": ["jaggedness"], "label": ["Most jagged"], "sentence": ["x"],
                             "statistic": ["cv_error"], "value": [0.25], "lo": [math.nan]})
    nb.cells[0].outputs[0]["data"].update(record_bundle("glance", findings))
    record = report_record(nb, notebook="jaggedness_report", title="T", parameters={})
    assert record["glance"] == [{"section": "jaggedness", "label": "Most jagged", "sentence": "x",
                                 "statistic": "cv_error", "value": 0.25, "lo": None}]
    assert record["metrics"] == [] and record["sections"] is None
    assert glance_from_html(new_notebook(cells=[new_code_cell("x")])) == []


def test_the_destination_check_never_overwrites_a_json_file_jagged_did_not_write(tmp_path):
    out = tmp_path / "results.html"
    data = tmp_path / "results.json"  # e.g. the lm-eval results being reported on
    data.write_text('{"results": {}}')
    with pytest.raises(JaggedInputError, match="results.json exists and is no jagged REPORT.json"):
        check_destination(out)
    data.write_text(report_json(new_notebook(), notebook="jaggedness_report", title="T", parameters={}))
    assert is_report_json(data) and check_destination(out) == out


def _failing_notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    params = nbformat.v4.new_code_cell('scores: str = ""  # unused')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell('raise ValueError("boom")')]
    nbformat.write(nb, path)
    return path


def test_a_report_writes_its_key_numbers_beside_it_and_a_failed_run_leaves_them(tmp_path):
    from jagged.analysis import analyse
    from jagged.views import glance

    out = tmp_path / "r.html"
    report.jaggedness_report(None, out, bootstrap=20, seed=3, sections="glance,metrics")
    record = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert record["sections"] == ["glance", "metrics"] and record["parameters"]["bootstrap"] == 20
    assert record["provenance"]["models"] == "29" and record["input"].startswith("mmlu_pro_per_category.csv")
    # the numbers are the analysis's, computed here independently of the kernel
    analysis = analyse(None, bootstrap=20, seed=3)
    expected = analysis.table
    got = pd.DataFrame(record["metrics"])
    assert len(got) == len(expected) == 29 * 4  # 29 models x 4 illustrative profiles
    merged = got.merge(expected, on=["model", "profile"], suffixes=("", "_here"))
    for column in ("cv_error", "cv_error_lo", "cv_error_hi", "wedge", "relative_jaggedness_corrected"):
        assert np.allclose(merged[column].astype(float), merged[f"{column}_here"], equal_nan=True), column
    labels = [f.label for f in glance.glance(analysis)]
    assert [g["label"] for g in record["glance"]] == labels
    assert all(g["sentence"] for g in record["glance"])
    page = out.read_text(encoding="utf-8")
    assert "Jaggedness per model" in page and 'class="provenance"' not in page and RECORD_MIME not in page
    assert "What the data is" not in page

    before = out.with_suffix(".json").read_bytes()
    with pytest.raises(report.ReportError):
        report.run_report(_failing_notebook(tmp_path / "failing.ipynb"), out, {}, title="t")
    assert out.with_suffix(".json").read_bytes() == before


def test_unknown_sections_are_refused_before_anything_runs(tmp_path):
    with pytest.raises(JaggedInputError, match=r"^--sections: unknown section 'tables' \(known: glance, "):
        report.jaggedness_report(None, tmp_path / "r.html", sections="glance,tables")
    assert not list(tmp_path.iterdir())
