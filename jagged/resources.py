"""Where the files that ship with jagged are: bundled data, report notebooks, templates.

The design card keeps ``notebooks/`` and ``templates/`` as top-level folders of the source
tree; the build maps them into the package as ``jagged.notebooks`` and
``jagged.templates`` (``[tool.setuptools.package-dir]`` in ``pyproject.toml``), so an
editable install and a regular one (wheel, ``pip install .``) find them the same way,
through :mod:`importlib.resources`. Nothing here looks relative to the source tree.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import as_file, files
from pathlib import Path


@lru_cache(maxsize=None)
def resource_dir(package: str) -> Path:
    """The folder of a resource package (``"jagged.data"``, ``"jagged.notebooks"``, ...).

    Parameters
    ----------
    package : str
        A package of jagged that holds data files.

    Returns
    -------
    pathlib.Path
        A real folder on disk (jagged is never installed zipped; :func:`as_file` would
        extract it otherwise, and the folder would live as long as the process).
    """
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
