"""Every report figure keeps all its text inside the figure, however long the names.

Each plot is drawn as the report draws it (``jagged.views.display.figure_png``), then the
figure's tight bounding box (``Figure.get_tightbbox``: every drawn label, title, legend and
colour bar, as ``savefig(bbox_inches="tight")`` would crop to) must lie inside the figure:
anything outside would be cut off in the PNG.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jagged.analysis import analyse
from jagged.plots import deployment as deployment_plots
from jagged.plots import dispersion
from jagged.plots import hierarchy as hierarchy_plots
from jagged.plots import item_audit as item_plots
from jagged.plots import structure as structure_plots
from jagged.plots import uncertainty as uncertainty_plots
from jagged.plots.model import domain_errors_vs_field
from jagged.stats import deployment, hierarchy
from jagged.stats.item_audit import domain_flags
from jagged.stats.metrics import domain_errors
from jagged.views import display
from jagged.views import structure as structure_views

#: A model id as long as the longest of the Open LLM Leaderboard (102 characters).
LONG = "organisation-with-a-long-name/" + "merged-model_" * 5 + "instruct-v0.1-dpo-lora-r64-" + "x" * 6


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    """30 models with 100-character names, 14 domains in 3 categories, three profiles with long names."""
    rng = np.random.default_rng(3)
    folder = tmp_path_factory.mktemp("long")
    models = [f"{LONG[:96]}-{i:03d}" for i in range(30)]
    domains = [f"domain {j:02d}: a fairly long subject name" for j in range(14)]
    rows = [(m, d, float(np.clip(rng.normal(0.3 + 0.02 * i, 0.15), 0.02, 0.98)), 200, f"category {j % 3}")
            for i, m in enumerate(models) for j, d in enumerate(domains)]
    pd.DataFrame(rows, columns=["model", "domain", "score", "n_items", "category"]).to_csv(folder / "s.csv",
                                                                                          index=False)
    weights = [(f"profile-{k}-for-a-department-with-a-long-name", d, float(rng.uniform(0, 10)))
               for k in range(3) for d in domains]
    pd.DataFrame(weights, columns=["profile", "domain", "weight"]).to_csv(folder / "w.csv", index=False)
    return analyse(folder / "s.csv", weights=str(folder / "w.csv"), bootstrap=50)


def _figures(a):
    table, scores = a.table, a.scores
    focus = deployment.focus_model(table, "")
    profile = deployment.most_reordered_profile(table)
    rows = table[table["model"] == focus]
    leaves, categories = hierarchy.leaf_errors(scores), hierarchy.category_table(scores)
    errors = domain_errors(scores, focus)
    return {
        "dispersion": lambda: dispersion.error_dispersion(scores, table, limit=10),
        "heatmap": lambda: dispersion.error_heatmap(scores, table, limit=10),
        "scatter": lambda: dispersion.cv_vs_macro(table),
        "forest": lambda: uncertainty_plots.cv_forest(table, limit=10),
        "macro_vs_dep": lambda: deployment_plots.macro_vs_dep(table),
        "wedge_dots": lambda: deployment_plots.wedge_dots(table, limit=10),
        "wedge_bars": lambda: deployment_plots.wedge_bars(table, profile=profile, limit=10),
        "rank_slope": lambda: deployment_plots.rank_slope(table, profile=profile, highlight=[focus], limit=10),
        "exposure_dots": lambda: deployment_plots.exposure_dots(
            deployment.exposure_profile(scores, a.weights, focus), model=focus),
        "exposure_vs_error": lambda: deployment_plots.exposure_vs_error(
            deployment.exposure_profile(scores, a.weights, focus), profile=profile, model=focus),
        "drift_bound": lambda: deployment_plots.drift_bound(
            deployment.drift_bound_curve(rows["sd_error"].iloc[0], int(rows["n_domains"].iloc[0])), rows, model=focus),
        "category_strip": lambda: hierarchy_plots.category_strip(leaves, categories=categories, model=focus,
                                                                 overall=0.3, label_leaves=1),
        "model_field": lambda: domain_errors_vs_field(errors, model=focus),
        "variance_bars": lambda: structure_plots.variance_bars(a.structure.shares),
        "residual_heatmap": lambda: structure_plots.residual_heatmap(
            *structure_views.residual_grid(a.structure.decomposition, scores, table, limit=10)[:1],
            cut=structure_views.residual_grid(a.structure.decomposition, scores, table, limit=10)[1]),
        "relative_vs_cv": lambda: structure_plots.relative_vs_cv(table),
        "scree": lambda: structure_plots.scree(a.structure.dimensions.table(),
                                               percentile=a.structure.dimensions.percentile),
        "flagged_share": lambda: item_plots.flagged_share_by_domain(domain_flags(_audit())),
        "discrimination": lambda: item_plots.discrimination_difficulty(_audit().items),
    }


def _audit():
    """The item audit of the bundled MMLU-Pro responses (the report's items section)."""
    global _AUDIT
    if _AUDIT is None:
        _AUDIT = analyse(bootstrap=0).item_audit
    return _AUDIT


_AUDIT = None


NAMES = ["dispersion", "heatmap", "scatter", "forest", "macro_vs_dep", "wedge_dots", "wedge_bars", "rank_slope",
         "exposure_dots", "exposure_vs_error", "drift_bound", "category_strip", "model_field", "variance_bars",
         "residual_heatmap", "relative_vs_cv", "scree", "flagged_share", "discrimination"]


@pytest.mark.parametrize("name", NAMES)
def test_no_text_is_cut_off(analysis, name):
    ax = _figures(analysis)[name]()
    fig = ax.figure
    size = tuple(fig.get_size_inches())
    png = display.figure_png(ax)
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (round(size[0] * display.DEFAULT_DPI), round(size[1] * display.DEFAULT_DPI))
    renderer = fig.canvas.get_renderer()
    box = fig.get_tightbbox(renderer)  # inches
    slack = 1.5 / fig.dpi
    assert box.x0 >= -slack and box.y0 >= -slack, (name, box.bounds)
    assert box.x1 <= size[0] + slack and box.y1 <= size[1] + slack, (name, box.bounds, size)
    legends = [a.get_legend() for a in fig.axes if a.get_legend() is not None] + list(fig.legends)
    for legend in legends:
        extent = legend.get_window_extent(renderer)
        assert extent.x0 >= -1 and extent.y0 >= -1 and extent.x1 <= fig.bbox.width + 1 \
            and extent.y1 <= fig.bbox.height + 1, (name, extent.bounds)


def test_the_heatmap_keeps_the_page_width_with_long_names(analysis):
    ax = _figures(analysis)["heatmap"]()
    assert ax.figure.get_size_inches()[0] <= dispersion.PAGE_WIDTH
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert max(len(t) for t in labels) <= 32  # shortened, the end kept: "…-007"
    models = [t for t in labels if not t.startswith("median of")]
    assert len(models) == 10 and len({t[-4:] for t in models}) == 10  # the ends still tell them apart
    (mesh,) = [c for c in ax.collections if c.get_gid() == "errors"]
    image = mesh.get_window_extent(ax.figure.canvas.get_renderer())
    assert image.width > 0.45 * ax.figure.bbox.width  # the grid keeps most of the width


@pytest.mark.parametrize("name", ["heatmap", "forest", "drift_bound"])
def test_one_layout_pass_draws_the_same_pixels_as_savefig_alone(analysis, name, monkeypatch):
    """figure_png runs constrained layout once before saving; savefig on its own runs it twice."""
    import contextlib
    import io

    from PIL import Image

    once = display.figure_png(_figures(analysis)[name]())
    monkeypatch.setattr(display, "_laid_out_once", lambda figure, dpi: contextlib.nullcontext())
    twice = display.figure_png(_figures(analysis)[name]())
    pixels = [np.asarray(Image.open(io.BytesIO(png)).convert("RGB")) for png in (once, twice)]
    assert pixels[0].shape == pixels[1].shape and np.array_equal(pixels[0], pixels[1])


def test_the_figure_keeps_its_layout_engine_after_rendering(analysis):
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    ax = _figures(analysis)["heatmap"]()
    display.figure_png(ax)
    assert isinstance(ax.figure.get_layout_engine(), ConstrainedLayoutEngine)
