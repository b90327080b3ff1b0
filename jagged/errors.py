"""The one exception type users see, and the warning category jagged emits."""

from __future__ import annotations


class JaggedInputError(ValueError):
    """Bad input: its message is the one line a user sees (CLI exit status 2).

    The message names the file and the column or value at fault, e.g.
    ``scores.csv: column 'score' has non-numeric value 'abc' (line 7)``.
    """


class JaggedWarning(UserWarning):
    """Something the user should know that does not stop the computation."""
