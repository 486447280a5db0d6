"""Forks across journals, on the real Pi's fork and clone: a child links to its parent (resolved from the parent
journal's path Pi records), the parent lists its children, the sessions list and replies name both; nothing
outside the journal folders is read or shown, and nothing beyond the caller's cap is named."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.plugin_world import ROOT, bearer, make_datasette, running
from support.real_pi_index import session_id

from pimem_index.cli import cli
from pimem_index.index import indexer
from pimem_index.search.session_ids import short_ids
from pimem_index.session import lineage


def entry_ids(conn, sid: str) -> set[str]:
    rows = conn.execute("SELECT e.id FROM entries e JOIN files f ON f.id = e.file_id WHERE f.session_id = ?", (sid,))
    return {row[0] for row in rows}


def test_a_fork_and_a_clone_name_their_parent_resolved_from_the_journal_path(corpus):
    copied, locations, conn = corpus
    parent = session_id(copied, "fork_parent")
    for role in ("fork_child", "clone_child"):
        found = lineage.lineage(conn, locations, session_id(copied, role))
        assert found["parent"] == {
            "session_id": parent,
            "short_id": short_ids(conn, [parent])[parent],
            "title": "What is this project?",
        }
        assert found["parent_outside"] is False
        assert str(copied.journal("fork_parent")) not in json.dumps(found), "the parent's path is never shown"


def test_the_parent_lists_its_forks_with_their_first_own_entry_and_length(corpus):
    copied, locations, conn = corpus
    parent, fork, clone = (session_id(copied, r) for r in ("fork_parent", "fork_child", "clone_child"))
    found = lineage.lineage(conn, locations, parent)
    assert found["parent"] is None and found["parent_outside"] is False
    assert [c["session_id"] for c in found["children"]] == [fork, clone], "oldest first"
    copied_ids = entry_ids(conn, parent)
    for child in found["children"]:
        own = entry_ids(conn, child["session_id"]) - copied_ids
        assert child["own_entries"] == len(own) > 0 and child["entries"] > child["own_entries"]
        assert child["first_entry"]["id"] in own, "the first entry past what the fork copied, not a copied one"
    assert found["children"][0]["first_entry"]["kind"] == "user" and found["children"][0]["first_entry"]["text"]


def test_a_parent_outside_the_journal_folders_is_never_read_or_named(new_journal, tmp_path, locations, conn):
    outside = tmp_path / "elsewhere" / "2026-01-01T00-00-00-000Z_0b6e6f2c-8d2b-4a43-9b3b-1f1f2c6a7d01.jsonl"
    outside.parent.mkdir()
    outside.write_text('{"type":"session","version":3,"id":"0b6e6f2c-8d2b-4a43-9b3b-1f1f2c6a7d01","cwd":"/x"}\n')
    child = new_journal("Apps/prjct", parent_session=str(outside))
    child.user("a fork of a journal kept elsewhere")
    indexer.index_all(conn, locations)
    found = lineage.lineage(conn, locations, child.session_id)
    assert found == {"parent": None, "parent_outside": True, "children": []}
    assert conn.execute("SELECT count(*) FROM files WHERE path = ?", (str(outside),)).fetchone()[0] == 0


@pytest.mark.asyncio
async def test_the_session_page_links_a_fork_to_its_parent_and_the_parent_to_its_forks(corpus):
    copied, locations, conn = corpus
    parent, fork, clone = (session_id(copied, r) for r in ("fork_parent", "fork_child", "clone_child"))
    async with running(make_datasette(locations)) as ds:
        child_page = (await ds.client.get(f"/-/pi-memory/sessions/{fork}", actor=ROOT)).text
        parent_page = (await ds.client.get(f"/-/pi-memory/sessions/{parent}", actor=ROOT)).text
    assert f'href="/-/pi-memory/sessions/{parent}"' in child_page and "Forked from" in child_page
    assert str(copied.sessions) not in child_page.split("Journal")[0], "no link made of the parent journal's path"
    assert "%2F" not in child_page.split("Forked from")[1].split("</p>")[0]
    assert "Forked into 2 sessions" in parent_page
    for child in (fork, clone):
        assert f'href="/-/pi-memory/sessions/{child}"' in parent_page
        assert f'href="/-/pi-memory/sessions/{child}?entry=' in parent_page, "a link to the fork's first own entry"
    assert "Forked from" not in parent_page


@pytest.mark.asyncio
async def test_api_sessions_and_pimem_sessions_name_parents_and_forks(corpus, monkeypatch):
    copied, locations, conn = corpus
    parent, fork, clone, lone = (
        session_id(copied, r) for r in ("fork_parent", "fork_child", "clone_child", "same_minute_a")
    )
    async with running(make_datasette(locations)) as ds:
        reply = (await ds.client.get("/-/pi-memory/api/sessions?limit=50", actor=ROOT)).json()
    cli_reply = json.loads(CliRunner().invoke(cli, ["sessions", "--json", "--no-index", "--limit", "50"]).output)
    for data in (reply, cli_reply):
        rows = {s["session_id"]: s for s in data["sessions"]}
        assert rows[parent]["forks"] == [fork, clone] and rows[parent]["parent_session_id"] is None
        assert rows[fork]["parent_session_id"] == rows[clone]["parent_session_id"] == parent
        assert rows[lone]["parent_session_id"] is None and rows[lone]["forks"] == []
    view = dict(conn.execute("SELECT session_id, parent_session_id FROM sessions").fetchall())
    assert view[fork] == view[clone] == parent and view[parent] is None and view[lone] is None


@pytest.mark.asyncio
async def test_a_project_capped_token_is_not_told_of_a_fork_in_another_project(
    new_journal, home, locations, conn, token
):
    parent = new_journal("Apps/one")
    parent.user("the original plan")
    child = new_journal("Apps/two", parent_session=str(parent.path))
    child.user("the forked plan")
    indexer.index_all(conn, locations)
    async with running(make_datasette(locations)) as ds:
        for cwd, own, other in ((home / "Apps/two", child, parent), (home / "Apps/one", parent, child)):
            reply = (await ds.client.get(f"/-/pi-memory/api/sessions?cwd={cwd}", **bearer(token))).json()
            [row] = reply["sessions"]
            assert row["session_id"] == own.session_id
            assert row["parent_session_id"] is None and row["forks"] == []
            assert other.session_id not in json.dumps(reply)
        wide = (await ds.client.get("/-/pi-memory/api/sessions", actor=ROOT)).json()
    rows = {s["session_id"]: s for s in wide["sessions"]}
    assert rows[child.session_id]["parent_session_id"] == parent.session_id
    assert rows[parent.session_id]["forks"] == [child.session_id]


@pytest.mark.asyncio
async def test_the_sessions_list_marks_forks_with_their_parent(corpus):
    copied, locations, conn = corpus
    parent, fork = session_id(copied, "fork_parent"), session_id(copied, "fork_child")
    short = short_ids(conn, [parent, fork])
    async with running(make_datasette(locations)) as ds:
        page = (await ds.client.get("/-/pi-memory/sessions", actor=ROOT)).text
    row = page.split(f'<td class="pm-title"><a href="/-/pi-memory/sessions/{fork}"')[1].split("</tr>")[0]
    assert f'fork of <a href="/-/pi-memory/sessions/{parent}" title="{parent}">{short[parent]}</a>' in row
    parent_row = page.split(f'<td class="pm-title"><a href="/-/pi-memory/sessions/{parent}"')[1].split("</tr>")[0]
    assert "forked into" in parent_row and short[fork] in parent_row and "fork of" not in parent_row
