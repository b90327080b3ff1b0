"""Dispersion plots: assert on the drawn artists (points, labels, order), not on pixels.

Expected values are computed here independently of jagged (numpy on the raw CSV).
"""

from __future__ import annotations

import csv

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from conftest import BUNDLED
from matplotlib.text import Text

import jagged
from jagged.plots import dispersion


@pytest.fixture(scope="module")
def raw() -> dict[str, dict[str, float]]:
    """model -> domain -> score, read with the csv module."""
    out: dict[str, dict[str, float]] = {}
    with open(BUNDLED, newline="") as handle:
        for row in csv.DictReader(handle):
            out.setdefault(row["model"], {})[row["domain"]] = float(row["score"])
    return out


@pytest.fixture(scope="module")
def expected_cv(raw) -> dict[str, float]:
    cv = {}
    for model, by_domain in raw.items():
        e = 1.0 - np.array(list(by_domain.values()))
        cv[model] = float(np.sqrt(((e - e.mean()) ** 2).mean()) / e.mean())
    return cv


@pytest.fixture(scope="module")
def data():
    dataset = jagged.load()
    return dataset.scores, jagged.jaggedness(dataset.scores)


def _collection(ax, gid):
    found = [c for c in ax.collections if c.get_gid() == gid]
    assert len(found) == 1, f"expected one collection with gid {gid}"
    return found[0]


def _mesh(ax, gid="errors"):
    """The heatmap's grid: the one QuadMesh with this gid (seaborn draws cell (r, c) at (c + 0.5, r + 0.5))."""
    from matplotlib.collections import QuadMesh

    (mesh,) = [c for c in ax.collections if isinstance(c, QuadMesh) and c.get_gid() == gid]
    return mesh


def _tick_labels(ax, axis="y"):
    ticks = ax.get_yticklabels() if axis == "y" else ax.get_xticklabels()
    return [t.get_text() for t in ticks]


def test_dispersion_rows_are_models_most_jagged_first(data, expected_cv):
    scores, metrics = data
    ax = dispersion.error_dispersion(scores, metrics)
    labels = _tick_labels(ax)
    assert labels == sorted(expected_cv, key=lambda m: -expected_cv[m])
    assert ax.yaxis_inverted()  # first label at the top


def test_dispersion_draws_one_point_per_domain_score(data, raw):
    scores, metrics = data
    ax = dispersion.error_dispersion(scores, metrics)
    points = _collection(ax, "domain-errors").get_offsets()
    assert len(points) == sum(len(v) for v in raw.values()) == 406
    labels = _tick_labels(ax)
    # each point's row (nearest integer y) is its model; its x the error 1 - score
    for model_index, model in enumerate(labels):
        in_row = np.sort(points[np.abs(points[:, 1] - model_index) < 0.5, 0])
        expected = np.sort(1.0 - np.array(list(raw[model].values())))
        np.testing.assert_allclose(in_row, expected, rtol=0, atol=1e-12)


def test_dispersion_marks_each_models_mean_error(data, raw):
    scores, metrics = data
    ax = dispersion.error_dispersion(scores, metrics)
    means = _collection(ax, "mean-error").get_offsets()
    labels = _tick_labels(ax)
    assert len(means) == len(labels) == 29
    expected = [1.0 - np.mean(list(raw[m].values())) for m in labels]
    np.testing.assert_allclose(means[:, 0], expected, atol=1e-12)
    np.testing.assert_allclose(means[:, 1], np.arange(29))
    cv_texts = [t.get_text() for t in ax.texts if t.get_gid() == "cv-label"]
    assert len(cv_texts) == 29 and cv_texts[0].startswith("CV ")


