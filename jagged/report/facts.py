"""What was read, for a report's provenance block and subtitle (both report kinds use it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: The :func:`jagged.views.summary.read_facts` a provenance block shows after the input and its hashes.
PROVENANCE_FACTS = ("scores", "models", "domains", "selection")


def input_facts(dataset: Any, bundled: bool = False) -> list[tuple[str, str, str]]:
    """Provenance rows ``(label, value, kind)`` of a loaded dataset: the input, SHA-256 of its files, counts."""
    from jagged.readers.dataset import sha256_file
    from jagged.views.summary import read_facts

    read = read_facts(dataset)
    given = read[0]  # the input, named as jagged.validate and the report's table name it
    paths = [Path(p) for p in dataset.paths]
    rows: list[tuple[str, str, str]] = [(given.label, given.value + (" (bundled with jagged)" if bundled else ""), "")]
    if len(paths) == 1 and paths[0].is_file():
        rows.append(("input SHA-256", sha256_file(paths[0]), "hash"))
    else:
        shown = [p for p in paths if p.is_file()][:20]
        for path in shown:
            rows.append((f"SHA-256 of {path.name}", sha256_file(path), "hash"))
        if len(paths) > len(shown):
            rows.append(("other files", f"{len(paths) - len(shown)} more (see the executed notebook)", ""))
    rows += [(f.label, f.value, "") for f in read if f.key in PROVENANCE_FACTS]
    return rows


def input_subtitle(dataset: Any) -> str:
    """The line under a cross-model report's title: ``"29 models × 14 domains from NAME"``, then any selection."""
    from jagged.views.summary import selection_text

    scores = dataset.scores
    line = f"{scores['model'].nunique():,} models × {scores['domain'].nunique():,} domains from {dataset.name}"
    return line + (f" — {selection_text(dataset.selection)}" if dataset.selection else "")
