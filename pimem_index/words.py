"""Words for figures, shared by the CLI and the pages: `1 journal`, `2 journals`."""

from __future__ import annotations


def noun(n: int, word: str, plural: str | None = None) -> str:
    """The noun for a count of n: `journal` for 1, `journals` (or `plural`) otherwise."""
    return word if n == 1 else plural or word + "s"


def counted(n: int, word: str, plural: str | None = None) -> str:
    """`1 journal`, `2 journals`, `1,024 entries`: a count with its noun in the right number."""
    return f"{n:,} {noun(n, word, plural)}"
