"""The whole plugin under a plain `datasette serve history.sqlite other.db`: no pimem config, no metadata file,
Datasette's own random secret. Canned queries, descriptions, facets, the search box and `pimem token`'s
tokens come from the plugin's hooks, for the index only."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time

import pytest
import pytest_asyncio
from datasette_test import Datasette
from support.plugin_world import FLUENT, ROOT, api_path, bearer, running
from support.servers import free_port, get

from datasette_pi_memory.state import ACTION

QUERIES = ("sessions_per_project_per_week", "largest_tool_outputs", "compactions", "tool_usage", "activity_per_day")


@pytest.fixture
def other_db(tmp_path) -> str:
    path = tmp_path / "other.db"
    c = sqlite3.connect(path)
    c.execute("CREATE TABLE entries (id TEXT, kind TEXT)")
    c.execute("INSERT INTO entries VALUES ('x1', 'user'), ('x2', 'bash')")
    c.commit()
    c.close()
    return str(path)


@pytest_asyncio.fixture
async def plain(locations, world, other_db):
    """`datasette serve history.sqlite other.db` with the plugin installed, root enabled (--root)."""
    ds = Datasette([str(locations.db_path), other_db], permissions={ACTION: {"id": ["root"]}})
    ds.root_enabled = True
    async with running(ds):
        yield ds


@pytest.mark.asyncio
async def test_a_plain_datasette_has_the_canned_queries_on_the_index_only(plain, world):
    for name in QUERIES:
        res = await plain.client.get(f"/history/{name}.json?_shape=array", actor=ROOT)
        assert res.status_code == 200, (name, res.text)
        other = await plain.client.get(f"/other/{name}.json?_shape=array", actor=ROOT)
        assert other.status_code == 404, name
    compactions = (await plain.client.get("/history/compactions.json?_shape=array", actor=ROOT)).json()
    assert compactions[0]["tokens_before"] == 123456


@pytest.mark.asyncio
async def test_a_plain_datasette_has_the_entries_search_box(plain, world):
    found = await plain.client.get("/history/entries.json?_search=kestrel&_shape=array", actor=ROOT)
    assert [r["id"] for r in found.json()] == [world["other"]]
    page = await plain.client.get("/history/entries?_search=kestrel", actor=ROOT)
    assert 'name="_search"' in page.text and FLUENT in page.text
    other = await plain.client.get("/other/entries.json?_search=kestrel&_shape=array", actor=ROOT)
    assert len(other.json()) == 2  # no search configured on the other database's table: every row


@pytest.mark.asyncio
async def test_a_plain_datasette_describes_the_index_tables_without_default_facets(plain, world):
    described = await plain.client.get("/history/entries", actor=ROOT)
    assert "Byte offset of the line" in described.text and "_facet=kind" in described.text
    for table in ("sessions", "entries"):
        page = await plain.client.get(f"/history/{table}.json?_extra=facet_results", actor=ROOT)
        assert page.json()["rows"] and page.json()["facet_results"]["results"] == {}, table
    asked = await plain.client.get("/history/sessions.json?_extra=facet_results&_facet_date=started", actor=ROOT)
    assert asked.json()["facet_results"]["results"]["started"]["type"] == "date"
    other = await plain.client.get("/other/entries", actor=ROOT)
    assert "Byte offset of the line" not in other.text


@pytest.mark.asyncio
async def test_the_instance_configuration_wins_over_the_plugins_table_settings(locations, world):
    config = {"databases": {"history": {"tables": {"entries": {"facets": ["role"]}}}}}
    ds = Datasette([str(locations.db_path)], config=config, permissions={ACTION: {"id": ["root"]}})
    ds.root_enabled = True
    async with running(ds):
        res = await ds.client.get("/history/entries.json?_extra=facet_results", actor=ROOT)
        facets = res.json()["facet_results"]["results"]
        assert "role" in facets and "kind" not in facets
        found = await ds.client.get("/history/entries.json?_search=kestrel&_shape=array", actor=ROOT)
        assert [r["id"] for r in found.json()] == [world["other"]]  # what it does not set still comes


@pytest.mark.asyncio
async def test_pimem_tokens_work_under_a_datasette_with_its_own_secret(locations, world, token):
    async with running(Datasette([str(locations.db_path)], secret="the-instances-own-secret")) as ds:
        res = await ds.client.get(api_path("search", world), **bearer(token))
        assert res.status_code == 200 and res.json()["results"]
        forged = await ds.client.get(api_path("search", world), **bearer(token[:-4] + "AAAA"))
        assert forged.status_code == 401 and "results" not in forged.text


@pytest.mark.asyncio
async def test_a_token_signed_with_neither_secret_is_refused(locations, world):
    from datasette.tokens import TokenRestrictions

    stranger = Datasette(secret="a-third-secret")
    foreign = await stranger.create_token("pi-agent", restrictions=TokenRestrictions().allow_all(ACTION))
    ds = Datasette([str(locations.db_path)], secret="the-instances-own-secret")
    async with running(ds):
        res = await ds.client.get(api_path("status", world), **bearer(foreign))
        assert res.status_code == 401


@pytest.mark.asyncio
async def test_the_instances_own_tokens_still_work(locations, world):
    from datasette.tokens import TokenRestrictions

    async with running(Datasette([str(locations.db_path)], secret="the-instances-own-secret")) as ds:
        own = await ds.create_token("pi-agent", restrictions=TokenRestrictions().allow_all(ACTION))
        res = await ds.client.get(api_path("status", world), **bearer(own))
        assert res.status_code == 200


@pytest.mark.asyncio
async def test_the_secret_of_an_instance_that_does_not_serve_the_index_opens_nothing(locations, world, token, other_db):
    ds = Datasette([other_db], plugin_config={"datasette-pi-memory": {"db": str(locations.db_path)}})
    async with running(ds):
        res = await ds.client.get("/-/actor.json", **bearer(token))
        assert res.status_code == 401 or res.json()["actor"] is None


def test_a_real_datasette_serve_indexes_in_the_background_and_takes_pimem_tokens(locations, world, token, home):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "DATASETTE_SECRET"}
    cmd = [sys.executable, "-m", "datasette", "serve", str(locations.db_path), "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        fresh = world["a"].user("the plain albatross arrived")
        deadline = time.monotonic() + 30
        found: list = []
        while time.monotonic() < deadline and not found:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                status, body = get(url + api_path("search", world, q="albatross"), token)
            except OSError:
                status, body = 0, ""
            found = [h["id"] for h in json.loads(body)["results"]] if status == 200 else []
            if not found:
                time.sleep(0.2)
        assert found == [fresh]
        status, _ = get(url + api_path("search", world, q="albatross"), "dstok_bogus")
        assert status == 401
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_every_column_of_the_index_tables_and_views_is_described(conn):
    from datasette_pi_memory.catalog import index_description

    tables = index_description()["tables"]
    shown = conn.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'entries_fts%' "
        "AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    assert {"entries", "tool_calls", "sessions", "journal_errors"} <= {name for (name,) in shown}
    for (name,) in shown:
        columns = [row[1] for row in conn.execute(f"PRAGMA table_xinfo({name})")]  # computed columns too
        described = (tables.get(name) or {}).get("columns") or {}
        assert not set(columns) - set(described) - {"rowid"}, (name, set(columns) - set(described))
        assert not set(described) - set(columns) - {"rowid"}, (name, "described but absent")
