"""Indexing in the background inside Datasette: new lines become searchable, shutdown stops the child,
which instances index by default, and a watching indexer follows a new index file.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time

import pytest
from datasette_test import Datasette
from support.faults import wait_for
from support.plugin_world import ROOT, api_path, make_datasette

from datasette_pi_memory.server.serve import ensure_secret
from datasette_pi_memory.state import PLUGIN


@pytest.mark.asyncio
async def test_background_indexer_makes_new_lines_searchable(locations, world):
    datasette = make_datasette(locations, {"background_index": True})
    await datasette.start_background_tasks()
    try:
        fresh = world["a"].user("the albatross arrived late")
        deadline = time.monotonic() + 10
        found = []
        while time.monotonic() < deadline and not found:
            res = await datasette.client.get(api_path("search", world, q="albatross"), actor=ROOT)
            found = [h["id"] for h in res.json()["results"]]
            if not found:
                await asyncio.sleep(0.2)
        assert found == [fresh]
        tasks = await datasette.client.get("/-/tasks.json", actor=ROOT)
        assert "pi-memory-indexer" in tasks.text
    finally:
        await datasette.invoke_shutdown()


@pytest.mark.asyncio
async def test_shutdown_stops_the_indexer_child_and_nothing_of_the_instance_is_kept(locations, world):
    from datasette_pi_memory import background
    from datasette_pi_memory.state import existing_state, state

    datasette = make_datasette(locations, {"background_index": True})
    await datasette.start_background_tasks()
    indexer = state(datasette).indexer
    assert indexer is not None
    deadline = time.monotonic() + 10
    while indexer.child is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    child = indexer.child
    assert child is not None and child.returncode is None
    await datasette.invoke_shutdown()
    assert child.returncode is not None and indexer.stopping
    assert existing_state(datasette) is None
    registries = [
        name
        for name, value in vars(background).items()
        if not name.startswith("__") and isinstance(value, (dict, set, list))
    ]
    assert registries == []


@pytest.mark.asyncio
async def test_a_bad_scope_setting_stops_startup(locations, conn):
    from datasette.utils import StartupError

    datasette = make_datasette(locations, {"agent_max_scope": "everything"})
    with pytest.raises(StartupError, match="agent_max_scope"):
        await datasette.invoke_startup()


@pytest.mark.asyncio
async def test_background_indexing_defaults_to_instances_serving_the_index(locations, conn, tmp_path):
    from datasette_pi_memory.state import state

    serving = Datasette([str(locations.db_path)], secret=ensure_secret(locations))
    assert state(serving).settings.background_index is True
    assert state(serving).settings.database == "history"
    other_db = tmp_path / "unrelated.db"
    sqlite3.connect(other_db).close()
    unrelated = Datasette([str(other_db)])
    assert state(unrelated).settings.background_index is False
    configured = Datasette([str(other_db)], plugin_config={PLUGIN: {"background_index": True}})
    assert state(configured).settings.background_index is True


def _count(db_path, sql: str = "SELECT count(*) FROM entries") -> int | None:
    """Rows in the index file now at db_path, or None while there is none (or it is not ready)."""
    if not os.path.exists(db_path):
        return None
    try:
        c = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            return c.execute(sql).fetchone()[0]
        finally:
            c.close()
    except sqlite3.Error:
        return None


def test_the_watching_indexer_moves_to_a_new_index_file(locations, world, conn):
    import subprocess
    import sys

    from pimem_index import store

    expected = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
    conn.close()
    child = subprocess.Popen(
        [sys.executable, "-m", "pimem_index", "index", "--watch", "--interval", "0.05", "--db", str(locations.db_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        running = world["a"].user("written while the child runs: the skua")
        assert wait_for(lambda: _count(locations.db_path, f"SELECT count(*) FROM entries WHERE id = '{running}'") == 1)
        store.delete_index_files(locations.db_path)
        fresh = world["a"].user("written after the index was deleted: the gannet")
        assert wait_for(lambda: _count(locations.db_path, f"SELECT count(*) FROM entries WHERE id = '{fresh}'") == 1)
        assert _count(locations.db_path) == expected + 2  # every journal again, in the new file
        assert child.poll() is None
    finally:
        child.terminate()
        _, err = child.communicate(timeout=30)
    assert b"Traceback" not in err
