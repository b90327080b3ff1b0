"""Figures of the item audit: discrimination against difficulty, flagged share per domain."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from jagged.plots.base import check_columns, new_axes
from jagged.plots.irt import FLAGGED_COLOR, LINE_COLOR, SOUND_COLOR
from jagged.plots.labels import plain


def discrimination_difficulty(items: pd.DataFrame, *, weak: float = 0.20, ax: Axes | None = None) -> Axes:
    """Item–rest correlation against p_correct, one dot per item, flagged items marked.

    ``weak`` is drawn dashed (0 solid). Items whose correlation is undefined (every model
    alike) cannot be placed; the title counts them.
    """
    check_columns(items, ("p_correct", "r_rest", "flagged"), "item audit table")
    if ax is None:
        ax = new_axes(6.8, 4.2)
    p = items["p_correct"].to_numpy(dtype=float)
    r = items["r_rest"].to_numpy(dtype=float)
    flagged = items["flagged"].fillna(False).to_numpy(dtype=bool)
    shown = np.isfinite(p) & np.isfinite(r)
    size = 6 if shown.sum() > 2000 else 14
    ax.scatter(p[shown & ~flagged], r[shown & ~flagged], s=size, color=SOUND_COLOR, alpha=0.55, lw=0,
               label="not flagged", rasterized=True, gid="sound")
    ax.scatter(p[shown & flagged], r[shown & flagged], s=size, color=FLAGGED_COLOR, alpha=0.7, lw=0,
               label="flagged for review", rasterized=True, gid="flagged")
    ax.axhline(0.0, color=LINE_COLOR, lw=0.9)
    ax.axhline(weak, color=LINE_COLOR, lw=0.9, ls="--")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-1.02, 1.02)
    ax.set_xlabel("p_correct (share of models right)", fontsize=9)
    ax.set_ylabel("item–rest correlation", fontsize=9)
    left = int((~shown).sum())
    title = "Discrimination against difficulty"
    if left:
        title += f" ({left:,} items with an undefined correlation not shown)"
    ax.set_title(title, fontsize=10, loc="left")
    ax.legend(fontsize=7.5, frameon=False, loc="lower right")
    ax.grid(alpha=0.25)
    return ax


def flagged_share_by_domain(domains: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Horizontal bars: the share of each domain's items flagged for review, in ``domains``' order, first on top."""
    check_columns(domains, ("domain", "share_flagged", "n_items"), "domain flag table")
    n = len(domains)
    if ax is None:
        ax = new_axes(6.8, max(2.0, 0.24 * n + 1.0))
    y = np.arange(n)[::-1]
    share = domains["share_flagged"].to_numpy(dtype=float)
    ax.barh(y, share, color=FLAGGED_COLOR, alpha=0.8, height=0.7, gid="share")
    labels = [f"{plain(d)} ({int(k):,})" for d, k in zip(domains["domain"], domains["n_items"])]
    ax.set_yticks(y, labels, fontsize=7.5)
    ax.set_xlim(0, max(0.05, float(np.nanmax(share)) * 1.1 if n else 1.0))
    ax.set_xlabel("share of the domain's items flagged for review", fontsize=9)
    ax.set_title("Flagged items per domain (items in brackets)", fontsize=10, loc="left")
    ax.grid(axis="x", alpha=0.25)
    return ax
