"""What the plugin keeps for a few seconds per request (a token's actor, an actor's permission) never outlives
what it was decided from: a replaced secret refuses its tokens at once, an expired token is refused.

A real index from journals written line by line, a real Datasette started without the pi-memory secret
(as a plain `datasette serve history.sqlite` is), so only the secret file can vouch for the agent's token.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import threading
import time

import pytest
from datasette.app import Datasette as Signer
from datasette.tokens import TokenRestrictions
from datasette_test import Datasette
from support.plugin_world import HERON, ROOT, api_path, bearer, make_datasette, running

from datasette_pi_memory.server.serve import SECRET_FILE, ensure_secret
from datasette_pi_memory.state import ACTION, AGENT_ID, PLUGIN, state
from pimem_index import store
from pimem_index.index.indexer import index_all


def plain_datasette(locations) -> Datasette:
    """The index served by a Datasette whose own secret is not the pi-memory one."""
    return Datasette(
        [str(locations.db_path)], secret="not-the-pi-memory-secret", plugin_config={PLUGIN: {"background_index": False}}
    )


def replace_secret(locations) -> None:
    """A new secret in place of the old one, as removing the file and running `pimem token` again makes."""
    path = locations.memory_dir / SECRET_FILE
    fresh = path.with_name(".secret-new")
    fresh.write_text(secrets.token_hex(32) + "\n")
    os.chmod(fresh, 0o600)
    os.replace(fresh, path)


@pytest.mark.asyncio
async def test_a_token_is_refused_on_the_request_after_its_secret_is_replaced_though_its_actor_was_kept(
    locations, world, token
):
    async with running(plain_datasette(locations)) as ds:
        path = api_path("search", world)
        first = await ds.client.get(path, **bearer(token))
        again = await ds.client.get(path, **bearer(token))
        assert first.status_code == again.status_code == 200
        assert HERON in again.text and again.json() == first.json()
        assert len(state(ds).tokens) == 1  # the second request was answered from what was kept
        replace_secret(locations)
        refused = await ds.client.get(path, **bearer(token))
        assert refused.status_code == 401
        assert HERON not in refused.text


@pytest.mark.asyncio
async def test_an_expiring_token_is_refused_once_it_expires_though_its_actor_was_kept(locations, world):
    signer = Signer(secret=ensure_secret(locations))
    await signer.invoke_startup()
    async with running(plain_datasette(locations)) as ds:
        path = api_path("search", world)
        restrictions = TokenRestrictions().allow_all(ACTION)
        expiring = await signer.create_token(AGENT_ID, expires_after=3, restrictions=restrictions)  # 2 to 3 s
        accepted = await ds.client.get(path, **bearer(expiring))
        assert accepted.status_code == 200 and HERON in accepted.text
        deadline = time.monotonic() + 10
        while (await ds.client.get(path, **bearer(expiring))).status_code == 200 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        refused = await ds.client.get(path, **bearer(expiring))
        assert refused.status_code == 401 and HERON not in refused.text


@pytest.mark.asyncio
async def test_a_kept_permission_answers_as_datasette_does_for_each_actor(locations, world, token):
    async with running(plain_datasette(locations)) as ds:
        memory = state(ds)
        for actor in ({"id": AGENT_ID}, {"id": "root"}, {"id": "mallory"}, None):
            asked = await ds.allowed(action=ACTION, actor=actor)
            assert await memory.allowed(ds, actor) == asked
            assert await memory.allowed(ds, actor) == asked  # kept
        assert await memory.allowed(ds, {"id": AGENT_ID})
        assert not await memory.allowed(ds, {"id": "mallory"})


@pytest.mark.asyncio
async def test_the_api_answers_while_every_one_of_datasette_s_sql_threads_is_held(locations, world, token):
    async with running(make_datasette(locations)) as ds:
        path = api_path("search", world)
        assert (await ds.client.get(path, **bearer(token))).status_code == 200  # its permission is now kept
        release = threading.Event()
        held = [ds.executor.submit(release.wait) for _ in range(ds.setting("num_sql_threads"))]  # slow SQL
        try:
            sql = asyncio.ensure_future(
                ds.client.get("/history/-/query.json?sql=select+count(*)+from+files", actor=ROOT)
            )
            search = asyncio.ensure_future(ds.client.get(path, **bearer(token)))
            done, _pending = await asyncio.wait({sql, search}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
            assert search in done and search.result().status_code == 200 and HERON in search.result().text
            assert not sql.done()  # the SQL page still waits for one of Datasette's threads
        finally:
            release.set()
        assert (await sql).status_code == 200
        assert all(f.done() for f in held)


@pytest.mark.asyncio
async def test_a_replaced_index_is_never_answered_from_what_was_kept_for_the_one_before(
    conn, locations, new_journal, home
):
    first = new_journal(session_id="0b6e6f2c-aaaa-4aaa-8aaa-aaaaaaaaaaaa")
    first.user("heron deploy notes")
    index_all(conn, locations)
    path = f"/-/pi-memory/api/search?q=heron&scope=global&cwd={home / 'Apps/prjct'}"
    async with running(make_datasette(locations)) as ds:
        before = (await ds.client.get(path, actor=ROOT)).json()["sessions"]
        again = (await ds.client.get(path, actor=ROOT)).json()["sessions"]
        assert before == again and before[first.session_id]["short_id"] == "0b6e6f2c"
        second = new_journal(session_id="0b6e6f2c-bbbb-4bbb-8bbb-bbbbbbbbbbbb")  # the same first eight characters
        second.user("heron rollback notes")
        store.delete_index_files(locations.db_path)  # `pimem rebuild` at the same path, under the server
        fresh = store.open_index(locations.db_path)
        try:
            index_all(fresh, locations)
        finally:
            fresh.close()
        after = (await ds.client.get(path, actor=ROOT)).json()["sessions"]
        assert after[first.session_id]["short_id"] == "0b6e6f2c-a" and second.session_id in after
        assert after[first.session_id]["short_id"] != before[first.session_id]["short_id"]
