"""Words for figures, shared by the CLI and the pages: `1 journal`, `2 journals`, `3 h 05 min`."""

from __future__ import annotations


def noun(n: int, word: str, plural: str | None = None) -> str:
    """The noun for a count of n: `journal` for 1, `journals` (or `plural`) otherwise."""
    return word if n == 1 else plural or word + "s"


def counted(n: int, word: str, plural: str | None = None) -> str:
    """`1 journal`, `2 journals`, `1,024 entries`: a count with its noun in the right number."""
    return f"{n:,} {noun(n, word, plural)}"


def duration(seconds: int | None) -> str:
    """A duration as 45 s, 12 min, 3 h 05 min or 2 d 4 h."""
    if seconds is None:
        return "-"
    seconds = max(int(seconds), 0)
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"
