"""Errors a user can fix: shown as one line, never a traceback.

A UserError's message names arguments neutrally and carries its examples as data (`Arg`), so
each surface shows them in its own syntax: `for_cli` (`--limit 20`, `--session 0b6e6f2c`) for
the pimem command, `for_http` (`limit=20`, `session_id=0b6e6f2c`) for the API, the pages and
Python callers (the keyword form, also `str(error)`). A plain string example (a command to
run, such as `pimem read c3d4e5f6`) reads the same everywhere.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class Arg:
    """One argument with an example value, named as the API names it (`limit`, `session_id`, `q`)."""

    name: str
    value: object


# An example: one argument, several given together, or a string shown as it is (a command).
Example = Arg | tuple[Arg, ...] | str

# The CLI's spelling of an API parameter; None: the command's positional argument.
CLI_NAMES: dict[str, str | None] = {"session_id": "--session", "q": None, "id": None, "journal": None}


class UserError(Exception):
    """A bad argument or environment; the message says what was expected, and `examples`
    (each an Example) show the right form, rendered per surface (`for_cli`, `for_http`)."""

    def __init__(self, message: str, *examples: Example):
        super().__init__(message)
        self.message = message
        self.examples = examples

    def for_cli(self) -> str:
        """The message with its examples as pimem options (`--limit 20`)."""
        return self._with(cli_example)

    def for_http(self) -> str:
        """The message with its examples as parameters (`limit=20`): the API, the pages, Python."""
        return self._with(http_example)

    def __str__(self) -> str:
        return self.for_http()

    def _with(self, render) -> str:
        if not self.examples:
            return self.message
        return f"{self.message} (e.g. {', or '.join(render(e) for e in self.examples)})"


def _args(example: Arg | tuple[Arg, ...]) -> tuple[Arg, ...]:
    return (example,) if isinstance(example, Arg) else example


def cli_example(example: Example) -> str:
    """An example as pimem's command line writes it: `--kind tool_result`, a query in quotes."""
    if isinstance(example, str):
        return example
    words = []
    for arg in _args(example):
        flag = CLI_NAMES.get(arg.name, "--" + arg.name.replace("_", "-"))
        words += [shlex.quote(str(arg.value))] if flag is None else [flag, shlex.quote(str(arg.value))]
    return " ".join(words)


def http_example(example: Example) -> str:
    """An example as a query string writes it: `kind=tool_result&limit=20`."""
    if isinstance(example, str):
        return example
    return "&".join(f"{arg.name}={quote(str(arg.value), safe='/:,.-@')}" for arg in _args(example))
