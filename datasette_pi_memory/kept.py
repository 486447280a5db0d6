"""Answers kept for a few seconds: what a token and an actor's permission resolve to, asked on every request.

Each PiMemory (one per Datasette instance) owns its own; an answer is used only until it expires or until what
it was decided from changes (the caller puts that in the key: the secret file's identity for a token).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

# How long an answer is used, at most: a permission changed in the configuration's plugins, a folder's mode
# changed, are seen within this.
SECONDS = 5.0
# Answers kept at most (distinct tokens and actors of the last few seconds); the oldest goes first.
ANSWERS = 256
_MISSING = object()


class Recent:
    """Answers by key, each until its own deadline (monotonic), at most `size` of them."""

    def __init__(self, size: int = ANSWERS) -> None:
        self._answers: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The answer kept under `key`, or `default` when there is none or it expired."""
        with self._lock:
            found = self._answers.get(key)
            if found is None:
                return default
            if time.monotonic() >= found[0]:
                del self._answers[key]
                return default
            return found[1]

    def put(self, key: Hashable, value: Any, seconds: float = SECONDS) -> None:
        """Keep `value` under `key` for `seconds` (nothing when that is not positive)."""
        if seconds <= 0:
            return
        with self._lock:
            self._answers[key] = (time.monotonic() + seconds, value)
            self._answers.move_to_end(key)
            while len(self._answers) > self._size:
                self._answers.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._answers.clear()

    def __len__(self) -> int:
        return len(self._answers)
