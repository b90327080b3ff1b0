"""lm-evaluation-harness results and samples: real files from tests/data/lmeval and variants."""

from __future__ import annotations

import io
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import assert_bad_input, run_cli

import jagged
from jagged.analysis import AnalysisOptions, metrics_table
from jagged.errors import JaggedInputError, JaggedWarning

MMLU_CATEGORIES = {"mmlu_humanities", "mmlu_other", "mmlu_social_sciences", "mmlu_stem"}


# --- an independent reading of a results file -------------------------------------------


def _parsed(path):
    """A samples file as the registry recognises it."""
    from jagged.readers.reader import Head
    from jagged.readers.registry import parse

    return parse(Head(path, "json"))


def independent_leaves(doc: dict, task: str) -> dict[str, list[str]]:
    """Leaf -> group path, by walking group_subtasks (written separately from jagged.readers.lmeval)."""
    subtasks = doc["group_subtasks"]
    out: dict[str, list[str]] = {}
    stack = [(task, [task])]
    while stack:
        node, path = stack.pop()
        kids = subtasks.get(node, [])
        if kids:
            stack.extend((kid, path + [kid]) for kid in kids)
        else:
            out[node] = path
    return out


def independent_scores(doc: dict, task: str, metric: str) -> dict[str, float]:
    """Leaf -> value of the only key ``metric,<filter>`` of its row."""
    scores = {}
    for leaf in independent_leaves(doc, task):
        keys = [k for k in doc["results"][leaf] if k.split(",")[0] == metric]
        assert len(keys) == 1, (leaf, keys)
        scores[leaf] = doc["results"][leaf][keys[0]]
    return scores


# file-name fragment -> (task, metric name, limited?)
REAL_RESULTS = {
    "Llama-3.1-8B__results": ("mmlu", "acc", False),
    "Qwen2.5-1.5B__results": ("mmlu", "acc", False),
    "Llama-3.2-1B__results": ("mmlu", "acc", False),
    "deprecated__results": ("leaderboard_bbh", "exact_match", True),
    "upstage__SOLAR": ("leaderboard_math_hard", "exact_match", False),
    "result_SM__VFROOT": ("leaderboard_gpqa", "exact_match", True),
    "nc-chat_241016__results_2024-12-23": ("leaderboard_mmlu_pro", "exact_match", True),
}


def real_file(shared_data: Path, fragment: str) -> Path:
    found = [p for p in (shared_data / "lmeval").glob("*.json") if fragment in p.name]
    assert len(found) == 1, (fragment, found)
    return found[0]


@pytest.fixture
def lmeval_dir(shared_data: Path) -> Path:
    return shared_data / "lmeval"


@pytest.mark.parametrize("fragment", sorted(REAL_RESULTS))
def test_real_results_per_leaf_scores_and_macro(shared_data, fragment):
    path = real_file(shared_data, fragment)
    task, metric, _ = REAL_RESULTS[fragment]
    doc = json.loads(path.read_text())
    expected = independent_scores(doc, task, metric)
    dataset = jagged.load(path, task=task)
    got = dict(zip(dataset.scores["domain"], dataset.scores["score"]))
    assert got == pytest.approx(expected, rel=0, abs=0)
    assert dataset.format == "lm-eval results"
    assert set(dataset.scores["model"]) == {doc["model_name"]}
    n_samples = doc["n-samples"]
    assert dict(zip(dataset.scores["domain"], dataset.scores["n_items"])) == {
        leaf: n_samples[leaf]["effective"] for leaf in expected}
    code, out, err = run_cli("metrics", path, "--task", task)
    if len(expected) < 2:  # leaderboard_mmlu_pro is a single task: no CV
        assert code == 2 and "at least 2 domains" in err
        return
    assert code == 0, err
    table = pd.read_csv(io.StringIO(out))
    assert table.loc[0, "macro_score"] == pytest.approx(np.mean(list(expected.values())), rel=1e-12)
    assert table.loc[0, "n_domains"] == len(expected)


@pytest.mark.parametrize("fragment", ["Llama-3.1-8B__results", "Qwen2.5-1.5B__results", "Llama-3.2-1B__results"])
def test_mmlu_has_57_leaves_in_4_categories(shared_data, fragment):
    path = real_file(shared_data, fragment)
    doc = json.loads(path.read_text())
    dataset = jagged.load(path, task="mmlu")
    scores = dataset.scores
    assert len(scores) == 57 and scores["domain"].nunique() == 57
    assert set(scores["category"]) == MMLU_CATEGORIES
    per_category = scores.groupby("category")["domain"].apply(set).to_dict()
    assert per_category == {g: set(doc["group_subtasks"][g]) for g in MMLU_CATEGORIES}
    # group rows are never domains
    assert not set(scores["domain"]) & ({"mmlu"} | MMLU_CATEGORIES)
    assert dataset.details["group paths"]["mmlu_anatomy"] == "mmlu/mmlu_stem/mmlu_anatomy"
    assert dataset.details["metric"] == "acc,none"


