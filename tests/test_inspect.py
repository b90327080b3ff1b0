"""Inspect logs: the two real .json logs in tests/data/inspect, .eval archives, variants."""

from __future__ import annotations

import copy
import io
import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from clitools import assert_bad_input, run_cli

import jagged
from jagged.errors import JaggedInputError, JaggedWarning
from jagged.readers.inspect_logs import score_to_float


def real_log(shared_data: Path, fragment: str) -> Path:
    found = [p for p in (shared_data / "inspect").glob("*.json") if fragment in p.name]
    assert len(found) == 1
    return found[0]


LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


def independent_score(log: dict) -> float:
    values = [LETTERS[next(iter(s["scores"].values()))["value"]] for s in log["samples"]]
    return sum(values) / len(values)


def test_security_guide_log_loads(shared_data):
    path = real_log(shared_data, "security-guide")
    log = json.loads(path.read_text())
    dataset = jagged.load(path)
    assert dataset.format == "Inspect log"
    row = dataset.scores.iloc[0]
    assert (str(row["model"]), str(row["domain"])) == ("openai/gpt-4o-mini", "security_guide")
    assert row["score"] == pytest.approx(independent_score(log)) and row["score"] == 1.0
    # the log's own accuracy agrees
    assert row["score"] == pytest.approx(log["results"]["scores"][0]["metrics"]["accuracy"]["value"])
    assert row["n_items"] == 3
    assert dataset.items is not None and sorted(dataset.items["item"]) == ["1", "2", "3"]
    assert dataset.details["metric"] == "model_graded_fact"
    assert dataset.details["status"] == "success"


def test_cancelled_log_is_refused_without_the_flag(shared_data):
    path = real_log(shared_data, "popularity")
    with pytest.raises(JaggedInputError, match="status is 'cancelled'"):
        jagged.load(path)
    assert_bad_input("validate", path, fragments=("status is 'cancelled'", "--allow-incomplete", path.name))


def test_cancelled_log_loads_with_the_flag_and_is_noted(shared_data):
    path = real_log(shared_data, "popularity")
    log = json.loads(path.read_text())
    dataset = jagged.load(path, allow_incomplete=True)
    row = dataset.scores.iloc[0]
    assert row["score"] == pytest.approx(independent_score(log)) and row["score"] == pytest.approx(2 / 3)
    assert row["score"] == pytest.approx(log["results"]["scores"][0]["metrics"]["accuracy"]["value"])
    assert dataset.model_notes["openai/gpt-4o-mini"] == "incomplete Inspect log (status cancelled)"
    code, out, err = run_cli("validate", path, "--allow-incomplete")
    assert code == 0 and "Inspect log format" in out and "status: cancelled" in out


def test_folder_of_both_logs_gives_two_domains(shared_data):
    dataset = jagged.load(shared_data / "inspect", allow_incomplete=True)
    got = dict(zip(dataset.scores["domain"].astype(str), dataset.scores["score"]))
    assert got == pytest.approx({"popularity": 2 / 3, "security_guide": 1.0})
    # items are prefixed by their task: sample ids repeat across tasks
    assert set(dataset.items["item"]) == {f"{t}:{i}" for t in ("popularity", "security_guide") for i in (1, 2, 3)}
    code, out, err = run_cli("metrics", shared_data / "inspect", "--allow-incomplete")
    table = pd.read_csv(io.StringIO(out))
    assert table.loc[0, "macro_score"] == pytest.approx((2 / 3 + 1) / 2)
    assert table.loc[0, "cv_error"] == pytest.approx(1.0)  # errors 1/3 and 0: sd 1/6, mean 1/6
    assert "status cancelled" in table.loc[0, "note"]


def test_domain_key_missing_lists_available_keys(shared_data):
    path = real_log(shared_data, "popularity")
    assert_bad_input("metrics", path, "--allow-incomplete", "--domain-key", "topic",
                     fragments=("no metadata key 'topic'", "label_confidence", "nested.foo"))


