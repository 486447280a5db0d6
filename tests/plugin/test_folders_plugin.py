"""The plugin reads the recorded journal folders (pi-memory/folders.json) under a plain `datasette serve`, and a
running instance picks up a folder recorded or removed while it runs: its status lists it, its reads open it."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from datasette_test import Datasette
from support.plugin_world import ROOT, running
from support.real_pi import copy_corpus

from datasette_pi_memory.state import ACTION
from pimem_index import store
from pimem_index.index import indexer
from pimem_index.locations import record_folders, resolve
from pimem_index.manage import folders


@pytest.fixture
def elsewhere(agent_dir, tmp_path):
    """Journals the real Pi wrote in a folder outside the agent folder, indexed by a command given that folder."""
    corpus = copy_corpus(tmp_path / "old-pi")
    locations = resolve(None, [str(corpus.sessions)])
    conn = store.open_index(locations.db_path)
    indexer.index_all(conn, locations)
    conn.close()
    return corpus


async def read_first_entry(ds, corpus) -> dict:
    """The API's read of the first user entry of the real-Pi corpus's alpha project, as root."""
    cwd = str(corpus.projects["alpha"])
    search = await ds.client.get(f"/-/pi-memory/api/search?{urlencode({'cwd': cwd, 'kind': 'user'})}", actor=ROOT)
    hit = search.json()["results"][0]
    params = urlencode({"id": hit["id"], "session_id": hit["session_id"], "cwd": cwd})
    return (await ds.client.get(f"/-/pi-memory/api/read?{params}", actor=ROOT)).json()


@pytest.mark.asyncio
async def test_a_plain_datasette_reads_the_recorded_folders(agent_dir, elsewhere):
    record_folders(agent_dir, [str(elsewhere.sessions)])
    ds = Datasette([str(resolve().db_path)], permissions={ACTION: {"id": ["root"]}})
    ds.root_enabled = True
    async with running(ds):
        status = (await ds.client.get("/-/pi-memory/api/status", actor=ROOT)).json()
        assert str(elsewhere.sessions) in status["sessions_dirs"]
        assert status["journals_total"] == len(elsewhere.all_journals())
        read = await read_first_entry(ds, elsewhere)
        assert read["status"] == "ok" and read["text"]


@pytest.mark.asyncio
async def test_a_running_instance_picks_up_a_folder_recorded_or_removed_while_it_runs(agent_dir, elsewhere):
    ds = Datasette([str(resolve().db_path)], permissions={ACTION: {"id": ["root"]}})
    ds.root_enabled = True
    async with running(ds):
        unread = await read_first_entry(ds, elsewhere)
        assert unread["status"] == "unavailable" and "outside the journal folders" in unread["reason"]
        record_folders(agent_dir, [str(elsewhere.sessions)])
        read = await read_first_entry(ds, elsewhere)
        assert read["status"] == "ok" and read["text"]
        status = (await ds.client.get("/-/pi-memory/api/status", actor=ROOT)).json()
        assert {"path": str(elsewhere.sessions), "source": "recorded", "exists": True} in status["folders"]
        folders.remove(resolve(), str(elsewhere.sessions))
        after = (await ds.client.get("/-/pi-memory/api/status", actor=ROOT)).json()
        assert str(elsewhere.sessions) not in after["sessions_dirs"] and after["sessions"] == 0
