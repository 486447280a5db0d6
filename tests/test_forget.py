"""Forgetting takes entries out of every result at once, and outlives the disposable index."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pimem_index import forget, query, store
from pimem_index.cli import cli
from pimem_index.errors import UserError
from pimem_index.indexer import index_all, rebuild

from test_indexer import vocab


@pytest.fixture
def session_pair(conn, locations, new_journal):
    a = new_journal("Apps/prjct")
    keep = a.user("kept note about gardenias")
    drop = a.tool_result("bash", "embarrassing output mentioning marigolds")
    summary = a.compaction("summary mentioning marigolds too")
    b = new_journal("Apps/prjct")
    other = b.user("another session about marigolds and tulips")
    index_all(conn, locations)
    return {"a": a, "b": b, "keep": keep, "drop": drop, "summary": summary, "other": other}


def found(conn, locations, text) -> set[str]:
    return {r["id"] for r in query.search(conn, locations, text, scope="global", limit=100)["results"]}


def test_forgotten_entry_leaves_search_read_and_terms_at_once(conn, locations, session_pair):
    s = session_pair
    forget.forget_entry(conn, locations, s["drop"])
    assert s["drop"] not in found(conn, locations, "marigolds")
    assert {s["summary"], s["other"]} <= found(conn, locations, "marigolds")
    assert query.read(conn, locations, s["drop"], scope="global")["status"] == "not_found"
    assert query.read(conn, locations, s["keep"], scope="global")["status"] == "ok"
    assert "embarrassing" not in vocab(conn)
    assert s["a"].path.read_text().count("embarrassing") == 1


def test_forgotten_session_leaves_every_result(conn, locations, session_pair):
    s = session_pair
    forget.forget_session(conn, locations, s["a"].session_id)
    assert found(conn, locations, "marigolds") == {s["other"]}
    assert query.summaries(conn, locations, None, scope="global")["results"] == []
    assert "gardenias" not in vocab(conn)
    sessions = {r[0] for r in conn.execute("SELECT session_id FROM sessions")}
    assert sessions == {s["b"].session_id}


def test_forgetting_survives_rebuild(conn, locations, session_pair):
    s = session_pair
    forget.forget_entry(conn, locations, s["drop"])
    forget.forget_session(conn, locations, s["b"].session_id)
    rebuild(locations)
    fresh = store.open_index(locations.db_path)
    assert found(fresh, locations, "marigolds") == {s["summary"]}
    assert "embarrassing" not in vocab(fresh) and "tulips" not in vocab(fresh)
    assert "gardenias" in vocab(fresh)


def test_forgetting_survives_deleting_the_index(conn, locations, session_pair):
    s = session_pair
    forget.forget_entry(conn, locations, s["drop"])
    conn.close()
    store.delete_index_files(locations.db_path)
    fresh = store.open_index(locations.db_path)
    index_all(fresh, locations)
    assert s["drop"] not in found(fresh, locations, "marigolds")
    assert "embarrassing" not in vocab(fresh)


def test_forgotten_entry_stays_forgotten_when_migration_changes_its_id(conn, locations, new_journal):
    j = new_journal(version=1)
    j.user("old entry about begonias")
    j.user("other old entry")
    index_all(conn, locations)
    forget.forget_entry(conn, locations, "L2")
    lines = j.path.read_bytes().splitlines()
    migrated = [json.dumps(json.loads(lines[0]) | {"version": 3}).encode()]
    for k, raw in enumerate(lines[1:]):
        migrated.append(json.dumps(json.loads(raw) | {"id": f"{k + 1:08x}", "parentId": None}).encode())
    j.path.write_bytes(b"\n".join(migrated) + b"\n")
    index_all(conn, locations)
    assert "begonias" not in vocab(conn)
    assert [r[0] for r in conn.execute("SELECT id FROM entries")] == ["00000002"]


def test_unforget_brings_entries_back(conn, locations, session_pair):
    s = session_pair
    forget.forget_entry(conn, locations, s["drop"])
    forget.forget_session(conn, locations, s["b"].session_id)
    forget.unforget(conn, locations, s["drop"], None)
    forget.unforget(conn, locations, None, s["b"].session_id)
    assert {s["drop"], s["other"], s["summary"]} <= found(conn, locations, "marigolds")
    assert "embarrassing" in vocab(conn)
    assert forget.listing(locations) == []


def test_ambiguous_id_needs_a_session(conn, locations, new_journal):
    for name in ("Apps/x", "Apps/y"):
        j = new_journal(name, version=1)
        j.user(f"same line number in {name}")
    index_all(conn, locations)
    with pytest.raises(UserError, match="several sessions"):
        forget.forget_entry(conn, locations, "L2")


def test_unknown_entry_and_session_are_errors(conn, locations, session_pair):
    with pytest.raises(UserError, match="no entry"):
        forget.forget_entry(conn, locations, "ffffffff")
    with pytest.raises(UserError, match="no session"):
        forget.forget_session(conn, locations, "not-a-session")
    with pytest.raises(UserError, match="is not forgotten"):
        forget.unforget(conn, locations, session_pair["keep"], None)


def test_decisions_file_is_append_only_and_private(conn, locations, session_pair):
    forget.forget_entry(conn, locations, session_pair["drop"])
    forget.unforget(conn, locations, session_pair["drop"], None)
    path = locations.memory_dir / forget.FILE_NAME
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [r["action"] for r in lines] == ["forget", "unforget"]
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_cli_forget_list_and_unforget(agent_dir, conn, locations, session_pair):
    runner = CliRunner()
    s = session_pair
    result = runner.invoke(cli, ["forget", s["drop"]])
    assert result.exit_code == 0 and "pimem unforget" in result.output
    listed = json.loads(runner.invoke(cli, ["forget", "--list", "--json"]).output)
    assert [r["entry_id"] for r in listed] == [s["drop"]]
    assert runner.invoke(cli, ["forget"]).exit_code == 1
    assert runner.invoke(cli, ["unforget", s["drop"]]).exit_code == 0
    assert "Nothing is forgotten" in runner.invoke(cli, ["forget", "--list"]).output
