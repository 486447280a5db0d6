"""The incremental indexer: what becomes an entry and a term, and what survives bad input."""

from __future__ import annotations

import dataclasses
import gc
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest
from support.commands import start_pimem
from support.indexed import entry_count, snapshot, vocab
from support.passes import StopAfter, Watch, bulk_settings, small_batches, threaded_or_bulk
from support.pijournal import make_corpus

from pimem_index import store
from pimem_index.index import indexer, lease, parsing
from pimem_index.index.forgotten import Forgotten
from pimem_index.index.indexer import index_all, index_journal
from pimem_index.index.settings import IndexSettings
from pimem_index.manage.status import status as index_status

SECRET = "gh" + "p_" + "Zq8xK2mN4pR6tV9wY1bD3fH5jL7nQ0sU2xA4"


def full_session(j, marker: str = "walrus"):
    """One of every line type Pi writes."""
    u = j.user(f"find the {marker} config", images=1)
    j.model_change()
    j.thinking_level_change()
    j.assistant(
        f"Looking for {marker}.",
        thinking="I should grep first",
        signature="SIGNATUREPAYLOAD" + "A" * 2000,
        tool_calls=[("bash", {"command": f"grep -r {marker} ."})],
    )
    j.tool_result("bash", f"./conf/{marker}.yaml: enabled\ntoken: {SECRET}")
    j.bash("git status", "On branch main\nnothing to commit")
    j.custom_message("reminder", [{"type": "text", "text": "tests must pass"}])
    j.custom_state("ext-state", {"cursor": 3})
    j.label(u, "start")
    j.session_info("Config hunt")
    j.assistant(redacted_thinking="OPAQUEENCRYPTED", text="Done.")
    j.compaction(f"## Goal\nFound the {marker} config")
    j.branch_summary("Tried a different approach with zebras")
    return j


def test_every_line_type_becomes_the_right_entries(conn, locations, new_journal):
    j = full_session(new_journal())
    index_all(conn, locations)
    kinds = [r[0] for r in conn.execute("SELECT kind FROM entries ORDER BY offset")]
    assert kinds == ["user", "assistant", "tool_result", "bash", "custom", "assistant", "compaction", "branch_summary"]
    f = conn.execute("SELECT session_id, cwd, started, name, version, entry_count FROM files").fetchone()
    assert f == (j.session_id, j.cwd, f[2], "Config hunt", 3, 8)
    assert f[2].startswith(str(j.now.year))
    assert conn.execute("SELECT tokens_before FROM entries WHERE kind = 'compaction'").fetchone()[0] == 175004


@pytest.mark.parametrize("bulk", [False, True], ids=["thread", "processes"])
def test_a_missing_value_is_stored_as_null_never_as_its_stand_in(tmp_path, locations, new_journal, bulk):
    full_session(new_journal())
    conn = store.open_index(tmp_path / "nulls.sqlite")
    watch = Watch()
    index_all(conn, locations, settings=threaded_or_bulk(bulk, after_batch=watch))
    assert set(watch.parsed_apart) == {bulk}  # the pass took the path under test
    rows = {
        kind: (parent, role, tool, tokens)
        for kind, parent, role, tool, tokens in conn.execute(
            "SELECT kind, parent_id, role, tool, tokens_before FROM entries ORDER BY offset"
        )
    }
    assert rows["compaction"] == (rows["compaction"][0], None, None, 175004)
    assert rows["compaction"][0] is not None  # a parent, kept
    assert rows["tool_result"][1:] == ("toolResult", "bash", None)
    assert rows["user"][0] is None  # the first entry has no parent
    assert rows["user"][3] is None and rows["branch_summary"][3] is None
    for column in ("session_id", "parent_id", "timestamp", "role", "tool"):
        assert conn.execute(f"SELECT COUNT(*) FROM entries WHERE {column} = ''").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM entries WHERE tokens_before < 0").fetchone()[0] == 0


def test_images_signatures_and_redacted_reasoning_never_become_terms(conn, locations, new_journal):
    full_session(new_journal())
    index_all(conn, locations)
    terms = vocab(conn)
    assert "walrus" in terms and "image" in terms and "grep" in terms
    assert not any(t.startswith("signaturepayload") for t in terms)
    assert "opaqueencrypted" not in terms
    assert not any(t.startswith("ivborw0kggo") for t in terms)


def test_secret_in_tool_result_is_not_a_term(conn, locations, new_journal):
    full_session(new_journal())
    index_all(conn, locations)
    terms = vocab(conn)
    assert "enabled" in terms
    secret_tail = SECRET.split("_", 1)[1].lower()
    assert secret_tail not in terms
    assert SECRET.lower() not in terms


