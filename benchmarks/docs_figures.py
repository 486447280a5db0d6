"""Write a benchmark's latest figures into docs/performance.md, between a pair of markers."""

from __future__ import annotations

from pathlib import Path

PERFORMANCE = Path(__file__).resolve().parent.parent / "docs" / "performance.md"


def replace_between(start: str, end: str, text: str, path: Path = PERFORMANCE) -> bool:
    """Put `text` between the markers `start` and `end` of the page; False when they are not there."""
    page = path.read_text() if path.exists() else ""
    i, j = page.find(start), page.find(end)
    if i < 0 or j < i:
        return False
    path.write_text(page[: i + len(start)] + "\n\n" + text.rstrip("\n") + "\n\n" + page[j:])
    return True
