"""Pages load nothing from other origins: every page sends a policy that forbids it, and a summary's
remote image is a link, never an image.
"""

from __future__ import annotations

import pytest
from support.plugin_world import ROOT, api_path, make_datasette, running

from pimem_index.index.indexer import index_all

PAGES = (
    "/-/pi-memory",
    "/-/pi-memory/search?q=heron&scope=global",
    "/-/pi-memory/summaries?scope=global",
    "/-/pi-memory/sessions",
    "/-/pi-memory/usage",
)


@pytest.mark.asyncio
async def test_every_page_sends_a_policy_that_loads_nothing_from_other_origins(ds, world):
    pages = [*PAGES, f"/-/pi-memory/sessions/{world['a'].session_id}", f"/-/pi-memory/read?id={world['ids']['user']}"]
    for path in pages:
        res = await ds.client.get(path, actor=ROOT)
        assert res.status_code == 200, path
        policy = dict(
            part.strip().split(" ", 1) for part in res.headers["content-security-policy"].split(";") if part.strip()
        )
        assert policy["default-src"] == "'self'" and policy["img-src"] == "'self' data:", path
        assert all("http" not in sources and "*" not in sources for sources in policy.values()), path
        assert res.headers["referrer-policy"] == "no-referrer", path
    api = await ds.client.get(api_path("search", world), actor=ROOT)
    assert "content-security-policy" not in api.headers  # JSON is no page


@pytest.mark.asyncio
async def test_a_summary_s_remote_image_is_a_link_never_an_image(locations, conn, new_journal):
    j = new_journal()
    j.compaction(
        "## Done\n![pixel](http://tracker.example/pixel?leak=heron) and ![local](/favicon.ico)\n\n[docs](https://docs.example/)"
    )
    index_all(conn, locations)
    async with running(make_datasette(locations)) as datasette:
        page = (await datasette.client.get("/-/pi-memory/summaries?scope=global", actor=ROOT)).text
    assert "<img" not in page
    assert (
        '<a href="http://tracker.example/pixel?leak=heron" rel="noopener noreferrer nofollow">image: pixel</a>' in page
    )
    assert '<a href="https://docs.example/">docs</a>' in page  # links stay links
