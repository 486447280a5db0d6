"""One way to open SQLite: the module Datasette and sqlite-utils pick, WAL, a busy timeout."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pysqlite3 ships no types; it is the standard library's module built with a newer SQLite
    import sqlite3
else:
    try:  # Datasette and sqlite-utils prefer pysqlite3 when it is installed; match them.
        import pysqlite3.dbapi2 as sqlite3
    except ImportError:  # pragma: no cover - platforms without the wheel
        import sqlite3

from pimem_index.errors import UserError
from pimem_index.memo import IndexMemo

MIN_SQLITE = (3, 43, 0)
BUSY_TIMEOUT_MS = 30_000
CACHE_KIB = 65_536

OperationalError = sqlite3.OperationalError
IntegrityError = sqlite3.IntegrityError
DatabaseError = sqlite3.DatabaseError
ProgrammingError = sqlite3.ProgrammingError


class Connection(sqlite3.Connection):
    """A connection to an index, carrying what is kept in memory for that index (`memo.IndexMemo`)."""

    memo: IndexMemo


def describe_error(error: BaseException, path=None) -> str:
    """One line naming what went wrong with the index at `path` and the fix, by the error's kind.

    For every SQLite (and file system) error a command or an API call meets, so a read-only
    or full disk is never mistaken for a broken index: only a file that is not a SQLite
    database, or is damaged, is worth deleting or rebuilding.
    """
    where = str(path) if path is not None else "the index"
    kind = _error_kind(error)
    if kind == "cantopen" and path is not None and os.path.exists(path):
        kind = "readonly"  # the file is there: SQLite could not open it, or its -wal or -shm, for writing
    if kind == "readonly":
        return f"cannot write {where}; check its permissions and its folder's (pimem writes both)"
    if kind == "cantopen":
        return f"cannot open {where}; check that its folder exists and that you may write it"
    if kind == "full":
        return f"the disk holding {where} is full; free some space and run the command again"
    if kind == "busy":
        return f"{where} is locked by another process; try again in a moment"
    if kind == "notadb":
        return (
            f"{where} is not a pimem index (not a SQLite database); point --db elsewhere "
            "(e.g. --db ~/.pi/agent/pi-memory/history.sqlite), or delete it if pimem made it"
        )
    if kind == "corrupt":
        return (
            f"{where} is damaged ({error}); delete it and its -wal and -shm files: "
            "the next pimem index builds it again from the journals"
        )
    if kind == "io":
        return f"could not read or write {where} ({error}); check the disk"
    if isinstance(error, OSError):
        return f"cannot create the index at {where}: {error.strerror} (e.g. --db ~/.pi/agent/pi-memory/history.sqlite)"
    return f"{where} could not be used: {error} (try: pimem rebuild)"


_SQLITE_KINDS = {
    sqlite3.SQLITE_READONLY: "readonly",
    sqlite3.SQLITE_PERM: "readonly",
    sqlite3.SQLITE_CANTOPEN: "cantopen",
    sqlite3.SQLITE_AUTH: "readonly",
    sqlite3.SQLITE_FULL: "full",
    sqlite3.SQLITE_BUSY: "busy",
    sqlite3.SQLITE_LOCKED: "busy",
    sqlite3.SQLITE_NOTADB: "notadb",
    sqlite3.SQLITE_CORRUPT: "corrupt",
    sqlite3.SQLITE_IOERR: "io",
}
_OS_KINDS = {
    errno.EACCES: "readonly",
    errno.EPERM: "readonly",
    errno.EROFS: "readonly",
    errno.ENOSPC: "full",
    errno.EDQUOT: "full",
}


def _error_kind(error: BaseException) -> str | None:
    """The kind of a SQLite error (from its primary result code) or of an OSError (its errno)."""
    if isinstance(error, OSError):
        return _OS_KINDS.get(error.errno) if error.errno is not None else None
    code = getattr(error, "sqlite_errorcode", None)
    return _SQLITE_KINDS.get(code & 0xFF) if isinstance(code, int) else None


def check_sqlite_version(version: tuple[int, ...] = sqlite3.sqlite_version_info) -> None:
    """Refuse a SQLite too old for contentless_delete, naming the fix."""
    if tuple(version) < MIN_SQLITE:
        have = ".".join(str(p) for p in version)
        raise UserError(f"SQLite {have} is too old: pimem needs 3.43 or newer (run: pip install pysqlite3-binary)")


def connect(path: str, *, readonly: bool = False, memo: IndexMemo | None = None) -> Connection:
    """Open the index in autocommit mode with WAL and a busy timeout; callers BEGIN themselves.

    The connection keeps its answers in `memo` (shared with other connections to the same index),
    else in a memo of its own.
    """
    check_sqlite_version()
    if readonly:
        conn = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False, factory=Connection
        )
    else:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, factory=Connection)
    conn.memo = memo if memo is not None else IndexMemo()
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


def memo_of(conn: sqlite3.Connection) -> IndexMemo:
    """What is kept for the connection's index; a connection `connect` did not open keeps nothing."""
    memo = getattr(conn, "memo", None)
    return memo if isinstance(memo, IndexMemo) else IndexMemo()


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
