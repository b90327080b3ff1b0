"""Two-level jaggedness: category tables, the between/within decomposition, the plot."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes

import jagged
from jagged.errors import JaggedInputError, JaggedWarning
from jagged.plots.hierarchy import category_strip
from jagged.stats import hierarchy


def table(rows: list[tuple[str, str, float, str | None]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["model", "domain", "score", "category"])
    return jagged.validate_scores(frame, "t", line_offset=None)


HAND = table([("A", "d1", 0.9, "x"), ("A", "d2", 0.7, "x"), ("A", "d3", 0.4, "y")])


def test_hand_worked_decomposition():
    # errors 0.1, 0.3 (x: mean 0.2) and 0.6 (y); overall mean 1/3
    row = hierarchy.variance_decomposition(HAND).iloc[0]
    mean = 1 / 3
    total = ((0.1 - mean) ** 2 + (0.3 - mean) ** 2 + (0.6 - mean) ** 2) / 3
    between = 2 / 3 * (0.2 - mean) ** 2 + 1 / 3 * (0.6 - mean) ** 2
    within = 2 / 3 * 0.01 + 1 / 3 * 0.0
    assert row["var_total"] == pytest.approx(total, rel=1e-12)
    assert row["var_between"] == pytest.approx(between, rel=1e-12)
    assert row["var_within"] == pytest.approx(within, rel=1e-12)
    assert row["share_between"] == pytest.approx(between / total, rel=1e-12)
    assert (row["n_leaves"], row["n_categories"]) == (3, 2)
    metrics = hierarchy.hierarchy_metrics(HAND).iloc[0]
    # categories x, y: errors 0.2, 0.6 -> sd 0.2, mean 0.4
    assert metrics["cv_categories"] == pytest.approx(0.5, rel=1e-12)
    assert metrics["cv_leaves"] == pytest.approx(np.sqrt(total) / mean, rel=1e-12)


def random_table(rng: np.random.Generator, models: int = 4, categories: int = 5) -> pd.DataFrame:
    rows = []
    for m in range(models):
        for c in range(categories):
            for leaf in range(rng.integers(1, 8)):
                rows.append((f"m{m}", f"c{c}_d{leaf}", float(rng.uniform(0, 1)), f"c{c}"))
    return table(rows)


@pytest.mark.parametrize("seed", range(20))
def test_between_plus_within_equals_total(seed):
    scores = random_table(np.random.default_rng(seed))
    out = hierarchy.variance_decomposition(scores)
    np.testing.assert_allclose(out["var_between"] + out["var_within"], out["var_total"], rtol=1e-12, atol=1e-15)
    # the total is the population variance of the leaf errors, model by model
    for row in out.itertuples():
        errors = 1 - scores.loc[scores["model"] == row.model, "score"].to_numpy()
        assert row.var_total == pytest.approx(np.var(errors), rel=1e-12)
        assert row.mean_error == pytest.approx(errors.mean(), rel=1e-12)


def test_real_mmlu_identity_and_both_levels(shared_data):
    dataset = jagged.load(shared_data / "lmeval", task="mmlu")
    scores = dataset.scores
    out = hierarchy.hierarchy_metrics(scores)
    np.testing.assert_allclose(out["var_between"] + out["var_within"], out["var_total"], rtol=1e-12)
    assert set(out["n_categories"]) == {4} and set(out["n_leaves"]) == {57}
    # CV across leaves is the ordinary jaggedness penalty
    base = jagged.jaggedness(scores).set_index("model")["cv_error"]
    np.testing.assert_allclose(out.set_index("model")["cv_leaves"], base.loc[out["model"]], rtol=1e-12)
    # CV across categories from an independent computation (unweighted mean of leaves)
    for model, group in scores.groupby("model", observed=True):
        cat_err = 1 - group.groupby("category", observed=True)["score"].mean().to_numpy()
        expected = np.std(cat_err) / np.mean(cat_err)
        got = out.loc[out["model"] == model, "cv_categories"].iloc[0]
        assert got == pytest.approx(expected, rel=1e-12)


def test_category_table_is_the_unweighted_mean_of_leaves():
    scores = table([("A", "d1", 0.9, "x"), ("A", "d2", 0.5, "x"), ("A", "d3", 0.2, "y"), ("A", "d4", 0.3, "y"),
                    ("B", "d1", 0.8, "x"), ("B", "d2", 0.8, "x"), ("B", "d3", 1.0, "y"), ("B", "d4", 1.0, "y")])
    cats = hierarchy.category_table(scores)
    got = {(r.model, r.category): (r.n_leaves, r.score, r.sd_error) for r in cats.itertuples()}
    assert got[("A", "x")] == (2, pytest.approx(0.7), pytest.approx(0.2))
    assert got[("A", "y")] == (2, pytest.approx(0.25), pytest.approx(0.05))
    # no errors inside B/y: CV undefined
    assert np.isnan(cats[(cats["model"] == "B") & (cats["category"] == "y")]["cv_error"].iloc[0])
    # B's x leaves are equal: no within spread at all
    row = hierarchy.variance_decomposition(scores).set_index("model").loc["B"]
    assert row["var_within"] == pytest.approx(0.0, abs=1e-15) and row["share_between"] == pytest.approx(1.0)


def test_csv_category_column(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("model,domain,score,category\nA,alg,0.9,math\nA,geo,0.5,math\nA,fr,0.6,lang\nA,de,0.7,lang\n")
    scores = jagged.load_scores(path)
    assert hierarchy.has_categories(scores)
    out = hierarchy.hierarchy_metrics(scores).iloc[0]
    assert out["var_between"] + out["var_within"] == pytest.approx(out["var_total"], rel=1e-12)


def test_uncategorised_leaves_are_pooled_with_a_warning():
    scores = table([("A", "d1", 0.9, "x"), ("A", "d2", 0.5, "y"), ("A", "d3", 0.2, None), ("A", "d4", 0.3, None)])
    with pytest.warns(JaggedWarning, match=r"2 domain\(s\) without a category pooled into '\(none\)': d3, d4"):
        cats = hierarchy.category_table(scores)
    assert set(cats["category"]) == {"x", "y", hierarchy.UNCATEGORISED}


def test_fewer_than_two_categories_is_an_error():
    scores = table([("A", "d1", 0.9, "x"), ("A", "d2", 0.5, "x")])
    assert not hierarchy.has_categories(scores)
    with pytest.raises(JaggedInputError, match="at least 2 categories; the scores have 1"):
        hierarchy.hierarchy_metrics(scores)


def test_category_strip_draws_every_leaf_and_category():
    scores = random_table(np.random.default_rng(3), models=2)
    leaves = hierarchy.leaf_errors(scores)
    cats = hierarchy.category_table(scores)
    import matplotlib.pyplot as plt

    _, ax = plt.subplots()
    out = category_strip(leaves, categories=cats, model="m1", overall=0.5, label_leaves=1, ax=ax)
    assert out is ax and isinstance(out, Axes)
    points = out.collections[0].get_offsets()
    m1 = leaves[leaves["model"] == "m1"]
    assert len(points) == len(m1)
    np.testing.assert_allclose(np.sort(points[:, 0]), np.sort(m1["error"].to_numpy()))
    # categories ordered by mean error, highest on top
    order = [t.get_text() for t in out.get_yticklabels()]
    expected = cats[cats["model"] == "m1"].sort_values("mean_error")["category"].tolist()
    assert order == expected
    assert len(out.texts) == len(expected)  # one label per category
    with pytest.raises(ValueError, match="holds 2 models"):
        category_strip(leaves)
    with pytest.raises(ValueError, match="no model 'zz'"):
        category_strip(leaves, model="zz")
    assert isinstance(category_strip(leaves[leaves["model"] == "m0"]), Axes)


def test_report_from_a_folder_of_lmeval_files_has_the_hierarchy_section(shared_data, tmp_path):
    import re

    from jagged.report import jaggedness_report

    html_path = jaggedness_report(shared_data / "lmeval", tmp_path / "report.html", task="mmlu")
    html = html_path.read_text()
    headings = re.findall(r'<h2 id="[^"]*">(.*?)<', html)
    assert "Two levels: categories and their domains" in headings
    assert "Jaggedness at both levels, per model" in html
    for category in ("mmlu_humanities", "mmlu_other", "mmlu_social_sciences", "mmlu_stem"):
        assert category in html
    assert "Evaluator runs: what to check before trusting the numbers" in html


def test_report_without_categories_has_no_hierarchy_section(shared_data, tmp_path):
    from jagged.report import jaggedness_report

    path = next((shared_data / "lmeval").glob("*deprecated__results*.json"))
    html = jaggedness_report(path, tmp_path / "report.html").read_text()
    assert "Two levels" not in html
    # the --limit run is listed for the reader
    assert "lm-eval --limit 10: 240 of 5761 items scored" in html


def test_metrics_cli_adds_the_category_level(tmp_path):
    """Errors: math (0.1, 0.5) mean 0.3; lang (0.4, 0.3) mean 0.35.

    Category CV: errors (0.3, 0.35), mean 0.325, population sd 0.025, CV 0.076923.
    Leaf variance: mean 0.325; squared deviations 0.050625, 0.030625, 0.005625, 0.000625,
    total 0.0875 / 4 = 0.021875. Between: (2/4)(0.3-0.325)^2 + (2/4)(0.35-0.325)^2 = 0.000625,
    share 0.000625 / 0.021875 = 0.028571.
    """
    import io

    from click.testing import CliRunner

    from jagged.cli import main

    path = tmp_path / "s.csv"
    path.write_text("model,domain,score,category\nA,alg,0.9,math\nA,geo,0.5,math\nA,fr,0.6,lang\nA,de,0.7,lang\n")
    result = CliRunner().invoke(main, ["metrics", str(path), "--bootstrap", "0"])
    assert result.exit_code == 0, result.stderr
    row = pd.read_csv(io.StringIO(result.stdout)).iloc[0]
    assert row["cv_error_categories"] == pytest.approx(0.076923, abs=5e-7)
    assert row["share_between"] == pytest.approx(0.028571, abs=5e-7)
    assert list(pd.read_csv(io.StringIO(result.stdout)).columns)[-1] == "note"
