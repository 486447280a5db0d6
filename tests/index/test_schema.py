"""The index as a user's sqlite-utils sees it: the contract's tables, view and columns, and no column of text."""

from __future__ import annotations

import json

import pytest
import sqlite_utils
from support.passes import threaded_or_bulk

from pimem_index import db, journal, store
from pimem_index.index import indexer
from pimem_index.search import exchange, query

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
    for written_journal in (world["a"], world["b"]):
        for line in written_journal.path.read_text().splitlines():
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


def test_a_session_id_is_stored_as_a_uuids_16_bytes_and_read_as_its_text(world, locations):
    index = sqlite_utils.Database(str(locations.db_path))
    journals = {row["path"]: row["session_id"] for row in index.query("SELECT path, session_id FROM files")}
    for table, rowid in (("entries", "e.rowid"), ("tool_calls", "e.entry_rowid")):
        rows = list(
            index.query(
                f"SELECT e.session_id, typeof(e.sid) AS stored, length(e.sid) AS size, f.path FROM {table} e "
                f"JOIN entries x ON x.rowid = {rowid} JOIN files f ON f.id = x.file_id"
            )
        )
        assert rows and all(r["session_id"] == journals[r["path"]] for r in rows), table
        assert {(r["stored"], r["size"]) for r in rows} == {("blob", 16)}, table
        assert "session_id" not in {c.name for c in index[table].columns}, table


def test_a_session_id_that_is_not_a_lowercase_uuid_is_stored_as_it_is():
    for odd in ("session-one", "0C340C8B-0000-4000-8000-000000000000", "redacted-0123456789abcdef"):
        assert store.session_key(odd) == odd
    uuid = "019a6d3e-0c34-7c8b-9d2e-0123456789ab"
    assert store.session_key(uuid) == bytes.fromhex(uuid.replace("-", ""))
    conn = db.connect(":memory:")
    conn.execute(f"CREATE TABLE t (sid ANY, session_id TEXT GENERATED ALWAYS AS ({store.SESSION_TEXT}) VIRTUAL)")
    for value in (uuid, "session-one", None):
        conn.execute("INSERT INTO t (sid) VALUES (?)", (store.session_key(value),))
    assert [r[0] for r in conn.execute("SELECT session_id FROM t")] == [uuid, "session-one", None]


def test_an_entrys_kind_is_stored_as_its_number_and_read_as_its_name(world, locations):
    index = sqlite_utils.Database(str(locations.db_path))
    rows = list(index.query("SELECT id, k, typeof(k) AS stored, kind FROM entries"))
    by_id = {r["id"]: r for r in rows}
    for kind in ("user", "assistant", "tool_result", "bash", "compaction", "branch_summary"):
        entry = by_id[world["ids"][kind]]
        assert entry["kind"] == kind and entry["k"] == journal.KINDS.index(kind) and entry["stored"] == "integer"
    assert "kind" not in {c.name for c in index["entries"].columns}
    assert [r["n"] for r in index.query("SELECT count(*) AS n FROM entries WHERE kind = 'user'")] == [
        sum(r["kind"] == "user" for r in rows)
    ]


def test_an_entry_id_is_stored_in_4_bytes_and_read_and_looked_up_as_its_text(world, locations):
    index = sqlite_utils.Database(str(locations.db_path))
    lines = [json.loads(line) for line in world["a"].path.read_text().splitlines()][1:]
    rows = {
        r["id"]: r for r in index.query("SELECT id, parent_id, typeof(eid) AS stored, length(eid) AS size FROM entries")
    }
    for line in lines:
        assert rows[line["id"]]["parent_id"] == line["parentId"]
        assert (rows[line["id"]]["stored"], rows[line["id"]]["size"]) == ("blob", 4)
    assert not {"id", "parent_id"} & {c.name for c in index["entries"].columns}
    heron = world["ids"]["user"]
    found = query.read(index.conn, locations, heron, scope="global")
    assert found["status"] == "ok" and found["entry"]["id"] == heron
    assert query.read(index.conn, locations, heron[:7] + "z", scope="global")["status"] == "not_found"


def test_ids_that_look_like_numbers_keep_their_text(conn, locations, new_journal):
    j = new_journal(session_id="1e5")
    message = {"role": "user", "content": "numeric looking ids", "timestamp": 1773614400000}
    j.write_line(
        {"type": "message", "id": "12", "parentId": None, "timestamp": "2026-03-15T22:40:00.000Z", "message": message}
    )
    indexer.index_all(conn, locations)
    row = conn.execute("SELECT id, session_id, typeof(eid), typeof(sid) FROM entries").fetchone()
    assert row == ("12", "1e5", "text", "text")
    assert query.read(conn, locations, "12", scope="global")["entry"]["session_id"] == "1e5"


def test_a_journals_entries_are_found_through_an_index_of_their_file_alone(world, locations):
    index = sqlite_utils.Database(str(locations.db_path))
    assert [r["name"] for r in index.query("SELECT name FROM pragma_index_info('entries_file')")] == ["file_id"]
    plan = " ".join(r["detail"] for r in index.query("EXPLAIN QUERY PLAN " + exchange.FILE_ENTRIES, [1]))
    assert "USING INDEX entries_file (file_id=?)" in plan and "SCAN entries" not in plan
    file_id = index.execute("SELECT id FROM files WHERE path = ?", [str(world["a"].path)]).fetchone()[0]
    offsets = [r[3] for r in index.execute(exchange.FILE_ENTRIES, [file_id]).fetchall()]
    assert offsets == sorted(offsets) and len(offsets) == len(world["ids"])


