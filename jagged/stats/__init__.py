"""Statistics: pure functions on a Dataset's tables (DataFrame in, tidy DataFrame out).

Formulas and edge-case policy are in each function's Notes. Stats never read files or write
sentences; the next stage, :mod:`jagged.analysis`, composes them into the per-model metrics
table, once per report.
"""
