"""Weights files (CSV or YAML) read and checked into a table of raw weights (normalised by jagged.stats.weights).

CSV (comma, tab or semicolon) has ``domain`` and ``weight``, optionally ``profile`` (else
the file is one profile named after its stem), ``comment`` and ``description`` (the first
non-empty per profile)::

    profile,domain,weight,comment
    law_office,law,50,"most questions are legal"

YAML is a list of such records, a mapping from profile to ``{domain: weight}`` (or to a
list of records), or one ``{domain: weight}`` mapping. Weights are non-negative finite
numbers; every problem is one line listing the offending names or values. Reading is
bounded, and YAML is plain data only (:mod:`jagged.safe_yaml`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from jagged import safe_yaml
from jagged.errors import JaggedInputError
from jagged.readers.canonical import found_columns
from jagged.readers.files import decode_text, read_csv
from jagged.readers.limits import read_file
from jagged.text import listing

#: Suffixes read as YAML (anything else as a delimited table).
YAML_SUFFIXES: tuple[str, ...] = (".yaml", ".yml")
#: Bounds of a YAML weights file: its size and the number of values in it.
MAX_WEIGHTS_YAML_BYTES = 16 << 20
MAX_WEIGHTS_VALUES = 1_000_000


def _records_from_yaml(data: Any, source: str, stem: str) -> pd.DataFrame:
    """The supported YAML shapes as a long table with a ``_where`` column."""
    rows: list[dict[str, Any]] = []

    def record(entry: Any, where: str, profile: str | None) -> None:
        if not isinstance(entry, dict):
            raise JaggedInputError(f"{source}: {where} is not a mapping with keys domain, weight")
        row = {str(k).strip(): v for k, v in entry.items()}
        if profile is not None and "profile" not in row:
            row["profile"] = profile
        row["_where"] = where
        rows.append(row)

    def profile_body(body: Any, name: str) -> None:
        if isinstance(body, list):
            for i, entry in enumerate(body, 1):
                record(entry, f"profile {name!r} entry {i}", name)
        elif isinstance(body, dict) and "weights" in body and isinstance(body["weights"], (dict, list)):
            before = len(rows)
            profile_body(body["weights"], name)
            if body.get("description") is not None and len(rows) > before:
                rows[before]["description"] = body["description"]
        elif isinstance(body, dict):
            for domain, weight in body.items():
                rows.append({"profile": name, "domain": domain, "weight": weight,
                             "_where": f"profile {name!r} domain {domain!r}"})
        else:
            raise JaggedInputError(f"{source}: profile {name!r} must map domains to weights")

    if isinstance(data, list):
        for i, entry in enumerate(data, 1):
            record(entry, f"entry {i}", None)
    elif isinstance(data, dict):
        if all(isinstance(v, (dict, list)) for v in data.values()):
            for name, body in data.items():
                profile_body(body, str(name).strip())
        else:
            profile_body(data, stem)
    else:
        raise JaggedInputError(
            f"{source}: expected a list of (domain, weight) records or a mapping of profiles, "
            f"not {type(data).__name__}")
    if not rows:
        raise JaggedInputError(f"{source}: no weights found")
    return pd.DataFrame(rows)


def read_weights_file(path: Path) -> pd.DataFrame:
    """Read a weights file into an unvalidated table, one row per record, ``_where`` naming its line or entry."""
    source = path.name
    if not path.exists():
        raise JaggedInputError(f"{path}: no such weights file")
    if path.is_dir():
        raise JaggedInputError(f"{path}: is a directory, expected a weights file (CSV or YAML)")
    if path.suffix.lower() in YAML_SUFFIXES:
        text = decode_text(path, read_file(path))
        data = safe_yaml.load_yaml(text, source, max_bytes=MAX_WEIGHTS_YAML_BYTES, max_nodes=MAX_WEIGHTS_VALUES,
                                   max_depth=4, max_scalar=4096, what="weights", key="profile")
        if data is None:
            raise JaggedInputError(f"{source}: the file is empty")
        return _records_from_yaml(data, source, path.stem)
    frame = read_csv(path)
    frame["_where"] = [f"line {i + 2}" for i in range(len(frame))]
    return frame


def _float(value: Any) -> Any:
    """An integer as a float (one beyond 1.8e308 as ±inf, an infinite weight); anything else as it is."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        try:
            return float(value)
        except OverflowError:
            return float("inf") if value > 0 else float("-inf")
    return value


