"""Calls with their results: what a hit says beyond its text, and the entries around an entry.

A hit on an assistant entry that called tools carries its first call's `outcome` (`ok`, `error`,
`exit N`) and `result` (the result's first line, redacted); a hit on a tool result carries its
`call` (the tool and its main argument, redacted); a bash run's hit its outcome. `around` gives the
entries before and after an entry on its branch of its journal (parents up, first children down),
each a short labelled block, so an agent reads a whole exchange in one call.
"""

from __future__ import annotations

from pimem_index import db, journal
from pimem_index.locations import Locations
from pimem_index.redaction import redact
from pimem_index.redaction.parts import redact_without
from pimem_index.search.reread import (
    JOURNAL_HEAD_COLUMNS,
    REDACT_MARGIN,
    EntryRow,
    JournalHead,
    entry_json,
    nodes_between,
    redacted_head,
    reread_entry,
    reread_line,
    select_entries,
    unavailable_reason,
    unavailable_text,
)

# A result's first line and a call's main argument, at most (characters, on one line).
LINE_CHARS = 160
# An entry around another, at most (characters of its redacted text, its labels left out).
AROUND_CHARS = 600


def call_keys(conn: db.Connection, locations: Locations, row: EntryRow) -> dict:
    """`outcome` and `result` for a tool call's hit, `call` for a tool result's, `outcome` for a
    bash run's; {} for any other entry, or when the other half is not indexed (yet)."""
    if row.kind == "assistant" and row.tool:
        return _outcome_of_call(conn, locations, row)
    if row.kind == "tool_result":
        return _call_of_result(conn, locations, row)
    if row.kind == "bash":
        code = conn.execute("SELECT exit_code FROM entries WHERE rowid = ?", (row.rowid,)).fetchone()
        if code is not None and code[0] is not None:
            return {"outcome": outcome(0, code[0])}
    return {}


def outcome(is_error: int | None, exit_code: int | None) -> str:
    """`exit N` for a non-zero exit, else `error` or `ok`."""
    if exit_code:
        return f"exit {exit_code}"
    return "error" if is_error else "ok"


def _outcome_of_call(conn, locations: Locations, row: EntryRow) -> dict:
    found = conn.execute(
        "SELECT result_rowid, is_error FROM tool_calls WHERE entry_rowid = ? AND result_rowid IS NOT NULL "
        "ORDER BY rowid LIMIT 1",
        (row.rowid,),
    ).fetchone()
    if found is None:
        return {}
    results = select_entries(conn, "e.rowid = ?", [found[0]])
    entry = reread_entry(conn, results[0], locations) if results else None
    if entry is None:
        return {"outcome": outcome(found[1], None)}
    code = journal.exited_with(entry.text) if found[1] else None
    return {"outcome": outcome(found[1], code), "result": first_line(entry.text)}


def _call_of_result(conn, locations: Locations, row: EntryRow) -> dict:
    found = conn.execute(
        "SELECT entry_rowid, call_id, tool FROM tool_calls WHERE result_rowid = ? ORDER BY rowid LIMIT 1", (row.rowid,)
    ).fetchone()
    if found is None:
        return {}
    calls = select_entries(conn, "e.rowid = ?", [found[0]])
    line = reread_line(conn, calls[0], locations) if calls else None
    called = journal.call_arguments(line[0], found[1]) if line else None
    tool = found[2] or (called[0] if called else "") or "?"
    main = journal.main_argument(called[1]) if called else None
    if main is None:
        return {"call": tool}
    key, value = main
    shown = redact_without(f"{key}: {value}", [(0, len(key) + 2)])  # the key as context for the rules
    return {"call": f"{tool}: {_one_line(shown)}"}


def first_line(text: str) -> str:
    """A text's first non-empty line, redacted, on one line and cut to LINE_CHARS."""
    for line in text.splitlines():
        if line.strip():
            return _one_line(redact(line[: LINE_CHARS * 4]))
    return ""


def _one_line(text: str) -> str:
    shown = " ".join(text.split())
    return shown if len(shown) <= LINE_CHARS else shown[: LINE_CHARS - 2].rstrip() + " …"


# ---- the entries around an entry ---------------------------------------------------------------


# A journal's entries in the order they are written in it (through entries_file).
FILE_ENTRIES = "SELECT rowid, id, parent_id, offset, length FROM entries WHERE file_id = ? ORDER BY offset"


def around(conn: db.Connection, locations: Locations, row: EntryRow, n: int) -> list[dict]:
    """The `n` entries before `row` on its branch and the `n` after (first children), in order, each
    with its keys, its call keys and `text`: its redacted text without labels, cut to AROUND_CHARS."""
    if n <= 0:
        return []
    refs = conn.execute(FILE_ENTRIES, (row.file_id,)).fetchall()
    parent: dict[str, str | None] = {r[1]: r[2] for r in refs}
    rowids = {r[1]: r[0] for r in refs}
    if any(p is not None and p not in parent for p in parent.values()):
        _add_nodes(conn, locations, row.file_id, refs, parent)
    children: dict[str | None, list[str]] = {}
    for child, up in parent.items():
        children.setdefault(up, []).append(child)
    before: list[int] = []
    at = parent.get(row.id)
    while at is not None and len(before) < n:
        if at in rowids:
            before.append(rowids[at])
        at = parent.get(at)
    after: list[int] = []
    at = row.id
    while len(after) < n and children.get(at):
        at = children[at][0]
        if at in rowids:
            after.append(rowids[at])
    wanted = [*reversed(before), *after]
    if not wanted:
        return []
    rows = {r.rowid: r for r in select_entries(conn, f"e.rowid IN ({','.join('?' * len(wanted))})", wanted)}
    sides = ["before"] * len(before) + ["after"] * len(after)
    return [
        {**_around_entry(conn, locations, rows[r]), "side": side}
        for r, side in zip(wanted, sides, strict=True)
        if r in rows
    ]


def _add_nodes(conn, locations: Locations, file_id: int, refs: list, parent: dict) -> None:
    """The tree's lines that are not entries (settings, labels), read from the journal, into `parent`."""
    head = conn.execute(f"SELECT {JOURNAL_HEAD_COLUMNS} FROM files WHERE id = ?", (file_id,)).fetchone()
    if head is None:
        return
    jf = JournalHead._make(head)
    gaps, start = [], 0
    for i, (_rowid, _id, _parent, offset, length) in enumerate(refs):
        gaps.append((i, start, offset))
        start = offset + length + 1
    gaps.append((len(refs), start, jf.cursor))
    for _key, node in nodes_between(locations, jf, gaps):
        if node.id and node.id not in parent:
            parent[node.id] = node.parent_id


def _around_entry(conn, locations: Locations, row: EntryRow) -> dict:
    entry = reread_entry(conn, row, locations)
    data = {**entry_json(row), **call_keys(conn, locations, row)}
    if entry is None:
        data["text"] = unavailable_text(unavailable_reason(row, locations))
        return data
    text = entry.text
    if entry.labels:
        clean = redact_without(text, entry.labels, 0, min(len(text), AROUND_CHARS + REDACT_MARGIN))
    else:
        clean = redacted_head(text, AROUND_CHARS + 1)
    data["text"] = clean if len(clean) <= AROUND_CHARS else clean[:AROUND_CHARS].rstrip() + " …"
    return data
