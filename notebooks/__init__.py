"""The report notebooks, shipped inside the package as ``jagged.notebooks`` (see jagged.resources)."""
