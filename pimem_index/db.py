"""One way to open SQLite: the module Datasette and sqlite-utils pick, WAL, a busy timeout."""

from __future__ import annotations

try:  # Datasette and sqlite-utils prefer pysqlite3 when it is installed; match them.
    import pysqlite3.dbapi2 as sqlite3
except ImportError:  # pragma: no cover - platforms without the wheel
    import sqlite3  # type: ignore[no-redef]

from contextlib import contextmanager
from typing import Iterator

from .errors import UserError

MIN_SQLITE = (3, 43, 0)
BUSY_TIMEOUT_MS = 30_000
CACHE_KIB = 65_536

OperationalError = sqlite3.OperationalError
IntegrityError = sqlite3.IntegrityError
DatabaseError = sqlite3.DatabaseError
ProgrammingError = sqlite3.ProgrammingError
Connection = sqlite3.Connection


def check_sqlite_version(version: tuple[int, ...] = sqlite3.sqlite_version_info) -> None:
    """Refuse a SQLite too old for contentless_delete, naming the fix."""
    if tuple(version) < MIN_SQLITE:
        have = ".".join(str(p) for p in version)
        raise UserError(
            f"SQLite {have} is too old: pimem needs 3.43 or newer "
            "(run: pip install pysqlite3-binary)"
        )


def connect(path: str, *, readonly: bool = False) -> sqlite3.Connection:
    """Open the index in autocommit mode with WAL and a busy timeout; callers BEGIN themselves."""
    check_sqlite_version()
    if readonly:
        conn = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
    else:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    if not readonly and conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        # A new file: auto_vacuum must precede WAL. An index already in WAL mode is left alone,
        # so opening it takes no lock and never waits for a writer.
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("PRAGMA journal_mode = WAL")
    if not readonly:
        conn.execute("PRAGMA synchronous = NORMAL")  # per connection; safe in WAL mode
    return conn


@contextmanager
def write(conn: Connection) -> Iterator[Connection]:
    """A write transaction taken at once (BEGIN IMMEDIATE): committed, or rolled back on any error.

    Inside another one it joins it, so several writes can be grouped into one transaction.
    """
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
