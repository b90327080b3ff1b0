"""Estimated margins (jagged.plots.layout) against matplotlib's measured text extents."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from jagged.plots.layout import estimated_margins


def _inside(fig) -> None:
    """Every visible text's rendered box lies inside the figure (nothing cut off)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    for text in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_window_extent")):
        if not text.get_visible() or not text.get_text():
            continue
        box = text.get_window_extent(renderer)
        assert box.x0 >= -1 and box.y0 >= -1 and box.x1 <= width + 1 and box.y1 <= height + 1, text.get_text()


def test_long_tick_labels_title_and_legend_above_fit():
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    names = [f"a-rather-long-model-name-{i:02d}" for i in range(12)]
    ax.scatter(np.linspace(0, 1, 12), np.arange(12), label="points")
    ax.set_yticks(np.arange(12), labels=names, fontsize=8)
    ax.set_xlabel("error rate in a domain (1 − score)")
    ax.set_title("A title on the left", loc="left")
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.04), ncols=2)
    ax.text(1.01, 3, "CV 0.37", transform=ax.get_yaxis_transform(), ha="left")
    assert estimated_margins(fig)
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    assert not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine)
    _inside(fig)
    left = ax.get_position().x0 * 6
    assert 1.0 < left < 3.5  # room for 32 characters at 8 pt, not half the figure


def test_colour_bar_is_placed_right_of_the_axes():
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    image = ax.imshow(np.random.default_rng(0).uniform(size=(5, 7)), aspect="auto")
    ax.set_yticks(range(5), labels=[f"model {i}" for i in range(5)])
    ax.set_xticks(range(7), labels=[f"domain {j}" for j in range(7)], rotation=45, ha="right")
    bar = fig.colorbar(image, ax=ax)
    bar.set_label("error rate")
    assert estimated_margins(fig)
    assert bar.ax.get_position().x0 > ax.get_position().x1
    _inside(fig)


@pytest.mark.parametrize("case", ["panels", "aspect", "legend-beside", "figure-legend", "no-engine"])
def test_figures_it_does_not_understand_keep_their_layout(case):
    if case == "panels":
        fig, _ = plt.subplots(1, 2, layout="constrained")
    elif case == "aspect":
        fig, ax = plt.subplots(layout="constrained")
        ax.set_aspect("equal")
    elif case == "figure-legend":
        fig, ax = plt.subplots(layout="constrained")
        ax.plot([0, 1], label="x")
        fig.legend(loc="outside upper left")
    elif case == "legend-beside":
        fig, ax = plt.subplots(layout="constrained")
        ax.plot([0, 1], label="x")
        ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5))
    else:
        fig, _ = plt.subplots()
    engine = fig.get_layout_engine()
    assert not estimated_margins(fig)
    assert fig.get_layout_engine() is engine
