"""Parameters are data: hostile stored parameters never run code, never hang, exit 2 with one line.

A report's stored parameters (``<meta name="jagged-parameters">`` YAML, a kept notebook's
``metadata.jagged``, a plain YAML file) come from whoever sent the report. These tests feed
every option bytes, sets, dates, aliases, anchors, huge numbers, huge strings and nested
values; notebook paths in ``jagged-notebook``; FIFOs; a file that is no table and holds a
secret; and payloads that would create a marker file if a value ever became code, both
through ``jagged report --params`` (a subprocess) and through the parameters-cell builder.
"""

from __future__ import annotations

import ast
import datetime
import html
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from clitools import assert_bad_input, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from jagged import options as opts
from jagged.errors import JaggedInputError
from jagged.report.execution import _check_cell, execute, parameters_source
from jagged.report.notebooks import default_values, packaged_notebook, plain
from jagged.report.rerun import MAX_YAML_BYTES, load_yaml, read_parameters

TINY = "model,domain,score,n_items\na,x,0.5,10\na,y,0.7,10\nb,x,0.6,10\nb,y,0.9,10\n"
#: Every parameter the cross-model notebook declares: each option and ``scores``.
REPORT_PARAMETERS = list(default_values("jaggedness_report"))
#: Hostile YAML values, each refused for every parameter (``{}`` is the parameter's name).
HOSTILE = {
    "bytes": "!!binary IjtfX2ltcG9ydF9fKCJvcyIpLnN5c3RlbSgidHJ1ZSIpO189Ig==",
    "set": "!!set {a: null, b: null}",
    "date": "!!timestamp 2024-01-01",
    "anchor": "&payload [1, 2]",
    "python": "!!python/object/apply:os.system ['true']",
    "huge float": "1.0e+400",
    "huge integer": "9" * 4000,
    "huge string": "x" * 5000,
    "nested": "{a: [1, {b: 2}]}",
}


def _payload(marker: Path, quote: str = '"') -> str:
    """Python that creates ``marker`` if it ever runs."""
    return f"__import__({quote}pathlib{quote}).Path({quote}{marker}{quote}).touch()"


def _payloads(marker: Path) -> list[str]:
    """Texts that would become code in a naive parameters cell, each creating ``marker`` if run."""
    code = _payload(marker)
    return [f'";{code};_="', f"';{_payload(marker, chr(39))};_='", f'"""\n{code}\n"""', f"\\\";{code}#",
            f"x\n{code}", f"\\u0022;{code}", f"{{{code}}}", f"$({code})"]


@pytest.fixture
def no_kernel(monkeypatch):
    """Fail if anything reaches the point of starting a kernel."""
    import jagged.report.jaggedness as single

    def refuse(*args, **kwargs):  # pragma: no cover - reached only on a bug
        raise AssertionError("a kernel was started for hostile parameters")

    monkeypatch.setattr(single, "run_report", refuse)
    monkeypatch.setattr(single, "launch_kernel", refuse, raising=False)


# --- every option x every hostile value -------------------------------------------------------


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_every_parameter_refuses_every_hostile_value(tmp_path, no_kernel, kind):
    params = tmp_path / "p.yaml"
    for name in REPORT_PARAMETERS:  # one kernel-free call each
        params.write_text(f"bootstrap: 0\n{name}: {HOSTILE[kind]}\n" if name != "bootstrap" else
                          f"{name}: {HOSTILE[kind]}\n", encoding="utf-8")
        line = assert_bad_input("report", "--params", params, "-o", tmp_path / "out" / "r.html",
                                fragments=(f"--params {params}", repr(name)))
        assert "x" * 100 not in line and "9" * 100 not in line, name  # a huge value is described, not echoed
        assert not (tmp_path / "out").exists(), name


