"""Every Eval Ever: aggregate files (schema 0.1, 0.2, 0.3), collections, instance-level files.

The real files are in tests/data/eee (a subset of the shared development set, with its
provenance); expected numbers are recomputed here from the JSON by hand.
"""

from __future__ import annotations

import copy
import io
import json
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest
from clitools import assert_bad_input, run_cli
from conftest import TEST_DATA

import jagged
from jagged.errors import JaggedInputError, JaggedWarning
from jagged.readers.eee_samples import read_samples
from jagged.readers.reader import Head, newest
from jagged.readers.registry import parse

EEE = TEST_DATA / "eee"
HELM_MMLU = EEE / "data" / "helm_mmlu"
LEGACY = EEE / "legacy" / "7987bad4e" / "data" / "helm_mmlu"
GMMLU = EEE / "data" / "global-mmlu-lite"
NON_DOMAINS_02 = {"MMLU All Subjects", "Mean win rate"}


def files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json"))


def load_json(path: Path) -> dict:
    return json.loads(path.read_text())


def by_pair(dataset) -> dict[tuple[str, str], float]:
    s = dataset.scores
    return dict(zip(zip(s["model"].astype(str), s["domain"].astype(str)), s["score"]))


def write(path: Path, doc) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def aggregate(model: str, results: list[tuple[str, float]], *, retrieved: str = "1700000000", schema: str = "0.2.2",
              **config) -> dict:
    """A small aggregate file in the 0.2.2 shape of the real MMLU-Pro fixture."""
    cfg = {"lower_is_better": False, "score_type": "continuous", "min_score": 0.0, "max_score": 1.0, **config}
    return {"schema_version": schema, "evaluation_id": f"demo/{model}/{retrieved}", "retrieved_timestamp": retrieved,
            "source_metadata": {"source_name": "Demo Leaderboard", "source_type": "documentation",
                                "source_organization_name": "demo", "evaluator_relationship": "third_party"},
            "model_info": {"name": model, "id": model, "developer": model.split("/")[0]},
            "evaluation_results": [{"evaluation_name": name, "source_data": {"dataset_name": name, "source_type": "url",
                                                                              "url": ["https://example.invalid"]},
                                    "metric_config": dict(cfg), "score_details": {"score": score}}
                                   for name, score in results]}


# --- schema 0.2.0: HELM MMLU --------------------------------------------------------------


def test_helm_mmlu_collection_scores_equal_the_files():
    dataset = jagged.load(HELM_MMLU)
    assert dataset.format == "Every Eval Ever aggregate"
    got = by_pair(dataset)
    expected, items = {}, {}
    for path in files(HELM_MMLU):
        doc = load_json(path)
        model = doc["model_info"]["id"]
        for result in doc["evaluation_results"]:
            name = result["evaluation_name"]
            if name in NON_DOMAINS_02:
                continue
            expected[(model, name)] = result["score_details"]["score"]
            items[(model, name)] = result["score_details"]["details"][f"{name} - # eval"]["score"]
    assert len(expected) == 5 * 34 and got == pytest.approx(expected)
    # the model comes from model_info.id, not from the sanitised folder name
    assert ("amazon/nova-lite-v1:0", "Anatomy") in got
    # item counts: HELM's nested '# eval' statistic (College Physics keeps its own 102, not the merged subjects')
    n = dict(zip(zip(dataset.scores["model"].astype(str), dataset.scores["domain"].astype(str)),
                 dataset.scores["n_items"]))
    assert n == pytest.approx(items) and n[("01-ai/yi-34b", "College Physics")] == 102
    details = dataset.details
    assert details["collection"] == "helm_mmlu" and details["schema versions"] == "0.2.0 (5 files)"
    left_out = " | ".join(details["left out"])
    assert "aggregate row: 'MMLU All Subjects'" in left_out and "'Mean win rate'" in left_out
    assert "nested statistics" in details and details["metric"] == "EM"


def test_validate_names_format_collection_schema_and_what_was_left_out():
    code, out, err = run_cli("validate", HELM_MMLU)
    assert code == 0, err
    for fragment in ("Every Eval Ever aggregate format", "5 models in 34 domains", "collection: helm_mmlu",
                     "schema versions: 0.2.0 (5 files)", "left out: not a score (a win rate ranks models): "
                     "'Mean win rate'", "aggregate row: 'MMLU All Subjects'"):
        assert fragment in out, fragment


def test_metrics_macro_score_is_the_mean_of_the_subject_scores():
    code, out, err = run_cli("metrics", HELM_MMLU, "--bootstrap", "0")
    assert code == 0, err
    table = pd.read_csv(io.StringIO(out)).set_index("model")
    doc = load_json(files(HELM_MMLU / "01-ai")[0])
    subjects = [r["score_details"]["score"] for r in doc["evaluation_results"]
                if r["evaluation_name"] not in NON_DOMAINS_02]
    assert len(subjects) == 34
    assert table.loc["01-ai/yi-34b", "macro_score"] == pytest.approx(sum(subjects) / 34)