def test_dispersion_limit_keeps_most_and_least_jagged(data, raw, expected_cv):
    scores, metrics = data
    ax = dispersion.error_dispersion(scores, metrics, limit=7)
    ranked = sorted(expected_cv, key=lambda m: -expected_cv[m])
    assert _tick_labels(ax) == ranked[:4] + ["median of 22 other models"] + ranked[-3:]
    assert ax.get_yticklabels()[4].get_fontstyle() == "italic"
    points = _collection(ax, "domain-errors").get_offsets()
    assert len(points) == 7 * 14 and not np.any(np.abs(points[:, 1] - 4) < 0.5)  # row 4 is the summary
    # the summary row: per-domain median error of the 22 models left out, computed here from the CSV
    others = ranked[4:-3]
    expected = sorted(np.median([1.0 - raw[m][d] for m in others]) for d in raw[others[0]])
    summary = _collection(ax, "others-median").get_offsets()
    np.testing.assert_allclose(np.sort(summary[:, 0]), expected, atol=1e-12)
    assert np.all(np.abs(summary[:, 1] - 4) < 0.5)
    cvs = [expected_cv[m] for m in others]
    (range_text,) = [t.get_text() for t in ax.texts if t.get_gid() == "others-cv"]
    assert range_text == f"CV {min(cvs):.2f}–{max(cvs):.2f}"
    assert "(7 of 29 models)" in ax.get_title(loc="left")


def test_heatmap_limit_adds_summary_row_and_fits_a_page_with_many_domains():
    rng = np.random.default_rng(5)
    models = [f"model-{i:03d}" for i in range(120)]
    domains = [f"domain number {j:02d}" for j in range(60)]
    table = pd.DataFrame([(m, d, rng.uniform(0.2, 0.9)) for m in models for d in domains],
                         columns=["model", "domain", "score"])
    metrics = jagged.jaggedness(table)
    ax = dispersion.error_heatmap(table, metrics, limit=10)
    rows = _tick_labels(ax)
    assert len(rows) == 11 and rows[5] == "median of 110 other models"
    grid = np.ma.getdata(_mesh(ax).get_array())
    order = metrics.sort_values("cv_error", ascending=False)["model"].tolist()
    others = table[table["model"].isin(order[5:-5])]
    expected = (1.0 - others.groupby("domain")["score"].median())
    cols = _tick_labels(ax, "x")
    np.testing.assert_allclose(grid[5], expected.loc[cols].to_numpy(), atol=1e-12)
    width, height = ax.figure.get_size_inches()
    assert width <= dispersion.PAGE_WIDTH + 1e-9 and len(cols) == 60  # every domain labelled
    size = ax.get_xticklabels()[0].get_fontsize()
    assert dispersion.MIN_LABEL_PT <= size <= 8
    ax.figure.canvas.draw()  # labels fit their columns: no two neighbouring domain labels overlap
    renderer = ax.figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels()]
    assert not any(a.overlaps(b) for a, b in zip(boxes, boxes[1:]))


def test_plots_draw_names_as_plain_shortened_text(data):
    scores, _ = data
    table = scores.astype({"model": str, "domain": str, "category": object}).copy()
    hostile = {"Yi-6B": r"a$\frac{$b", "gemma-7b": "m" * 300}
    table["model"] = table["model"].replace(hostile)
    table["domain"] = table["domain"].replace({"law": "$x^2$"})
    metrics = jagged.jaggedness(table)
    for ax in (dispersion.error_dispersion(table, metrics), dispersion.error_heatmap(table, metrics),
               dispersion.cv_vs_macro(metrics)):
        ax.figure.canvas.draw()  # mathtext would fail on the first name
        texts = [t.get_text() for t in ax.get_yticklabels() + ax.get_xticklabels() + ax.texts]
        assert r"a\$\frac{\$b" in texts
        assert all(len(t) <= 32 for t in texts)
        assert "m" * 300 not in texts


