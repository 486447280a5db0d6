"""A session's lineage for its page: the session it was forked or cloned from, and the sessions forked from it.

Pi's fork or clone starts a new journal that copies the parent's entries (same ids) and goes on with its own; a
child is listed with its first own entry and its length. Parents and children are resolved through the index
(`search.forks`) and named only when the viewer's cap reaches them (`scope.visible_sessions`); a parent that is
not an indexed journal inside the journal folders is only said to exist, its path never shown.
"""

from __future__ import annotations

from typing import NamedTuple

from pimem_index import db
from pimem_index.locations import Locations
from pimem_index.search import forks, session_ids, session_info
from pimem_index.search.reread import EntryRow, redacted_head, reread, select_entries
from pimem_index.search.scope import visible_sessions

FIRST_ENTRY_CHARS = 160


class Viewer(NamedTuple):
    """Who looks at a session page, as `scope.visible_sessions` asks: the cap and the session's own folder."""

    max_scope: str
    cwd: str | None
    journal_path: str | None = None
    home: str | None = None


def lineage(conn: db.Connection, locations: Locations, session_id: str, max_scope: str = "global") -> dict:
    """`{"parent": {...} | None, "parent_outside": bool, "children": [...]}` for the session's page.

    `parent` and each child: `session_id`, `short_id`, `title`; a child also has `first_entry` (its first own
    entry: `id`, `kind`, `text`, redacted and cut), `own_entries` and `entries`. `parent_outside` is true when
    Pi recorded a parent the index does not hold (or the viewer may not see).
    """
    row = conn.execute(
        "SELECT cwd, parent_session FROM files WHERE session_id = ? ORDER BY started, id LIMIT 1", (session_id,)
    ).fetchone()
    if row is None:
        return {"parent": None, "parent_outside": False, "children": []}
    cwd, recorded = row
    viewer = Viewer(max_scope, cwd)
    parent = forks.parents(conn, [session_id]).get(session_id)
    children = forks.children(conn, [session_id])[session_id]
    shown = visible_sessions(conn, viewer, [*children, *([parent] if parent else [])])
    named = [s for s in [parent, *children] if s and s in shown]
    short = session_ids.short_ids(conn, named)
    parent_json = None
    if parent and parent in shown:
        parent_json = {
            "session_id": parent,
            "short_id": short[parent],
            "title": _title(conn, locations, parent),
        }
    return {
        "parent": parent_json,
        "parent_outside": bool(recorded) and parent_json is None,
        "children": [_child(conn, locations, session_id, c, short[c]) for c in children if c in shown],
    }


_FILES = "SELECT id FROM files WHERE session_id = ?"
_ENTRY_IDS = "SELECT p.id FROM entries p WHERE p.file_id IN (SELECT id FROM files WHERE session_id = ?)"


def _title(conn: db.Connection, locations: Locations, session_id: str) -> str | None:
    name = conn.execute("SELECT name FROM files WHERE session_id = ? AND name IS NOT NULL LIMIT 1", (session_id,))
    found = name.fetchone()
    return found[0] if found else session_info.first_message(conn, locations, session_id)


def _child(conn: db.Connection, locations: Locations, parent: str, child: str, short: str) -> dict:
    """A fork as its parent lists it: its first own entry (past the entries it copied) and its length."""
    counts = conn.execute(
        f"SELECT count(*), total(e.id NOT IN ({_ENTRY_IDS})) FROM entries e WHERE e.file_id IN ({_FILES})",
        (parent, child),
    ).fetchone()
    first = select_entries(
        conn,
        f"e.file_id IN ({_FILES}) AND e.id NOT IN ({_ENTRY_IDS}) ORDER BY f.started, f.id, e.line LIMIT 1",
        (child, parent),
    )
    return {
        "session_id": child,
        "short_id": short,
        "title": _title(conn, locations, child),
        "entries": counts[0] or 0,
        "own_entries": int(counts[1] or 0),
        "first_entry": _entry(conn, locations, first[0]) if first else None,
    }


def _entry(conn: db.Connection, locations: Locations, row: EntryRow) -> dict:
    text = reread(conn, row, locations)
    shown = session_info.one_line(redacted_head(text, FIRST_ENTRY_CHARS * 4), FIRST_ENTRY_CHARS) if text else None
    return {"id": row.id, "kind": row.kind, "text": shown}
