"""The report notebooks and the parameters they declare.

A bare name (``"model_report"``) means a notebook shipped in ``jagged.notebooks`` (the
source tree's ``notebooks/``, see :mod:`jagged.resources`); papermill reads each
notebook's ``parameters`` cell (:func:`notebook_parameters`).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from jagged.resources import notebooks_dir

NOTEBOOKS_DIR = notebooks_dir()
REPORT_NOTEBOOK = "jaggedness_report.ipynb"
MODEL_NOTEBOOK = "model_report.ipynb"


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


def plain(value: Any) -> Any:
    """Parameter values papermill can write: tuples become lists, paths strings."""
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


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

def notebook_name(notebook: str | Path) -> str:
    """The name under which a notebook is stored in the metadata: its file stem."""
    return Path(notebook).stem
