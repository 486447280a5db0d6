"""Forks across journals: which session a session was forked or cloned from, and which were forked from it.

Pi writes a fork's or a clone's `parentSession` as the parent journal's absolute path (older journals may
name the parent's session id). It is resolved to a session id through the index's files table only: a parent
whose journal is not an indexed journal inside the journal folders stays unresolved, and no path is ever
opened or shown. Resolved at query time, so a child indexed before its parent finds it once it is indexed.
"""

from __future__ import annotations

from collections.abc import Iterable

from pimem_index import db

# A files row `c` with its parent's files row `p`: Pi's path, else (older journals) the parent's session id.
_PARENT_JOIN = "JOIN files p ON (p.path = c.parent_session OR p.session_id = c.parent_session) AND p.id <> c.id"


def _marks(values: list) -> str:
    return ",".join("?" * len(values))


def parents(conn: db.Connection, session_ids: Iterable[str | None]) -> dict[str, str]:
    """The resolved parent session of each session named that has one inside the index."""
    ids = sorted({s for s in session_ids if s})
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT c.session_id, p.session_id FROM files c {_PARENT_JOIN} "
        f"WHERE c.session_id IN ({_marks(ids)}) AND c.parent_session IS NOT NULL AND p.session_id IS NOT NULL "
        "AND p.session_id <> c.session_id ORDER BY c.started, c.id",
        ids,
    ).fetchall()
    found: dict[str, str] = {}
    for child, parent in rows:
        found.setdefault(child, parent)
    return found


def children(conn: db.Connection, session_ids: Iterable[str | None]) -> dict[str, list[str]]:
    """The sessions forked or cloned from each session named, oldest first ([] for none)."""
    ids = sorted({s for s in session_ids if s})
    found: dict[str, list[str]] = {sid: [] for sid in ids}
    if not ids:
        return found
    rows = conn.execute(
        f"SELECT p.session_id, c.session_id FROM files c {_PARENT_JOIN} "
        f"WHERE p.session_id IN ({_marks(ids)}) AND c.session_id IS NOT NULL AND c.session_id <> p.session_id "
        "ORDER BY c.started, c.id",
        ids,
    ).fetchall()
    for parent, child in rows:
        if child not in found[parent]:
            found[parent].append(child)
    return found


def copies(conn: db.Connection, rowids: Iterable[int]) -> set[int]:
    """The entries among `rowids` that a fork or a clone copied from its parent's journal (Pi copies them with
    their ids) while the original is among `rowids` too: what a page folds into the original."""
    ids = sorted(set(rowids))
    if not ids:
        return set()
    rows = conn.execute(
        f"SELECT e.rowid, o.rowid FROM entries e JOIN files c ON c.id = e.file_id {_PARENT_JOIN} "
        "JOIN entries o ON o.file_id = p.id AND o.eid = e.eid AND o.kind = e.kind AND o.text_digest IS e.text_digest "
        f"WHERE e.rowid IN ({_marks(ids)}) AND c.parent_session IS NOT NULL",
        ids,
    ).fetchall()
    wanted = set(ids)
    return {copy for copy, original in rows if original in wanted and original != copy}