@pytest.mark.parametrize("fragment", ["Llama-3.1-8B__results", "Qwen2.5-1.5B__results", "Llama-3.2-1B__results"])
def test_items_profile_reproduces_the_size_weighted_mmlu_group(shared_data, fragment):
    path = real_file(shared_data, fragment)
    doc = json.loads(path.read_text())
    group_value = doc["results"]["mmlu"]["acc,none"]
    dataset = jagged.load(path, task="mmlu")
    # independent: weights proportional to n-samples.effective
    leaves = independent_leaves(doc, "mmlu")
    n = np.array([doc["n-samples"][leaf]["effective"] for leaf in leaves], dtype=float)
    s = np.array([doc["results"][leaf]["acc,none"] for leaf in leaves])
    assert float(n @ s / n.sum()) == pytest.approx(group_value, abs=1e-12)
    table = metrics_table(dataset, AnalysisOptions(profiles=("items",)))
    row = table[table["profile"] == "items"].iloc[0]
    assert abs(row["dep_score"] - group_value) < 1e-6
    # and the macro score is not the group value (the file's group is size-weighted)
    assert abs(row["macro_score"] - group_value) > 1e-3


@pytest.mark.parametrize("fragment", sorted(REAL_RESULTS))
def test_limit_runs_are_flagged(shared_data, fragment):
    path = real_file(shared_data, fragment)
    task, _, limited = REAL_RESULTS[fragment]
    doc = json.loads(path.read_text())
    dataset = jagged.load(path, task=task)
    model = doc["model_name"]
    if limited:
        limit = doc["config"]["limit"]
        assert f"--limit {limit:g}" in dataset.model_notes[model]
        eff = sum(v["effective"] for v in doc["n-samples"].values())
        orig = sum(v["original"] for v in doc["n-samples"].values())
        assert f"{eff} of {orig} items" in dataset.model_notes[model]
        assert f"--limit {limit:g}" in dataset.details["limit"][0]
        if len(dataset.scores) >= 2:
            code, out, err = run_cli("metrics", path, "--task", task)
            assert "--limit" in pd.read_csv(io.StringIO(out)).loc[0, "note"]
    else:
        assert model not in dataset.model_notes
        assert dataset.details["limit"] == "none"


def test_bbh_uses_each_leafs_own_filter(shared_data):
    path = real_file(shared_data, "deprecated__results")
    dataset = jagged.load(path)  # one top-level group: no --task needed
    assert dataset.details["task"] == "leaderboard_bbh"
    assert dataset.details["metric"] == "exact_match (filter none for 7 leaves, get-answer for 17 leaves)"
    assert len(dataset.scores) == 24
    # the " " group row is not a domain, and there is no sub-group: no categories
    assert "leaderboard_bbh" not in set(dataset.scores["domain"])
    assert dataset.scores["category"].isna().all()


def test_validate_reports_format_task_metric_models_leaves_limit(shared_data):
    path = real_file(shared_data, "result_SM__VFROOT")
    code, out, err = run_cli("validate", path)
    assert code == 0, err
    for fragment in ("lm-eval results format", "task: leaderboard_gpqa", "metric: exact_match,get-answer",
                     "llama3.1-pro16-0827-Inst-nc-chat_241016", "leaves: 3 (leaderboard_gpqa_diamond",
                     "limit: lm-eval --limit 2: 6 of 1192 items scored"):
        assert fragment in out, out


def test_folder_of_real_files_needs_a_task_and_lists_groups(lmeval_dir):
    line = assert_bad_input("metrics", lmeval_dir, fragments=("mmlu (57 leaves)", "leaderboard_bbh (24 leaves)",
                                                              "--task"))
    assert "arc_easy" in line


def test_folder_of_real_files_with_task_reads_three_models(lmeval_dir):
    dataset = jagged.load(lmeval_dir, task="mmlu")
    assert sorted(dataset.scores["model"].unique()) == [
        "Qwen/Qwen2.5-1.5B", "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.2-1B"]
    assert len(dataset.scores) == 3 * 57
    assert len(dataset.paths) == 3
    unused = " ".join(dataset.details["not used"])
    assert "no task mmlu" in unused and "lm-eval samples" in unused


def test_unknown_task_lists_what_the_file_holds(shared_data):
    path = real_file(shared_data, "Qwen2.5-1.5B__results")
    assert_bad_input("metrics", path, "--task", "mmlu_pro", fragments=("no task or group 'mmlu_pro'", "mmlu (57"))


def test_several_tasks_comma_separated(shared_data):
    path = real_file(shared_data, "Qwen2.5-1.5B__results")
    dataset = jagged.load(path, task="mmlu,arc_easy,arc_challenge")
    assert len(dataset.scores) == 59
    cats = dict(zip(dataset.scores["domain"], dataset.scores["category"]))
    assert cats["mmlu_anatomy"] == "mmlu_stem"
    assert cats["arc_easy"] == "arc_easy"  # a stand-alone task is a category of its own


# --- samples -----------------------------------------------------------------------------