def test_version_1_journal_gets_line_number_ids(conn, locations, new_journal):
    j = new_journal(version=1)
    j.user("old style journal about penguins")
    j.assistant("penguins noted")
    j.compaction("penguin summary")
    index_all(conn, locations)
    ids = [r[0] for r in conn.execute("SELECT id FROM entries ORDER BY offset")]
    assert ids == ["L2", "L3", "L4"]
    assert conn.execute("SELECT version FROM files").fetchone()[0] == 1


def test_append_in_two_passes_with_partial_line_equals_one_pass(tmp_path, locations, new_journal):
    j = new_journal()
    j.user("first message about otters")
    j.assistant("otters reply")
    once = store.open_index(tmp_path / "once.sqlite")
    twice = store.open_index(tmp_path / "twice.sqlite")
    index_journal(twice, j.path)
    line = json.dumps(
        {
            "type": "message",
            "id": "deadbeef",
            "parentId": j.last_id,
            "timestamp": "2026-03-15T22:40:25.500Z",
            "message": {"role": "user", "content": "partial line about beavers"},
        }
    ).encode()
    j.append_bytes(line[:30])
    index_journal(twice, j.path)
    assert "beavers" not in vocab(twice)
    assert entry_count(twice) == 2
    j.append_bytes(line[30:] + b"\n")
    j.assistant("closing words")
    index_journal(twice, j.path)
    index_journal(once, j.path)
    assert snapshot(twice) == snapshot(once)
    assert "beavers" in vocab(once)


def test_unchanged_journal_is_skipped(conn, locations, new_journal):
    j = new_journal()
    j.user("hello")
    first = index_journal(conn, j.path)
    second = index_journal(conn, j.path)
    assert first.entries_added == 1 and first.files == 1
    assert second.entries_added == 0 and second.files == 0 and second.bytes_read == 0


def test_shrunk_journal_loses_its_old_terms(conn, locations, new_journal):
    j = new_journal()
    j.user("keep this aardvark")
    keep = j.path.stat().st_size
    j.assistant("drop this narwhal")
    index_all(conn, locations)
    assert "narwhal" in vocab(conn)
    with open(j.path, "r+b") as fh:
        fh.truncate(keep)
    report = index_journal(conn, j.path)
    assert report.reindexed == 1
    terms = vocab(conn)
    assert "narwhal" not in terms
    assert "aardvark" in terms
    assert entry_count(conn) == 1


def test_journal_rewritten_in_place_same_length_is_reindexed(conn, locations, new_journal):
    j = new_journal()
    j.user("original words")
    j.assistant("reply about chinchilla")
    index_all(conn, locations)
    data = j.path.read_bytes()
    j.path.write_bytes(data.replace(b"chinchilla", b"salamander"))
    assert len(j.path.read_bytes()) == len(data)
    index_journal(conn, j.path)
    terms = vocab(conn)
    assert "salamander" in terms
    assert "chinchilla" not in terms
    assert entry_count(conn) == 2


def test_journal_rewritten_longer_with_new_ids_is_reindexed(conn, locations, new_journal):
    j = new_journal(version=1)
    j.user("legacy text hedgehog")
    index_all(conn, locations)
    lines = j.path.read_bytes().splitlines()
    header = json.loads(lines[0])
    header["version"] = 3
    msg = json.loads(lines[1])
    msg.update({"id": "a1b2c3d4", "parentId": None})
    msg["message"]["content"] = "migrated text porcupine"
    j.path.write_bytes(b"\n".join(json.dumps(x).encode() for x in (header, msg)) + b"\n")
    index_journal(conn, j.path)
    assert [r[0] for r in conn.execute("SELECT id FROM entries")] == ["a1b2c3d4"]
    terms = vocab(conn)
    assert "porcupine" in terms and "hedgehog" not in terms


def test_rewrite_after_last_line_is_detected_by_tail_fingerprint(conn, locations, new_journal):
    j = new_journal()
    j.user("alpha one")
    j.user("omega two")
    index_all(conn, locations)
    data = j.path.read_bytes()
    j.path.write_bytes(data.replace(b"omega", b"gamma") + b'{"type":"label","id":"x"}\n')
    index_journal(conn, j.path)
    terms = vocab(conn)
    assert "gamma" in terms and "omega" not in terms


