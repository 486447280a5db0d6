"""Session ids people can use: the short id shown for a session, and a session named by any of its forms.

Pi 0.73 session ids are UUIDv7 (`01a23dcc-ed41-70ad-a466-7f430c340c8b`): the first 8 characters are a
timestamp, so sessions started within a minute share them. A UUIDv7's short id is therefore taken from its
random end (`0c340c8b`), another id's from its start; either way it is the shortest such form of at least
SHORT_CHARS characters that names no other session of the index, neither as the start nor as the end of its id.
A session is named (`resolve`) by its full id, its short id or any unique prefix of MIN_PREFIX characters or more.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator, Sequence

from pimem_index import db
from pimem_index.errors import Arg, UserError
from pimem_index.search.per_state import kept

SHORT_CHARS = 8  # a short id's least length
MIN_PREFIX = 8  # a prefix names a session from this length on
CANDIDATES_SHOWN = 4  # an ambiguous name lists this many candidates
_UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def from_the_end(session_id: str) -> bool:
    """Whether the id's distinctive part is its end: a UUIDv7, whose start is a timestamp."""
    return bool(_UUID7.fullmatch(session_id))


class Ids:
    """Every session id of an index, sorted forwards and by their reversed text, so a form is looked up in
    both directions with a bisection (a few microseconds a lookup)."""

    def __init__(self, session_ids: Iterable[str]):
        self.ids = sorted(set(session_ids))
        self.reversed = sorted(s[::-1] for s in self.ids)

    @classmethod
    def of_index(cls, conn: db.Connection) -> Ids:
        """The index's session ids, kept while the index stays as it is (per_state: 40 ms a reply at 10,000
        sessions when read and sorted every time)."""
        return kept(conn, "session ids", lambda: cls(_session_ids(conn)))

    def starting(self, form: str, limit: int = 2) -> list[str]:
        """Up to `limit` ids that start with `form`."""
        i = bisect.bisect_left(self.ids, form)
        found: list[str] = []
        while i < len(self.ids) and self.ids[i].startswith(form) and len(found) < limit:
            found.append(self.ids[i])
            i += 1
        return found

    def ending(self, form: str, limit: int = 2) -> list[str]:
        """Up to `limit` ids that end with `form`."""
        back = form[::-1]
        i = bisect.bisect_left(self.reversed, back)
        found: list[str] = []
        while i < len(self.reversed) and self.reversed[i].startswith(back) and len(found) < limit:
            found.append(self.reversed[i][::-1])
            i += 1
        return found

    def named_by(self, form: str, limit: int = 2) -> list[str]:
        """The ids `form` could name as a short id: those starting or ending with it (up to `limit` of each)."""
        found = self.starting(form, limit)
        found += [s for s in self.ending(form, limit) if s not in found]
        return found

    def short(self, session_id: str) -> str:
        """The session's short id: the shortest end (UUIDv7) or start (other ids) of SHORT_CHARS characters or
        more that no other id starts or ends with; the whole id when nothing shorter is unique."""
        end = from_the_end(session_id)
        for length in range(SHORT_CHARS, len(session_id)):
            form = session_id[-length:] if end else session_id[:length]
            if self.named_by(form) == [session_id]:
                return form
        return session_id


def _session_ids(conn: db.Connection) -> Iterator[str]:
    return (row[0] for row in conn.execute("SELECT DISTINCT session_id FROM files WHERE session_id IS NOT NULL"))


def short_ids(conn: db.Connection, session_ids: Iterable[str | None]) -> dict[str, str]:
    """The short id of each session named, unique among all the sessions of the index."""
    ids = Ids.of_index(conn)
    return {sid: ids.short(sid) for sid in session_ids if sid}


def resolve(conn: db.Connection, name: str) -> str:
    """The full id of the session `name` names: its full id, its short id, or a prefix of MIN_PREFIX characters
    or more that starts one session only. An unknown name or one naming several sessions is a UserError
    (one line, listing the candidates)."""
    name = name.strip()
    if conn.execute("SELECT 1 FROM files WHERE session_id = ? LIMIT 1", (name,)).fetchone():
        return name
    ids = Ids.of_index(conn)
    found = ids.named_by(name, CANDIDATES_SHOWN + 1) if len(name) >= min(SHORT_CHARS, MIN_PREFIX) else []
    if len(found) == 1:
        return found[0]
    if found:
        raise ambiguous(name, found, ids)
    raise UserError(
        f"no session {name!r} in the index: give its id, its short id or its first {MIN_PREFIX} characters or more",
        Arg("session_id", "0b6e6f2c"),
    )


class AmbiguousSession(UserError):
    """A session name (a prefix or an end of ids) that fits several sessions."""


def ambiguous(name: str, found: Sequence[str], ids: Ids) -> AmbiguousSession:
    """A name that fits several sessions: one line naming them by their short ids."""
    shown = ", ".join(f"{ids.short(s)} ({s})" for s in found[:CANDIDATES_SHOWN])
    more = ", ..." if len(found) > CANDIDATES_SHOWN else ""
    return AmbiguousSession(
        f"session {name!r} names several sessions: {shown}{more}; give one of their short ids",
        Arg("session_id", ids.short(found[0])),
    )
