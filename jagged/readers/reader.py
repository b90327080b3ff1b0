"""What a format module declares (:class:`Reader`) and returns (:class:`ScoreRead`, :class:`ItemRead`),
and the rules every evaluator reader shares (a leaf: it imports no reader).

* :func:`category_map`: a domain's category is its parent in the evaluator's tree (lm-eval
  groups, an EEE ``evaluation_result_id``, a HELM scenario); none when that parent is the
  one root chosen; domains directly under a root beside sub-grouped ones are their own.
* :func:`newest`: per key (a model and a task, domain or collection) the candidate of
  largest rank (timestamp first, ending in something unique) wins; equal timestamps are a
  *tie*, flagged so the reader can say what decided it.
* :func:`metadata_domain`: ``--domain-key KEY`` names the ``metadata`` field holding an
  item's domain, looked up as written, then as a dotted path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Generic, Hashable, Iterable, TypeVar

import pandas as pd

from jagged.errors import JaggedInputError
from jagged.text import listing

T = TypeVar("T")


@dataclass
class Head:
    """A file as the registry first sees it (:func:`jagged.readers.files.head`): ``kind`` by its first bytes
    (``"text"``, ``"parquet"``, ``"json"``, ``"zip"``, ``"binary"``), ``content`` its parsed JSON or None.
    """

    path: Path
    kind: str
    root: Path | None = None
    content: Any = None


@dataclass
class Parsed:
    """One input recognised by a reader: its path (a HELM run's folder), what :attr:`Reader.parse`
    made of it (parsed JSON, an archive shaped as a JSON log, a folder), the root and :attr:`Head.kind`."""

    path: Path
    reader: "Reader"
    content: Any
    root: Path | None = None
    kind: str = "json"


@dataclass
class ScoreRead:
    """Per-domain scores ``model, domain, score`` (+ ``n_items``, ``category``) as read, not validated.

    ``label`` names the input in messages, ``line_offset`` turns row labels into file lines
    (2 for CSV), ``selected`` says the row selection was applied already.
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
    """Item-level rows ``model, domain, item, correct`` (+ ``category``, ``choice``, ``key``, ``n_options``).

    Item ids are ``task:id`` when several tasks are read; epochs are already averaged.
    ``categories`` maps domain to category (None when unknown).
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

    ``family``: inputs of one family may share a folder, two families may not; ``what``: the
    inputs in plural, for messages; ``options``: the loader options it takes; ``read(found, *,
    source, **options)`` returns a :class:`ScoreRead`, :class:`ItemRead` or validated
    :class:`~jagged.readers.dataset.Dataset`; ``kinds``: the :attr:`Head.kind` values it takes;
    ``recognises(content)``: whether a ``"json"`` file is this format (None: every file of
    ``kinds`` is); ``parse(head)``: what to keep of a recognised file; ``unused(found)``: the
    "not used" entries when an earlier reader of its family is used instead.
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


def mapped(values: pd.Series, lookup: Any) -> pd.Series:
    """``values`` mapped through ``lookup`` as objects, None where ``lookup`` has no value."""
    out = values.map(lookup).astype(object)
    return out.where(out.notna(), None)


def category_map(paths: dict[str, tuple[str, ...]], roots: list[str]) -> dict[str, str | None]:
    """Domain to category from each domain's path ``(root, ..., parent, domain)`` (see the module docstring).

    With exactly one root in ``roots``, domains directly under it get no category; every
    value is None when no domain has a parent below the chosen root.
    """
    single = roots[0] if len(roots) == 1 else None
    cats: dict[str, str | None] = {}
    for leaf, path in paths.items():
        parent = path[-2] if len(path) >= 2 else None
        cats[leaf] = None if parent == single else parent
    if any(c is not None for c in cats.values()):
        cats = {leaf: (leaf if c is None else c) for leaf, c in cats.items()}
    return cats


@dataclass(frozen=True)
class Replaced(Generic[T]):
    """A candidate ``old`` that lost to ``new`` (the final winner for ``key``); ``tie``: same timestamp."""

    key: Hashable
    old: T
    new: T
    tie: bool


def newest(candidates: Iterable[tuple[Hashable, T]], rank: Callable[[T], tuple[Any, ...]]
           ) -> tuple[dict[Hashable, T], list[Replaced[T]]]:
    """Per key, the candidate of largest ``rank`` (timestamp first), in first-seen order; and the losers, oldest first.
    """
    winners: dict[Hashable, T] = {}
    losers: dict[Hashable, list[T]] = {}
    for key, candidate in candidates:
        if key not in winners:
            winners[key] = candidate
            continue
        best = winners[key]
        if rank(candidate) > rank(best):
            losers.setdefault(key, []).append(best)
            winners[key] = candidate
        else:
            losers.setdefault(key, []).append(candidate)
    replaced: list[Replaced[T]] = []
    for key in winners:
        new = winners[key]
        for old in sorted(losers.get(key, []), key=rank):
            replaced.append(Replaced(key=key, old=old, new=new, tie=rank(old)[0] == rank(new)[0]))
    return winners, replaced


def iso(seconds: float | None) -> str:
    """A time in seconds since the epoch as ``2024-11-21 16:28:31 UTC`` (``no timestamp`` for None or NaN)."""
    if seconds is None or not math.isfinite(seconds):
        return "no timestamp"
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def metadata_keys(records: Iterable[dict[str, Any]]) -> list[str]:
    """The ``metadata`` keys of ``records`` in first-seen order, keys of nested mappings dotted (``key.sub``)."""
    keys: dict[str, None] = {}
    for record in records:
        meta = record.get("metadata")
        if isinstance(meta, dict):
            for key, value in meta.items():
                keys[str(key)] = None
                if isinstance(value, dict):
                    keys.update({f"{key}.{sub}": None for sub in value})
    return list(keys)


def dotted(node: Any, key: str) -> Any:
    """``node[key]`` as written, else following the dots of ``key`` into nested objects; KeyError if absent."""
    if isinstance(node, dict) and key in node:
        return node[key]
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


def metadata_value(record: dict[str, Any], key: str) -> Any:
    """The value of metadata field ``key`` (:func:`dotted`); KeyError if absent."""
    return dotted(record.get("metadata"), key)


def metadata_domain(record: dict[str, Any], key: str, where: str, available: list[str]) -> str:
    """The domain (stripped) named by metadata field ``key`` of one record; ``where`` names the record in errors."""
    try:
        value = metadata_value(record, key)
    except KeyError:
        raise JaggedInputError(f"{where}: no metadata key {key!r}; available keys: "
                               f"{listing(available, 12) or 'none'}") from None
    if isinstance(value, (dict, list)) or value is None or str(value).strip() == "":
        raise JaggedInputError(f"{where}: metadata {key!r} is {str(value)[:40]!r}, not a domain name")
    return str(value).strip()


def domain_clash(source: str, domain: str, key: str, first_task: str, second_task: str) -> JaggedInputError:
    """The error for a ``--domain-key`` value found in two tasks (a domain belongs to one task)."""
    return JaggedInputError(
        f"{source}: domain {domain!r} ({key}) occurs in tasks {first_task} and {second_task}, and a domain belongs to "
        f"one task; read the tasks separately (point jagged at one task's logs), or leave out --domain-key so that "
        f"each task is a domain")
