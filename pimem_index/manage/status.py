"""`pimem status` and `api/status`: what the index holds and how much is left to index."""

from __future__ import annotations

from pathlib import Path

from pimem_index import db, store
from pimem_index.index import forgotten, indexer
from pimem_index.locations import Locations, find_journals
from pimem_index.manage.folders import listing
from pimem_index.replies import StatusReply


def status(conn: db.Connection, locations: Locations) -> StatusReply:
    """The contract's status figures: what the index holds and how much is left to index."""
    sessions, entries, indexed = conn.execute(
        "SELECT (SELECT COUNT(*) FROM files WHERE session_id IS NOT NULL), "
        "(SELECT COUNT(*) FROM entries), (SELECT COALESCE(SUM(cursor), 0) FROM files)"
    ).fetchone()
    summaries_count = conn.execute(
        "SELECT COUNT(*) FROM entries WHERE kind IN ('compaction', 'branch_summary')"
    ).fetchone()[0]
    # (size, mtime, queued for reindexing) of each indexed journal: one that differs has work left
    known = {
        path: (size, mtime, bool(needs_reindex))
        for path, size, mtime, needs_reindex in conn.execute("SELECT path, size, mtime, needs_reindex FROM files")
    }
    gone = forgotten.journal_rows(conn)
    journals, outside = find_journals(locations)
    pending = 0
    for path in journals:
        try:
            st = path.stat()
        except OSError:
            continue
        if str(path) not in known and forgotten.unchanged(gone, str(path), st):
            continue
        if known.get(str(path)) != (st.st_size, st.st_mtime, False):
            pending += 1
    db_path = Path(locations.db_path)
    db_bytes = sum(p.stat().st_size for p in (db_path, Path(f"{db_path}-wal")) if p.exists())
    return {
        "sessions": sessions,
        "entries": entries,
        "summaries": summaries_count,
        "indexed_bytes": indexed,
        "journals_total": len(journals),
        "journals_pending": pending,
        "db_bytes": db_bytes,
        "schema_version": store.SCHEMA_VERSION,
        "db": str(db_path),
        "sessions_dirs": [str(d) for d in locations.sessions_dirs],
        "folders": listing(locations),
        "journals_outside": outside,
        "journals_failed": indexer.failed_journals(conn),
    }
