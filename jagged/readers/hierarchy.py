"""From a domain hierarchy to the canonical ``category`` column, one rule for every reader.

Evaluators give domains a place in a tree: lm-eval's ``group_subtasks`` (mmlu > mmlu_stem
> leaf), an Every Eval Ever ``evaluation_result_id`` such as ``mmlu_pro/biology``, a HELM
scenario and its subjects. jagged keeps one level of it, ``category``:

* a domain's category is its **immediate parent** in the tree;
* when that parent is the one root chosen (a flat benchmark: every domain sits directly
  under it), the domains get no category, since one category for everything says nothing;
* when some domains sit in sub-groups and others directly under a root, the latter form
  a category of their own, named after the domain.
"""

from __future__ import annotations


def category_map(paths: dict[str, tuple[str, ...]], roots: list[str]) -> dict[str, str | None]:
    """Domain to category from each domain's path in the tree.

    Parameters
    ----------
    paths : dict
        Domain to its path ``(root, ..., parent, domain)``; a path of one element is a
        domain without parents.
    roots : list of str
        The roots chosen (e.g. the ``--task`` groups); with exactly one, domains directly
        under it get no category.

    Returns
    -------
    dict
        Domain to category; every value is None when no domain has a parent below the
        chosen root.
    """
    single = roots[0] if len(roots) == 1 else None
    cats: dict[str, str | None] = {}
    for leaf, path in paths.items():
        parent = path[-2] if len(path) >= 2 else None
        cats[leaf] = None if parent == single else parent
    if any(c is not None for c in cats.values()):
        cats = {leaf: (leaf if c is None else c) for leaf, c in cats.items()}
    return cats


__all__ = ["category_map"]
