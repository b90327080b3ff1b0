"""Item-level input: aggregation, coverage, the out-of-core Parquet path, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import jagged
from jagged.cli import main
from jagged.readers import items as items_module


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def bad_input_line(path: Path) -> str:
    result = CliRunner().invoke(main, ["metrics", str(path), "--bootstrap", "0"])
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jagged: error: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


SMALL = """model,domain,item,correct
A,math,q1,1
A,math,q2,0
A,math,q3,1
A,law,q4,0
A,law,q5,0.5
B,math,q1,1
B,math,q3,1
B,law,q4,1
B,law,q5,1
"""


# --- aggregation ---------------------------------------------------------------------

def test_small_table_aggregates_by_hand(tmp_path):
    ds = jagged.load(write(tmp_path, "items.csv", SMALL))
    assert ds.format == "items"
    s = ds.scores.set_index(["model", "domain"])
    # A math: (1 + 0 + 1) / 3; A law: (0 + 0.5) / 2; B lacks q2, so math is 2/2 over its own items
    assert s.loc[("A", "math"), "score"] == 2 / 3
    assert s.loc[("A", "law"), "score"] == 0.25
    assert s.loc[("B", "math"), "score"] == 1.0
    assert s.loc[("A", "math"), "n_items"] == 3
    assert s.loc[("B", "math"), "n_items"] == 2
    assert len(ds.items) == 9 and ds.items["item"].tolist()[:2] == ["q1", "q2"]


def test_coverage_reported_per_model_not_imputed(tmp_path):
    ds = jagged.load(write(tmp_path, "items.csv", SMALL))
    cov = items_module.coverage(ds.items).set_index("model")
    assert cov.loc["A", "n_items"] == 5 and cov.loc["A", "missing_items"] == 0
    assert cov.loc["B", "n_items"] == 4 and cov.loc["B", "n_items_total"] == 5
    assert cov.loc["B", "coverage"] == 0.8
    assert cov.loc["B", "domains_short"] == "math"
    assert set(ds.model_notes) == {"B"}
    assert "covers 4 of 5 items (80.0%)" in ds.model_notes["B"] and "not imputed" in ds.model_notes["B"]
    assert "1 of 2 models have all 5 items" in ds.details["coverage"]
    from jagged.analysis import metrics_table

    table = metrics_table(ds)
    assert "covers 4 of 5 items" in table.set_index("model").loc["B", "note"]


def test_model_lacking_a_whole_domain(tmp_path):
    text = SMALL + "C,math,q1,1\nC,math,q2,1\nC,math,q3,0\n"
    ds = jagged.load(write(tmp_path, "items.csv", text))
    cov = items_module.coverage(ds.items).set_index("model")
    assert cov.loc["C", "domains_short"] == "law" and cov.loc["C", "n_items"] == 3
    assert sorted(ds.scores.loc[ds.scores["model"] == "C", "domain"]) == ["math"]


def test_item_id_alias_and_extra_columns(tmp_path):
    text = "model,item_id,domain,correct,pred_missing\nA,1,x,1,0\nA,2,y,0,1\nB,1,x,0,0\nB,2,y,1,0\n"
    ds = jagged.load(write(tmp_path, "items.csv", text))
    assert ds.format == "items"
    assert ds.items["item"].tolist() == ["1", "2", "1", "2"]
    assert ds.scores["score"].tolist() == [1.0, 0.0, 0.0, 1.0]


def test_category_is_carried_per_domain(tmp_path):
    text = "model,domain,category,item,correct\nA,x,stem,1,1\nA,y,hum,2,0\nB,x,stem,1,0\nB,y,hum,2,1\n"
    ds = jagged.load(write(tmp_path, "items.csv", text))
    assert dict(zip(ds.scores["domain"], ds.scores["category"])) == {"x": "stem", "y": "hum"}


def test_booleans_and_parquet(tmp_path):
    frame = pd.DataFrame({"model": ["A", "A", "A", "B", "B", "B"], "domain": ["x", "x", "y"] * 2,
                          "item": [1, 2, 3] * 2, "correct": [True, False, True, True, True, False]})
    frame.to_parquet(tmp_path / "items.parquet")
    ds = jagged.load(tmp_path / "items.parquet")
    assert ds.format == "items"
    assert ds.scores["score"].tolist() == [0.5, 1.0, 1.0, 0.0]


def test_reproduces_mmlu_pro_per_category_exactly(shared_data):
    ds = jagged.load(shared_data / "mmlu_pro_item_level.csv")
    ref = pd.read_csv(shared_data / "mmlu_pro_per_category.csv")
    merged = ds.scores.merge(ref, on=["model", "domain"], how="outer", suffixes=("", "_ref"), indicator=True)
    assert (merged["_merge"] == "both").all() and len(merged) == 29 * 14
    assert (merged["score"] == merged["score_ref"]).all()       # exact, not approximately
    assert (merged["n_items"] == merged["n_items_ref"]).all()
    cov = items_module.coverage(ds.items).set_index("model")
    assert cov.loc["DeepSeek-Coder-V2", "n_items"] == 10_351
    assert cov.loc["gemini-1.5-flash-002", "n_items"] == 12_012
    assert cov.loc["gemini-1.5-pro-002", "n_items"] == 12_020
    assert (cov["missing_items"] > 0).sum() == 3 and (cov["n_items_total"] == 12_032).all()


# --- the out-of-core path ------------------------------------------------------------

def test_large_parquet_goes_out_of_core_with_the_same_result(tmp_path, monkeypatch):
    frame = pd.read_csv(write(tmp_path, "items.csv", SMALL))
    frame.to_parquet(tmp_path / "items.parquet")
    in_memory = jagged.load(tmp_path / "items.parquet")
    monkeypatch.setattr(items_module, "IN_MEMORY_MAX_ROWS", 3)
    out_of_core = jagged.load(tmp_path / "items.parquet")
    assert in_memory.items is not None and out_of_core.items is None
    assert "out of core (DuckDB)" in out_of_core.details["items"]
    pd.testing.assert_frame_equal(in_memory.scores, out_of_core.scores)
    assert in_memory.model_notes == out_of_core.model_notes
    assert in_memory.details["coverage"] == out_of_core.details["coverage"]


@pytest.mark.parametrize("column, value, fragment", [
    ("correct", 1.5, "column 'correct' has value '1.5' outside [0, 1] (row 3)"),
    ("correct", -0.5, "column 'correct' has value '-0.5' outside [0, 1] (row 3)"),
    ("correct", None, "column 'correct' has a missing value (row 3)"),
    ("correct", "yes", "column 'correct' has non-numeric value 'yes' (row 3)"),
    ("domain", "law", "item 'q3' is listed under two domains"),
    ("item", "q1", "model 'A' has item 'q1' twice (row 1 and row 3)"),
    ("model", "", "column 'model' has an empty model name (row 3)"),
])
def test_out_of_core_errors(tmp_path, monkeypatch, column, value, fragment):
    frame = pd.read_csv(write(tmp_path, "items.csv", SMALL))
    if isinstance(value, str):
        frame[column] = frame[column].astype(str)
    frame.loc[2, column] = value
    frame.to_parquet(tmp_path / "bad.parquet")
    monkeypatch.setattr(items_module, "IN_MEMORY_MAX_ROWS", 3)
    with pytest.raises(jagged.JaggedInputError) as info:
        jagged.load(tmp_path / "bad.parquet")
    assert str(info.value).startswith("bad.parquet: ")
    assert fragment in str(info.value), str(info.value)


def test_routing_counts_rows_without_keeping_them(tmp_path, monkeypatch):
    """More rows than IN_MEMORY_MAX_ROWS (counted while decoding) go out of core; the in-memory reader is not called."""
    pd.read_csv(write(tmp_path, "items.csv", SMALL)).to_parquet(tmp_path / "items.parquet")
    assert items_module.is_item_table(items_module.parquet_names(tmp_path / "items.parquet"))
    monkeypatch.setattr(items_module, "IN_MEMORY_MAX_ROWS", 3)
    import jagged.readers.tables as loaders

    def fail(*args, **kwargs):
        raise AssertionError("the whole file was read into memory")

    monkeypatch.setattr(loaders, "read_parquet", fail)
    assert jagged.load(tmp_path / "items.parquet").format == "items"


# --- bad input: one line, exit 2 -------------------------------------------------------

@pytest.mark.parametrize("text, fragments", [
    (SMALL + "A,math,q1,0\n", ["items.csv: model 'A' has item 'q1' twice (line 2 and line 11)"]),
    (SMALL + "C,law,q1,1\n", ["item 'q1' is listed under two domains, 'math' (line 2) and 'law' (line 11)"]),
    (SMALL.replace("A,law,q5,0.5", "A,law,q5,1.2"), ["column 'correct' has value 1.2 outside [0, 1] (line 6)"]),
    (SMALL.replace("A,law,q5,0.5", "A,law,q5,-1"), ["column 'correct' has value -1", "(line 6)"]),
    (SMALL.replace("A,law,q5,0.5", "A,law,q5,right"),
     ["column 'correct' has non-numeric value 'right' (line 6)"]),
    (SMALL.replace("A,law,q5,0.5", "A,law,q5,"), ["column 'correct' has a missing value (line 6)"]),
    (SMALL.replace("A,law,q5,0.5", "A,law,,1"), ["column 'item' has an empty item name (line 6)"]),
    ("model,item,correct\nA,q1,1\n", ["missing column(s) domain", "model, domain, item, correct"]),
    ("domain,item,correct\nx,q1,1\n", ["missing column(s) model"]),
    ("model,domain,item,correct\n", ["header but no rows"]),
    ("model,domain,category,item,correct\nA,x,c1,1,1\nA,x,c2,2,1\n",
     ["domain 'x' has two categories, 'c1' and 'c2' (line 3)"]),
    ("model,domain,item,item_id,correct\nA,x,1,1,1\n", ["both 'item' and its alias 'item_id'"]),
])
def test_bad_item_tables(tmp_path, text, fragments):
    line = bad_input_line(write(tmp_path, "items.csv", text))
    for fragment in fragments:
        assert fragment in line, line


def test_validate_items_returns_canonical_columns():
    frame = pd.DataFrame({"model": [" A ", "A"], "domain": ["x", "y"], "item": [1.0, 2.0], "correct": [1, 0]})
    out = items_module.validate_items(frame, "t", line_offset=None)
    assert list(out.columns) == ["model", "domain", "item", "correct", "category"]
    assert out["model"].tolist() == ["A", "A"] and out["item"].tolist() == ["1", "2"]
    assert out["correct"].dtype == np.float64


# --- choice, key, n_options --------------------------------------------------------------

ANSWERS = """model,domain,item,correct,choice,key,n_options
A,math,q1,1,B,B,4
A,math,q2,0,,C,4
A,law,q3,0,D,A,4
B,math,q1,1,B,B,4
B,math,q2,1,C,C,4
B,law,q3,1,C,C,4
"""


def test_choice_key_columns_are_kept_and_keys_may_differ_between_models(tmp_path):
    ds = jagged.load(write(tmp_path, "answers.csv", ANSWERS))
    items = ds.items.set_index(["model", "item"])
    assert list(ds.items.columns) == ["model", "domain", "item", "correct", "category", "choice", "key", "n_options"]
    assert items.loc[("A", "q2"), "choice"] is None  # no answer extracted: counted wrong
    assert items.loc[("A", "q3"), "key"] == "A" and items.loc[("B", "q3"), "key"] == "C"  # a finding, not an error
    assert ds.details["choices"].startswith("choices present (3 labels: B, C, D; 1 rows without an answer)")
    assert "1 items keyed differently across models" in ds.details["choices"]


def test_numeric_labels_and_choice_without_key():
    frame = pd.DataFrame({"model": ["A", "A", "B"], "domain": "x", "item": ["1", "2", "1"],
                          "correct": [1, 0, 0], "choice": [2.0, np.nan, 0.0]})
    out = items_module.validate_items(frame, "t", line_offset=None)
    assert out["choice"].tolist() == ["2", None, "0"] and "key" not in out.columns


@pytest.mark.parametrize("edit, fragments", [
    (("A,math,q1,1,B,B,4", "A,math,q1,1,B,C,4"),
     ["model 'A', item 'q1': correct is 1 but choice 'B' is not the key 'C' (line 2)"]),
    (("A,math,q2,0,,C,4", "A,math,q2,1,,C,4"), ["model 'A', item 'q2': correct is 1 but there is no choice", "line 3"]),
    (("B,law,q3,1,C,C,4", "B,law,q3,0,C,C,4"), ["model 'B', item 'q3': correct is 0 but choice 'C' is the key"]),
    (("A,math,q1,1,B,B,4", "A,math,q1,0.5,B,B,4"), ["correct is 0.5 but a row with a key is scored 0 or 1"]),
    (("A,math,q1,1,B,B,4", 'A,math,q1,1,"B,C",B,4'), ["column 'choice' has malformed value 'B,C' (line 2)"]),
    (("A,math,q1,1,B,B,4", "A,math,q1,1,B,B,2.5"), ["column 'n_options' has value 2.5 (line 2)"]),
    (("A,law,q3,0,D,A,4", "A,law,q3,0,D,F,4"), ["key 'F' names an option beyond n_options 4 (line 4)"]),
])
def test_bad_choice_key_rows(tmp_path, monkeypatch, edit, fragments):
    text = ANSWERS.replace(*edit)
    line = bad_input_line(write(tmp_path, "items.csv", text))
    for fragment in fragments:
        assert fragment in line, line
    # the out-of-core path gives the same message, with the Parquet row
    frame = pd.read_csv(write(tmp_path, "items.csv", text), keep_default_na=False, na_values=[""])
    frame.to_parquet(tmp_path / "items.parquet")
    monkeypatch.setattr(items_module, "IN_MEMORY_MAX_ROWS", 3)
    with pytest.raises(jagged.JaggedInputError) as info:
        jagged.load(tmp_path / "items.parquet")
    expected = fragments[0].replace("(line 2)", "(row 1)").replace("(line 4)", "(row 3)")
    assert expected.split(" (line")[0] in str(info.value), str(info.value)


def test_choice_beyond_n_options_is_a_note_not_an_error(tmp_path):
    ds = jagged.load(write(tmp_path, "items.csv", ANSWERS.replace("A,law,q3,0,D,A,4", "A,law,q3,0,G,A,4")))
    assert "1 choices name an option beyond n_options" in ds.details["choices"]


def test_out_of_core_choices_summary_matches_in_memory(tmp_path, monkeypatch):
    frame = pd.read_csv(write(tmp_path, "items.csv", ANSWERS), keep_default_na=False, na_values=[""])
    frame.to_parquet(tmp_path / "items.parquet")
    in_memory = jagged.load(tmp_path / "items.parquet")
    monkeypatch.setattr(items_module, "IN_MEMORY_MAX_ROWS", 3)
    out_of_core = jagged.load(tmp_path / "items.parquet")
    assert out_of_core.items is None
    assert in_memory.details["choices"] == out_of_core.details["choices"]


# --- question text and options (issue 19: look at the items) ------------------------------

TEXTED = """model,domain,item,correct,text,options
A,math,q1,1,,
B,math,q1,0,  What is 2+2?  ,"[""3"", ""4""]"
C,math,q1,1,What is 2 + 2 (other wording)?,"[""x""]"
A,math,q2,0,Plain options,A) yes | B) no
B,math,q2,1,,
A,law,q3,1,,
"""


def test_text_and_options_kept_one_per_item_first_non_empty(tmp_path):
    dataset = jagged.load(write(tmp_path, "items.csv", TEXTED))
    items = dataset.items
    assert {"text", "options"} <= set(items.columns)
    by_item = items.groupby("item")[["text", "options"]].nunique(dropna=False)
    assert (by_item <= 1).all().all()  # the same text for every model of an item
    q1 = items[items["item"] == "q1"].iloc[0]
    assert q1["text"] == "What is 2+2?" and q1["options"] == '["3", "4"]'  # the first non-empty, stripped
    q2 = items[items["item"] == "q2"].iloc[0]
    assert q2["text"] == "Plain options" and q2["options"] == "A) yes | B) no"  # other option text as written
    q3 = items[items["item"] == "q3"].iloc[0]
    assert q3["text"] is None and q3["options"] is None
    texts = items_module.item_texts(items)
    assert texts.loc["q1", "text"] == "What is 2+2?" and len(texts) == 3
    # scores are unchanged by the text columns
    without = pd.read_csv(tmp_path / "items.csv").drop(columns=["text", "options"])
    pd.testing.assert_frame_equal(jagged.load(write(tmp_path, "x.csv", without.to_csv(index=False))).scores,
                                  dataset.scores)


def test_hostile_text_is_bounded_and_kept_as_given(tmp_path):
    huge = "<script>alert('x')</script>" + "é" * 1_000_000
    frame = pd.DataFrame({"model": ["A", "B"], "domain": "d", "item": "i", "correct": [1, 0],
                          "text": [huge, "other"], "options": [json.dumps(["<b>" + "o" * 5_000] * 40), None]})
    items = items_module.validate_items(frame, "t")
    text = items.loc[0, "text"]
    assert len(text) == items_module.TEXT_MAX_CHARS == 4_000 and text.endswith("…")
    assert text.startswith("<script>alert('x')</script>")  # stored as given: escaping is the display's job
    options = json.loads(items.loc[1, "options"])
    assert len(options) == items_module.MAX_OPTIONS == 26
    assert all(len(o) == 1_000 and o.startswith("<b>") and o.endswith("…") for o in options)
    assert items_module.cap_text(float("nan")) is None and items_module.cap_text(12) == "12"
    assert items_module.options_text([]) is None and items_module.options_text("[not json") == "[not json"
    assert items_module.options_text([{"text": "a"}, 3, None]) == '["a", "3", ""]'


def test_bundled_text_joins_the_bundled_responses_by_item_id():
    texts = items_module.load_bundled_item_text(["70", "2817", "no-such-item"])
    assert sorted(texts.index) == ["2817", "70"]
    assert texts.loc["70", "text"].startswith("Typical advertising regulatory bodies suggest")
    options = json.loads(texts.loc["2817", "options"])
    assert options[4] == "codominance" and len(options) == 10
    raw = pd.read_csv(items_module.__file__.replace("readers/items.py", "data/mmlu_pro_item_text.csv.gz"))
    responses = items_module.load_bundled_items().items
    assert set(raw["item_id"].astype(str)) == set(responses["item"])  # every responded item has its text
    assert len(items_module.load_bundled_item_text()) == raw["item_id"].nunique() == 12_032


def test_compare_ledger_marks_text_changed_between_item_tables(tmp_path):
    from jagged.stats.compare import compare

    rows = [(m, "d", f"q{k}", int((k + j) % 3 != 0), f"Question {k}?") for j, m in enumerate("ABC") for k in range(6)]
    a = pd.DataFrame(rows, columns=["model", "domain", "item", "correct", "text"])
    b = a.copy()
    b.loc[b["item"] == "q2", "text"] = "Question 2, reworded?"
    b.loc[b["item"] == "q4", "text"] = "  Question 4?  "  # only spaces differ: not a change
    side_a = jagged.load(write(tmp_path, "a.csv", a.to_csv(index=False)))
    side_b = jagged.load(write(tmp_path, "b.csv", b.to_csv(index=False)))
    assert "text" in side_a.items.columns and "text" in side_b.items.columns
    ledger = compare(side_a, side_b, n_boot=0).ledger
    changed = ledger[ledger["changes"].str.contains("text_changed")]
    assert changed["item"].tolist() == ["q2"]
    assert changed[["text_a", "text_b"]].iloc[0].tolist() == ["Question 2?", "Question 2, reworded?"]