def test_dispersion_undefined_cv_last_and_profile_rows_collapsed(data):
    scores, _ = data
    perfect = pd.DataFrame({"model": "perfect", "domain": ["biology", "law"], "score": [1.0, 1.0],
                            "n_items": np.nan, "category": None})
    table = pd.concat([scores.astype({"model": str, "domain": str, "category": object}), perfect],
                      ignore_index=True)
    metrics = jagged.jaggedness(table)
    # a metrics table with one row per profile x model (as with --weights) gives each model once
    doubled = pd.concat([metrics.assign(profile="a"), metrics.assign(profile="b")], ignore_index=True)
    ax = dispersion.error_dispersion(table, doubled)
    labels = _tick_labels(ax)
    assert len(labels) == 30 == len(set(labels))
    assert labels[-1] == "perfect"


def test_dispersion_draws_on_given_axes(data):
    scores, metrics = data
    fig, ax = plt.subplots()
    assert dispersion.error_dispersion(scores, metrics, ax=ax) is ax
    assert dispersion.error_heatmap(scores, metrics, ax=fig.add_subplot(2, 1, 2)) is not ax


def test_heatmap_array_is_error_in_label_order(data, raw, expected_cv):
    scores, metrics = data
    ax = dispersion.error_heatmap(scores, metrics)
    image = _mesh(ax)
    assert not ax.images
    rows, cols = _tick_labels(ax), _tick_labels(ax, "x")
    assert rows == sorted(expected_cv, key=lambda m: -expected_cv[m])
    grid = np.ma.getdata(image.get_array())
    expected = np.array([[1.0 - raw[m][d] for d in cols] for m in rows])
    np.testing.assert_allclose(grid, expected, atol=1e-12)
    medians = np.median(expected, axis=0)
    assert np.all(np.diff(medians) >= 0)  # easiest domains on the left
    assert image.get_clim() == (0.0, 1.0)
    # each label sits on the centre of its row / column of cells
    np.testing.assert_array_equal(ax.get_yticks(), np.arange(len(rows)) + 0.5)
    np.testing.assert_array_equal(ax.get_xticks(), np.arange(len(cols)) + 0.5)
    assert ax.get_ylim() == (len(rows), 0) and ax.get_xlim() == (0, len(cols))   # row 0 at the top


def test_heatmap_masks_missing_pairs_and_annotates_small_grids(data):
    scores, _ = data
    small = scores[scores["model"].astype(str).isin(["Yi-6B", "gemma-7b", "Llama-2-7b-hf"])]
    small = small[~((small["model"] == "Yi-6B") & (small["domain"] == "law"))]
    ax = dispersion.error_heatmap(small, jagged.jaggedness(small), order="name")
    grid = _mesh(ax).get_array()
    rows, cols = _tick_labels(ax), _tick_labels(ax, "x")
    assert cols == sorted(cols)
    mask = np.ma.getmaskarray(grid)
    assert mask.sum() == 1 and mask[rows.index("Yi-6B"), cols.index("law")]
    labels = [t for t in ax.texts if t.get_gid() == "cell-label"]
    assert len(labels) == 3 * 14 - 1
    big = dispersion.error_heatmap(scores, None)
    assert not [t for t in big.texts if t.get_gid() == "cell-label"]  # 406 cells > ANNOTATE_MAX_CELLS
    assert _tick_labels(big) == sorted(_tick_labels(big))  # no metrics: rows by name


def test_cv_vs_macro_points_and_labels(data, raw, expected_cv):
    _, metrics = data
    ax = dispersion.cv_vs_macro(metrics)
    points = _collection(ax, "models").get_offsets()
    labels = [t for t in ax.texts if t.get_gid() == "model-label"]
    assert sorted(t.get_text() for t in labels) == sorted(raw)
    by_label = {t.get_text(): t.xy for t in labels}
    for model, (x, y) in by_label.items():
        assert x == pytest.approx(np.mean(list(raw[model].values())), abs=1e-12)
        assert y == pytest.approx(expected_cv[model], abs=1e-12)
    assert len(points) == 29


def test_cv_vs_macro_labels_do_not_overlap(data):
    _, metrics = data
    ax = dispersion.cv_vs_macro(metrics)
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [Text.get_window_extent(t, renderer) for t in ax.texts if t.get_gid() == "model-label"]
    overlapping = [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
                   if boxes[i].overlaps(boxes[j])]
    assert len(overlapping) <= 1


