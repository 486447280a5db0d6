"""Faults the tests inject into the files pimem keeps, and waiting on a condition instead of sleeping."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path


def put_in_place_of_index(path: Path, kind: str) -> None:
    """Atomically put a text file (`kind` "text") or another SQLite database where the index is, without
    the index's -wal and -shm (SQLite would read the old pages from them)."""
    staged = path.with_name("staged")
    if kind == "text":
        staged.write_text("not a database at all\n" * 100)
    else:
        other = sqlite3.connect(staged)
        other.execute("CREATE TABLE notes (body TEXT)")
        other.commit()
        other.close()
    os.replace(staged, path)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def wait_for(condition: Callable[[], object], timeout: float = 30) -> bool:
    """Poll `condition` every 0.1 s until it holds or `timeout` seconds pass; its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return bool(condition())
