"""Pairs of datasets for the comparison tests: hand-worked tables and an MMLU-Pro release pair.

The MMLU-Pro pair is built from ``tests/data/mmlu_pro_responses.csv.gz`` (every model's
extracted letter ``pred`` and the key ``answer`` of its own file; see tests/data/PROVENANCE.md):
the Llama-2-era files and the gemini/jamba files disagree on the keys of 33 questions
(``answer_key_differs_across_files`` in ``tests/data/mmlu_pro_items.csv.gz``). Release A scores
every model's choice against the Llama-2-7b-hf file's keys, release B against the
gemini-1.5-pro-002 file's keys (jamba-1.5-large's where gemini lacks the question). On top of
that, with the defaults:

* model ``Yi-6B`` is only in A, ``jamba-1.5-large`` only in B;
* :data:`REMOVED_ITEMS` are only in A, :data:`ADDED_ITEMS` only in B (none has a key change);
* in B every model answers the :data:`EASIER_ITEMS` (hard law questions in A) with the key, so
  their difficulty moves far beyond noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from jagged.readers.dataset import Dataset
from jagged.readers.items import dataset_from_items

DATA = Path(__file__).parent / "data"
OLD_KEY_MODEL = "Llama-2-7b-hf"
NEW_KEY_MODELS = ("gemini-1.5-pro-002", "jamba-1.5-large")
ONLY_A_MODEL = "Yi-6B"
ONLY_B_MODEL = "jamba-1.5-large"


@dataclass
class Pair:
    """Two datasets and what is known about how they differ."""

    a: Dataset
    b: Dataset
    key_changed: set[str]
    removed: set[str]
    added: set[str]
    easier: set[str]
    raw: pd.DataFrame


def raw_responses() -> pd.DataFrame:
    """The raw MMLU-Pro responses with ``item`` as str."""
    raw = pd.read_csv(DATA / "mmlu_pro_responses.csv.gz")
    return raw.assign(item=raw["item_id"].astype(str))


def release_keys(raw: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """The old (Llama-2-era) and new (gemini/jamba) key of every question."""
    old = raw[raw["model"] == OLD_KEY_MODEL].set_index("item")["answer"]
    new = raw[raw["model"] == NEW_KEY_MODELS[1]].set_index("item")["answer"]
    preferred = raw[raw["model"] == NEW_KEY_MODELS[0]].set_index("item")["answer"]
    new = preferred.reindex(new.index).fillna(new)
    return old, new


def _side(raw: pd.DataFrame, keys: pd.Series, name: str) -> Dataset:
    key = raw["item"].map(keys)
    frame = pd.DataFrame({"model": raw["model"], "domain": raw["domain"], "item": raw["item"],
                          "choice": raw["pred"], "key": key,
                          "correct": (raw["pred"].to_numpy(dtype=object) == key.to_numpy(dtype=object)).astype(int)})
    return dataset_from_items(frame, source=name, paths=[])


@lru_cache(maxsize=2)  # the tests only read the pair; build it once per session
def mmlu_pro_pair(*, change_models: bool = True, change_items: bool = True, easier: int = 10) -> Pair:
    """The MMLU-Pro release pair described in the module docstring."""
    raw = raw_responses()
    old, new = release_keys(raw)
    differ = set(old.index[old.to_numpy() != new.reindex(old.index).to_numpy()])
    items = np.asarray(sorted(set(raw["item"]) - differ, key=int), dtype=object)
    removed = set(items[:40]) if change_items else set()
    added = set(items[40:70]) if change_items else set()
    a_raw = raw[~raw["item"].isin(added)]
    b_raw = raw[~raw["item"].isin(removed)]
    if change_models:
        a_raw = a_raw[a_raw["model"] != ONLY_B_MODEL]
        b_raw = b_raw[b_raw["model"] != ONLY_A_MODEL]
    chosen: set[str] = set()
    if easier:
        law = a_raw[(a_raw["domain"] == "law") & ~a_raw["item"].isin(differ | removed | added)]
        share = law.assign(c=law["pred"].to_numpy(dtype=object) == law["item"].map(old).to_numpy(dtype=object)
                           ).groupby("item")["c"].mean()
        chosen = set(share[share <= 0.15].sort_index(key=lambda s: s.astype(int)).index[:easier])
        b_raw = b_raw.copy()
        hit = b_raw["item"].isin(chosen)
        b_raw.loc[hit, "pred"] = b_raw.loc[hit, "item"].map(new)
    return Pair(a=_side(a_raw, old, "mmlu_pro_v1"), b=_side(b_raw, new, "mmlu_pro_v2"), key_changed=differ,
                removed=removed, added=added, easier=chosen, raw=raw)


def items_dataset(rows: list[tuple], name: str, columns: tuple[str, ...] = ("model", "domain", "item", "correct")
                  ) -> Dataset:
    """A small item-level Dataset from tuples."""
    return dataset_from_items(pd.DataFrame(rows, columns=list(columns)), source=name, paths=[])


def scores_dataset(rows: list[tuple], name: str) -> Dataset:
    """A small per-domain Dataset from (model, domain, score, n_items) tuples."""
    from jagged.readers.canonical import validate_scores

    frame = pd.DataFrame(rows, columns=["model", "domain", "score", "n_items"])
    return Dataset(scores=validate_scores(frame, name, line_offset=None), source=name, paths=[], format="long")


def bundled_file_split() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The bundled responses (``jagged/data``) split by key generation: the Llama-2-era files (A)
    against the gemini/jamba files (B), as validated item tables.

    The two groups disagree on the keys of 33 questions, but the bundled file leaves choice and
    key empty for the 11 questions whose option lists differ between files (two of them among
    the 33), so 31 key changes are visible. No model is on both sides.
    """
    from jagged.readers.items import load_bundled_items

    items = load_bundled_items().items
    newer = items["model"].isin(["gemini-1.5-flash-002", "gemini-1.5-pro-002", "jamba-1.5-large"])
    return items[~newer].reset_index(drop=True), items[newer].reset_index(drop=True)


