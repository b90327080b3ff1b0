"""``jagged compare``: the CLI on the MMLU-Pro release pair and hand-worked tables, bad input, the report."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pandas as pd
import pytest
from clitools import assert_bad_input, run_cli
from compare_pairs import HAND_A, HAND_B, ONLY_A_MODEL, ONLY_B_MODEL, hand_pair, mmlu_pro_pair

from jagged.analysis import compare_inputs
from jagged.errors import JaggedInputError
from jagged.report.compare import compare_report


def _items_csv(dataset, path):
    dataset.items[["model", "domain", "item", "correct", "choice", "key"]].to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def mmlu_files(tmp_path_factory):
    pair = mmlu_pro_pair()
    folder = tmp_path_factory.mktemp("mmlu_pair")
    return pair, _items_csv(pair.a, folder / "v1.csv.gz"), _items_csv(pair.b, folder / "v2.csv.gz")


@pytest.fixture(scope="module")
def hand_files(tmp_path_factory):
    a, b = hand_pair()
    folder = tmp_path_factory.mktemp("hand_pair")
    return _items_csv(a, folder / "hand_a.csv"), _items_csv(b, folder / "hand_b.csv")


def _scores_csv(path, rows):
    pd.DataFrame(rows, columns=["model", "domain", "score", "n_items"]).to_csv(path, index=False)
    return path


# --------------------------------------------------------------------------- the MMLU-Pro release pair

@pytest.fixture(scope="module")
def mmlu_cli(mmlu_files, tmp_path_factory):
    pair, a, b = mmlu_files
    out = tmp_path_factory.mktemp("mmlu_out")
    code, stdout, stderr = run_cli("compare", a, b, "-o", out / "models.csv", "--items-out", out / "items.csv",
                                   "--bootstrap", 300, "--seed", 2)
    assert code == 0, stderr
    return pair, pd.read_csv(out / "models.csv"), pd.read_csv(out / "items.csv", dtype={"item": str}), stdout, stderr


def test_mmlu_models_csv_has_like_for_like_columns_and_only_shared_models(mmlu_cli):
    pair, models, _, stdout, _ = mmlu_cli
    assert stdout == ""  # -o given: nothing on stdout
    for stat in ("macro_score", "cv_error"):
        for suffix in ("a", "b", "delta", "delta_lo", "delta_hi", "all_a", "all_b"):
            assert f"{stat}_{suffix}" in models.columns
    shared = set(pair.a.scores["model"]) & set(pair.b.scores["model"])
    assert set(models["model"]) == shared and ONLY_A_MODEL not in shared and ONLY_B_MODEL not in shared
    assert np.allclose(models["macro_score_delta"], models["macro_score_b"] - models["macro_score_a"])
    assert (models["macro_score_delta_lo"] <= models["macro_score_delta"]).all()
    assert (models["macro_score_delta"] <= models["macro_score_delta_hi"]).all()
    assert models["interval_method"].str.startswith("paired stratified item bootstrap").all()


def test_mmlu_like_for_like_macro_score_from_the_common_items_by_hand(mmlu_cli):
    pair, models, _, _, _ = mmlu_cli
    model = "Llama-2-7b-hf"
    a = pair.a.items[pair.a.items["model"] == model].astype({"item": str, "domain": str})
    b = pair.b.items[pair.b.items["model"] == model].astype({"item": str, "domain": str})
    both = a.merge(b, on=["domain", "item"], suffixes=("_a", "_b"))
    per_domain = both.groupby("domain")[["correct_a", "correct_b"]].mean()
    row = models.set_index("model").loc[model]
    assert row["n_items"] == len(both)
    assert row["macro_score_a"] == pytest.approx(per_domain["correct_a"].mean())
    assert row["macro_score_b"] == pytest.approx(per_domain["correct_b"].mean())
    whole_a = a.groupby("domain")["correct"].mean().mean()
    assert row["macro_score_all_a"] == pytest.approx(whole_a)


def test_mmlu_items_csv_lists_every_known_change(mmlu_cli):
    pair, _, items, _, _ = mmlu_cli
    by = items.groupby("change")["item"].apply(set)
    assert by["key_changed"] == pair.key_changed
    assert by["added"] == pair.added and by["removed"] == pair.removed
    moved = set(items.loc[items["changes"].str.contains("difficulty_moved"), "item"])
    assert pair.easier <= moved
    assert (items.loc[items["changes"].str.contains("difficulty_moved"), "q_value"] < 0.05).all()


def test_mmlu_findings_on_stderr(mmlu_cli):
    pair, _, _, _, stderr = mmlu_cli
    assert f"1 model added ({ONLY_B_MODEL}: only in v2.csv.gz)" in stderr
    assert f"1 model removed ({ONLY_A_MODEL}: only in v1.csv.gz)" in stderr
    assert f"items: {len(pair.added)} added, {len(pair.removed)} removed, {len(pair.key_changed)} key changed" in stderr
    assert "Re-scoring A's recorded choices with B's changed keys" in stderr


def test_mmlu_report_reads_findings_first(mmlu_files, tmp_path):
    pair, a, b = mmlu_files
    html_path = tmp_path / "compare.html"
    code, _, stderr = run_cli("compare", a, b, "--report", html_path, "--bootstrap", 200)
    assert code == 0, stderr
    page = html_path.read_text(encoding="utf-8")
    headings = [re.sub(r"<[^>]+>|¶", "", h) for h in re.findall(r"<h[12][^>]*>(.*?)</h[12]>", page, re.S)]
    assert headings[0].startswith("What changed: v1.csv.gz → v2.csv.gz")  # the title
    assert headings[1] == "What changed"  # the first section says what changed
    lead = page[page.index('id="What-changed"'):page.index("Contents")]
    assert f"{len(pair.key_changed)} key changed" in lead and ONLY_A_MODEL in lead and "beyond noise" in lead
    # then what moved for everyone, the models beyond the field, and the items
    assert headings[2] == "Contents" and headings[3:6] == ["What moved for everyone: the benchmark or the models?",
                                                           "Models that moved beyond the field",
                                                           "Items that changed"]
    assert "The field's shift per domain (B − A)" in page and "Forest plot of the field's shift" in page
    assert "The item ledger: top entries" in page and "Per model: A, B and B − A" in page
    assert "Items that changed" in page and "What the key changes alone do" in page
    # sections that do not apply are dropped: no profiles, no repeated runs
    assert "What your task mix changes" not in page and "Run-to-run noise" not in page
    # the ledger's top entry is a key-changed item with the most evidence
    top = re.search(r"The item ledger: top entries.*?<tbody>(.*?)</tbody>", page, re.S).group(1)
    first_item = re.search(r"<t[hd][^>]*>(.*?)</t[hd]>", top, re.S).group(1)
    assert re.sub(r"<[^>]+>", "", first_item).strip() in pair.key_changed | pair.easier
    record = json.loads(html_path.with_suffix(".json").read_text(encoding="utf-8"))
    assert record["input"] == "v1.csv.gz (A) → v2.csv.gz (B)" and record["glance"]
    assert len(record["metrics"]) == record["change_shares"]["n_models"] == len(pair.a.scores["model"].unique()) - 1
    assert len(record["domains"]) == record["change_shares"]["n_domains"] == 14
    nb = json.loads(html_path.with_suffix(".ipynb").read_text())
    assert not [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert nb["metadata"]["jagged"]["parameters"]["a"] == str(a.resolve())


# --------------------------------------------------------------------------- hand-worked tables

def test_hand_items_through_the_cli(hand_files, tmp_path):
    a, b = hand_files
    code, stdout, stderr = run_cli("compare", a, b, "--bootstrap", 0, "--items-out", tmp_path / "items.csv",
                                   "-o", tmp_path / "models.csv")
    assert code == 0, stderr
    models = pd.read_csv(tmp_path / "models.csv").set_index("model")
    # common items i1 (d1), i3 i4 (d2), i5 i6 (d3): per-domain means, then their mean
    expected = {}
    for model in range(3):
        sides = []
        for table in (HAND_A, HAND_B):
            by = {}
            for item in ("i1", "i3", "i4", "i5", "i6"):
                domain, results = table[item]
                by.setdefault(domain, []).append(results[model])
            sides.append(np.mean([np.mean(v) for v in by.values()]))
        expected[f"m{model + 1}"] = sides
    for model, (va, vb) in expected.items():
        assert models.loc[model, "macro_score_a"] == pytest.approx(va)
        assert models.loc[model, "macro_score_delta"] == pytest.approx(vb - va)
    assert models["macro_score_delta_lo"].isna().all()  # --bootstrap 0: no intervals
    items = pd.read_csv(tmp_path / "items.csv", dtype={"item": str}).set_index("item")
    assert items["change"].to_dict() == {"i4": "key_changed", "i7": "added", "i2": "removed"}
    assert items.loc["i4", "key_a"] == "A" and items.loc["i4", "key_b"] == "B"


def test_hand_scores_through_the_cli_and_models_on_stdout(tmp_path):
    a = _scores_csv(tmp_path / "a.csv", [("m1", "d1", 0.5, 100), ("m1", "d2", 0.7, 100), ("m2", "d1", 0.2, 100),
                                         ("m2", "d2", 0.4, 100)])
    b = _scores_csv(tmp_path / "b.csv", [("m1", "d1", 0.6, 100), ("m1", "d2", 0.7, 100), ("m1", "d3", 0.9, 100),
                                         ("m2", "d1", 0.2, 100), ("m2", "d2", 0.4, 100), ("m2", "d3", 0.3, 100)])
    code, stdout, stderr = run_cli("compare", a, b, "--bootstrap", 400, "--seed", 1)
    assert code == 0, stderr
    models = pd.read_csv(io.StringIO(stdout)).set_index("model")
    assert models.loc["m1", "macro_score_a"] == pytest.approx(0.6)  # (0.5 + 0.7) / 2 on d1, d2
    assert models.loc["m1", "macro_score_b"] == pytest.approx(0.65)  # (0.6 + 0.7) / 2: d3 is not shared
    assert models.loc["m1", "macro_score_all_b"] == pytest.approx((0.6 + 0.7 + 0.9) / 3)
    assert models.loc["m2", "macro_score_delta"] == pytest.approx(0.0)
    # m1's cv_error on the shared domains: e = (0.5, 0.3) -> sd 0.1 / mean 0.4; B: (0.4, 0.3) -> 0.05 / 0.35
    assert models.loc["m1", "cv_error_a"] == pytest.approx(0.25)
    assert models.loc["m1", "cv_error_b"] == pytest.approx(0.05 / 0.35)
    assert models["interval_method"].str.startswith("parametric binomial").all()
    assert "1 domain added (d3: only in b.csv)" in stderr


def test_weights_and_profiles_add_dep_score_and_wedge_deltas(tmp_path):
    a = _scores_csv(tmp_path / "a.csv", [("m", "d1", 0.5, 100), ("m", "d2", 0.6, 100)])
    b = _scores_csv(tmp_path / "b.csv", [("m", "d1", 0.7, 100), ("m", "d2", 0.6, 100)])
    weights = tmp_path / "w.csv"
    pd.DataFrame({"profile": ["p", "p"], "domain": ["d1", "d2"], "weight": [3, 1]}).to_csv(weights, index=False)
    code, stdout, stderr = run_cli("compare", a, b, "--weights", weights, "--bootstrap", 0)
    assert code == 0, stderr
    row = pd.read_csv(io.StringIO(stdout)).iloc[0]
    assert row["profile"] == "p"
    assert row["dep_score_a"] == pytest.approx(0.525) and row["dep_score_delta"] == pytest.approx(0.15)
    assert row["wedge_delta"] == pytest.approx(0.1 - 0.15)


def test_repeats_add_the_run_to_run_noise_floor(hand_files, tmp_path):
    a, b = hand_files
    code, _, stderr = run_cli("compare", a, b, "--repeats", "--bootstrap", 0, "-o", tmp_path / "m.json")
    assert code == 0, stderr
    models = pd.read_json(tmp_path / "m.json")
    assert models["beyond_run_noise"].dtype == bool
    assert "Run-to-run noise:" in stderr


def test_two_releases_in_one_file_split_into_the_field_and_the_models(tmp_path):
    # Δ = B − A: every model drops 0.2 on d1 (the benchmark), m3 gains 0.09 everywhere (the model)
    a = {"m1": (0.5, 0.6, 0.7), "m2": (0.6, 0.7, 0.8), "m3": (0.4, 0.5, 0.6)}
    rows = [(m, f"d{j + 1}", s, 100, "r1") for m, v in a.items() for j, s in enumerate(v)]
    rows += [(m, d, round(s + (-0.2 if d == "d1" else 0) + (0.09 if m == "m3" else 0), 2), n, "r2")
             for m, d, s, n, _ in rows]
    both = tmp_path / "releases.csv"
    pd.DataFrame(rows, columns=["model", "domain", "score", "n_items", "release"]).to_csv(both, index=False)
    code, stdout, stderr = run_cli("compare", both, both, "--where-a", "release=r1", "--where-b", "release=r2",
                                   "--bootstrap", 400, "--domains-out", tmp_path / "domains.csv", "-o",
                                   tmp_path / "models.csv")
    assert code == 0, stderr
    assert "A is releases.csv [release=r1], B is releases.csv [release=r2]" in stderr
    # shift = column means (-0.17, 0.03, 0.03); μ = -0.0367; vs field = row means - μ = (-0.03, -0.03, +0.06);
    # sums of squares: overall 9μ² = 0.0121, domains 3·Σ(shift - μ)² = 0.08, models 3·Σβ² = 0.0162, residual 0
    assert "85% of the squared change on the 9 shared cells is the benchmark's" in stderr
    assert "an overall shift of -0.0367" in stderr and "15% is the models'" in stderr
    assert "1 of 3 domains moved for every model beyond noise" in stderr and "d1 -0.1700 [" in stderr
    domains = pd.read_csv(tmp_path / "domains.csv").set_index("domain")
    np.testing.assert_allclose(domains["shift"], [-0.17, 0.03, 0.03])
    assert domains["beyond_noise"].tolist() == [True, False, False]
    assert (domains["shift_lo"] <= domains["shift"]).all() and (domains["shift"] <= domains["shift_hi"]).all()
    assert stdout == ""
    models = pd.read_csv(tmp_path / "models.csv").set_index("model")
    np.testing.assert_allclose(models["macro_delta_vs_field"], [-0.03, -0.03, 0.06], atol=1e-12)
    np.testing.assert_allclose(models["macro_score_delta"] - models["macro_delta_vs_field"], -0.11 / 3)
    cols = list(models.columns)
    assert cols[cols.index("macro_score_delta_hi") + 1] == "macro_delta_vs_field"  # beside the raw change
    # --where still applies to both sides; a side-only filter that matches nothing names the file and values
    assert_bad_input("compare", both, both, "--where-a", "release=r9", "--where-b", "release=r2",
                     fragments=("releases.csv: --where release=r9: no row has release = 'r9'", "'r1', 'r2'"))
    assert_bad_input("compare", both, both, "--where-a", "release", fragments=("expected COLUMN=VALUE",))
    assert_bad_input("compare", both, both, "--where-a", "release=r*", fragments=("no row has release = 'r*'",))
    assert_bad_input("compare", both, both, "--where", "release=r1", "--where-b", "release=r2",
                     fragments=("no row matches all of",))
    with pytest.raises(JaggedInputError, match="--where-a: side A is the bundled item-level responses"):
        compare_inputs(None, both, where_a=["release=r1"], bootstrap=0)


# --------------------------------------------------------------------------- bad input: one line, exit 2

def test_no_model_in_common(tmp_path):
    a = _scores_csv(tmp_path / "a.csv", [("m1", "d1", 0.5, 10), ("m1", "d2", 0.6, 10)])
    b = _scores_csv(tmp_path / "b.csv", [("m2", "d1", 0.5, 10), ("m2", "d2", 0.6, 10)])
    assert_bad_input("compare", a, b, fragments=("a.csv and b.csv have no model in common",))


def test_no_domain_in_common(tmp_path):
    a = _scores_csv(tmp_path / "a.csv", [("m1", "d1", 0.5, 10), ("m1", "d2", 0.6, 10)])
    b = _scores_csv(tmp_path / "b.csv", [("m1", "d3", 0.5, 10), ("m1", "d4", 0.6, 10)])
    assert_bad_input("compare", a, b, fragments=("have no domain in common",))


def test_items_out_without_item_level_results(tmp_path):
    a = _scores_csv(tmp_path / "a.csv", [("m1", "d1", 0.5, 10), ("m1", "d2", 0.6, 10)])
    assert_bad_input("compare", a, a, "--items-out", tmp_path / "i.csv",
                     fragments=("--items-out needs item-level results on both sides",))
    assert not (tmp_path / "i.csv").exists()


def test_repeats_without_item_level_results(tmp_path):
    a = _scores_csv(tmp_path / "a.csv", [("m1", "d1", 0.5, 10), ("m1", "d2", 0.6, 10)])
    assert_bad_input("compare", a, a, "--repeats", fragments=("item-level results on both sides",))


def test_missing_file_bad_weights_bad_outputs_and_bad_values(tmp_path, hand_files):
    a, b = hand_files
    assert_bad_input("compare", a, tmp_path / "missing.csv", fragments=("missing.csv",))
    weights = tmp_path / "w.csv"
    pd.DataFrame({"profile": ["p"], "domain": ["d1"], "weight": [1]}).to_csv(weights, index=False)
    assert_bad_input("compare", a, b, "--weights", weights, fragments=("d2",))
    assert_bad_input("compare", a, b, "--report", tmp_path / "r.txt", fragments=("must end in .html",))
    assert_bad_input("compare", a, b, "-o", tmp_path / "m.txt", fragments=("must end in .csv or .json",))
    assert_bad_input("compare", a, b, "--alpha", 1.5)
    assert_bad_input("compare", a, b, "--ci", 1)


def test_compare_report_checks_parameters_before_a_kernel_starts(hand_files, tmp_path):
    a, b = hand_files
    with pytest.raises(JaggedInputError, match="parameter 'alpha' must be a number strictly between 0 and 1"):
        compare_report(a, b, tmp_path / "r.html", alpha=0.0)
    with pytest.raises(JaggedInputError, match="unknown parameter 'focus_model'"):
        compare_report(a, b, tmp_path / "r.html", focus_model="m1")
    with pytest.raises(JaggedInputError, match="parameter 'bootstrap' must be an integer"):
        compare_report(a, b, tmp_path / "r.html", bootstrap=-1)
    assert not list(tmp_path.iterdir())


def test_compare_report_reruns_from_its_stored_parameters(hand_files, tmp_path):
    """The "rerun this report" command of a compare report works: the same two releases of one file, same
    findings; the JSON beside it is filled like a report's."""
    a, b = hand_files
    both = tmp_path / "both.csv"
    pd.concat([pd.read_csv(a).assign(release="v1"), pd.read_csv(b).assign(release="v2")]).to_csv(both, index=False)
    first = tmp_path / "compare.html"
    code, _, stderr = run_cli("compare", both, both, "--where-a", "release=v1", "--where-b", "release=v2",
                              "--bootstrap", 0, "--alpha", 0.1, "--report", first)
    assert code == 0, stderr
    record = json.loads(first.with_suffix(".json").read_text(encoding="utf-8"))
    assert record["input"] == "both.csv [release=v1] (A) → both.csv [release=v2] (B)"
    assert record["provenance"]["A: input"] == "both.csv [release=v1]" and "A: input SHA-256" in record["provenance"]
    assert record["parameters"]["where_a"] == ["release=v1"] and record["parameters"]["alpha"] == 0.1
    found = {g["section"]: g for g in record["glance"]}
    assert found["shares"]["value"] == pytest.approx(1 / 3) and found["shares"]["sentence"].startswith("33% of")
    assert {g["section"] for g in record["glance"]} >= {"shares", "domains", "models", "changes", "ranks"}
    assert [m["model"] for m in record["metrics"]] == ["m1", "m2", "m3"]
    assert record["metrics"][0]["macro_delta_vs_field"] == pytest.approx(1 / 3 - 2 / 9)
    assert [d["domain"] for d in record["domains"]] == ["d1", "d2", "d3"]
    shares = record["change_shares"]
    assert shares["benchmark"] + shares["models"] == pytest.approx(1.0) and shares["noise"] is None  # no bootstrap
    again = tmp_path / "again.html"
    code, _, stderr = run_cli("report", "--params", first, "-o", again)
    assert code == 0, stderr
    html = again.read_text(encoding="utf-8")
    assert "What changed" in html and "i4" in html and "both.csv [release=v2]" in html
    from jagged.report.rerun import read_parameters

    stored = read_parameters(again)
    assert stored.notebook == "compare_report"
    assert (stored.parameters["a"], stored.parameters["b"]) == (str(both), str(both))
    assert (stored.parameters["where_a"], stored.parameters["where_b"]) == (["release=v1"], ["release=v2"])
    assert stored.parameters["alpha"] == 0.1 and stored.parameters["bootstrap"] == 0
