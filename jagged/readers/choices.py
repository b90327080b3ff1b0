"""The labels and checks of the optional ``choice``, ``key`` and ``n_options`` columns of item tables.

A label is one token: a letter, an index or a short name, at most :data:`LABEL_MAX`
characters, without whitespace or the separators ``, ; |``. Letters ``A``–``Z`` stand for
options 0–25 and non-negative integers for 0-based indices (as lm-eval writes them), so
with ``n_options`` a choice naming an option the item lacks counts as wrong and is
counted apart from distractors (a note); a *key* beyond ``n_options`` is an error. Where
a row has a key, ``correct`` must be 0 or 1 and equal ``choice == key``; an empty choice
is a wrong answer, an empty key no choice information. The same rules in SQL serve the
out-of-core path.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.readers.canonical import cell_repr, row_location

#: Longest option label accepted.
LABEL_MAX = 40
#: Optional columns of an item table that carry answers (in this order in the validated table).
CHOICE_COLUMNS: tuple[str, ...] = ("choice", "key", "n_options")
_MALFORMED = re.compile(r"[\s,;|]")
_LETTER = re.compile(r"^[A-Z]$")
_INDEX = re.compile(r"^\d{1,6}$")


def _labels(raw: pd.Series) -> np.ndarray:
    """Cells as stripped strings (None for empty); integral numbers lose their ``.0``."""
    if pd.api.types.is_bool_dtype(raw.dtype):
        raise JaggedInputError("boolean")
    if pd.api.types.is_numeric_dtype(raw.dtype):
        values = raw.to_numpy(dtype=float)
        out = np.full(len(values), None, dtype=object)
        finite = np.isfinite(values)
        integral = finite & (values == np.round(values))
        out[integral] = values[integral].astype(np.int64).astype(str)
        out[finite & ~integral] = values[finite & ~integral].astype(str)
        return out
    codes, uniques = pd.factorize(raw, use_na_sentinel=True)  # work on the distinct values only
    text = pd.Series(uniques, dtype=object).astype("string").str.strip()
    text = text.str.replace(r"^(-?\d+)\.0+$", r"\1", regex=True)  # 1.0 -> 1, as item ids
    names = text.to_numpy(dtype=object, na_value=None)
    names[names == ""] = None
    out = np.full(len(raw), None, dtype=object)
    valid = codes >= 0
    out[valid] = names[codes[valid]]
    return out


def normalise_labels(raw: pd.Series, column: str, source: str, line_offset: int | None) -> np.ndarray:
    """An option-label column (``"choice"`` or ``"key"``) as strings, None where empty; malformed labels refused."""
    try:
        labels = _labels(raw)
    except JaggedInputError:
        raise JaggedInputError(f"{source}: column {column!r} holds true/false values; an option label is a "
                               "letter, an index or a short name") from None
    present = np.flatnonzero(pd.notna(labels))
    if len(present):
        values = pd.Series(labels[present], dtype=object)
        uniques = pd.unique(values)
        bad = {u for u in uniques if len(u) > LABEL_MAX or _MALFORMED.search(u)}
        if bad:
            first = present[int(np.argmax(values.isin(bad).to_numpy()))]
            raise JaggedInputError(
                f"{source}: column {column!r} has malformed value {cell_repr(labels[first])} "
                f"({row_location(raw.index[first], line_offset)}): an option label is one letter, index or short "
                f"name (at most {LABEL_MAX} characters, no spaces or separators)")
    return labels


def option_index(labels: np.ndarray) -> np.ndarray:
    """0-based option index of each label: ``A``→0 … ``Z``→25, ``"3"``→3; NaN for other labels."""
    labels = np.asarray(labels, dtype=object)
    out = np.full(len(labels), np.nan)
    if not len(labels):
        return out
    codes, uniques = pd.factorize(pd.Series(labels, dtype=object))
    index = np.full(len(uniques), np.nan)
    for k, label in enumerate(uniques):  # distinct labels only (a few dozen)
        if _LETTER.match(label):
            index[k] = ord(label) - ord("A")
        elif _INDEX.match(label):
            index[k] = int(label)
    valid = codes >= 0
    out[valid] = index[codes[valid]]
    return out


def normalise_n_options(raw: pd.Series, source: str, line_offset: int | None) -> np.ndarray:
    """``n_options`` as float (NaN where empty); a non-integer or a value below 1 is an error."""
    if pd.api.types.is_numeric_dtype(raw.dtype) and not pd.api.types.is_bool_dtype(raw.dtype):
        values = raw.to_numpy(dtype=float)
        text_bad = np.zeros(len(values), dtype=bool)
    else:
        values = pd.to_numeric(raw, errors="coerce").astype("float64").to_numpy()
        text_bad = (np.isnan(values) & raw.notna().to_numpy()
                    & (raw.astype("string").str.strip() != "").fillna(False).to_numpy(dtype=bool))
    bad = text_bad | (np.isfinite(values) & ((values < 1) | (values != np.round(values)))) | np.isinf(values)
    if bad.any():
        first = int(np.argmax(bad))
        raise JaggedInputError(f"{source}: column 'n_options' has value {cell_repr(raw.iloc[first])} "
                               f"({row_location(raw.index[first], line_offset)}); it must be a whole number of "
                               "options, at least 1")
    return values


def check_answers(table: pd.DataFrame, source: str, line_offset: int | None) -> None:
    """Check ``choice``/``key`` against ``correct`` and ``n_options``; the first bad row is named with its line."""
    if "key" not in table.columns:
        return
    key = table["key"].to_numpy(dtype=object)
    keyed = pd.notna(key)
    if not keyed.any():
        return
    x = table["correct"].to_numpy(dtype=float)

    def fail(mask: np.ndarray, text: str) -> None:
        first = int(np.argmax(mask))
        row = table.iloc[first]
        raise JaggedInputError(f"{source}: model {row['model']!r}, item {row['item']!r}: {text(row)} "
                               f"({row_location(table.index[first], line_offset)})")

    partial = keyed & (x > 0) & (x < 1)
    if partial.any():
        fail(partial, lambda r: f"correct is {r['correct']:g} but a row with a key is scored 0 or 1")
    if "n_options" in table.columns:
        n = table["n_options"].to_numpy(dtype=float)
        beyond = keyed & (option_index(key) >= n)
        if beyond.any():
            fail(beyond, lambda r: f"key {r['key']!r} names an option beyond n_options {int(r['n_options'])}")
    choice = table["choice"].to_numpy(dtype=object) if "choice" in table.columns else np.full(len(table), None)
    same = keyed & (pd.Series(choice, dtype=object).to_numpy() == key)
    wrong = keyed & ((x == 1) != same)
    if wrong.any():
        fail(wrong, lambda r: (f"correct is {r['correct']:g} but choice {r.get('choice')!r} "
                               f"{'is' if r.get('choice') == r['key'] else 'is not'} the key {r['key']!r}"
                               if pd.notna(r.get("choice")) else
                               f"correct is {r['correct']:g} but there is no choice (key {r['key']!r})"))


def answers_summary(table: pd.DataFrame) -> str:
    """One line for ``jagged validate``: whether choices and keys are present, and what they hold."""
    has_choice, has_key = "choice" in table.columns, "key" in table.columns
    if not has_choice and not has_key:
        return "no choice or key columns: the item audit uses correctness only (no distractor analysis)"
    parts = []
    if has_choice:
        choice = table["choice"]
        labels = pd.unique(choice.dropna())
        shown = ", ".join(sorted(map(str, labels))[:10]) + (" ..." if len(labels) > 10 else "")
        parts.append(f"choices present ({len(labels)} labels: {shown}; {int(choice.isna().sum()):,} rows without "
                     "an answer)")
    else:
        parts.append("no choice column")
    if has_key:
        key = table["key"]
        n_keys = key.dropna().groupby(table["item"][key.notna()], sort=False).nunique()
        parts.append(f"keys present for {int(key.notna().sum()):,} rows; {int((n_keys > 1).sum()):,} items keyed "
                     "differently across models")
    else:
        parts.append("no key column")
    if has_choice and "n_options" in table.columns:
        beyond = option_index(table["choice"].to_numpy(dtype=object)) >= table["n_options"].to_numpy(dtype=float)
        if beyond.any():
            parts.append(f"{int(beyond.sum()):,} choices name an option beyond n_options (wrong answers, not "
                         "distractors)")
    return "; ".join(parts)


def sql_label(column: str, kind: str) -> str:
    """SQL for a label column (``kind``: its Parquet type) as :func:`normalise_labels` reads it (NULL where empty)."""
    if kind == "integer":
        return f"CAST({column} AS VARCHAR)"
    if kind == "float":
        return (f"CASE WHEN {column} = round({column}) THEN CAST(CAST({column} AS BIGINT) AS VARCHAR) "
                f"ELSE CAST({column} AS VARCHAR) END")
    return f"NULLIF(regexp_replace(trim(CAST({column} AS VARCHAR)), '^(-?[0-9]+)\\.0+$', '\\1'), '')"


def sql_option_index(label: str) -> str:
    """SQL for :func:`option_index` of a label expression (NULL for other labels)."""
    return (f"CASE WHEN regexp_full_match({label}, '[A-Z]') THEN ascii({label}) - 65 "
            f"WHEN regexp_full_match({label}, '[0-9]{{1,6}}') THEN CAST({label} AS BIGINT) END")


def sql_malformed(label: str) -> str:
    """SQL condition: a label that :func:`normalise_labels` refuses."""
    return f"({label} IS NOT NULL AND (length({label}) > {LABEL_MAX} OR regexp_matches({label}, '[\\s,;|]')))"