# --- schema 0.1.0: the legacy HELM MMLU with all 57 subjects --------------------------------


def test_legacy_schema_has_57_subjects_and_agrees_with_the_new_schema():
    old = jagged.load(LEGACY)
    assert old.details["schema versions"] == "0.1.0 (2 files)"
    assert old.scores.groupby("model", observed=True)["domain"].nunique().to_dict() == {
        "01-ai/yi-34b": 57, "meta/llama-3-8b": 57}
    doc = load_json(files(LEGACY / "01-ai")[0])
    results = {r["evaluation_name"]: r for r in doc["evaluation_results"]}
    got = by_pair(old)
    # the domain is the name without HELM's ' - EM' suffix; its score is the EM column's
    assert got[("01-ai/yi-34b", "High School Biology")] == results["High School Biology - EM"]["score_details"]["score"]
    n = old.scores.set_index(["model", "domain"])["n_items"]
    assert n[("01-ai/yi-34b", "Professional Law")] == results["Professional Law - # eval"]["score_details"]["score"]
    # surviving subjects of the 0.2.0 conversion carry the same scores
    new = by_pair(jagged.load(HELM_MMLU))
    shared = [(m, d) for (m, d) in new if (m, d) in got]
    assert len(shared) == 2 * 34 and all(new[k] == pytest.approx(got[k]) for k in shared)
    left_out = " | ".join(old.details["left out"])
    assert "lower is better: 'MMLU All Subjects - Observed inference time (s)'" in left_out
    assert "'Abstract Algebra - # eval'" in left_out and "aggregate row: 'MMLU All Subjects - EM'" in left_out


def test_newest_retrieved_timestamp_wins_across_schema_versions(tmp_path):
    store = tmp_path / "data" / "helm_mmlu" / "01-ai" / "yi-34b"
    store.mkdir(parents=True)
    new, old = files(HELM_MMLU / "01-ai")[0], files(LEGACY / "01-ai")[0]
    shutil.copy(new, store / new.name)
    shutil.copy(old, store / old.name)
    dataset = jagged.load(tmp_path)
    assert dataset.scores["domain"].nunique() == 34  # the 0.2.0 file (retrieved later) wins
    assert dataset.details["superseded"] == [
        f"{old.name} (01-ai/yi-34b, retrieved 2025-12-13 15:17:25 UTC) superseded by {new.name} "
        "(2026-02-11 18:52:17 UTC)"]
    assert dataset.details["schema versions"] == "0.1.0 (1 file), 0.2.0 (1 file)"
    code, out, err = run_cli("validate", tmp_path)
    assert "superseded: " + old.name in out


# --- Global-MMLU-Lite ----------------------------------------------------------------------


def test_global_mmlu_lite_languages_are_the_domains():
    dataset = jagged.load(GMMLU)
    assert dataset.scores["model"].nunique() == 24 and dataset.scores["domain"].nunique() == 16
    doc = load_json(files(GMMLU / "alibaba")[0])
    model = doc["model_info"]["id"]
    scores = {r["evaluation_name"]: r["score_details"]["score"] for r in doc["evaluation_results"]}
    got = by_pair(dataset)
    for language in ("Arabic", "Yoruba", "Burmese"):
        assert got[(model, language)] == scores[language]
    assert not any(d in set(dataset.scores["domain"].astype(str))
                   for d in ("Global MMLU Lite", "Culturally Sensitive", "Culturally Agnostic"))
    left_out = " | ".join(dataset.details["left out"])
    assert "named like the benchmark): 'Global MMLU Lite'" in left_out
    assert "'Culturally Sensitive', 'Culturally Agnostic'" in left_out
    assert dataset.details["item counts"] == "none in the files"


# --- datastore layout and --collection ------------------------------------------------------


def test_datastore_with_several_collections_needs_collection():
    line = assert_bad_input("metrics", EEE, fragments=("--collection NAME", "helm_mmlu (5 files)",
                                                       "global-mmlu-lite (24 files)"))
    assert "Every Eval Ever collections" in line
    assert_bad_input("structure", EEE / "data", fragments=("helm_mmlu (5 files)", "--collection"))


@pytest.mark.parametrize("folder", [EEE, EEE / "data"])
def test_validate_on_a_datastore_root_lists_its_collections(folder):
    code, out, err = run_cli("validate", folder)
    assert code == 0, err
    lines = out.strip().splitlines()
    # independently: the .json files under each data/<collection>/ and their distinct model ids
    expected = {}
    for collection in sorted((EEE / "data").iterdir()):
        files = [f for f in collection.rglob("*.json") if not f.name.startswith(".")]
        if files:
            expected[collection.name] = (len(files), len({load_json(f)["model_info"]["id"] for f in files}))
    assert "datastore of 5 collections (32 files)" in lines[0] and "--collection NAME" in lines[0]
    assert len(lines) == 1 + len(expected) == 6
    for line, (name, (files, models)) in zip(lines[1:], sorted(expected.items(), key=lambda kv: kv[0].lower())):
        words = line.split()
        assert words[0] == name
        assert line.endswith(f"{files} file{'s' if files > 1 else ''}, {models} model{'s' if models > 1 else ''}")
    assert "  global-mmlu-lite  24 files, 24 models" in lines and "  ai2_arc           1 file, 1 model" in lines


