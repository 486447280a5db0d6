"""Browsing helpers for pages: a session's header, entries per day, recent sessions, projects.

Every text shown is reread from its journal line (`reread`: checked against the stored
fingerprint) and redacted; nothing here reads a file outside the journal folders.
"""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta
from typing import Any, NamedTuple

from pimem_index import db, store
from pimem_index.locations import Locations
from pimem_index.search import session_info
from pimem_index.search.reread import (
    EntryRow,
    entry_json,
    redacted_head,
    reread,
    select_entries,
    unavailable_reason,
    unavailable_text,
)
from pimem_index.search.scope import project_root

SUMMARY_CHARS = 8_000  # of a summary, on the summaries page


def _text(conn, locations: Locations, row: EntryRow, max_chars: int) -> tuple[str | None, str | None, int]:
    """(the first max_chars of the redacted text, None, characters in all) or (None, why not, 0).

    Only what is shown is redacted (with a margin), not all of a multi-megabyte output.
    """
    text = reread(conn, row, locations)
    if text is None:
        return None, unavailable_text(unavailable_reason(row, locations)), 0
    return redacted_head(text, max_chars), None, len(text)


def _shown(conn, locations: Locations, row: EntryRow, max_chars: int) -> dict:
    data = entry_json(row)
    data["rowid"] = row.rowid
    data["line"] = row.line
    text, missing, total = _text(conn, locations, row, max_chars)
    if text is None:
        data.update(text=missing, unavailable=True, total_chars=0, truncated=False)
    else:
        data.update(text=text, unavailable=False, total_chars=total, truncated=total > max_chars)
    return data


class SessionJournal(NamedTuple):
    """One journal of a session, as a session's page shows it (its files row)."""

    id: int
    path: str
    session_id: str
    name: str | None
    cwd: str | None
    started: str | None
    last_timestamp: str | None
    entry_count: int
    size: int | None
    parent_session: str | None


SESSION_JOURNAL_COLUMNS = ", ".join(SessionJournal._fields)


def session_header(conn: db.Connection, session_id: str) -> dict | None:
    """What a session's page says above its conversation: its name, folder, journals and times (its forks:
    `lineage`).

    Returns None when no indexed journal has that session id.
    """
    files = [
        SessionJournal._make(row)
        for row in conn.execute(
            f"SELECT {SESSION_JOURNAL_COLUMNS} FROM files WHERE session_id = ? ORDER BY started, id", (session_id,)
        )
    ]
    if not files:
        return None
    first = files[0]
    return {
        "session_id": session_id,
        "name": first.name,
        "cwd": first.cwd,
        "started": first.started,
        "last_timestamp": max((f.last_timestamp or "" for f in files), default="") or None,
        "journals": [f.path for f in files],
        "bytes": sum(f.size or 0 for f in files),
        "entries": sum(f.entry_count for f in files),
    }


def entry_text(conn: db.Connection, locations: Locations, rowid: int, max_chars: int = 500) -> dict | None:
    """One entry, looked up by its rowid in the entries table, with its redacted text (shortened)."""
    rows = select_entries(conn, "e.rowid = ?", (rowid,))
    return _shown(conn, locations, rows[0], max_chars) if rows else None


def entry_shown(conn: db.Connection, locations: Locations, hit: dict, max_chars: int = SUMMARY_CHARS) -> dict | None:
    """A hit's entry (by its id and session) with its redacted text, shortened: a page shows more than the excerpt."""
    rows = select_entries(conn, "e.eid = ? AND f.session_id = ? LIMIT 1", (store.id_key(hit["id"]), hit["session_id"]))
    return _shown(conn, locations, rows[0], max_chars) if rows else None


def entries_per_day(conn: db.Connection, days: int = 60, today: date | None = None) -> list[dict]:
    """Entries and sessions per UTC day over the last `days` days, oldest first, zeros included."""
    today = today or datetime.now(UTC).date()
    start = today - timedelta(days=days - 1)
    counts = {
        day: (entries, sessions)
        for day, entries, sessions in conn.execute(
            "SELECT date(e.ts / 1000, 'unixepoch') AS day, COUNT(*), COUNT(DISTINCT e.file_id) "
            "FROM entries e WHERE e.ts >= ? GROUP BY day",
            (store.epoch_ms(start.isoformat()),),
        )
    }
    out = []
    for i in range(days):
        day = (start + timedelta(days=i)).isoformat()
        entries, sessions = counts.get(day, (0, 0))
        out.append({"day": day, "entries": entries, "sessions": sessions})
    return out


def recent_sessions(conn: db.Connection, locations: Locations, limit: int = 15) -> list[dict]:
    """The most recently active sessions, each titled by its name or its first user message."""
    rows = conn.execute(
        "SELECT id, session_id, name, cwd, started, last_timestamp, entry_count, size FROM files "
        "WHERE session_id IS NOT NULL ORDER BY COALESCE(last_timestamp, started) DESC LIMIT ?",
        (limit,),
    ).fetchall()
    out = []
    for _file_id, sid, name, cwd, started, last, count, size in rows:
        out.append(
            {
                "session_id": sid,
                "title": name or session_info.first_message(conn, locations, sid),
                "name": name,
                "cwd": cwd,
                "started": started,
                "last_timestamp": last,
                "entries": count,
                "bytes": size,
            }
        )
    return out


def titled(conn: db.Connection, locations: Locations, sessions: list[Any]) -> list[Any]:
    """Sessions (dicts with `session_id` and `name`) with a `title`: the name (stored redacted), else the
    session's first user message, reread and redacted, on one line."""
    for s in sessions:
        s["title"] = s.get("name") or session_info.first_message(conn, locations, s["session_id"])
    return sessions


def projects(conn: db.Connection, limit: int = 200, home: str | None = None) -> list[dict]:
    """Projects as a search scopes them: each root (`scope.project_root` of the session folders)
    once, most recently active first, with the sub-folders it holds (`folders`, and a `note`)."""
    roots: dict[str, dict] = {}
    for cwd, sessions, last in conn.execute(
        "SELECT cwd, COUNT(*), MAX(COALESCE(last_timestamp, started)) AS last FROM files "
        "WHERE cwd IS NOT NULL GROUP BY cwd ORDER BY last DESC"
    ):
        root, _ = project_root(conn, cwd, home)
        project = roots.setdefault(root, {"cwd": root, "sessions": 0, "last_timestamp": last, "folders": []})
        project["sessions"] += sessions
        if cwd != root:
            project["folders"].append(cwd)
    found = list(roots.values())[:limit]
    for project in found:
        project["note"] = folders_note(project["cwd"], project["folders"])
    return found


def folders_note(root: str, folders: list[str], shown: int = 3) -> str:
    """`also prjct-fe, prjct-be`: a project's sub-folders with sessions, relative to its root, a few at most."""
    if not folders:
        return ""
    names = [os.path.relpath(f, root) for f in folders[:shown]]
    more = f" and {len(folders) - shown} more" if len(folders) > shown else ""
    return f"also {', '.join(names)}{more}"