@pytest.mark.parametrize("bulk", [False, True], ids=["threaded", "bulk"])
def test_pis_own_tools_providers_and_stop_reasons_are_stored_as_their_place_and_read_as_their_text(
    conn, locations, new_journal, bulk
):
    j = new_journal("Apps/labels")
    ours = j.assistant("looking", tool_calls=[("bash", {"command": "ls"}), ("read", {"path": "a.py"})])
    j.tool_result("bash", "a.py", call_id=j.call_ids[0])
    j.tool_result("read", "print(1)", call_id=j.call_ids[1])
    theirs = j.assistant("deploying", tool_calls=[("deploy", {"path": "prod"})], provider="scripted", stop="paused")
    j.tool_result("deploy", "done", call_id=j.call_ids[0])
    indexer.index_all(conn, locations, settings=threaded_or_bulk(bulk))
    columns = "tool, typeof(tool_key), provider, typeof(provider_key), stop_reason, typeof(stop_key)"
    rows = {r[0]: r[1:] for r in conn.execute(f"SELECT id, {columns} FROM entries WHERE kind = 'assistant'")}
    assert rows[ours] == ("bash,read", "text", "anthropic", "integer", "toolUse", "integer")
    assert rows[theirs] == ("deploy", "text", "scripted", "text", "paused", "text")
    results = conn.execute("SELECT tool, typeof(tool_key) FROM entries WHERE kind = 'tool_result' ORDER BY rowid")
    assert results.fetchall() == [("bash", "integer"), ("read", "integer"), ("deploy", "text")]
    calls = conn.execute("SELECT tool, typeof(tool_key) FROM tool_calls ORDER BY rowid").fetchall()
    assert calls == [("bash", "integer"), ("read", "integer"), ("deploy", "text")]
    assert conn.execute("SELECT count(*) FROM entries WHERE tool = 'read' OR provider = 'scripted'").fetchone() == (2,)
    stored = {r[1] for r in conn.execute("PRAGMA table_info(entries)")}  # the stored columns only
    assert {"tool_key", "provider_key", "stop_key"} <= stored and not {"tool", "provider", "stop_reason"} & stored


def test_a_label_is_stored_as_its_place_only_when_it_is_pis_own():
    for vocabulary in (store.TOOLS, store.PROVIDERS, store.STOP_REASONS):
        keys = store.label_keys(vocabulary)
        conn = db.connect(":memory:")
        conn.execute(
            f"CREATE TABLE t (key BLOB, label TEXT GENERATED ALWAYS AS ({store.label_text('key', vocabulary)}))"
        )
        labels = [*vocabulary, "0", "1", "custom_tool", "Read"]
        conn.executemany("INSERT INTO t (key) VALUES (?)", [(store.label_key(v, keys),) for v in labels])
        assert [r[0] for r in conn.execute("SELECT label FROM t ORDER BY rowid")] == labels
        places = [r[0] for r in conn.execute("SELECT key FROM t ORDER BY rowid")]
        assert places[: len(vocabulary)] == list(range(len(vocabulary)))
        assert places[len(vocabulary) :] == ["0", "1", "custom_tool", "Read"]


@pytest.mark.parametrize("bulk", [False, True], ids=["threaded", "bulk"])
def test_an_anthropic_call_id_is_stored_without_its_prefix_and_read_and_paired_as_its_text(
    conn, locations, new_journal, bulk
):
    anthropic, other = "toolu_01XFDUDYJgAACzvnptvVer6u", "call_0002"
    j = new_journal("Apps/calls")
    j.assistant("two calls", tool_calls=[("bash", {"command": "ls"}, anthropic), ("read", {"path": "b"}, other)])
    j.tool_result("bash", "b", call_id=anthropic)
    indexer.index_all(conn, locations, settings=threaded_or_bulk(bulk))
    j.tool_result("read", "text of b", call_id=other, is_error=True)  # paired in a later pass: by the stored key
    indexer.index_all(conn, locations)
    rows = conn.execute(
        "SELECT c.call_id, typeof(c.call_key), length(c.call_key), e.kind, c.is_error FROM tool_calls c "
        "JOIN entries e ON e.rowid = c.result_rowid ORDER BY c.rowid"
    ).fetchall()
    assert rows == [(anthropic, "blob", 22, "tool_result", 0), (other, "text", 9, "tool_result", 1)]
    assert conn.execute("SELECT count(*) FROM tool_calls WHERE call_id = ?", (anthropic,)).fetchone() == (1,)
    assert "call_id" not in {r[1] for r in conn.execute("PRAGMA table_info(tool_calls)")}


def test_a_plain_sqlite_reads_every_column_of_the_tables_and_the_view_as_pimem_does(world, locations):
    """The system's own SQLite (Python's sqlite3 module, no pimem function, possibly older): the generated
    columns use only built-in SQL, so `sqlite3 history.sqlite` reads what pimem reads."""
    import sqlite3 as plain

    ours = sqlite_utils.Database(str(locations.db_path))
    theirs = plain.connect(f"file:{locations.db_path}?mode=ro", uri=True)
    for name in ("files", "entries", "tool_calls", "sessions"):
        expected = [tuple(r.values()) for r in ours.query(f"SELECT * FROM [{name}] ORDER BY 1, 2")]
        read = theirs.execute(f"SELECT * FROM [{name}] ORDER BY 1, 2").fetchall()
        assert read and read == expected, name
    labels = theirs.execute("SELECT DISTINCT tool, provider, stop_reason FROM entries WHERE kind = 'assistant'")
    assert labels.fetchall() == [("bash", "anthropic", "toolUse")]
    assert theirs.execute("SELECT count(*) FROM tool_calls WHERE call_id LIKE 'toolu_%'").fetchone() == (1,)
