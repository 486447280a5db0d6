"""No line stops indexing, and whatever goes wrong in one journal stays with that journal.

Hostile lines (nested deeper than the parsers read, numbers no 64-bit column holds) are
counted malformed and skipped on every path: `pimem index` (a parsing thread or parsing
processes), `pimem search` catching up, and the API's `journal=`. A journal that fails for
another reason is recorded (`pimem status`, the overview page), retried later, and never
stops the other journals, the pass or `pimem index --watch`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from pimem_index import indexer, parsing, store
from pimem_index.cli import cli
from pimem_index.indexer import index_all, index_journal

from datasette_pi_memory.serve import make_token
from test_plugin import bearer, make_datasette

DEEP = 1025  # one level deeper than orjson reads; the standard library raises RecursionError


def deep_value(depth: int = DEEP) -> str:
    return '{"a":' * depth + '"x"' + "}" * depth


def hostile_journal(new_journal, project: str = "Apps/hostile"):
    """A journal with good lines around hostile ones, as Node's JSON.stringify writes them."""
    j = new_journal(project)
    first = j.user("before the hostile lines: walrus")
    j.append_bytes(b'{"type":"message","id":"deep0001","parentId":null,"message":{"role":"assistant","content":'
                   b'[{"type":"toolCall","id":"t1","name":"bash","arguments":{"plan":'
                   + deep_value().encode() + b'}}]}}\n')
    j.append_bytes(b'{"type":"custom","id":"deep0002","customType":"ext","data":' + deep_value().encode() + b"}\n")
    j.append_bytes(json.dumps({"type": "compaction", "id": "huge0001", "summary": "huge tokens",
                               "tokensBefore": 2 ** 63}).encode() + b"\n")
    last = j.user("after the hostile lines: capybara")
    return j, [first, last]


def good_journals(new_journal, n: int = 3) -> list:
    journals = []
    for k in range(n):
        j = new_journal(f"Apps/good{k}")
        j.user(f"good journal {k} mentions the heron")
        j.assistant(f"answer {k}", tool_calls=[("read", {"path": f"src/{k}.py"})])
        journals.append(j)
    return journals


def entry_ids(conn, path=None) -> set[str]:
    sql = "SELECT e.id FROM entries e JOIN files f ON f.id = e.file_id"
    rows = conn.execute(sql + " WHERE f.path = ?", (str(path),)) if path else conn.execute(sql)
    return {r[0] for r in rows}


def run(*args, env=None):
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=True)
    return result


def use_parsing_processes(monkeypatch, processes: int = 2) -> None:
    """Every backfill counts as bulk, so it parses in parsing processes (public knobs only)."""
    monkeypatch.setattr(indexer, "COMPACT_AFTER_BYTES", 1)
    monkeypatch.setattr(parsing, "process_count", lambda: processes)


# ---- hostile lines are malformed, on every path ---------------------------------------------


