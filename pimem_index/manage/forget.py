"""Forgetting and unforgetting: the operations behind `pimem forget`, `pimem unforget` and `--list`.

Each decision is appended to the decisions file (`forgotten`, which holds the forgotten set
the indexer and the parsing processes honour) and applied to the index at once: a forgotten
entry's rows and terms go; a forgotten session's journals are buried (`forgotten.bury_sessions`);
unforgetting reindexes what it touched. This module sits above indexing and rereading.
"""

from __future__ import annotations

import os

import orjson

from pimem_index import db, journal, store
from pimem_index.errors import UserError
from pimem_index.index import forgotten, indexer
from pimem_index.index.forgotten import load, text_fingerprint
from pimem_index.locations import Locations, discover
from pimem_index.search import session_ids
from pimem_index.search.reread import EntryRow, reread, select_entries


def _append(locations: Locations, record: dict) -> None:
    folder = locations.ensure_memory_dir()
    path = forgotten.path_for(folder)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, orjson.dumps(record) + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(path, 0o600)


def _named(conn: db.Connection, session_id: str | None) -> str | None:
    """The full id of the session named by a short id or a unique prefix (`session_ids.resolve`); a name
    that fits several sessions is a UserError, and one the index does not hold is left as given."""
    if not session_id:
        return session_id
    try:
        return session_ids.resolve(conn, session_id)
    except session_ids.AmbiguousSession:
        raise
    except UserError:
        return session_id


def _named_in(records: list[dict], session_id: str | None) -> str | None:
    """A forgotten session named by its full id, its short id or a unique prefix among the decisions' sessions."""
    if not session_id:
        return session_id
    ids = session_ids.Ids(r["session_id"] for r in records if r.get("session_id"))
    if session_id in ids.ids:
        return session_id
    found = ids.named_by(session_id) if len(session_id) >= session_ids.MIN_PREFIX else []
    return found[0] if len(found) == 1 else session_id


def _find_entry(conn: db.Connection, entry_id: str, session_id: str | None) -> EntryRow:
    """The one entry with this id (in this session), or a UserError saying how to name it."""
    rows = (
        select_entries(conn, "e.eid = ? AND f.session_id = ?", (store.id_key(entry_id), session_id))
        if session_id
        else select_entries(conn, "e.eid = ?", (store.id_key(entry_id),))
    )
    if not rows:
        where = f" in session {session_id}" if session_id else ""
        raise UserError(f"no entry {entry_id}{where} in the index (find ids with: pimem search QUERY --scope global)")
    if len(rows) > 1:
        sessions = ", ".join(sorted({r.session_id or "?" for r in rows}))
        raise UserError(
            f"{entry_id} names entries in several sessions ({sessions}); "
            f"choose one, e.g. pimem forget {entry_id} --session {rows[0].session_id}"
        )
    return rows[0]


def forget_entry(conn: db.Connection, locations: Locations, entry_id: str, session_id: str | None = None) -> dict:
    """Record and apply forgetting one entry."""
    session_id = _named(conn, session_id)
    try:
        row = _find_entry(conn, entry_id, session_id)
    except UserError:
        _refuse_forgotten_entry(locations, entry_id, session_id)
        raise
    text = reread(conn, row, locations)  # the one place that rereads and checks a line
    record: dict[str, object] = {
        "action": "forget",
        "session_id": row.session_id,
        "entry_id": entry_id,
        "at": journal.now_iso(),
    }
    if text is not None:
        record["text_fingerprint"] = text_fingerprint(
            journal.Entry(id=entry_id, parent_id=None, timestamp=None, kind=row.kind, role=None, tool=None, text=text)
        )
    _append(locations, record)
    _delete_rows(conn, "SELECT rowid FROM entries WHERE rowid = ?", [row.rowid], row.file_id)
    return record


