"""The session page for a reviewer, through a real Datasette: built and rendered on its own threads so a slow
page never holds the API, a summary of what the session changed and what failed, links between failures,
figures for the branch shown. Journals: the real-Pi corpus and the writer."""

from __future__ import annotations

import asyncio
import threading

import pytest
from support.plugin_world import ROOT, make_datasette, running

from datasette_pi_memory.state import PAGE_THREADS, state
from pimem_index.index import indexer


@pytest.fixture
def big_edit(conn, locations, new_journal):
    """A session whose one edit is 10,000 near-identical lines."""
    j = new_journal("Apps/lockfile")
    j.user("bump the heron pin")
    old = "\n".join(["x"] * 10_000)
    new = "\n".join(["x"] * 5_000 + ["PINNED"] + ["x"] * 4_999)
    j.assistant(tool_calls=[("edit", {"path": "deps.lock", "edits": [{"oldText": old, "newText": new}]}, "call-1")])
    j.tool_result("edit", "Successfully replaced 1 block(s) in deps.lock.", call_id="call-1")
    indexer.index_all(conn, locations)
    return j


@pytest.mark.asyncio
async def test_api_search_answers_while_every_page_thread_is_busy_rendering(locations, big_edit):
    async with running(make_datasette(locations)) as ds:
        memory = state(ds)
        release = threading.Event()
        held = [memory.pages.submit(release.wait) for _ in range(PAGE_THREADS)]  # pages as slow as can be
        try:
            page = asyncio.ensure_future(ds.client.get(f"/-/pi-memory/sessions/{big_edit.session_id}", actor=ROOT))
            search = asyncio.ensure_future(
                ds.client.get("/-/pi-memory/api/search", params={"q": "heron", "scope": "global"}, actor=ROOT)
            )
            done, _pending = await asyncio.wait({page, search}, return_when=asyncio.FIRST_COMPLETED)
            assert search in done and search.result().status_code == 200
            assert search.result().json()["results"]  # a real answer, not an error
            assert not page.done()  # the page still waits for a page thread: it shares none with the API
        finally:
            release.set()
        res, again = await asyncio.gather(
            page, ds.client.get("/-/pi-memory/api/search", params={"q": "heron", "scope": "global"}, actor=ROOT)
        )
        assert res.status_code == 200 and "+ PINNED" in res.text and again.status_code == 200
        assert all(f.done() for f in held)
