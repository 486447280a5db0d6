"""Rebuild builds beside the live index and swaps it in whole: readers never see it half-built."""

from __future__ import annotations

import signal
import threading
import time

from support.commands import start_pimem
from support.indexed import snapshot
from support.pijournal import make_corpus

from pimem_index import db, store
from pimem_index.index.indexer import index_all, rebuild


def test_rebuild_from_nothing_creates_the_index(locations, new_journal):
    j = new_journal()
    j.user("first ever entry")
    report = rebuild(locations)
    assert report.entries_added == 1
    conn = store.open_index(locations.db_path)
    assert conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == 1
    assert not list(locations.db_path.parent.glob("*.rebuild-*"))


def test_rebuild_equals_a_fresh_index(tmp_path, conn, locations, new_journal):
    make_corpus(new_journal, sessions=3, turns=20)
    index_all(conn, locations)
    conn.execute("DELETE FROM entries WHERE rowid % 7 = 0")
    rebuild(locations)
    clean = store.open_index(tmp_path / "clean.sqlite")
    index_all(clean, locations)
    assert snapshot(conn) == snapshot(clean)


def test_a_reader_sees_the_old_or_the_new_index_never_a_partial_one(conn, locations, new_journal):
    make_corpus(new_journal, sessions=12, turns=120)
    index_all(conn, locations)
    before = conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    extra = new_journal("Apps/late")
    extra.user("added before the rebuild")
    reader = store.open_index(locations.db_path)
    seen = set()
    done = threading.Event()

    def watch():
        while not done.is_set():
            seen.add(reader.execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    t = threading.Thread(target=watch)
    t.start()
    try:
        rebuild(locations)
    finally:
        done.set()
        t.join()
    seen.add(reader.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
    assert seen == {before, before + 1}


def test_rebuild_killed_midway_leaves_the_previous_index_readable(tmp_path, conn, locations, new_journal):
    make_corpus(new_journal, sessions=25, turns=200)
    index_all(conn, locations)
    expected = snapshot(conn)
    proc = start_pimem(["rebuild"], locations.db_path)
    try:
        building = wait_for_rows_in_the_rebuild(locations.db_path, proc)
    finally:
        proc.send_signal(signal.SIGSTOP)  # frozen first, so the check below sees the state the kill hits
    assert building.exists(), "the kill should land mid-rebuild"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert building.exists()
    survivor = store.open_index(locations.db_path)
    assert snapshot(survivor) == expected
    rebuild(locations)
    assert not list(locations.db_path.parent.glob("*.rebuild-*"))
    assert snapshot(store.open_index(locations.db_path)) == expected


def wait_for_rows_in_the_rebuild(live, proc, timeout: float = 120):
    """The rebuild's file, once it holds committed rows (the rebuild is under way, not done)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        for path in live.parent.glob(f"{live.name}.rebuild-*"):
            if path.name.endswith(("-wal", "-shm", "-journal")):
                continue
            try:
                reader = db.connect(str(path), readonly=True)
                try:
                    if reader.execute("SELECT 1 FROM entries LIMIT 1").fetchone():
                        return path
                finally:
                    reader.close()
            except db.DatabaseError:
                pass  # not created, or its tables not yet committed
        time.sleep(0.002)
    raise AssertionError(f"the rebuild's file never held rows (rebuild exit status {proc.poll()})")
