"""Helpers for fuzz tests that damage JSON documents: every slot of a document, and values to put there."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

#: JSON-like values that readers meet in damaged files: nulls, NaN and infinities, huge
#: integers, short strings (some that look like versions or sentinels), small containers.
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**12), 10**12)
    | st.text(max_size=6) | st.sampled_from(["-1", "Infinity", "0.2.0", "", "accuracy"]),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=6)


def slots(node: Any, out: list[tuple[Any, Any]] | None = None) -> list[tuple[Any, Any]]:
    """Every (container, key) of a JSON document, depth first."""
    out = [] if out is None else out
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in list(items):
        out.append((node, key))
        slots(value, out)
    return out
