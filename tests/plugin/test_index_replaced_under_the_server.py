"""An index deleted, rebuilt or replaced by another file while the server runs: it is reopened or created
again, a forget on it holds, and nothing breaks once a valid index is back.
"""

from __future__ import annotations

import os
import sqlite3

import pytest
from datasette_test import Datasette
from support.faults import put_in_place_of_index
from support.plugin_world import ROOT, api_path

from datasette_pi_memory.state import PLUGIN, WORKER_THREADS
from pimem_index.index.indexer import index_all


async def _ids(ds, world, q: str) -> list[str]:
    res = await ds.client.get(api_path("search", world, q=q, scope="global"), actor=ROOT)
    assert res.status_code == 200, res.text
    return [h["id"] for h in res.json()["results"]]


@pytest.mark.asyncio
async def test_an_index_rebuilt_under_the_server_is_reopened_and_a_forget_on_it_holds(ds, world, locations):
    from pimem_index import store
    from pimem_index.manage.forget import forget_entry

    other = world["other"]
    assert await _ids(ds, world, "kestrel") == [other]
    table = await ds.client.get(f"/history/entries.json?_shape=array&id={other}", actor=ROOT)
    assert [r["id"] for r in table.json()] == [other]
    store.delete_index_files(locations.db_path)
    fresh = store.open_index(locations.db_path)
    try:
        index_all(fresh, locations)
        forget_entry(fresh, locations, other)
        entries = fresh.execute("SELECT count(*) FROM entries").fetchone()[0]
    finally:
        fresh.close()
    assert await _ids(ds, world, "kestrel") == []
    read = await ds.client.get(api_path("read", world, id=other, scope="global"), actor=ROOT)
    assert read.json()["status"] == "not_found" and "kestrel" not in read.text
    table = await ds.client.get(f"/history/entries.json?_shape=array&id={other}", actor=ROOT)
    assert table.status_code == 200 and table.json() == []
    assert await _ids(ds, world, "heron")  # the new index answers
    status = (await ds.client.get("/-/pi-memory/api/status", actor=ROOT)).json()
    assert status["entries"] == entries
    on_disk = sum(os.path.getsize(p) for p in (locations.db_path, f"{locations.db_path}-wal") if os.path.exists(p))
    assert status["db_bytes"] == on_disk > 0


@pytest.mark.asyncio
async def test_an_index_deleted_under_the_server_is_created_again_empty(ds, world, locations):
    from pimem_index import store

    assert await _ids(ds, world, "kestrel") == [world["other"]]
    store.delete_index_files(locations.db_path)
    status = await ds.client.get("/-/pi-memory/api/status", actor=ROOT)
    assert status.status_code == 200
    assert status.json()["entries"] == 0 and status.json()["db_bytes"] > 0
    assert locations.db_path.exists()
    assert await _ids(ds, world, "kestrel") == []
    tables = await ds.client.get("/history/entries.json?_shape=array", actor=ROOT)
    assert tables.status_code == 200 and tables.json() == []


ROUTES_AFTER_A_REPLACEMENT = (
    "/-/pi-memory/api/status",
    "/-/pi-memory/api/search?q=heron&scope=global",
    "/-/pi-memory/api/summaries?scope=global",
    "/-/pi-memory/api/sessions?scope=global",
    "/-/pi-memory/api/usage?scope=global",
    "/-/pi-memory",
    "/-/pi-memory/search?q=heron&scope=global",
    "/-/pi-memory/summaries?scope=global",
    "/-/pi-memory/sessions",
    "/-/pi-memory/usage",
    "/history/entries.json",
)


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["text", "sqlite"])
async def test_a_non_index_file_under_the_server_never_breaks_it_once_a_valid_index_is_back(ds, world, locations, kind):
    from pimem_index import store

    assert await _ids(ds, world, "heron")
    put_in_place_of_index(locations.db_path, kind)
    for _ in range(3 * WORKER_THREADS):  # every worker thread meets the foreign file, some twice
        broken = await ds.client.get(api_path("search", world, scope="global"), actor=ROOT)
        assert broken.status_code != 200 and "heron" not in broken.text, broken.text[:500]
    store.delete_index_files(locations.db_path)
    fresh = store.open_index(locations.db_path)
    try:
        index_all(fresh, locations)  # one indexing pass of a valid index
    finally:
        fresh.close()
    for _ in range(2):  # each route on more than one worker thread
        for path in ROUTES_AFTER_A_REPLACEMENT:
            res = await ds.client.get(path, actor=ROOT)
            assert res.status_code == 200, (path, res.text[:300])
    assert await _ids(ds, world, "heron") and await _ids(ds, world, "kestrel") == [world["other"]]


@pytest.mark.asyncio
async def test_a_datasette_without_the_index_never_creates_one(locations, tmp_path):
    other_db = tmp_path / "unrelated.db"
    sqlite3.connect(other_db).close()
    datasette = Datasette([str(other_db)], plugin_config={PLUGIN: {"background_index": False}})
    await datasette.invoke_startup()
    try:
        for path in ("/", "/unrelated", "/-/versions.json"):
            assert (await datasette.client.get(path)).status_code == 200
        assert not locations.db_path.exists()
    finally:
        await datasette.invoke_shutdown()