def test_deleted_journal_leaves_no_rows_and_no_terms(conn, locations, new_journal):
    keep = new_journal("Apps/keep")
    keep.user("kept capybara")
    gone = new_journal("Apps/gone")
    gone.user("deleted quokka")
    index_all(conn, locations)
    gone.path.unlink()
    report = index_all(conn, locations)
    assert report.removed == 1
    assert conn.execute("SELECT COUNT(*) FROM files WHERE path = ?", (str(gone.path),)).fetchone()[0] == 0
    assert entry_count(conn, gone.path) == 0
    terms = vocab(conn)
    assert "quokka" not in terms and "capybara" in terms


def test_malformed_lines_are_skipped_and_counted(conn, locations, new_journal):
    j = new_journal()
    j.user("before the junk")
    j.append_bytes(b'{"type":"message","id":"x",\n')
    j.append_bytes(b"[1,2]\n\n")
    j.user("after the junk")
    report = index_journal(conn, j.path)
    assert report.malformed == 2
    assert report.entries_added == 2
    assert conn.execute("SELECT malformed FROM files").fetchone()[0] == 2


def test_invalid_utf8_line_is_indexed_with_replacement(conn, locations, new_journal):
    j = new_journal()
    j.append_bytes(
        b'{"type":"message","id":"abcd1234","timestamp":"2026-03-15T22:40:25.500Z",'
        b'"message":{"role":"user","content":"caf\xe9 with mongoose"}}\n'
    )
    j.user("valid line")
    report = index_journal(conn, j.path)
    assert report.entries_added == 2 and report.malformed == 0
    assert "mongoose" in vocab(conn)


def test_twenty_megabyte_line_is_indexed(conn, locations, new_journal):
    j = new_journal()
    big = ("lorem ipsum dolor sit amet " * 800_000)[:20_000_000]
    j.tool_result("read", big + " needle_word_zebrafish")
    j.user("after the big one")
    report = index_journal(conn, j.path)
    assert report.entries_added == 2
    terms = vocab(conn)
    assert "zebrafish" in terms and "lorem" in terms
    assert conn.execute("SELECT MAX(length) FROM entries").fetchone()[0] > 20_000_000


def test_an_empty_journal_is_not_recorded_and_a_header_only_one_is(conn, locations, sessions_dir, new_journal):
    empty = sessions_dir / "--empty--" / "2026-01-01T00-00-00-000Z_x.jsonl"
    empty.parent.mkdir()
    empty.write_bytes(b"")
    header_only = new_journal("Apps/header")
    report = index_all(conn, locations)
    assert report.entries_added == 0
    row = conn.execute("SELECT session_id, cwd FROM files WHERE path = ?", (str(header_only.path),)).fetchone()
    assert row == (header_only.session_id, header_only.cwd)
    assert conn.execute("SELECT COUNT(*) FROM files WHERE path = ?", (str(empty),)).fetchone()[0] == 0
    header_only.user("now it has one")
    assert index_journal(conn, header_only.path).entries_added == 1


def test_second_header_line_is_tolerated(conn, locations, new_journal):
    j = new_journal()
    j.header()
    j.user("after a second header")
    report = index_journal(conn, j.path)
    assert report.entries_added == 1 and report.malformed == 0


def test_an_index_of_this_version_made_by_other_statements_is_rebuilt_and_one_made_by_these_kept(
    tmp_path, locations, new_journal
):
    path = tmp_path / "earlier.sqlite"
    conn = store.open_index(path)
    new_journal().user("indexed under this version's statements")
    index_all(conn, locations)
    conn.close()
    conn = store.open_index(path)
    assert entry_count(conn) == 1  # the same statements: kept as it is
    conn.execute("UPDATE meta SET value = 'another' WHERE key = ?", (store.SCHEMA_DIGEST_KEY,))
    conn.close()
    conn = store.open_index(path)  # schema 7 with other statements (an earlier build's tool column)
    assert store.schema_version(conn) == store.SCHEMA_VERSION and entry_count(conn) == 0
    assert store.get_meta(conn, store.SCHEMA_DIGEST_KEY) == store.schema_digest()
    index_all(conn, locations)
    assert entry_count(conn) == 1


def test_other_schema_version_is_rebuilt_not_misread(tmp_path, locations, new_journal):
    path = tmp_path / "old.sqlite"
    conn = store.open_index(path)
    j = new_journal()
    j.user("indexed under the old schema")
    index_all(conn, locations)
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    conn.close()
    conn = store.open_index(path)
    assert store.schema_version(conn) == store.SCHEMA_VERSION
    assert entry_count(conn) == 0
    index_all(conn, locations)
    assert entry_count(conn) == 1


