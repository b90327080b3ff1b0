"""Readers: every input format becomes one :class:`jagged.readers.dataset.Dataset`.

Each format is one module holding a ``READER``; :mod:`jagged.readers.registry` asks them in
a stated order and validates once; :mod:`jagged.readers.load` is ``jagged.load``.
"""
