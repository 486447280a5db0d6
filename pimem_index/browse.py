"""Browsing helpers for pages: a session's entries in order, activity per day, recent sessions.

Every text shown is reread from its journal line (`reread`: checked against the stored
fingerprint) and redacted; nothing here reads a file outside the journal folders.
"""

from __future__ import annotations

import os
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from . import db
from .locations import Locations
from .reread import ENTRY_COLUMNS, UNAVAILABLE, entry_json, redacted_head, reread

SESSION_PAGE = 200
TITLE_CHARS = 120
OUTSIDE = "[journal outside the journal folders: not read]"


def journal_cwd(conn: db.Connection, path: str) -> str | None:
    """The project folder recorded in an indexed journal's header."""
    row = conn.execute("SELECT cwd FROM files WHERE path = ?", (os.path.abspath(path),)).fetchone()
    return row[0] if row else None


def _text(conn, locations: Locations, row, max_chars: int) -> tuple[str | None, str | None, int]:
    """(the first max_chars of the redacted text, None, characters in all) or (None, why not, 0).

    Only what is shown is redacted (with a margin), not all of a multi-megabyte output.
    """
    if not locations.contains(Path(row[8])):
        return None, OUTSIDE, 0
    text = reread(conn, row, locations)
    if text is None:
        return None, UNAVAILABLE, 0
    return redacted_head(text, max_chars), None, len(text)


def _shown(conn, locations: Locations, row, max_chars: int) -> dict:
    data = entry_json(row)
    data["rowid"] = row[0]
    data["line"] = row[12]
    text, missing, total = _text(conn, locations, row, max_chars)
    if text is None:
        data.update(text=missing, unavailable=True, total_chars=0, truncated=False)
    else:
        data.update(text=text, unavailable=False, total_chars=total, truncated=total > max_chars)
    return data


def session(conn: db.Connection, locations: Locations, session_id: str, *, offset: int = 0,
            limit: int = SESSION_PAGE, max_chars: int = 20_000) -> dict | None:
    """A session's header and a page of its entries in journal order, each reread and redacted.

    Returns None when no indexed journal has that session id.
    """
    files = conn.execute(
        "SELECT id, path, session_id, name, cwd, started, last_timestamp, entry_count, size, parent_session "
        "FROM files WHERE session_id = ? ORDER BY started, id",
        (session_id,),
    ).fetchall()
    if not files:
        return None
    total = sum(f[7] for f in files)
    rows = conn.execute(
        f"SELECT {ENTRY_COLUMNS} FROM entries e JOIN files f ON f.id = e.file_id "
        "WHERE f.session_id = ? ORDER BY f.started, f.id, e.line LIMIT ? OFFSET ?",
        (session_id, limit, offset),
    ).fetchall()
    first = files[0]
    children = conn.execute(
        "SELECT session_id, name, started FROM files WHERE parent_session = ? ORDER BY started",
        (session_id,),
    ).fetchall()
    return {
        "session_id": session_id,
        "name": first[3],
        "cwd": first[4],
        "started": first[5],
        "last_timestamp": max((f[6] or "" for f in files), default="") or None,
        "journals": [f[1] for f in files],
        "bytes": sum(f[8] or 0 for f in files),
        "parent_session": first[9],
        "children": [{"session_id": c[0], "name": c[1], "started": c[2]} for c in children],
        "total": total,
        "offset": offset,
        "next_offset": offset + limit if offset + limit < total else None,
        "entries": [_shown(conn, locations, r, max_chars) for r in rows],
    }


def entry_text(conn: db.Connection, locations: Locations, rowid: int, max_chars: int = 500) -> dict | None:
    """One entry, looked up by its rowid in the entries table, with its redacted text (shortened)."""
    row = conn.execute(
        f"SELECT {ENTRY_COLUMNS} FROM entries e JOIN files f ON f.id = e.file_id WHERE e.rowid = ?",
        (rowid,),
    ).fetchone()
    if row is None:
        return None
    return _shown(conn, locations, row, max_chars)


def activity(conn: db.Connection, days: int = 60, today: date | None = None) -> list[dict]:
    """Entries and sessions per UTC day over the last `days` days, oldest first, zeros included."""
    today = today or datetime.now(timezone.utc).date()
    start = today - timedelta(days=days - 1)
    counts = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            "SELECT substr(e.timestamp, 1, 10) AS day, COUNT(*), COUNT(DISTINCT e.file_id) "
            "FROM entries e WHERE e.timestamp >= ? GROUP BY day",
            (start.isoformat(),),
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
    for file_id, sid, name, cwd, started, last, count, size in rows:
        title = name
        if not title:
            first = conn.execute(
                f"SELECT {ENTRY_COLUMNS} FROM entries e JOIN files f ON f.id = e.file_id "
                "WHERE e.file_id = ? AND e.kind = 'user' ORDER BY e.line LIMIT 1",
                (file_id,),
            ).fetchone()
            if first is not None:
                text, _missing, _total = _text(conn, locations, first, TITLE_CHARS * 4)
                title = one_line(text, TITLE_CHARS) if text else None
        out.append({"session_id": sid, "title": title, "name": name, "cwd": cwd, "started": started,
                    "last_timestamp": last, "entries": count, "bytes": size})
    return out


def one_line(text: str, limit: int) -> str:
    """Whitespace collapsed, cut at a word boundary to about `limit` characters."""
    flat = " ".join(text[: limit * 4].split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit)
    return (flat[:cut] if cut > limit // 2 else flat[:limit]) + " …"


def projects(conn: db.Connection, limit: int = 200) -> list[dict]:
    """Project folders (session cwds), most recently active first."""
    return [
        {"cwd": r[0], "sessions": r[1], "last_timestamp": r[2]}
        for r in conn.execute(
            "SELECT cwd, COUNT(*), MAX(COALESCE(last_timestamp, started)) AS last FROM files "
            "WHERE cwd IS NOT NULL GROUP BY cwd ORDER BY last DESC LIMIT ?",
            (limit,),
        )
    ]
