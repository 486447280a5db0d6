"""Forgetting: entries and sessions kept out of every result, decided outside the disposable index.

Decisions live in an append-only file, `<agent folder>/pi-memory/forgotten.jsonl`, so a
rebuilt or deleted index honours them. An entry is matched by its id and, because Pi's
migration gives old entries new ids, also by a fingerprint of its text within its session.

A forgotten session's journals have no row in `files` (nor entries, nor terms): the index
knows them only in `forgotten_journals`, by hashes of their path and session id and by the
identity of the file (inode, first line), so a pass skips them without reading them and no
page, table or view can show their name, folder or path.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import orjson

from . import db, journal, store
from .errors import UserError
from .locations import Locations, agent_dir

FILE_NAME = "forgotten.jsonl"


@dataclass
class Forgotten:
    """The forgotten sessions and entries now in force (forgets minus later unforgets)."""

    sessions: set[str] = field(default_factory=set)
    entries: set[tuple[str, str]] = field(default_factory=set)
    texts: set[tuple[str, int]] = field(default_factory=set)
    records: list[dict] = field(default_factory=list)
    entry_sessions: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.sessions or self.entries or self.texts)

    @functools.cached_property
    def session_keys(self) -> frozenset[str]:
        """The forgotten sessions as the index keeps them (`store.forgotten_key`)."""
        return frozenset(store.forgotten_key(s) for s in self.sessions if s)

    def touches(self, session_id: str | None) -> bool:
        """Whether anything in this session may be forgotten (a cheap test before hashing text)."""
        return bool(session_id) and (session_id in self.sessions or session_id in self.entry_sessions)

    def hides(self, session_id: str | None, entry: journal.Entry) -> bool:
        if not self.touches(session_id):
            return False
        if session_id in self.sessions or (session_id, entry.id) in self.entries:
            return True
        return (session_id, text_fingerprint(entry)) in self.texts


def text_fingerprint(entry: journal.Entry) -> int:
    """Identifies an entry's content across Pi's id-changing migration."""
    return journal.fingerprint(f"{entry.kind}\0{entry.text}".encode("utf-8", "surrogatepass"))


_cache: dict[str, tuple[tuple[int, int], Forgotten]] = {}


def path_for(memory_dir: Path) -> Path:
    return Path(memory_dir) / FILE_NAME


def load(memory_dir: Path | None = None) -> Forgotten:
    """Replay the decisions file (cached until it changes)."""
    path = path_for(memory_dir if memory_dir is not None else agent_dir() / "pi-memory")
    try:
        st = path.stat()
    except OSError:
        return Forgotten()
    key = (st.st_size, st.st_mtime_ns)
    cached = _cache.get(str(path))
    if cached and cached[0] == key:
        return cached[1]
    state = Forgotten()
    active: dict[tuple, dict] = {}
    with open(path, "rb") as fh:
        for raw in fh:
            try:
                rec = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            k = _key(rec)
            if rec.get("action") == "forget":
                active[k] = rec
            elif rec.get("action") == "unforget":
                active.pop(k, None)
    for rec in active.values():
        sid = rec.get("session_id")
        if rec.get("entry_id") is None:
            state.sessions.add(sid)
        else:
            state.entries.add((sid, rec["entry_id"]))
            if rec.get("text_fingerprint") is not None:
                state.texts.add((sid, rec["text_fingerprint"]))
    state.records = list(active.values())
    state.entry_sessions = {s for s, _ in state.entries}
    _cache[str(path)] = (key, state)
    return state


def _key(rec: dict) -> tuple:
    return (rec.get("session_id"), rec.get("entry_id"))


def _append(locations: Locations, record: dict) -> None:
    folder = locations.ensure_memory_dir()
    path = path_for(folder)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, orjson.dumps(record) + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(path, 0o600)


def _now() -> str:
    return journal.iso_utc(datetime.now(timezone.utc))


def _find_entry(conn: db.Connection, entry_id: str, session_id: str | None):
    sql = ("SELECT e.rowid, e.id, e.session_id, e.timestamp, e.kind, e.role, e.tool, f.cwd, f.path, "
           "e.offset, e.length, e.fingerprint, e.line, e.file_id FROM entries e "
           "JOIN files f ON f.id = e.file_id WHERE e.id = ?")
    params: list = [entry_id]
    if session_id:
        sql += " AND e.session_id = ?"
        params.append(session_id)
    rows = conn.execute(sql, params).fetchall()
    if not rows:
        where = f" in session {session_id}" if session_id else ""
        raise UserError(f"no entry {entry_id}{where} in the index (find ids with: pimem search QUERY --scope global)")
    if len(rows) > 1:
        sessions = ", ".join(sorted({r[2] or "?" for r in rows}))
        raise UserError(f"{entry_id} names entries in several sessions ({sessions}); "
                        f"choose one, e.g. pimem forget {entry_id} --session {rows[0][2]}")
    return rows[0]


def forget_entry(conn: db.Connection, locations: Locations, entry_id: str,
                 session_id: str | None = None) -> dict:
    """Record and apply forgetting one entry."""
    row = _find_entry(conn, entry_id, session_id)
    from .query import reread  # the one place that rereads and checks a line

    text = reread(conn, row, locations)
    record = {"action": "forget", "session_id": row[2], "entry_id": entry_id, "at": _now()}
    if text is not None:
        record["text_fingerprint"] = text_fingerprint(
            journal.Entry(id=entry_id, parent_id=None, timestamp=None, kind=row[4], role=None,
                          tool=None, text=text))
    _append(locations, record)
    _delete_rows(conn, "SELECT rowid FROM entries WHERE rowid = ?", [row[0]], row[13])
    return record


def forget_session(conn: db.Connection, locations: Locations, session_id: str) -> dict:
    """Record and apply forgetting a whole session: its journals leave `files` for `forgotten_journals`."""
    files = conn.execute("SELECT id FROM files WHERE session_id = ?", (session_id,)).fetchall()
    if not files:
        if conn.execute("SELECT 1 FROM forgotten_journals WHERE session_key = ?",
                        (store.forgotten_key(session_id),)).fetchone():
            raise UserError(f"session {session_id} is already forgotten (undo: pimem unforget --session {session_id})")
        raise UserError(f"no session {session_id} in the index (list sessions with: pimem search --scope global)")
    record = {"action": "forget", "session_id": session_id, "entry_id": None, "at": _now()}
    _append(locations, record)
    with db.write(conn):
        _bury_sessions(conn, [session_id])
    return record


_BURY_COLUMNS = "path, session_id, inode, head_length, head_fingerprint"


def _bury_sessions(conn: db.Connection, session_ids: list[str]) -> int:
    """Turn these sessions' files rows into forgotten_journals rows; the caller owns the transaction."""
    marks = ",".join("?" * len(session_ids))
    rows = conn.execute(f"SELECT {_BURY_COLUMNS} FROM files WHERE session_id IN ({marks})",
                        session_ids).fetchall()
    for path, session_id, inode, head_length, head_fp in rows:
        bury_journal(conn, path, store.forgotten_key(session_id), inode, head_length, head_fp)
    return len(rows)


