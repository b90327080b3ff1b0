"""Checking one parameter value against its declared type and bounds; short safe descriptions of values.

The option declarations (:class:`jagged.options.Option`) live in :mod:`jagged.options`;
this module holds what checks a value against one: text limits (:func:`text_ok`), the
type and bounds test (:func:`conform`, inclusive or open bounds), the message-safe
:func:`shown`, and :func:`check_text` for text that is no notebook parameter.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any, Protocol

from jagged.errors import JaggedInputError

#: Longest text value of any parameter (names, paths, titles), in characters.
MAX_TEXT = 4096
#: Most entries of a list parameter (``profiles``).
MAX_LIST = 1000


class Declared(Protocol):
    """What :func:`conform` reads of an option declaration (:class:`jagged.options.Option`)."""

    kind: str
    default: Any
    choices: tuple | None
    minimum: int | float | None
    maximum: int | float | None
    open_bounds: bool


def text_ok(value: Any) -> bool:
    """Whether ``value`` is text of at most :data:`MAX_TEXT` characters, without NUL, writable as UTF-8."""
    if not isinstance(value, str) or len(value) > MAX_TEXT or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (JSON "\\ud800") cannot be written anywhere
        return False
    return True


def conform(option: Declared, value: Any) -> tuple[bool, Any]:
    """(whether ``value`` is valid for ``option``, the value as plain types)."""
    if value is None:
        return option.default is None and not option.choices, None
    if option.kind == "str":
        ok = text_ok(value) and (not option.choices or value in option.choices)
        return ok, str.__str__(value) if ok else None
    if option.kind == "bool":
        return isinstance(value, bool), value
    if option.kind == "list":
        ok = isinstance(value, (list, tuple)) and len(value) <= MAX_LIST and all(text_ok(v) for v in value)
        return ok, [str.__str__(v) for v in value] if ok else None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral if option.kind == "int" else numbers.Real):
        return False, None
    number = as_int(value) if isinstance(value, numbers.Integral) else float.__float__(float(value))
    if isinstance(number, float) and not math.isfinite(number):
        return False, None
    low, high = option.minimum, option.maximum
    if option.open_bounds:
        inside = (low is None or number > low) and (high is None or number < high)
    else:
        inside = (low is None or number >= low) and (high is None or number <= high)
    return (True, float(number) if option.kind == "float" else number) if inside else (False, None)


def as_int(value: Any) -> int:
    """An integer value as an exact ``int`` (numpy integers and int subclasses included)."""
    import operator

    return int.__index__(operator.index(value))


def shown(value: Any) -> str:
    """A short, safe description of a value for an error message (never more than ~60 characters)."""
    if isinstance(value, str):
        if len(value) > 60:
            return f"a text of {len(value):,} characters"
        return repr(value)
    if value is None or isinstance(value, (bool, float)):
        return repr(value)
    if isinstance(value, numbers.Integral):
        number = as_int(value)
        if number.bit_length() > 64:
            return f"an integer of {len(str(number)) if number.bit_length() < 10_000 else 'thousands of'} digits"
        return str(number)
    if isinstance(value, (list, tuple)):
        if len(value) > MAX_LIST:
            return f"a list of {len(value):,} entries"
        bad = next((v for v in value if not text_ok(v)), None)
        return "a list" if bad is None else f"a list holding {shown(bad)}"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    if isinstance(value, (set, frozenset)):
        return "a set"
    if isinstance(value, Mapping):
        return "a mapping"
    import datetime

    if isinstance(value, (datetime.date, datetime.time)):
        return "a date"
    return f"a value of type {type(value).__name__}"


def check_text(name: str, value: Any, source: str = "") -> str | None:
    """Check a text value that is no notebook parameter (e.g. a stored ``title``); None passes."""
    if value is None:
        return None
    if not text_ok(value):
        where = f"{source}: " if source else ""
        raise JaggedInputError(f"{where}{name} must be text of at most {MAX_TEXT} characters without NUL, "
                               f"not {shown(value)}")
    return str.__str__(value)
