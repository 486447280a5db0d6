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


@pytest.fixture
def exchange(conn, locations, new_journal, home):
    """A question, a bash call that failed with exit 3 and its result, and an answer."""
    j = new_journal("Apps/prjct")
    asked = j.user("why does the walrus lint fail?")
    call = j.assistant(tool_calls=[("bash", {"command": "make walrus-lint", "timeout": 30})])
    result = j.tool_result(
        "bash", "walrus.py:3 unused import\n\nCommand exited with code 3", is_error=True, call_id=j.call_ids[0]
    )
    answer = j.assistant("The walrus lint fails on an unused import.")
    index_all(conn, locations)
    return {"asked": asked, "call": call, "result": result, "answer": answer, "cwd": str(home / "Apps/prjct")}


@pytest.mark.asyncio
async def test_the_api_ties_calls_to_their_results(ds, exchange, token):
    res = await ds.client.get(api("search", q="walrus", cwd=exchange["cwd"]), **bearer(token))
    hits = {h["id"]: h for h in res.json()["results"]}
    assert hits[exchange["call"]]["outcome"] == "exit 3"
    assert hits[exchange["call"]]["result"] == "walrus.py:3 unused import"
    assert hits[exchange["result"]]["call"] == "bash: make walrus-lint"
    assert not {"outcome", "result", "call"} & hits[exchange["asked"]].keys()


@pytest.mark.asyncio
async def test_the_api_reads_an_entry_with_the_entries_around_it(ds, exchange, token):
    res = await ds.client.get(api("read", id=exchange["call"], cwd=exchange["cwd"], around=1), **bearer(token))
    data = res.json()
    assert res.status_code == 200 and data["status"] == "ok"
    assert [(a["id"], a["side"]) for a in data["around"]] == [
        (exchange["asked"], "before"),
        (exchange["result"], "after"),
    ]
    assert data["around"][1]["call"] == "bash: make walrus-lint"
    wide = await ds.client.get(api("read", id=exchange["call"], cwd=exchange["cwd"], around=2), **bearer(token))
    assert [a["id"] for a in wide.json()["around"]][-1] == exchange["answer"]
    plain = await ds.client.get(api("read", id=exchange["call"], cwd=exchange["cwd"]), **bearer(token))
    assert "around" not in plain.json()


@pytest.mark.asyncio
async def test_around_out_of_range_is_a_400_with_an_example(ds, exchange, token):
    res = await ds.client.get(api("read", id=exchange["call"], cwd=exchange["cwd"], around=99), **bearer(token))
    assert res.status_code == 400
    assert "around must be a whole number from 0 to 20" in res.json()["error"] and "around=3" in res.json()["error"]


@pytest.mark.asyncio
async def test_the_api_folds_the_same_text_across_sessions_and_lists_it_with_like(
    ds, conn, locations, new_journal, home, token
):
    same = [new_journal("Apps/prjct").user("deploy the narwhal stack") for _ in range(3)]
    other = new_journal("Apps/prjct").user("deploy the narwhal docs")
    index_all(conn, locations)
    cwd = str(home / "Apps/prjct")
    res = await ds.client.get(api("search", q="narwhal", cwd=cwd), **bearer(token))
    hits = res.json()["results"]
    assert len([h for h in hits if h["id"] in same]) == 1
    best = next(h for h in hits if h["id"] in same)
    assert best["like"] == {"entries": 2, "sessions": 2} and other in [h["id"] for h in hits]
    listed = await ds.client.get(api("search", q="narwhal", cwd=cwd, like=best["id"]), **bearer(token))
    assert sorted(hit_ids(listed)) == sorted(same)
    bad = await ds.client.get(api("search", cwd=cwd, like="ffffffff"), **bearer(token))
    assert bad.status_code == 400 and "like=c3d4e5f6" in bad.json()["error"]


@pytest.mark.asyncio
async def test_a_search_asks_for_shorter_excerpts(ds, conn, locations, new_journal, home, token):
    j = new_journal("Apps/prjct")
    j.user("word " * 100 + "the platypus sits here " + "word " * 100)
    index_all(conn, locations)
    cwd = str(home / "Apps/prjct")
    short = (await ds.client.get(api("search", q="platypus", cwd=cwd, excerpt=80), **bearer(token))).json()
    full = (await ds.client.get(api("search", q="platypus", cwd=cwd), **bearer(token))).json()
    assert "platypus" in short["results"][0]["excerpt"] and len(short["results"][0]["excerpt"]) <= 90
    assert len(full["results"][0]["excerpt"]) > 250
    bad = await ds.client.get(api("search", q="platypus", cwd=cwd, excerpt=5), **bearer(token))
    assert bad.status_code == 400 and "excerpt=120" in bad.json()["error"]