def samples_file(shared_data: Path, fragment: str) -> Path:
    found = [p for p in (shared_data / "lmeval").glob("*.jsonl") if fragment in p.name]
    assert len(found) == 1, (fragment, found)
    return found[0]


def test_mmlu_pro_samples_aggregate_to_the_results_score(shared_data):
    samples = samples_file(shared_data, "samples_leaderboard_mmlu_pro")
    results = json.loads(real_file(shared_data, "nc-chat_241016__results_2024-12-23").read_text())
    expected = results["results"]["leaderboard_mmlu_pro"]["exact_match,get-answer"]
    records = [json.loads(line) for line in samples.read_text().splitlines() if line.strip()]
    # the item-level table, checked independently of the aggregation
    from jagged.readers.lmeval import read_samples

    read = read_samples([_parsed(samples)], source=samples.name)
    assert list(read.items["correct"]) == [r["exact_match"] for r in records]
    assert list(read.items["item"]) == [str(r["doc_id"]) for r in records]
    assert set(read.items["domain"]) == {"leaderboard_mmlu_pro"}
    # aggregated
    dataset = jagged.load(samples)
    assert dataset.format == "lm-eval samples"
    assert dataset.items is not None and len(dataset.items) == 30
    row = dataset.scores.iloc[0]
    assert row["score"] == pytest.approx(expected, abs=1e-12)
    assert row["n_items"] == results["n-samples"]["leaderboard_mmlu_pro"]["effective"] == 30
    assert row["model"] == results["model_name"]  # from the results file of the same run
    assert "--limit 30" in dataset.model_notes[row["model"]]


@pytest.mark.parametrize("fragment, results_fragment, leaf", [
    ("samples_leaderboard_bbh_boolean", "deprecated__results", "leaderboard_bbh_boolean_expressions"),
    ("samples_leaderboard_gpqa_diamond", "result_SM__VFROOT", "leaderboard_gpqa_diamond"),
])
def test_other_samples_match_their_results_leaf(shared_data, fragment, results_fragment, leaf):
    results = json.loads(real_file(shared_data, results_fragment).read_text())
    row = results["results"][leaf]
    expected = next(v for k, v in row.items() if k.startswith("exact_match,"))
    dataset = jagged.load(samples_file(shared_data, fragment))
    assert dataset.scores.iloc[0]["score"] == pytest.approx(expected, abs=1e-12)
    assert dataset.scores.iloc[0]["domain"] == leaf


def test_samples_domain_key_from_doc(shared_data):
    samples = samples_file(shared_data, "samples_leaderboard_mmlu_pro")
    records = [json.loads(line) for line in samples.read_text().splitlines() if line.strip()]
    dataset = jagged.load(samples, domain_key="category")
    expected = pd.Series([r["exact_match"] for r in records]).groupby([r["doc"]["category"] for r in records]).mean()
    got = dict(zip(dataset.scores["domain"].astype(str), dataset.scores["score"]))
    assert got == pytest.approx(expected.to_dict())
    line = assert_bad_input("metrics", samples, "--domain-key", "subject", fragments=("no key 'subject'", "category"))
    assert "question_id" in line


def test_samples_without_a_results_file_need_a_model_name(shared_data):
    old = samples_file(shared_data, "pythia-2.8b_winogrande")
    assert_bad_input("validate", old, fragments=("--model-name",))
    dataset = jagged.load(old, model_name="pythia-2.8b", task="winogrande")
    assert dataset.scores.iloc[0]["domain"] == "winogrande"
    records = [json.loads(line) for line in old.read_text().splitlines() if line.strip()]
    assert dataset.scores.iloc[0]["score"] == pytest.approx(np.mean([r["acc"] for r in records]))
    assert dataset.details["metric"] == "acc"


# --- synthetic variants ------------------------------------------------------------------


def results_doc(groups: dict[str, dict[str, float]], *, model: str = "org/model-a", date: float | None = 1.7e9,
                n: dict[str, tuple[int, int]] | None = None, hib: bool = True, metric: str = "acc,none",
                group_rows: str = "metrics", limit: float | None = None) -> dict:
    """A minimal lm-eval 0.4.x results document: top group 'suite' over the given groups."""
    results: dict[str, dict] = {}
    subtasks: dict[str, list[str]] = {}
    name = metric.split(",")[0]
    filt = metric.split(",")[1]
    results["suite"] = {" ": " ", "alias": "suite"} if group_rows == "blank" else {metric: 0.5, "alias": "suite"}
    for group, leaves in groups.items():
        results[group] = {" ": " ", "alias": f" - {group}"} if group_rows == "blank" else {
            metric: 0.5, f"{name}_stderr,{filt}": "N/A", "alias": f" - {group}"}
        subtasks[group] = list(leaves)
        for leaf, value in leaves.items():
            results[leaf] = {"alias": f"  - {leaf}", metric: value, f"{name}_stderr,{filt}": "N/A"}
    subtasks["suite"] = list(groups)
    doc = {"results": results, "group_subtasks": subtasks, "configs": {}, "versions": {},
           "config": {"model": "hf", "model_args": f"pretrained={model},dtype=bfloat16", "limit": limit},
           "model_name": model}
    if date is not None:
        doc["date"] = date
    if hib:
        doc["higher_is_better"] = {k: {name: True} for k in results}
    if n is not None:
        doc["n-samples"] = {leaf: {"original": o, "effective": e} for leaf, (o, e) in n.items()}
    return doc


