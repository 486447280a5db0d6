"""The JSON API as the Pi tool calls it: what an agent gets back about its own turn, calls and results."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
import pytest_asyncio
from support.plugin_world import bearer, make_datasette, running

from pimem_index.index.indexer import index_all


@pytest_asyncio.fixture
async def ds(locations, conn):
    async with running(make_datasette(locations)) as datasette:
        yield datasette


def api(action: str, **params) -> str:
    return f"/-/pi-memory/api/{action}?{urlencode(params, doseq=True)}"


def hit_ids(res) -> list[str]:
    assert res.status_code == 200, res.text
    return [h["id"] for h in res.json()["results"]]


@pytest.fixture
def turn(conn, locations, new_journal, home):
    """An older session about the pelican rollout, and the caller's session in the middle of a
    memory_context call searching for it (the call written, its result not yet)."""
    old = new_journal("Apps/prjct")
    old.user("plan the pelican rollout")
    earlier = old.assistant("The pelican rollout goes out on Tuesday.")
    now = new_journal("Apps/prjct")
    asked = now.user("when does the pelican rollout go out?")
    call = now.assistant(tool_calls=[("memory_context", {"action": "search", "query": "pelican rollout"})])
    index_all(conn, locations)
    return {"now": now, "earlier": earlier, "asked": asked, "call": call, "cwd": str(home / "Apps/prjct")}


@pytest.mark.asyncio
async def test_the_callers_own_memory_context_call_is_never_a_hit(ds, turn, token):
    res = await ds.client.get(
        api("search", q="pelican rollout", cwd=turn["cwd"], journal=str(turn["now"].path)), **bearer(token)
    )
    assert turn["earlier"] in hit_ids(res) and turn["asked"] in hit_ids(res)
    assert turn["call"] not in hit_ids(res)
    # without the caller's journal nothing says which turn is its own: the call is an entry like any other
    other = await ds.client.get(api("search", q="pelican rollout", cwd=turn["cwd"]), **bearer(token))
    assert turn["call"] in hit_ids(other)


@pytest.mark.asyncio
async def test_the_result_of_the_callers_own_call_is_never_a_hit(ds, turn, token):
    now = turn["now"]
    result = now.tool_result(
        "memory_context", "search: 1 result: the pelican rollout goes out on Tuesday", call_id=now.call_ids[0]
    )
    again = now.assistant(tool_calls=[("memory_context", {"action": "search", "query": "pelican tuesday"})])
    res = await ds.client.get(api("search", q="pelican", cwd=turn["cwd"], journal=str(now.path)), **bearer(token))
    # the latest call is the caller's turn now; the call before it and its result are history
    assert again not in hit_ids(res)
    assert turn["call"] in hit_ids(res) and result in hit_ids(res)
    later = now.tool_result("memory_context", "search: pelican tuesday", call_id=now.call_ids[0])
    final = now.assistant(tool_calls=[("memory_context", {"action": "read", "entryId": turn["earlier"]})])
    res = await ds.client.get(api("search", q="pelican", cwd=turn["cwd"], journal=str(now.path)), **bearer(token))
    assert final not in hit_ids(res)
    assert again in hit_ids(res) and later in hit_ids(res)


@pytest.mark.asyncio
async def test_recent_entries_leave_out_the_callers_own_call_too(ds, turn, token):
    res = await ds.client.get(api("search", cwd=turn["cwd"], journal=str(turn["now"].path)), **bearer(token))
    assert turn["asked"] in hit_ids(res)
    assert turn["call"] not in hit_ids(res)
