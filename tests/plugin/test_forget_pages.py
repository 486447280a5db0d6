"""A forgotten session is on no page, table, view or API reply of a real Datasette, rebuild or not."""

from __future__ import annotations

import pytest
import pytest_asyncio
from click.testing import CliRunner
from support.plugin_world import ROOT, pimem_serve_datasette, running

from pimem_index.cli import cli


@pytest_asyncio.fixture
async def ds(locations, forgotten_session):
    """A Datasette configured exactly as `pimem serve` configures it, after the forget."""
    async with running(pimem_serve_datasette(locations)) as datasette:
        yield datasette


def pages(s) -> dict[str, str]:
    """Every place a session could show up, each asked for the forgotten session's words."""
    kept = s["kept"].session_id
    return {
        "overview": "/-/pi-memory",
        "search page": "/-/pi-memory/search?q=quokka&scope=global",
        "summaries page": "/-/pi-memory/summaries?scope=global",
        "search api": "/-/pi-memory/api/search?q=quokka&scope=global",
        "summaries api": "/-/pi-memory/api/summaries?scope=global",
        "read api": f"/-/pi-memory/api/read?id={s['gone_entry']}&scope=global",
        "files table": "/history/files.json?_shape=array",
        "files page": "/history/files",
        "sessions view": "/history/sessions.json?_shape=array",
        "sql": "/history/-/query.json?_shape=array&sql=select+*+from+files",
        "forgotten_journals table": "/history/forgotten_journals.json?_shape=array",
        "kept session page": f"/-/pi-memory/sessions/{kept}",
    }


async def assert_on_no_page(ds, s) -> None:
    for name, path in pages(s).items():
        res = await ds.client.get(path, actor=ROOT)
        assert res.status_code == 200, (name, res.status_code, res.text[:300])
        for secret in s["secrets"]:
            assert secret not in res.text, (name, secret)
    gone = s["gone"].session_id
    missing = await ds.client.get(f"/-/pi-memory/sessions/{gone}", actor=ROOT)
    assert missing.status_code == 404
    unknown = await ds.client.get(f"/-/pi-memory/api/search?q=quokka&scope=session&session_id={gone}", actor=ROOT)
    assert unknown.status_code == 400 and "no session" in unknown.json()["error"]  # as any session never indexed
    for secret in s["secrets"][1:]:
        assert secret not in missing.text and secret not in unknown.text
    # the other session is still there
    overview = (await ds.client.get("/-/pi-memory", actor=ROOT)).text
    assert "Ordinary wombat work" in overview and "keptproj" in overview
    files = (await ds.client.get("/history/files.json?_shape=array", actor=ROOT)).json()
    assert [f["session_id"] for f in files] == [s["kept"].session_id]
    hits = (await ds.client.get("/-/pi-memory/api/search?q=quokka&scope=global", actor=ROOT)).json()["results"]
    assert [h["session_id"] for h in hits] == [s["kept"].session_id]


@pytest.fixture
def s(forgotten_session):  # noqa: F811
    import json

    lines = [json.loads(x) for x in forgotten_session["gone"].path.read_text().splitlines()]
    return {**forgotten_session, "gone_entry": next(x["id"] for x in lines if x["type"] == "message")}


@pytest.mark.asyncio
async def test_a_forgotten_session_is_on_no_page_table_view_or_api_reply(ds, s):
    await assert_on_no_page(ds, s)


@pytest.mark.asyncio
async def test_a_forgotten_session_is_on_no_page_after_pimem_rebuild(ds, s):
    assert CliRunner().invoke(cli, ["rebuild"]).exit_code == 0
    await assert_on_no_page(ds, s)


@pytest.mark.asyncio
async def test_unforget_brings_the_session_back_on_every_page(ds, s):
    result = CliRunner().invoke(cli, ["unforget", "--session", s["gone"].session_id])
    assert result.exit_code == 0, result.output
    page = await ds.client.get(f"/-/pi-memory/sessions/{s['gone'].session_id}", actor=ROOT)
    assert page.status_code == 200 and "Plan the quokka surprise" in page.text and "hushproj" in page.text
    overview = (await ds.client.get("/-/pi-memory", actor=ROOT)).text
    assert "Plan the quokka surprise" in overview and "Ordinary wombat work" in overview
    files = (await ds.client.get("/history/files.json?_shape=array", actor=ROOT)).json()
    assert {f["path"] for f in files} == {str(s["gone"].path), str(s["kept"].path)}
    view = (await ds.client.get("/history/sessions.json?_shape=array", actor=ROOT)).json()
    assert {v["name"] for v in view} == {"Plan the quokka surprise", "Ordinary wombat work"}
    hits = (await ds.client.get("/-/pi-memory/api/search?q=quokka&scope=global", actor=ROOT)).json()["results"]
    assert {h["session_id"] for h in hits} == {s["gone"].session_id, s["kept"].session_id}
    read = (await ds.client.get(f"/-/pi-memory/api/read?id={s['gone_entry']}&scope=global", actor=ROOT)).json()
    assert read["status"] == "ok" and "nobody may see" in read["text"]
