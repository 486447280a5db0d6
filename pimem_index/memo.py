"""What is kept in memory for one open index: answers worth computing once, owned by the index's connections.

Every connection `db.connect` opens carries an `IndexMemo` (`conn.memo`): a fresh one, or the one its
opener passes so that several connections to the same index share it (the plugin's threads do). Nothing
about an index is kept by a module, so two indexes open in one process never see each other's answers,
and an index replaced under a server starts from an empty memo. What is kept:

- `answer(key, compute)`: small answers (a word's other forms the index holds, how many entries hold a
  word), at most ANSWERS of them, the oldest dropped first;
- `slot(name, make)`: one object per name, made on first use (the collection statistics, the reread
  texts, and whatever a later cache needs: a sessions map, a short-id table).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

# Small answers kept per index, at most: the oldest is dropped first.
ANSWERS = 4096
_MISSING = object()


class IndexMemo:
    """The answers and objects kept for one open index; safe to share between threads."""

    def __init__(self) -> None:
        self._answers: dict[tuple, object] = {}
        self._slots: dict[str, object] = {}
        self._lock = threading.Lock()

    def answer(self, key: tuple, compute: Callable[[], T]) -> T:
        """compute(), kept under `key` (at most ANSWERS answers, the oldest dropped first)."""
        found: Any = self._answers.get(key, _MISSING)
        if found is _MISSING:
            found = compute()
            with self._lock:
                while len(self._answers) >= ANSWERS:
                    self._answers.pop(next(iter(self._answers)))
                self._answers[key] = found
        return found

    def slot(self, name: str, make: Callable[[], T]) -> T:
        """The object kept under `name`, made by make() on first use."""
        found: Any = self._slots.get(name, _MISSING)
        if found is _MISSING:
            with self._lock:
                found = self._slots.get(name, _MISSING)
                if found is _MISSING:
                    found = self._slots[name] = make()
        return found

    def forget_answers(self) -> None:
        """Drop the small answers (benchmarks measure the first query of a word with it)."""
        with self._lock:
            self._answers.clear()

    def forget(self) -> None:
        """Drop everything kept (the index it was kept for is gone)."""
        with self._lock:
            self._answers.clear()
            self._slots.clear()

    def __len__(self) -> int:
        """How many answers and objects are kept."""
        return len(self._answers) + len(self._slots)
