"""Forgetting takes entries out of every result at once, and outlives the disposable index."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.indexed import vocab
from support.passes import Watch, threaded_or_bulk

from pimem_index import db, store
from pimem_index.cli import cli
from pimem_index.errors import UserError
from pimem_index.index import forgotten
from pimem_index.index.indexer import index_all, rebuild
from pimem_index.index.settings import IndexSettings
from pimem_index.manage import forget
from pimem_index.manage.status import status as index_status
from pimem_index.search import query


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
    path = locations.memory_dir / forgotten.FILE_NAME
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


# ---- a forgotten session is gone from every table, rebuild or not ----------------------------------


def every_row(db_path) -> str:
    """Every row of every table and view of the index (not the term index's own tables), as text."""
    conn = db.connect(str(db_path), readonly=True)
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'entries_fts%' AND sql NOT LIKE 'CREATE VIRTUAL%'"
            )
        ]
        assert {"files", "meta", "entries", "sessions", "forgotten_journals"} <= set(names)
        return "\n".join(f"{name}: {row!r}" for name in names for row in conn.execute(f"SELECT * FROM {name}"))
    finally:
        conn.close()


def assert_forgotten_in_every_table(db_path, s) -> None:
    text = every_row(db_path)
    for secret in s["secrets"]:
        assert secret not in text
    for mark in s["kept_marks"]:
        assert mark in text


def test_a_forgotten_session_has_no_row_in_any_table_or_view(locations, forgotten_session):
    assert_forgotten_in_every_table(locations.db_path, forgotten_session)
    conn = store.open_index(locations.db_path)
    assert conn.execute("SELECT COUNT(*) FROM forgotten_journals").fetchone()[0] == 1
    assert "quokka" in vocab(conn) and "nobody" not in vocab(conn)


def test_a_forgotten_session_stays_out_of_every_table_after_pimem_rebuild(locations, forgotten_session):
    result = CliRunner().invoke(cli, ["rebuild"])
    assert result.exit_code == 0, result.output
    assert_forgotten_in_every_table(locations.db_path, forgotten_session)


@pytest.mark.parametrize("bulk", [False, True], ids=["parsing-thread", "parsing-processes"])
def test_a_forgotten_session_stays_out_of_every_table_after_the_index_is_deleted(locations, forgotten_session, bulk):
    store.delete_index_files(locations.db_path)
    fresh = store.open_index(locations.db_path)
    watch = Watch()
    report = index_all(fresh, locations, settings=threaded_or_bulk(bulk, after_batch=watch))
    assert set(watch.parsed_apart) == {bulk}  # the pass took the path under test
    assert report.files == 1 and report.bytes_read == forgotten_session["kept"].path.stat().st_size
    fresh.close()
    assert_forgotten_in_every_table(locations.db_path, forgotten_session)


def test_lines_appended_to_a_forgotten_journal_are_never_read(locations, forgotten_session):
    s = forgotten_session
    s["gone"].user("a later quokka line")
    added = s["kept"].path.stat().st_size
    s["kept"].user("a later wombat line")
    added = s["kept"].path.stat().st_size - added
    conn = store.open_index(locations.db_path)
    report = index_all(conn, locations)
    assert report.bytes_read == added and report.entries_added == 1
    assert "later" in vocab(conn) and conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == 2
    assert_forgotten_in_every_table(locations.db_path, s)
    figures = index_status(conn, locations)
    assert figures["journals_total"] == 2 and figures["journals_pending"] == 0
    assert query.indexing_state(conn, locations)["complete"] is True


def test_a_new_file_at_a_forgotten_journals_path_is_looked_at_again(locations, forgotten_session, new_journal):
    s = forgotten_session
    s["gone"].path.unlink()
    reborn = new_journal("Apps/newproj", path=s["gone"].path)
    reborn.user("a capybara in a new session")
    conn = store.open_index(locations.db_path)
    index_all(conn, locations)
    assert [r[0] for r in conn.execute("SELECT session_id FROM files WHERE path = ?", (str(reborn.path),))] == [
        reborn.session_id
    ]
    assert "capybara" in vocab(conn)
    assert conn.execute("SELECT COUNT(*) FROM forgotten_journals").fetchone()[0] == 0


def test_unforget_brings_a_forgotten_session_back_to_every_table(locations, forgotten_session):
    s = forgotten_session
    result = CliRunner().invoke(cli, ["unforget", "--session", s["gone"].session_id])
    assert result.exit_code == 0, result.output
    text = every_row(locations.db_path)
    for secret in s["secrets"] + s["kept_marks"]:
        assert secret in text
    conn = store.open_index(locations.db_path)
    assert conn.execute("SELECT COUNT(*) FROM forgotten_journals").fetchone()[0] == 0
    assert {s["gone"].session_id, s["kept"].session_id} == {
        r[0] for r in conn.execute("SELECT session_id FROM sessions")
    }


def test_forgetting_a_forgotten_session_again_says_it_is_already_forgotten(locations, forgotten_session):
    sid = forgotten_session["gone"].session_id
    result = CliRunner().invoke(cli, ["forget", "--session", sid])
    assert (
        result.exit_code == 1 and "already forgotten" in result.output and f"unforget --session {sid}" in result.output
    )
    other = CliRunner().invoke(cli, ["forget", "--session", "no-such-session"])
    assert other.exit_code == 1 and "no session no-such-session" in other.output


def test_a_session_forgotten_through_another_index_leaves_this_one_at_its_next_pass(
    conn, locations, session_pair, tmp_path
):
    """The decision is kept outside the index, so an index that still holds the session drops it."""
    s = session_pair
    other_db = tmp_path / "other.sqlite"
    other = store.open_index(other_db)
    index_all(other, locations)
    forget.forget_session(conn, locations, s["a"].session_id)
    index_all(other, locations, journals=[s["b"].path])
    assert {r[0] for r in other.execute("SELECT session_id FROM files")} == {s["b"].session_id}
    assert other.execute("SELECT COUNT(*) FROM forgotten_journals").fetchone()[0] == 1
    assert "gardenias" not in vocab(other) and "tulips" in vocab(other)


def test_a_large_forgotten_journal_does_not_make_every_pass_a_bulk_pass(locations, forgotten_session):
    """Bulk passes parse in parsing processes; a forgotten journal's bytes are never pending work."""
    s = forgotten_session
    s["gone"].user("quokka " * 20_000)
    s["kept"].user("a short wombat line")
    conn = store.open_index(locations.db_path)
    steady = Watch()
    index_all(conn, locations, settings=IndexSettings(bulk_bytes=50_000, after_batch=steady))
    assert steady.parsed_apart == [False]  # the kept journal's line, parsed in a thread
    s["kept"].user("wombat " * 20_000)
    bulk = Watch()
    index_all(conn, locations, settings=IndexSettings(bulk_bytes=50_000, after_batch=bulk))
    assert bulk.parsed_apart == [True]
    assert_forgotten_in_every_table(locations.db_path, s)
