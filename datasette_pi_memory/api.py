"""The JSON API the Pi tool calls: search, read, summaries, status.

Replies are exactly what pimem_index.query returns. Everything here runs on a worker
thread with the thread's own pimem connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pimem_index import indexer, query
from pimem_index.locations import Locations, checked_journal
from pimem_index.scope import allowed, default_scope, project_cwd

ACTIONS = ("search", "read", "summaries", "status")


def route_list() -> str:
    """The API's routes, for messages that point callers at them."""
    return ", ".join(f"/-/pi-memory/api/{action}" for action in ACTIONS)


@dataclass
class Params:
    """The contract's query parameters, as given (validated by pimem_index)."""

    q: str | None = None
    scope: str | None = None
    cwd: str | None = None
    session_id: str | None = None
    id: str | None = None
    since: str | None = None
    until: str | None = None
    kinds: list[str] = field(default_factory=list)
    limit: str | None = None
    offset: str | None = None
    journal: str | None = None

    @classmethod
    def from_request(cls, request) -> "Params":
        args = request.args

        def one(name):
            value = args.get(name)
            return value if value not in (None, "") else None

        return cls(
            q=one("q"), scope=one("scope"), cwd=one("cwd"), session_id=one("session_id"),
            id=one("id"), since=one("since"), until=one("until"),
            kinds=[k for k in args.getlist("kind") if k], limit=one("limit"),
            offset=one("offset"), journal=one("journal"),
        )


def call(conn, locations: Locations, action: str, params: Params, max_scope: str) -> dict:
    """One API call: index the caller's journal if given, then the pimem_index query."""
    if action == "status":
        data = query.status(conn, locations)
        if max_scope != "global":  # a failed journal's path names its project
            data["journals_failed"] = []
        return data
    journal = checked_journal(locations, params.journal)
    if journal is not None:
        indexer.index_journal(conn, journal)
    scope = params.scope or default_scope(max_scope)
    # An unknown or too wide scope is left for pimem_index to refuse with its message.
    cwd = project_cwd(conn, params.cwd, journal) if scope == "project" and allowed(scope, max_scope) else params.cwd
    if action == "read":
        return query.read(conn, locations, params.id or "", session_id=params.session_id, cwd=cwd,
                          scope=scope, journal_path=journal, offset=params.offset, max_scope=max_scope)
    kwargs = dict(scope=scope, cwd=cwd, session_id=params.session_id, journal_path=journal,
                  since=params.since, until=params.until, kinds=params.kinds, limit=params.limit,
                  max_scope=max_scope)
    if action == "summaries":
        return query.summaries(conn, locations, params.q, **kwargs)
    return query.search(conn, locations, params.q, **kwargs)
