"""File names from model names: safe, unique, never empty, never outside the output folder.

Model names are data and may be anything: ``gpt-4o/2024-05-13``, ``../../etc/passwd``,
``"><svg onload=…>``, ``Модель``, 300 characters, ``CON``, ``.`` or a string of emoji.
:func:`unique_slugs` turns a list of names into file stems that are

* made of ``[a-z0-9-]`` only (so no ``/``, ``\\``, ``.``, quote or markup survives);
* never empty (a name with nothing left after slugging becomes ``model``);
* never a reserved Windows device name (``con``, ``nul``, ``com1`` … get ``-model``
  appended), nor one of the caller's reserved stems (e.g. ``index``);
* at most ``max_length`` characters, suffix included;
* unique, case-insensitively (collisions get ``-2``, ``-3`` … in the order given).

The slugging itself is python-slugify's: a maintained library that transliterates Unicode
to ASCII (``Ünïcödé`` → ``unicode``, ``日本語`` → ``ri-ben-yu``, ``Привет`` → ``privet``),
decodes HTML entities and truncates cleanly, which a home-made regular expression would do
worse. :func:`output_path` then checks, as a second line of defence, that the joined path
resolves inside the output folder.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Sequence

from slugify import slugify

from jagged.errors import JaggedInputError

#: Default longest stem; with a suffix such as ``.failed.ipynb`` a file name stays far
#: below the 255-byte limit of common file systems.
MAX_LENGTH = 80
#: Stem used when nothing is left of a name after slugging.
EMPTY_STEM = "model"
#: Device names Windows reserves whatever the extension (``con.html`` cannot be created).
WINDOWS_RESERVED = frozenset(
    ["con", "prn", "aux", "nul"] + [f"com{i}" for i in range(10)] + [f"lpt{i}" for i in range(10)])
_SAFE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def slug(name: object, *, max_length: int = MAX_LENGTH) -> str:
    """One name's file stem (not yet made unique; see :func:`unique_slugs`).

    Parameters
    ----------
    name : object
        Model name (converted with ``str``).
    max_length : int
        Longest stem, at least 16.

    Returns
    -------
    str
        A non-empty stem of ``[a-z0-9-]``, neither a Windows device name nor empty.

    Examples
    --------
    >>> slug("../../x"), slug("GPT-4o (2024-05-13)"), slug(".."), slug("CON")
    ('x', 'gpt-4o-2024-05-13', 'model', 'con-model')
    """
    if max_length < 16:
        raise ValueError(f"max_length must be at least 16, not {max_length}")
    room = max_length - len("-model")
    stem = slugify(str(name), max_length=room, lowercase=True).strip("-")
    if not stem:
        return EMPTY_STEM
    if stem in WINDOWS_RESERVED:
        stem = f"{stem}-{EMPTY_STEM}"
    return stem


def unique_slugs(names: Sequence[object], *, reserved: Iterable[str] = (),
                 max_length: int = MAX_LENGTH) -> list[str]:
    """Unique file stems for a list of names, in the same order.

    Parameters
    ----------
    names : sequence
        Names; duplicates in the input get distinct stems too.
    reserved : iterable of str
        Stems that must not be produced (e.g. ``index`` for ``index.html``); compared
        case-insensitively.
    max_length : int
        Longest stem, suffix included.

    Returns
    -------
    list of str
        One stem per name. The first name (in the given order) with a given slug keeps
        it; the next ones get ``-2``, ``-3`` …, skipping stems already taken. The result
        depends only on the list, so giving the same list again gives the same stems.
    """
    taken = {str(r).casefold() for r in reserved}
    out: list[str] = []
    for name in names:
        base = slug(name, max_length=max_length)
        stem, n = base, 1
        while stem.casefold() in taken:
            n += 1
            suffix = f"-{n}"
            stem = base[: max_length - len(suffix)].rstrip("-") + suffix
        taken.add(stem.casefold())
        out.append(stem)
    return out


def output_path(folder: str | Path, stem: str, suffix: str) -> Path:
    """Join a stem to a folder and check the result stays inside it.

    Parameters
    ----------
    folder : str or pathlib.Path
        Output folder.
    stem : str
        A stem from :func:`unique_slugs`.
    suffix : str
        File suffix, e.g. ``".html"``.

    Returns
    -------
    pathlib.Path
        ``folder / (stem + suffix)``.

    Raises
    ------
    JaggedInputError
        When the stem is not a slug or the path would resolve outside ``folder``.
    """
    if not _SAFE.match(stem):
        raise JaggedInputError(f"not a safe file stem: {stem!r}")
    folder = Path(folder)
    path = folder / f"{stem}{suffix}"
    root = folder.resolve()
    if path.resolve().parent != root:
        raise JaggedInputError(f"{path}: would be written outside {root}")
    return path
