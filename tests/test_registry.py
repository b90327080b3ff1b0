"""The reader registry: a new format is one module and one line, read through ``jagged.load``."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import jagged
from jagged.errors import JaggedInputError, JaggedWarning
from jagged.readers import registry
from jagged.readers.reader import Head, Reader, ScoreRead


def _toy_read(found, *, source, model_name=None, **_):
    """Toy format: a JSON object {"toy": {model: {domain: percent}}}."""
    rows = [{"model": model_name or m, "domain": d, "score": v}
            for m, scores in found[0].content["toy"].items() for d, v in scores.items()]
    return ScoreRead(scores=pd.DataFrame(rows), label=found[0].path.name, paths=[found[0].path], format="toy",
                     score_scale="percent", details={"toy": "yes"})


TOY = Reader(name="toy", family="toy files", what="toy files", options=("model_name",),
             recognises=lambda content: isinstance(content, dict) and "toy" in content, read=_toy_read)


@pytest.fixture
def toy_registered(monkeypatch):
    monkeypatch.setattr(registry, "READERS", [*registry.READERS, TOY])  # the one line


def test_a_registered_toy_format_is_read_and_validated_once(tmp_path, toy_registered):
    path = tmp_path / "scores.json"
    path.write_text('{"toy": {"a": {"x": 80, "y": 60}, "b": {"x": 50, "y": 25}}}')
    ds = jagged.load(path)
    assert ds.format == "toy" and ds.details["toy"] == "yes" and ds.paths == [path]
    scores = ds.scores.set_index(["model", "domain"])["score"].astype(float)
    assert scores.to_dict() == {("a", "x"): 0.8, ("a", "y"): 0.6, ("b", "x"): 0.5, ("b", "y"): 0.25}


def test_the_shared_validation_applies_to_a_new_format(tmp_path, toy_registered):
    path = tmp_path / "bad.json"
    path.write_text('{"toy": {"a": {"x": 180, "y": 60}}}')
    with pytest.raises(JaggedInputError, match="bad.json"):
        jagged.load(path)


def test_options_a_format_does_not_declare_are_warned_about(tmp_path, toy_registered):
    path = tmp_path / "scores.json"
    path.write_text('{"toy": {"a": {"x": 80, "y": 60}, "b": {"x": 50, "y": 25}}}')
    with pytest.warns(JaggedWarning, match="--task does not apply to toy files"):
        ds = jagged.load(path, task="mmlu", model_name=None)
    one = tmp_path / "one.json"
    one.write_text('{"toy": {"a": {"x": 80, "y": 60}}}')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        renamed = jagged.load(one, model_name="m")
    assert set(renamed.scores["model"].astype(str)) == {"m"} and set(ds.scores["model"].astype(str)) == {"a", "b"}


def test_without_the_line_the_toy_file_is_unknown_json(tmp_path):
    path = tmp_path / "scores.json"
    path.write_text('{"toy": {"a": {"x": 80}}}')
    with pytest.raises(JaggedInputError, match="JSON but not an evaluator output"):
        jagged.load(path)


def test_readers_are_asked_in_the_registry_order(tmp_path):
    """Every format module's READER is listed once; the first that recognises an input takes it."""
    names = [r.name for r in registry.READERS]
    assert names == ["table", "lm-eval results", "Inspect log", "EEE aggregate", "HELM run", "EEE instance-level",
                     "lm-eval samples"]
    path = tmp_path / "s.jsonl"
    path.write_text('{"doc_id": 0, "sample_id": "1", "model_id": "m"}\n')  # both EEE and lm-eval sample keys
    assert registry.recognise(Head(path, "json")).reader.name == "EEE instance-level"
