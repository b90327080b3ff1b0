"""Names drawn as plain text: shortened to fit, never interpreted as mathtext.

Model, domain and profile names are data. Matplotlib reads ``$...$`` in any text as
mathtext, so a name such as ``a$\\frac{$b`` would fail to draw, and ``$x^2$`` would draw
as a formula; a 300-character name would squeeze the plot to nothing. Every plot label
made from a name goes through :func:`plain`.
"""

from __future__ import annotations

import os
from typing import Sequence

#: Longest label, in characters, before it is shortened with an ellipsis.
LABEL_MAX = 32


def shorten(text: str, limit: int = LABEL_MAX) -> str:
    """``text`` cut to at most ``limit`` (>= 3) characters: its start, ``…``, its end (the end often tells
    versions apart: ``…-v2.3``)."""
    text = str(text)
    if limit < 3:
        raise ValueError(f"limit must be at least 3, not {limit}")
    if len(text) <= limit:
        return text
    tail = (limit - 1) // 3
    head = limit - 1 - tail
    return text[:head] + "…" + text[len(text) - tail:]


def distinct_labels(names: Sequence[str], limit: int = LABEL_MAX) -> list[str]:
    """Labels for names drawn side by side (rows of one plot): each :func:`plain`, and no two alike.

    Names that :func:`shorten` would make equal (long ids differing only in the middle, as
    merged models on a leaderboard do) are shown around the first character where they
    differ instead: their start, ``…``, that stretch, ``…``. Should two labels still
    coincide, a ``#k`` counter tells them apart.
    """
    names = [str(n) for n in names]
    short = [shorten(n, limit) for n in names]
    groups: dict[str, list[int]] = {}
    for i, label in enumerate(short):
        groups.setdefault(label, []).append(i)
    for members in groups.values():
        if len(members) < 2 or len({names[i] for i in members}) < 2:
            continue
        for i in members:
            others = [names[j] for j in members if names[j] != names[i]]
            first = max(len(os.path.commonprefix([names[i], other])) for other in others)
            head = max(3, limit // 4)
            width = limit - head - 2
            start = max(head, min(first - width // 3, len(names[i]) - width))
            window = names[i][start:start + width]
            short[i] = names[i][:head] + "…" + window + ("…" if start + width < len(names[i]) else "")
    seen: dict[str, int] = {}
    out = []
    for label in short:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return [label.replace("$", r"\$") for label in out]


def legend_columns(labels: list[str], width_in: float, fontsize: float, *, most: int = 4) -> int:
    """How many legend columns of these labels fit side by side in ``width_in`` inches.

    Each column is as wide as the longest label (0.62 em per character, generous for
    DejaVu Sans) plus the marker and the gap between columns; at least one column.
    """
    longest = max((len(t) for t in labels), default=0)
    column_in = longest * 0.62 * fontsize / 72 + 0.55
    return max(1, min(most, len(labels), int(width_in // column_in)))


def plain(text: str, limit: int | None = LABEL_MAX) -> str:
    """A name as a matplotlib label drawn character for character: shortened (unless ``limit`` is None),
    ``$`` escaped."""
    text = str(text) if limit is None else shorten(text, limit)
    return text.replace("$", r"\$")


def fit_titles(figure: "object", renderer: "object") -> bool:
    """Wrap every axes title of a laid-out figure that runs past its right edge; True if one was wrapped.

    A left-aligned title starts at its axes' left edge, which long tick labels push to the
    right; a heatmap of three domains is narrow. Each line gets as many words as fit
    between the title's start and the figure's edge.
    """
    import textwrap

    from matplotlib.text import Text

    right = figure.bbox.x1 - 2.0
    changed = False
    for ax in figure.axes:
        titles = {ax.get_title(loc=loc) for loc in ("left", "center", "right")} - {""}
        for child in ax.get_children():
            if not isinstance(child, Text) or child.get_text() not in titles:
                continue
            box = child.get_window_extent(renderer)
            if box.x1 <= right or box.width <= 0:
                continue
            room = right - max(box.x0, figure.bbox.x0)
            text = child.get_text()
            longest = max(len(line) for line in text.splitlines())
            width = max(12, int(longest * room / box.width) - 1)
            child.set_text("\n".join(textwrap.fill(line, width) for line in text.splitlines()))
            changed = True
    return changed


#: Group ids of the point labels :func:`declutter` thins out (first drawn, first kept).
POINT_LABELS = ("model-label",)


def declutter(figure: "object", renderer: "object", gids: Sequence[str] = POINT_LABELS) -> int:
    """Hide every point label (of ``gids``) that would overlap one drawn before it; returns how many.

    The plots label the extremes first (most and least jagged, largest wedge), so the
    labels that stay are the ones that matter; the points themselves all stay.
    """
    from matplotlib.text import Text

    hidden = 0
    for ax in figure.axes:
        kept = []
        for child in ax.get_children():
            if not isinstance(child, Text) or child.get_gid() not in gids or not child.get_visible():
                continue
            box = Text.get_window_extent(child, renderer)  # the text's own box (an annotation's leader line aside)
            if any(box.overlaps(other) for other in kept):
                child.set_visible(False)
                hidden += 1
            else:
                kept.append(box)
    return hidden
