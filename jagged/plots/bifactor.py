"""Figures of "Distinct abilities or one?" from the tables of :func:`jagged.stats.bifactor.fit_bifactor`."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from jagged.plots.base import check_columns, new_axes
from jagged.plots.labels import plain

#: The three parts of a domain's total-score variance, their columns, labels and colours.
PARTS = (("omega_h", "general", "#3b6ea8"), ("omega_s", "own factor", "#8c6bb1"), ("rest", "item-specific", "0.75"))


def omega_bars(data: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """One stacked horizontal bar per domain: ω_h, ω_s and the item-specific rest of its total score's variance.

    ``data`` is ``Bifactor.domains`` (``domain``, ``omega_h``, ``omega_s``, ``rest``), drawn
    in table order; each part's bars carry gid ``"omega-<column>"``. Domains whose ω is
    undefined (too few items) are drawn empty.
    """
    check_columns(data, ("domain", *(c for c, _, _ in PARTS)), "omega split")
    if ax is None:
        ax = new_axes(7.0, 1.0 + 0.32 * max(len(data), 1))
    y = np.arange(len(data))
    left = np.zeros(len(data))
    for column, label, colour in PARTS:
        width = np.nan_to_num(data[column].to_numpy(float).clip(0, 1))
        bars = ax.barh(y, width, left=left, height=0.65, color=colour, label=label)
        for patch in bars.patches:
            patch.set_gid(f"omega-{column}")
        left += width
    ax.set_yticks(y, labels=[plain(str(d)) for d in data["domain"]], fontsize=8)
    ax.set_ylim(len(data) - 0.5, -0.5)
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    ax.set_xlabel("share of the domain's total-score variance")
    ax.legend(fontsize=7.5, frameon=False, ncols=3, loc="lower left", bbox_to_anchor=(0, 1.0))
    ax.set_title("What each domain's score measures", fontsize=10, loc="left", pad=18)
    return ax


def loading_scatter(data: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """General loading against difficulty, a dot per item coloured by domain (one collection per domain).

    ``data`` is ``Bifactor.items`` (``domain``, ``difficulty``, ``general_loading``); items
    set aside (NaN) are not drawn; difficulties beyond ±6 are drawn at the edge.
    """
    import seaborn as sns

    check_columns(data, ("domain", "difficulty", "general_loading"), "item loadings")
    if ax is None:
        ax = new_axes(6.8, 4.2)
    shown = data[np.isfinite(data["difficulty"]) & np.isfinite(data["general_loading"])]
    shown = shown.assign(difficulty=shown["difficulty"].clip(-6, 6), domain=shown["domain"].astype(str).map(plain))
    domains = list(pd.unique(shown["domain"]))
    sns.scatterplot(shown, x="difficulty", y="general_loading", hue="domain", hue_order=domains, s=14, lw=0,
                    alpha=0.7, palette="husl" if len(domains) > 10 else "tab10", legend=len(domains) <= 12, ax=ax)
    ax.axhline(0.0, color="0.35", lw=0.9)
    ax.set_ylim(-1.02, 1.02)
    ax.set_xlabel("difficulty −c / √(a_g² + a_s²) (ability at P = ½)", fontsize=9)
    ax.set_ylabel("general loading λ_g", fontsize=9)
    ax.set_title("How strongly each item follows the general ability", fontsize=10, loc="left")
    if ax.get_legend() is not None:
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.25)
    return ax
