"""Plain-language summary of a loaded dataset (``jagged validate``)."""

from __future__ import annotations

from jagged.loaders import Dataset
from jagged.table import summarize


def _listing(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def describe(dataset: Dataset) -> str:
    """One paragraph: format, models, domains, completeness and score range.

    Parameters
    ----------
    dataset : Dataset
        A loaded dataset.

    Returns
    -------
    str
        The paragraph, ending with ``OK``.
    """
    facts = summarize(dataset.scores)
    parts = [f"{dataset.source}: {dataset.format} format, {facts['rows']} scores for "
             f"{facts['models']} models in {facts['domains']} domains"]
    if facts["categories"]:
        parts.append(f"grouped into {facts['categories']} categories")
    if facts["incomplete"]:
        parts.append(f"{facts['complete_models']} models complete, {len(facts['incomplete'])} "
                     f"incomplete ({_listing(facts['incomplete'])})")
    else:
        parts.append("every model has every domain")
    parts.append(f"scores range {facts['score_min']:.4f} to {facts['score_max']:.4f}")
    parts.append("item counts (n_items) present" if facts["has_n_items"] else "no item counts (n_items)")
    for key, value in dataset.details.items():
        parts.append(f"{key}: {value}")
    return "; ".join(parts) + ". OK"
