"""What happened in sessions, from the index's usage figures: tokens and cost per key (`usage`) and
the sessions with their totals (`sessions`), for the CLI, the API and the pages alike.

Each takes its checked request (`requests.UsageRequest`, `requests.SessionsRequest`) and returns
the contract's JSON shape. Both read metadata only (the entries' figures and the `sessions` view),
never a journal, so they need no rereading or redaction beyond what the indexer stored. The scope
rule is `scope.Scope.predicate`, as for search; forgotten entries and sessions are not in the index.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any, cast

from pimem_index import db, store
from pimem_index.journal import INT64_MAX
from pimem_index.locations import Locations
from pimem_index.replies import SessionsReply, UsageReply
from pimem_index.search import forks, session_ids, session_info
from pimem_index.search.request import SessionsRequest, UsageRequest, check_by
from pimem_index.search.scope import project_root, request_scope, visible_sessions

FIGURES = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
COST_DIGITS = 6  # dollars to a millionth: sums of floats lose the noise beyond


def usage(conn: db.Connection, request: UsageRequest, split: str | None = None) -> UsageReply:
    """Tokens, cost, messages and sessions per key (`request.by`) of the assistant entries in scope
    and dates, with a total: `{"by", "scope", "root", "rows": [...], "total": {...}}`. With `split`
    (another of requests.USAGE_BY), each row also holds its figures per that key (`"split": {key: {...}}`),
    as the usage page's day chart stacks models."""
    scope = request_scope(conn, request)
    where, params = scope.predicate()
    clauses = ["e.kind = 'assistant'", where]
    if request.since:
        clauses.append("e.ts >= ?")
        params.append(store.epoch_ms(request.since))
    if request.until:
        clauses.append("e.ts <= ?")
        params.append(store.epoch_ms(request.until))
    parts = conn.execute(
        f"SELECT {_bucket_sql()}, e.model, e.file_id, total(e.input_tokens), total(e.output_tokens), "
        "total(e.cache_read_tokens), total(e.cache_write_tokens), total(e.cost), count(*) FROM entries e "
        f"WHERE {' AND '.join(clauses)} GROUP BY 1, 2, 3",
        params,
    ).fetchall()
    file_ids = {file_id for _d, _m, file_id, *_ in parts}
    key_of = _key_function(conn, request, file_ids)
    split_of = _key_function(conn, replace(request, by=check_by(split)), file_ids) if split else None
    days: dict[int | None, str | None] = {}
    groups: dict[Any, _Sums] = {}
    splits: dict[Any, dict[Any, _Sums]] = {}
    total = _Sums()
    for bucket, model, file_id, *figures in parts:
        day = days.get(bucket) or days.setdefault(bucket, local_day(bucket))
        key = key_of(day, model, file_id)
        groups.setdefault(key, _Sums()).add(file_id, figures)
        if split_of:
            splits.setdefault(key, {}).setdefault(split_of(day, model, file_id), _Sums()).add(file_id, figures)
        total.add(file_id, figures)
    rows = [{"key": key, **sums.as_json(), **_split_json(splits, key, split)} for key, sums in groups.items()]
    rows.sort(key=_row_order(request.by))
    return cast(UsageReply, {"by": request.by, **scope.as_json(), "rows": rows, "total": total.as_json()})


def _split_json(splits: dict[Any, dict[Any, _Sums]], key: Any, split: str | None) -> dict[str, Any]:
    """A row's `split` entry: its figures per second key, the costliest first; nothing without a split."""
    if not split:
        return {}
    parts = sorted(splits.get(key, {}).items(), key=lambda item: -item[1].cost)
    return {"split": {second: sums.as_json() for second, sums in parts}}


def _bucket_sql() -> str:
    """SQL for the stretch of UTC time an entry falls in (its start, epoch milliseconds), never crossing a
    local midnight: its hour, or its quarter hour where the local offset is not whole hours.

    Days are made local in Python once per stretch (`local_day`): SQLite's `localtime` on every
    row took more than half of the query's time.
    """
    stretch = 3_600_000 if time.timezone % 3600 == 0 and time.altzone % 3600 == 0 else 900_000
    return f"e.ts / {stretch} * {stretch}"


def local_day(bucket: int | None) -> str | None:
    """The local YYYY-MM-DD of a stretch of UTC time from `_bucket_sql` (None for no timestamp)."""
    if bucket is None:
        return None
    return datetime.fromtimestamp(bucket / 1000, UTC).astimezone().date().isoformat()


class _Sums:
    """Running totals of one key: the figures, cost, messages and the sessions (journals) counted."""

    def __init__(self) -> None:
        self.figures = [0, 0, 0, 0]
        self.cost = 0.0
        self.messages = 0
        self.files: set[int] = set()

    def add(self, file_id: int, values: list) -> None:
        *figures, cost, messages = values
        for i, value in enumerate(figures):  # total(): a float that never overflows; sums capped as SQL's
            self.figures[i] = min(self.figures[i] + int(value), INT64_MAX)
        self.cost += cost
        self.messages += messages
        self.files.add(file_id)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = dict(zip(FIGURES, self.figures, strict=True))
        data["total_tokens"] = min(sum(self.figures), INT64_MAX)
        data["cost"] = round(self.cost, COST_DIGITS)
        data["messages"] = self.messages
        data["sessions"] = len(self.files)
        return data


