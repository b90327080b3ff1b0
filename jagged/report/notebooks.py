"""The report notebooks and the parameters they declare.

A bare name (``"model_report"``) means a notebook shipped in ``jagged.notebooks``; one named
by stored metadata or ``--notebook`` must be packaged (:func:`packaged_notebook`), never a
path. Parameter values are plain data (:func:`plain`), never made with ``str()``.
"""

from __future__ import annotations

import ast
import math
import numbers
import operator
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from jagged.errors import JaggedInputError
from jagged.resources import notebooks_dir

NOTEBOOKS_DIR = notebooks_dir()
#: The cross-model report (``jagged report``) and the per-model report (``jagged batch``).
REPORT_NOTEBOOK = "jaggedness_report.ipynb"
MODEL_NOTEBOOK = "model_report.ipynb"
COMPARE_NOTEBOOK = "compare_report.ipynb"
#: The cross-model report's title and file when none is given (``jagged report``, ``jagged batch``).
DEFAULT_TITLE = "Jaggedness report"
DEFAULT_OUTPUT = Path("reports") / "jaggedness_report.html"


@dataclass(frozen=True)
class Parameter:
    """One line of a notebook's ``parameters`` cell (``name: type = default  # help``)."""

    name: str
    type: str
    default: str
    help: str


def find_notebook(name: str | Path) -> Path:
    """Resolve a notebook: a bare name (``"model_report"``, ``"x.ipynb"``) is the packaged one, anything else a path.

    Raises FileNotFoundError when there is no such notebook.
    """
    path = Path(name)
    if path.suffix != ".ipynb":
        path = path.with_suffix(".ipynb")
    if not path.is_absolute() and path.parent == Path("."):
        path = NOTEBOOKS_DIR / path
    if not path.is_file():
        raise FileNotFoundError(f"no notebook {path}")
    return path


def notebook_parameters(notebook: str | Path) -> list[Parameter]:
    """The parameters a notebook declares in its ``parameters`` cell, in order (name, type, default source, help)."""
    path = find_notebook(notebook).resolve()
    return list(_inspect_parameters(str(path), path.stat().st_mtime_ns))


@lru_cache(maxsize=16)
def _inspect_parameters(path: str, mtime_ns: int) -> tuple[Parameter, ...]:
    """papermill's reading of a parameters cell, once per notebook version."""
    from papermill import inspect_notebook

    found = inspect_notebook(path)
    return tuple(Parameter(name=p["name"], type=p.get("inferred_type_name") or "",
                           default=p.get("default") or "", help=p.get("help") or "") for p in found.values())


#: Deepest nesting :func:`plain` accepts (a parameter is a scalar or a list of them).
MAX_DEPTH = 8


def plain(value: Any, _depth: int = 0) -> Any:
    """``value`` as plain JSON types (str, int, float, bool, None, list, str-keyed dict), or TypeError.

    Subclasses become their exact base type (a ``str`` subclass cannot bring its own
    ``__repr__``), tuples lists, paths strings, numpy scalars Python numbers. Anything else,
    a non-finite float or nesting deeper than :data:`MAX_DEPTH` is refused.
    """
    if _depth > MAX_DEPTH:
        raise TypeError("parameter value nested too deeply")
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):  # pragma: no cover - bool cannot be subclassed
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int.__index__(operator.index(value))
    if isinstance(value, numbers.Real):
        number = float.__float__(float(value))
        if not math.isfinite(number):
            raise TypeError(f"a parameter value must be a finite number, not {number!r}")
        return number
    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        if not isinstance(path, str):
            raise TypeError("a parameter path must be text, not bytes")
        return str.__str__(path)
    if isinstance(value, (list, tuple)):
        return [plain(v, _depth + 1) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("parameter mappings must have text keys")
        return {str.__str__(k): plain(v, _depth + 1) for k, v in value.items()}
    from jagged.option_checks import shown

    raise TypeError(f"{shown(value)} cannot be a notebook parameter (only str, int, float, bool, None, "
                    "lists and mappings)")


def default_values(notebook: str | Path) -> dict[str, Any]:
    """Every declared parameter with its default (``ast.literal_eval`` of its source, else the text), in order."""
    out: dict[str, Any] = {}
    for p in notebook_parameters(notebook):
        try:
            out[p.name] = ast.literal_eval(p.default)
        except (ValueError, SyntaxError):
            out[p.name] = p.default
    return out


def full_parameters(notebook: str | Path, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters a run uses: the declared defaults in order, updated with the given values (made plain)."""
    full = default_values(notebook)
    full.update({k: plain(v) for k, v in parameters.items()})
    return full


def packaged_notebooks() -> tuple[str, ...]:
    """The names of the notebooks shipped with jagged (``jaggedness_report``, ``model_report``, ...)."""
    return tuple(sorted(p.stem for p in NOTEBOOKS_DIR.glob("*.ipynb") if not p.name.startswith(".")))


def packaged_notebook(name: Any, source: str = "") -> str:
    """The name (file stem) of the packaged notebook ``name`` (``"model_report"`` or ``"model_report.ipynb"``).

    Paths are refused: a report cannot make jagged run a notebook it did not ship. The error
    is ``SOURCE: notebook NAME is not one of the packaged notebooks (...)``.
    """
    known = packaged_notebooks()
    stem = name[:-len(".ipynb")] if isinstance(name, str) and name.endswith(".ipynb") else name
    if isinstance(stem, str) and stem in known:
        return stem
    from jagged.option_checks import shown

    raise JaggedInputError(f"{source + ': ' if source else ''}notebook {shown(name)} is not one of the packaged "
                           f"notebooks ({', '.join(known)})")


def notebook_name(notebook: str | Path) -> str:
    """The name under which a notebook is stored in the metadata: its file stem."""
    return Path(notebook).stem


def default_title(notebook: str | Path, parameters: Mapping[str, Any]) -> str:
    """The default title: ``"Model report: MODEL"`` for :data:`MODEL_NOTEBOOK`, else :data:`DEFAULT_TITLE`."""
    if notebook_name(notebook) == notebook_name(MODEL_NOTEBOOK):
        return f"Model report: {parameters.get('model') or '(first model)'}"
    return DEFAULT_TITLE
