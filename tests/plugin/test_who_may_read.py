"""Who may call the pi-memory API and open its pages: the action, tokens and their secret, the menu;
no HTTP route forgets or collects.
"""

from __future__ import annotations

import pytest
from datasette.tokens import TokenRestrictions
from datasette_test import Datasette
from support.plugin_world import ROOT, api_path, bearer, make_datasette, running

from datasette_pi_memory.state import ACTION, AGENT_ID

API = ("search", "read", "summaries", "status")


@pytest.mark.asyncio
async def test_the_action_is_registered(ds):
    assert ACTION in ds.actions
    assert ds.actions[ACTION].description == "Read Pi journal text"


@pytest.mark.asyncio
@pytest.mark.parametrize("action", API)
async def test_api_needs_permission(ds, world, token, action):
    path = api_path(action, world)
    anon = await ds.client.get(path)
    assert anon.status_code == 401
    assert "heron" not in anon.text and "error" in anon.json()

    bad = await ds.client.get(path, **bearer("dstok_" + "x" * 40))
    assert bad.status_code == 401 and "heron" not in bad.text

    forged = await ds.client.get(path, **bearer(token[:-4] + "AAAA"))
    assert forged.status_code == 401 and "heron" not in forged.text

    other = await ds.client.get(path, actor={"id": "alice"})
    assert other.status_code == 403 and "heron" not in other.text

    agent = await ds.client.get(path, **bearer(token))
    assert agent.status_code == 200, agent.text
    root = await ds.client.get(path, actor=ROOT)
    assert root.status_code == 200, root.text
    if action != "status":
        assert "heron" in root.text.lower() and "heron" in agent.text.lower()


PAGES = (
    "/-/pi-memory",
    "/-/pi-memory/search?q=heron&scope=global",
    "/-/pi-memory/summaries?scope=global",
    "/-/pi-memory/read?id={user}&session_id={sid}",
)


@pytest.mark.asyncio
@pytest.mark.parametrize("page", PAGES + ("/-/pi-memory/sessions/{sid}",))
async def test_pages_need_permission(ds, world, page):
    path = page.format(user=world["ids"]["user"], sid=world["a"].session_id)
    for kwargs in ({}, {"actor": {"id": "alice"}}):
        denied = await ds.client.get(path, **kwargs)
        assert denied.status_code == 403, (path, kwargs)
        assert "heron" not in denied.text.lower()
    allowed = await ds.client.get(path, actor=ROOT)
    assert allowed.status_code == 200, allowed.text
    assert "heron" in allowed.text.lower()


@pytest.mark.asyncio
async def test_a_token_for_another_action_reads_nothing(ds, world, locations):
    other = await ds.create_token("pi-agent", restrictions=TokenRestrictions().allow_all("view-instance"))
    for action in API:
        res = await ds.client.get(api_path(action, world), **bearer(other))
        assert res.status_code == 403, (action, res.text)
        assert "heron" not in res.text
    page = await ds.client.get("/-/pi-memory", **bearer(other))
    assert page.status_code == 403


@pytest.mark.asyncio
async def test_the_agent_token_opens_nothing_else(ds, world, token):
    for path in ("/", "/history", "/history/entries.json", "/history/-/query.json?sql=select+1"):
        res = await ds.client.get(path, **bearer(token))
        assert res.status_code == 403, (path, res.status_code)


@pytest.mark.asyncio
async def test_make_token_survives_a_restart(locations, world, token):
    for _ in range(2):  # two server lifetimes, one persistent secret
        datasette = make_datasette(locations)
        await datasette.invoke_startup()
        res = await datasette.client.get(api_path("status", world), **bearer(token))
        assert res.status_code == 200
        await datasette.invoke_shutdown()
    assert token.startswith("dstok_")
    secret = locations.memory_dir / "secret"
    assert secret.stat().st_mode & 0o777 == 0o600
    assert locations.memory_dir.stat().st_mode & 0o777 == 0o700


@pytest.mark.asyncio
async def test_a_token_signed_with_another_secret_is_refused(locations, world):
    """Issue 19: a pimem token now works under any secret the instance has; one signed elsewhere does not."""
    foreign = await Datasette(secret="not-the-pimem-secret").create_token(
        AGENT_ID, restrictions=TokenRestrictions().allow_all(ACTION)
    )
    async with running(make_datasette(locations)) as datasette:
        res = await datasette.client.get(api_path("status", world), **bearer(foreign))
        assert res.status_code == 401


@pytest.mark.asyncio
async def test_menu_link_only_for_readers(ds):
    root = await ds.client.get("/-/pi-memory", actor=ROOT)
    assert 'href="/-/pi-memory">Pi memory</a>' in root.text
    home_alice = await ds.client.get("/", actor={"id": "alice"})
    assert 'href="/-/pi-memory">Pi memory</a>' not in home_alice.text


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path", ["/-/pi-memory/api/forget", "/-/pi-memory/api/unforget", "/-/pi-memory/forget", "/-/pi-memory/api/gc"]
)
async def test_no_http_route_can_forget_or_collect(ds, world, token, path):
    for method in ("get", "post"):
        for kwargs in ({"actor": ROOT}, bearer(token)):
            response = await getattr(ds.client, method)(path + f"?id={world['ids']['user']}", **kwargs)
            assert response.status_code in (404, 405), (method, path, response.status_code)
    read = await ds.client.get(api_path("read", world), **bearer(token))
    assert read.json()["status"] == "ok"
    assert not (world["a"].path.parent.parent.parent / "pi-memory" / "forgotten.jsonl").exists()
