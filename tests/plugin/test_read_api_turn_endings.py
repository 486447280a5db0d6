"""The API's read of an aborted assistant turn says `[aborted: <reason>]`, as `pimem read` and the session page do."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from support.plugin_world import ROOT, make_datasette, running
from support.real_pi_index import indexed_corpus


@pytest.mark.asyncio
async def test_the_api_read_of_an_aborted_turn_says_it_was_aborted(tmp_path, monkeypatch):
    world = indexed_corpus(tmp_path, monkeypatch)
    session = world.session("aborted")
    rows = world.conn.execute(
        "SELECT id, stop_reason FROM entries WHERE session_id = ? AND kind = 'assistant' ORDER BY rowid", (session,)
    ).fetchall()
    async with running(make_datasette(world.locations)) as ds:
        for entry_id, stop_reason in rows:
            params = urlencode({"id": entry_id, "session_id": session, "scope": "global"})
            reply = (await ds.client.get(f"/-/pi-memory/api/read?{params}", actor=ROOT)).json()
            assert reply["status"] == "ok", reply
            if stop_reason == "aborted":
                assert reply["text"] == "[aborted: Request was aborted.]"
            else:
                assert reply["text"] and "[aborted:" not in reply["text"]
    assert {stop for _id, stop in rows} >= {"aborted", "stop"}
    world.conn.close()