@pytest.mark.parametrize("bulk", [False, True], ids=["thread", "processes"])
def test_pimem_index_skips_a_1025_deep_line_and_indexes_everything_else(
        locations, conn, new_journal, monkeypatch, parsing_processes, bulk):
    hostile, kept = hostile_journal(new_journal)
    others = good_journals(new_journal)
    if bulk:
        use_parsing_processes(monkeypatch)
    result = run("index", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["malformed_lines"] == 3 and report["failed"] == 0
    assert bool(parsing_processes) == bulk  # the pass took the path under test
    assert entry_ids(conn, hostile.path) == set(kept)
    assert not entry_ids(conn, hostile.path) & {"deep0001", "deep0002", "huge0001"}
    for j in others:
        assert len(entry_ids(conn, j.path)) == 2
    again = run("index", "--json")  # a rerun is clean: nothing left, nothing fails
    assert again.exit_code == 0, again.output
    assert json.loads(again.output) | {"seconds": 0} == {
        "files": 0, "entries_added": 0, "bytes_read": 0, "seconds": 0, "malformed_lines": 0,
        "reindexed": 0, "removed": 0, "failed": 0}


def test_a_header_whose_version_no_64_bit_column_holds_is_malformed_and_the_entries_are_kept(
        locations, conn, new_journal):
    j = new_journal(header=False)
    j.header(version=2 ** 63)
    kept = j.user("the entries of a journal with a hostile header stay")
    result = run("index", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["malformed_lines"] == 1
    assert entry_ids(conn, j.path) == {kept}
    assert conn.execute("SELECT version, session_id FROM files").fetchone() == (None, None)


def test_pimem_search_catches_up_over_a_hostile_journal(locations, conn, new_journal, home):
    hostile, _kept = hostile_journal(new_journal)
    result = run("search", "capybara", "--scope", "global", "--json")
    assert result.exit_code == 0, result.output
    hits = json.loads(result.output)["results"]
    assert [h["journal"] for h in hits] == [str(hostile.path)]
    assert "walrus" not in json.dumps(hits) and "huge tokens" not in json.dumps(hits)


@pytest.fixture
def token(locations) -> str:
    return make_token(locations)


@pytest.mark.asyncio
async def test_the_api_indexes_a_hostile_journal_named_by_journal_and_answers_json(
        locations, conn, new_journal, token):
    hostile, kept = hostile_journal(new_journal)
    ds = make_datasette(locations)
    await ds.invoke_startup()
    try:
        res = await ds.client.get(f"/-/pi-memory/api/search?q=capybara&scope=session&journal={hostile.path}",
                                  **bearer(token))
        assert res.status_code == 200, res.text
        assert res.headers["content-type"].startswith("application/json")
        assert [h["id"] for h in res.json()["results"]] == [kept[1]]
        assert "deep0001" not in res.text
    finally:
        await ds.invoke_shutdown()
    assert conn.execute("SELECT malformed FROM files WHERE path = ?", (str(hostile.path),)).fetchone() == (3,)


# ---- a journal that fails is contained, recorded and retried --------------------------------


def unencodable_journal(sessions_dir, marker: str = "osprey") -> bytes:
    """A journal whose file name is not UTF-8 (bytes 0xff): SQLite's TEXT cannot hold its path."""
    folder = os.fsencode(sessions_dir / "--bytes--")
    os.makedirs(folder, exist_ok=True)
    path = folder + b"/2026-03-15T22-40-18-123Z_\xff.jsonl"
    with open(path, "wb") as fh:
        fh.write(json.dumps({"type": "session", "version": 3, "id": "bytes-session", "cwd": "/tmp/b"}).encode()
                 + b"\n" + json.dumps({"type": "message", "id": "byte0001",
                                       "message": {"role": "user", "content": marker}}).encode() + b"\n")
    return path


@pytest.mark.parametrize("bulk", [False, True], ids=["thread", "processes"])
def test_a_journal_that_fails_is_recorded_and_the_others_of_its_group_are_indexed(
        locations, conn, sessions_dir, new_journal, monkeypatch, parsing_processes, bulk):
    others = good_journals(new_journal)  # small journals: written in one transaction with it
    unencodable_journal(sessions_dir)
    if bulk:
        use_parsing_processes(monkeypatch)
    result = run("index")
    assert result.exit_code == 0, result.output
    assert "Could not index 1 journals" in result.output
    assert bool(parsing_processes) == bulk
    for j in others:
        assert len(entry_ids(conn, j.path)) == 2
    assert "byte0001" not in entry_ids(conn)
    status = run("status", "--json")
    failed = json.loads(status.output)["journals_failed"]
    assert [f["path"] for f in failed] == [str(sessions_dir / "--bytes--" / "2026-03-15T22-40-18-123Z_\\xff.jsonl")]
    assert failed[0]["reason"].startswith("UnicodeEncodeError: ") and failed[0]["at"]
    text = run("status").output
    assert "Failed:    " in text and "\\xff.jsonl: UnicodeEncodeError" in text
    assert set(json.loads(status.output)) >= {"sessions", "entries", "summaries", "indexed_bytes", "journals_total",
                                              "journals_pending", "db_bytes", "schema_version"}


def test_a_large_journal_that_fails_midway_keeps_what_it_wrote_and_the_pass_goes_on(
        locations, conn, new_journal, monkeypatch):
    from pimem_index import reading

    monkeypatch.setattr(reading, "BATCH_ENTRIES", 4)  # every journal comes in several batches
    others = good_journals(new_journal)
    big = new_journal("Apps/big")
    for k in range(10):
        big.user(f"line {k}")
    with store.db.write(conn):  # another tool edited the index: this journal's tail offset is text
        index_all(conn, locations)
        conn.execute("UPDATE files SET tail_offset = 'edited' WHERE path = ?", (str(big.path),))
    added = big.user("appended after the edit")
    for j in others:
        j.user("a new line in a good journal")
    report = index_all(conn, locations)
    assert report.failed == 1 and report.entries_added == 3
    assert added not in entry_ids(conn, big.path) and len(entry_ids(conn, big.path)) == 10
    assert all(len(entry_ids(conn, j.path)) == 3 for j in others)
    (failed,) = indexer.failed_journals(conn)
    assert failed["path"] == str(big.path) and failed["reason"].startswith("TypeError: ")


@pytest.mark.parametrize("bulk", [False, True], ids=["thread", "processes"])
def test_a_journal_whose_reading_fails_in_a_parsing_process_comes_back_as_a_failure(
        locations, conn, new_journal, monkeypatch, parsing_processes, bulk):
    others = good_journals(new_journal, n=4)
    edited = others.pop(1)
    index_all(conn, locations)
    with store.db.write(conn):  # another tool edited the index: this journal's tail offset is text
        conn.execute("UPDATE files SET tail_offset = 'edited' WHERE path = ?", (str(edited.path),))
    edited.user("appended after the edit")
    fresh = [j.user("a fresh line") for j in others]
    if bulk:
        use_parsing_processes(monkeypatch)
    report = index_all(conn, locations)
    assert bool(parsing_processes) == bulk
    assert report.failed == 1 and report.entries_added == 3
    assert set(fresh) <= entry_ids(conn)
    assert [f["path"] for f in indexer.failed_journals(conn)] == [str(edited.path)]


def test_index_journal_records_a_failure_instead_of_raising_it(locations, conn, new_journal):
    j = new_journal()
    j.user("first")
    index_journal(conn, j.path)
    with store.db.write(conn):
        conn.execute("UPDATE files SET tail_offset = 'edited'")
    j.user("second")
    report = index_journal(conn, j.path)
    assert report.failed == 1 and report.entries_added == 0
    assert [f["path"] for f in indexer.failed_journals(conn)] == [str(j.path)]


def test_a_failed_journal_is_held_back_until_its_retry_time_and_cleared_once_it_indexes(
        locations, conn, new_journal):
    j = new_journal()
    j.user("first")
    index_all(conn, locations)
    offset = conn.execute("SELECT tail_offset FROM files").fetchone()[0]
    with store.db.write(conn):
        conn.execute("UPDATE files SET tail_offset = 'edited'")
    second = j.user("second")
    assert index_all(conn, locations).failed == 1
    retry_at = conn.execute("SELECT failures, retry_at FROM journal_errors").fetchone()
    assert retry_at[0] == 1 and retry_at[1] >= time.time() + indexer.RETRY_FIRST_SECONDS - 5
    assert index_all(conn, locations).failed == 0  # held back: not parsed again every pass
    assert conn.execute("SELECT failures FROM journal_errors").fetchone() == (1,)
    with store.db.write(conn):  # its retry time came: tried again, failed again, waits twice as long
        conn.execute("UPDATE journal_errors SET retry_at = 0")
    assert index_all(conn, locations).failed == 1
    failures, retry_at = conn.execute("SELECT failures, retry_at FROM journal_errors").fetchone()
    assert failures == 2 and retry_at >= time.time() + 2 * indexer.RETRY_FIRST_SECONDS - 5
    with store.db.write(conn):  # the index is repaired; naming the journal tries it at once
        conn.execute("UPDATE files SET tail_offset = ?", (offset,))
    assert run("index", str(j.path)).exit_code == 0
    assert second in entry_ids(conn)
    assert indexer.failed_journals(conn) == []


def test_a_failed_journal_that_is_gone_is_forgotten(locations, conn, sessions_dir):
    path = unencodable_journal(sessions_dir)
    assert index_all(conn, locations).failed == 1
    assert len(indexer.failed_journals(conn)) == 1
    os.remove(path)
    index_all(conn, locations)
    assert indexer.failed_journals(conn) == []


@pytest.mark.asyncio
async def test_the_overview_page_lists_failed_journals_for_root_only(locations, conn, sessions_dir, new_journal,
                                                                      token):
    new_journal().user("a good one")
    unencodable_journal(sessions_dir)
    index_all(conn, locations)
    ds = make_datasette(locations)
    await ds.invoke_startup()
    try:
        page = await ds.client.get("/-/pi-memory", actor={"id": "root"})
        assert page.status_code == 200
        assert "1 journal could not be indexed" in page.text and "\\xff.jsonl" in page.text
        status = await ds.client.get("/-/pi-memory/api/status", **bearer(token))
        assert status.status_code == 200 and status.json()["journals_failed"] == []  # names another project
        root_status = await ds.client.get("/-/pi-memory/api/status", actor={"id": "root"})
        assert len(root_status.json()["journals_failed"]) == 1
    finally:
        await ds.invoke_shutdown()


# ---- the watch loop goes on ---------------------------------------------------------------


def test_watch_logs_a_pass_that_stopped_in_one_line_and_goes_on(tmp_path, locations, conn, new_journal):
    j = new_journal()
    j.user("already indexed")
    index_all(conn, locations)
    fresh = j.user("written while another writer held the index")
    script = (
        "import sys\n"
        "from pimem_index import db\n"
        "db.BUSY_TIMEOUT_MS = 50  # a pass gives up on a locked index at once instead of after 30 s\n"
        "from pimem_index.cli import cli\n"
        f"cli(['index', '--watch', '--interval', '0.1', '--db', {str(locations.db_path)!r}])\n"
    )
    holder = store.open_index(locations.db_path)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the index: every pass stops
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = proc.stderr.readline()  # waits for the first failed pass (the test's timeout bounds it)
        assert line.startswith("pimem index --watch: a pass stopped (OperationalError: database is locked)")
        holder.execute("ROLLBACK")  # the other writer is done: the next pass goes on
        deadline = time.monotonic() + 30
        while fresh not in entry_ids(conn) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert fresh in entry_ids(conn)
        assert proc.poll() is None  # still watching: never exited for the supervisor to restart
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=30)
        holder.close()
    assert "Traceback" not in err