@pytest.mark.parametrize("where", ["root", "data"])
def test_collection_picks_one_from_the_data_folder_or_the_folder_above(where):
    folder = EEE if where == "root" else EEE / "data"
    dataset = jagged.load(folder, collection="global-mmlu-lite")
    assert dataset.scores["model"].nunique() == 24 and dataset.details["collection"] == "global-mmlu-lite"
    if where == "root":  # only data/ is the datastore; the folders beside it are named, not read
        assert any("legacy (outside the datastore's data/ folder)" == n for n in dataset.details["not used"])
    code, out, err = run_cli("validate", folder, "--collection", "helm_mmlu")
    assert code == 0 and "collection: helm_mmlu" in out and "5 models in 34 domains" in out


def test_unknown_collection_lists_the_collections():
    assert_bad_input("validate", EEE, "--collection", "hfopenllm_v2",
                     fragments=("no Every Eval Ever collection 'hfopenllm_v2'", "global-mmlu-lite", "helm_mmlu"))
    assert_bad_input("validate", GMMLU, "--collection", "hfopenllm_v2",
                     fragments=("no Every Eval Ever collection 'hfopenllm_v2'", "global-mmlu-lite (24 files)"))


def test_ties_on_retrieved_timestamp_follow_the_documented_rule(tmp_path):
    results = [("IFEval", 0.5), ("BBH", 0.4), ("MATH Level 5", 0.1)]
    root = tmp_path / "data" / "leaderboard"
    f16 = aggregate("org/model-a", results, retrieved="1700000000")
    f16["model_info"]["additional_details"] = {"precision": "float16"}
    b16 = copy.deepcopy(f16)
    b16["model_info"]["additional_details"] = {"precision": "bfloat16"}
    for r in b16["evaluation_results"]:
        r["score_details"]["score"] += 0.1
    # 1. same retrieved_timestamp: the later evaluation_timestamp wins, whatever the path order
    write(root / "org" / "model-a" / "b.json", dict(f16, evaluation_timestamp="1690000000"))
    write(root / "org" / "model-a" / "a.json", dict(b16, evaluation_timestamp="1690000500"))
    dataset = jagged.load(tmp_path)
    assert by_pair(dataset)[("org/model-a", "IFEval")] == pytest.approx(0.6)
    note = dataset.details["superseded"][0]
    assert note.startswith("b.json (org/model-a") and "superseded by a.json" in note
    assert "tie on retrieved_timestamp, kept by later evaluation_timestamp; precision float16 / bfloat16" in note
    assert "later evaluation_timestamp" in dataset.details["tie rule"]
    # 2. no evaluation_timestamp either: the file with more domains
    write(root / "org" / "model-a" / "a.json", dict(b16, evaluation_results=b16["evaluation_results"][:2]))
    write(root / "org" / "model-a" / "b.json", f16)
    dataset = jagged.load(tmp_path)
    assert by_pair(dataset)[("org/model-a", "IFEval")] == pytest.approx(0.5)
    assert "kept by more domains (3 against 2)" in dataset.details["superseded"][0]
    # 3. nothing else differs: the path that sorts last
    write(root / "org" / "model-a" / "a.json", b16)
    dataset = jagged.load(tmp_path)
    assert by_pair(dataset)[("org/model-a", "IFEval")] == pytest.approx(0.5)
    assert "kept by later path" in dataset.details["superseded"][0]


def test_ids_by_case_with_spaces_and_slashes_and_folders_named_like_files(tmp_path):
    root = tmp_path / "data" / "board"
    write(root / "Org" / "Model" / "x.json", aggregate("Org/Model", [("A", 0.2), ("B", 0.4)]))
    write(root / "org" / "model" / "y.json", aggregate("org/model", [("A", 0.6), ("B", 0.8)]))
    # an id with spaces and more slashes, in a folder whose name ends in .json
    write(root / "team" / "my model.json" / "z.json", aggregate("team/sub team/my model v2", [("A", 1.0), ("B", 0.5)]))
    dataset = jagged.load(tmp_path)
    got = by_pair(dataset)
    assert got == pytest.approx({("Org/Model", "A"): 0.2, ("Org/Model", "B"): 0.4, ("org/model", "A"): 0.6,
                                 ("org/model", "B"): 0.8, ("team/sub team/my model v2", "A"): 1.0,
                                 ("team/sub team/my model v2", "B"): 0.5})
    assert "Org/Model / org/model" in dataset.details["ids differing by case"]
    code, out, err = run_cli("metrics", tmp_path, "--bootstrap", "0")
    assert code == 0 and len(pd.read_csv(io.StringIO(out))) == 3


