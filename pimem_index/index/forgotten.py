"""The forgotten set: entries and sessions kept out of every result, and how the index keeps them.

A leaf the indexer and the parsing processes import; the forget and unforget operations are
in `forget`, above indexing and rereading. Decisions live in an append-only file,
`<agent folder>/pi-memory/forgotten.jsonl`, so a rebuilt or deleted index honours them. An
entry is matched by its id and, because Pi's migration gives old entries new ids, also by a
fingerprint of its text within its session.

A forgotten session's journals have no row in `files` (nor entries, nor terms): the index
knows them only in `forgotten_journals`, by hashes of their path and session id and by the
identity of the file (inode, first line), so a pass skips them without reading them and no
page, table or view can show their name, folder or path.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import orjson

from pimem_index import db, journal, store
from pimem_index.locations import agent_dir

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
    cached_key, cached = _cache.get(str(path), (None, None))
    if cached is not None and cached_key == key:
        return cached
    state = Forgotten()
    active: dict[tuple, dict] = {}
    with open(path, "rb") as fh:
        for raw in fh:
            try:
                rec = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if not _decision(rec):
                continue  # a line edited by hand into something else: never a reason to stop a pass
            k = _key(rec)
            if rec.get("action") == "forget":
                active[k] = rec
            elif rec.get("action") == "unforget":
                active.pop(k, None)
    for rec in active.values():
        sid = rec["session_id"]  # a str: `_decision` checked it
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


def _decision(rec) -> bool:
    """Whether a decisions-file line is a forget or unforget record pimem could have written."""
    return (
        isinstance(rec, dict)
        and rec.get("action") in ("forget", "unforget")
        and isinstance(rec.get("session_id"), str)
        and isinstance(rec.get("entry_id"), (str, type(None)))
        and isinstance(rec.get("text_fingerprint"), (int, type(None)))
    )


def _key(rec: dict) -> tuple:
    return (rec.get("session_id"), rec.get("entry_id"))


_BURY_COLUMNS = "path, session_id, inode, head_length, head_fingerprint"


def bury_sessions(conn: db.Connection, session_ids: list[str]) -> int:
    """Turn these sessions' files rows into forgotten_journals rows; the caller owns the transaction."""
    marks = ",".join("?" * len(session_ids))
    rows = conn.execute(f"SELECT {_BURY_COLUMNS} FROM files WHERE session_id IN ({marks})", session_ids).fetchall()
    for path, session_id, inode, head_length, head_fp in rows:
        bury_journal(conn, path, store.forgotten_key(session_id), inode, head_length, head_fp)
    return len(rows)


def bury_journal(
    conn: db.Connection, path: str, session_key: str, inode: int | None, head_length: int | None, head_fp: int | None
) -> None:
    """Remove a forgotten session's journal's files row, entries and terms, and remember the
    file only by hashes and identity in forgotten_journals. The caller owns the transaction."""
    store.delete_journal(conn, path)
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
        return bury_sessions(conn, sessions)


class ForgottenJournal(NamedTuple):
    """A forgotten session's journal as the index remembers it (its forgotten_journals row, without
    its path key): enough to know the file again without keeping its path or session id."""

    session_key: str
    inode: int | None
    head_length: int
    head_fingerprint: int


FORGOTTEN_JOURNAL_COLUMNS = ", ".join(ForgottenJournal._fields)


def journal_rows(conn: db.Connection) -> dict[str, ForgottenJournal]:
    """Every forgotten journal the index knows, by its path key, for a pass to skip them (`parsing.prepare`)."""
    return {
        path_key: ForgottenJournal(*values)
        for path_key, *values in conn.execute(f"SELECT path_key, {FORGOTTEN_JOURNAL_COLUMNS} FROM forgotten_journals")
    }


def journal_row(conn: db.Connection, path: str) -> ForgottenJournal | None:
    """`journal_rows` for one journal."""
    row = conn.execute(
        f"SELECT {FORGOTTEN_JOURNAL_COLUMNS} FROM forgotten_journals WHERE path_key = ?", (store.forgotten_key(path),)
    ).fetchone()
    return ForgottenJournal._make(row) if row else None


def unchanged(gone: dict[str, ForgottenJournal], path: str, st: os.stat_result) -> bool:
    """Whether a journal is a forgotten one still in place (`journal_rows`), so no pass has
    work there: lines appended to it are never read; a new file at its path is looked at."""
    if not gone:
        return False
    row = gone.get(store.forgotten_key(path))
    return row is not None and row.inode == st.st_ino
