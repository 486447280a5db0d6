"""The API's replies have the contract's shapes; bad arguments are one-line 400s and every error is JSON
(400, 404 naming the routes, a logged 500).
"""

from __future__ import annotations

import pytest
from support.plugin_world import HERON, api_path, bearer

API = ("search", "read", "summaries", "status")


@pytest.mark.asyncio
async def test_replies_have_the_contract_shapes(ds, world, token):
    search = (await ds.client.get(api_path("search", world), **bearer(token))).json()
    assert search["action"] == "search" and search["scope"] == "project" and search["match"] == "all"
    keys = {"id", "session_id", "timestamp", "kind", "role", "tool", "excerpt", "score"}
    assert all(keys <= set(hit) for hit in search["results"])
    assert all(search["sessions"][hit["session_id"]]["cwd"] for hit in search["results"])
    assert search["indexing"]["complete"] is True
    read = (await ds.client.get(api_path("read", world), **bearer(token))).json()
    assert read["status"] == "ok" and HERON in read["text"]
    assert {"entry", "text", "offset", "next_offset", "total_chars"} <= set(read)
    summaries = (await ds.client.get(api_path("summaries", world, q=""), **bearer(token))).json()
    assert summaries["action"] == "summaries" and summaries["match"] == "recent"
    assert {h["kind"] for h in summaries["results"]} == {"compaction", "branch_summary"}
    status = (await ds.client.get(api_path("status", world), **bearer(token))).json()
    assert status["sessions"] == 2 and status["journals_pending"] == 0


@pytest.mark.asyncio
async def test_kind_filter_is_repeatable(ds, world, token):
    res = await ds.client.get(api_path("search", world, kind=["bash", "tool_result"]), **bearer(token))
    assert {h["kind"] for h in res.json()["results"]} == {"tool_result"}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "action,params,fragment",
    [
        ("search", {"since": "yesterday-ish"}, "YYYY-MM-DD"),
        ("search", {"until": "2026-13-45"}, "YYYY-MM-DD"),
        ("search", {"kind": "thought"}, "kind=tool_result"),
        ("search", {"limit": "0"}, "limit=20"),
        ("search", {"scope": "everything"}, "scope=project"),
        ("search", {"cwd": "relative/dir"}, "cwd="),
        ("summaries", {"kind": "user"}, "kind=compaction"),
        ("read", {"offset": "-5"}, "offset="),
        ("read", {"id": ""}, "e.g."),
        ("search", {"scope": "session", "cwd": ""}, "e.g."),
    ],
)
async def test_bad_arguments_are_one_line_400s(ds, world, token, action, params, fragment):
    res = await ds.client.get(api_path(action, world, **params), **bearer(token))
    assert res.status_code == 400, res.text
    data = res.json()
    assert set(data) == {"error"}
    assert "\n" not in data["error"] and fragment in data["error"]
    assert "heron" not in res.text.lower()


@pytest.mark.asyncio
async def test_project_scope_without_cwd_or_journal_is_an_error(ds, world, token):
    res = await ds.client.get(api_path("search", world, cwd=""), **bearer(token))
    assert res.status_code == 400 and "cwd" in res.json()["error"]


@pytest.mark.asyncio
@pytest.mark.parametrize("journal", ["{folder}/x\0.jsonl", "{folder}/" + "a" * 300 + ".jsonl"])
async def test_an_unusable_journal_path_is_a_json_400_with_an_example(ds, world, token, journal):
    path = journal.format(folder=world["a"].path.parent)
    res = await ds.client.get(api_path("search", world, journal=path), **bearer(token))
    assert res.status_code == 400, res.text
    assert set(res.json()) == {"error"} and "e.g. journal=" in res.json()["error"]
    assert "\n" not in res.json()["error"] and "<html" not in res.text.lower()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path",
    [
        "/-/pi-memory/api/nope",
        "/-/pi-memory/api/search/more",
        "/-/pi-memory/api/",
        "/-/pi-memory/api",
        "/-/pi-memory/api/SEARCH",
    ],
)
async def test_an_unknown_api_route_is_a_json_404_naming_the_routes(ds, world, token, path):
    for kwargs in (bearer(token), {}):
        res = await ds.client.get(path, **kwargs)
        assert res.status_code == 404, (path, res.status_code)
        error = res.json()["error"]
        assert all(f"/-/pi-memory/api/{a}" in error for a in API) and "heron" not in res.text
    known = await ds.client.get(api_path("search", world), **bearer(token))
    assert known.status_code == 200


@pytest.mark.asyncio
async def test_an_unexpected_api_failure_is_a_logged_json_500(ds, world, conn, token, caplog):
    """A tampered index (a text where a byte offset belongs) breaks the read unexpectedly."""
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE entries SET offset = 'tampered' WHERE id = ?", (world["ids"]["user"],))
    conn.execute("COMMIT")
    res = await ds.client.get(api_path("read", world), **bearer(token))
    assert res.status_code == 500
    assert set(res.json()) == {"error"} and "server log" in res.json()["error"]
    assert "Traceback" not in res.text and HERON not in res.text
    assert any("pi-memory API error" in r.getMessage() and r.exc_info for r in caplog.records)
    other = await ds.client.get(api_path("read", world, id=world["ids"]["bash"]), **bearer(token))
    assert other.status_code == 200 and other.json()["status"] == "ok"
