"""Statistics: pure functions on a Dataset's tables (DataFrame in, tidy DataFrame out).

Formulas and edge-case policy are in each function's Notes. :mod:`jagged.stats.analysis`
composes them into the per-model metrics table.
"""
