"""Sample metadata fields: the domain named by ``--domain-key`` in evaluator samples.

Inspect samples and Every Eval Ever instance records both carry a ``metadata`` mapping;
``--domain-key KEY`` names the field whose value is an item's domain. A key is looked up
as written first, then as a dotted path into nested mappings (``subject.name``).
"""

from __future__ import annotations

from typing import Any, Iterable

from jagged.errors import JaggedInputError
from jagged.text import listing


def metadata_keys(records: Iterable[dict[str, Any]]) -> list[str]:
    """The metadata keys found in ``records`` (nested keys dotted), in first-seen order.

    Parameters
    ----------
    records : iterable of dict
        Samples or instance records, each with an optional ``metadata`` mapping.

    Returns
    -------
    list of str
        Top-level keys and, for mapping values, ``key.sub`` for each of their keys.
    """
    keys: dict[str, None] = {}
    for record in records:
        meta = record.get("metadata")
        if isinstance(meta, dict):
            for key, value in meta.items():
                keys[str(key)] = None
                if isinstance(value, dict):
                    keys.update({f"{key}.{sub}": None for sub in value})
    return list(keys)


def metadata_value(record: dict[str, Any], key: str) -> Any:
    """The value of metadata field ``key`` (as written, else as a dotted path); KeyError if absent."""
    node: Any = record.get("metadata")
    if isinstance(node, dict) and key in node:
        return node[key]
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


def metadata_domain(record: dict[str, Any], key: str, where: str, available: list[str]) -> str:
    """The domain named by metadata field ``key`` of one record.

    Parameters
    ----------
    record : dict
        A sample or instance record.
    key : str
        The ``--domain-key`` field.
    where : str
        The record's place, for messages ("log.eval: sample 'x' (epoch 1)").
    available : list of str
        The keys the file has (:func:`metadata_keys`), listed when ``key`` is absent.

    Returns
    -------
    str
        The value, stripped.

    Raises
    ------
    JaggedInputError
        The key is absent, or its value is empty, missing or not a scalar.
    """
    try:
        value = metadata_value(record, key)
    except KeyError:
        raise JaggedInputError(f"{where}: no metadata key {key!r}; available keys: "
                               f"{listing(available, 12) or 'none'}") from None
    if isinstance(value, (dict, list)) or value is None or str(value).strip() == "":
        raise JaggedInputError(f"{where}: metadata {key!r} is {str(value)[:40]!r}, not a domain name")
    return str(value).strip()


def domain_clash(source: str, domain: str, key: str, first_task: str, second_task: str) -> JaggedInputError:
    """The error for a ``--domain-key`` value found in two tasks, saying how to proceed.

    A domain belongs to one task (its category); the same value in two tasks would merge
    items of different tasks into one domain.

    Parameters
    ----------
    source : str
        The file or folder read.
    domain : str
        The value of ``key`` found in both tasks.
    key : str
        The ``--domain-key`` field.
    first_task, second_task : str
        The tasks it was found in.
    """
    return JaggedInputError(
        f"{source}: domain {domain!r} ({key}) occurs in tasks {first_task} and {second_task}, and a domain belongs to "
        f"one task; read the tasks separately (point jagged at one task's logs), or leave out --domain-key so that "
        f"each task is a domain")
