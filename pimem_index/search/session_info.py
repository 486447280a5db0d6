"""What belongs to a session, given once per reply: the `sessions` map of search, summaries and read replies.

Each session a reply names gets `{short_id, title, cwd, journal, started, parent_session_id}`, so its hits
carry only their own keys. The title is the session's name (stored redacted), else its first user message,
reread from the journal, redacted and cut to one line; the parent is resolved through the index (`forks`)
and given only when the caller may see it (`visible`), else null.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from pimem_index import db
from pimem_index.locations import Locations
from pimem_index.replies import SessionInfo
from pimem_index.search import forks, session_ids
from pimem_index.search.per_state import kept
from pimem_index.search.reread import redacted_head, reread, select_entries

TITLE_CHARS = 120


class SessionFile(NamedTuple):
    """A session's first journal (by start), as the map describes it."""

    session_id: str
    name: str | None
    cwd: str | None
    path: str
    started: str | None


def sessions_map(
    conn: db.Connection,
    locations: Locations,
    session_ids_named: Iterable[str | None],
    visible: Callable[[Iterable[str]], set[str]] | None = None,
) -> dict[str, SessionInfo]:
    """`{session id: {short_id, title, cwd, journal, started, parent_session_id}}` for each session named
    that the index holds; `visible` says which parents the caller may see (all when None)."""
    ids = sorted({s for s in session_ids_named if s})
    if not ids:
        return {}
    files: dict[str, SessionFile] = {}
    for row in conn.execute(
        f"SELECT {', '.join(SessionFile._fields)} FROM files WHERE session_id IN ({','.join('?' * len(ids))}) "
        "ORDER BY started DESC, id DESC",
        ids,
    ):
        files[row[0]] = SessionFile._make(row)  # the earliest journal last, so it stays
    shorts = session_ids.short_ids(conn, files)
    parents = forks.parents(conn, files)
    shown_parents = visible(parents.values()) if visible is not None else set(parents.values())
    return {
        sid: {
            "short_id": shorts[sid],
            "title": f.name or first_message(conn, locations, sid),
            "cwd": f.cwd,
            "journal": f.path,
            "started": f.started,
            "parent_session_id": parents[sid] if parents.get(sid) in shown_parents else None,
        }
        for sid, f in files.items()
    }


def first_message(conn: db.Connection, locations: Locations, session_id: str) -> str | None:
    """The session's first user message, reread, redacted and on one line (cut to TITLE_CHARS); kept while
    the index stays as it is (per_state), as every reply naming the session shows it."""
    return kept(conn, ("first message", session_id), lambda: _first_message(conn, locations, session_id))


def _first_message(conn: db.Connection, locations: Locations, session_id: str) -> str | None:
    first = select_entries(
        conn, "f.session_id = ? AND e.kind = 'user' ORDER BY f.started, f.id, e.line LIMIT 1", (session_id,)
    )
    if not first:
        return None
    try:
        text = reread(conn, first[0], locations)
    except (TypeError, ValueError):  # a damaged pointer: the title is only decoration, the reply goes on
        return None
    return one_line(redacted_head(text, TITLE_CHARS * 4), TITLE_CHARS) if text else None


def one_line(text: str, limit: int) -> str:
    """Whitespace collapsed, cut at a word boundary to about `limit` characters."""
    flat = " ".join(text[: limit * 4].split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit)
    return (flat[:cut] if cut > limit // 2 else flat[:limit]) + " …"
