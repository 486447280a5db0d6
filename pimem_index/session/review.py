"""What a reviewer asks first about a session (or the branch shown): which files it changed, with their
diffs, what failed, and its figures. Figures and the lists come from the index (`tool_calls`, the entries'
outcomes); the diffs and excerpts are reread from the journal and redacted like the rest of the page.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from pimem_index import db
from pimem_index.search.reread import select_entries

# At most this many edit and write calls are read for the files list (the rest are counted), and this
# many failures get an excerpt: a session of thousands of calls still costs a page, not the journal.
CALLS_SHOWN = 60
FAILURES_SHOWN = 200
CHANGING_TOOLS = ("edit", "write")


def failures(conn: db.Connection, files: list[int], rowids: dict[int, str], order: list[str]) -> list[dict]:
    """The failed tool results, failed bash runs and errored or aborted turns of the session's journals
    (`files`) among the entries shown (`rowids`: rowid to entry id, `order`: their order), in that order,
    each with what the call was."""
    if not rowids or not files:
        return []
    found: dict[str, dict] = {}
    marks = ",".join("?" * len(files))
    rows = conn.execute(
        f"SELECT rowid, kind, tool, is_error, exit_code, NULL FROM entries WHERE file_id IN ({marks}) "
        "AND (is_error = 1 OR exit_code <> 0) "
        f"UNION ALL SELECT rowid, kind, tool, NULL, NULL, stop_reason FROM entries WHERE file_id IN ({marks}) "
        "AND kind = 'assistant' AND stop_reason IN ('error', 'aborted')",
        files + files,
    ).fetchall()
    calls = {
        result: (tool, path)
        for result, tool, path in _in(
            conn, "SELECT result_rowid, tool, path FROM tool_calls WHERE result_rowid IN ({})", [r[0] for r in rows]
        )
    }
    for rowid, kind, tool, _is_error, exit_code, stop in rows:
        eid = rowids.get(rowid)
        if eid is None:
            continue
        call_tool, path = calls.get(rowid, (tool, None))
        if kind == "assistant":
            what = f"turn {stop}"
        elif kind == "bash":
            what = f"bash exit {exit_code}"
        else:
            what = f"{call_tool or tool or 'tool'} failed"
        found[eid] = {"id": eid, "kind": kind, "what": what, "path": path}
    at = {eid: n for n, eid in enumerate(order)}
    listed = sorted(found.values(), key=lambda f: at.get(f["id"], 0))
    for n, item in enumerate(listed):
        item["n"] = n + 1
        item["prev"] = listed[n - 1]["id"] if n else None
        item["next"] = listed[n + 1]["id"] if n + 1 < len(listed) else None
    return listed


class Change(NamedTuple):
    """One edit or write call of the files list: where it is and what the index says of it."""

    entry_rowid: int
    call_id: str | None
    tool: str
    path: str
    result_rowid: int | None


# A session's edit and write calls that did not fail: its journals (files_session_id), their entries
# (entries_file), their calls (tool_calls_entry).
CHANGES_SQL = (
    "SELECT c.entry_rowid, c.call_id, c.tool, c.path, c.result_rowid FROM files f "
    "JOIN entries e ON e.file_id = f.id JOIN tool_calls c ON c.entry_rowid = e.rowid "
    "WHERE f.session_id = ? AND c.tool IN ('edit', 'write') AND c.path IS NOT NULL "
    "AND COALESCE(c.is_error, 0) = 0 ORDER BY c.entry_rowid, c.rowid"
)


def changes(conn: db.Connection, session_id: str, rowids: dict[int, str]) -> list[Change]:
    """The session's edit and write calls that did not fail, among the entries shown, in journal order
    (through its journals' entries: the session's own rows, whatever the size of the index)."""
    rows = conn.execute(CHANGES_SQL, (session_id,)).fetchall()
    return [Change._make(row) for row in rows if row[0] in rowids]


def figures(conn: db.Connection, rowids: list[int]) -> dict:
    """The header's figures (as the sessions view gives them) over some entries: the branch shown."""
    totals = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0, "cost": 0.0}
    models: set[str] = set()
    first = last = None
    errors = calls = 0
    for row in _in(
        conn,
        "SELECT kind, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, "
        "is_error, exit_code, timestamp FROM entries WHERE rowid IN ({})",
        rowids,
    ):
        kind, model, inp, out, cread, cwrite, cost, is_error, exit_code, ts = row
        if kind == "assistant":
            for key, value in zip(totals, (inp, out, cread, cwrite, cost), strict=True):
                totals[key] += value or 0
            if model:
                models.add(model)
        if is_error == 1 or (exit_code is not None and exit_code != 0):
            errors += 1
        if ts:
            first = ts if first is None or ts < first else first
            last = ts if last is None or ts > last else last
    for (n,) in _in(conn, "SELECT count(*) FROM tool_calls WHERE entry_rowid IN ({})", rowids):
        calls += n
    return {
        **totals,
        "models": sorted(models),
        "duration_s": _seconds(first, last),
        "tool_calls": calls,
        "errors": errors,
        "entries": len(rowids),
    }


def _seconds(first: str | None, last: str | None) -> int | None:
    if not first or not last:
        return None
    try:
        delta = datetime.fromisoformat(last.replace("Z", "+00:00")) - datetime.fromisoformat(
            first.replace("Z", "+00:00")
        )
    except ValueError:
        return None
    return round(delta.total_seconds())


def _in(conn: db.Connection, sql: str, values, size: int = 500):
    """Rows of `sql` (one `IN ({})`) over `values` in chunks SQLite's variable limit allows."""
    values = list(values)
    for i in range(0, len(values), size):
        chunk = values[i : i + size]
        yield from conn.execute(sql.format(",".join("?" * len(chunk))), chunk)


def rows_by_rowid(conn: db.Connection, rowids: list[int]) -> dict:
    """Entry rows (reread.EntryRow) by rowid."""
    found = {}
    for i in range(0, len(rowids), 500):
        chunk = rowids[i : i + 500]
        for row in select_entries(conn, f"e.rowid IN ({','.join('?' * len(chunk))})", chunk):
            found[row.rowid] = row
    return found