def bury_journal(conn: db.Connection, path: str, session_key: str, inode: int | None,
                 head_length: int | None, head_fp: int | None) -> None:
    """Remove a forgotten session's journal's files row, entries and terms, and remember the
    file only by hashes and identity in forgotten_journals. The caller owns the transaction."""
    row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
    if row is not None:
        store.delete_file_rows(conn, row[0])
        conn.execute("DELETE FROM files WHERE id = ?", (row[0],))
    if head_length is None:
        return  # no first line seen yet: the next pass reads it and records the journal then
    conn.execute(
        "INSERT OR REPLACE INTO forgotten_journals (path_key, session_key, inode, head_length, "
        "head_fingerprint) VALUES (?, ?, ?, ?, ?)",
        (store.forgotten_key(path), session_key, inode, head_length, head_fp),
    )


def settle(conn: db.Connection, forgotten: Forgotten) -> int:
    """Bury the files rows of sessions forgotten since they were indexed (a decision taken
    through another index, say), so the index never holds a forgotten session's row."""
    sessions = sorted(s for s in forgotten.sessions if s)
    if not sessions:
        return 0
    marks = ",".join("?" * len(sessions))
    if conn.execute(f"SELECT 1 FROM files WHERE session_id IN ({marks}) LIMIT 1", sessions).fetchone() is None:
        return 0  # nothing to do: no write transaction
    with db.write(conn):
        return _bury_sessions(conn, sessions)


