"""Calls with their results: what a hit says beyond its text, and the entries around an entry.

A hit on an assistant entry that called tools carries its first call's `outcome` (`ok`, `error`,
`exit N`) and `result` (the result's first line, redacted); a hit on a tool result carries its
`call` (the tool and its main argument, redacted); a bash run's hit its outcome. `around` gives the
entries before and after an entry on its branch of its journal (parents up, first children down),
each a short labelled block, so an agent reads a whole exchange in one call.
"""

from __future__ import annotations

from typing import NamedTuple

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


# The assistant entries before a tool result where its call is looked for first (through tool_calls_entry):
# a call comes shortly before its result. Only past them is every call scanned (no index on result_rowid).
CALL_LOOKBACK = 16
# A journal's entries are read in rowid order, which is the order they are written in it: the writer gives a
# journal's new rows rowids past every rowid in the index, line by line (index.indexer._insert_rows). So
# entries_file (file_id, and so rowid) gives them in order with no sort of the journal's rows.
_CALL_COLUMNS = "entry_rowid, call_id, tool FROM tool_calls"
# The `k` assistant entries of a journal before an entry (file_id, rowid, k), nearest first.
ASSISTANTS_BEFORE = (
    "SELECT rowid FROM entries WHERE file_id = ? AND rowid < ? AND kind = 'assistant' ORDER BY rowid DESC LIMIT ?"
)
# The call of a tool result (file_id, rowid, CALL_LOOKBACK, rowid) among the assistant entries before it.
CALL_BEFORE = (
    f"SELECT {_CALL_COLUMNS} WHERE entry_rowid IN ({ASSISTANTS_BEFORE}) AND result_rowid = ? ORDER BY rowid LIMIT 1"
)