def test_cv_vs_macro_leaves_out_undefined_cv_and_labels_extremes_when_many():
    rng = np.random.default_rng(1)
    metrics = pd.DataFrame({"model": [f"m{i:02d}" for i in range(60)],
                            "macro_score": rng.uniform(0.2, 0.8, 60),
                            "cv_error": rng.uniform(0.1, 0.4, 60)})
    metrics.loc[0, "cv_error"] = np.nan
    ax = dispersion.cv_vs_macro(metrics)
    assert len(_collection(ax, "models").get_offsets()) == 59
    labelled = {t.get_text() for t in ax.texts if t.get_gid() == "model-label"}
    ranked = metrics.dropna().sort_values("cv_error", ascending=False)["model"].tolist()
    assert labelled == set(ranked[:5] + ranked[-5:])
    assert "1 model without a defined CV" in ax.get_title(loc="left")
    assert not [t for t in dispersion.cv_vs_macro(metrics, label=False).texts if t.get_gid() == "model-label"]


def test_plots_reject_tables_without_needed_columns(data):
    scores, metrics = data
    with pytest.raises(ValueError, match="mean_error"):
        dispersion.error_dispersion(scores, metrics.drop(columns="mean_error"))
    with pytest.raises(ValueError, match="limit must be at least 2"):
        dispersion.error_dispersion(scores, metrics, limit=1)


def test_long_names_differing_in_the_middle_get_distinct_labels():
    from jagged.plots.labels import LABEL_MAX, distinct_labels

    names = [("org/" + "Merged-Model_" * 3 + f"SFT_v2.1-{i:05d}" + "-x" * 40)[:100] for i in (16, 2956, 696)]
    labels = distinct_labels(names)
    assert len(set(labels)) == 3 and all(len(label) <= LABEL_MAX for label in labels)
    assert [("00016" in labels[0]), ("02956" in labels[1]), ("00696" in labels[2])] == [True] * 3
    assert distinct_labels(["same", "b", "same"]) == ["same", "b", "same #2"]
    assert distinct_labels(["a$b"]) == [r"a\$b"]
    scores = pd.DataFrame([(n, d, s) for n, s0 in zip(names, (0.2, 0.5, 0.8)) for d, s in
                           (("x", s0), ("y", s0 / 2), ("z", 0.9))], columns=["model", "domain", "score"])
    scores["n_items"], scores["category"] = np.nan, None
    ax = dispersion.error_heatmap(scores, jagged.jaggedness(scores))
    assert len(set(_tick_labels(ax))) == 3


# --------------------------------------------------------------------------- item response model (issue 19)

def test_position_plot_draws_each_domain_range_and_the_model_beyond_it_in_red():
    from matplotlib.colors import to_hex

    from jagged.plots.irt import FLAGGED_COLOR, position_plot

    data = pd.DataFrame({"domain": ["law", "math", "history"], "theta": [2.5, -3.1, 0.2],
                         "theta_sd": [0.3, 0.4, 0.1], "lower": [-2.0, -2.4, np.nan], "upper": [1.6, 3.2, 2.0],
                         "position": ["above", "below", "within"]})
    ax = position_plot(data, model="M <1>")
    labels = {float(y): t.get_text() for y, t in zip(ax.get_yticks(), ax.get_yticklabels())}
    assert labels == {2.0: "law", 1.0: "math", 0.0: "history"}                   # first domain on top
    ranges = next(c for c in ax.collections if c.get_gid() == "ranges")
    segments = [np.asarray(s) for s in ranges.get_segments()]
    # top row is the first domain; an open lower bound runs to the edge of the grid (−4)
    assert [tuple(s[:, 0]) for s in segments] == [(-2.0, 1.6), (-2.4, 3.2), (-4.0, 2.0)]
    assert [s[0, 1] for s in segments] == [2, 1, 0]
    beyond = next(line for line in ax.get_lines() if line.get_gid() == "beyond")
    assert list(beyond.get_xdata()) == [2.5, -3.1] and list(beyond.get_ydata()) == [2, 1]
    assert to_hex(beyond.get_color()) == FLAGGED_COLOR
    within = next(line for line in ax.get_lines() if line.get_gid() == "within")
    assert list(within.get_xdata()) == [0.2]
    assert ax.get_title(loc="left") == "Where M <1> sits on each domain's measuring range"
    with pytest.raises(ValueError, match="lacks column"):
        position_plot(data.drop(columns="lower"))


