"""Item-level results: placeholder until implemented."""

from __future__ import annotations

from jagged.errors import JaggedInputError


def dataset_from_items(frame, *, source, paths, line_offset=None):
    """Aggregate an item-level table (model, domain, item, correct) into a Dataset."""
    raise JaggedInputError(f"{source}: item-level input is not supported yet")
