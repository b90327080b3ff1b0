"""Fuzzing the loaders and the CLI with random malformed input (hypothesis, fixed seed).

Every outcome is either a correct result or exit status 2 with a one-line error: never a
traceback. Each entry point gets 200 examples here; benchmarks/bench_fuzz.py draws 500 with the
same strategies and times them (the slowest case is its figure, not a limit here).
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, seed, settings
from hypothesis import strategies as st
from json_damage import slots

import jagged
from jagged.cli import main
from jagged.errors import JaggedInputError

# Fuzzed inputs may legitimately warn (e.g. lm-eval leaves without a usable metric).
pytestmark = pytest.mark.filterwarnings("ignore::jagged.errors.JaggedWarning")

EXAMPLES = 200
FUZZ_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                HealthCheck.function_scoped_fixture])

COLUMN_NAMES = ["model", "domain", "score", "n_items", "category", "item", "correct", "law", "math",
                "", " model ", "Score", "\u00e9t\u00e9"]
cells = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", " ", "nan", "NaN", "inf", "-inf", "1e308", "1e400", "-0", "0.5", "50", "1,5",
                     "NA", "null", "\x00", "\"", "'", "<b>x</b>", "../x", "0x10", "True"]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
)


@st.composite
def delimited_tables(draw) -> bytes:
    """A random table written with a random delimiter, quoting and encoding."""
    n_cols = draw(st.integers(1, 5))
    header = draw(st.lists(st.sampled_from(COLUMN_NAMES), min_size=n_cols, max_size=n_cols))
    if draw(st.booleans()):
        header[:3] = ["model", "domain", "score"][: min(3, n_cols)]
    rows = draw(st.lists(st.lists(cells, min_size=0, max_size=n_cols + 1), max_size=8))
    delimiter = draw(st.sampled_from([",", ";", "\t", "|"]))
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter)
    writer.writerow(header)
    for row in rows:
        writer.writerow(row)
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "latin-1", "cp1252"]))
    return buffer.getvalue().encode(encoding, errors="replace")


@st.composite
def plausible_tables(draw) -> bytes:
    """Mostly well-formed long tables with a few broken cells: exercises the checks."""
    models = draw(st.lists(st.sampled_from(["a", "b", "c", "", " ", "<script>"]), min_size=1, max_size=4,
                           unique=True))
    domains = draw(st.lists(st.sampled_from(["x", "y", "z", "", "w", "\u00e9t\u00e9"]), min_size=1, max_size=4,
                            unique=True))
    lines = ["model,domain,score,n_items"]
    clean = draw(st.booleans())
    if clean:
        models = [m for m in models if m.strip()] or ["a"]
        domains = [d for d in domains if d.strip()] or ["x"]
    bad_scores = st.sampled_from(["", "nan", "2", "-1", "abc", "101"])
    bad_counts = st.sampled_from(["", "0", "-3", "2.5", "x"])
    for m in models:
        for d in domains:
            score = draw(st.floats(0, 1) if clean else st.one_of(st.floats(0, 1), bad_scores))
            n = draw(st.sampled_from(["10", "100"]) if clean else st.one_of(st.sampled_from(["10"]), bad_counts))
            lines.append(f"{m},{d},{score},{n}")
    return ("\n".join(lines) + "\n").encode()


any_file = st.one_of(st.binary(max_size=300), delimited_tables(), plausible_tables(), plausible_tables(),
                     st.builds(lambda obj: json.dumps(obj).encode(),
                               st.recursive(st.none() | st.booleans() | st.floats() | st.text(max_size=5),
                                            lambda c: st.lists(c, max_size=3)
                                            | st.dictionaries(st.text(max_size=5), c, max_size=3),
                                            max_leaves=10)))


def _write(data: bytes, suffix: str) -> Path:
    handle = tempfile.NamedTemporaryFile(delete=False, suffix=suffix, dir=_FUZZ_DIR)
    handle.write(data)
    handle.close()
    return Path(handle.name)


_FUZZ_DIR = tempfile.mkdtemp(prefix="jagged-fuzz-")


def check_result(table: pd.DataFrame, scores: pd.DataFrame) -> None:
    """A successful load must be a correct result, checked independently."""
    assert scores["score"].between(0, 1).all()
    assert set(table["model"]) == set(scores["model"].astype(str))
    for model, group in scores.groupby("model", observed=True):
        errors = 1 - group["score"].to_numpy()
        row = table[table["model"] == str(model)].iloc[0]
        if len(errors) >= 2 and errors.mean() > 0:
            assert row["cv_error"] == pytest.approx(errors.std() / errors.mean(), rel=1e-9, abs=1e-12)
        else:
            assert np.isnan(row["cv_error"])


def assert_clean_cli(args: list[str]) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (0, 2), (result.exit_code, result.stderr, result.exception)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        errors = [ln for ln in lines if ln.startswith("jagged: error: ")]
        assert len(errors) == 1 and lines[-1] == errors[0], result.stderr


@seed(20261129)
@FUZZ_SETTINGS
@given(data=any_file, suffix=st.sampled_from([".csv", ".tsv", ".txt", ".parquet", ".json", ""]))
def test_fuzz_load_api(data, suffix):
    path = _write(data, suffix)
    try:
        try:
            dataset = jagged.load(path)
        except JaggedInputError as exc:
            message = str(exc)
            assert message and "\n" not in message
            event("bad input: one-line error")
            return
        try:
            table = jagged.jaggedness(dataset.scores)
        except JaggedInputError:
            event("no model with two domains")
            return
        check_result(table, dataset.scores)
        event(f"loaded ({dataset.format})")
    finally:
        path.unlink(missing_ok=True)


@seed(20261130)
@FUZZ_SETTINGS
@given(data=any_file, suffix=st.sampled_from([".csv", ".parquet", ".json", ".dat"]),
       scale=st.sampled_from(["fraction", "percent"]))
def test_fuzz_cli_metrics(data, suffix, scale):
    path = _write(data, suffix)
    try:
        assert_clean_cli(["metrics", str(path), "--score-scale", scale])
    finally:
        path.unlink(missing_ok=True)


@seed(20261131)
@FUZZ_SETTINGS
@given(data=any_file)
def test_fuzz_cli_validate(data):
    path = _write(data, ".csv")
    try:
        assert_clean_cli(["validate", str(path)])
    finally:
        path.unlink(missing_ok=True)


@st.composite
def parquet_tables(draw) -> pd.DataFrame:
    n = draw(st.integers(0, 6))
    columns = draw(st.lists(st.sampled_from(["model", "domain", "score", "n_items", "item", "correct", "x"]),
                            min_size=1, max_size=5, unique=True))
    kinds = st.sampled_from(["float", "int", "str", "bool", "null"])
    frame = {}
    for col in columns:
        kind = draw(kinds)
        if kind == "float":
            frame[col] = draw(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=n, max_size=n))
        elif kind == "int":
            frame[col] = draw(st.lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n))
        elif kind == "str":
            frame[col] = draw(st.lists(st.text(max_size=6), min_size=n, max_size=n))
        elif kind == "bool":
            frame[col] = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        else:
            frame[col] = [None] * n
    return pd.DataFrame(frame)


@seed(20261132)
@FUZZ_SETTINGS
@given(frame=parquet_tables())
def test_fuzz_parquet_tables(frame):
    path = Path(_FUZZ_DIR) / "fuzz.parquet"
    try:
        frame.to_parquet(path)
    except Exception:
        return  # pyarrow cannot write this frame: nothing to read
    assert_clean_cli(["metrics", str(path)])


# --- evaluator outputs: valid documents with random damage --------------------------------
# Random JSON almost never looks like an lm-eval results file or an Inspect log, so the
# evaluator readers' deeper paths are fuzzed from valid documents with 1-4 random edits:
# a value replaced by any JSON value, a key deleted, or a key renamed.

json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True, allow_infinity=True)
    | st.integers(-(10**20), 10**20) | st.text(max_size=6) | st.sampled_from(["acc,none", "C", "I", "N/A", ""]),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=6)


def lmeval_results() -> dict:
    """A small valid lm-eval 0.4 results document: group 'suite' over two groups of leaves."""
    leaves = {"g_a": {"t_1": 0.8, "t_2": 0.6}, "g_b": {"t_3": 0.9, "t_4": 0.3}}
    results = {"suite": {"acc,none": 0.6, "alias": "suite"}}
    subtasks = {"suite": list(leaves)}
    for group, scores in leaves.items():
        results[group] = {"acc,none": 0.6, "acc_stderr,none": "N/A", "alias": f" - {group}"}
        subtasks[group] = list(scores)
        for leaf, value in scores.items():
            results[leaf] = {"alias": f"  - {leaf}", "acc,none": value, "acc_stderr,none": 0.01}
    return {"results": results, "group_subtasks": subtasks, "configs": {}, "versions": {},
            "config": {"model": "hf", "model_args": "pretrained=org/model-7b", "limit": None},
            "model_name": "org/model-7b", "n-samples": {k: {"original": 100, "effective": 100} for k in
                                                       ("t_1", "t_2", "t_3", "t_4")},
            "higher_is_better": {k: {"acc": True} for k in results}, "date": 1735000000.0}


def inspect_log() -> dict:
    """A small valid Inspect eval log (JSON): six samples over two metadata domains."""
    samples = [{"id": i, "epoch": 1, "input": "q", "target": "a", "scores": {"match": {"value": v}},
                "metadata": {"subject": "alg" if i % 2 else "geo"}} for i, v in enumerate("CICCIP")]
    return {"version": 2, "status": "success",
            "eval": {"task": "quiz", "model": "prov/model-x", "created": "2025-05-12T20:28:26-04:00",
                     "dataset": {"name": "quiz"}},
            "plan": {}, "results": {"scores": []}, "stats": {}, "samples": samples}


@st.composite
def damaged(draw, make) -> bytes:
    doc = make()
    for _ in range(draw(st.integers(1, 4))):
        places = slots(doc)
        if not places:
            break
        container, key = draw(st.sampled_from(places))
        action = draw(st.sampled_from(["replace", "replace", "delete", "rename"]))
        if action == "replace" or (action == "rename" and not isinstance(container, dict)):
            container[key] = draw(json_values)
        elif action == "delete":
            del container[key]
        else:
            container[draw(st.text(max_size=6))] = container.pop(key)
    return json.dumps(doc).encode()


def _load_or_one_line_error(path: Path, **options) -> None:
    try:
        dataset = jagged.load(path, **options)
        table = jagged.jaggedness(dataset.scores)
    except JaggedInputError as exc:
        assert str(exc) and "\n" not in str(exc)
        event("bad input: one-line error")
        return
    check_result(table, dataset.scores)
    event(f"loaded ({dataset.format})")


@seed(20261133)
@FUZZ_SETTINGS
@given(data=damaged(lmeval_results), task=st.sampled_from([None, "suite", "g_a"]))
def test_fuzz_lmeval_results(data, task):
    path = _write(data, ".json")
    try:
        _load_or_one_line_error(path, task=task)
        assert_clean_cli(["metrics", str(path), *(["--task", task] if task else [])])
    finally:
        path.unlink(missing_ok=True)


@seed(20261134)
@FUZZ_SETTINGS
@given(data=damaged(inspect_log), key=st.sampled_from([None, "subject"]))
def test_fuzz_inspect_logs(data, key):
    path = _write(data, ".json")
    try:
        _load_or_one_line_error(path, domain_key=key)
        assert_clean_cli(["metrics", str(path), *(["--domain-key", key] if key else [])])
    finally:
        path.unlink(missing_ok=True)
