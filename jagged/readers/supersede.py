"""The "newest run supersedes" rule, written once for every reader.

Evaluators rerun: lm-evaluation-harness writes a new ``results_<timestamp>.json``, Inspect a
new log, an Every Eval Ever collection a new file per scrape, HELM a new suite. Every
reader keeps, for each key (a model and a task, domain or collection), the **newest**
candidate and lists what it replaced, so the report can say so:

* candidates are ranked by a tuple their reader gives (a timestamp first, then whatever
  breaks ties, ending in something unique such as the file name); the largest wins;
* two candidates whose *timestamps* (the first element of the rank) are equal are a
  **tie**: the rest of the rank decides, and the replacement is flagged as such so the
  reader can report the rule that decided it.

The readers format the notes; this module only decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Hashable, Iterable, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Replaced(Generic[T]):
    """One candidate that lost to a newer one.

    Attributes
    ----------
    key : hashable
        What both candidates are results for (e.g. ``(model, task)``).
    old : object
        The candidate replaced.
    new : object
        The candidate kept for ``key`` (the final winner, not merely the next newer one).
    tie : bool
        Whether ``old`` and ``new`` have the same timestamp (the first element of their
        rank), so that the rest of the rank decided.
    """

    key: Hashable
    old: T
    new: T
    tie: bool


def newest(candidates: Iterable[tuple[Hashable, T]], rank: Callable[[T], tuple[Any, ...]]
           ) -> tuple[dict[Hashable, T], list[Replaced[T]]]:
    """Keep the newest candidate of every key.

    Parameters
    ----------
    candidates : iterable of (key, candidate)
        In the order the reader wants its keys: the result keeps the order in which each
        key was first seen.
    rank : callable
        A candidate's rank, a tuple whose first element is its timestamp; the largest rank
        wins. It should end in something unique (a file name), so the outcome does not
        depend on the order of ``candidates``.

    Returns
    -------
    winners : dict
        Key to its newest candidate, keys in order of first appearance.
    replaced : list of Replaced
        Every losing candidate, grouped by key (in the order of ``winners``) and, within a
        key, oldest first.
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


__all__ = ["Replaced", "newest"]
