"""Issue 17's figures over HTTP: the usage and sessions API, the sessions and usage pages, the session
header, the overview's headline, the canned queries and the links the render hook puts on ids.

Every positive check sits beside a must-not over the same data (another project's session, a
token's cap, a secret in a first message, another database's ids).
"""

from __future__ import annotations

import sqlite3

import pytest
import pytest_asyncio
from datasette.database import Database
from plugin_world import HERON, ROOT, make_datasette, running


@pytest_asyncio.fixture
async def ds(locations, world):
    async with running(make_datasette(locations)) as datasette:
        yield datasette


# ---- the render hook's links ------------------------------------------------------------------


@pytest.mark.asyncio
async def test_session_and_entry_ids_in_index_sql_link_to_the_plugin_pages(ds, world):
    sid, entry = world["a"].session_id, world["ids"]["user"]
    sql = f"select session_id, id as entry_id from entries where id = '{entry}'"
    res = await ds.client.get("/history/-/query", params={"sql": sql}, actor=ROOT)
    assert res.status_code == 200, res.text
    assert f'<a href="/-/pi-memory/sessions/{sid}">{sid}</a>' in res.text
    assert f'<a href="/-/pi-memory/read?id={entry}&amp;session_id={sid}">{entry}</a>' in res.text
    assert HERON not in res.text  # a link reads nothing


@pytest.mark.asyncio
async def test_ids_in_another_database_stay_plain_text(locations, world, tmp_path):
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE t (session_id TEXT, entry_id TEXT)")
        c.execute("INSERT INTO t VALUES (?, ?)", (world["a"].session_id, world["ids"]["user"]))
    datasette = make_datasette(locations)
    datasette.add_database(Database(datasette, str(other)), name="other")
    async with running(datasette):
        res = await datasette.client.get("/other/t", actor=ROOT)
        index = await datasette.client.get("/history/sessions", actor=ROOT)
    assert res.status_code == 200 and world["a"].session_id in res.text
    assert "/-/pi-memory/sessions/" not in res.text and "/-/pi-memory/read?" not in res.text
    assert f'href="/-/pi-memory/sessions/{world["a"].session_id}"' in index.text  # the index's own view links