def test_backfill_goes_newest_first(conn, locations, new_journal):
    order = []
    journals = []
    for i in range(3):
        j = new_journal(f"Apps/p{i}")
        j.user(f"session {i}")
        j.set_mtime(datetime.now(UTC) - timedelta(days=10 - i))
        journals.append(j)
    index_all(conn, locations, progress=lambda done, total, path: order.append(path))
    assert [str(p) for p in order] == [str(j.path) for j in reversed(journals)]


def test_lease_is_exclusive_until_it_expires(conn):
    assert lease.take_lease(conn, "a", seconds=60) is None
    assert lease.take_lease(conn, "b", seconds=60) == "a"
    assert lease.take_lease(conn, "a", seconds=60) is None
    conn.execute("UPDATE meta SET value = 'a@1' WHERE key = ?", (lease.LEASE_KEY,))
    assert lease.take_lease(conn, "b", seconds=60) is None
    lease.release_lease(conn, "b")
    assert store.get_meta(conn, lease.LEASE_KEY) is None


def test_a_lease_held_by_a_process_of_this_host_that_is_gone_is_taken_at_once(conn):
    here = socket.gethostname()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])

    def held_by(holder: str) -> str | None:
        with store.db.write(conn):
            store.set_meta(conn, lease.LEASE_KEY, f"{holder}@{time.time() + 60}")
        return lease.take_lease(conn, "me", seconds=60)

    try:
        assert held_by(f"{here}:{gone.pid}") is None
        assert held_by(f"{here}:{alive.pid}") == f"{here}:{alive.pid}"
        assert held_by(f"elsewhere:{gone.pid}") == f"elsewhere:{gone.pid}"  # another host's: wait for it
    finally:
        alive.kill()
        alive.wait()


def test_backfill_defers_to_a_live_lease_but_named_journals_still_index(conn, locations, new_journal):
    j = new_journal()
    j.user("lease test")
    lease.take_lease(conn, "other-process", seconds=60)
    report = index_all(conn, locations)
    assert report.lease_holder == "other-process" and report.entries_added == 0
    report = index_all(conn, locations, journals=[j.path])
    assert report.entries_added == 1


def test_two_indexers_at_once_lose_and_duplicate_nothing(tmp_path, locations, new_journal):
    journals = make_corpus(new_journal, sessions=12, turns=150)
    paths = [str(j.path) for j in journals]
    shared = tmp_path / "shared.sqlite"
    store.open_index(shared).close()
    procs = [start_pimem(["index", *paths], shared), start_pimem(["index", *reversed(paths)], shared)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    clean = store.open_index(tmp_path / "clean.sqlite")
    index_all(clean, locations, journals=paths)
    got = store.open_index(shared)
    dupes = got.execute("SELECT file_id, id, COUNT(*) FROM entries GROUP BY file_id, id HAVING COUNT(*) > 1").fetchall()
    assert dupes == []
    assert snapshot(got) == snapshot(clean)
    assert entry_count(got) == 12 * 150 * 3


def index_in_background(db_path, locations):
    """Start `pimem index` in a child process; once it has written rows, hold the write lock so
    the pass cannot finish before the caller signals it. The caller rolls back to let it go on."""
    store.open_index(db_path).close()
    proc = start_pimem(["index"], db_path)
    watcher = store.open_index(db_path)
    deadline = time.time() + 120
    while time.time() < deadline and watcher.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == 0:
        time.sleep(0.01)
    watcher.execute("BEGIN IMMEDIATE")
    assert proc.poll() is None, "the pass ended before the test held it: make the corpus larger"
    return proc, watcher


def test_indexer_killed_mid_pass_then_rerun_equals_clean_run(tmp_path, locations, new_journal):
    make_corpus(new_journal, sessions=20, turns=200)
    db_path = tmp_path / "killed.sqlite"
    proc, watcher = index_in_background(db_path, locations)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    watcher.execute("ROLLBACK")
    partial = watcher.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    assert 0 < partial < 20 * 200 * 3, "the kill should land mid-pass"
    watcher.close()
    conn = store.open_index(db_path)
    conn.execute("DELETE FROM meta WHERE key = ?", (lease.LEASE_KEY,))
    index_all(conn, locations)
    clean = store.open_index(tmp_path / "clean.sqlite")
    index_all(clean, locations)
    assert snapshot(conn) == snapshot(clean)


def test_killed_indexer_lease_expires_and_is_taken_over(conn, locations, new_journal):
    j = new_journal()
    j.user("orphaned lease")
    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (lease.LEASE_KEY, f"dead:1@{time.time() - 1}"))
    report = index_all(conn, locations)
    assert report.lease_holder is None and report.entries_added == 1