def _call_of_result(conn, locations: Locations, row: EntryRow) -> dict:
    found = conn.execute(CALL_BEFORE, (row.file_id, row.rowid, CALL_LOOKBACK, row.rowid)).fetchone()
    if found is None:
        found = conn.execute(
            f"SELECT {_CALL_COLUMNS} WHERE result_rowid = ? ORDER BY rowid LIMIT 1", (row.rowid,)
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


# A journal's entries in the order they are written in it (through entries_file: rowid order, see CALL_BEFORE).
_REF_COLUMNS = "rowid, id, parent_id, offset, length"
FILE_ENTRIES = f"SELECT {_REF_COLUMNS} FROM entries WHERE file_id = ? ORDER BY rowid"
# The `k` entries of a journal before an entry (file_id, rowid, k), nearest first, and from it on.
ENTRIES_BEFORE = f"SELECT {_REF_COLUMNS} FROM entries WHERE file_id = ? AND rowid < ? ORDER BY rowid DESC LIMIT ?"
ENTRIES_FROM = f"SELECT {_REF_COLUMNS} FROM entries WHERE file_id = ? AND rowid >= ? ORDER BY rowid LIMIT ?"


def around(conn: db.Connection, locations: Locations, row: EntryRow, n: int) -> list[dict]:
    """The `n` entries before `row` on its branch and the `n` after (first children), in order, each
    with its keys, its call keys and `text`: its redacted text without labels, cut to AROUND_CHARS.

    The branch is walked in a window of the journal's entries around `row` (and the settings and labels
    between them); only a walk that leaves the window reads the whole journal's tree (`_whole_tree`)."""
    if n <= 0:
        return []
    walked = _walk(_window_tree(conn, locations, row, n), row.id, n)
    if walked is None:
        walked = _walk(_whole_tree(conn, locations, row.file_id), row.id, n)
    before, after = walked or ([], [])
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


class _Tree(NamedTuple):
    """Part of a journal's tree: each id's parent, the rowids of the entries among them, each id's children
    (entries first, in journal order, then the other nodes), and whether it reaches the journal's start
    and end (whole: the journal's whole tree)."""

    parent: dict[str, str | None]
    rowids: dict[str, int]
    children: dict[str | None, list[str]]
    reaches_start: bool
    reaches_end: bool


# Entries on each side of an entry read for its window, besides a few per entry asked around it.
WINDOW_ENTRIES = 32


def _window_tree(conn, locations: Locations, row: EntryRow, n: int) -> _Tree:
    """The tree of the entries within a window around `row` in its journal, and the nodes between them."""
    k = WINDOW_ENTRIES + 4 * n
    earlier = conn.execute(ENTRIES_BEFORE, (row.file_id, row.rowid, k + 1)).fetchall()
    later = conn.execute(ENTRIES_FROM, (row.file_id, row.rowid, k + 1)).fetchall()
    reaches_start, reaches_end = len(earlier) <= k, len(later) <= k
    refs = [*reversed(earlier[:k]), *later[:k]]
    return _tree(conn, locations, row.file_id, refs, reaches_start, reaches_end)


def _whole_tree(conn, locations: Locations, file_id: int) -> _Tree:
    refs = conn.execute(FILE_ENTRIES, (file_id,)).fetchall()
    return _tree(conn, locations, file_id, refs, True, True)


def _tree(conn, locations: Locations, file_id: int, refs: list, reaches_start: bool, reaches_end: bool) -> _Tree:
    """The tree of these consecutive entries (rowid, id, parent_id, offset, length) of a journal, with the
    nodes read from the lines between them when some parent is not among the entries; each id's children
    in journal order."""
    parent: dict[str, str | None] = {r[1]: r[2] for r in refs}
    rowids = {r[1]: r[0] for r in refs}
    nodes: dict[int, list[tuple[str, str | None]]] = {}  # the nodes before refs[i], by i
    if any(p is not None and p not in parent for p in parent.values()):
        nodes = _nodes(conn, locations, file_id, refs, reaches_start, reaches_end)
    children: dict[str | None, list[str]] = {}
    for i in range(len(refs) + 1):
        for node_id, up in nodes.get(i, ()):
            if node_id not in parent:  # an entry's id is the entry's
                parent[node_id] = up
                children.setdefault(up, []).append(node_id)
        if i < len(refs) and rowids[refs[i][1]] == refs[i][0]:
            children.setdefault(refs[i][2], []).append(refs[i][1])
    return _Tree(parent, rowids, children, reaches_start, reaches_end)


def _walk(tree: _Tree, entry_id: str, n: int) -> tuple[list[int], list[int]] | None:
    """The rowids of the `n` entries before the entry (parents up) and the `n` after (first children
    down); None when the walk leaves a window that does not reach the journal's start or end."""
    before: list[int] = []
    at = tree.parent.get(entry_id)
    while at is not None and len(before) < n:
        if at not in tree.parent and not tree.reaches_start:
            return None  # an ancestor before the window
        if at in tree.rowids:
            before.append(tree.rowids[at])
        at = tree.parent.get(at)
    after: list[int] = []
    at = entry_id
    while len(after) < n:
        below = tree.children.get(at)
        if not below:
            if not tree.reaches_end:
                return None  # a child may come after the window
            break
        at = below[0]
        if at in tree.rowids:
            after.append(tree.rowids[at])
    return before, after


def _nodes(
    conn, locations: Locations, file_id: int, refs: list, reaches_start: bool, reaches_end: bool
) -> dict[int, list[tuple[str, str | None]]]:
    """(id, parent id) of the tree's lines that are not entries (settings, labels) before each of these
    entries, by its place in `refs` (and after the last, at len(refs), when they reach the journal's end;
    before the first when they reach its start), read from the journal."""
    head = conn.execute(f"SELECT {JOURNAL_HEAD_COLUMNS} FROM files WHERE id = ?", (file_id,)).fetchone()
    if head is None or not refs:
        return {}
    jf = JournalHead._make(head)
    gaps, start = [], 0
    for i, (_rowid, _id, _parent, offset, length) in enumerate(refs):
        if i or reaches_start:
            gaps.append((i, start, offset))
        start = offset + length + 1
    if reaches_end:
        gaps.append((len(refs), start, jf.cursor))
    found: dict[int, list[tuple[str, str | None]]] = {}
    for key, node in nodes_between(locations, jf, gaps):
        if node.id:
            found.setdefault(key, []).append((node.id, node.parent_id))
    return found


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