# --- scores, ranges, non-scores, -1 -----------------------------------------------------------


def test_scores_are_mapped_from_their_declared_range(tmp_path):
    doc = aggregate("org/m", [("A", 57.0), ("B", 80.0)], min_score=0.0, max_score=100.0)
    doc["evaluation_results"].append({**copy.deepcopy(doc["evaluation_results"][0]), "evaluation_name": "C",
                                      "metric_config": {"lower_is_better": False, "score_type": "continuous",
                                                        "min_score": 1.0, "max_score": 5.0},
                                      "score_details": {"score": 2.0}})
    dataset = jagged.load(write(tmp_path / "m.json", doc))
    assert by_pair(dataset) == pytest.approx({("org/m", "A"): 0.57, ("org/m", "B"): 0.80, ("org/m", "C"): 0.25})


def test_non_scores_are_left_out_and_minus_one_is_missing(tmp_path):
    results = [("Algebra", 0.7), ("Biology", 0.9), ("Chemistry", -1.0), ("Physics", 0.6),
               ("Mean win rate", 0.5), ("Overall", 0.75), ("Algebra - Observed inference time (s)", 0.3),
               ("Speed", 120.0)]
    doc = aggregate("org/m", results)
    config = {r["evaluation_name"]: r["metric_config"] for r in doc["evaluation_results"]}
    config["Algebra - Observed inference time (s)"]["lower_is_better"] = True
    config["Speed"].update(max_score=1000.0, metric_unit="ms")
    other = aggregate("org/n", [("Algebra", 0.5), ("Biology", 0.5), ("Chemistry", 0.4), ("Physics", 0.3)])
    write(tmp_path / "m.json", doc)
    write(tmp_path / "n.json", other)
    dataset = jagged.load(tmp_path)
    assert sorted(dataset.scores.loc[dataset.scores["model"] == "org/m", "domain"].astype(str)) == [
        "Algebra", "Biology", "Physics"]
    assert dataset.model_notes["org/m"] == "not evaluated (-1): Chemistry"
    assert "org/m: Chemistry" in dataset.details["not evaluated"][0]
    reasons = " | ".join(dataset.details["left out"])
    for fragment in ("not a score (a win rate ranks models): 'Mean win rate'", "aggregate row: 'Overall'",
                     "lower is better: 'Algebra - Observed inference time (s)'",
                     "not a score (metric unit/kind 'ms'): 'Speed'"):
        assert fragment in reasons, fragment
    code, out, err = run_cli("metrics", tmp_path, "--bootstrap", "0")
    table = pd.read_csv(io.StringIO(out)).set_index("model")
    assert not table.loc["org/m", "complete"] and "not evaluated (-1): Chemistry" in table.loc["org/m", "note"]


@pytest.mark.parametrize("damage, fragments", [
    (lambda d: d["model_info"].pop("id"), ("m.json", "model_info.id")),
    (lambda d: d["evaluation_results"][1]["score_details"].update(score="high"),
     ("m.json", "evaluation_results[1] ('B')", "score_details.score", "'high'")),
    (lambda d: d["evaluation_results"][0]["score_details"].update(score=1.5),
     ("m.json", "evaluation_results[0] ('A')", "1.5, outside its declared range [0, 1]")),
    (lambda d: d.pop("schema_version"), ("m.json", "schema_version")),
    (lambda d: d["evaluation_results"][0]["metric_config"].update(lower_is_better="no"),
     ("m.json", "metric_config.lower_is_better")),
    (lambda d: d["evaluation_results"][0].update(evaluation_name=""), ("m.json", "evaluation_name")),
])
def test_bad_fields_are_one_line_errors_naming_file_and_field(tmp_path, damage, fragments):
    doc = aggregate("org/m", [("A", 0.5), ("B", 0.6)])
    damage(doc)
    path = write(tmp_path / "m.json", doc)
    assert_bad_input("validate", path, "--strict", fragments=fragments)
    with pytest.raises(JaggedInputError):
        jagged.load(path, strict=True)
    if "outside its declared range" not in fragments[-1]:  # a single damaged file is refused, strict or not
        assert_bad_input("validate", path, fragments=fragments)


def test_helm_converter_example_keeps_the_test_split_exact_match():
    path = files(EEE / "data" / "mmlu")[0]
    doc = load_json(path)
    dataset = jagged.load(path)
    kept = [r for r in doc["evaluation_results"] if r["metric_config"]["evaluation_description"] == "exact_match"
            and r["score_details"]["details"]["split"] == "test"
            and r["score_details"]["details"]["perturbation"] is None]
    assert len(kept) == 2 and kept[0] == kept[1]  # the converter writes each row twice
    assert by_pair(dataset) == {("openai/gpt2", "multiple_choice_joint"): kept[0]["score_details"]["score"]}
    assert kept[0]["score_details"]["score"] == pytest.approx(1 / 9)  # HELM's 1 of 9 test items
    left_out = " | ".join(dataset.details["left out"])
    assert "perturbed variant" in left_out
    assert "duplicate name (kept the split test, metric exact_match row)" in left_out


