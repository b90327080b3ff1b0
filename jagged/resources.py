"""Where the files that ship with jagged are: bundled data, report notebooks, templates.

The source tree's ``notebooks/`` and ``templates/`` are mapped into the package as
``jagged.notebooks`` and ``jagged.templates`` (``pyproject.toml``), so editable and regular
installs find them alike through :mod:`importlib.resources`.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import as_file, files
from pathlib import Path


@lru_cache(maxsize=None)
def resource_dir(package: str) -> Path:
    """The folder on disk of a resource package (``"jagged.data"``, ``"jagged.notebooks"``, ...)."""
    traversable = files(package)
    if isinstance(traversable, Path):
        return traversable
    context = as_file(traversable)  # pragma: no cover - zipped installs only
    return Path(context.__enter__())  # pragma: no cover


def data_dir() -> Path:
    """The bundled data (``jagged/data``)."""
    return resource_dir("jagged.data")


def notebooks_dir() -> Path:
    """The report notebooks (the source tree's ``notebooks/``)."""
    return resource_dir("jagged.notebooks")


def templates_dir() -> Path:
    """The nbconvert and index templates (the source tree's ``templates/``)."""
    return resource_dir("jagged.templates")
