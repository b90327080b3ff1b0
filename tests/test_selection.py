"""Row selection for every table input: --where COLUMN=VALUE, --models, --domains (jagged.readers.tables)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from clitools import assert_bad_input, run_cli
from conftest import TEST_DATA

import jagged
from jagged.errors import JaggedInputError

HENDRYCKS = TEST_DATA / "mmlu_hendrycks_readme_4categories.csv"


@pytest.fixture
def livebench(tmp_path):
    """A LiveBench-like long table: two releases, the same (model, domain) pairs scored differently in each."""
    rows = []
    for release, shift in (("2024-06-24", 0.0), ("2024-08-31", 0.05)):
        for model, base in (("gpt-4o", 0.6), ("claude-3.5", 0.55), ("llama-3.1", 0.4)):
            for k, domain in enumerate(("coding", "math", "reasoning")):
                rows.append({"model": model, "release": release, "domain": domain,
                             "score": round(base + 0.1 * k + shift, 4)})
    path = tmp_path / "livebench.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path, pd.DataFrame(rows)


def test_several_releases_are_refused_naming_the_column_that_tells_them_apart(livebench):
    path, _ = livebench
    line = assert_bad_input("validate", path, fragments=("given twice with different scores",
                                                         "the rows differ in 'release'",
                                                         "--where release=2024-08-31"))
    assert "'2024-06-24', '2024-08-31'" in line


def test_where_picks_a_release_before_the_duplicate_check(livebench):
    path, frame = livebench
    dataset = jagged.load(path, where=["release=2024-08-31"])
    expected = frame[frame["release"] == "2024-08-31"].set_index(["model", "domain"])["score"].sort_index()
    got = dataset.scores.astype({"model": str, "domain": str}).set_index(["model", "domain"])["score"].sort_index()
    pd.testing.assert_series_equal(got, expected, check_names=False)
    code, out, err = run_cli("validate", path, "--where", "release=2024-06-24")
    assert code == 0 and "9 scores for 3 models in 3 domains" in out, err


def test_several_conditions_and_models_and_domains_all_hold(livebench):
    path, frame = livebench
    dataset = jagged.load(path, where=["release=2024-06-24", "domain=math"], models=["gpt-4o", "llama-3.1"])
    assert sorted(zip(dataset.scores["model"].astype(str), dataset.scores["score"])) == [
        ("gpt-4o", 0.7), ("llama-3.1", 0.5)]
    dataset = jagged.load(path, where=["release=2024-08-31"], domains=["coding", "reasoning"])
    assert sorted(dataset.scores["domain"].astype(str).unique()) == ["coding", "reasoning"]
    assert len(dataset.scores) == 6
    code, out, err = run_cli("metrics", path, "--where", "release=2024-08-31", "--models", "gpt-4o", "--models",
                             "claude-3.5", "--bootstrap", "0")
    assert code == 0, err
    assert sorted(pd.read_csv(__import__("io").StringIO(out))["model"]) == ["claude-3.5", "gpt-4o"]


def test_unknown_column_value_model_and_domain_are_one_line_errors_naming_what_there_is(livebench):
    path, _ = livebench
    assert_bad_input("validate", path, "--where", "version=1",
                     fragments=("no column 'version'", "'model', 'release', 'domain', 'score'"))
    assert_bad_input("validate", path, "--where", "release=2025-01-01",
                     fragments=("no row has release = '2025-01-01'", "release holds '2024-06-24', '2024-08-31'"))
    assert_bad_input("validate", path, "--where", "release=2024-08-31", "--models", "gpt-5",
                     fragments=("--models 'gpt-5': no such model", "3 models: claude-3.5, gpt-4o, llama-3.1"))
    assert_bad_input("validate", path, "--where", "release=2024-08-31", "--domains", "Math",
                     fragments=("--domains 'Math': no such domain", "coding, math, reasoning"))
    assert_bad_input("validate", path, "--where", "release", fragments=("expected COLUMN=VALUE",))
    assert_bad_input("validate", path, "--where", "release=2024-06-24", "--where", "release=2024-08-31",
                     fragments=("no row matches all of --where release=2024-06-24, --where release=2024-08-31",))


def test_an_unknown_value_list_is_bounded(tmp_path):
    frame = pd.DataFrame({"model": [f"m{i:03d}" for i in range(200)], "domain": "d", "score": 0.5})
    path = tmp_path / "many.csv"
    frame.to_csv(path, index=False)
    line = assert_bad_input("validate", path, "--models", "nobody", fragments=("200 models", "and 188 more"))
    assert len(line) < 400


def test_wide_tables_select_rows_and_domain_columns(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("model,release,math,law,art\na,v1,0.5,0.6,0.7\na,v2,0.55,0.65,0.75\nb,v2,0.2,0.3,0.4\n")
    dataset = jagged.load(path, where=["release=v2"], domains=["law", "math"])
    got = sorted(zip(dataset.scores["model"].astype(str), dataset.scores["domain"].astype(str),
                     dataset.scores["score"]))
    assert got == [("a", "law", 0.65), ("a", "math", 0.55), ("b", "law", 0.3), ("b", "math", 0.2)]
    with pytest.raises(JaggedInputError, match="--domains 'history': no such domain.*art, law, math"):
        jagged.load(path, where=["release=v2"], domains=["history"])


def test_real_table_selection_matches_pandas():
    frame = pd.read_csv(HENDRYCKS)
    wanted = sorted(frame["model"].unique())[:2]
    dataset = jagged.load(HENDRYCKS, models=wanted, domains=["stem"])
    expected = frame[frame["model"].isin(wanted) & (frame["domain"] == "stem")]
    assert sorted(dataset.scores["score"]) == pytest.approx(sorted(expected["score"]))
    assert sorted(dataset.scores["model"].astype(str)) == wanted


def test_item_level_and_evaluator_inputs_are_selected_too():
    items = jagged.load(TEST_DATA / "mmlu_pro_item_level.csv.gz")
    model = str(items.scores["model"].cat.categories[0])
    domain = str(items.scores["domain"].cat.categories[0])
    picked = jagged.load(TEST_DATA / "mmlu_pro_item_level.csv.gz", models=[model], domains=[domain])
    assert list(picked.scores["model"].astype(str)) == [model] and set(picked.items["domain"].astype(str)) == {domain}
    row = items.scores[(items.scores["model"] == model) & (items.scores["domain"] == domain)].iloc[0]
    assert picked.scores["score"].iloc[0] == pytest.approx(row["score"])
    eee = TEST_DATA / "eee" / "data" / "global-mmlu-lite"
    full = jagged.load(eee)
    first = sorted(full.scores["model"].astype(str).unique())[:3]
    assert sorted(jagged.load(eee, models=first).scores["model"].astype(str).unique()) == first
    with pytest.raises(JaggedInputError, match="--models 'nobody': no such model"):
        jagged.load(eee, models=["nobody"])


def test_batch_keeps_models_for_choosing_reports():
    from jagged.cli import main

    flags = [o for p in main.commands["batch"].params for o in getattr(p, "opts", [])]
    assert flags.count("--models") == 1 and "--domains" in flags and "--where" in flags


def test_the_selection_is_in_the_subtitle_what_was_read_and_the_json(livebench, tmp_path):
    from jagged import report

    path, _ = livebench
    out = tmp_path / "r.html"
    report.jaggedness_report(path, out, where=["release=2024-08-31"], models=["gpt-4o", "claude-3.5"],
                             n_items="50", bootstrap=0, sections="data")
    page = out.read_text(encoding="utf-8")
    chosen = "rows where release=2024-08-31; 2 models chosen (gpt-4o, claude-3.5); n_items 50 for every domain " \
             "(--n-items)"
    assert f'<p class="subtitle">2 models × 3 domains from livebench.csv — {chosen}</p>' in page
    what_was_read = page[page.index("What was read"):]
    assert f'<th scope="row">selection</th><td><span class="wrap">{chosen}</span></td>' in what_was_read
    record = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert record["selection"] == {"where": ["release=2024-08-31"], "models": ["gpt-4o", "claude-3.5"],
                                   "n_items": "50"}
    assert record["provenance"]["selection"] == chosen
    assert f"selection: {chosen}. OK" in run_cli("validate", path, "--where", "release=2024-08-31", "--models",
                                                   "gpt-4o", "--models", "claude-3.5", "--n-items", "50")[1]


def test_a_readers_list_of_model_names_never_takes_the_place_of_the_model_count():
    from jagged.report.facts import input_facts, input_subtitle
    from jagged.views.summary import read_facts

    dataset = jagged.load(TEST_DATA / "eee" / "data" / "global-mmlu-lite")  # details["models"]: the names
    assert input_subtitle(dataset) == "24 models × 16 domains from global-mmlu-lite"
    dataset.benchmark = "Global-MMLU-Lite"
    assert input_subtitle(dataset) == "24 models × 16 domains from Global-MMLU-Lite"
    keys = [f.key for f in read_facts(dataset)]
    assert keys.count("models") == 1 and "models (listed)" in keys
    assert [row[1] for row in input_facts(dataset) if row[0] == "models"] == ["24"]
