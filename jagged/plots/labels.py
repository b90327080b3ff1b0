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
    """Shorten ``text`` to at most ``limit`` characters, keeping its start and its end.

    Parameters
    ----------
    text : str
        Any text.
    limit : int
        Maximum length (at least 3).

    Returns
    -------
    str
        ``text`` itself when short enough; otherwise its first and last characters with
        ``…`` between them (the end often tells versions apart: ``…-v2.3``).
    """
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

    Parameters
    ----------
    names : sequence of str
        The names, in drawing order.
    limit : int
        Longest label.

    Returns
    -------
    list of str
        One label per name, ``$`` escaped as in :func:`plain`.
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
    """A name as a matplotlib label: shortened (unless ``limit`` is None), ``$`` escaped.

    Parameters
    ----------
    text : str
        A model, domain or profile name.
    limit : int or None
        See :func:`shorten`; None keeps the whole name.

    Returns
    -------
    str
        Text that matplotlib draws character for character (``\\$`` draws as ``$``).
    """
    text = str(text) if limit is None else shorten(text, limit)
    return text.replace("$", r"\$")
