"""File names from model names: safe, unique, never empty, never outside the output folder.

Model names are data (``../../etc/passwd``, ``"><svg onload=…>``, ``Модель``, ``CON``,
300 characters). :func:`unique_slugs` makes stems of ``[a-z0-9-]`` only, never empty
(``model``), never a Windows device name or a reserved stem, at most ``max_length`` long
and unique case-insensitively (``-2``, ``-3`` … in the order given). The slugging is
python-slugify's (transliteration: ``Привет`` → ``privet``); :func:`output_path` checks the
joined path stays inside the folder.
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
    """One name's file stem of ``[a-z0-9-]``, not yet unique (``max_length`` at least 16).

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
    """Unique file stems for a list of names, in the same order; ``reserved`` stems are never produced.

    The first name with a given slug keeps it, the next get ``-2``, ``-3`` … (skipping stems
    taken): the result depends only on the list.
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
    """``folder / (stem + suffix)``; JaggedInputError for a stem that is no slug or a path outside ``folder``."""
    if not _SAFE.match(stem):
        raise JaggedInputError(f"not a safe file stem: {stem!r}")
    folder = Path(folder)
    path = folder / f"{stem}{suffix}"
    root = folder.resolve()
    if path.resolve().parent != root:
        raise JaggedInputError(f"{path}: would be written outside {root}")
    return path
