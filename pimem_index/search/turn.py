"""The caller's current turn: what a search made from inside a Pi session never returns.

The Pi tool passes its session's journal (`journal=`), which is indexed before the query runs.
By then Pi has written the assistant message holding the tool call, and a search for the same
words would find that call first. The latest assistant message of that journal holding a
`memory_context` call, and the results of its calls (when written), are the caller's own turn.
"""

from __future__ import annotations

import os

from pimem_index import db

# The Pi tool's name (datasette_pi_memory/server/pi_extension/memory_context.ts, TOOL_NAME).
MEMORY_TOOL = "memory_context"


def current_turn(conn: db.Connection, journal_path: str | None) -> tuple[int, ...]:
    """The rowids of the caller's current turn in its journal: the latest assistant entry holding a
    memory_context call and the results of its calls; () without a journal or such a call."""
    if not journal_path:
        return ()
    row = conn.execute(
        "SELECT max(c.entry_rowid) FROM files f JOIN entries e ON e.file_id = f.id "
        "JOIN tool_calls c ON c.entry_rowid = e.rowid WHERE f.path = ? AND e.kind = 'assistant' AND c.tool = ?",
        (os.path.abspath(journal_path), MEMORY_TOOL),
    ).fetchone()
    if row is None or row[0] is None:
        return ()
    results = conn.execute(
        "SELECT result_rowid FROM tool_calls WHERE entry_rowid = ? AND result_rowid IS NOT NULL", (row[0],)
    )
    return (row[0], *sorted(r[0] for r in results))