def _shown(value: Any) -> str:
    """A weight value as the user wrote it: text quoted, numbers plain."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, float, np.integer, np.floating)):
        return f"{_float(value):g}"
    text = str(value)
    return repr(text if len(text) <= 30 else text[:27] + "...")


def _weight_values(raw: pd.Series, domain: pd.Series, where: pd.Series, source: str) -> np.ndarray:
    """The weight column as floats, every bad value listed in one error line."""

    def label(mask: np.ndarray, show_value: bool) -> str:
        idx = raw.index[mask]
        parts = []
        for i in idx:
            value = f"={_shown(raw.loc[i])}" if show_value else ""
            parts.append(f"{domain.loc[i]}{value} ({where.loc[i]})")
        return listing(parts, 8)

    is_bool = raw.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
    text = raw.map(lambda v: v.strip() if isinstance(v, str) else _float(v))
    values = pd.to_numeric(text.where(~is_bool, None), errors="coerce").astype("float64").to_numpy()
    blank = raw.isna().to_numpy() | (raw.astype("string").str.strip() == "").fillna(True).to_numpy()
    literal_nan = text.map(lambda v: isinstance(v, str) and v.lower() in ("nan", "na", "n/a", "none", "null"))
    literal_nan = literal_nan.to_numpy(dtype=bool)
    non_numeric = np.isnan(values) & ~blank & ~literal_nan
    non_numeric |= is_bool
    if non_numeric.any():
        raise JaggedInputError(
            f"{source}: column 'weight' has non-numeric value(s) for domain(s) {label(non_numeric, True)}")
    nan = np.isnan(values)
    if nan.any():
        raise JaggedInputError(
            f"{source}: column 'weight' has missing or NaN value(s) for domain(s) {label(nan, False)}")
    inf = np.isinf(values)
    if inf.any():
        raise JaggedInputError(f"{source}: column 'weight' has infinite value(s) for domain(s) {label(inf, True)}")
    negative = values < 0
    if negative.any():
        raise JaggedInputError(
            f"{source}: column 'weight' has negative value(s) {label(negative, True)}; weights must be >= 0")
    return values


def _text_column(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series("", index=frame.index, dtype=object)
    col = frame[column].astype("string").str.strip()
    return col.fillna("").astype(object)


def read_weights(path: str | Path) -> pd.DataFrame:
    """Read and check a weights file (format in the module docstring); weights are *not* yet normalised.

    Returns ``profile``, ``domain``, ``weight`` (float64, as given), ``comment`` and
    ``description`` ("" when absent), in file order. Refused: a missing ``domain`` / ``weight``
    column, an empty domain or profile name, non-numeric, NaN, infinite or negative weights
    (every offender listed), a domain twice in one profile. (Profiles named like built-ins are
    refused by :func:`jagged.stats.weights.resolve_profiles`.)
    """
    path = Path(path)
    source = path.name
    raw = read_weights_file(path)
    missing = [c for c in ("domain", "weight") if c not in raw.columns]
    if missing:
        have = found_columns(raw.drop(columns="_where", errors="ignore"))
        raise JaggedInputError(f"{source}: missing column(s) {', '.join(missing)} ({have})")
    if len(raw) == 0:
        raise JaggedInputError(f"{source}: the weights table has a header but no rows")
    raw = raw.reset_index(drop=True)
    where = raw["_where"].astype(object)
    domain = _text_column(raw, "domain")
    empty = (domain == "").to_numpy()
    if empty.any():
        raise JaggedInputError(f"{source}: empty domain name ({where[int(np.argmax(empty))]})")
    if "profile" in raw.columns:
        profile = _text_column(raw, "profile")
        empty = (profile == "").to_numpy()
        if empty.any():
            raise JaggedInputError(f"{source}: empty profile name ({where[int(np.argmax(empty))]})")
    else:
        profile = pd.Series(path.stem, index=raw.index, dtype=object)
    weight = _weight_values(raw["weight"], domain, where, source)
    out = pd.DataFrame({
        "profile": profile.to_numpy(dtype=object),
        "domain": domain.to_numpy(dtype=object),
        "weight": weight,
        "comment": _text_column(raw, "comment").to_numpy(dtype=object),
        "description": _text_column(raw, "description").to_numpy(dtype=object),
    })
    dup = out.duplicated(["profile", "domain"], keep=False).to_numpy()
    if dup.any():
        pairs = sorted({f"{p}/{d}" for p, d in zip(out["profile"][dup], out["domain"][dup])})
        raise JaggedInputError(f"{source}: domain(s) given twice in one profile: {listing(pairs, 8)}")
    return out