# --- schema 0.2.2 and 0.3.0, hierarchy ---------------------------------------------------------


def test_mmlu_pro_fixture_0_2_2_and_demo_0_3_0():
    path = files(EEE / "fixtures" / "community_evals_converter")[0]
    doc = load_json(path)
    dataset = jagged.load(path)
    expected = {r["evaluation_name"]: r["score_details"]["score"] for r in doc["evaluation_results"]
                if r["evaluation_result_id"] != "mmlu_pro/overall"}
    assert len(expected) == 14
    assert by_pair(dataset) == {("01-ai/yi-1.5-34b-chat", k): v for k, v in expected.items()}
    assert dataset.details["metric"] == "accuracy"  # metric_kind: the ids and names are per subject
    assert "aggregate row: 'MMLU-Pro (overall)'" in dataset.details["left out"][0]
    demo = jagged.load(EEE / "fixtures" / "skill_reference_conversion" / "data" / "demo-source" / "demo-org"
                       / "demo-model" / "f3a1c0de-4b2e-4c1a-9f6d-1b7e5a2c8d40.json")
    assert demo.details["schema versions"] == "0.3.0 (1 file)" and demo.details["collection"] == "demo-source"
    assert by_pair(demo) == {("demo-org/demo-model", "demo-source.demo_bench"): 0.75}


def test_a_hierarchy_becomes_the_category(tmp_path):
    doc = aggregate("org/m", [("Algebra", 0.9), ("Geometry", 0.7), ("French", 0.5), ("German", 0.6), ("Math", 0.8)],
                    schema="0.3.0")
    ids = {"Algebra": "suite/math/algebra", "Geometry": "suite/math/geometry", "French": "suite/languages/french",
           "German": "suite/languages/german", "Math": "suite/math"}
    for result in doc["evaluation_results"]:
        result["evaluation_result_id"] = ids[result["evaluation_name"]]
    dataset = jagged.load(write(tmp_path / "m.json", doc))
    cats = dict(zip(dataset.scores["domain"].astype(str), dataset.scores["category"].astype(str)))
    assert cats == {"Algebra": "math", "Geometry": "math", "French": "languages", "German": "languages"}
    assert "aggregate row (has rows below it): 'Math'" in dataset.details["left out"][0]
    # a dotted namespaced name (vals_ai.<benchmark>.<task>) is a hierarchy too
    dotted = aggregate("org/m", [("vals_ai.legal.contracts", 0.4), ("vals_ai.legal.torts", 0.6),
                                 ("vals_ai.medical.cardiology", 0.9)], schema="0.3.0")
    cats = jagged.load(write(tmp_path / "d.json", dotted)).scores.set_index("domain")["category"].astype(str)
    assert cats.to_dict() == {"vals_ai.legal.contracts": "legal", "vals_ai.legal.torts": "legal",
                              "vals_ai.medical.cardiology": "medical"}


# --- instance-level files ---------------------------------------------------------------------


def parsed(path: Path):
    return parse(Head(path, "json"))


def test_instance_level_file_linked_to_its_aggregate_with_choice_and_key():
    path = next((EEE / "instance_level_data").glob("ai2_arc_anthropic*.jsonl"))
    records = [json.loads(line) for line in path.read_text().splitlines()]
    read = read_samples([parsed(path)], source=path.name)
    items = read.items.set_index("item")
    assert len(items) == 5
    for record in records:
        row = items.loc[str(record["sample_id"])]
        assert row["correct"] == record["evaluation"]["score"]
        assert row["key"] == record["input"]["reference"] and row["choice"] == record["output"]["raw"]
    assert read.details["linked aggregate"] == [f"{path.name} -> 0479dd23-e008-47f5-a790-15e7cbb08fc7.json "
                                                "(checksum and rows agree)"]
    dataset = jagged.load(path)
    assert dataset.format == "Every Eval Ever instance-level" and dataset.scores.iloc[0]["score"] == 1.0


def test_helm_conversion_keys_given_as_option_text_become_letters():
    path = EEE / "None" / "mmlu" / "openai" / "gpt2" / "None_samples.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    items = read_samples([parsed(path)], source=path.name).items.set_index("item")
    for record in records:
        choices, reference = record["input"]["choices"], record["input"]["reference"][0]
        assert items.loc[record["sample_id"], "key"] == "ABCD"[choices.index(reference)]
        assert items.loc[record["sample_id"], "choice"] == record["answer_attribution"][-1]["extracted_value"]
    assert items.loc["id147", ["choice", "key"]].tolist() == ["D", "C"]  # 'internalmeaning' is option C
    # free-text answers (NarrativeQA) are no multiple choice: no choice/key columns
    narrative = read_samples([parsed(EEE / "None" / "narrativeqa" / "openai" / "gpt2" / "None_samples.jsonl")],
                             source="n").items
    assert "key" not in narrative.columns and len(narrative) == 5


