"""What a task mix changes: macro vs deployment-weighted score, wedge, ranks, exposure, drift bound.

The inputs are the metrics table with profiles, the exposure table
(:func:`jagged.stats.deployment.exposure_profile`) and the drift-bound curve
(:func:`jagged.stats.deployment.drift_bound_curve`); nothing is computed here. A column with
``<column>_lo`` / ``<column>_hi`` beside it (a bootstrap) is drawn with error bars.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from jagged.plots.base import check_columns, new_axes
from jagged.plots.labels import distinct_labels, legend_columns, plain
from jagged.views.overview import ends

PROFILE_COLORS: tuple[str, ...] = ("#3b6ea8", "#c0504d", "#4f9a5a", "#8064a2", "#d08a2c", "#4bacc6",
                                   "#7f7f7f", "#b5739d")
UP_COLOR = "#4f9a5a"
DOWN_COLOR = "#c0504d"
SAME_COLOR = "0.6"
#: With ``label=True``, :func:`macro_vs_dep` labels this many models: those with the largest |wedge|.
LABEL_DEFAULT = 8


def _one_profile(table: pd.DataFrame, profile: str | None, what: str) -> tuple[pd.DataFrame, str]:
    """Rows of one profile (the only one when ``profile`` is None)."""
    check_columns(table, ("profile",), what)
    names = pd.unique(table["profile"]).tolist()
    if profile is None:
        if len(names) != 1:
            raise ValueError(f"{what} has profiles {', '.join(map(str, names))}; pass profile=")
        profile = names[0]
    if profile not in names:
        raise ValueError(f"{what} has no profile {profile!r}")
    return table[table["profile"] == profile], str(profile)


def _interval(frame: pd.DataFrame, column: str) -> np.ndarray | None:
    """Error-bar half-widths (2 × n) from ``<column>_lo`` / ``_hi`` when both exist."""
    lo, hi = f"{column}_lo", f"{column}_hi"
    if lo not in frame.columns or hi not in frame.columns:
        return None
    value = frame[column].to_numpy(dtype=float)
    lower = np.clip(value - frame[lo].to_numpy(dtype=float), 0, None)
    upper = np.clip(frame[hi].to_numpy(dtype=float) - value, 0, None)
    return np.nan_to_num(np.vstack([lower, upper]))


def _others_rule(ax: Axes, y: float, hidden: int) -> None:
    """The dashed rule where a top/bottom cut left models out, with their count."""
    ax.axhline(y, color="0.4", ls="--", lw=0.8)
    ax.text(1.0, y, f"{hidden} models not shown ", transform=ax.get_yaxis_transform(), ha="right", va="bottom",
            fontsize=7, color="0.3")


def macro_vs_dep(table: pd.DataFrame, *, profiles: Sequence[str] | None = None, label: bool | int = True,
                 ax: Axes | None = None) -> Axes:
    """Macro against deployment-weighted score, one point per model and profile, with y = x.

    With one profile, ``label`` names models: True the :data:`LABEL_DEFAULT` with the largest
    |wedge|, an int that many, False none. A point below the line has a positive wedge: the
    task mix meets the model's weaker domains.
    """
    check_columns(table, ("model", "profile", "macro_score", "dep_score", "wedge"), "metrics table")
    names = list(profiles) if profiles is not None else pd.unique(table["profile"]).tolist()
    if ax is None:
        ax = new_axes(6.4, 5.2)
    data = table[table["profile"].isin(names)]
    values = data[["macro_score", "dep_score"]].to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    low, high = (finite.min(), finite.max()) if finite.size else (0.0, 1.0)
    pad = 0.03 * max(high - low, 0.05)
    ax.plot([low - pad, high + pad], [low - pad, high + pad], color="0.45", lw=1, ls="--", zorder=1,
            label="y = x (no wedge)", gid="identity-line")
    for i, name in enumerate(names):
        sub = data[data["profile"] == name]
        color = PROFILE_COLORS[i % len(PROFILE_COLORS)]
        xerr, yerr = _interval(sub, "macro_score"), _interval(sub, "dep_score")
        if xerr is not None or yerr is not None:
            ax.errorbar(sub["macro_score"], sub["dep_score"], xerr=xerr, yerr=yerr, fmt="none",
                        ecolor=color, elinewidth=0.8, alpha=0.5, zorder=2, gid="interval")
        ax.scatter(sub["macro_score"], sub["dep_score"], s=22, color=color, edgecolor="white", lw=0.5,
                   zorder=3, label=plain(name))
        count = LABEL_DEFAULT if label is True else int(label)
        if count and len(names) == 1:
            chosen = sub.assign(_abs=sub["wedge"].abs()).nlargest(count, "_abs")
            middle = (low + high) / 2
            for row in chosen.itertuples(index=False):
                right = row.macro_score > middle
                ax.annotate(plain(row.model), (row.macro_score, row.dep_score), xytext=(-5 if right else 5, 0),
                            textcoords="offset points", ha="right" if right else "left", va="center",
                            fontsize=6.5, color="0.25", gid="model-label")
    ax.set_xlim(low - pad, high + pad)
    ax.set_ylim(low - pad, high + pad)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("macro score (every domain weighted equally)", fontsize=9)
    ax.set_ylabel("deployment-weighted score", fontsize=9)
    ax.set_title("Benchmark average vs what this task mix experiences\n(below the line: the average "
                 "overstates it)", fontsize=10, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="upper left")
    ax.grid(alpha=0.25)
    return ax


def wedge_bars(table: pd.DataFrame, *, profile: str | None = None, limit: int | None = None,
               ax: Axes | None = None) -> Axes:
    """The wedge (macro − deployment-weighted score) per model under one profile, sorted, with its bound.

    ``limit`` keeps the ``ceil(limit / 2)`` largest and ``floor(limit / 2)`` smallest wedges,
    a dashed rule where the others were left out. A bar to the right: the benchmark average
    overstates this mix's score; the grey ticks at ±wedge_bound mark the most any task mix as
    uneven as this one could move that model.
    """
    check_columns(table, ("model", "profile", "wedge", "wedge_bound"), "metrics table")
    sub, profile = _one_profile(table, profile, "metrics table")
    sub = sub[sub["wedge"].notna()].sort_values(["wedge", "model"], ascending=[False, True], kind="mergesort")
    kept, cut = ends(range(len(sub)), limit)
    hidden = len(sub) - len(kept)
    sub = sub.iloc[kept[::-1]]  # the largest wedge in the top row
    if ax is None:
        ax = new_axes(6.8, 1.0 + 0.24 * max(len(sub), 3))
    y = np.arange(len(sub))
    wedge = sub["wedge"].to_numpy(dtype=float)
    colors = np.where(wedge > 0, DOWN_COLOR, UP_COLOR)
    ax.barh(y, wedge, color=colors, height=0.7, zorder=2, gid="wedge-bar")
    bound = sub["wedge_bound"].to_numpy(dtype=float)
    ax.scatter(np.concatenate([bound, -bound]), np.concatenate([y, y]), marker="|", s=60, color="0.45",
               zorder=3, label="± wedge_bound (largest possible |wedge|)", gid="wedge-bound")
    err = _interval(sub, "wedge")
    if err is not None:
        ax.errorbar(wedge, y, xerr=err, fmt="none", ecolor="0.15", elinewidth=0.8, zorder=4, gid="interval")
    ax.axvline(0, color="0.2", lw=0.8)
    if hidden:
        _others_rule(ax, len(sub) - cut - 0.5, hidden)
    ax.set_yticks(y, labels=distinct_labels(sub["model"].astype(str)), fontsize=7.5)
    ax.set_xlabel("wedge = macro score − deployment-weighted score", fontsize=9)
    ax.set_title(f"Wedge per model: {plain(profile)}\n(right: the average overstates this mix's score)", fontsize=10,
                 loc="left")
    ax.legend(fontsize=6.5, frameon=True, framealpha=0.9, loc="best")
    ax.grid(axis="x", alpha=0.25)
    return ax


def wedge_dots(table: pd.DataFrame, *, profiles: Sequence[str] | None = None, limit: int | None = None,
               ax: Axes | None = None) -> Axes:
    """The wedge per model under every profile in one panel: a row per model, a dot per profile.

    Rows by the mean wedge over the profiles, largest on top; ``limit`` cuts as in
    :func:`wedge_bars`. A dot right of zero: the benchmark average overstates what that
    profile experiences with that model.
    """
    check_columns(table, ("model", "profile", "wedge"), "metrics table")
    names = list(profiles) if profiles is not None else pd.unique(table["profile"]).tolist()
    data = table[table["profile"].isin(names) & table["wedge"].notna()]
    order = data.groupby("model", observed=True)["wedge"].mean().sort_values(ascending=False, kind="mergesort")
    everyone = order.index.astype(str).tolist()
    models, cut = ends(everyone, limit)
    hidden = len(everyone) - len(models)
    models = models[::-1]  # the largest mean wedge in the top row
    row = {m: i for i, m in enumerate(models)}
    if ax is None:
        ax = new_axes(6.8, 1.3 + 0.2 * max(len(models), 3))
    ax.axvline(0, color="0.2", lw=0.8)
    offsets = np.linspace(-0.24, 0.24, len(names)) if len(names) > 1 else np.zeros(1)
    for i, name in enumerate(names):
        sub = data[(data["profile"] == name) & data["model"].astype(str).isin(row)]
        y = sub["model"].astype(str).map(row).to_numpy(dtype=float) + offsets[i]
        color = PROFILE_COLORS[i % len(PROFILE_COLORS)]
        err = _interval(sub, "wedge")
        if err is not None:
            ax.errorbar(sub["wedge"], y, xerr=err, fmt="none", ecolor=color, elinewidth=0.7, alpha=0.6,
                        zorder=2, gid="interval")
        ax.scatter(sub["wedge"], y, s=16, color=color, zorder=3, label=plain(name), gid="wedge-dot")
    if hidden:
        _others_rule(ax, len(models) - cut - 0.5, hidden)
    ax.set_yticks(np.arange(len(models)), labels=distinct_labels(models), fontsize=7)
    ax.set_ylim(-0.7, len(models) - 0.3)
    ax.set_xlabel("wedge = macro score − deployment-weighted score\n(right of 0: the average overstates "
                  "what the mix experiences)", fontsize=8.5)
    ax.set_title("Wedge per model and profile", fontsize=10, loc="left")
    # A figure legend above the axes, in as many columns as the profile names allow: it has the
    # figure's whole width, and constrained layout makes room for its rows.
    handles, labels = ax.get_legend_handles_labels()
    ax.figure.legend(handles, labels, loc="outside upper left", fontsize=7, frameon=False,
                     ncols=legend_columns(labels, ax.figure.get_figwidth(), 7))
    ax.grid(axis="x", alpha=0.25)
    return ax


def exposure_dots(exposure: pd.DataFrame, *, model: str = "", profiles: Sequence[str] | None = None,
                  ax: Axes | None = None) -> Axes:
    """For one model, each domain's error (rows, worst on top) and its exposure under every profile.

    The dashed line is the uniform weight 1/D. A profile whose dots sit right of it in the top
    rows uses the worst-handled domains most: its wedge is positive (the AJI mechanism).
    """
    check_columns(exposure, ("profile", "domain", "weight", "uniform_weight", "error"), "exposure table")
    names = list(profiles) if profiles is not None else pd.unique(exposure["profile"]).tolist()
    data = exposure[exposure["profile"].isin(names) & exposure["error"].notna()]
    errors = data.drop_duplicates("domain").set_index("domain")["error"].sort_values(kind="mergesort")
    row = {d: i for i, d in enumerate(errors.index)}
    if ax is None:
        ax = new_axes(6.4, 1.4 + 0.24 * max(len(row), 3))
    uniform = float(data["uniform_weight"].iloc[0]) if len(data) else 0.0
    ax.axvline(uniform, color="0.45", ls="--", lw=1, label=f"uniform weight 1/D = {uniform:.3f}")
    offsets = np.linspace(-0.22, 0.22, len(names)) if len(names) > 1 else np.zeros(1)
    for i, name in enumerate(names):
        sub = data[data["profile"] == name]
        y = sub["domain"].map(row).to_numpy(dtype=float) + offsets[i]
        ax.scatter(sub["weight"], y, s=18, color=PROFILE_COLORS[i % len(PROFILE_COLORS)], zorder=3,
                   label=plain(name), gid="domain-point")
    ax.set_yticks(np.arange(len(row)), labels=[f"{plain(d)}  e={e:.2f}" for d, e in errors.items()], fontsize=7)
    ax.set_ylim(-0.7, len(row) - 0.3)
    ax.set_xlim(0, None)
    ax.set_xlabel("exposure w_d (share of the task mix)", fontsize=9)
    ax.set_title(f"{plain(model)}\nerror per domain (worst at the top)\nand how much each profile uses it"
                 if model else "Error per domain (worst at the top)\nand how much each profile uses it",
                 fontsize=9.5, loc="left")
    ax.legend(fontsize=7, frameon=True, framealpha=0.9, loc="lower right")
    ax.grid(axis="x", alpha=0.25)
    return ax


def rank_slope(table: pd.DataFrame, *, profile: str | None = None, highlight: Sequence[str] = (),
               limit: int | None = None, ax: Axes | None = None) -> Axes:
    """Slope chart from the macro ranking (left) to one profile's deployment ranking (right), rank 1 on top.

    ``highlight`` models are drawn thicker; ``limit`` keeps the models within the top ``limit``
    on either side. Green lines move up under the profile, red down.
    """
    check_columns(table, ("model", "profile", "rank_macro", "rank_dep"), "metrics table")
    sub, profile = _one_profile(table, profile, "metrics table")
    sub = sub[sub["rank_macro"].notna() & sub["rank_dep"].notna()]
    if limit is not None:
        sub = sub[(sub["rank_macro"] <= limit) | (sub["rank_dep"] <= limit)]
    n = int(max(sub["rank_macro"].max(), sub["rank_dep"].max())) if len(sub) else 0
    if ax is None:
        ax = new_axes(6.4, 1.2 + 0.22 * max(n, 4))
    left = sub["rank_macro"].to_numpy(dtype=float)
    right = sub["rank_dep"].to_numpy(dtype=float)
    models = sub["model"].astype(str).to_numpy()
    fontsize = 7 if n <= 40 else 5
    for lm, rd, name in zip(left, right, models):
        color = UP_COLOR if rd < lm else DOWN_COLOR if rd > lm else SAME_COLOR
        width = 2.4 if name in highlight else 1.2
        ax.plot([0, 1], [lm, rd], color=color, lw=width, marker="o", ms=3, gid="rank-line")
        ax.text(-0.03, lm, f"{plain(name)}  {int(lm)}", ha="right", va="center", fontsize=fontsize, color="0.2")
        ax.text(1.03, rd, f"{int(rd)}  {plain(name)}", ha="left", va="center", fontsize=fontsize, color="0.2")
    ax.set_xlim(-0.9, 1.9)
    ax.set_ylim(max(n, 1) + 0.7, 0.3)
    ax.set_xticks([0, 1], labels=["macro rank", f"{plain(profile)} rank"], fontsize=9)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"How the ranking changes under profile {plain(profile)} (1 = best)", fontsize=10, loc="left")
    return ax


def exposure_vs_error(exposure: pd.DataFrame, *, profile: str | None = None, model: str = "",
                      ax: Axes | None = None) -> Axes:
    """For one model, each domain's exposure w_d under one profile against its error e_d.

    The dashed line is the uniform weight 1/D: domains to its right are used more than the
    benchmark assumes, and if they sit high, the wedge is positive (the AJI mechanism).
    """
    check_columns(exposure, ("profile", "domain", "weight", "uniform_weight", "error"), "exposure table")
    sub, profile = _one_profile(exposure, profile, "exposure table")
    if ax is None:
        ax = new_axes(6.0, 4.6)
    weight = sub["weight"].to_numpy(dtype=float)
    error = sub["error"].to_numpy(dtype=float)
    ax.scatter(weight, error, s=28, color=PROFILE_COLORS[0], edgecolor="white", lw=0.5, zorder=3,
               gid="domain-point")
    top = float(np.nanmax(weight)) if weight.size else 1.0
    low = min(0.0, float(np.nanmin(weight))) if weight.size else 0.0
    middle = (low + top) / 2
    for w, e, name in zip(weight, error, sub["domain"].astype(str)):
        if np.isfinite(e):  # labels point inwards, so that none runs off the figure
            right = w > middle
            ax.annotate(plain(name), (w, e), xytext=(-4 if right else 4, 2), textcoords="offset points",
                        ha="right" if right else "left", fontsize=6.5, color="0.25")
    uniform = float(sub["uniform_weight"].iloc[0])
    ax.axvline(uniform, color="0.45", ls="--", lw=1, label=f"uniform weight 1/D = {uniform:.3f}")
    ax.set_xlim(low - 0.01, top * 1.05 + 0.01)
    ax.set_xlabel(f"exposure w_d under {plain(profile)}", fontsize=9)
    ax.set_ylabel("error rate e_d = 1 − score", fontsize=9)
    ax.set_title((f"{plain(model)}\n" if model else "") + f"Exposure vs error per domain\nprofile {plain(profile)}",
                 fontsize=10, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="best")
    ax.grid(alpha=0.25)
    return ax


def drift_bound(curve: pd.DataFrame, points: pd.DataFrame, *, model: str = "", ax: Axes | None = None) -> Axes:
    """The largest possible |wedge| against the spread σ_w of a task mix's weights, the profiles marked.

    ``curve`` is :func:`jagged.stats.deployment.drift_bound_curve`, ``points`` the model's
    metrics rows (``profile``, ``sigma_w``, ``wedge``, ``wedge_bound``). The line is
    D·σ_w·sd_error: no task mix that uneven can move the score further from the macro average.
    Filled markers are each profile's |wedge|, hollow ones its bound.
    """
    check_columns(curve, ("sigma_w", "max_abs_wedge"), "curve")
    check_columns(points, ("profile", "sigma_w", "wedge", "wedge_bound"), "profile table")
    if ax is None:
        ax = new_axes(6.4, 4.4)
    x = curve["sigma_w"].to_numpy(dtype=float)
    y = curve["max_abs_wedge"].to_numpy(dtype=float)
    ax.plot(x, y, color="0.2", lw=1.5, label="max |wedge| = D·σ_w·sd_error", gid="bound-curve")
    ax.fill_between(x, 0, y, color="0.85", alpha=0.6, zorder=0, label="reachable |wedge|")
    for i, row in enumerate(points.itertuples(index=False)):
        if not np.isfinite(row.wedge):
            continue
        color = PROFILE_COLORS[i % len(PROFILE_COLORS)]
        ax.plot([row.sigma_w, row.sigma_w], [abs(row.wedge), row.wedge_bound], color=color, lw=1, ls=":")
        ax.scatter([row.sigma_w], [abs(row.wedge)], color=color, s=34, zorder=3, label=plain(row.profile),
                   gid="profile-point")
        ax.scatter([row.sigma_w], [row.wedge_bound], facecolor="white", edgecolor=color, s=30, zorder=3)
    ax.set_xlim(0, x.max() if x.size else 1)
    ax.set_ylim(0, None)
    ax.set_xlabel("σ_w, spread of the task-mix weights (0 = uniform)", fontsize=9)
    ax.set_ylabel("|wedge| (score points as a fraction)", fontsize=9)
    title = "How far can a task mix move the average?"
    ax.set_title(f"{title} ({plain(model)})" if model else title, fontsize=10, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="upper left")
    ax.grid(alpha=0.25)
    return ax