def fts_config(conn) -> dict:
    return dict(conn.execute("SELECT k, v FROM entries_fts_config").fetchall())


def test_bulk_build_defers_merges_then_compacts_and_restores_steady_merging(conn, locations, new_journal):
    """FTS5's automerge 0 means no merging while rows go in: here the value is the behaviour."""
    make_corpus(new_journal, sessions=3, turns=30)
    automerge = []
    index_all(
        conn,
        locations,
        settings=IndexSettings(
            bulk_bytes=10_000, after_batch=lambda batch: automerge.append(fts_config(conn).get("automerge"))
        ),
    )
    assert automerge and set(automerge) == {0}
    assert fts_config(conn)["automerge"] > 0, "merging again as lines trickle in"
    segments = conn.execute("SELECT COUNT(*) FROM entries_fts_idx WHERE segid > 0 GROUP BY segid").fetchall()
    assert len(segments) == 1, "compaction leaves one segment"


def cache_kib(conn) -> float:
    """The connection's page cache in KiB (SQLite gives it in KiB when negative, else in pages)."""
    size = conn.execute("PRAGMA cache_size").fetchone()[0]
    return -size if size < 0 else size * conn.execute("PRAGMA page_size").fetchone()[0] / 1024


def test_a_bulk_pass_writes_with_a_smaller_page_cache_then_gives_the_connection_its_own_back(
    conn, locations, new_journal
):
    """The parsing processes get the memory a bulk pass's appended pages do not need."""
    make_corpus(new_journal, sessions=3, turns=30)
    before = cache_kib(conn)
    during = []
    index_all(
        conn, locations, progress=lambda *a: during.append(cache_kib(conn)), settings=IndexSettings(bulk_bytes=10_000)
    )
    assert during and max(during) < before
    assert cache_kib(conn) == before
    j = new_journal()
    j.user("a steady pass keeps the connection's cache")
    during.clear()
    index_all(
        conn, locations, progress=lambda *a: during.append(cache_kib(conn)), settings=IndexSettings(bulk_bytes=10_000)
    )
    assert set(during) == {before}


def test_a_cold_bulk_build_sorts_the_entry_indexes_once_its_rows_are_in(conn, locations, new_journal):
    make_corpus(new_journal, sessions=3, turns=30)
    during = []
    index_all(
        conn,
        locations,
        progress=lambda *a: during.append(store.missing_entry_indexes(conn)),
        settings=IndexSettings(bulk_bytes=10_000),
    )
    assert during and all(missing == list(store.ENTRY_INDEXES) for missing in during)
    assert store.missing_entry_indexes(conn) == []
    plan = conn.execute("EXPLAIN QUERY PLAN SELECT rowid FROM entries WHERE eid = ?", (store.id_key("x"),)).fetchall()
    assert "entries_id" in str(plan)


def test_a_bulk_pass_over_an_index_with_entries_keeps_its_indexes(conn, locations, new_journal):
    j = new_journal()
    j.user("already indexed")
    index_all(conn, locations)
    make_corpus(new_journal, sessions=3, turns=30)
    during = []
    index_all(
        conn,
        locations,
        progress=lambda *a: during.append(store.missing_entry_indexes(conn)),
        settings=IndexSettings(bulk_bytes=10_000),
    )
    assert during and all(missing == [] for missing in during)


def test_a_cold_build_stopped_midway_leaves_its_indexes_or_the_next_pass_makes_them(conn, locations, new_journal):
    make_corpus(new_journal, sessions=3, turns=30)

    def interrupt(done, total, path):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        index_all(
            conn,
            locations,
            progress=interrupt,
            settings=IndexSettings(bulk_bytes=10_000, group_text_bytes=1, transaction_text_bytes=1),
        )
    assert 0 < entry_count(conn) and store.missing_entry_indexes(conn) == []
    with store.db.write(conn):  # as a SIGKILL during the build would leave them
        store.drop_entry_indexes(conn)
    j = new_journal()
    j.user("one more line")
    index_all(conn, locations)
    assert store.missing_entry_indexes(conn) == []


def test_a_build_killed_in_bulk_mode_heals_at_the_next_pass(conn, locations, new_journal):
    """FTS5's automerge 0 (no merging) is what a bulk build leaves behind: the value is the behaviour."""
    make_corpus(new_journal, sessions=2, turns=5)
    with pytest.raises(KeyboardInterrupt):
        index_all(conn, locations, settings=bulk_settings(after_batch=StopAfter(1)))
    assert fts_config(conn)["automerge"] == 0
    j = new_journal()
    j.user("small change")
    index_all(conn, locations)
    assert fts_config(conn)["automerge"] > 0


