"""HELM run folders: the three real runs in tests/data/helm_runs, one at a time and as a suite."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from clitools import assert_bad_input, run_cli
from conftest import TEST_DATA

import jagged
from jagged.errors import JaggedInputError
from jagged.readers.helm import parse_run_name, read_runs

RUNS = TEST_DATA / "helm_runs"
MMLU = RUNS / "mmlu-subject=philosophy,method=multiple_choice_joint,model=openai_gpt2"
HELLASWAG = RUNS / "commonsense-dataset=hellaswag,method=multiple_choice_joint,model=eleutherai_pythia-1b-v0"
NARRATIVE = RUNS / "narrative_qa-model=openai_gpt2"


def load(path: Path):
    return json.loads(path.read_text())


def helm_stat(run: Path, name: str, split: str) -> dict:
    """HELM's own aggregate of a metric on a split, without perturbation (stats.json)."""
    found = [s for s in load(run / "stats.json") if s["name"] == {"name": name, "split": split}]
    assert len(found) == 1
    return found[0]


def test_one_run_folder_gives_item_level_correctness_and_helms_own_score():
    dataset = jagged.load(MMLU)
    assert dataset.format == "HELM run"
    row = dataset.scores.iloc[0]
    assert (str(row["model"]), str(row["domain"])) == ("openai/gpt2", "philosophy")  # subject= names the domain
    expected = helm_stat(MMLU, "exact_match", "test")
    assert row["score"] == pytest.approx(expected["mean"]) and row["score"] == pytest.approx(1 / 9)
    assert row["n_items"] == 9  # the test split only (the tenth instance is 'valid')
    per_instance = {i["instance_id"]: s["mean"] for i in load(MMLU / "per_instance_stats.json") for s in i["stats"]
                    if s["name"] == {"name": "exact_match", "split": "test"}}
    items = dataset.items.set_index("item")["correct"].to_dict()
    assert items == per_instance


def test_multiple_choice_runs_give_the_chosen_letter_and_the_key():
    read = read_runs([MMLU], source=MMLU.name)
    items = read.items.set_index("item")
    states = {s["instance"]["id"]: s for s in load(MMLU / "scenario_state.json")["request_states"]}
    for item, row in items.iterrows():
        state = states[item]
        correct_text = next(r["output"]["text"] for r in state["instance"]["references"] if "correct" in r["tags"])
        key = next(letter for letter, text in state["output_mapping"].items() if text == correct_text)
        assert row["key"] == key and row["choice"] == state["result"]["completions"][0]["text"].strip()
        assert row["correct"] == float(row["choice"] == row["key"])  # exact_match of a letter answer
    assert items.loc["id147", ["choice", "key"]].tolist() == ["D", "C"]
    assert "9 items with the chosen option" in read.details["multiple choice"]


def test_a_suite_folder_reads_every_run():
    dataset = jagged.load(RUNS)
    got = dict(zip(dataset.scores["domain"].astype(str), dataset.scores["score"]))
    assert got == pytest.approx({"philosophy": helm_stat(MMLU, "exact_match", "test")["mean"],
                                 "hellaswag": helm_stat(HELLASWAG, "exact_match", "valid")["mean"],
                                 "narrative_qa": helm_stat(NARRATIVE, "exact_match", "test")["mean"]})
    cats = dict(zip(dataset.scores["domain"].astype(str), dataset.scores["category"].astype(str)))
    assert cats == {"philosophy": "mmlu", "hellaswag": "commonsense", "narrative_qa": "narrative_qa"}
    # item ids are prefixed by their domain when several runs are read
    assert set(dataset.items.loc[dataset.items["domain"] == "hellaswag", "item"]) == {
        f"hellaswag:{i['instance_id']}" for i in load(HELLASWAG / "per_instance_stats.json")}
    code, out, err = run_cli("validate", RUNS)
    assert code == 0 and "HELM run format" in out and "exact_match on the valid split" in out


def test_the_eee_conversion_of_the_same_run_has_the_same_items():
    """raw HELM run -> EEE instance-level file: same sample ids, same correctness."""
    samples = TEST_DATA / "eee" / "None" / "mmlu" / "openai" / "gpt2" / "None_samples.jsonl"
    converted = {json.loads(line)["sample_id"]: json.loads(line)["evaluation"]["score"]
                 for line in samples.read_text().splitlines()}
    items = jagged.load(MMLU).items.set_index("item")["correct"].to_dict()
    assert set(items) < set(converted)  # the conversion also holds the valid instance
    assert all(converted[i] == items[i] for i in items)


def test_metric_option_and_unknown_metric():
    dataset = jagged.load(NARRATIVE, metric="f1_score")
    expected = helm_stat(NARRATIVE, "f1_score", "test")["mean"]
    assert dataset.scores.iloc[0]["score"] == pytest.approx(expected)
    assert_bad_input("validate", NARRATIVE, "--metric", "bleu_9",
                     fragments=("per_instance_stats.json", "no metric 'bleu_9'", "f1_score"))


def test_a_file_of_a_run_reads_its_folder():
    for name in ("run_spec.json", "per_instance_stats.json"):
        dataset = jagged.load(MMLU / name)
        assert dataset.format == "HELM run" and str(dataset.scores.iloc[0]["domain"]) == "philosophy"