def test_stored_capabilities_are_recorded_never_used(tmp_path, monkeypatch):
    """A received report's engine, Spark master and input cap: set aside with one warning unless typed again."""
    import jagged.report.jaggedness as single

    hostile = {"engine": "spark", "spark_master": "spark://127.0.0.1:7077", "max_input_bytes": 2**40}
    assert {o.name for o in opts.OPTIONS if o.capability} == set(hostile)  # a new capability adds its value here
    ran: list[dict] = []
    monkeypatch.setattr(single, "run_report", lambda name, output, params, **kwargs: ran.append(params) or Path(output))
    (tmp_path / "s.csv").write_text(TINY)
    params = tmp_path / "p.yaml"
    params.write_text(yaml.safe_dump({"scores": str(tmp_path / "s.csv"), "bootstrap": 0, **hostile}))
    monkeypatch.setenv("JAGGED_MAX_INPUT_BYTES", "50")  # the cap in force: the stored 1 TiB must not lift it
    code, _, err = run_cli("report", "--params", params, "-o", tmp_path / "o.html")
    assert code == 2 and not ran
    assert err.splitlines() == [
        f"jagged: warning: --params {params}: stored max_input_bytes=1099511627776, engine='spark', "
        "spark_master='spark://127.0.0.1:7077' not used: what a rerun may touch comes from the command line; give "
        "--max-input-bytes, --engine, --spark-master to use them",
        "jagged: error: s.csv is more than 50 bytes, the input cap (50 bytes); if the file is trusted, raise it with "
        "--max-input-bytes N, max_input_bytes=N or JAGGED_MAX_INPUT_BYTES=N"]
    code, _, err = run_cli("report", "--params", params, "-o", tmp_path / "o.html", "--max-input-bytes", "4096")
    assert code == 0 and err.splitlines()[0].endswith("give --engine, --spark-master to use them")
    assert {k: ran[0][k] for k in hostile} == {"engine": "duckdb", "spark_master": "", "max_input_bytes": 4096}


@pytest.mark.parametrize("name, value, rule", [
    ("bootstrap", 1_000_000_000_000, "an integer between 0 and 100000"),
    ("bootstrap", -1, "an integer between 0 and 100000"),
    ("bootstrap", 2.5, "an integer between 0 and 100000"),
    ("bootstrap", True, "an integer between 0 and 100000"),
    ("seed", 2**32, "an integer between 0 and 4294967295"),
    ("ci", 1.0, "a number strictly between 0 and 1"),
    ("ci", "0.9", "a number strictly between 0 and 1"),
    ("max_models", 10**6, "an integer between 2 and 1000"),
    ("max_input_bytes", 2**41, "an integer between 1 and 1099511627776 (or null)"),
    ("theme", "neon", "one of 'light', 'dark', 'auto'"),
    ("score_scale", "permille", "one of 'fraction', 'percent'"),
    ("missing_weight", "", "one of 'error', 'zero'"),
    ("allow_incomplete", "yes please", "true or false"),
    ("profiles", ["a", 3], "a list of at most 1000 texts"),
    ("task", "a\x00b", "text of at most 4096 characters without NUL"),
    ("scores", ["x"], "text of at most 4096 characters without NUL"),
])
def test_values_outside_type_and_bounds_name_the_parameter(tmp_path, no_kernel, name, value, rule):
    params = tmp_path / "r.yaml"
    params.write_text(yaml.safe_dump({name: value}), encoding="utf-8")
    line = assert_bad_input("report", "--params", params, "-o", tmp_path / "r.html")
    assert line.startswith(f"jagged: error: --params {params}: parameter {name!r} must be {rule}, not "), line


def test_the_message_of_the_issue(tmp_path, no_kernel):
    params = tmp_path / "r.yaml"
    params.write_text("bootstrap: 1000000000000\n")
    line = assert_bad_input("report", "--params", params, "-o", tmp_path / "r.html")
    assert line == (f"jagged: error: --params {params}: parameter 'bootstrap' must be an integer between 0 and "
                    "100000, not 1000000000000")


def test_unknown_parameter_names_are_refused_in_one_line(tmp_path, no_kernel):
    params = tmp_path / "r.yaml"
    params.write_text("bootstrap: 0\nbootstrp: 10\n__import__: 1\n")
    assert_bad_input("report", "--params", params, "-o", tmp_path / "r.html",
                     fragments=("unknown parameters 'bootstrp', '__import__'",))


