"""The CLI names sessions the way people can use: `pimem sessions` shows a title and the short id, `pimem search`
shows short ids, and `pimem read ID --session X` reads that session's entry from any folder."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from support.plugin_world import bearer, make_datasette, running
from support.real_pi_index import session_id

from pimem_index.cli import cli
from pimem_index.search.session_ids import short_ids


@pytest.fixture
def corpus_token(corpus) -> str:
    """The agent's token for the corpus's agent folder, as `pimem token` makes it."""
    from datasette_pi_memory.server.serve import make_token

    return make_token(corpus[1])


def sessions_table(columns: int) -> str:
    result = CliRunner().invoke(cli, ["sessions", "--no-index", "--limit", "50"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.output


def test_pimem_sessions_shows_each_sessions_title_and_short_id(corpus):
    copied, _locations, conn = corpus
    ids = [session_id(copied, role) for role in ("rich", "edit_heavy", "fork_child", "same_minute_a")]
    shorts = short_ids(conn, ids)
    table = sessions_table(400)
    assert table.splitlines()[0].split()[:4] == ["last", "activity", "session", "title"]
    rows = {sid: next(line for line in table.splitlines() if f"  {shorts[sid]}  " in line) for sid in ids}
    assert "Fixture: the rich session" in rows[ids[0]]
    assert "Add type hints to app.py and mark the division TODO done." in rows[ids[1]]
    assert "↳ What is this project?" in rows[ids[2]], "a fork is marked"
    assert "A first quick question." in rows[ids[3]]
    assert not any(sid[:8] in table for sid in ids), "never the timestamp the ids share"


def test_pimem_sessions_cuts_titles_to_the_terminal(corpus):
    wide, narrow = sessions_table(400), sessions_table(120)
    long_title = "Add type hints to app.py and mark the division TODO done."
    assert long_title in wide
    assert long_title not in narrow and "…" in narrow
    titles = [re.split(r"\s{2,}", line)[2] for line in narrow.splitlines()[1:] if line.strip()]
    assert titles and all(len(t) <= 12 for t in titles), "the title column takes what the other columns leave"
    assert any(t.endswith("…") for t in titles)


def test_pimem_search_shows_short_ids_not_the_shared_timestamp(corpus):
    copied, _locations, conn = corpus
    beta = copied.projects["beta"]
    result = CliRunner().invoke(cli, ["search", "question", "--no-index", "--cwd", str(beta)])
    assert result.exit_code == 0, result.output
    ids = [session_id(copied, r) for r in ("same_minute_a", "same_minute_b")]
    for sid, short in short_ids(conn, ids).items():
        assert f"session {short}\n" in result.output and sid not in result.output
    assert f"session {ids[0][:8]}\n" not in result.output


def test_read_with_a_session_reads_its_entry_from_any_folder(corpus, tmp_path):
    copied, _locations, conn = corpus
    sid = session_id(copied, "rich")
    entry = conn.execute(
        "SELECT e.id FROM entries e JOIN files f ON f.id = e.file_id WHERE f.session_id = ? AND e.kind = 'user'",
        (sid,),
    ).fetchone()[0]
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    run = CliRunner().invoke
    for name in (sid, short_ids(conn, [sid])[sid]):
        result = run(cli, ["read", entry, "--session", name, "--json", "--no-index", "--cwd", str(nowhere)])
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        assert data["status"] == "ok" and data["entry"]["session_id"] == sid and data["scope"] == "session"
    without = run(cli, ["read", entry, "--no-index", "--cwd", str(nowhere)])
    assert without.exit_code == 1 and "no entry" in without.output and "project scope" in without.output


@pytest.mark.asyncio
async def test_the_agents_token_still_may_not_read_another_projects_session(corpus, corpus_token):
    copied, locations, conn = corpus
    token = corpus_token
    other = session_id(copied, "rich")  # in alpha
    entry = conn.execute(
        "SELECT e.id FROM entries e JOIN files f ON f.id = e.file_id WHERE f.session_id = ? LIMIT 1", (other,)
    ).fetchone()[0]
    beta, alpha = copied.projects["beta"], copied.projects["alpha"]
    async with running(make_datasette(locations)) as ds:
        named = f"/-/pi-memory/api/read?id={entry}&session_id={other}"
        refused = await ds.client.get(f"{named}&scope=session&cwd={beta}", **bearer(token))
        not_found = await ds.client.get(f"{named}&cwd={beta}", **bearer(token))
        allowed = await ds.client.get(f"{named}&scope=session&cwd={alpha}", **bearer(token))
    assert refused.status_code == 400 and "not in this project" in refused.json()["error"]
    assert not_found.status_code == 200 and not_found.json()["status"] == "not_found"
    assert allowed.status_code == 200 and allowed.json()["status"] == "ok"