#: Hand-worked item pair: correctness of m1, m2, m3 on each item, and the item's domain.
HAND_A = {"i1": ("d1", (1, 1, 0)), "i2": ("d1", (1, 0, 0)), "i3": ("d2", (1, 1, 1)), "i4": ("d2", (0, 1, 0)),
          "i5": ("d3", (0, 1, 1)), "i6": ("d3", (0, 0, 1))}
HAND_B = {"i1": ("d1", (1, 1, 1)), "i3": ("d2", (1, 1, 1)), "i4": ("d2", (1, 1, 1)), "i5": ("d3", (0, 0, 1)),
          "i6": ("d3", (1, 0, 1)), "i7": ("d3", (1, 0, 0))}


def hand_pair() -> tuple[Dataset, Dataset]:
    """3 models x 3 domains, item-level with choice and key.

    A has i1..i6, B drops i2 and adds i7. Every key is "A" except i4, whose key is "A" in A and
    "B" in B. A right answer chose the key; a wrong one chose "C", except m1 on i4 in A, who
    chose "B" (so the new key makes it right).
    """
    def rows(table: dict, rekeyed: str) -> list[tuple]:
        out = []
        for item, (domain, results) in table.items():
            key = rekeyed if item == "i4" else "A"
            for model, correct in zip(("m1", "m2", "m3"), results):
                choice = key if correct else ("B" if (item, model, rekeyed) == ("i4", "m1", "A") else "C")
                out.append((model, domain, item, correct, choice, key))
        return out

    cols = ("model", "domain", "item", "correct", "choice", "key")
    return items_dataset(rows(HAND_A, "A"), "hand_a", cols), items_dataset(rows(HAND_B, "B"), "hand_b", cols)


def grader_bug_pair(models: int = 8, seed: int = 4) -> tuple[Dataset, Dataset]:
    """Item-level A and B on the same 3 × 40 items: in B a grader bug marks 15 law items wrong for every model.

    In A every model got those 15 items right, so each model's law score drops by exactly 15/40 and
    nothing else changes: a pure benchmark change.
    """
    rng = np.random.default_rng(seed)
    rows_a, rows_b = [], []
    for m in range(models):
        for d in ("law", "math", "bio"):
            for i in range(40):
                hit = d == "law" and i < 15
                right = 1 if hit else int(rng.random() < 0.3 + 0.05 * m)
                rows_a.append((f"m{m}", d, f"{d}{i}", right))
                rows_b.append((f"m{m}", d, f"{d}{i}", 0 if hit else right))
    return items_dataset(rows_a, "a"), items_dataset(rows_b, "b")
