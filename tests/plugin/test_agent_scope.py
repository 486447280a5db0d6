"""The scope boundary: the agent's token stays in its project (or the session it is capped to); root and
configured actors search as far as they are allowed.
"""

from __future__ import annotations

import json

import pytest
from support.plugin_world import ROOT, api_path, bearer, make_datasette

from datasette_pi_memory.state import ACTION


@pytest.mark.asyncio
async def test_agent_cannot_widen_to_global(ds, world, token):
    res = await ds.client.get(api_path("search", world, scope="global"), **bearer(token))
    assert res.status_code == 400
    assert "wider than allowed" in res.json()["error"] and "kestrel" not in res.text
    read = await ds.client.get(api_path("read", world, id=world["other"], scope="global"), **bearer(token))
    assert read.status_code == 400 and "kestrel" not in read.text


@pytest.mark.asyncio
async def test_agent_read_of_another_projects_entry_is_not_found(ds, world, token):
    res = await ds.client.get(api_path("read", world, id=world["other"]), **bearer(token))
    assert res.status_code == 200
    assert res.json()["status"] == "not_found" and "kestrel" not in res.text
    own = await ds.client.get(api_path("read", world, id=world["other"], cwd=world["cwd_b"]), **bearer(token))
    assert own.json()["status"] == "ok" and "kestrel" in own.json()["text"]


@pytest.mark.asyncio
async def test_agent_project_search_stays_in_its_project(ds, world, token):
    res = await ds.client.get(api_path("search", world, q="kestrel"), **bearer(token))
    assert res.json()["results"] == []
    assert res.json()["root"] == world["cwd_a"]


@pytest.mark.asyncio
async def test_root_searches_globally(ds, world):
    res = await ds.client.get(api_path("search", world, q="kestrel", scope="global"), actor=ROOT)
    assert res.status_code == 200
    assert [h["id"] for h in res.json()["results"]] == [world["other"]]


@pytest.mark.asyncio
async def test_configured_cap_for_other_actors(locations, world):
    datasette = make_datasette(locations, permissions={ACTION: {"id": ["alice", "root"]}})
    await datasette.invoke_startup()
    alice = {"id": "alice"}
    wide = await datasette.client.get(api_path("search", world, scope="global"), actor=alice)
    assert wide.status_code == 400 and "heron" not in wide.text
    narrow = await datasette.client.get(api_path("search", world), actor=alice)
    assert narrow.status_code == 200 and narrow.json()["results"]
    root = await datasette.client.get(api_path("search", world, scope="global"), actor=ROOT)
    assert root.status_code == 200
    bob = await datasette.client.get(api_path("search", world), actor={"id": "bob"})
    assert bob.status_code == 403
    await datasette.invoke_shutdown()


@pytest.mark.asyncio
async def test_agent_max_scope_session_is_configurable(locations, world, token):
    datasette = make_datasette(locations, {"agent_max_scope": "session"})
    await datasette.invoke_startup()
    project = await datasette.client.get(api_path("search", world, scope="project"), **bearer(token))
    assert project.status_code == 400 and "heron" not in project.text
    default = await datasette.client.get(api_path("search", world, cwd=""), **bearer(token))
    assert default.status_code == 400  # session scope needs a session: never silently widened
    session = await datasette.client.get(
        api_path("search", world, scope="session", journal=str(world["a"].path)), **bearer(token)
    )
    assert session.status_code == 200 and session.json()["results"]
    named = await datasette.client.get(
        api_path("search", world, scope="session", session_id=world["a"].session_id, journal=str(world["a"].path)),
        **bearer(token),
    )
    assert named.status_code == 200 and named.json()["results"]
    unverifiable = await datasette.client.get(
        api_path("search", world, scope="session", session_id=world["a"].session_id), **bearer(token)
    )
    assert unverifiable.status_code == 400 and "heron" not in unverifiable.text
    other = await datasette.client.get(
        api_path("search", world, scope="session", session_id=world["b"].session_id, journal=str(world["a"].path)),
        **bearer(token),
    )
    assert other.status_code == 400 and "not the current session" in other.json()["error"]
    await datasette.invoke_shutdown()


@pytest.mark.asyncio
async def test_agent_cannot_name_another_projects_session(ds, world, token):
    own = await ds.client.get(
        api_path("search", world, q="heron", scope="session", session_id=world["a"].session_id), **bearer(token)
    )
    assert own.status_code == 200 and own.json()["results"]
    other = await ds.client.get(
        api_path("search", world, q="", scope="session", session_id=world["b"].session_id), **bearer(token)
    )
    assert other.status_code == 400 and "not in this project" in other.json()["error"]
    assert world["b"].session_id not in json.dumps(other.json().get("results", []))