def test_bounds_are_declared_once_for_cli_help_and_stored_parameters():
    numeric = [o for o in (*opts.OPTIONS, *opts.NOTEBOOK_ONLY.values()) if o.kind in ("int", "float")]
    assert {o.name for o in numeric} >= {"bootstrap", "seed", "ci", "max_models", "max_input_bytes", "n_extremes"}
    assert all(o.minimum is not None and o.maximum is not None for o in numeric)
    code, out, _ = run_cli("report", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "0<=x<=100000" in flat and "0<x<1" in flat and "1<=x<=1099511627776" in flat
    line = assert_bad_input("report", "--bootstrap", "100001")  # click's range is the declaration's
    assert "100001 is not in the range 0<=x<=100000" in line
    with pytest.raises(JaggedInputError, match="parameter 'bootstrap' must be an integer between 0 and 100000"):
        opts.check_value("bootstrap", 100_001)
    assert opts.check_value("bootstrap", 100_000) == 100_000 and opts.check_value("ci", 0.5) == 0.5


def test_an_unquoted_date_stays_text_and_core_values_load():
    loaded = load_yaml("task: 2024-01-01\nbootstrap: 10\nci: 0.9\nallow_incomplete: true\nweights: null\n"
                       "profiles: [a, b]\n", "p.yaml")
    assert loaded == {"task": "2024-01-01", "bootstrap": 10, "ci": 0.9, "allow_incomplete": True, "weights": None,
                      "profiles": ["a", "b"]}
    assert all(type(v) in (str, int, float, bool, type(None), list) for v in loaded.values())


@given(st.dictionaries(st.sampled_from(["task", "metric", "title", "focus_model"]),
                       st.text(max_size=200) | st.integers(-10**30, 10**30) | st.booleans() | st.none()
                       | st.lists(st.text(max_size=20), max_size=5)
                       | st.floats(allow_nan=False, allow_infinity=False)))
@settings(max_examples=150, deadline=None)
def test_stored_yaml_round_trips_through_the_safe_loader(values):
    from jagged.report.rerun import parameters_yaml

    assert load_yaml(parameters_yaml(values), "p.yaml") == values


# --- alias bombs, sizes ------------------------------------------------------------------------


def _alias_bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [{','.join(['*' + prev] * 9)}]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_refused_at_once_in_bounded_memory(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_alias_bomb())
    assert len(bomb.read_bytes()) < 500  # the issue's bomb was 419 bytes: 9**9 "lol"s, 2.5 GB
    probe = ("import resource, subprocess, sys\n"
             "r = subprocess.run([sys.executable, '-m', 'jagged.cli', 'report', '--params', sys.argv[1], '-o', "
             "sys.argv[2]], capture_output=True, text=True, timeout=120)\n"
             "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
             "print(r.returncode, peak, repr(r.stderr))\n")
    out = subprocess.run([sys.executable, "-c", probe, str(bomb), str(tmp_path / "r.html")], capture_output=True,
                         text=True, timeout=180, cwd=tmp_path)
    code, peak_kib, stderr = out.stdout.split(" ", 2)
    stderr = ast.literal_eval(stderr)
    assert int(code) == 2, stderr
    assert stderr.count("\n") == 1 and "YAML anchors (&a) are not allowed in parameter 'a' (line 1)" in stderr
    assert int(peak_kib) < 300 * 1024, f"peak RSS {int(peak_kib) / 1024:.0f} MB"
    with pytest.raises(JaggedInputError, match="aliases"):  # an alias without its anchor: refused too
        load_yaml("a: 1\nb: *a\n", "p.yaml")


@pytest.mark.parametrize("text, fragment", [
    ("a: " + "[" * 50 + "]" * 50, "nested more than 4 levels deep"),
    ("profiles: [" + ", ".join(["x"] * 10_001) + "]", "more than 10,000 YAML values"),
    ("task: !foo x", "YAML tag !foo is not allowed"),
    ("a: 1\n---\nb: 2\n", "not valid YAML (line 2)"),
])
def test_yaml_structure_bounds(text, fragment):
    with pytest.raises(JaggedInputError, match=fragment.replace("(", r"\(").replace(")", r"\)")) as caught:
        load_yaml(text, "p.yaml")
    assert "\n" not in str(caught.value)


def test_oversized_parameter_file_is_refused(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("title: x\n" + "#" * MAX_YAML_BYTES + "\n")
    assert_bad_input("report", "--params", big, fragments=(f"more than the {MAX_YAML_BYTES:,} a parameter file may",))


# --- kept notebooks (.ipynb) and reports (.html) -------------------------------------------------


def _ipynb(path: Path, parameters: object, notebook: object = "jaggedness_report") -> Path:
    path.write_text(json.dumps({"cells": [], "metadata": {"jagged": {"notebook": notebook,
                                                                   "parameters": parameters}},
                                "nbformat": 4, "nbformat_minor": 5}))
    return path


def _html(path: Path, parameters: str, notebook: str = "jaggedness_report") -> Path:
    path.write_text(f'<html><head><meta name="jagged-notebook" content="{html.escape(notebook)}">'
                    f'<meta name="jagged-parameters" content="{html.escape(parameters)}"></head><body></body></html>')
    return path


@pytest.mark.parametrize("parameters, fragment", [
    ({"bootstrap": 10**30}, "parameter 'bootstrap' must be an integer between 0 and 100000"),
    ({"task": {"a": 1}}, "parameter 'task' must be text"),
    ({"profiles": [[["x"]]]}, "parameter 'profiles' must be a list"),
    ({"task": [[[[[[1]]]]]]}, "nested more than 4 levels deep"),
    ({"title": "x" * 5000}, "a stored value of 5,000 characters"),
    ("task: !!binary SGk=\n", "YAML tag !!binary is not allowed"),
    (["not", "a", "mapping"], "parameters must be a mapping"),
])
def test_notebook_metadata_is_held_to_the_same_rules(tmp_path, no_kernel, parameters, fragment):
    kept = _ipynb(tmp_path / "r.ipynb", parameters)
    assert_bad_input("report", "--params", kept, "-o", tmp_path / "o.html", fragments=(fragment,))


@pytest.mark.parametrize("text, fragment", [
    ('{"metadata": {"jagged": {"parameters": {"bootstrap": ' + "9" * 5000 + "}}}}", "not a readable notebook"),
    ('{"metadata": {"jagged": {"parameters": ' + "[" * 200_000 + "]" * 200_000 + "}}}", "not a readable notebook"),
])
def test_damaged_notebook_json_exits_2(tmp_path, text, fragment):
    kept = tmp_path / "r.ipynb"
    kept.write_text(text)
    assert_bad_input("report", "--params", kept, fragments=(fragment,))


def test_the_binary_payload_of_the_issue_in_a_report_is_refused(tmp_path, no_kernel):
    marker = tmp_path / "MARKER"
    payload = f'";{_payload(marker)};_="'.encode()
    stored = yaml.safe_dump({"scores": "", "focus_model": payload, "bootstrap": 0})  # the sender's !!binary
    assert "!!binary" in stored
    report = _html(tmp_path / "r.html", stored)
    assert_bad_input("report", "--params", report, "-o", tmp_path / "again.html",
                     fragments=("YAML tag !!binary is not allowed", "'focus_model'"))
    assert not marker.exists() and not (tmp_path / "again.html").exists()


# --- notebook names ----------------------------------------------------------------------------


def _evil_notebook(path: Path, marker: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(_payload(marker))]
    nbformat.write(nb, path)
    return path


@pytest.mark.parametrize("where", ["absolute", "relative", "parent", "beside", "beside-bare", "packaged-path"])
@pytest.mark.parametrize("container", ["html", "ipynb"])
def test_stored_notebook_is_a_packaged_name_never_a_path(tmp_path, monkeypatch, no_kernel, where, container):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "MARKER"
    (tmp_path / "sub").mkdir()
    _evil_notebook(tmp_path / "sub" / "evil.ipynb", marker)
    _evil_notebook(tmp_path / "evil.ipynb", marker)
    from jagged.report.notebooks import find_notebook

    name = {"absolute": str(tmp_path / "sub" / "evil.ipynb"), "relative": "sub/evil", "parent": "../evil",
            "beside": "./evil.ipynb", "beside-bare": "evil",
            "packaged-path": str(find_notebook("model_report"))}[where]
    if container == "html":
        source = _html(tmp_path / "sub" / "r.html", "bootstrap: 0\n", notebook=name)
    else:
        source = _ipynb(tmp_path / "sub" / "r.ipynb", {"bootstrap": 0}, notebook=name)
    assert_bad_input("report", "--params", source, "-o", tmp_path / "o.html",
                     fragments=("is not one of the packaged notebooks (compare_report, jaggedness_report, "
                                "model_report)",))
    assert_bad_input("report", "--notebook", name, "-o", tmp_path / "o.html",
                     fragments=("--notebook: notebook", "is not one of the packaged notebooks"))
    assert not marker.exists()


def test_packaged_notebook_names_pass():
    assert packaged_notebook("model_report") == "model_report"
    assert packaged_notebook("jaggedness_report.ipynb") == "jaggedness_report"
    for bad in (None, 3, ["model_report"], "model_report/..", "MODEL_REPORT", "model_report.py"):
        with pytest.raises(JaggedInputError, match="is not one of the packaged notebooks"):
            packaged_notebook(bad)


# --- FIFOs and files that are no table ------------------------------------------------------------


def _jagged(*args: object, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """``jagged ARGS`` in a subprocess: a hang fails the test through the timeout."""
    return subprocess.run([sys.executable, "-m", "jagged.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


@pytest.mark.parametrize("how", ["params-scores", "params-weights", "params-file", "validate", "metrics-weights",
                                 "report"])
def test_fifos_are_refused_without_hanging(tmp_path, how):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "tiny.csv").write_text(TINY)
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(
        {"scores": str(fifo) if how == "params-scores" else str(tmp_path / "tiny.csv"),
         "weights": str(fifo) if how == "params-weights" else "", "bootstrap": 0}))
    args = {"params-scores": ["report", "--params", "p.yaml", "-o", "o.html"],
            "params-weights": ["report", "--params", "p.yaml", "-o", "o.html"],
            "params-file": ["report", "--params", fifo, "-o", "o.html"],
            "validate": ["validate", fifo],
            "metrics-weights": ["metrics", "tiny.csv", "--weights", fifo],
            "report": ["report", fifo, "-o", "o.html"]}[how]
    result = _jagged(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jagged: error: "), result.stderr
    assert "FIFO" in lines[0] or "not a regular file" in lines[0]
    assert not (tmp_path / "o.html").exists()


SECRET = "root:$6$S3CRETsalt$hashhashhash:19000:0:99999:7:::"


@pytest.mark.parametrize("how", ["validate", "report", "params-scores", "params-file", "params-weights"])
def test_a_file_that_is_no_table_is_never_echoed(tmp_path, how, no_kernel):
    shadow = tmp_path / "shadow"
    shadow.write_text(f"{SECRET}\ndaemon:*:19000:0:99999:7:::\n")
    (tmp_path / "tiny.csv").write_text(TINY)
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(
        {"scores": str(shadow) if how != "params-weights" else str(tmp_path / "tiny.csv"),
         "weights": str(shadow) if how == "params-weights" else "", "bootstrap": 0}))
    args = {"validate": ["validate", shadow], "report": ["report", shadow, "-o", tmp_path / "o.html"],
            "params-scores": ["report", "--params", tmp_path / "p.yaml", "-o", tmp_path / "o.html"],
            "params-weights": ["report", "--params", tmp_path / "p.yaml", "-o", tmp_path / "o.html"],
            "params-file": ["report", "--params", shadow, "-o", tmp_path / "o.html"]}[how]
    line = assert_bad_input(*args)
    for fragment in ("S3CRET", "hashhash", "root:", "daemon"):
        assert fragment not in line, line


# --- no value ever becomes code -----------------------------------------------------------------


@given(st.text())
@settings(max_examples=300, deadline=None)
def test_any_text_round_trips_exactly_through_the_parameters_cell(text):
    source = parameters_source({"value": text, "values": [text, text[::-1]]})
    body = ast.parse(source).body
    assert len(body) == 2 and all(isinstance(node, ast.Assign) for node in body)
    assert all(isinstance(node.value, (ast.Constant, ast.List)) for node in body)
    namespace: dict = {"__builtins__": {}}
    exec(compile(source, "<parameters>", "exec"), namespace)  # literals only, proven above  # noqa: S102
    assert namespace["value"] == text and namespace["values"] == [text, text[::-1]]


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(), lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12))
@settings(max_examples=200, deadline=None)
def test_plain_values_of_any_shape_round_trip_with_their_types(value):
    source = parameters_source({"x": value})
    assert ast.literal_eval(ast.parse(source).body[0].value) == value
    _check_cell(source, {"x": plain(value)})


def test_payloads_never_run_through_the_cell_builder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "MARKER"
    for payload in _payloads(marker):
        source = parameters_source({"focus_model": payload, "profiles": [payload]})
        exec(compile(source, "<parameters>", "exec"), {})  # noqa: S102 - what the kernel would run
        assert not marker.exists(), payload


class _Sneaky(str):
    """A str subclass whose repr is code: the builder must write the plain text, not this."""

    def __repr__(self) -> str:
        return "__import__('os')"

    __str__ = __repr__


@pytest.mark.parametrize("value", [b'";__import__("os");_="', {1, 2}, datetime.date(2024, 1, 1), object(),
                                   float("nan"), float("inf"), [b"x"], {"k": {1}}, {1: "x"}])
def test_values_that_are_not_plain_data_never_reach_a_cell(value):
    with pytest.raises(TypeError):
        parameters_source({"x": value})


def test_subclasses_are_written_as_their_plain_value_and_doctored_cells_are_refused():
    source = parameters_source({"x": _Sneaky("hello")})
    assert source.splitlines()[1] == "x = 'hello'"
    with pytest.raises(ValueError):
        _check_cell("x = 'a'\n__import__('os')\n", {"x": "a"})
    with pytest.raises(ValueError):
        _check_cell("x = 1\n", {"x": True})  # types must match exactly
    with pytest.raises(ValueError):
        parameters_source({"import": 1})


def test_papermill_injects_the_checked_cell(tmp_path):
    """Through papermill itself (prepare only: no kernel), the injected cell is our literal assignments."""
    marker = tmp_path / "MARKER"
    payload = _payloads(marker)[0]
    out = tmp_path / "{scores}{0}.ipynb"  # papermill formats paths: braces must stay literal
    execute("jaggedness_report", out, {"focus_model": payload, "profiles": [payload], "bootstrap": 0},
            prepare_only=True)
    nb = nbformat.read(out, as_version=4)
    cell = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    body = ast.parse(cell.source).body
    assert [(n.targets[0].id, ast.literal_eval(n.value)) for n in body] == [
        ("focus_model", payload), ("profiles", [payload]), ("bootstrap", 0)]
    with pytest.raises(TypeError):
        execute("jaggedness_report", tmp_path / "x.ipynb", {"focus_model": payload.encode()}, prepare_only=True)
    assert not (tmp_path / "x.ipynb").exists() and not marker.exists()


def test_hostile_text_parameters_run_as_data_and_a_rerun_stores_them_as_data(tmp_path):
    """End to end: `jagged report --params` with payloads in every free-text option, then a rerun of that report."""
    marker = tmp_path / "MARKER"
    (tmp_path / "tiny.csv").write_text(TINY)
    payloads = _payloads(marker)
    stored = {"scores": str(tmp_path / "tiny.csv"), "bootstrap": 0, "focus_model": "a",
              **{name: payloads[i] for i, name in enumerate(("task", "metric", "model_name", "domain_key",
                                                              "collection"))}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(stored))
    title = payloads[5]
    first = _jagged("report", "--params", "p.yaml", "-o", "out/r.html", "--title", title, cwd=tmp_path, timeout=300)
    assert first.returncode == 0, first.stderr
    assert not marker.exists()
    again = _jagged("report", "--params", "out/r.html", "-o", "out/again.html", cwd=tmp_path, timeout=300)
    assert again.returncode == 0, again.stderr
    assert not marker.exists()
    run = read_parameters(tmp_path / "out" / "again.html")
    assert {k: run.parameters[k] for k in stored} == stored and run.title == title
    assert all(type(v) in (str, int, float, bool, type(None), list) for v in run.parameters.values())
    kept = nbformat.read(tmp_path / "out" / "again.ipynb", as_version=4)
    cell = next(c for c in kept.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert all(isinstance(n, ast.Assign) for n in ast.parse(cell.source).body)
    # the sender's binary variant of the same payload: refused before anything runs
    (tmp_path / "bin.yaml").write_text(yaml.safe_dump({**stored, "task": payloads[0].encode()}))
    refused = _jagged("report", "--params", "bin.yaml", "-o", "out/bin.html", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "!!binary" in refused.stderr
    assert not marker.exists() and not (tmp_path / "out" / "bin.html").exists()


@pytest.mark.parametrize("value, rule", [
    ("release=x", "a list of at most 1000 texts"),
    (["release=x", 3], "a list of at most 1000 texts"),
    (["a\x00b"], "a list of at most 1000 texts"),
    (["x"] * 1001, "a list of at most 1000 texts"),
])
def test_stored_side_filters_of_a_compare_report_are_lists_of_texts(tmp_path, no_kernel, value, rule):
    (tmp_path / "tiny.csv").write_text(TINY)
    params = tmp_path / "c.yaml"
    params.write_text(yaml.safe_dump({"a": str(tmp_path / "tiny.csv"), "b": str(tmp_path / "tiny.csv"),
                                      "where_b": ["model=a"], "where_a": value}), encoding="utf-8")
    line = assert_bad_input("report", "--params", params, "--notebook", "compare_report", "-o", tmp_path / "r.html")
    assert line.startswith(f"jagged: error: --params {params}: parameter 'where_a' must be {rule}, not "), line
    assert "x" * 100 not in line and not (tmp_path / "r.html").exists()