def test_samples_0_3_domain_key_and_checksum(tmp_path):
    folder = EEE / "fixtures" / "skill_reference_conversion" / "data" / "demo-source" / "demo-org" / "demo-model"
    path = next(folder.glob("*_samples.jsonl"))
    dataset = jagged.load(path, domain_key="subject")
    assert by_pair(dataset) == {("demo-org/demo-model", "arithmetic"): 1.0}
    assert "checksum and rows agree" in dataset.details["linked aggregate"][0]
    assert_bad_input("validate", path, "--domain-key", "topic", fragments=("no metadata key 'topic'", "subject"))
    # a changed file no longer matches the checksum its aggregate records: a warning
    copy_dir = tmp_path / "m"
    shutil.copytree(folder, copy_dir)
    changed = copy_dir / path.name
    changed.write_text(changed.read_text().replace('"score": 1.0', '"score": 0.0'))
    with pytest.warns(JaggedWarning, match="sha256 differs from the checksum"):
        dataset = jagged.load(changed)
    assert dataset.scores.iloc[0]["score"] == 0.0


def test_a_folder_with_aggregates_and_samples_uses_the_aggregates():
    folder = EEE / "fixtures" / "skill_reference_conversion"
    dataset = jagged.load(folder)
    assert dataset.format == "Every Eval Ever aggregate"
    assert "aggregate files are used instead" in dataset.details["not used"][0]


def test_instance_level_errors_are_one_line(tmp_path):
    path = next((EEE / "instance_level_data").glob("pubmed*.jsonl"))
    lines = path.read_text().splitlines()
    bad = json.loads(lines[1])
    bad["evaluation"] = {"score": "yes"}
    target = tmp_path / "s.jsonl"
    target.write_text(lines[0] + "\n" + json.dumps(bad) + "\n")
    assert_bad_input("validate", target, fragments=("s.jsonl: line 2", "evaluation.score", "'yes'"))
    bad = json.loads(lines[1])
    bad.pop("model_id")
    target.write_text(lines[0] + "\n" + json.dumps(bad) + "\n")
    assert_bad_input("validate", target, fragments=("s.jsonl: line 2", "model_id", "--model-name"))


# --- the supersede rule ----------------------------------------------------------------------


def test_newest_keeps_first_seen_key_order_and_flags_ties():
    runs = [("a", (1, "x")), ("b", (5, "y")), ("a", (3, "z")), ("a", (3, "w")), ("b", (2, "v"))]
    winners, replaced = newest(runs, rank=lambda r: r)
    assert list(winners) == ["a", "b"] and winners == {"a": (3, "z"), "b": (5, "y")}
    assert [(r.key, r.old, r.new, r.tie) for r in replaced] == [
        ("a", (1, "x"), (3, "z"), False), ("a", (3, "w"), (3, "z"), True), ("b", (2, "v"), (5, "y"), False)]


# --- damaged documents: a Dataset or one line of error, never a traceback ------------------------

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from json_damage import JSON_VALUES, slots  # noqa: E402


@st.composite
def damaged_aggregate(draw):
    doc = load_json(files(GMMLU / "cohere")[0])
    doc["evaluation_results"] = doc["evaluation_results"][:6]
    for _ in range(draw(st.integers(1, 4))):
        container, key = draw(st.sampled_from(slots(doc)))
        action = draw(st.sampled_from(["replace", "replace", "delete"]))
        if action == "replace":
            container[key] = draw(JSON_VALUES)
        else:
            del container[key]
    return doc


@seed(20261301)
@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(doc=damaged_aggregate())
def test_fuzz_damaged_aggregates(tmp_path, doc):
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(doc))
    try:
        dataset = jagged.load(path)
    except JaggedInputError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    scores = dataset.scores
    assert ((scores["score"] >= 0) & (scores["score"] <= 1)).all() and len(scores) > 0


@st.composite
def damaged_samples(draw):
    path = next((EEE / "instance_level_data").glob("ai2_arc_anthropic*.jsonl"))
    doc = [json.loads(line) for line in path.read_text().splitlines()]
    for _ in range(draw(st.integers(1, 4))):
        container, key = draw(st.sampled_from(slots(doc)))
        if draw(st.booleans()):
            container[key] = draw(JSON_VALUES)
        else:
            del container[key]
    return doc


@seed(20261302)
@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(doc=damaged_samples(), key=st.sampled_from([None, "stop_reason"]))
def test_fuzz_damaged_instance_level_files(tmp_path, doc, key):
    path = tmp_path / "damaged_samples.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in doc))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JaggedWarning)  # left-out samples are expected here
            dataset = jagged.load(path, domain_key=key)
    except JaggedInputError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert ((dataset.scores["score"] >= 0) & (dataset.scores["score"] <= 1)).all()