def _refuse_forgotten_entry(locations: Locations, entry_id: str, session_id: str | None) -> None:
    """An entry not in the index because it is already forgotten says so, and how to undo it."""
    sessions = sorted(s for s, e in load(locations.memory_dir).entries if e == entry_id and session_id in (None, s))
    if sessions:
        raise UserError(
            f"entry {entry_id} in session {sessions[0]} is already forgotten "
            f"(undo: pimem unforget {entry_id} --session {sessions[0]})"
        )


def forget_session(conn: db.Connection, locations: Locations, session_id: str) -> dict:
    """Record and apply forgetting a whole session: its journals leave `files` for `forgotten_journals`."""
    session_id = _named(conn, session_id) or session_id
    files = conn.execute("SELECT id FROM files WHERE session_id = ?", (session_id,)).fetchall()
    if not files:
        if conn.execute(
            "SELECT 1 FROM forgotten_journals WHERE session_key = ?", (store.forgotten_key(session_id),)
        ).fetchone():
            raise UserError(f"session {session_id} is already forgotten (undo: pimem unforget --session {session_id})")
        raise UserError(f"no session {session_id} in the index (list sessions with: pimem sessions)")
    record = {"action": "forget", "session_id": session_id, "entry_id": None, "at": journal.now_iso()}
    _append(locations, record)
    with db.write(conn):
        forgotten.bury_sessions(conn, [session_id])
    return record


def _delete_rows(conn: db.Connection, select: str, params: list, file_id: int) -> None:
    with db.write(conn):
        rowids = [r[0] for r in conn.execute(select, params)]
        store.delete_entries(conn, rowids)
        conn.execute("UPDATE files SET entry_count = MAX(0, entry_count - ?) WHERE id = ?", (len(rowids), file_id))


def unforget(conn: db.Connection, locations: Locations, entry_id: str | None, session_id: str | None) -> dict:
    """Undo one forget and reindex the journals it touched, so the entries return."""
    state = load(locations.memory_dir)
    session_id = _named_in(state.records, session_id)
    matches = [
        r
        for r in state.records
        if (entry_id is None and r.get("entry_id") is None and r.get("session_id") == session_id)
        or (
            entry_id is not None
            and r.get("entry_id") == entry_id
            and (session_id is None or r.get("session_id") == session_id)
        )
    ]
    if not matches:
        what = f"entry {entry_id}" if entry_id else f"session {session_id}"
        raise UserError(f"{what} is not forgotten (see: pimem forget --list)")
    if len(matches) > 1:
        raise UserError(
            f"{entry_id} is forgotten in several sessions; choose one, "
            f"e.g. pimem unforget {entry_id} --session {matches[0]['session_id']}"
        )
    rec = matches[0]
    record = {
        "action": "unforget",
        "session_id": rec["session_id"],
        "entry_id": rec.get("entry_id"),
        "at": journal.now_iso(),
    }
    _append(locations, record)
    if rec.get("entry_id") is None:
        paths = _unbury_session(conn, locations, rec["session_id"])
    else:
        with db.write(conn):
            conn.execute("UPDATE files SET needs_reindex = 1 WHERE session_id = ?", (rec["session_id"],))
            paths = [r[0] for r in conn.execute("SELECT path FROM files WHERE session_id = ?", (rec["session_id"],))]
    for path in paths:
        indexer.index_journal(conn, path, forgotten=load(locations.memory_dir))
    return record


def _unbury_session(conn: db.Connection, locations: Locations, session_id: str) -> list[str]:
    """Drop a session's forgotten_journals rows; returns its journals (found by hashing the
    discovered paths) for indexing again."""
    key = store.forgotten_key(session_id)
    with db.write(conn):
        keys = {r[0] for r in conn.execute("SELECT path_key FROM forgotten_journals WHERE session_key = ?", (key,))}
        conn.execute("DELETE FROM forgotten_journals WHERE session_key = ?", (key,))
    return [str(p) for p in discover(locations) if store.forgotten_key(str(p)) in keys]


def listing(locations: Locations) -> list[dict]:
    """What is forgotten now, oldest decision first."""
    return sorted(load(locations.memory_dir).records, key=lambda r: r.get("at", ""))
