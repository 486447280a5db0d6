"""What an index holds, read back for assertions: its terms, its entries by journal, their count."""

from __future__ import annotations


def vocab(conn) -> dict[str, int]:
    """Every term in the index with the number of entries that hold it."""
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab('main', 'entries_fts', 'row')")
    return dict(conn.execute("SELECT term, doc FROM temp.vocab").fetchall())


def snapshot(conn) -> tuple[list, dict]:
    """The index's meaning, independent of row ids: entries by journal and the term counts."""
    rows = conn.execute(
        "SELECT f.path, e.id, e.kind, e.role, e.tool, e.line, e.offset, e.length, e.fingerprint, "
        "e.session_id, e.timestamp, e.chars FROM entries e JOIN files f ON f.id = e.file_id "
        "ORDER BY f.path, e.offset"
    ).fetchall()
    return rows, vocab(conn)


def entry_count(conn, path=None) -> int:
    """Entries in the index, or in one journal's rows."""
    if path is None:
        return conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    return conn.execute(
        "SELECT COUNT(*) FROM entries e JOIN files f ON f.id = e.file_id WHERE f.path = ?", (str(path),)
    ).fetchone()[0]
