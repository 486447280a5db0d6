"""Errors a user can fix: shown as one line, never a traceback."""


class UserError(Exception):
    """A bad argument or environment; the message says what was expected, with an example."""