def _key_function(conn: db.Connection, request: UsageRequest, file_ids: set[int]):
    """The key a (local day, model, journal) part counts under for `request.by`."""
    by = request.by
    if by == "day":
        return lambda day, model, file_id: day
    if by == "week":
        return lambda day, model, file_id: iso_week(day)
    if by == "month":
        return lambda day, model, file_id: day[:7] if day else None
    if by == "model":
        return lambda day, model, file_id: model
    files = _files(conn, file_ids)
    if by == "session":
        return lambda day, model, file_id: files[file_id][0]
    roots = {cwd: project_root(conn, cwd, request.home)[0] for _sid, cwd in files.values() if cwd}
    return lambda day, model, file_id: roots.get(files[file_id][1] or "")


def _files(conn: db.Connection, file_ids: set[int]) -> dict[int, tuple[str | None, str | None]]:
    """(session id, cwd) of each journal named."""
    rows = conn.execute("SELECT id, session_id, cwd FROM files").fetchall()
    return {file_id: (sid, cwd) for file_id, sid, cwd in rows if file_id in file_ids}


def iso_week(day: str | None) -> str | None:
    """A YYYY-MM-DD day's ISO week as YYYY-Www (e.g. 2026-12-31 is in 2026-W53)."""
    if not day:
        return None
    year, week, _weekday = date.fromisoformat(day).isocalendar()
    return f"{year}-W{week:02d}"


def _row_order(by: str):
    """Times in order (oldest first); models, projects and sessions by cost, the largest first."""
    if by in ("day", "week", "month"):
        return lambda row: (row["key"] is None, row["key"] or "")
    return lambda row: (-row["cost"], -row["total_tokens"], str(row["key"]))


SESSION_KEYS = (
    "session_id",
    "name",
    "cwd",
    "started",
    "last_activity",
    "duration_s",
    "entries",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost",
    "models",
    "tool_calls",
    "errors",
)


# ORDER BY for each of requests.SESSION_SORTS, largest (or newest) first.
SESSION_ORDER = {
    "date": "COALESCE(e.last_timestamp, e.started) DESC",
    "cost": "e.cost DESC",
    "tokens": "(e.input_tokens + e.output_tokens) DESC",  # the tokens every list shows: input and output
    "size": "e.entries DESC",
}


def sessions(conn: db.Connection, request: SessionsRequest, locations: Locations | None = None) -> SessionsReply:
    """The sessions in scope active within the dates (and using the model), newest first or as
    `request.sort` orders them, one page:
    `{"scope", "root", "sessions": [...], "offset", "next_offset"}` (next_offset None on the last).

    Each session also has its `short_id`, its `title` (its name, else, given `locations`, its first user message
    reread and redacted), the session it was forked from (`parent_session_id`) and those forked from it
    (`forks`), named only when the caller's cap reaches them."""
    scope = request_scope(conn, request)
    where, params = scope.predicate()  # over `e.file_id`: the sessions view's rows are aliased `e`
    clauses = [where]
    if request.since:
        clauses.append("e.last_timestamp >= ?")
        params.append(request.since)
    if request.until:
        clauses.append("COALESCE(e.started, e.last_timestamp) <= ?")
        params.append(request.until)
    if request.model:
        clauses.append(
            "EXISTS (SELECT 1 FROM entries m WHERE m.file_id = e.file_id AND m.kind = 'assistant' AND m.model = ?)"
        )
        params.append(request.model)
    rows = conn.execute(
        "SELECT e.session_id, e.name, e.cwd, e.started, e.last_timestamp, e.duration_s, e.entries, "
        "e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens, e.cost, e.models, "
        f"e.tool_calls, e.errors FROM sessions e WHERE {' AND '.join(clauses)} "
        f"ORDER BY {SESSION_ORDER[request.sort]}, e.session_id LIMIT ? OFFSET ?",
        [*params, request.limit + 1, request.offset],
    ).fetchall()
    page = [_session_json(row) for row in rows[: request.limit]]
    _lineage(conn, request, page, locations)
    more = len(rows) > request.limit
    return cast(
        SessionsReply,
        {
            **scope.as_json(),
            "sessions": page,
            "offset": request.offset,
            "next_offset": request.offset + request.limit if more else None,
        },
    )


def _lineage(conn: db.Connection, request: SessionsRequest, page: list[dict], locations: Locations | None) -> None:
    """Short ids, titles, parents and forks of a page of sessions, in place (see `sessions`)."""
    ids = [s["session_id"] for s in page]
    shorts = session_ids.short_ids(conn, ids)
    parents = forks.parents(conn, ids)
    children = forks.children(conn, ids)
    shown = visible_sessions(conn, request, [*parents.values(), *(c for cs in children.values() for c in cs)])
    for s in page:
        sid = s["session_id"]
        s["short_id"] = shorts.get(sid, sid)
        s["title"] = s["name"] or (session_info.first_message(conn, locations, sid) if locations else None)
        s["parent_session_id"] = parents[sid] if parents.get(sid) in shown else None
        s["forks"] = [c for c in children.get(sid, []) if c in shown]


def _session_json(row: tuple) -> dict[str, Any]:
    data = dict(zip(SESSION_KEYS, row, strict=True))
    data["cost"] = round(data["cost"], COST_DIGITS)
    data["models"] = sorted(data["models"].split(",")) if data["models"] else []
    return data