def _collection_with_a_bad_entry(tmp_path):
    """A copy of the global-mmlu-lite collection: one file with -0.01 for a [0, 1] score, one damaged."""
    target = tmp_path / "data" / "global-mmlu-lite"
    shutil.copytree(GMMLU, target)
    paths = files(target)
    doc = load_json(paths[0])
    read = jagged.load(GMMLU / paths[0].relative_to(target)).scores
    entry = next(e for e in doc["evaluation_results"] if e["metric_config"].get("max_score") == 1
                 and e["metric_config"].get("min_score") == 0 and e["evaluation_name"] in set(read["domain"]))
    entry["score_details"]["score"] = -0.01
    write(paths[0], doc)
    damaged = load_json(paths[1])
    del damaged["model_info"]["id"]
    write(paths[1], damaged)
    return tmp_path, doc, entry["evaluation_name"], paths


def test_a_bad_value_and_a_damaged_file_are_left_out_and_listed(tmp_path):
    root, doc, name, paths = _collection_with_a_bad_entry(tmp_path)
    full = jagged.load(GMMLU)
    dataset = jagged.load(root)
    model = doc["model_info"]["id"]
    kept = dataset.scores[dataset.scores["model"] == model]
    assert len(kept) == len(full.scores[full.scores["model"] == model]) - 1  # only the bad value is gone
    assert dataset.scores["model"].nunique() == full.scores["model"].nunique() - 1  # the damaged file's model
    assert any(f"score -0.01 outside its declared range [0, 1] ({model})" in line and repr(name) in line
               for line in dataset.details["left out"])
    assert any("damaged, left out" in n and "model_info.id" in n and paths[1].name in n
               for n in dataset.details["not used"])
    from jagged.views.summary import evaluator_notes

    notes = evaluator_notes(dataset)
    assert (notes["kind"] == "file not used").any() and notes["detail"].str.contains("-0.01").any()
    code, out, err = run_cli("validate", root)
    assert code == 0 and "-0.01 outside its declared range" in out and "damaged, left out" in out, err


def test_strict_refuses_the_bad_value_and_the_damaged_file(tmp_path):
    root, _, name, paths = _collection_with_a_bad_entry(tmp_path)
    line = assert_bad_input("validate", root, "--strict", fragments=("-0.01, outside its declared range [0, 1]",))
    assert paths[0].name in line or paths[1].name in line
    write(paths[0], load_json(GMMLU / paths[0].relative_to(root / "data" / "global-mmlu-lite")))
    assert_bad_input("validate", root, "--strict", fragments=(paths[1].name, "model_info.id"))
    broken = root / "data" / "global-mmlu-lite" / "x" / "y"
    broken.mkdir(parents=True)
    (broken / "z.json").write_text('{"schema_version": "0.2.2", "evaluation_')
    write(paths[1], load_json(GMMLU / paths[1].relative_to(root / "data" / "global-mmlu-lite")))
    assert_bad_input("validate", root, "--strict", fragments=("damaged file", "z.json", "--strict"))
    with pytest.warns(JaggedWarning, match="damaged"):
        assert jagged.load(root).scores["model"].nunique() == 24


# --- question text and options (issue 19: look at the items) ------------------------------


def test_instance_level_samples_keep_their_input_and_choices():
    path = next((EEE / "instance_level_data").glob("ai2_arc_anthropic*.jsonl"))
    records = [json.loads(line) for line in path.read_text().splitlines()]
    items = jagged.load(path).items.set_index("item")
    row = items.loc["1"]
    assert row["text"] == "Which statement best explains why photosynthesis is the foundation of most food webs?"
    assert json.loads(row["options"])[0] == "Sunlight is the source of energy for nearly all ecosystems."
    for record in records:
        got = items.loc[str(record["sample_id"])]
        assert got["text"] == record["input"]["raw"].strip()
        assert json.loads(got["options"]) == [c.strip() for c in record["input"]["choices"]]
    # free-text answers (NarrativeQA): the passage and question as text, its reference answers are no options
    path = EEE / "None" / "narrativeqa" / "openai" / "gpt2" / "None_samples.jsonl"
    narrative = read_samples([parsed(path)], source="n").items
    raws = [json.loads(line)["input"]["raw"].strip() for line in path.read_text().splitlines()]
    assert narrative["text"].tolist() == raws and narrative["options"].isna().all()


# --- benchmarks, collection folders, model counts (issue 29) -------------------------------------


