"""What a format module declares (:class:`Reader`) and what its ``read`` returns
(:class:`ScoreRead`, :class:`ItemRead`).

A leaf beside :mod:`jagged.readers.dataset`: format modules import it, it imports no reader.
Each format module holds one ``READER = Reader(...)``; :mod:`jagged.readers.registry` lists
them in the order it asks them and validates what they return, once, into a
:class:`~jagged.readers.dataset.Dataset`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd


@dataclass
class Head:
    """A file as the registry first sees it: its path, its kind from the first bytes, its parsed JSON.

    Made once per file by :func:`jagged.readers.files.head`; the registry hands ``content``
    to the formats' ``recognises``, so no format opens the file again to recognise it.

    Attributes
    ----------
    path : pathlib.Path
        The file.
    kind : {"text", "parquet", "json", "zip", "binary"}
        What its first bytes say (:func:`jagged.readers.files.sniff`; inside a folder,
        ``"zip"`` or ``"json"``).
    root : pathlib.Path, optional
        The folder the file was found in, when jagged was pointed at a folder.
    content : object, optional
        The parsed JSON document (or JSON lines) of a ``"json"`` file; None for other
        kinds, and for a ``"json"`` head not read yet (the registry reads it).
    """

    path: Path
    kind: str
    root: Path | None = None
    content: Any = None


@dataclass
class Parsed:
    """One input recognised by a reader.

    Attributes
    ----------
    path : pathlib.Path
        The file (for a HELM run, its folder).
    reader : Reader
        The reader that recognised it.
    content : object
        What that reader's :attr:`Reader.parse` made of it (parsed JSON, an archive in the
        shape of a JSON log, a folder).
    root : pathlib.Path, optional
        The folder jagged was pointed at, if any.
    kind : str
        The file's :attr:`Head.kind`.
    """

    path: Path
    reader: "Reader"
    content: Any
    root: Path | None = None
    kind: str = "json"


@dataclass
class ScoreRead:
    """Per-domain scores a reader found, not yet validated.

    Attributes
    ----------
    scores : pandas.DataFrame
        ``model, domain, score`` (+ ``n_items``, ``category``) as read.
    label : str
        Name used in validation messages (the file, or the folder for several files).
    paths : list of pathlib.Path
        Files used.
    format : str
        :attr:`Dataset.format <jagged.readers.dataset.Dataset>`.
    model_notes, details : dict
        Per-model remarks and facts for ``jagged validate`` and the report.
    score_scale : {"fraction", "percent"}
        Scale of ``score``.
    line_offset : int or None
        Added to row labels to give file lines in messages (2 for CSV).
    selected : bool
        Whether the row selection (``where``, ``models``, ``domains``) was applied already
        (tables apply it before a wide table is melted).
    """

    scores: pd.DataFrame
    label: str
    paths: list[Path]
    format: str
    model_notes: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    score_scale: str = "fraction"
    line_offset: int | None = None
    selected: bool = False


@dataclass
class ItemRead:
    """Item-level rows a reader found, before validation and aggregation.

    Attributes
    ----------
    items : pandas.DataFrame
        ``model, domain, item, correct`` (+ ``category``, ``choice``, ``key``,
        ``n_options``); for evaluator outputs item ids are ``task:id`` when several tasks
        are read (ids restart in every task), epochs already averaged.
    categories : dict
        Domain to category (None when unknown).
    paths : list of pathlib.Path
        Files used.
    model_notes : dict
        Per-model remarks (limit flags, incomplete logs).
    details : dict
        Facts for ``jagged validate`` and the report.
    format : str
        :attr:`Dataset.format <jagged.readers.dataset.Dataset>`.
    line_offset : int or None
        Added to row labels to give file lines in messages (2 for CSV).
    selected : bool
        Whether the row selection was applied already.
    """

    items: pd.DataFrame
    categories: dict[str, str | None]
    paths: list[Path]
    model_notes: dict[str, str]
    details: dict[str, Any]
    format: str = "items"
    line_offset: int | None = None
    selected: bool = False


@dataclass(frozen=True, eq=False)
class Reader:
    """One input format: how to recognise it and how to read it.

    Attributes
    ----------
    name : str
        The kind of input (``"lm-eval results"``), unique in the registry.
    family : str
        Inputs of one family may share a folder (``"lm-eval outputs"``); two families
        may not.
    what : str
        The inputs in plural, for messages (``"lm-eval results"``, ``"HELM runs"``).
    options : tuple of str
        The :data:`jagged.options.OPTIONS` of stage ``load`` it takes; others given are
        warned about and dropped.
    read : callable
        ``read(found, *, source, **options)`` with the recognised
        :class:`Parsed` inputs of this reader (a folder's, or one file's) ->
        :class:`ScoreRead`, :class:`ItemRead`, or an already validated
        :class:`~jagged.readers.dataset.Dataset`.
    kinds : tuple of str
        The first-bytes kinds (:attr:`Head.kind`) it takes; default ``("json",)``.
    recognises : callable, optional
        ``recognises(content) -> bool``, asked for a ``"json"`` file only, with the JSON
        the registry parsed once: whether it is this format. None: every file of
        ``kinds`` is.
    parse : callable, optional
        ``parse(head) -> Parsed``: what to keep of a recognised file (default: its path,
        parsed JSON, root and kind).
    unused : callable, optional
        ``unused(found) -> list[str]``: the "not used" entries for this reader's inputs
        when another reader of its family, earlier in the registry, is used instead.
    """

    name: str
    family: str
    what: str
    options: tuple[str, ...]
    read: Callable[..., Any]
    kinds: tuple[str, ...] = ("json",)
    recognises: Callable[[Any], bool] | None = None
    parse: Callable[[Head], Parsed] | None = None
    unused: Callable[[list[Parsed]], list[str]] | None = None


def records(content: Any) -> Any:
    """JSON-lines content as a list of records (one object becomes a list of one)."""
    return [content] if isinstance(content, dict) else content
