"""The JSON API the Pi tool calls: search, read, summaries, status, usage and sessions.

Replies are exactly what pimem_index.search.query returns. Everything here runs on a worker
thread with the thread's own pimem connection.
"""

from __future__ import annotations

from pimem_index import (
    Locations,
    ReadRequest,
    SearchRequest,
    SessionsRequest,
    UsageRequest,
    activity,
    checked_journal,
    index_status,
    indexer,
    query,
    replies,
)

ACTIONS = ("search", "read", "summaries", "status", "usage", "sessions")


def route_list() -> str:
    """The API's routes, for messages that point callers at them."""
    return ", ".join(f"/-/pi-memory/api/{action}" for action in ACTIONS)


def call(conn, locations: Locations, action: str, args: dict, max_scope: str) -> replies.ApiReply:
    """One API call: index the caller's journal if given, then the pimem_index query.

    `args` are the call's parameters (pimem_index.search.request.query_args), checked by the request
    objects built from them.
    """
    if action == "status":
        data = index_status(conn, locations)
        if max_scope != "global":  # a failed journal's path, or a link's, names its project
            data["journals_failed"] = []
            data["journals_outside"] = []
        return data
    journal = checked_journal(locations, args.get("journal"))
    if journal is not None:
        indexer.index_journal(conn, journal)
    if action == "read":
        return read(conn, locations, args, max_scope, journal)
    if action == "usage":
        return activity.usage(conn, UsageRequest.from_args(args, max_scope=max_scope, journal_path=journal))
    if action == "sessions":
        listing = SessionsRequest.from_args(args, max_scope=max_scope, journal_path=journal)
        return activity.sessions(conn, listing, locations)
    return search(conn, locations, args, max_scope, journal, summaries=action == "summaries")


def search(
    conn, locations: Locations, args: dict, max_scope: str, journal: str | None = None, *, summaries: bool = False
) -> replies.SearchReply:
    """A search (or summaries) from the API's parameters: what the API and the search and summaries pages answer."""
    request = SearchRequest.from_args(args, max_scope=max_scope, journal_path=journal, summaries=summaries)
    return query.search(conn, locations, request)


def read(conn, locations: Locations, args: dict, max_scope: str, journal: str | None = None) -> replies.ReadReply:
    """A read from the API's parameters: what the API and the read page answer."""
    return query.read(conn, locations, ReadRequest.from_args(args, max_scope=max_scope, journal_path=journal))
