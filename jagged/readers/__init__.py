"""Readers: every input format becomes one :class:`jagged.readers.dataset.Dataset`.

:mod:`jagged.readers.dataset` is the leaf every reader imports; the format readers
(:mod:`~jagged.readers.table`, :mod:`~jagged.readers.items`, :mod:`~jagged.readers.lmeval`,
:mod:`~jagged.readers.inspect_logs`, ...) sit on it; :mod:`jagged.readers.load` picks the
reader for a path (``jagged.load``).
"""