def test_information_plot_shows_no_negative_information_ticks():
    from jagged.plots.irt import information_plot

    curves = pd.DataFrame({"group": ["a"] * 3 + ["b"] * 3, "theta": [-1.0, 0.0, 1.0] * 2,
                           "information": [1.0, 4.0, 1.0, 0.5, 1.0, 2.0]})
    places = pd.DataFrame({"model": ["x", "y", "x", "y"], "group": ["a", "a", "b", "b"], "theta": [-0.5, 0.5, 0, 1]})
    ax = information_plot(curves, abilities=places)
    assert min(ax.get_yticks()) >= 0 and ax.get_ylim()[0] < 0       # the rugs sit below 0, unlabelled
    rug = next(line for line in ax.get_lines() if line.get_gid() == "rug:b")
    assert list(rug.get_xdata()) == [0, 1] and all(y < 0 for y in rug.get_ydata())


def _curves(n_groups: int, n_models: int = 5) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Information curves of ``n_groups`` groups (long names) and the abilities of ``n_models`` models in each."""
    theta = np.linspace(-4, 4, 41)
    names = [f"subject_number_{k:02d}" for k in range(n_groups)]
    curves = pd.DataFrame({"group": np.repeat(names, len(theta)), "theta": np.tile(theta, n_groups),
                           "information": np.concatenate([(k + 1) * np.exp(-theta ** 2 / 2) for k in range(n_groups)])})
    places = pd.DataFrame({"model": np.tile([f"m{j}" for j in range(n_models)], n_groups),
                           "group": np.repeat(names, n_models),
                           "theta": np.tile(np.linspace(-2, 2, n_models), n_groups)})
    return curves, places


def test_information_curves_name_every_domain_in_a_legend_or_in_a_panel_of_its_own():
    import warnings

    from seaborn import FacetGrid

    from jagged.plots.dispersion import PAGE_WIDTH
    from jagged.plots.irt import information_plot
    from jagged.views.display import figure_png
    from jagged.views.overview import LEGEND_MAX

    curves, places = _curves(LEGEND_MAX)
    ax = information_plot(curves, abilities=places)
    names = list(pd.unique(curves["group"]))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == names  # whole names, every one
    many, places = _curves(LEGEND_MAX + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing for a report to print: the layout fits
        grid = information_plot(many, abilities=places)
        figure_png(grid)
    assert isinstance(grid, FacetGrid) and len(grid.axes_dict) == LEGEND_MAX + 1
    assert grid.figure.get_size_inches()[0] <= PAGE_WIDTH
    names = list(pd.unique(many["group"]))
    for name, panel in zip(names, grid.axes.flat):
        assert panel.get_title() == name and panel.get_legend() is None
        (curve,) = panel.get_lines()
        assert curve.get_gid() == f"info:{name}"
        np.testing.assert_allclose(curve.get_ydata(), many.loc[many["group"] == name, "information"])
        (rug,) = [c for c in panel.collections if c.get_gid() == f"rug:{name}"]
        assert len(rug.get_segments()) == 5
    fig, ax = plt.subplots()  # on a given axes: one panel, no legend of 13 entries
    assert information_plot(many, ax=ax) is ax and ax.get_legend() is None
    assert f"{LEGEND_MAX + 1} domains, no legend" in ax.get_title(loc="left")
