"""The API's `journal` parameter: it indexes a new line at once and gives the project and session; a
journal outside the journal folders, or a file that is not one, is refused unread.
"""

from __future__ import annotations

import asyncio
import os

import pytest
from support.pijournal import Journal
from support.plugin_world import api_path, bearer

CANARY = "CANARY-7f3e9b-outside-the-journal-folders"


@pytest.mark.asyncio
async def test_journal_makes_a_new_line_findable_at_once(ds, world, token):
    a = world["a"]
    fresh = a.user("a moment ago: the osprey deadline moved")
    before = await ds.client.get(api_path("search", world, q="osprey"), **bearer(token))
    assert before.json()["results"] == []  # no background indexer here
    after = await ds.client.get(api_path("search", world, q="osprey", journal=str(a.path)), **bearer(token))
    assert after.status_code == 200
    assert [h["id"] for h in after.json()["results"]] == [fresh]
    read = await ds.client.get(api_path("read", world, id=fresh, journal=str(a.path), cwd=""), **bearer(token))
    assert read.json()["status"] == "ok" and "osprey" in read.json()["text"]


@pytest.mark.asyncio
async def test_journal_gives_the_project_and_session(ds, world, token):
    a = world["a"]
    res = await ds.client.get(api_path("search", world, cwd="", journal=str(a.path)), **bearer(token))
    assert res.json()["root"] == world["cwd_a"]
    session = await ds.client.get(
        api_path("search", world, cwd="", scope="session", journal=str(a.path)), **bearer(token)
    )
    assert session.status_code == 200
    assert {h["session_id"] for h in session.json()["results"]} == {a.session_id}


def _refused(res) -> None:
    assert res.status_code == 400, res.text
    assert "journal" in res.json()["error"] and CANARY not in res.text


@pytest.mark.asyncio
async def test_journal_outside_the_folders_is_refused_unread(ds, world, token, tmp_path, conn):
    written = Journal(tmp_path, "/", path=tmp_path / "elsewhere" / "notes.jsonl")
    written.user(CANARY)
    outside = written.path
    _refused(await ds.client.get(api_path("search", world, q=CANARY, journal=str(outside)), **bearer(token)))
    # a named pipe: opening it would block, so a quick 400 shows it was never opened
    fifo = tmp_path / "elsewhere" / "pipe.jsonl"
    os.mkfifo(fifo)
    _refused(await asyncio.wait_for(ds.client.get(api_path("search", world, journal=str(fifo)), **bearer(token)), 10))
    # a link inside the folders that points outside
    link = world["a"].path.parent / "link.jsonl"
    link.symlink_to(outside)
    _refused(await ds.client.get(api_path("search", world, q=CANARY, journal=str(link)), **bearer(token)))
    # ../ out of the folders
    sneaky = str(world["a"].path.parent) + "/../../../elsewhere/notes.jsonl"
    _refused(await ds.client.get(api_path("search", world, journal=sneaky), **bearer(token)))
    paths = [r[0] for r in conn.execute("SELECT path FROM files")]
    assert not any("elsewhere" in p or p.endswith("link.jsonl") for p in paths)


@pytest.mark.asyncio
async def test_journal_that_is_not_a_journal_is_refused(ds, world, token):
    folder = world["a"].path.parent
    notes = folder / "notes.txt"
    notes.write_text(CANARY)
    _refused(await ds.client.get(api_path("search", world, journal=str(notes)), **bearer(token)))
    sub = folder / "dir.jsonl"
    sub.mkdir()
    _refused(await ds.client.get(api_path("search", world, journal=str(sub)), **bearer(token)))
    fifo = folder / "pipe.jsonl"
    os.mkfifo(fifo)
    _refused(await asyncio.wait_for(ds.client.get(api_path("search", world, journal=str(fifo)), **bearer(token)), 10))
    _refused(await ds.client.get(api_path("search", world, journal="relative/x.jsonl"), **bearer(token)))
    _refused(await ds.client.get(api_path("search", world, journal=str(folder / "missing.jsonl")), **bearer(token)))
