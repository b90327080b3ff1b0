"""Reading score tables: formats that work, and every kind of bad input (exit 2, one line)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from clitools import assert_bad_input, run_cli
from conftest import BUNDLED

import jagged


def assert_bad_metrics(path: Path, *fragments: str, extra: tuple[str, ...] = ()) -> str:
    """``jagged metrics PATH`` fails as bad input with a line holding every fragment."""
    return assert_bad_input("metrics", path, *extra, fragments=fragments)


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


# --- formats that work -------------------------------------------------------------

def test_long_csv_round_trip(tmp_path):
    path = write(tmp_path, "s.csv", "model,domain,score,extra\nA,x,0.9,foo\nA,y,0.8,\nA,z,0.5,bar\n")
    code, out, err = run_cli("metrics", str(path))
    assert code == 0, err
    table = pd.read_csv(__import__("io").StringIO(out))
    assert table.loc[0, "cv_error"] == pytest.approx(0.637377, abs=5e-7)


def test_wide_csv_equals_long(tmp_path):
    wide = write(tmp_path, "wide.csv", "model,law,math,bio\nA,0.9,0.8,0.5\nB,0.4,,0.6\n")
    long = write(tmp_path, "long.csv", "model,domain,score\nA,law,0.9\nA,math,0.8\nA,bio,0.5\nB,law,0.4\nB,bio,0.6\n")
    from_wide = jagged.jaggedness(jagged.load_scores(wide))
    from_long = jagged.jaggedness(jagged.load_scores(long))
    pd.testing.assert_frame_equal(from_wide, from_long)
    assert from_wide.set_index("model").loc["B", "complete"] == False  # noqa: E712
    assert jagged.load(wide).format == "wide"


def test_a_data_frame_loads_as_its_csv_file_does(tmp_path):
    """jagged.load takes a table in memory: the same Dataset as its CSV, the selection and --n-items applied,
    bad values refused in one line naming the DataFrame, options of other formats warned about."""
    frame = pd.DataFrame({"model": ["A", "B"], "law": [0.9, 0.4], "math": [0.5, 0.7]})
    frame.to_csv(tmp_path / "s.csv", index=False)
    from_file, in_memory = jagged.load(tmp_path / "s.csv"), jagged.load(frame)
    pd.testing.assert_frame_equal(in_memory.scores, from_file.scores)
    assert in_memory.format == "wide" and in_memory.source == "DataFrame"
    chosen = jagged.load(frame, models=["B"], n_items="40")
    assert chosen.scores["model"].tolist() == ["B", "B"] and (chosen.scores["n_items"] == 40).all()
    assert chosen.selection == {"models": ["B"], "n_items": "40"}
    items = pd.DataFrame({"model": ["A"] * 4, "domain": ["x", "x", "y", "y"], "item": list("abcd"),
                          "correct": [1, 0, 1, 1]})
    assert jagged.load(items).scores.set_index("domain")["score"].to_dict() == {"x": 0.5, "y": 1.0}
    with pytest.raises(jagged.JaggedInputError, match=r"^DataFrame.*1\.5"):
        jagged.load(frame.assign(law=[1.5, 0.4]))
    with pytest.warns(jagged.JaggedWarning, match="--task does not apply"):
        jagged.load(frame, task="mmlu")


def test_parquet_long_and_wide(tmp_path):
    frame = pd.DataFrame({"model": ["A"] * 3, "domain": ["x", "y", "z"], "score": [0.9, 0.8, 0.5],
                          "n_items": [10, 20, 30]})
    frame.to_parquet(tmp_path / "long.parquet")
    frame.pivot(index="model", columns="domain", values="score").reset_index().to_parquet(tmp_path / "w.parquet")
    a = jagged.jaggedness(jagged.load_scores(tmp_path / "long.parquet"))
    b = jagged.jaggedness(jagged.load_scores(tmp_path / "w.parquet"))
    pd.testing.assert_frame_equal(a, b)
    assert jagged.load_scores(tmp_path / "long.parquet")["n_items"].tolist() == [10, 20, 30]


def test_percent_scale(tmp_path):
    path = write(tmp_path, "pct.csv", "model,domain,score\nA,x,90\nA,y,80\nA,z,50\n")
    code, out, err = run_cli("metrics", str(path), "--score-scale", "percent")
    assert code == 0, err
    assert "0.63737" in out


def test_percent_looking_scores_suggest_the_option(tmp_path):
    path = write(tmp_path, "pct.csv", "model,domain,score\nA,x,90\nA,y,80\nA,z,50\n")
    assert_bad_metrics(path, "pct.csv", "'score'", "90", "--score-scale percent")


@pytest.mark.parametrize("layout", ["long", "wide"])
def test_fractions_declared_as_percent_are_refused_naming_the_fix(tmp_path, layout):
    """Issue 29: --score-scale percent on fractions gave scores near 0.007, exit 0, no word."""
    text = ("model,domain,score\nA,x,0.9\nA,y,0.8\nB,x,0.5\nB,y,1.0\n" if layout == "long"
            else "model,x,y\nA,0.9,0.8\nB,0.5,1\n")
    path = write(tmp_path, f"{layout}.csv", text)
    line = assert_bad_metrics(path, f"{layout}.csv", "every score is at most 1", "largest is 1",
                              "drop --score-scale percent", extra=("--score-scale", "percent"))
    assert "\n" not in line.strip()


def test_a_wide_column_of_small_percentages_is_fine_when_the_table_is_percent(tmp_path):
    path = write(tmp_path, "w.csv", "model,hard,easy\nA,0.5,80\nB,1,60\n")   # one hard domain under 1 %
    scores = jagged.load_scores(path, score_scale="percent").set_index(["model", "domain"])["score"]
    assert scores[("A", "hard")] == pytest.approx(0.005) and scores[("B", "easy")] == pytest.approx(0.6)


def test_identical_duplicates_collapse(tmp_path):
    path = write(tmp_path, "d.csv", "model,domain,score\nA,x,0.5\nA,x,0.5\nA,y,0.7\n")
    assert len(jagged.load_scores(path)) == 2


def test_names_that_look_like_missing_values_are_kept(tmp_path):
    path = write(tmp_path, "na.csv", "model,domain,score\nNA,None,0.5\nNA,null,0.7\n")
    scores = jagged.load_scores(path)
    assert set(scores["model"]) == {"NA"} and set(scores["domain"]) == {"None", "null"}


def test_output_json_and_csv_files(tmp_path):
    out_json = tmp_path / "m.json"
    code, _, err = run_cli("metrics", str(BUNDLED), "-o", str(out_json))
    assert code == 0, err
    records = json.loads(out_json.read_text())
    assert len(records) == 29 and {"model", "cv_error", "note"} <= set(records[0])
    out_csv = tmp_path / "m.csv"
    assert run_cli("metrics", str(BUNDLED), "-o", str(out_csv))[0] == 0
    assert len(pd.read_csv(out_csv)) == 29


def test_validate_prints_summary():
    code, out, err = run_cli("validate", str(BUNDLED))
    assert code == 0, err
    assert "29 models" in out and "14 domains" in out and "every model has every domain" in out
    assert "0.0836" in out and "0.8645" in out


def test_bundled_default_has_29_models_and_14_domains():
    facts = jagged.summarize(jagged.load_scores())
    assert (facts["models"], facts["domains"], facts["rows"]) == (29, 14, 406)
    assert facts["has_n_items"]


# --- bad input: exit 2, one line naming file and column/value ------------------------

def test_empty_file(tmp_path):
    assert_bad_metrics(write(tmp_path, "empty.csv", ""), "empty.csv", "empty")


def test_header_without_rows(tmp_path):
    assert_bad_metrics(write(tmp_path, "h.csv", "model,domain,score\n"), "h.csv", "no rows")


def test_missing_column(tmp_path):
    assert_bad_metrics(write(tmp_path, "m.csv", "model,domain,value\nA,x,0.5\n"), "m.csv", "score")


def test_missing_model_column(tmp_path):
    assert_bad_metrics(write(tmp_path, "m.csv", "name,domain,score\nA,x,0.5\n"), "m.csv", "model")


@pytest.mark.parametrize("value, fragment", [
    ("abc", "non-numeric value 'abc'"),
    ("nan", "NaN"),
    ("inf", "infinite"),
    ("-0.2", "outside [0, 1]"),
    ("150", "outside [0, 1]"),
])
def test_bad_score_values(tmp_path, value, fragment):
    path = write(tmp_path, "v.csv", f"model,domain,score\nA,x,0.5\nA,y,{value}\n")
    line = assert_bad_metrics(path, "v.csv", "'score'", fragment, "line 3")
    if value == "150":
        assert "percent" not in line


def test_missing_score_cell(tmp_path):
    assert_bad_metrics(write(tmp_path, "c.csv", "model,domain,score\nA,x,0.5\nA,y,\n"), "c.csv", "'score'", "line 3")


def test_conflicting_duplicate(tmp_path):
    path = write(tmp_path, "dup.csv", "model,domain,score\nA,x,0.5\nA,y,0.6\nA,x,0.7\n")
    assert_bad_metrics(path, "dup.csv", "'A'", "'x'", "0.5", "0.7", "line 2", "line 4")


def test_empty_model_name(tmp_path):
    assert_bad_metrics(write(tmp_path, "e.csv", "model,domain,score\nA,x,0.5\n  ,y,0.6\n"), "e.csv", "'model'",
                       "line 3")


def test_empty_domain_name(tmp_path):
    assert_bad_metrics(write(tmp_path, "e.csv", "model,domain,score\nA,,0.5\n"), "e.csv", "'domain'", "line 2")


def test_non_numeric_wide_cell(tmp_path):
    assert_bad_metrics(write(tmp_path, "w.csv", "model,law,math\nA,0.5,high\n"), "w.csv", "'high'")


def test_unreadable_bytes(tmp_path):
    path = write(tmp_path, "latin.csv", "model,domain,score\nCaf\xe9,x,0.5\n".encode("latin-1"))
    assert_bad_metrics(path, "latin.csv", "not UTF-8", "0xe9")


def test_rows_longer_than_the_header(tmp_path):
    """pandas would take the first column as an index (duplicate labels); found by bench_fuzz."""
    path = write(tmp_path, "long.csv", "model;category;Score\r\n\r\n../x;139286;6e-05;-6e+16\r\n3;0.95\r\n")
    assert_bad_metrics(path, "long.csv", "line 3 has more fields than the header's 3 column(s)")
    wide = write(tmp_path, "wide.csv", "model,a\nx,0.5,0.2\ny,0.4,0.1\n")
    assert_bad_metrics(wide, "wide.csv", "line 2 has more fields")


def test_unknown_file_type(tmp_path):
    path = write(tmp_path, "image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    assert_bad_metrics(path, "image.png", "unknown file type")


def test_corrupt_parquet(tmp_path):
    assert_bad_metrics(write(tmp_path, "bad.parquet", b"PAR1garbage"), "bad.parquet", "Parquet")


def test_path_that_does_not_exist(tmp_path):
    assert_bad_metrics(tmp_path / "nope.csv", "nope.csv", "no such file")


def test_directory(tmp_path):
    assert_bad_metrics(tmp_path, str(tmp_path), "directory")


def test_ragged_csv(tmp_path):
    assert_bad_metrics(write(tmp_path, "r.csv", "model,domain,score\nA,x,0.5,1,2\nA,y\n"), "r.csv")


def test_bad_output_suffix(tmp_path):
    code, _, err = run_cli("metrics", str(BUNDLED), "-o", str(tmp_path / "out.xlsx"))
    assert code == 2 and "must end in .csv or .json" in err


def test_real_process_exit_status_and_no_traceback(tmp_path):
    """End to end through the installed console script, not the test runner."""
    bad = write(tmp_path, "bad.csv", "model,domain,score\nA,x,oops\n")
    proc = subprocess.run([sys.executable, "-m", "jagged.cli", "metrics", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "jagged: error: bad.csv: column 'score' has non-numeric value 'oops' (line 2)"


def test_help_explains_every_command():
    code, out, _ = run_cli("--help")
    assert code == 0
    for command in ("metrics", "validate"):
        assert command in out
        sub_code, sub_out, _ = run_cli(command, "--help")
        assert sub_code == 0 and "--score-scale" in sub_out and "SCORES" in sub_out


def test_gzip_compressed_csv(tmp_path):
    import gzip

    path = tmp_path / "scores.csv.gz"
    path.write_bytes(gzip.compress(BUNDLED.read_bytes()))
    pd.testing.assert_frame_equal(jagged.load_scores(path), jagged.load_scores(BUNDLED))
    damaged = write(tmp_path, "bad.csv.gz", b"\x1f\x8b" + bytes(20))
    assert_bad_metrics(damaged, "bad.csv.gz", "damaged gzip data")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_a_utf16_csv_is_read(tmp_path, encoding):
    text = "model,domain,score\nmodèle-a,algèbre,0.5\nmodèle-a,law,0.75\nb,algèbre,0.25\nb,law,1\n"
    path = tmp_path / "scores.csv"
    bom = b"\xfe\xff" if encoding == "utf-16-be" else b""
    path.write_bytes(bom + text.encode(encoding))
    dataset = jagged.load(path)
    expected = pd.read_csv(__import__("io").StringIO(text))
    assert sorted(zip(dataset.scores["model"].astype(str), dataset.scores["domain"].astype(str),
                      dataset.scores["score"])) == sorted(expected.itertuples(index=False, name=None))
    broken = tmp_path / "broken.csv"
    broken.write_bytes(b"\xff\xfe" + "model,domain,score\n".encode("utf-16-le") + b"\x00\xd8")  # lone surrogate
    assert_bad_input("validate", broken, fragments=("broken.csv", "not UTF-16 text"))


def test_validate_says_one_model_not_one_models(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("model,domain,score\na,x,0.5\n")
    code, out, err = run_cli("validate", path)
    assert code == 0 and "1 score for 1 model in 1 domain;" in out, err


def test_a_late_resource_warning_does_not_add_a_line_to_an_error(tmp_path, monkeypatch):
    """A library's unclosed event loop collected during a failing command (seen under load with Spark) stays
    out of the user's one-line error; a JaggedWarning still reaches them."""
    import warnings

    from clitools import assert_bad_input, run_cli

    import jagged.readers.load as load_module
    from jagged.errors import JaggedInputError, JaggedWarning

    def failing(*args, **kwargs):
        warnings.warn("unclosed event loop <_UnixSelectorEventLoop>", ResourceWarning, stacklevel=2)
        raise JaggedInputError("scores.csv: column 'score' is missing")

    monkeypatch.setattr(load_module, "load", failing)
    scores = tmp_path / "scores.csv"
    scores.write_text("model,domain\na,b\n", encoding="utf-8")
    assert_bad_input("validate", scores, fragments=("column 'score' is missing",))

    def warning_then_failing(*args, **kwargs):
        warnings.warn("a model has one domain", JaggedWarning, stacklevel=2)
        raise JaggedInputError("scores.csv: column 'score' is missing")

    monkeypatch.setattr(load_module, "load", warning_then_failing)
    code, _, err = run_cli("validate", scores)
    assert code == 2 and err.splitlines()[0] == "jagged: warning: a model has one domain"
