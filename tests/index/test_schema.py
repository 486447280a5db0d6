"""The index as a user's sqlite-utils sees it: the contract's tables, view and columns, and no column of text."""

from __future__ import annotations

import sqlite_utils

CONTRACT_COLUMNS = {
    "files": set(),
    "entries": {
        "id", "session_id", "timestamp", "kind", "role", "tool", "chars", "model", "provider", "stop_reason",
        "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost", "is_error",
        "exit_code", "tokens_before",
    },
    "tool_calls": {"entry_rowid", "call_id", "tool", "path", "result_rowid", "is_error"},
}  # fmt: skip
SESSIONS_VIEW = {
    "session_id", "name", "cwd", "started", "last_timestamp", "entries", "input_tokens", "output_tokens",
    "cache_read_tokens", "cache_write_tokens", "cost", "models", "duration_s", "tool_calls", "errors",
}  # fmt: skip


def test_the_index_offers_the_contracts_tables_view_and_columns(world, locations):
    index = sqlite_utils.Database(str(locations.db_path))
    for table, columns in CONTRACT_COLUMNS.items():
        assert index[table].exists(), table
        assert columns <= set(index[table].columns_dict), (table, columns - set(index[table].columns_dict))
    assert "sessions" in index.view_names()
    assert SESSIONS_VIEW <= {c.name for c in index["sessions"].columns}
    assert index["entries"].count > 0


def test_no_table_of_the_index_holds_the_journals_text(world, locations):
    index = sqlite_utils.Database(str(locations.db_path))
    texts = {"text", "content", "body", "excerpt", "summary", "output", "command"}
    columns = {(t, c) for t in index.table_names() for c in index[t].columns_dict if c in texts}
    assert columns == {("entries_fts", "text")}  # the term index: contentless, so its column reads back NULL
    assert {row["text"] for row in index.query("SELECT text FROM entries_fts")} == {None}
    heron = world["ids"]["user"]
    rows = list(index.query("SELECT * FROM entries WHERE id = ?", [heron]))
    assert rows and not any("heron" in str(v).lower() for v in rows[0].values())