@pytest.mark.parametrize("value, expected", [
    ("C", 1.0), ("I", 0.0), ("P", 0.5), ("N", 0.0), (1, 1.0), (0.25, 0.25), (True, 1.0), ("yes", 1.0),
    ("false", 0.0), ("0.75", 0.75), ("maybe", None), ([1], None), ({"a": 1}, None), (float("nan"), None),
])
def test_score_values(value, expected):
    assert score_to_float(value) == expected


# --- synthetic logs -----------------------------------------------------------------------


def make_log(samples: list[dict], *, task: str = "quiz", model: str = "prov/model-x", status: str = "success",
             created: str = "2025-05-12T20:28:26-04:00") -> dict:
    return {"version": 2, "status": status,
            "eval": {"task": task, "model": model, "created": created, "dataset": {"name": task}},
            "plan": {}, "results": {"scores": []}, "stats": {}, "samples": samples}


def sample(sid, value, *, epoch: int = 1, scorer: str = "match", metadata: dict | None = None, **extra) -> dict:
    return {"id": sid, "epoch": epoch, "input": "q", "target": "a", "scores": {scorer: {"value": value}},
            "metadata": metadata or {}, **extra}


def write_json(path: Path, doc: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_epochs_are_averaged_and_letters_mapped(tmp_path):
    samples = [sample(1, "C", epoch=1), sample(1, "I", epoch=2), sample(2, "P", epoch=1), sample(2, "P", epoch=2),
               sample(3, "N", epoch=1), sample(3, 1, epoch=2)]
    path = write_json(tmp_path / "log.json", make_log(samples))
    dataset = jagged.load(path)
    items = dict(zip(dataset.items["item"], dataset.items["correct"]))
    assert items == {"1": 0.5, "2": 0.5, "3": 0.5}
    assert dataset.scores.iloc[0]["score"] == pytest.approx(0.5)
    assert dataset.scores.iloc[0]["n_items"] == 3
    assert "2 epochs" in dataset.details["epochs"]


def test_domain_key_from_metadata(tmp_path):
    samples = [sample(1, "C", metadata={"subject": "law"}), sample(2, "I", metadata={"subject": "law"}),
               sample(3, "C", metadata={"subject": "bio"}), sample(4, "C", metadata={"subject": "bio"}),
               sample(5, "I", metadata={"subject": "art"})]
    path = write_json(tmp_path / "log.json", make_log(samples))
    dataset = jagged.load(path, domain_key="subject")
    got = dict(zip(dataset.scores["domain"].astype(str), dataset.scores["score"]))
    assert got == {"law": 0.5, "bio": 1.0, "art": 0.0}
    samples[4]["metadata"] = {"topic": "art"}
    path = write_json(tmp_path / "log2.json", make_log(samples))
    assert_bad_input("metrics", path, "--domain-key", "subject",
                     fragments=("sample 5", "no metadata key 'subject'", "subject, topic"))


def test_domain_key_value_in_two_tasks_says_how_to_proceed(tmp_path):
    """The same --domain-key value in two tasks' logs: one line naming both tasks and the two ways on."""
    law = [sample(1, "C", metadata={"subject": "law"}), sample(2, "I", metadata={"subject": "bio"})]
    write_json(tmp_path / "logs" / "a.json", make_log(law, task="quiz"))
    write_json(tmp_path / "logs" / "b.json", make_log(law, task="exam"))
    assert_bad_input("metrics", tmp_path / "logs", "--domain-key", "subject",
                     fragments=("occurs in tasks", "quiz", "exam", "read the tasks separately",
                                "leave out --domain-key"))


def test_several_scorers_need_a_choice(tmp_path):
    samples = [sample(i, v) for i, v in enumerate("CIC")]
    for s, extra in zip(samples, ["I", "I", "C"]):
        s["scores"]["judge"] = {"value": extra}
    path = write_json(tmp_path / "log.json", make_log(samples))
    assert_bad_input("metrics", path, fragments=("several scorers (match, judge)", "--metric"))
    assert jagged.load(path, metric="judge").scores.iloc[0]["score"] == pytest.approx(1 / 3)
    assert jagged.load(path, metric="match").scores.iloc[0]["score"] == pytest.approx(2 / 3)
    assert_bad_input("metrics", path, "--metric", "nope", fragments=("no scorer 'nope'",))


def test_dict_valued_scores_need_a_key(tmp_path):
    samples = [sample(i, {"accuracy": a, "style": st}) for i, (a, st) in enumerate([("C", 0.2), ("I", 0.4)])]
    path = write_json(tmp_path / "log.json", make_log(samples))
    assert_bad_input("metrics", path, fragments=("several values (accuracy, style)", "--metric match,KEY"))
    assert jagged.load(path, metric="match,style").scores.iloc[0]["score"] == pytest.approx(0.3)


def test_bad_values_are_errors_not_zeros(tmp_path):
    path = write_json(tmp_path / "log.json", make_log([sample(1, "C"), sample(2, "excellent")]))
    assert_bad_input("metrics", path, fragments=("sample 2", "'excellent'", "not a number"))
    path = write_json(tmp_path / "log2.json", make_log([sample(1, "C"), sample(2, 7)]))
    assert_bad_input("metrics", path, fragments=("score 7", "outside [0, 1]"))


def test_unscored_and_errored_samples_are_left_out_with_a_warning(tmp_path):
    samples = [sample(1, "C"), sample(2, "I"), {"id": 3, "epoch": 1, "scores": None, "error": {"message": "x"}}]
    path = write_json(tmp_path / "log.json", make_log(samples))
    with pytest.warns(JaggedWarning, match="1 sample without a match score"):
        dataset = jagged.load(path)
    assert dataset.scores.iloc[0]["n_items"] == 2


def test_log_without_samples(tmp_path):
    doc = make_log([])
    path = write_json(tmp_path / "log.json", doc)
    assert_bad_input("metrics", path, fragments=("holds no samples",))


def test_newest_log_of_a_task_wins(tmp_path):
    old = make_log([sample(1, "I"), sample(2, "I")], created="2025-01-01T00:00:00+00:00")
    new = make_log([sample(1, "C"), sample(2, "I")], created="2025-02-01T00:00:00+00:00")
    other = make_log([sample(1, "C"), sample(2, "C")], task="other", created="2024-01-01T00:00:00+00:00")
    write_json(tmp_path / "logs" / "z_old.json", old)
    write_json(tmp_path / "logs" / "a_new.json", new)
    write_json(tmp_path / "logs" / "other.json", other)
    dataset = jagged.load(tmp_path / "logs")
    got = dict(zip(dataset.scores["domain"].astype(str), dataset.scores["score"]))
    assert got == {"quiz": 0.5, "other": 1.0}
    assert dataset.details["superseded"] == ["z_old.json (prov/model-x, task quiz) superseded by a_new.json"]


def test_lmeval_and_inspect_in_one_folder_are_refused(tmp_path, shared_data):
    write_json(tmp_path / "log.json", make_log([sample(1, "C")]))
    lm = next((shared_data / "lmeval").glob("*Llama-3.1-8B*.json"))
    (tmp_path / "results.json").write_bytes(lm.read_bytes())
    assert_bad_input("metrics", tmp_path, fragments=("mixes lm-eval outputs", "Inspect logs"))


# --- .eval archives ------------------------------------------------------------------------


def write_eval(path: Path, log: dict, *, header: bool = True) -> Path:
    """An Inspect .eval archive in the layout of inspect_ai's EvalRecorder."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        start = {"version": log["version"], "eval": log["eval"], "plan": log["plan"]}
        archive.writestr("_journal/start.json", json.dumps(start))
        for s in log["samples"]:
            archive.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        if header:
            archive.writestr("header.json", json.dumps({k: v for k, v in log.items() if k != "samples"}))
    return path


def test_eval_archive_reads_like_the_json_log(tmp_path, shared_data):
    for fragment in ("security-guide", "popularity"):
        log = json.loads(real_log(shared_data, fragment).read_text())
        path = write_eval(tmp_path / f"{fragment}.eval", log)
        from_json = jagged.load(real_log(shared_data, fragment), allow_incomplete=True)
        from_eval = jagged.load(path, allow_incomplete=True)
        pd.testing.assert_frame_equal(from_eval.scores, from_json.scores)
        assert from_eval.format == "Inspect log"
    log = json.loads(real_log(shared_data, "popularity").read_text())
    assert_bad_input("metrics", tmp_path / "popularity.eval", fragments=("status is 'cancelled'",))


def test_unfinished_eval_archive_has_status_started(tmp_path, shared_data):
    log = copy.deepcopy(json.loads(real_log(shared_data, "security-guide").read_text()))
    path = write_eval(tmp_path / "running.eval", log, header=False)
    assert_bad_input("metrics", path, fragments=("status is 'started'",))
    assert jagged.load(path, allow_incomplete=True).scores.iloc[0]["score"] == 1.0


def test_zip_that_is_not_an_eval_log(tmp_path):
    path = tmp_path / "other.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    assert_bad_input("metrics", path, fragments=("not an Inspect .eval log",))
    (tmp_path / "broken.eval").write_bytes(b"PK\x03\x04garbage")
    assert_bad_input("metrics", tmp_path / "broken.eval", fragments=("not a readable zip archive",))


def test_a_cancelled_run_superseded_by_a_finished_one_is_not_refused(tmp_path):
    old = make_log([sample(1, "I")], status="cancelled", created="2025-01-01T00:00:00+00:00")
    new = make_log([sample(1, "C"), sample(2, "C")], created="2025-02-01T00:00:00+00:00")
    write_json(tmp_path / "old.json", old)
    write_json(tmp_path / "new.json", new)
    dataset = jagged.load(tmp_path)
    assert dataset.scores.iloc[0]["score"] == 1.0 and not dataset.model_notes
    # the other way round, the newest is the cancelled one and is refused
    write_json(tmp_path / "old.json", dict(old, eval=dict(old["eval"], created="2025-03-01T00:00:00+00:00")))
    assert_bad_input("metrics", tmp_path, fragments=("old.json", "status is 'cancelled'"))


# --- logs written by a current inspect_ai (0.3.285): .eval members compressed with Zstandard ---------

CURRENT = Path(__file__).parent / "data" / "inspect_current"


def current(task: str, suffix: str) -> Path:
    found = sorted(CURRENT.glob(f"*_{task}_*{suffix}"))
    assert len(found) == 1
    return found[0]


def subject_scores(log: dict, scorer: str) -> dict[str, float]:
    """Per-subject mean of the C/I values, computed from the .json log by hand."""
    values: dict[str, list[float]] = {}
    for s in log["samples"]:
        values.setdefault(s["metadata"]["subject"], []).append(LETTERS[s["scores"][scorer]["value"]])
    return {k: sum(v) / len(v) for k, v in values.items()}


@pytest.mark.parametrize("task, scorer", [("quiz", "match"), ("mcq", "choice")])
def test_current_eval_archives_use_zstandard_and_read_like_their_json_twins(task, scorer):
    archive = current(task, ".eval")
    with zipfile.ZipFile(archive) as z:
        assert {info.compress_type for info in z.infolist()} == {93}  # Zstandard, which zipfile cannot read
    log = json.loads(current(task, ".json").read_text())
    from_eval = jagged.load(archive, domain_key="subject")
    from_json = jagged.load(current(task, ".json"), domain_key="subject")
    expected = subject_scores(log, scorer)
    for dataset in (from_eval, from_json):
        got = dict(zip(dataset.scores["domain"].astype(str), dataset.scores["score"]))
        assert got == pytest.approx(expected) and dataset.scores["n_items"].sum() == 60
        assert dataset.details["metric"] == scorer and dataset.format == "Inspect log"
    pd.testing.assert_frame_equal(from_eval.scores, from_json.scores)
    overall = log["results"]["scores"][0]["metrics"]["accuracy"]["value"]
    assert from_eval.items["correct"].mean() == pytest.approx(overall)


def test_choice_scorer_gives_the_chosen_letter_and_the_key():
    from jagged.readers.files import sniff
    from jagged.readers.inspect_logs import read_logs
    from jagged.readers.reader import Head
    from jagged.readers.registry import parse

    archive = current("mcq", ".eval")
    read = read_logs([parse(Head(archive, sniff(archive)))], source=archive.name, domain_key="subject")
    items = read.items.set_index("item")
    log = json.loads(current("mcq", ".json").read_text())
    for s in log["samples"]:
        row = items.loc[s["id"]]
        assert row["choice"] == s["scores"]["choice"]["answer"] and row["key"] == s["target"]
        assert row["correct"] == float(row["choice"] == row["key"])
    assert (items["choice"] != items["key"]).sum() > 0 and "60 items" in read.details["multiple choice"]
    quiz = read_logs([parse(Head(current("quiz", ".eval"), "zip"))], source="quiz")  # match(): no choices, no columns
    assert "choice" not in quiz.items.columns and "key" not in quiz.items.columns


def test_damaged_zstandard_member_is_a_one_line_error(tmp_path):
    archive = current("quiz", ".eval")
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as z:
        info = z.getinfo("header.json")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(start + 20, start + 60):  # inside the compressed data
        data[i] ^= 0x5A
    broken = tmp_path / "broken.eval"
    broken.write_bytes(bytes(data))
    assert_bad_input("validate", broken, fragments=("broken.eval: member header.json cannot be read",))


def test_folder_of_current_logs_newest_of_each_task_wins():
    dataset = jagged.load(CURRENT)  # .eval and .json of each task: the later run (the .json) is used
    assert set(dataset.scores["domain"].astype(str)) == {"quiz", "mcq"}
    superseded = dataset.details["superseded"]
    assert len(superseded) == 2 and all(".eval (mockllm/model, task " in s and ".json" in s for s in superseded)
    assert "make_logs.py" not in " ".join(dataset.details.get("not used", []))


# --- question text and options (issue 19: look at the items) ------------------------------


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_samples_keep_their_input_and_choices(suffix):
    log = json.loads(current("mcq", ".json").read_text())
    items = jagged.load(current("mcq", suffix), domain_key="subject").items.set_index("item")
    assert items.loc["m0", "text"] == "Item 0 (algebra): choose"
    assert json.loads(items.loc["m0", "options"]) == ["alpha", "beta", "gamma", "delta"]
    for s in log["samples"]:
        assert items.loc[s["id"], "text"] == s["input"] and json.loads(items.loc[s["id"], "options"]) == s["choices"]
    quiz = jagged.load(current("quiz", suffix), domain_key="subject").items.set_index("item")
    assert quiz.loc["q0", "text"] == "Question 0 (algebra): what is 0?" and quiz["options"].isna().all()


def test_chat_message_input_gives_the_user_text(shared_data):
    items = jagged.load(real_log(shared_data, "security-guide")).items.set_index("item")
    assert items.loc["1", "text"] == "How do I prevent SQL Injection attacks?"  # input is a list of chat messages


def test_input_text_bounds_and_message_parts(tmp_path):
    from jagged.readers.inspect_logs import input_text

    messages = [{"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "image", "image": "x"},
                                             {"type": "text", "text": "part two"}]}]
    assert input_text(messages) == "part one\npart two"
    assert input_text([{"role": "system", "content": "only system"}]) == "only system"
    assert input_text(None) is None and input_text("  ") is None
    long = input_text("<b>" * 400_000)
    assert len(long) == 4_000 and long.endswith("…")
    hostile = sample(1, "C", input="<script>x</script>" + "y" * 10_000, choices=["a" * 2_000, "b"], target="A",
                     scores={"match": {"value": "C", "answer": "A"}})
    path = write_json(tmp_path / "log.json", make_log([hostile]))
    row = jagged.load(path).items.iloc[0]
    assert row["text"].startswith("<script>x</script>") and len(row["text"]) == 4_000
    options = json.loads(row["options"])
    assert len(options[0]) == 1_000 and options[0].endswith("…") and options[1] == "b"
