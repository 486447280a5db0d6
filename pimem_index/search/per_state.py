"""Answers kept for one state of an index: asked by every reply, computed again only once the index changed.

The short-id table and each untitled session's first message are the same for every reply until something
is indexed, forgotten or rebuilt. They are kept in the open index's memo (`conn.memo`, shared by the
connections to that index; a replaced index has a new one) and dropped as soon as any of those connections
sees the index changed: SQLite's `PRAGMA data_version` moves when another connection (or process) commits, the
connection's `total_changes` when it writes itself. A connection without a memo keeps nothing.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from pimem_index import db

T = TypeVar("T")

# Answers kept at most for one state; past it they are all dropped (a reply asks a few dozen).
ANSWERS = 20_000
_MISSING = object()


class PerState:
    """The answers for the index as it is now, and what each connection last saw of it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[int, tuple[weakref.ref, tuple[int, int]]] = {}
        self._generation = 0
        self._answers: dict[Hashable, Any] = {}

    def generation(self, conn: db.Connection) -> int:
        """This state's number: a new one (and no answers) when `conn` sees the index changed since it last looked."""
        now = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
        with self._lock:
            seen = self._seen.get(id(conn))
            if seen is None or seen[0]() is not conn or seen[1] != now:
                self._seen[id(conn)] = (weakref.ref(conn), now)
                self._generation += 1
                self._answers.clear()
            return self._generation

    def answer(self, conn: db.Connection, key: Hashable, compute: Callable[[], T]) -> T:
        """compute()'s answer for `key`, kept while the index stays as it is."""
        generation = self.generation(conn)
        found = self._answers.get(key, _MISSING)
        if found is not _MISSING:
            return found
        value = compute()
        with self._lock:
            if generation == self._generation:  # not changed meanwhile
                if len(self._answers) >= ANSWERS:
                    self._answers.clear()
                self._answers[key] = value
        return value


def kept(conn: db.Connection, key: Hashable, compute: Callable[[], T]) -> T:
    """compute(), kept for the index's present state in its memo; computed every time without one."""
    memo = getattr(conn, "memo", None)
    if memo is None:
        return compute()
    try:
        weakref.ref(conn)
    except TypeError:  # a connection db.connect did not open
        return compute()
    return memo.slot("per_state", PerState).answer(conn, key, compute)