def test_unreadable_journal_is_skipped_and_the_rest_indexed(conn, locations, new_journal, monkeypatch):
    good = new_journal("Apps/good")
    good.user("readable entry")
    bad = new_journal("Apps/bad")
    bad.user("unreadable entry")
    os.chmod(bad.path, 0)
    if os.geteuid() == 0:  # root reads through mode 0: make the kernel's refusal happen anyway
        real_open = open

        def refuse(path, *args, **kwargs):
            if str(path) == str(bad.path):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr("builtins.open", refuse)
    report = index_all(conn, locations)
    assert report.entries_added == 1
    assert entry_count(conn, good.path) == 1 and entry_count(conn, bad.path) == 0
    monkeypatch.undo()
    os.chmod(bad.path, 0o644)
    assert index_all(conn, locations).entries_added == 1


def test_a_pass_over_unchanged_journals_writes_only_the_lease(conn, locations, new_journal):
    for k in range(5):
        j = new_journal(f"Apps/p{k}")
        j.user(f"entry {k}")
        j.set_mtime(datetime.now(UTC) - timedelta(minutes=5))
    index_all(conn, locations)
    before = conn.total_changes
    report = index_all(conn, locations)
    assert report.files == 0 and report.entries_added == 0
    assert conn.total_changes - before == 2, "take and release the lease, nothing else"


def test_ctrl_c_mid_pass_keeps_what_was_indexed_and_says_so(tmp_path, locations, new_journal):
    make_corpus(new_journal, sessions=20, turns=200)
    proc, watcher = index_in_background(tmp_path / "interrupted.sqlite", locations)
    proc.send_signal(signal.SIGINT)
    watcher.execute("ROLLBACK")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"Interrupted" in err and b"Traceback" not in err
    kept = watcher.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    assert kept > 0
    watcher.execute("DELETE FROM meta WHERE key = ?", (lease.LEASE_KEY,))
    index_all(watcher, locations)
    clean = store.open_index(tmp_path / "clean.sqlite")
    index_all(clean, locations)
    assert snapshot(watcher) == snapshot(clean)


def test_opening_a_current_index_writes_nothing(locations, new_journal):
    j = new_journal()
    j.user("already indexed")
    first = store.open_index(locations.db_path)
    index_all(first, locations)
    first.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        started = time.monotonic()
        second = store.open_index(locations.db_path)
        assert time.monotonic() - started < 1
        assert second.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == 1
        assert second.total_changes == 0
    finally:
        first.execute("ROLLBACK")


@pytest.mark.parametrize("processes", [1, 2])
def test_bulk_backfill_parsed_in_child_processes_equals_a_threaded_pass(tmp_path, locations, new_journal, processes):
    make_corpus(new_journal, sessions=6, turns=60)
    small = new_journal("Apps/small")
    small.user("a small journal is grouped with others")
    small.append_bytes(b"{not json\n")
    threaded = store.open_index(tmp_path / "threaded.sqlite")
    in_thread, in_processes = Watch(), Watch()
    by_thread = index_all(threaded, locations, settings=IndexSettings(after_batch=in_thread))
    child = store.open_index(tmp_path / "child.sqlite")
    by_child = index_all(
        child, locations, settings=bulk_settings(processes, message_text_bytes=20_000, after_batch=in_processes)
    )
    assert set(in_thread.parsed_apart) == {False} and set(in_processes.parsed_apart) == {True}
    assert by_child.as_json() | {"seconds": 0} == by_thread.as_json() | {"seconds": 0}
    assert by_child.malformed == 1 and by_child.files == 7
    assert snapshot(child) == snapshot(threaded)


def older(*journals, hours: float = 1) -> None:
    """Date journals back, so a pass (newest first) comes to them after the others."""
    for j in journals:
        j.set_mtime(datetime.now(UTC) - timedelta(hours=hours))


def test_a_large_journal_comes_in_small_batches_first_then_full_ones(conn, locations, new_journal):
    (large,) = make_corpus(new_journal, sessions=1, turns=100)
    older(large)
    small = new_journal("Apps/small")
    small.user("the newest journal starts the pass")
    watch = Watch()
    index_all(
        conn,
        locations,
        settings=IndexSettings(
            batch_entries=64, first_batch_share=16, after_batch=watch, ramp_journal_bytes=large.path.stat().st_size - 1
        ),
    )
    _small, sizes = watch.journals
    assert sizes[:5] == [4, 8, 16, 32, 64] and set(sizes[5:-1]) == {64}
    assert sum(sizes) == 300