GROUPS = {"g_math": {"t_algebra": 0.8, "t_geometry": 0.6}, "g_lang": {"t_french": 0.9, "t_german": 0.3,
                                                                       "t_latin": 0.45}}


def write_json(path: Path, doc: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_na_stderr_and_blank_group_rows(tmp_path):
    path = write_json(tmp_path / "results_2025-01-01T00-00-00.000001.json", results_doc(GROUPS, group_rows="blank"))
    dataset = jagged.load(path)
    assert dict(zip(dataset.scores["domain"], dataset.scores["score"])) == {
        leaf: v for leaves in GROUPS.values() for leaf, v in leaves.items()}
    assert dict(zip(dataset.scores["domain"], dataset.scores["category"]))["t_latin"] == "g_lang"


def test_group_rows_with_metrics_are_never_averaged_in(tmp_path):
    path = write_json(tmp_path / "r.json", results_doc(GROUPS))
    dataset = jagged.load(path)
    assert set(dataset.scores["domain"]) == {"t_algebra", "t_geometry", "t_french", "t_german", "t_latin"}
    code, out, err = run_cli("metrics", path)
    assert pd.read_csv(io.StringIO(out)).loc[0, "macro_score"] == pytest.approx(np.mean([0.8, 0.6, 0.9, 0.3, 0.45]))


def test_nan_literals_leave_the_leaf_out_with_a_warning(tmp_path):
    text = json.dumps(results_doc(GROUPS), indent=2).replace('"acc,none": 0.3', '"acc,none": NaN')
    assert "NaN" in text
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.warns(JaggedWarning, match=r"1 leaf without a usable 'acc' value left out: t_german \(nan\)"):
        dataset = jagged.load(path)
    assert "t_german" not in set(dataset.scores["domain"]) and len(dataset.scores) == 4
    assert dataset.details["left out"] == ["t_german (nan)"]
    code, out, err = run_cli("metrics", path)
    assert code == 0 and "warning" in err and "t_german" in err


def test_missing_n_samples_gives_unknown_item_counts(tmp_path):
    path = write_json(tmp_path / "r.json", results_doc(GROUPS))
    dataset = jagged.load(path)
    assert dataset.scores["n_items"].isna().all()
    assert dataset.details["limit"] == "unknown (no n-samples)"


def test_n_samples_give_item_counts_and_limit_flags(tmp_path):
    n = {"t_algebra": (100, 10), "t_geometry": (50, 10), "t_french": (10, 10), "t_german": (30, 10),
         "t_latin": (40, 10)}
    path = write_json(tmp_path / "r.json", results_doc(GROUPS, n=n, limit=10))
    dataset = jagged.load(path)
    assert set(dataset.scores["n_items"]) == {10.0}
    assert dataset.model_notes["org/model-a"] == "lm-eval --limit 10: 50 of 230 items scored"
    # effective < original without config.limit is flagged too
    path = write_json(tmp_path / "r2.json", results_doc(GROUPS, n=n, model="org/model-b"))
    assert "subset: 50 of 230" in jagged.load(path).model_notes["org/model-b"]


def test_missing_higher_is_better(tmp_path):
    path = write_json(tmp_path / "r.json", results_doc(GROUPS, hib=False, metric="exact_match,none"))
    dataset = jagged.load(path)  # the only metric is used
    assert dataset.details["metric"] == "exact_match,none"
    doc = results_doc(GROUPS, hib=False, metric="exact_match,none")
    for leaves in GROUPS.values():
        for leaf in leaves:
            doc["results"][leaf]["f1,none"] = 0.5
    path = write_json(tmp_path / "r2.json", doc)
    assert_bad_input("metrics", path, fragments=("several metrics", "exact_match", "f1", "--metric"))
    assert jagged.load(path, metric="f1").details["metric"] == "f1,none"


def test_metric_marked_lower_is_better_is_refused(tmp_path):
    doc = results_doc(GROUPS)
    for leaves in GROUPS.values():
        for leaf in leaves:
            doc["results"][leaf]["perplexity,none"] = 12.5
            doc["higher_is_better"][leaf]["perplexity"] = False
    path = write_json(tmp_path / "r.json", doc)
    assert_bad_input("metrics", path, "--metric", "perplexity",
                     fragments=("'perplexity' is marked higher_is_better: false", "r.json"))
    assert_bad_input("metrics", path, "--metric", "bleu", fragments=("metric 'bleu' not found", "acc,none"))


def test_metric_outside_unit_interval_is_refused(tmp_path):
    doc = results_doc(GROUPS, hib=False, metric="mcc,none")
    doc["results"]["t_german"]["mcc,none"] = -0.02
    path = write_json(tmp_path / "r.json", doc)
    assert_bad_input("metrics", path, fragments=("'mcc,none' of 't_german' is -0.02, outside [0, 1]",))


def test_two_groups_and_no_task_lists_the_groups(tmp_path):
    doc = results_doc(GROUPS)
    other = results_doc({"h_x": {"u_1": 0.5, "u_2": 0.7}})
    other["results"]["suite2"] = other["results"].pop("suite")
    other["group_subtasks"]["suite2"] = other["group_subtasks"].pop("suite")
    doc["results"].update(other["results"])
    doc["group_subtasks"].update(other["group_subtasks"])
    path = write_json(tmp_path / "r.json", doc)
    assert_bad_input("metrics", path, fragments=("holds 2 top-level tasks/groups: suite (5 leaves), suite2 (2 leaves)",
                                                 "--task"))
    assert len(jagged.load(path, task="suite2").scores) == 2
    assert len(jagged.load(path, task="g_lang").scores) == 3


def test_model_name_from_model_args_and_override(tmp_path):
    doc = results_doc(GROUPS, model="org/from-args")
    del doc["model_name"]
    path = write_json(tmp_path / "r.json", doc)
    assert set(jagged.load(path).scores["model"]) == {"org/from-args"}
    assert set(jagged.load(path, model_name="mine").scores["model"]) == {"mine"}
    del doc["config"]["model_args"]
    path = write_json(tmp_path / "r2.json", doc)
    assert_bad_input("metrics", path, fragments=("no model name", "--model-name"))


def test_structure_from_aliases_without_group_subtasks(tmp_path):
    doc = results_doc(GROUPS)
    del doc["group_subtasks"]
    path = write_json(tmp_path / "r.json", doc)
    dataset = jagged.load(path)
    assert dict(zip(dataset.scores["domain"], dataset.scores["category"]))["t_algebra"] == "g_math"
    assert len(dataset.scores) == 5
    assert "alias" in dataset.details["structure"]


def test_directory_with_two_runs_of_one_model_newest_wins(tmp_path):
    old = results_doc(GROUPS, date=1.70e9)
    new_groups = {g: {leaf: round(v / 2, 3) for leaf, v in leaves.items()} for g, leaves in GROUPS.items()}
    new = results_doc(new_groups, date=1.71e9)
    other = results_doc(GROUPS, model="org/model-b", date=1.60e9)
    write_json(tmp_path / "out" / "org__model-a" / "results_2023-11-14T22-13-20.000000.json", old)
    write_json(tmp_path / "out" / "org__model-a" / "results_2024-03-09T16-00-00.000000.json", new)
    write_json(tmp_path / "out" / "org__model-b" / "results_2020-09-13T12-26-40.000000.json", other)
    dataset = jagged.load(tmp_path / "out")
    a = dataset.scores[dataset.scores["model"] == "org/model-a"]
    assert dict(zip(a["domain"], a["score"])) == {leaf: v for leaves in new_groups.values()
                                                  for leaf, v in leaves.items()}
    superseded = dataset.details["superseded"]
    assert len(superseded) == 1
    assert superseded[0].startswith("results_2023-11-14T22-13-20.000000.json (org/model-a, task suite")
    assert "superseded by results_2024-03-09T16-00-00.000000.json" in superseded[0]
    assert len(dataset.paths) == 2
    code, out, err = run_cli("validate", tmp_path / "out")
    assert "superseded: results_2023-11-14T22-13-20.000000.json" in out


def test_file_name_timestamp_when_date_is_missing(tmp_path):
    old = results_doc(GROUPS, date=None)
    new = results_doc({g: {leaf: 0.1 for leaf in leaves} for g, leaves in GROUPS.items()}, date=None)
    # names sort the other way round from their timestamps' order is impossible; use folders
    write_json(tmp_path / "b" / "results_2024-01-01T00-00-00.000000.json", old)
    write_json(tmp_path / "a" / "results_2024-06-01T00-00-00.000000.json", new)
    dataset = jagged.load(tmp_path)
    assert set(dataset.scores["score"]) == {0.1}


def test_json_that_is_no_evaluator_output(tmp_path):
    path = write_json(tmp_path / "x.json", {"hello": 1, "world": [1, 2]})
    assert_bad_input("metrics", path, fragments=("not an evaluator output", "'hello'"))
    broken = tmp_path / "results_truncated.json"
    broken.write_text('{"results": {"a": {"acc,none": 0.5}')
    assert_bad_input("metrics", broken, fragments=("not valid JSON", "line 1"))


def test_folder_without_evaluator_outputs(tmp_path):
    write_json(tmp_path / "x.json", {"hello": 1})
    assert_bad_input("metrics", tmp_path, fragments=("no lm-eval or Inspect output found",))


def samples_lines(records: list[dict]) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def test_samples_folder_with_results_beside_them(tmp_path):
    stamp = "2025-01-01T00-00-00.000001"
    n = {leaf: (2, 2) for leaves in GROUPS.values() for leaf in leaves}
    doc = results_doc(GROUPS, n=n)
    run = tmp_path / "org__model-a"
    write_json(run / f"results_{stamp}.json", doc)
    for leaves in GROUPS.values():
        for leaf in leaves:
            (run / f"samples_{leaf}_{stamp}.jsonl").write_text(samples_lines(
                [{"doc_id": 0, "doc": {}, "target": "x", "acc": 1.0},
                 {"doc_id": 1, "doc": {}, "target": "y", "acc": 0.0}]))
    # a folder with results and samples uses the results
    assert jagged.load(tmp_path).format == "lm-eval results"
    # the samples alone
    only = tmp_path / "samples_only"
    only.mkdir()
    for path in run.glob("samples_*.jsonl"):
        (only / path.name).write_text(path.read_text())
    write_json(only / f"results_{stamp}.json", doc)
    from jagged.readers.lmeval import read_samples

    read = read_samples([_parsed(p) for p in sorted(only.glob("samples_*.jsonl"))], source="x")
    assert len(read.items) == 10
    assert set(read.items["item"]) >= {"t_algebra:0", "t_latin:1"}  # doc ids restart in every task
    assert read.categories["t_algebra"] == "g_math"
    assert set(read.items["model"]) == {"org/model-a"}


def test_samples_domain_key_splits_tasks_into_domains(tmp_path):
    stamp = "2025-01-01T00-00-00.000001"
    rows = {"t_one": [("algebra", 1), ("algebra", 0), ("poetry", 1)], "t_two": [("chess", 0), ("chess", 0)]}
    for task, docs in rows.items():
        (tmp_path / f"samples_{task}_{stamp}.jsonl").write_text(samples_lines(
            [{"doc_id": i, "doc": {"meta": {"subject": subj}}, "acc": float(ok)} for i, (subj, ok) in enumerate(docs)]))
    dataset = jagged.load(tmp_path, domain_key="meta.subject", model_name="m")
    got = {d: (s, n, c) for d, s, n, c in zip(dataset.scores["domain"].astype(str), dataset.scores["score"],
                                               dataset.scores["n_items"], dataset.scores["category"])}
    assert got == {"algebra": (0.5, 2, "t_one"), "poetry": (1.0, 1, "t_one"), "chess": (0.0, 2, "t_two")}


def test_samples_with_filters_and_non_item_metrics(tmp_path):
    records = []
    for doc_id, (strict, flexible) in enumerate([(1, 1), (0, 1), (0, 0)]):
        records.append({"doc_id": doc_id, "doc": {}, "filter": "strict-match", "metrics": ["exact_match"],
                        "exact_match": float(strict)})
        records.append({"doc_id": doc_id, "doc": {}, "filter": "flexible-extract", "metrics": ["exact_match"],
                        "exact_match": float(flexible)})
    path = tmp_path / "samples_gsm8k_2025-01-01T00-00-00.000001.jsonl"
    path.write_text(samples_lines(records))
    assert_bad_input("metrics", path, "--model-name", "m", fragments=("several filters", "strict-match"))
    from jagged.readers.lmeval import read_samples

    read = read_samples([_parsed(path)], source=path.name, model_name="m", metric="exact_match,flexible-extract")
    assert list(read.items["correct"]) == [1.0, 1.0, 0.0]
    bad = tmp_path / "samples_squad_2025-01-01T00-00-00.000001.jsonl"
    bad.write_text(samples_lines([{"doc_id": 0, "doc": {}, "f1": ["a", "b"]}]))
    assert_bad_input("metrics", bad, "--model-name", "m", "--metric", "f1", fragments=("not a per-item score",))


def test_cli_help_lists_the_evaluator_options():
    code, out, _ = run_cli("metrics", "--help")
    for option in ("--task", "--metric", "--model-name", "--domain-key", "--allow-incomplete"):
        assert option in out


def test_dataset_records_no_warnings_for_clean_real_files(shared_data):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jagged.load(real_file(shared_data, "Llama-3.1-8B__results"))
    assert not math.isnan(jagged.load(real_file(shared_data, "Llama-3.1-8B__results")).scores["score"].sum())


def test_python_api_errors_are_jagged_input_errors(tmp_path):
    path = write_json(tmp_path / "r.json", results_doc(GROUPS))
    with pytest.raises(JaggedInputError, match="no task or group 'nope'"):
        jagged.load(path, task="nope")


def test_damaged_file_in_a_folder_is_skipped_with_a_warning(tmp_path):
    write_json(tmp_path / "results_2025-01-01T00-00-00.000001.json", results_doc(GROUPS))
    (tmp_path / "results_2024-01-01T00-00-00.000001.json").write_text('{"results": {"t_a": {"acc,none": 0.5')
    with pytest.warns(JaggedWarning, match=r"1 damaged file\(s\) skipped: results_2024-01-01T00-00-00.000001.json"):
        dataset = jagged.load(tmp_path)
    assert len(dataset.scores) == 5
    assert any("not valid JSON" in entry for entry in dataset.details["not used"])


def test_limit_note_and_item_coverage_note_are_joined(shared_data):
    from jagged.text import merge_notes

    assert merge_notes({"m": "a", "n": ""}, {"m": "b", "n": "c", "o": "d"}) == {"m": "a; b", "n": "c", "o": "d"}


def test_evaluator_notes_for_the_report(shared_data, tmp_path):
    from jagged.views.summary import evaluator_notes

    notes = evaluator_notes(jagged.load(real_file(shared_data, "deprecated__results")))
    assert notes.to_dict("records") == [{"kind": "limited run (--limit)",
                                         "detail": "lm-eval --limit 10: 240 of 5761 items scored"}]
    assert evaluator_notes(jagged.load(real_file(shared_data, "Llama-3.1-8B__results"))).empty
    csv = tmp_path / "s.csv"
    csv.write_text("model,domain,score\nA,x,0.5\nA,y,0.6\n")
    assert evaluator_notes(jagged.load(csv)).empty


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(obj, list):
        for index, value in enumerate(obj[:3]):
            yield from _paths(value, prefix + (index,))


def test_corrupted_real_files_give_one_line_errors_or_valid_scores(shared_data, tmp_path):
    """Seeded structural corruption of the real files: never anything but JaggedInputError."""
    import copy
    import random

    sources = [json.loads(p.read_text()) for p in sorted((shared_data / "lmeval").glob("*.json"))]
    sources += [json.loads(p.read_text()) for p in sorted((shared_data / "inspect").glob("*.json"))]
    junk = [None, 1, -1, 2.5, "x", "N/A", [], {}, [1, 2], {"a\nb": 1}, True, float("nan"), " "]
    options = [{}, {"task": "mmlu"}, {"allow_incomplete": True}, {"metric": "acc"},
               {"domain_key": "label_confidence", "allow_incomplete": True}]
    rng = random.Random(20261129)
    for case in range(300):
        doc = copy.deepcopy(rng.choice(sources))
        spots = [p for p in _paths(doc) if p]
        for _ in range(rng.randint(1, 3)):
            spot = rng.choice(spots)
            try:
                parent = doc
                for key in spot[:-1]:
                    parent = parent[key]
                if rng.random() < 0.3 and isinstance(parent, dict):
                    del parent[spot[-1]]
                else:
                    parent[spot[-1]] = rng.choice(junk)
            except (KeyError, IndexError, TypeError):
                pass
        path = tmp_path / f"case{case % 7}.json"
        path.write_text(json.dumps(doc))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                dataset = jagged.load(path, **rng.choice(options))
        except JaggedInputError as exc:
            assert str(exc) and "\n" not in str(exc)
        else:
            assert dataset.scores["score"].between(0, 1).all()


# --- multiple-choice samples: choice and key for the item audit --------------------------

LMEVAL_CURRENT = Path(__file__).resolve().parent / "data" / "lmeval_current"


def _independent_answers(path: Path) -> pd.DataFrame:
    """doc_id, the argmax of the per-choice loglikelihoods (first of ties) and the target, read with json only."""
    rows = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        lls = [float(pair[0]) for pair in record["filtered_resps"]]
        rows.append({"item": str(record["doc_id"]), "choice": str(lls.index(max(lls))),
                     "key": str(int(record["target"])), "acc": float(record["acc"]), "n": len(lls)})
    return pd.DataFrame(rows)


def test_current_lmeval_multiple_choice_samples_give_choice_and_key():
    path = next(LMEVAL_CURRENT.glob("samples_toy_law_*.jsonl"))
    ds = jagged.load(path)
    items = ds.items.set_index("item")
    expected = _independent_answers(path).set_index("item")
    assert items.loc[expected.index, "choice"].tolist() == expected["choice"].tolist()
    assert items.loc[expected.index, "key"].tolist() == expected["key"].tolist()
    assert items.loc[expected.index, "n_options"].tolist() == expected["n"].astype(float).tolist()
    assert items.loc[expected.index, "correct"].tolist() == expected["acc"].tolist()
    assert "choices present (4 labels: 0, 1, 2, 3" in ds.details["choices"]


def test_samples_folder_of_four_subjects_feeds_the_item_audit(tmp_path):
    from jagged.stats.item_audit import audit_items

    for path in LMEVAL_CURRENT.glob("samples_*.jsonl"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    audit = audit_items(jagged.load(tmp_path, model_name="dummy"))
    assert len(audit.items) == 100 and audit.items["n_options"].eq(4).all()
    assert audit.items["top_wrong"].notna().any()
    assert any("only 1 models" in n for n in audit.notes)  # one model: no discrimination flags


def test_samples_without_choice_information_keep_correctness_only(shared_data, tmp_path):
    winogrande = next((shared_data / "lmeval").glob("*winogrande.jsonl"))  # target is the shared continuation
    ds = jagged.load(winogrande, model_name="pythia")
    assert "choice" not in ds.items.columns and "no choice or key columns" in ds.details["choices"]
    # a record whose argmax does not reproduce its acc: the file keeps correctness only
    path = next(LMEVAL_CURRENT.glob("samples_toy_law_*.jsonl"))
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["acc"] = 1.0 - float(first["acc"])
    changed = tmp_path / path.name
    changed.write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n")
    (tmp_path / next(LMEVAL_CURRENT.glob("results_*.json")).name).write_bytes(
        next(LMEVAL_CURRENT.glob("results_*.json")).read_bytes())
    ds = jagged.load(changed)
    assert "choice" not in ds.items.columns


def test_acc_norm_divides_by_the_choice_lengths():
    from jagged.readers.lmeval import lmeval_choices

    record = {"filtered_resps": [["-3.0", "False"], ["-4.0", "False"]], "target": "1", "acc_norm": 1.0,
              "arguments": {"gen_args_0": {"arg_0": "q", "arg_1": " no"},
                            "gen_args_1": {"arg_0": "q", "arg_1": " a much longer answer"}}}
    columns, reason = lmeval_choices([record], "acc_norm")  # -3/3 = -1 < -4/21
    assert reason == "" and columns == {"choice": ["1"], "key": ["1"], "n_options": [2]}
    columns, reason = lmeval_choices([record], "exact_match")
    assert columns is None and "not a multiple-choice accuracy" in reason


def test_results_with_and_without_n_samples_mixed_keep_the_counts_they_have(tmp_path):
    from conftest import TEST_DATA

    source = sorted((TEST_DATA / "lmeval_current").glob("results_*.json"))[0]
    doc = json.loads(source.read_text())
    counts = {task: entry["effective"] for task, entry in doc["n-samples"].items()}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / source.name).write_text(json.dumps({**doc, "model_name": "with-counts"}))
    blind = {k: v for k, v in doc.items() if k != "n-samples"}
    (tmp_path / "b" / source.name).write_text(json.dumps({**blind, "model_name": "without-counts"}))
    dataset = jagged.load(tmp_path)
    scores = dataset.scores.astype({"model": str, "domain": str})
    with_counts = scores[scores["model"] == "with-counts"]
    assert with_counts["n_items"].tolist() == with_counts["domain"].map(counts).astype(float).tolist()
    assert scores.loc[scores["model"] == "without-counts", "n_items"].isna().all()
    assert "unknown in results_" in dataset.details["limit"] and "(without-counts)" in dataset.details["limit"]
    code, out, err = run_cli("validate", tmp_path)
    assert code == 0 and "item counts (n_items) for 4 of 8 scores, none for 'without-counts'" in out, err


# --- question text and options (issue 19: look at the items) ------------------------------


def test_samples_keep_the_question_and_options_of_a_known_item(shared_data):
    samples = samples_file(shared_data, "samples_leaderboard_mmlu_pro")
    records = [json.loads(line) for line in samples.read_text().splitlines() if line.strip()]
    items = jagged.load(samples).items.set_index("item")
    first = records[0]
    assert first["doc"]["question_id"] == 70  # MMLU-Pro question 70, as in the bundled text file
    row = items.loc[str(first["doc_id"])]
    assert row["text"].startswith("Typical advertising regulatory bodies suggest, for example that adverts must not")
    assert json.loads(row["options"]) == first["doc"]["options"] and len(json.loads(row["options"])) == 9
    for record in records:  # every item: the doc's own question and option list, as read by json
        got = items.loc[str(record["doc_id"])]
        assert got["text"] == record["doc"]["question"].strip()
        assert json.loads(got["options"]) == [o.strip() for o in record["doc"]["options"]]


def test_samples_text_from_other_doc_shapes(shared_data):
    bbh = jagged.load(samples_file(shared_data, "samples_leaderboard_bbh_boolean")).items
    assert bbh.set_index("item").loc["0", "text"] == "not ( True ) and ( True ) is"
    assert bbh["options"].isna().all()  # generation task: no option list
    wino = jagged.load(samples_file(shared_data, "pythia-2.8b_winogrande"), model_name="pythia-2.8b").items
    row = wino.set_index("item").loc["0"]
    assert row["text"] == "Sarah was a much better surgeon than Maria so _ always got the easier cases."
    assert json.loads(row["options"]) == ["Sarah", "Maria"]  # option1, option2


def test_samples_options_from_the_loglikelihood_requests_when_the_doc_has_none(tmp_path):
    from jagged.readers.lmeval import doc_text

    record = {"doc_id": 0, "doc": {"stem": "no known key"},
              "arguments": {"gen_args_0": {"arg_0": "Q: 2+2?\nA:", "arg_1": " 4"},
                            "gen_args_1": {"arg_0": "Q: 2+2?\nA:", "arg_1": " 5"}}}
    assert doc_text(record) == ("Q: 2+2?\nA:", '["4", "5"]')
    huge = {"doc_id": 1, "doc": {"question": "<script>alert(1)</script>" + "x" * 1_000_000}}
    text, options = doc_text(huge)
    assert len(text) == 4_000 and text.endswith("…") and text.startswith("<script>") and options is None
