"""Small text helpers for messages and notes, written once for the whole package."""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

#: Plural forms that are not the word + "s".
IRREGULAR_PLURALS = {"leaf": "leaves", "category": "categories", "was": "were", "is": "are", "has": "have"}


def one_line(text: object, limit: int | None = None) -> str:
    """Collapse the whitespace of ``str(text)`` (newlines too) into single spaces; cut at ``limit`` with "…"."""
    flat = " ".join(str(text).split())
    if limit is not None and len(flat) > limit:
        return flat[: limit - 1] + "…"
    return flat


#: Characters shown escaped, never raw: C0 and C1 controls and DEL (a newline forges a line, ESC drives a
#: terminal, NUL ends a C string), the line and paragraph separators, and the bidirectional embeddings,
#: overrides and isolates that reorder what follows them (U+202A-U+202E, U+2066-U+2069; "Trojan Source").
HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: object, keep: str = "") -> str:
    """Text with every :data:`HIDDEN` character but those in ``keep`` written as an escape (``\\n``, ``\\u202e``).

    What a terminal, a spreadsheet or a browser then shows is what is written: ``a\\nb`` stays
    one line, ``x\\u202ey`` is not reversed. ``keep`` is ``"\\t\\n\\r"`` where a newline is data.

    Examples
    --------
    >>> printable("gpt\\njagged: error: forged")
    'gpt\\\\njagged: error: forged'
    """
    def escape(match: re.Match) -> str:
        char = match.group()
        if char in keep:
            return char
        named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char)
        return named or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")

    return HIDDEN.sub(escape, str(text))


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, or its type name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def plural(n: int, word: str) -> str:
    """``"1 model"``, ``"3 models"``, ``"2 leaves"`` (see :data:`IRREGULAR_PLURALS`)."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {IRREGULAR_PLURALS.get(word, word + 's')}"


def listing(names: Iterable[object], limit: int = 8, *, quote: bool = False) -> str:
    """``"a, b, c and 4 more"``: the first ``limit`` names, comma-separated (each ``repr``-quoted with ``quote``)."""
    names = list(names)
    shown = ", ".join(repr(n) if quote else str(n) for n in names[:limit])
    return shown + and_more(len(names), limit)


def join_notes(first: object, second: object) -> str:
    """Two notes joined with ``"; "``, either may be empty (None and NaN count as empty)."""
    a = "" if first is None or first != first else str(first)
    b = "" if second is None or second != second else str(second)
    return a if not b else (b if not a else f"{a}; {b}")


def join_note_columns(first: Sequence[object], second: Sequence[object]) -> list[str]:
    """:func:`join_notes` element by element."""
    return [join_notes(a, b) for a, b in zip(first, second)]


def merge_notes(first: dict[str, str], second: dict[str, str]) -> dict[str, str]:
    """Per-key notes of both dicts, joined with :func:`join_notes` where a key has two."""
    out = dict(first)
    for key, note in second.items():
        out[key] = join_notes(out.get(key), note)
    return out


def and_more(total: int, shown: int, sep: str = " ") -> str:
    """``" and 4 more"`` when ``total`` things were cut to ``shown`` (``sep`` before "and"); ``""`` when none were."""
    return f"{sep}and {total - shown} more" if total > shown else ""


class Summarised:
    """Mixin for result objects: a one-line ``repr`` and a small HTML table, both from ``_summary()``.

    A subclass returns its name and ``(label, value)`` rows; a dataclass using it is declared
    with ``repr=False``, or the generated ``__repr__`` would replace this one.
    """

    def _summary(self) -> tuple[str, list[tuple[str, str]]]:
        raise NotImplementedError

    def __repr__(self) -> str:
        name, rows = self._summary()
        return f"<{name}: " + "; ".join(f"{label} {one_line(value, 80)}" for label, value in rows) + ">"

    def _repr_html_(self) -> str:
        import html

        name, rows = self._summary()
        body = "".join(f'<tr><th scope="row">{html.escape(label)}</th><td>{html.escape(str(value))}</td></tr>'
                       for label, value in rows)
        return f'<table class="jagged-summary"><caption>{html.escape(name)}</caption><tbody>{body}</tbody></table>'


#: How a missing flag (nothing could be tested) reads in a table.
NOT_TESTED = "not tested"


def flag_text(flags: Any, *, flagged: str = "noise", clear: str = "", untested: str = NOT_TESTED) -> Any:
    """A nullable flag column as display text: ``flagged`` (True), ``clear`` (False), ``untested`` (missing)."""
    import numpy as np
    import pandas as pd

    values = pd.Series(flags).astype("boolean")
    return np.where(values.isna().to_numpy(), untested, np.where(values.fillna(False).to_numpy(dtype=bool),
                                                                  flagged, clear))
