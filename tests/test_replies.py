"""Every reply the CLI's --json and the API print fits its type in pimem_index.replies (the types docs/api.md is
generated from), on journals the real Pi wrote; and a reply that does not fit is named by the check."""

from __future__ import annotations

import json

import pytest
from support.plugin_world import ROOT, make_datasette, running
from support.real_pi import copy_corpus

from pimem_index import replies
from pimem_index.index import indexer
from pimem_index.locations import resolve
from pimem_index.replies import (
    ErrorReply,
    IndexReply,
    ReadReply,
    SearchReply,
    SessionsReply,
    StatusReply,
    UsageReply,
    conforms,
)


@pytest.fixture
def corpus(agent_dir, tmp_path, monkeypatch):
    """The real-Pi corpus copied, its agent folder (not agent_dir's) the one every command uses."""
    copied = copy_corpus(tmp_path / "corpus")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(copied.agent))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PIMEM_DB", raising=False)
    monkeypatch.delenv("PIMEM_SESSIONS_DIRS", raising=False)
    return copied


def cli_json(run, *args, cwd=None) -> dict:
    result = run(*args, "--json", cwd=cwd)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def first_hit(reply: dict) -> dict:
    assert reply["results"], reply
    return reply["results"][0]


def test_every_cli_json_reply_fits_its_type(corpus, run):
    alpha = corpus.projects["alpha"]
    assert conforms(cli_json(run, "index"), IndexReply) == []
    assert conforms(cli_json(run, "status"), StatusReply) == []
    search = cli_json(run, "search", "edit", cwd=alpha)
    assert conforms(search, SearchReply) == []
    assert conforms(cli_json(run, "search", "zzqqxx", cwd=alpha), SearchReply) == []
    assert conforms(cli_json(run, "search", cwd=alpha), SearchReply) == []
    assert conforms(cli_json(run, "summaries", cwd=alpha), SearchReply) == []
    entry = first_hit(search)
    read = cli_json(run, "read", entry["id"], "--session", entry["session_id"], cwd=alpha)
    assert read["status"] == "ok" and conforms(read, ReadReply) == []
    assert conforms(cli_json(run, "read", "nosuchid", cwd=alpha), ReadReply) == []
    for by in ("day", "week", "month", "model", "project", "session"):
        assert conforms(cli_json(run, "usage", "--by", by), UsageReply) == [], by
    assert conforms(cli_json(run, "sessions"), SessionsReply) == []


@pytest.mark.asyncio
async def test_every_api_reply_fits_its_type(corpus):
    locations = resolve()
    conn = __import__("pimem_index").store.open_index(locations.db_path)
    indexer.index_all(conn, locations)
    conn.close()
    alpha = str(corpus.projects["alpha"])
    async with running(make_datasette(locations)) as ds:

        async def get(action: str, **params) -> dict:
            query = "&".join(f"{k}={v}" for k, v in {"cwd": alpha, **params}.items())
            response = await ds.client.get(f"/-/pi-memory/api/{action}?{query}", actor=ROOT)
            return response.json()

        search = await get("search", q="edit")
        assert conforms(search, SearchReply) == []
        assert conforms(await get("summaries"), SearchReply) == []
        entry = first_hit(search)
        assert conforms(await get("read", id=entry["id"], session_id=entry["session_id"]), ReadReply) == []
        assert conforms(await get("status"), StatusReply) == []
        assert conforms(await get("usage", by="model"), UsageReply) == []
        assert conforms(await get("sessions"), SessionsReply) == []
        error = await get("search", since="nope")
        assert conforms(error, ErrorReply) == [] and "e.g." in error["error"]


def test_a_reply_that_does_not_fit_is_named():
    good = {"error": "limit: use a whole number from 1 to 100 (e.g. limit=20)"}
    assert conforms(good, ErrorReply) == []
    assert conforms({"error": 3}, ErrorReply) == ["reply.error: expected str, got int"]
    assert conforms({}, ErrorReply) == ["reply: missing key 'error'"]
    assert conforms({**good, "extra": 1}, ErrorReply) == ["reply: unknown key 'extra'"]
    hit_problem = conforms({"results": [{"id": 1}]}, SearchReply)
    assert "reply.results[0].id: expected str, got int" in hit_problem


def test_the_api_docs_tables_are_generated_from_the_types():
    table = replies.key_table(ReadReply)
    assert "| `status` | `ok` \\| `ambiguous` \\| `unavailable` \\| `not_found` |" in table
    assert "| `entry` | [Entry](#entry) |" in table and "(only when it applies)" in table
    assert "`action`" in replies.key_table(SearchReply) and "`text`" not in replies.key_table(SearchReply)