def test_a_small_journal_comes_in_full_batches_unless_it_starts_a_pass(conn, locations, new_journal):
    first, second = make_corpus(new_journal, sessions=2, turns=100)
    older(second)
    watch = Watch()
    index_all(conn, locations, settings=IndexSettings(batch_entries=64, first_batch_share=16, after_batch=watch))
    starting, following = watch.journals
    assert starting[:3] == [4, 8, 16]
    assert set(following[:-1]) == {64} and sum(following) == 300


def test_a_large_journal_in_a_backfill_commits_per_few_batches_not_per_batch(tmp_path, locations, new_journal):
    make_corpus(new_journal, sessions=1, turns=100)

    def commits_of_a_pass(transaction_text_bytes: int, name: str) -> tuple[int, object]:
        conn = store.open_index(tmp_path / name)
        statements = []
        conn.set_trace_callback(statements.append)
        index_all(
            conn,
            locations,
            settings=IndexSettings(
                batch_entries=20, first_batch_share=1, transaction_text_bytes=transaction_text_bytes
            ),
        )
        conn.set_trace_callback(None)
        return statements.count("COMMIT"), conn

    each, by_batch = commits_of_a_pass(1, "each.sqlite")
    grouped, by_group = commits_of_a_pass(250_000, "grouped.sqlite")
    assert each >= 15  # 300 entries, 20 a batch
    assert grouped <= each - 10
    assert snapshot(by_group) == snapshot(by_batch)


def test_a_large_journal_stopped_inside_a_transaction_keeps_its_committed_batches_and_no_more(
    tmp_path, locations, new_journal
):
    (j,) = make_corpus(new_journal, sessions=1, turns=100)
    older(j)
    measured = Watch()
    index_all(
        store.open_index(tmp_path / "measured.sqlite"),
        locations,
        settings=IndexSettings(batch_entries=20, first_batch_share=1, after_batch=measured),
    )
    texts = measured.text_bytes
    two_a_transaction = IndexSettings(batch_entries=20, first_batch_share=1, transaction_text_bytes=texts[0] + texts[1])
    conn = store.open_index(tmp_path / "stopped.sqlite")
    with pytest.raises(KeyboardInterrupt):
        index_all(conn, locations, settings=dataclasses.replace(two_a_transaction, after_batch=StopAfter(3)))
    assert not conn.in_transaction
    assert entry_count(conn) == 40  # the first transaction's two batches; the third, written, rolled back
    cursor = conn.execute("SELECT cursor FROM files").fetchone()[0]
    assert cursor == conn.execute("SELECT MAX(offset + length) + 1 FROM entries").fetchone()[0]
    index_all(conn, locations, settings=two_a_transaction)
    clean = store.open_index(tmp_path / "clean.sqlite")
    index_all(clean, locations)
    assert entry_count(conn) == 300 and snapshot(conn) == snapshot(clean)


def test_a_bulk_pass_collects_garbage_rarely_then_gives_the_process_its_thresholds_back(
    tmp_path, locations, new_journal
):
    make_corpus(new_journal, sessions=3, turns=20)
    before = gc.get_threshold()
    during = []
    conn = store.open_index(tmp_path / "gc.sqlite")
    index_all(conn, locations, settings=bulk_settings(after_batch=lambda batch: during.append(gc.get_threshold())))
    assert len(during) == 3 and all(threshold[0] > before[0] for threshold in during)
    assert gc.get_threshold() == before


def test_a_killed_parser_process_is_a_clear_error_and_leaves_only_whole_batches(tmp_path, locations, new_journal):
    make_corpus(new_journal, sessions=12, turns=60)
    # A batch a message (the child stays busy), each journal committed on its own.
    settings = bulk_settings(message_text_bytes=1, group_text_bytes=1, transaction_text_bytes=1)

    def kill_the_parser(done, total, path):
        if done == 2:
            for child in multiprocessing.active_children():
                if child.name == "pimem-parse":
                    os.kill(child.pid, signal.SIGKILL)

    conn = store.open_index(tmp_path / "killed.sqlite")
    started = time.monotonic()
    with pytest.raises(indexer.ParserStopped, match="stopped unexpectedly .killed by signal 9"):
        index_all(conn, locations, progress=kill_the_parser, settings=settings)
    assert time.monotonic() - started < 30
    assert 0 < entry_count(conn) < 12 * 60 * 3
    assert not [c for c in multiprocessing.active_children() if c.name == "pimem-parse"]
    index_all(conn, locations)  # the lease was released; the rest is indexed from the cursors
    clean = store.open_index(tmp_path / "clean.sqlite")
    index_all(clean, locations)
    assert snapshot(conn) == snapshot(clean)


