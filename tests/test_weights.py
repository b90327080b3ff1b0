"""Weights files, built-in profiles and every weights error, via the library and the CLI."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import BUNDLED

import jagged
from jagged.analysis import resolve_profiles  # the public wrapper: reads the weights file first
from jagged.cli import main
from jagged.errors import JaggedInputError
from jagged.readers.weights import read_weights
from jagged.stats.deployment import deployment_metrics
from jagged.stats.weights import BUNDLED_PROFILES, items_coverage, profile_descriptions

SCORES_CSV = """model,domain,score,n_items
a,x,0.9,10
a,y,0.8,30
a,z,0.5,60
b,x,0.6,10
b,y,0.7,30
b,z,0.4,60
"""


@pytest.fixture
def scores_file(tmp_path: Path) -> Path:
    path = tmp_path / "scores.csv"
    path.write_text(SCORES_CSV)
    return path


@pytest.fixture
def scores(scores_file: Path) -> pd.DataFrame:
    return jagged.load_scores(scores_file)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _cli(*args: str):
    return CliRunner().invoke(main, list(args))


# ------------------------------------------------------------------ reading and normalising


def test_csv_profiles_are_normalised_within_each_profile(tmp_path, scores):
    path = _write(tmp_path, "w.csv", "profile,domain,weight,comment\n"
                  "p,x,2,two\np,y,3,\np,z,5,\nq,x,1,\nq,y,1,\nq,z,2,\n")
    weights = resolve_profiles(scores, path)
    assert weights.index.tolist() == ["p", "q"]
    assert weights.columns.tolist() == ["x", "y", "z"]
    np.testing.assert_allclose(weights.loc["p"], [0.2, 0.3, 0.5], rtol=0, atol=1e-15)
    np.testing.assert_allclose(weights.loc["q"], [0.25, 0.25, 0.5], rtol=0, atol=1e-15)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    assert read_weights(path)["comment"].tolist()[0] == "two"


def test_csv_without_profile_column_is_named_after_the_file(tmp_path, scores):
    path = _write(tmp_path, "my_mix.csv", "domain,weight\nz,1\ny,1\nx,2\n")
    weights = resolve_profiles(scores, path)
    assert weights.index.tolist() == ["my_mix"]
    np.testing.assert_allclose(weights.loc["my_mix", ["x", "y", "z"]], [0.5, 0.25, 0.25])


@pytest.mark.parametrize("text", [
    "- {profile: p, domain: x, weight: 2, comment: two}\n- {profile: p, domain: y, weight: 3}\n"
    "- {profile: p, domain: z, weight: 5}\n",
    "p:\n  x: 2\n  y: 3\n  z: 5\n",
    "p:\n  description: an example\n  weights: {x: 2, y: 3, z: 5}\n",
    "p:\n  - {domain: x, weight: 2}\n  - {domain: y, weight: 3}\n  - {domain: z, weight: 5}\n",
])
def test_yaml_shapes(tmp_path, scores, text):
    weights = resolve_profiles(scores, _write(tmp_path, "w.yaml", text))
    assert weights.index.tolist() == ["p"]
    np.testing.assert_allclose(weights.loc["p"], [0.2, 0.3, 0.5], atol=1e-15)


def test_flat_yaml_mapping_is_one_profile_named_after_the_file(tmp_path, scores):
    weights = resolve_profiles(scores, _write(tmp_path, "clinic.yml", "x: 1\ny: 1\nz: 2\n"))
    assert weights.index.tolist() == ["clinic"]


def test_missing_weight_zero_gives_absent_domains_no_exposure(tmp_path, scores):
    path = _write(tmp_path, "w.csv", "domain,weight\nx,1\ny,3\n")
    weights = resolve_profiles(scores, path, missing_weight="zero")
    np.testing.assert_allclose(weights.iloc[0], [0.25, 0.75, 0.0])


def test_profile_selection_order_and_builtins(tmp_path, scores):
    path = _write(tmp_path, "w.csv", "profile,domain,weight\np,x,1\np,y,1\np,z,1\nq,x,1\nq,y,0\nq,z,0\n")
    weights = resolve_profiles(scores, path, profiles=["items", "q", "uniform"])
    assert weights.index.tolist() == ["items", "q", "uniform"]
    np.testing.assert_allclose(weights.loc["items"], [0.1, 0.3, 0.6])
    assert (weights.loc["uniform"].to_numpy() == 1.0 / 3).all()
    assert resolve_profiles(scores).shape == (0, 3)


def test_items_uses_largest_item_count_per_domain(tmp_path):
    """With per-model n_items differences the shared count is the largest (full coverage)."""
    path = _write(tmp_path, "s.csv", "model,domain,score,n_items\na,x,0.5,10\na,y,0.5,30\n"
                  "b,x,0.5,5\nb,y,0.5,30\n")
    scores = jagged.load_scores(path)
    np.testing.assert_allclose(resolve_profiles(scores, profiles=["items"]).loc["items"], [0.25, 0.75])
    coverage = items_coverage(scores)
    assert coverage["a"] == 1.0 and coverage["b"] == pytest.approx(35 / 40)


def test_bundled_profiles_are_illustrative_and_complete():
    table = read_weights(BUNDLED_PROFILES)
    scores = jagged.load_scores(BUNDLED)
    weights = resolve_profiles(scores, BUNDLED_PROFILES)
    assert len(weights) >= 3
    assert {"law_office", "health_clinic", "engineering_team"} <= set(weights.index)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-12)
    assert (table["comment"].str.len() > 10).all()
    assert table["comment"].str.startswith("Illustrative").all()
    descriptions = profile_descriptions(table)
    assert descriptions.str.contains("ILLUSTRATIVE").all() and len(descriptions) == len(weights)


def test_bundled_profiles_ship_as_package_data():
    import tomllib

    from conftest import ROOT

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "*.csv" in data["jagged.data"]
    assert "written by us" in (ROOT / "jagged" / "data" / "PROVENANCE.md").read_text()


# ------------------------------------------------------------------ items profile = item-level mean


def test_items_profile_equals_item_level_mean(shared_data):
    """The ``items`` dep_score against the item-level file, recomputed with pandas.

    For the 26 models that answered all 12,032 questions, Σ_d n_d s_d / Σ n_d is the mean of
    ``correct`` over all items (1e-12). DeepSeek-Coder-V2 (10,351 items: only 143 of 969
    engineering and 344 of 1,132 chemistry questions) and the two gemini models (12,012 and
    12,020 items) have partial coverage, so one shared weight vector cannot reproduce their
    own item-level means. The ``items`` profile weights every model by the full benchmark's
    domain sizes; their dep_score equals that composition-adjusted mean (1e-12), and differs
    from their own item-level mean by -0.0061 (DeepSeek: its missing items are mostly in hard
    domains, so its own mean flatters it) and +0.00004 / +0.00006 (gemini flash / pro).
    """
    items = pd.read_csv(shared_data / "mmlu_pro_item_level.csv", usecols=["model", "domain", "correct"])
    micro = items.groupby("model")["correct"].mean()
    counts = items.groupby(["model", "domain"]).size().unstack()
    per_domain = items.groupby(["model", "domain"])["correct"].mean().unstack()
    full = counts.max()
    adjusted = (per_domain * full).sum(axis=1) / full.sum()

    scores = jagged.load_scores(BUNDLED)
    table = deployment_metrics(scores, resolve_profiles(scores, profiles=["items"])).set_index("model")
    assert set(table.index) == set(micro.index) and len(table) == 29
    complete = counts.index[(counts == full).all(axis=1)]
    partial = sorted(set(micro.index) - set(complete))
    assert partial == ["DeepSeek-Coder-V2", "gemini-1.5-flash-002", "gemini-1.5-pro-002"]
    assert len(complete) == 26
    for model in complete:
        assert abs(table.loc[model, "dep_score"] - micro[model]) <= 1e-12, model
    for model in partial:
        assert abs(table.loc[model, "dep_score"] - adjusted[model]) <= 1e-12, model
    gap = (table.loc[partial, "dep_score"] - micro[partial]).round(5)
    assert gap.to_dict() == {"DeepSeek-Coder-V2": -0.00611, "gemini-1.5-flash-002": 0.00004,
                             "gemini-1.5-pro-002": 0.00006}
    assert items_coverage(scores)["DeepSeek-Coder-V2"] == pytest.approx(10351 / 12032)


def test_items_note_in_metrics_table_for_partial_coverage():
    from jagged.analysis import AnalysisOptions, metrics_table

    table = metrics_table(jagged.load(BUNDLED), AnalysisOptions(profiles=("items",)))
    note = table.set_index("model")["note"]
    assert "cover 86.0%" in note["DeepSeek-Coder-V2"]
    assert note["Meta-Llama-3-70B"] == ""


# ------------------------------------------------------------------ every error, via the CLI

BAD_WEIGHTS = [
    ("negative", "w.csv", "domain,weight\nx,1\ny,-0.5\nz,-2\n",
     ["negative", "y=-0.5 (line 3)", "z=-2 (line 4)"]),
    ("nan", "w.csv", "domain,weight\nx,1\ny,nan\nz,1\n", ["missing or NaN", "y (line 3)"]),
    ("empty cell", "w.csv", "domain,weight\nx,1\ny,\nz,1\n", ["missing or NaN", "y (line 3)"]),
    ("non-numeric", "w.csv", "domain,weight\nx,lots\ny,1\nz,some\n",
     ["non-numeric", "x='lots' (line 2)", "z='some' (line 4)"]),
    ("infinite", "w.csv", "domain,weight\nx,inf\ny,1\nz,1\n", ["infinite", "x"]),
    ("yaml nan", "w.yaml", "x: .nan\ny: 1\nz: 1\n", ["missing or NaN", "x"]),
    ("yaml bool", "w.yaml", "x: yes\ny: 1\nz: 1\n", ["non-numeric", "x=True"]),
    ("all zero", "w.csv", "profile,domain,weight\np,x,1\np,y,1\np,z,1\nq,x,0\nq,y,0\nq,z,0\n",
     ["all weights zero", "q"]),
    ("unknown domain", "w.csv", "domain,weight\nx,1\ny,1\nz,1\nlaw,2\nX,1\n",
     ["absent from the scores", "law", "X (did you mean 'x'?)"]),
    ("missing domain", "w.csv", "domain,weight\nx,1\n",
     ["profile 'w' has no weight for score domain(s) y, z", "--missing-weight zero"]),
    ("duplicate", "w.csv", "domain,weight\nx,1\nx,2\ny,1\nz,1\n", ["given twice", "w/x"]),
    ("no weight column", "w.csv", "domain,share\nx,1\n", ["missing column(s) weight"]),
    ("reserved name", "w.csv", "profile,domain,weight\nuniform,x,1\nuniform,y,1\nuniform,z,1\n",
     ["reserved"]),
    ("empty profile name", "w.csv", "profile,domain,weight\np,x,1\n,y,1\n", ["empty profile name (line 3)"]),
    ("bad yaml", "w.yaml", "x: [1, 2\n", ["not valid YAML (line 2)"]),
    ("yaml scalar", "w.yaml", "just text\n", ["expected a list"]),
]


def _assert_one_line_error(result, fragments):
    assert result.exit_code == 2, (result.exit_code, result.stderr, result.exception)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jagged: error: "), result.stderr
    assert "Traceback" not in result.output + result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@pytest.mark.parametrize("case, name, text, fragments", BAD_WEIGHTS, ids=[c[0] for c in BAD_WEIGHTS])
def test_weights_errors_exit_2_with_one_line(tmp_path, scores_file, case, name, text, fragments):
    path = _write(tmp_path, name, text)
    result = _cli("metrics", str(scores_file), "--weights", str(path))
    _assert_one_line_error(result, fragments)
    with pytest.raises(JaggedInputError):
        resolve_profiles(jagged.load_scores(scores_file), path)


def test_missing_domain_is_fine_with_missing_weight_zero(tmp_path, scores_file):
    path = _write(tmp_path, "w.csv", "domain,weight\nx,1\n")
    result = _cli("metrics", str(scores_file), "--weights", str(path), "--missing-weight", "zero")
    assert result.exit_code == 0, result.stderr
    assert "Kendall tau" in result.stderr


def test_missing_weights_file(tmp_path, scores_file):
    result = _cli("metrics", str(scores_file), "--weights", str(tmp_path / "nope.csv"))
    _assert_one_line_error(result, ["nope.csv", "no such weights file"])


def test_unknown_profile_name(tmp_path, scores_file):
    path = _write(tmp_path, "w.csv", "profile,domain,weight\np,x,1\np,y,1\np,z,1\n")
    result = _cli("metrics", str(scores_file), "--weights", str(path), "--profile", "clinic")
    _assert_one_line_error(result, ["unknown profile(s) clinic", "available: p, uniform, items"])


def test_items_profile_without_n_items(tmp_path):
    path = _write(tmp_path, "s.csv", "model,domain,score\na,x,0.5\na,y,0.6\n")
    result = _cli("metrics", str(path), "--profile", "items")
    _assert_one_line_error(result, ["profile 'items' needs n_items", "x, y"])


def test_bad_missing_weight_choice(scores_file):
    result = _cli("metrics", str(scores_file), "--profile", "uniform", "--missing-weight", "maybe")
    assert result.exit_code == 2 and "Traceback" not in result.output
    with pytest.raises(JaggedInputError, match="missing weight policy"):
        resolve_profiles(jagged.load_scores(scores_file), profiles=["uniform"], missing_weight="maybe")


def test_report_weights_and_illustrative_label():
    """The bundled scores default to the bundled profiles; user scores use only what is given."""
    from jagged.stats.weights import is_illustrative, report_weights

    assert report_weights("", "") == str(BUNDLED_PROFILES)
    assert report_weights("", "mix.csv") == "mix.csv"
    assert report_weights("my.csv", "") is None
    assert is_illustrative(str(BUNDLED_PROFILES), ["law_office", "uniform"])
    assert not is_illustrative(str(BUNDLED_PROFILES), ["uniform", "items"])
    assert not is_illustrative("mix.csv", ["law_office"])


def test_weights_of_1e308_are_uniform_not_an_overflow(tmp_path, scores):
    """Issue 17: Σ of three 1e308s overflows to inf, and w / inf gave every weight 0 (dep_score 0)."""
    path = tmp_path / "huge.csv"
    path.write_text("profile,domain,weight\nhuge,x,1e308\nhuge,y,1e308\nhuge,z,1e308\n"
                    "tilted,x,1.7976931348623157e308\ntilted,y,0.8988465674311579e308\ntilted,z,1e-300\n")
    weights = resolve_profiles(scores, path)
    assert (weights.loc["huge"] == 1 / 3).all()
    np.testing.assert_allclose(weights.loc["tilted"], [2 / 3, 1 / 3, 0.0], rtol=1e-15, atol=1e-300)
    table = deployment_metrics(scores, weights).set_index(["profile", "model"])
    macro = jagged.jaggedness(scores).set_index("model")["macro_score"]
    huge = table.loc["huge"]
    assert (huge["wedge"] == 0.0).all() and (huge["wedge_bound"] == 0.0).all()
    np.testing.assert_allclose(huge["dep_score"], macro.loc[huge.index], rtol=0, atol=1e-15)
    tilted = table.loc["tilted"]
    np.testing.assert_allclose(tilted.loc["a", "dep_score"], 2 / 3 * 0.9 + 1 / 3 * 0.8, rtol=1e-14)
    assert (tilted["wedge"].abs() <= tilted["wedge_bound"] + 1e-15).all()


@pytest.mark.parametrize("row, problem", [
    ([1.0, np.inf, 2.0], "not a finite number"), ([1.0, np.nan, 2.0], "not a finite number"),
    ([1.0, -1e-300, 2.0], "negative weight"), ([0.0, 0.0, 0.0], "all weights zero"),
])
def test_normalise_weights_rejects_what_cannot_be_a_mix_naming_the_profile(row, problem):
    from jagged.stats.weights import normalise_weights

    good = [1.0, 2.0, 3.0]
    with pytest.raises(JaggedInputError, match=problem) as caught:
        normalise_weights(np.array([good, row]), ["fine", "clinic"], "w.csv")
    message = str(caught.value)
    assert message.startswith("w.csv: ") and "clinic" in message and "fine" not in message and "\n" not in message


@pytest.mark.parametrize("row, problem", [
    ([0.2, 0.3, 0.6], "do not sum to 1"), ([0.5, np.nan, 0.5], "not finite"), ([1.2, -0.2, 0.0], "negative"),
])
def test_deployment_metrics_refuses_weights_that_are_not_a_normalised_mix(scores, row, problem):
    weights = pd.DataFrame([[1 / 3] * 3, row], index=["uniform", "clinic"], columns=["x", "y", "z"])
    with pytest.raises(JaggedInputError, match=problem) as caught:
        deployment_metrics(scores, weights)
    assert "clinic" in str(caught.value) and "uniform" not in str(caught.value)


@pytest.mark.parametrize("text, fragment", [
    ("a: &x [1, 2]\nb: *x\n", "YAML anchors"),
    ("law: !!binary aGVsbG8=\n", "YAML tag !!binary is not allowed"),
    ("law: !!python/object:os.system ls\n", "is not allowed"),
    ("l0: &a [1,1,1,1,1,1,1,1,1]\nl1: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nl2: [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n",
     "YAML anchors"),
])
def test_hostile_weights_yaml_is_refused_before_it_is_built(tmp_path, text, fragment):
    """A weights YAML is untrusted: no anchors/aliases (alias bombs), no tags beyond plain data."""
    path = tmp_path / "w.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(JaggedInputError, match=re.escape(fragment)):
        read_weights(path)


# ------------------------------------------------------------------ stats take a table, the API a path or a table


def test_public_resolve_profiles_is_the_analysis_wrapper():
    from jagged import analysis

    assert jagged.resolve_profiles is analysis.resolve_profiles


def test_a_table_in_memory_gives_the_same_matrix_as_its_file(tmp_path, scores):
    """stats.weights.resolve_profiles reads no file: the table read once gives the file's numbers."""
    from jagged.stats import weights as profile_stats

    path = _write(tmp_path, "w.csv", "profile,domain,weight\np,x,2\np,y,3\np,z,5\nq,x,1\nq,y,1\n")
    from_file = resolve_profiles(scores, path, profiles=["q", "uniform", "p"], missing_weight="zero")
    table = read_weights(path)
    from_stats = profile_stats.resolve_profiles(scores, table, ["q", "uniform", "p"], "zero", source="w.csv")
    pd.testing.assert_frame_equal(from_stats, from_file)
    np.testing.assert_allclose(from_file.loc["p"], [0.2, 0.3, 0.5], rtol=0, atol=1e-15)
    np.testing.assert_allclose(from_file.loc["q"], [0.5, 0.5, 0.0], rtol=0, atol=1e-15)
    frame = pd.DataFrame({"profile": ["p", "p", "p"], "domain": ["x", "y", "z"], "weight": [2.0, 3.0, 5.0]})
    np.testing.assert_allclose(jagged.resolve_profiles(scores, frame).loc["p"], [0.2, 0.3, 0.5], rtol=0, atol=1e-15)


