"""Weights files (CSV or YAML) read into an unvalidated table; :mod:`jagged.stats.weights` checks it.

The format is described in :mod:`jagged.stats.weights`. Reading is bounded like every input
(:mod:`jagged.readers.limits`), and YAML goes through :mod:`jagged.safe_yaml`: plain data
only, no aliases, anchors or tags.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from jagged import safe_yaml
from jagged.errors import JaggedInputError
from jagged.readers.files import decode_text, read_csv
from jagged.readers.limits import read_file

#: Suffixes read as YAML (anything else as a delimited table).
YAML_SUFFIXES: tuple[str, ...] = (".yaml", ".yml")
#: Bounds of a YAML weights file: its size and the number of values in it.
MAX_WEIGHTS_YAML_BYTES = 16 << 20
MAX_WEIGHTS_VALUES = 1_000_000


def _records_from_yaml(data: Any, source: str, stem: str) -> pd.DataFrame:
    """Turn the supported YAML shapes into a long table with a ``_where`` column."""
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
    """Read a weights file (CSV or YAML) into an unvalidated table with a ``_where`` column.

    Parameters
    ----------
    path : pathlib.Path
        The weights file.

    Returns
    -------
    pandas.DataFrame
        One row per (profile, domain, weight) record as written, with ``_where`` (the line
        or entry, for messages); :func:`jagged.stats.weights.read_weights` checks it.

    Raises
    ------
    JaggedInputError
        Missing file, a folder, unreadable text, YAML that is not plain bounded data (no
        aliases, anchors or tags; see :mod:`jagged.safe_yaml`), or a file over the input cap.
    """
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