def reward_collection(root: Path) -> Path:
    """A small collection in the shape of the real reward-bench one: RewardBench and RewardBench 2 files, one model
    evaluated on both (the RewardBench file newer, with fewer domains), a model id without a developer under
    ``unknown/``, and a file right in the collection folder."""
    def bench(model: str, name: str, results: list[tuple[str, float]], retrieved: str) -> dict:
        doc = aggregate(model, results, retrieved=retrieved)
        doc["source_metadata"]["source_name"] = name
        for entry in doc["evaluation_results"]:
            entry["source_data"]["dataset_name"] = name
        return doc

    folder = root / "data" / "reward-bench"
    write(folder / "org" / "rm" / "old2.json", bench("org/rm", "RewardBench 2", [("Safety", 0.5), ("Focus", 0.6),
                                                                                 ("Math", 0.4)], "1700000000"))
    write(folder / "org" / "rm" / "new2.json", bench("org/rm", "RewardBench 2", [("Safety", 0.7), ("Focus", 0.8),
                                                                                 ("Math", 0.6)], "1700000300"))
    write(folder / "org" / "rm" / "v1.json", bench("org/rm", "RewardBench", [("Chat", 0.9), ("Safety", 0.3)],
                                                   "1700000900"))
    write(folder / "unknown" / "Cohere May 2024" / "c.json", bench("Cohere May 2024", "RewardBench",
                                                                    [("Chat", 0.8), ("Safety", 0.6)], "1700000000"))
    write(folder / "loose.json", bench("org/other", "RewardBench 2", [("Safety", 0.2), ("Focus", 0.3),
                                                                      ("Math", 0.5)], "1700000000"))
    return folder


@pytest.mark.parametrize("named", ["collection", "datastore"])
def test_two_benchmarks_in_a_collection_are_kept_apart_and_the_user_chooses(tmp_path, named):
    folder = reward_collection(tmp_path)
    target, extra = (folder, ()) if named == "collection" else (tmp_path, ("--collection", "reward-bench"))
    line = assert_bad_input("metrics", target, *extra, fragments=(
        "holds 2 benchmarks", "RewardBench (2 files, 2 models)", "RewardBench 2 (3 files, 2 models)",
        '--where "dataset=NAME"'))
    assert "outside data/<collection>" not in line     # the collection folder holds every file below it
    chosen = {"collection": "reward-bench"} if extra else {}
    two = jagged.load(target, where=["dataset=RewardBench 2"], **chosen)
    assert two.details["benchmark"] == "RewardBench 2"
    assert by_pair(two) == pytest.approx({("org/rm", "Safety"): 0.7, ("org/rm", "Focus"): 0.8, ("org/rm", "Math"): 0.6,
                                          ("org/other", "Safety"): 0.2, ("org/other", "Focus"): 0.3,
                                          ("org/other", "Math"): 0.5})
    # supersession within a benchmark only: new2 replaces old2; the newer RewardBench file replaces nothing
    assert len(two.details["superseded"]) == 1 and two.details["superseded"][0].startswith("old2.json (org/rm")
    one = jagged.load(target, where=["dataset=RewardBench"], **chosen)
    assert one.details["benchmark"] == "RewardBench" and "superseded" not in one.details
    assert by_pair(one) == pytest.approx({("org/rm", "Chat"): 0.9, ("org/rm", "Safety"): 0.3,
                                          ("Cohere May 2024", "Chat"): 0.8, ("Cohere May 2024", "Safety"): 0.6})
    assert_bad_input("validate", target, *extra, "--where", "dataset=RewardBench 3",
                     fragments=("--where dataset=RewardBench 3", "no benchmark of that name", "RewardBench 2"))


def test_one_model_count_everywhere(tmp_path):
    """validate on the datastore counted model folders (327), the report model ids (331); both count ids now."""
    folder = reward_collection(tmp_path)
    # a second folder for one id (a folder is a sanitised id), and an id whose folder differs
    write(folder / "org" / "rm-copy" / "new.json", load_json(folder / "org" / "rm" / "new2.json") | {
        "retrieved_timestamp": "1700000600"})
    write(tmp_path / "data" / "other-board" / "x" / "y" / "z.json", aggregate("x/y", [("A", 0.5), ("B", 0.4)]))
    code, out, err = run_cli("validate", tmp_path)
    assert code == 0, err
    assert "reward-bench  6 files, 3 models; 2 benchmarks (RewardBench, RewardBench 2)" in out
    for bench, models in (("RewardBench", 2), ("RewardBench 2", 2)):
        code, out, err = run_cli("validate", tmp_path, "--collection", "reward-bench", "--where", f"dataset={bench}")
        assert code == 0 and f"for {models} models in" in out, err


def test_hostile_benchmark_names_stay_one_line_text(tmp_path):
    names = ["<script>alert(1)</script>\nRewardBench", "RB 2\u2028' onmouseover='x"]
    for k, name in enumerate(names):
        doc = aggregate(f"org/m{k}", [("Chat", 0.5), ("Safety", 0.6)])
        for entry in doc["evaluation_results"]:
            entry["source_data"]["dataset_name"] = name
        write(tmp_path / "data" / "board" / "org" / f"m{k}" / "a.json", doc)
    line = assert_bad_input("validate", tmp_path / "data" / "board", fragments=("holds 2 benchmarks",
                                                                                "<script>alert(1)</script>"))
    assert "\n" not in line.strip() and "\u2028" not in line
    chosen = jagged.load(tmp_path / "data" / "board", where=[f"dataset={names[0]}"])
    assert chosen.details["benchmark"] == names[0] and set(chosen.scores["model"]) == {"org/m0"}
