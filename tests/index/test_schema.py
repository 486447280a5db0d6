"""The index as a user's sqlite-utils sees it: the contract's tables, view and columns, and no column of text."""

from __future__ import annotations

import json

import sqlite_utils

from pimem_index import store

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


def selected_columns(index: sqlite_utils.Database, table: str) -> set[str]:
    """The columns `SELECT *` gives: a table's stored and computed (generated) columns."""
    return {d[0] for d in index.execute(f"SELECT * FROM [{table}] LIMIT 0").description}


def test_the_index_offers_the_contracts_tables_view_and_columns(world, locations):
    index = sqlite_utils.Database(str(locations.db_path))
    for table, columns in CONTRACT_COLUMNS.items():
        assert index[table].exists(), table
        assert columns <= selected_columns(index, table), (table, columns - selected_columns(index, table))
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


def test_an_entrys_time_is_stored_as_epoch_milliseconds_and_read_as_the_journals_iso_text(world, locations):
    index = sqlite_utils.Database(str(locations.db_path))
    written = {}
    for journal in (world["a"], world["b"]):
        for line in journal.path.read_text().splitlines():
            obj = json.loads(line)
            if obj.get("type") != "session":
                written[obj["id"]] = obj["timestamp"]
    rows = list(index.query("SELECT id, ts, typeof(ts) AS stored, timestamp FROM entries"))
    assert rows and {r["id"]: r["timestamp"] for r in rows} == written
    assert {r["stored"] for r in rows} == {"integer"}
    assert all(store.ts_text(r["ts"]) == r["timestamp"] for r in rows)
    stored = {c.name for c in index["entries"].columns}  # sqlite-utils lists stored columns only
    assert "ts" in stored and not {"timestamp", "role"} & stored


def test_an_entrys_role_follows_from_its_kind_and_takes_no_bytes(world, locations):
    index = sqlite_utils.Database(str(locations.db_path))
    roles = {r["kind"]: r["role"] for r in index.query("SELECT DISTINCT kind, role FROM entries")}
    assert roles == {
        "user": "user", "assistant": "assistant", "tool_result": "toolResult", "bash": "bashExecution",
        "compaction": None, "branch_summary": None,
    }  # fmt: skip
    assert "role" not in {c.name for c in index["entries"].columns}