def journal_rows(conn: db.Connection) -> dict[str, tuple]:
    """Every forgotten journal the index knows: path key -> (session key, inode, head length,
    head fingerprint), for a pass to skip them (`reading.prepare`)."""
    return {r[0]: tuple(r[1:]) for r in conn.execute(
        "SELECT path_key, session_key, inode, head_length, head_fingerprint FROM forgotten_journals")}


def journal_row(conn: db.Connection, path: str) -> tuple | None:
    """`journal_rows` for one journal."""
    row = conn.execute(
        "SELECT session_key, inode, head_length, head_fingerprint FROM forgotten_journals WHERE path_key = ?",
        (store.forgotten_key(path),)).fetchone()
    return tuple(row) if row else None


def unchanged(gone: dict[str, tuple], path: str, st: os.stat_result) -> bool:
    """Whether a journal is a forgotten one still in place (`journal_rows`), so no pass has
    work there: lines appended to it are never read; a new file at its path is looked at."""
    if not gone:
        return False
    row = gone.get(store.forgotten_key(path))
    return row is not None and row[1] == st.st_ino


def _delete_rows(conn: db.Connection, select: str, params: list, file_id: int) -> None:
    with db.write(conn):
        rowids = [r[0] for r in conn.execute(select, params)]
        conn.executemany("DELETE FROM entries_fts WHERE rowid = ?", [(r,) for r in rowids])
        conn.executemany("DELETE FROM entries WHERE rowid = ?", [(r,) for r in rowids])
        conn.execute("UPDATE files SET entry_count = MAX(0, entry_count - ?) WHERE id = ?",
                     (len(rowids), file_id))


def unforget(conn: db.Connection, locations: Locations, entry_id: str | None,
             session_id: str | None) -> dict:
    """Undo one forget and reindex the journals it touched, so the entries return."""
    state = load(locations.memory_dir)
    matches = [r for r in state.records
               if (entry_id is None and r.get("entry_id") is None and r.get("session_id") == session_id)
               or (entry_id is not None and r.get("entry_id") == entry_id
                   and (session_id is None or r.get("session_id") == session_id))]
    if not matches:
        what = f"entry {entry_id}" if entry_id else f"session {session_id}"
        raise UserError(f"{what} is not forgotten (see: pimem forget --list)")
    if len(matches) > 1:
        raise UserError(f"{entry_id} is forgotten in several sessions; choose one, "
                        f"e.g. pimem unforget {entry_id} --session {matches[0]['session_id']}")
    rec = matches[0]
    record = {"action": "unforget", "session_id": rec["session_id"], "entry_id": rec.get("entry_id"),
              "at": _now()}
    _append(locations, record)
    if rec.get("entry_id") is None:
        paths = _unbury_session(conn, locations, rec["session_id"])
    else:
        with db.write(conn):
            conn.execute("UPDATE files SET needs_reindex = 1 WHERE session_id = ?", (rec["session_id"],))
            paths = [r[0] for r in conn.execute("SELECT path FROM files WHERE session_id = ?",
                                                (rec["session_id"],))]
    from .indexer import index_journal

    for path in paths:
        index_journal(conn, path, forgotten=load(locations.memory_dir))
    return record


def _unbury_session(conn: db.Connection, locations: Locations, session_id: str) -> list[str]:
    """Drop a session's forgotten_journals rows; returns its journals (found by hashing the
    discovered paths) for indexing again."""
    from .indexer import discover

    key = store.forgotten_key(session_id)
    with db.write(conn):
        keys = {r[0] for r in conn.execute("SELECT path_key FROM forgotten_journals WHERE session_key = ?", (key,))}
        conn.execute("DELETE FROM forgotten_journals WHERE session_key = ?", (key,))
    return [str(p) for p in discover(locations) if store.forgotten_key(str(p)) in keys]


def listing(locations: Locations) -> list[dict]:
    """What is forgotten now, oldest decision first."""
    return sorted(load(locations.memory_dir).records, key=lambda r: r.get("at", ""))

