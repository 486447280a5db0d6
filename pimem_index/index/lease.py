"""The backfill lease and progress, kept in the index's meta table.

One process at a time backfills every journal: it takes the lease (`take_lease`), renews it
as it goes and gives it back (`release_lease`); a holder that died on this host loses it at
once, any other when it expires. The holder publishes how far it has come (`record_backfill`),
which the replies' `indexing` block reads (`store.backfill_progress`).
"""

from __future__ import annotations

import os
import socket
import time

import orjson

from pimem_index import db, journal, store

LEASE_KEY = "backfill_lease"
LEASE_SECONDS = 120


def default_owner() -> str:
    """A lease owner name that is unique per process: host:pid."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _holder_gone(holder: str) -> bool:
    """Whether a lease holder was a process on this host that no longer runs (killed, say),
    so running the command again goes on at once instead of waiting for the lease to expire."""
    host, _, pid = holder.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # it runs, as another user
        return False
    return False


def take_lease(conn: db.Connection, owner: str, seconds: int = LEASE_SECONDS) -> str | None:
    """Take or renew the backfill lease; returns None when we hold it, else the current holder."""
    now = time.time()
    with db.write(conn):
        value = store.get_meta(conn, LEASE_KEY)
        if value:
            holder, _, expiry = value.rpartition("@")
            try:
                expired = float(expiry) < now
            except ValueError:
                expired = True
            if holder != owner and not expired and not _holder_gone(holder):
                return holder
        store.set_meta(conn, LEASE_KEY, f"{owner}@{now + seconds:.3f}")
        return None


def release_lease(conn: db.Connection, owner: str) -> None:
    """Give the lease back if we hold it."""
    with db.write(conn):
        value = store.get_meta(conn, LEASE_KEY)
        if value and value.rpartition("@")[0] == owner:
            conn.execute("DELETE FROM meta WHERE key = ?", (LEASE_KEY,))


def record_backfill(conn: db.Connection, total: int, done: int, complete: bool) -> None:
    """Publish backfill progress for the replies' `indexing` block (unchanged: nothing written)."""
    old = store.backfill_progress(conn)
    if old and (old.get("journals_total"), old.get("journals_done"), old.get("complete")) == (total, done, complete):
        return
    with db.write(conn):
        store.set_meta(
            conn,
            store.BACKFILL_KEY,
            orjson.dumps(
                {
                    "journals_total": total,
                    "journals_done": done,
                    "complete": complete,
                    "at": journal.now_iso(),
                }
            ).decode(),
        )
