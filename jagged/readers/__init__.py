"""Readers: every input format becomes one :class:`jagged.readers.dataset.Dataset`.

:mod:`jagged.readers.dataset` and :mod:`jagged.readers.reader` are the leaves every
reader imports; each format is one module holding a ``READER``
(:mod:`~jagged.readers.tables`, :mod:`~jagged.readers.lmeval`,
:mod:`~jagged.readers.inspect_logs`, ...); :mod:`jagged.readers.registry` asks them in a
stated order and validates once; :mod:`jagged.readers.load` is ``jagged.load``.
"""