def test_newest_run_of_a_model_and_domain_wins(tmp_path):
    old = tmp_path / "suite_v1" / MMLU.name
    new = tmp_path / "suite_v2" / MMLU.name
    shutil.copytree(MMLU, old)
    shutil.copytree(MMLU, new)
    state = load(new / "scenario_state.json")
    for request in state["request_states"]:  # the newer run, a day later, answers everything right
        request["result"]["request_datetime"] += 86400
        correct = next(r["output"]["text"] for r in request["instance"]["references"] if "correct" in r["tags"])
        key = next(letter for letter, text in request["output_mapping"].items() if text == correct)
        request["result"]["completions"][0]["text"] = f" {key}"
    (new / "scenario_state.json").write_text(json.dumps(state))
    stats = load(new / "per_instance_stats.json")
    for instance in stats:
        for stat in instance["stats"]:
            if stat["name"]["name"] == "exact_match":
                stat["mean"] = 1.0
    (new / "per_instance_stats.json").write_text(json.dumps(stats))
    dataset = jagged.load(tmp_path)
    assert dataset.scores.iloc[0]["score"] == 1.0
    assert dataset.details["superseded"] == [f"{MMLU.name} (openai/gpt2, philosophy) superseded by {MMLU.name}"]
    os.utime(old / "run_spec.json")
    assert jagged.load(tmp_path).scores.iloc[0]["score"] == 1.0  # request times decide, not file times


def test_broken_runs_are_one_line_errors(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(MMLU, run)
    spec = load(run / "run_spec.json")
    spec["adapter_spec"].pop("model")
    (run / "run_spec.json").write_text(json.dumps(spec))
    assert_bad_input("validate", run, fragments=("run/run_spec.json", "adapter_spec.model", "--model-name"))
    assert jagged.load(run, model_name="gpt2").scores.iloc[0]["model"] == "gpt2"
    stats = load(MMLU / "per_instance_stats.json")
    stats[0]["stats"] = [dict(s, mean=3.0) if s["name"]["name"] == "exact_match" else s for s in stats[0]["stats"]]
    shutil.copy(MMLU / "run_spec.json", run / "run_spec.json")
    (run / "per_instance_stats.json").write_text(json.dumps(stats))
    assert_bad_input("validate", run, fragments=("per_instance_stats.json", "id147", "not a score in [0, 1]"))


@pytest.mark.parametrize("name, scenario, args", [
    ("mmlu:subject=philosophy,method=multiple_choice_joint,model=openai_gpt2", "mmlu",
     {"subject": "philosophy", "method": "multiple_choice_joint", "model": "openai_gpt2"}),
    ("narrative_qa:model=openai_gpt2", "narrative_qa", {"model": "openai_gpt2"}),
    ("boolq", "boolq", {}),
])
def test_run_names(name, scenario, args):
    assert parse_run_name(name) == (scenario, args)


def test_run_folders_are_found_below_a_suite():
    found = jagged.load(RUNS).paths  # a suite: every run folder below it
    assert sorted(p.parent.name for p in found) == sorted(p.name for p in (MMLU, HELLASWAG, NARRATIVE))
    assert jagged.load(MMLU).paths == [MMLU / "per_instance_stats.json"]


# --- damaged run folders: a Dataset or one line of error ------------------------------------------

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from json_damage import JSON_VALUES, slots  # noqa: E402

FILES = ("run_spec.json", "per_instance_stats.json", "scenario_state.json")


@st.composite
def damaged_run(draw):
    doc = {name: load(MMLU / name) for name in FILES}
    doc["per_instance_stats.json"] = doc["per_instance_stats.json"][:3]
    doc["scenario_state.json"]["request_states"] = doc["scenario_state.json"]["request_states"][:3]
    for _ in range(draw(st.integers(1, 4))):
        container, key = draw(st.sampled_from([s for s in slots(doc) if s[0] is not doc]))
        if draw(st.booleans()):
            container[key] = draw(JSON_VALUES)
        else:
            del container[key]
    return doc


@seed(20261303)
@settings(max_examples=120, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(doc=damaged_run())
def test_fuzz_damaged_run_folders(tmp_path, doc):
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    for name, content in doc.items():
        (run / name).write_text(json.dumps(content))
    try:
        dataset = jagged.load(run)
    except JaggedInputError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert ((dataset.scores["score"] >= 0) & (dataset.scores["score"] <= 1)).all()


# --- question text and options (issue 19: look at the items) ------------------------------


def test_instances_keep_their_input_and_the_options_in_letter_order():
    state = load(MMLU / "scenario_state.json")
    items = jagged.load(MMLU).items.set_index("item")
    row = items.loc["id147"]
    assert row["text"] == "What does the notion of “meaning in life” refer to?"
    assert json.loads(row["options"]) == ["external meaning", "god's plan", "internalmeaning",
                                          "meaning in an afterlife"] and row["key"] == "C"
    for request in state["request_states"]:  # every instance: its input, and the options by letter
        iid = request["instance"]["id"]
        if iid in items.index:
            mapping = request["output_mapping"]
            assert items.loc[iid, "text"] == request["instance"]["input"]["text"].strip()
            assert json.loads(items.loc[iid, "options"]) == [mapping[k].strip() for k in sorted(mapping)]
    narrative = jagged.load(NARRATIVE).items
    assert narrative["text"].str.startswith("Olive Penderghast").any() and narrative["options"].isna().all()
    assert narrative["text"].str.len().max() <= 4_000
