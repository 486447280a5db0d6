"""The plugin's pages over a real index: the overview, search, summaries, read and session pages, and
what an empty Pi folder's page says.
"""

from __future__ import annotations

import os

import pytest
from support.plugin_world import ROOT, make_datasette

from pimem_index.index.indexer import index_all


@pytest.mark.asyncio
async def test_the_overview_shows_activity_and_recent_sessions_titled_by_their_first_message(ds, world):
    res = await ds.client.get("/-/pi-memory", actor=ROOT)
    assert res.status_code == 200
    text = res.text
    assert "<svg" in text and 'class="pi-memory-activity"' in text and "<rect" in text
    assert "please look at the heron" in text  # the first user message titles the recent session
    assert f"/-/pi-memory/sessions/{world['a'].session_id}" in text
    assert 'action="/-/pi-memory/search"' in text
    assert "Run Pi once" not in text


@pytest.mark.asyncio
async def test_search_page_highlights_and_escapes(ds, world):
    res = await ds.client.get("/-/pi-memory/search", params={"q": "heron markup", "scope": "global"}, actor=ROOT)
    assert res.status_code == 200
    assert "<mark>heron</mark>" in res.text and "<mark>markup</mark>" in res.text
    assert "&lt;script&gt;alert" in res.text and "<script>alert" not in res.text
    assert f"/-/pi-memory/read?id={world['ids']['script']}" in res.text
    assert f"/-/pi-memory/sessions/{world['a'].session_id}?entry={world['ids']['script']}" in res.text


@pytest.mark.asyncio
async def test_the_search_page_filters_by_kind_and_scope_and_rejects_a_bad_date(ds, world):
    res = await ds.client.get(
        "/-/pi-memory/search", params={"q": "heron", "scope": "global", "kind": "compaction"}, actor=ROOT
    )
    assert "the <mark>heron</mark> pipeline was fixed" in res.text
    assert "please look at" not in res.text
    bad = await ds.client.get("/-/pi-memory/search", params={"q": "heron", "since": "soon"}, actor=ROOT)
    assert bad.status_code == 400 and "YYYY-MM-DD" in bad.text
    project = await ds.client.get(
        "/-/pi-memory/search", params={"q": "kestrel", "scope": "project", "cwd": world["cwd_a"]}, actor=ROOT
    )
    assert "only in the fluenty" not in project.text


@pytest.mark.asyncio
async def test_the_summaries_page_shows_summaries_not_messages(ds, world):
    res = await ds.client.get("/-/pi-memory/summaries", params={"scope": "global"}, actor=ROOT)
    assert res.status_code == 200
    assert "the heron pipeline was fixed" in res.text and "Branch explored the heron rollback" in res.text
    assert "please look at" not in res.text


@pytest.mark.asyncio
async def test_read_page_pages_through_long_text(ds, world, locations, conn):
    long_id = world["a"].tool_result("read", "".join(f"row {i:05d} heron\n" for i in range(3000)))
    index_all(conn, locations)
    first = await ds.client.get(
        "/-/pi-memory/read", params={"id": long_id, "session_id": world["a"].session_id}, actor=ROOT
    )
    assert first.status_code == 200
    assert "row 00000 heron" in first.text and "next page" in first.text and "row 02999" not in first.text
    last = await ds.client.get(
        "/-/pi-memory/read", params={"id": long_id, "session_id": world["a"].session_id, "offset": "32000"}, actor=ROOT
    )
    assert "row 02999 heron" in last.text and "previous page" in last.text
    missing = await ds.client.get("/-/pi-memory/read", params={"id": "nope", "scope": "global"}, actor=ROOT)
    assert "No entry nope" in missing.text


@pytest.mark.asyncio
async def test_session_page_shows_the_conversation_in_order(ds, world):
    res = await ds.client.get(f"/-/pi-memory/sessions/{world['a'].session_id}", actor=ROOT)
    assert res.status_code == 200
    text = res.text
    order = [
        text.index(f'id="entry-{world["ids"][k]}"')
        for k in ("user", "assistant", "tool_result", "bash", "compaction", "branch_summary", "script")
    ]
    assert order == sorted(order)
    assert "pytest -q" in text  # the tool call
    assert "123,456 tokens before" in text
    assert "<details>" in text and "line 399 of output" in text  # long output folded, still there
    assert "&lt;script&gt;alert" in text and "<script>alert" not in text
    missing = await ds.client.get("/-/pi-memory/sessions/no-such-session", actor=ROOT)
    assert missing.status_code == 404


@pytest.mark.asyncio
async def test_empty_pi_folder_page_says_what_to_do(locations, conn):
    os.rmdir(locations.sessions_dirs[0])
    datasette = make_datasette(locations)
    await datasette.invoke_startup()
    res = await datasette.client.get("/-/pi-memory", actor=ROOT)
    assert res.status_code == 200
    assert "No Pi session journals found yet" in res.text and "Run Pi once" in res.text
    assert "pimem folders add DIR" in res.text and "(missing)" in res.text
    assert "--sessions-dir" not in res.text and "8001" not in res.text and "restart with" not in res.text
    status = await datasette.client.get("/-/pi-memory/api/status", actor=ROOT)
    assert status.json()["journals_total"] == 0
    await datasette.invoke_shutdown()