def test_a_parser_process_that_cannot_start_falls_back_to_a_thread(tmp_path, locations, new_journal):
    make_corpus(new_journal, sessions=3, turns=20)
    clean = store.open_index(tmp_path / "clean.sqlite")
    index_all(clean, locations)
    script = (
        "import sys\n"
        "from pimem_index import indexer, locations, store\n"
        "from pimem_index.index.settings import IndexSettings\n"
        "spawned = IndexSettings(bulk_bytes=1, start_method='spawn')  # as when the caller has threads\n"
        f"conn = store.open_index({str(tmp_path / 'piped.sqlite')!r})\n"
        f"report = indexer.index_all(conn, locations.resolve({str(tmp_path / 'piped.sqlite')!r}, "
        f"[{str(locations.sessions_dirs[0])!r}]), settings=spawned)\n"
        "print(report.entries_added)\n"
    )
    # A script read from stdin has no file a spawned child could import as its __main__.
    done = subprocess.run(
        [sys.executable, "-"],
        input=script,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent")},
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == entry_count(clean) > 0
    assert "ParserStopped" not in done.stderr
    assert snapshot(store.open_index(tmp_path / "piped.sqlite")) == snapshot(clean)


@pytest.mark.parametrize("bulk", [False, True], ids=["thread", "processes"])
def test_the_parsing_side_never_opens_the_index(tmp_path, locations, new_journal, monkeypatch, bulk):
    make_corpus(new_journal, sessions=4, turns=20)
    conn = store.open_index(tmp_path / "index.sqlite")

    def refuse(*args, **kwargs):
        raise AssertionError("the parsing side opened the index (a connection must not cross a fork)")

    monkeypatch.setattr(store.db, "connect", refuse)
    watch = Watch()
    report = index_all(conn, locations, settings=threaded_or_bulk(bulk, after_batch=watch))
    assert set(watch.parsed_apart) == {bulk}
    assert report.files == 4 and entry_count(conn) == 4 * 20 * 3


def test_a_pass_stopped_between_two_batches_of_a_journal_is_finished_by_the_next(tmp_path, locations, new_journal):
    (j,) = make_corpus(new_journal, sessions=1, turns=60)
    older(j)  # not a journal still being written (RACY_SECONDS)
    conn = store.open_index(tmp_path / "stopped.sqlite")
    with pytest.raises(KeyboardInterrupt):
        index_all(conn, locations, settings=small_batches(50, after_batch=StopAfter(1)))
    assert entry_count(conn) == 50
    assert index_status(conn, locations)["journals_pending"] == 1
    index_all(conn, locations, settings=small_batches(50))
    assert entry_count(conn) == 60 * 3
    assert index_status(conn, locations)["journals_pending"] == 0
    clean = store.open_index(tmp_path / "clean.sqlite")
    index_all(clean, locations)
    assert snapshot(conn) == snapshot(clean)
    assert index_all(conn, locations).files == 0  # read to its end: the next pass skips it


def test_a_journal_an_older_index_recorded_as_read_to_its_end_while_half_read_is_finished(
    tmp_path, locations, new_journal
):
    (j,) = make_corpus(new_journal, sessions=1, turns=60)
    long_ago = time.time() - 3600
    os.utime(j.path, (long_ago, long_ago))
    conn = store.open_index(tmp_path / "old.sqlite")
    with pytest.raises(KeyboardInterrupt):
        index_all(conn, locations, settings=small_batches(50, after_batch=StopAfter(1)))
    with store.db.write(conn):  # what every batch recorded before: the journal looks read to its end
        conn.execute("UPDATE files SET mtime = ?", (os.stat(j.path).st_mtime,))
    assert entry_count(conn) == 50
    index_all(conn, locations)
    assert entry_count(conn) == 60 * 3
    assert index_all(conn, locations).files == 0
    j.append_bytes(b'{"type":"message","id":"half')  # an incomplete last line waits
    os.utime(j.path, (long_ago, long_ago))
    index_all(conn, locations)  # remembers the new size
    report = index_all(conn, locations)
    assert report.files == 0 and report.bytes_read == 0 and entry_count(conn) == 60 * 3


def test_a_detached_work_refuses_to_read_rather_than_fail_its_journal(new_journal):
    j = new_journal()
    j.user("a line to read")
    with parsing.prepare(None, str(j.path), Forgotten()) as work:
        assert work is not None
        with pytest.raises(ValueError, match="detached Work has no file"):
            work.detached().batches()
        batches = list(work.batches())
    assert [b.failure for b in batches] == [None] and batches[0].rows