@pytest.mark.parametrize("frame, fragment", [
    (pd.DataFrame({"profile": ["uniform"] * 3, "domain": ["x", "y", "z"], "weight": [1.0, 1.0, 1.0]}),
     "profile name(s) uniform are reserved"),
    (pd.DataFrame({"profile": ["p"], "domain": ["law"], "weight": [1.0]}),
     "weights for domain(s) absent from the scores: law"),
    (pd.DataFrame({"domain": ["x"], "weight": [1.0]}), "the weights table has no column(s) profile"),
    (pd.DataFrame({"profile": ["p"] * 3, "domain": ["x", "y", "z"], "weight": [1.0, -1.0, 1.0]}),
     "profile(s) with a negative weight: p"),
])
def test_a_bad_table_in_memory_is_refused_in_one_line(scores, frame, fragment):
    with pytest.raises(JaggedInputError) as caught:
        jagged.resolve_profiles(scores, frame)
    message = str(caught.value)
    assert message.startswith(fragment) and "\n" not in message, message


def test_describe_profiles_reads_the_file_at_the_analysis_level():
    from jagged.analysis import describe_profiles
    from jagged.stats.weights import describe_profiles as describe_table

    scores = jagged.load_scores(BUNDLED)
    weights = resolve_profiles(scores, BUNDLED_PROFILES, profiles=["law_office", "uniform"])
    described = describe_profiles(weights, BUNDLED_PROFILES).set_index("profile")
    pd.testing.assert_frame_equal(described.reset_index(), describe_table(weights, read_weights(BUNDLED_PROFILES)))
    assert "ILLUSTRATIVE" in described.loc["law_office", "description"]
    assert described.loc["law_office", "heaviest"].startswith("law ")
    assert "(Illustrative" in described.loc["law_office", "heaviest"]
    assert described.loc["uniform", "description"].startswith("every domain weighted equally")
    assert described.loc["uniform", "sigma_w"] == pytest.approx(0.0, abs=1e-15)
    bare = describe_table(weights).set_index("profile")
    assert bare.loc["law_office", "description"] == "" and "(" not in bare.loc["law_office", "heaviest"]
