"""A Datasette configured exactly as `pimem serve` configures it: anonymous visitors kept out, table pages
without facets until asked, search and canned queries, the table's search box.
"""

from __future__ import annotations

import pytest
import pytest_asyncio
from support.plugin_world import FLUENT, HERON, ROOT, bearer, pimem_serve_datasette, running


@pytest_asyncio.fixture
async def served_like_pimem_serve(locations, world):
    """A Datasette with exactly the configuration and metadata `pimem serve` uses."""
    async with running(pimem_serve_datasette(locations)) as datasette:
        yield datasette


@pytest.mark.asyncio
async def test_serve_configuration_keeps_anonymous_out(served_like_pimem_serve, token):
    ds = served_like_pimem_serve
    for path in (
        "/",
        "/history",
        "/history/entries",
        "/history/files.json",
        "/history/sessions",
        "/history/-/query.json?sql=select+path+from+files",
        "/history/largest_tool_outputs",
        "/-/pi-memory",
    ):
        anon = await ds.client.get(path)
        assert anon.status_code == 403, path
        assert ".jsonl" not in anon.text and "Apps/prjct" not in anon.text, path
        if path != "/-/pi-memory":  # the agent holds pi-memory-read, nothing else
            agent = await ds.client.get(path, **bearer(token))
            assert agent.status_code == 403, path
    assert (await ds.client.get("/-/pi-memory/api/status", **bearer(token))).status_code == 200


@pytest.mark.asyncio
async def test_pimem_serve_table_pages_compute_no_facets_or_suggestions_until_asked(served_like_pimem_serve, world):
    ds = served_like_pimem_serve
    extras = "_extra=facet_results&_extra=suggested_facets"
    for table in ("sessions", "entries"):
        page = (await ds.client.get(f"/history/{table}.json?{extras}", actor=ROOT)).json()
        assert page["rows"], table
        assert page["facet_results"]["results"] == {} and page["suggested_facets"] == [], table
    asked = await ds.client.get(f"/history/sessions.json?{extras}&_facet=cwd&_facet_date=started", actor=ROOT)
    facets = asked.json()["facet_results"]["results"]
    assert {"cwd", "started"} <= set(facets) and facets["started"]["type"] == "date"
    filtered = await ds.client.get(f"/history/entries.json?{extras}&session_id={world['a'].session_id}", actor=ROOT)
    assert filtered.json()["rows"] and filtered.json()["facet_results"]["results"] == {}


@pytest.mark.asyncio
async def test_serve_configuration_search_and_queries(served_like_pimem_serve, world):
    ds = served_like_pimem_serve
    found = await ds.client.get("/history/entries.json?_search=kestrel&_shape=array", actor=ROOT)
    assert [r["id"] for r in found.json()] == [world["other"]]
    page = await ds.client.get("/history/entries?_search=kestrel", actor=ROOT)
    assert FLUENT in page.text  # the render hook on a searched table page
    for name in (
        "sessions_per_project_per_week",
        "largest_tool_outputs",
        "compactions",
        "tool_usage",
        "activity_per_day",
    ):
        res = await ds.client.get(f"/history/{name}.json?_shape=array", actor=ROOT)
        assert res.status_code == 200, (name, res.text)
        assert res.json(), name
        assert HERON not in res.text  # canned queries are SQL: numbers and ids, never text
    compactions = (await ds.client.get("/history/compactions.json?_shape=array", actor=ROOT)).json()
    assert compactions[0]["tokens_before"] == 123456
    home = await ds.client.get("/", actor=ROOT)
    assert "Pi memory" in home.text
    described = await ds.client.get("/history/entries", actor=ROOT)
    assert "Byte offset of the line" in described.text


@pytest.mark.asyncio
async def test_table_search_box_finds_entries_by_their_terms(served_like_pimem_serve, world):
    ds = served_like_pimem_serve
    found = await ds.client.get(
        "/history/entries.json", params={"_search": "heron pipeline", "_shape": "objects"}, actor=ROOT
    )
    assert found.status_code == 200
    ids = {row["id"] for row in found.json()["rows"]}
    assert world["ids"]["compaction"] in ids
    assert world["other"] not in ids
    joined = await ds.client.get(
        "/history/entries.json", params={"_search": "heron-pipeline", "_shape": "objects"}, actor=ROOT
    )
    assert joined.status_code == 200, joined.text
    joined_ids = {row["id"] for row in joined.json()["rows"]}
    assert world["ids"]["compaction"] in joined_ids and world["other"] not in joined_ids
