"""The report notebooks and the parameters they declare.

A bare name (``"model_report"``) means a notebook shipped in ``jagged.notebooks`` (the
source tree's ``notebooks/``, see :mod:`jagged.resources`); papermill reads each
notebook's ``parameters`` cell (:func:`notebook_parameters`). A notebook named by a report's
stored metadata or ``--notebook`` must be one of the packaged ones
(:func:`packaged_notebook`), never a path. Parameter values are plain data
(:func:`plain`): nothing is ever turned into a parameter with ``str()``.
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
    """Resolve a notebook: a bare name (``"model_report"``, ``"x.ipynb"``) in ``notebooks/``.

    A bare name always means the packaged notebook, never a file of that name in the
    current folder (e.g. an executed copy in ``reports/``); anything with a folder part is
    a path.

    Raises
    ------
    FileNotFoundError
        When there is no such notebook.
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
    """The parameters a notebook declares in its ``parameters`` cell, in order.

    Parameters
    ----------
    notebook : str or pathlib.Path
        A notebook path or a name in ``notebooks/``.

    Returns
    -------
    list of Parameter
        Name, declared type, default (as source text) and help comment of each line.
    """
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
    ``__repr__``), tuples lists, paths strings, numpy scalars Python numbers. Anything else
    (bytes, sets, dates, objects), a non-finite float or nesting deeper than
    :data:`MAX_DEPTH` is refused: nothing is ever converted with ``str()``.

    Raises
    ------
    TypeError
        A value that is not plain data.
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
    """Every parameter a notebook declares with its default value, in declaration order.

    Parameters
    ----------
    notebook : str or pathlib.Path
        Notebook name in ``notebooks/`` or path.

    Returns
    -------
    dict
        Name → default, parsed from the source text with :func:`ast.literal_eval`
        (a default that is not a literal is kept as its source text).
    """
    out: dict[str, Any] = {}
    for p in notebook_parameters(notebook):
        try:
            out[p.name] = ast.literal_eval(p.default)
        except (ValueError, SyntaxError):
            out[p.name] = p.default
    return out


def full_parameters(notebook: str | Path, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The complete parameter set a run uses: declared defaults, then the given values.

    Parameters
    ----------
    notebook : str or pathlib.Path
        The notebook.
    parameters : mapping
        Given values (tuples become lists, paths strings).

    Returns
    -------
    dict
        Every declared parameter in declaration order, then any undeclared given ones.
    """
    full = default_values(notebook)
    full.update({k: plain(v) for k, v in parameters.items()})
    return full


def packaged_notebooks() -> tuple[str, ...]:
    """The names of the notebooks shipped with jagged (``jaggedness_report``, ``model_report``, ...)."""
    return tuple(sorted(p.stem for p in NOTEBOOKS_DIR.glob("*.ipynb") if not p.name.startswith(".")))


def packaged_notebook(name: Any, source: str = "") -> str:
    """Check that ``name`` names a packaged notebook; return its name.

    Parameters
    ----------
    name : object
        A stored ``jagged-notebook`` value or ``--notebook``: ``"model_report"`` or
        ``"model_report.ipynb"``. Paths (absolute, relative, ``../x``, a notebook beside a
        report) are refused: a report cannot make jagged run a notebook it did not ship.
    source : str
        Start of the message (``"--params r.html"``).

    Returns
    -------
    str
        The notebook's name (file stem).

    Raises
    ------
    JaggedInputError
        ``SOURCE: notebook NAME is not one of the packaged notebooks (jaggedness_report, model_report)``.
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
    """The title a report of this notebook gets when none is given or stored.

    Parameters
    ----------
    notebook : str or pathlib.Path
        The notebook.
    parameters : mapping
        Its parameters (the per-model report's title names ``model``).

    Returns
    -------
    str
        ``"Model report: MODEL"`` for :data:`MODEL_NOTEBOOK`, else :data:`DEFAULT_TITLE`.
    """
    if notebook_name(notebook) == notebook_name(MODEL_NOTEBOOK):
        return f"Model report: {parameters.get('model') or '(first model)'}"
    return DEFAULT_TITLE
