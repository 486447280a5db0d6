"""The plugin keeps one memo per open index (`memo.IndexMemo`): shared by its threads, new for a replaced index."""

from __future__ import annotations

import asyncio

import pytest
from support.plugin_world import ROOT, api_path, make_datasette, running

from datasette_pi_memory.state import WORKER_THREADS, state
from pimem_index import store
from pimem_index.index.indexer import index_all


async def _search(ds, world, q: str) -> list[str]:
    res = await ds.client.get(api_path("search", world, q=q, scope="global"), actor=ROOT)
    assert res.status_code == 200, res.text
    return [h["id"] for h in res.json()["results"]]


async def _searches(ds, world) -> None:
    """Searches at once, so that several worker threads open their connections, and a session page (its own threads)."""
    found = await asyncio.gather(*(_search(ds, world, "heron") for _ in range(3 * WORKER_THREADS)))
    assert all(found)
    page = await ds.client.get(f"/-/pi-memory/sessions/{world['a'].session_id}", actor=ROOT)
    assert page.status_code == 200, page.text[:300]


@pytest.mark.asyncio
async def test_the_threads_of_one_server_share_their_index_s_memo_and_a_replaced_index_gets_a_new_one(locations, world):
    async with running(make_datasette(locations)) as ds:
        memory = state(ds)
        await _searches(ds, world)
        first = memory.memo
        assert len(memory._connections) > 1 and all(conn.memo is first for conn in memory._connections)
        assert len(first) > 0, "the searches kept their answers for the index"
        store.delete_index_files(locations.db_path)
        fresh = store.open_index(locations.db_path)
        try:
            index_all(fresh, locations)
        finally:
            fresh.close()
        await _searches(ds, world)
        assert memory.memo is not first, "nothing kept for the file that was replaced is used"
        assert any(conn.memo is memory.memo for conn in memory._connections), "reopened on the new memo"
