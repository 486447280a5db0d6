"""The Datasette plugin through a real Datasette: permissions, the JSON API, pages, the render hook.

Every positive check sits beside a must-not: what anonymous visitors, wrong tokens, other
actors, custom SQL and paths outside the journal folders must never get.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time

import pytest
import pytest_asyncio
from datasette.tokens import TokenRestrictions
from datasette_test import Datasette
from support.faults import put_in_place_of_index
from support.pijournal import Journal
from support.plugin_world import FLUENT, HERON, ROOT, api_path, bearer, make_datasette, pimem_serve_datasette, running

from datasette_pi_memory.server.serve import ensure_secret
from datasette_pi_memory.state import ACTION, AGENT_ID, PLUGIN, WORKER_THREADS
from pimem_index.index.indexer import index_all

CANARY = "CANARY-7f3e9b-outside-the-journal-folders"
API = ("search", "read", "summaries", "status")


@pytest_asyncio.fixture
async def ds(locations, world):
    async with running(make_datasette(locations)) as datasette:
        yield datasette


# ---- permissions on every route ---------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_action_is_registered(ds):
    assert ACTION in ds.actions
    assert ds.actions[ACTION].description == "Read Pi journal text"


@pytest.mark.asyncio
@pytest.mark.parametrize("action", API)
async def test_api_needs_permission(ds, world, token, action):
    path = api_path(action, world)
    anon = await ds.client.get(path)
    assert anon.status_code == 401
    assert "heron" not in anon.text and "error" in anon.json()

    bad = await ds.client.get(path, **bearer("dstok_" + "x" * 40))
    assert bad.status_code == 401 and "heron" not in bad.text

    forged = await ds.client.get(path, **bearer(token[:-4] + "AAAA"))
    assert forged.status_code == 401 and "heron" not in forged.text

    other = await ds.client.get(path, actor={"id": "alice"})
    assert other.status_code == 403 and "heron" not in other.text

    agent = await ds.client.get(path, **bearer(token))
    assert agent.status_code == 200, agent.text
    root = await ds.client.get(path, actor=ROOT)
    assert root.status_code == 200, root.text
    if action != "status":
        assert "heron" in root.text.lower() and "heron" in agent.text.lower()


PAGES = (
    "/-/pi-memory",
    "/-/pi-memory/search?q=heron&scope=global",
    "/-/pi-memory/summaries?scope=global",
    "/-/pi-memory/read?id={user}&session_id={sid}",
)


@pytest.mark.asyncio
@pytest.mark.parametrize("page", PAGES + ("/-/pi-memory/sessions/{sid}",))
async def test_pages_need_permission(ds, world, page):
    path = page.format(user=world["ids"]["user"], sid=world["a"].session_id)
    for kwargs in ({}, {"actor": {"id": "alice"}}):
        denied = await ds.client.get(path, **kwargs)
        assert denied.status_code == 403, (path, kwargs)
        assert "heron" not in denied.text.lower()
    allowed = await ds.client.get(path, actor=ROOT)
    assert allowed.status_code == 200, allowed.text
    assert "heron" in allowed.text.lower()


@pytest.mark.asyncio
async def test_a_token_for_another_action_reads_nothing(ds, world, locations):
    other = await ds.create_token("pi-agent", restrictions=TokenRestrictions().allow_all("view-instance"))
    for action in API:
        res = await ds.client.get(api_path(action, world), **bearer(other))
        assert res.status_code == 403, (action, res.text)
        assert "heron" not in res.text
    page = await ds.client.get("/-/pi-memory", **bearer(other))
    assert page.status_code == 403


@pytest.mark.asyncio
async def test_the_agent_token_opens_nothing_else(ds, world, token):
    for path in ("/", "/history", "/history/entries.json", "/history/-/query.json?sql=select+1"):
        res = await ds.client.get(path, **bearer(token))
        assert res.status_code == 403, (path, res.status_code)


@pytest.mark.asyncio
async def test_make_token_survives_a_restart(locations, world, token):
    for _ in range(2):  # two server lifetimes, one persistent secret
        datasette = make_datasette(locations)
        await datasette.invoke_startup()
        res = await datasette.client.get(api_path("status", world), **bearer(token))
        assert res.status_code == 200
        await datasette.invoke_shutdown()
    assert token.startswith("dstok_")
    secret = locations.memory_dir / "secret"
    assert secret.stat().st_mode & 0o777 == 0o600
    assert locations.memory_dir.stat().st_mode & 0o777 == 0o700


@pytest.mark.asyncio
async def test_a_token_signed_with_another_secret_is_refused(locations, world):
    """Issue 19: a pimem token now works under any secret the instance has; one signed elsewhere does not."""
    foreign = await Datasette(secret="not-the-pimem-secret").create_token(
        AGENT_ID, restrictions=TokenRestrictions().allow_all(ACTION)
    )
    async with running(make_datasette(locations)) as datasette:
        res = await datasette.client.get(api_path("status", world), **bearer(foreign))
        assert res.status_code == 401


@pytest.mark.asyncio
async def test_menu_link_only_for_readers(ds):
    root = await ds.client.get("/-/pi-memory", actor=ROOT)
    assert 'href="/-/pi-memory">Pi memory</a>' in root.text
    home_alice = await ds.client.get("/", actor={"id": "alice"})
    assert 'href="/-/pi-memory">Pi memory</a>' not in home_alice.text


# ---- the scope boundary -------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_agent_cannot_widen_to_global(ds, world, token):
    res = await ds.client.get(api_path("search", world, scope="global"), **bearer(token))
    assert res.status_code == 400
    assert "wider than allowed" in res.json()["error"] and "kestrel" not in res.text
    read = await ds.client.get(api_path("read", world, id=world["other"], scope="global"), **bearer(token))
    assert read.status_code == 400 and "kestrel" not in read.text


@pytest.mark.asyncio
async def test_agent_read_of_another_projects_entry_is_not_found(ds, world, token):
    res = await ds.client.get(api_path("read", world, id=world["other"]), **bearer(token))
    assert res.status_code == 200
    assert res.json()["status"] == "not_found" and "kestrel" not in res.text
    own = await ds.client.get(api_path("read", world, id=world["other"], cwd=world["cwd_b"]), **bearer(token))
    assert own.json()["status"] == "ok" and "kestrel" in own.json()["text"]


@pytest.mark.asyncio
async def test_agent_project_search_stays_in_its_project(ds, world, token):
    res = await ds.client.get(api_path("search", world, q="kestrel"), **bearer(token))
    assert res.json()["results"] == []
    assert res.json()["root"] == world["cwd_a"]


@pytest.mark.asyncio
async def test_root_searches_globally(ds, world):
    res = await ds.client.get(api_path("search", world, q="kestrel", scope="global"), actor=ROOT)
    assert res.status_code == 200
    assert [h["id"] for h in res.json()["results"]] == [world["other"]]


@pytest.mark.asyncio
async def test_configured_cap_for_other_actors(locations, world):
    datasette = make_datasette(locations, permissions={ACTION: {"id": ["alice", "root"]}})
    await datasette.invoke_startup()
    alice = {"id": "alice"}
    wide = await datasette.client.get(api_path("search", world, scope="global"), actor=alice)
    assert wide.status_code == 400 and "heron" not in wide.text
    narrow = await datasette.client.get(api_path("search", world), actor=alice)
    assert narrow.status_code == 200 and narrow.json()["results"]
    root = await datasette.client.get(api_path("search", world, scope="global"), actor=ROOT)
    assert root.status_code == 200
    bob = await datasette.client.get(api_path("search", world), actor={"id": "bob"})
    assert bob.status_code == 403
    await datasette.invoke_shutdown()


@pytest.mark.asyncio
async def test_agent_max_scope_session_is_configurable(locations, world, token):
    datasette = make_datasette(locations, {"agent_max_scope": "session"})
    await datasette.invoke_startup()
    project = await datasette.client.get(api_path("search", world, scope="project"), **bearer(token))
    assert project.status_code == 400 and "heron" not in project.text
    default = await datasette.client.get(api_path("search", world, cwd=""), **bearer(token))
    assert default.status_code == 400  # session scope needs a session: never silently widened
    session = await datasette.client.get(
        api_path("search", world, scope="session", journal=str(world["a"].path)), **bearer(token)
    )
    assert session.status_code == 200 and session.json()["results"]
    named = await datasette.client.get(
        api_path("search", world, scope="session", session_id=world["a"].session_id, journal=str(world["a"].path)),
        **bearer(token),
    )
    assert named.status_code == 200 and named.json()["results"]
    unverifiable = await datasette.client.get(
        api_path("search", world, scope="session", session_id=world["a"].session_id), **bearer(token)
    )
    assert unverifiable.status_code == 400 and "heron" not in unverifiable.text
    other = await datasette.client.get(
        api_path("search", world, scope="session", session_id=world["b"].session_id, journal=str(world["a"].path)),
        **bearer(token),
    )
    assert other.status_code == 400 and "not the current session" in other.json()["error"]
    await datasette.invoke_shutdown()


# ---- the JSON shapes and bad arguments --------------------------------------------------------


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


# ---- the journal parameter --------------------------------------------------------------------


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


# ---- the render hook --------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_entries_table_shows_redacted_text_to_root_only(ds, world):
    root = await ds.client.get("/history/entries", actor=ROOT)
    assert root.status_code == 200
    assert HERON in root.text and 'class="pi-memory-cell"' in root.text
    assert "&lt;script&gt;alert" in root.text and "<script>alert" not in root.text
    # Issue 14 item 4: the index's tables are private to pi-memory-read even on a plain Datasette
    # (this test used to pin anonymous 200 without the text).
    anon = await ds.client.get("/history/entries")
    assert anon.status_code == 403
    assert HERON not in anon.text and "pi-memory-cell" not in anon.text
    alice = await ds.client.get("/history/entries", actor={"id": "alice"})
    assert alice.status_code == 403 and HERON not in alice.text


@pytest.mark.asyncio
async def test_entry_row_page_shows_text(ds, world, conn):
    rowid = conn.execute("SELECT rowid FROM entries WHERE id = ?", (world["ids"]["user"],)).fetchone()[0]
    res = await ds.client.get(f"/history/entries/{rowid}", actor=ROOT)
    assert res.status_code == 200 and HERON in res.text
    assert "/-/pi-memory/read?id=" in res.text


@pytest.mark.asyncio
async def test_secret_in_a_journal_is_redacted_on_the_table_page(ds, world, conn, locations):
    secret = "gh" + "p_" + "Rk3mW8qZ2xT5vB9nC4yH7jL1pD6sF0gA2eU8"
    world["a"].tool_result("bash", f"export GITHUB_TOKEN={secret}")
    index_all(conn, locations)
    res = await ds.client.get("/history/entries?_sort_desc=rowid", actor=ROOT)
    assert "GITHUB_TOKEN" in res.text and secret not in res.text


@pytest.mark.asyncio
async def test_custom_sql_reads_nothing(ds, world, conn, tmp_path):
    canary_file = tmp_path / "canary.jsonl"
    line = json.dumps({"type": "message", "id": "zz", "message": {"role": "user", "content": CANARY}}).encode()
    canary_file.write_bytes(line + b"\n")
    sql = (
        f"select 1 as rowid, 1 as file_id, 'zz' as id, '{canary_file}' as path, 0 as offset, "
        f"{len(line)} as length, 'user' as kind"
    )
    res = await ds.client.get("/history/-/query", params={"sql": sql}, actor=ROOT)
    assert res.status_code == 200, res.text
    assert CANARY not in res.text and "pi-memory-cell" not in res.text
    # even selecting real entries rows through SQL renders numbers only
    res = await ds.client.get(
        "/history/-/query", params={"sql": "select rowid, offset, length from entries"}, actor=ROOT
    )
    assert res.status_code == 200 and HERON not in res.text and "pi-memory-cell" not in res.text


@pytest.mark.asyncio
async def test_views_and_other_tables_read_nothing(ds, world):
    for path in ("/history/files", "/history/sessions", "/history/meta"):
        res = await ds.client.get(path, actor=ROOT)
        assert res.status_code == 200 and HERON not in res.text and "pi-memory-cell" not in res.text


@pytest.mark.asyncio
async def test_an_entries_table_in_another_database_reads_nothing(locations, world, tmp_path, conn):
    rogue = tmp_path / "rogue.db"
    rc = sqlite3.connect(rogue)
    rc.execute("CREATE TABLE entries (rowid INTEGER PRIMARY KEY, offset INTEGER, length INTEGER)")
    rc.executemany(
        "INSERT INTO entries VALUES (?, 0, 10)", [(r[0],) for r in conn.execute("SELECT rowid FROM entries")]
    )
    rc.commit()
    rc.close()
    datasette = make_datasette(locations)
    datasette.add_database(
        __import__("datasette.database", fromlist=["Database"]).Database(datasette, str(rogue)), name="rogue"
    )
    await datasette.invoke_startup()
    res = await datasette.client.get("/rogue/entries", actor=ROOT)
    assert res.status_code == 200 and HERON not in res.text and "pi-memory-cell" not in res.text
    await datasette.invoke_shutdown()


@pytest.mark.asyncio
async def test_a_pointer_outside_the_folders_is_never_read(ds, world, conn, tmp_path):
    """A tampered index that points an entry at a file outside the journal folders."""
    canary_file = tmp_path / "canary.jsonl"
    canary_file.write_text(CANARY * 10 + "\n")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE files SET path = ? WHERE path = ?", (str(canary_file), str(world["b"].path)))
    conn.execute("COMMIT")
    res = await ds.client.get("/history/entries", actor=ROOT)
    assert CANARY not in res.text
    assert "outside the journal folders" in res.text
    page = await ds.client.get(f"/-/pi-memory/sessions/{world['b'].session_id}", actor=ROOT)
    assert page.status_code == 200 and CANARY not in page.text


# ---- pages with real data ---------------------------------------------------------------------


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


# ---- background indexing inside Datasette -----------------------------------------------------


@pytest.mark.asyncio
async def test_background_indexer_makes_new_lines_searchable(locations, world):
    datasette = make_datasette(locations, {"background_index": True})
    await datasette.start_background_tasks()
    try:
        fresh = world["a"].user("the albatross arrived late")
        deadline = time.monotonic() + 10
        found = []
        while time.monotonic() < deadline and not found:
            res = await datasette.client.get(api_path("search", world, q="albatross"), actor=ROOT)
            found = [h["id"] for h in res.json()["results"]]
            if not found:
                await asyncio.sleep(0.2)
        assert found == [fresh]
        tasks = await datasette.client.get("/-/tasks.json", actor=ROOT)
        assert "pi-memory-indexer" in tasks.text
    finally:
        await datasette.invoke_shutdown()


@pytest.mark.asyncio
async def test_shutdown_stops_the_indexer_child_and_nothing_of_the_instance_is_kept(locations, world):
    from datasette_pi_memory import background
    from datasette_pi_memory.state import existing_state, state

    datasette = make_datasette(locations, {"background_index": True})
    await datasette.start_background_tasks()
    indexer = state(datasette).indexer
    assert indexer is not None
    deadline = time.monotonic() + 10
    while indexer.child is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    child = indexer.child
    assert child is not None and child.returncode is None
    await datasette.invoke_shutdown()
    assert child.returncode is not None and indexer.stopping
    assert existing_state(datasette) is None
    registries = [
        name
        for name, value in vars(background).items()
        if not name.startswith("__") and isinstance(value, (dict, set, list))
    ]
    assert registries == []


@pytest.mark.asyncio
async def test_a_bad_scope_setting_stops_startup(locations, conn):
    from datasette.utils import StartupError

    datasette = make_datasette(locations, {"agent_max_scope": "everything"})
    with pytest.raises(StartupError, match="agent_max_scope"):
        await datasette.invoke_startup()


@pytest.mark.asyncio
async def test_background_indexing_defaults_to_instances_serving_the_index(locations, conn, tmp_path):
    from datasette_pi_memory.state import state

    serving = Datasette([str(locations.db_path)], secret=ensure_secret(locations))
    assert state(serving).settings.background_index is True
    assert state(serving).settings.database == "history"
    other_db = tmp_path / "unrelated.db"
    sqlite3.connect(other_db).close()
    unrelated = Datasette([str(other_db)])
    assert state(unrelated).settings.background_index is False
    configured = Datasette([str(other_db)], plugin_config={PLUGIN: {"background_index": True}})
    assert state(configured).settings.background_index is True


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
async def test_agent_cannot_name_another_projects_session(ds, world, token):
    own = await ds.client.get(
        api_path("search", world, q="heron", scope="session", session_id=world["a"].session_id), **bearer(token)
    )
    assert own.status_code == 200 and own.json()["results"]
    other = await ds.client.get(
        api_path("search", world, q="", scope="session", session_id=world["b"].session_id), **bearer(token)
    )
    assert other.status_code == 400 and "not in this project" in other.json()["error"]
    assert world["b"].session_id not in json.dumps(other.json().get("results", []))


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path", ["/-/pi-memory/api/forget", "/-/pi-memory/api/unforget", "/-/pi-memory/forget", "/-/pi-memory/api/gc"]
)
async def test_no_http_route_can_forget_or_collect(ds, world, token, path):
    for method in ("get", "post"):
        for kwargs in ({"actor": ROOT}, bearer(token)):
            response = await getattr(ds.client, method)(path + f"?id={world['ids']['user']}", **kwargs)
            assert response.status_code in (404, 405), (method, path, response.status_code)
    read = await ds.client.get(api_path("read", world), **bearer(token))
    assert read.json()["status"] == "ok"
    assert not (world["a"].path.parent.parent.parent / "pi-memory" / "forgotten.jsonl").exists()


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


# ---- an index deleted or replaced under the server (issue 14 item 9) ----------------------------


async def _ids(ds, world, q: str) -> list[str]:
    res = await ds.client.get(api_path("search", world, q=q, scope="global"), actor=ROOT)
    assert res.status_code == 200, res.text
    return [h["id"] for h in res.json()["results"]]


@pytest.mark.asyncio
async def test_an_index_rebuilt_under_the_server_is_reopened_and_a_forget_on_it_holds(ds, world, locations):
    from pimem_index import store
    from pimem_index.manage.forget import forget_entry

    other = world["other"]
    assert await _ids(ds, world, "kestrel") == [other]
    table = await ds.client.get(f"/history/entries.json?_shape=array&id={other}", actor=ROOT)
    assert [r["id"] for r in table.json()] == [other]
    store.delete_index_files(locations.db_path)
    fresh = store.open_index(locations.db_path)
    try:
        index_all(fresh, locations)
        forget_entry(fresh, locations, other)
        entries = fresh.execute("SELECT count(*) FROM entries").fetchone()[0]
    finally:
        fresh.close()
    assert await _ids(ds, world, "kestrel") == []
    read = await ds.client.get(api_path("read", world, id=other, scope="global"), actor=ROOT)
    assert read.json()["status"] == "not_found" and "kestrel" not in read.text
    table = await ds.client.get(f"/history/entries.json?_shape=array&id={other}", actor=ROOT)
    assert table.status_code == 200 and table.json() == []
    assert await _ids(ds, world, "heron")  # the new index answers
    status = (await ds.client.get("/-/pi-memory/api/status", actor=ROOT)).json()
    assert status["entries"] == entries
    on_disk = sum(os.path.getsize(p) for p in (locations.db_path, f"{locations.db_path}-wal") if os.path.exists(p))
    assert status["db_bytes"] == on_disk > 0


@pytest.mark.asyncio
async def test_an_index_deleted_under_the_server_is_created_again_empty(ds, world, locations):
    from pimem_index import store

    assert await _ids(ds, world, "kestrel") == [world["other"]]
    store.delete_index_files(locations.db_path)
    status = await ds.client.get("/-/pi-memory/api/status", actor=ROOT)
    assert status.status_code == 200
    assert status.json()["entries"] == 0 and status.json()["db_bytes"] > 0
    assert locations.db_path.exists()
    assert await _ids(ds, world, "kestrel") == []
    tables = await ds.client.get("/history/entries.json?_shape=array", actor=ROOT)
    assert tables.status_code == 200 and tables.json() == []


ROUTES_AFTER_A_REPLACEMENT = (
    "/-/pi-memory/api/status",
    "/-/pi-memory/api/search?q=heron&scope=global",
    "/-/pi-memory/api/summaries?scope=global",
    "/-/pi-memory/api/sessions?scope=global",
    "/-/pi-memory/api/usage?scope=global",
    "/-/pi-memory",
    "/-/pi-memory/search?q=heron&scope=global",
    "/-/pi-memory/summaries?scope=global",
    "/-/pi-memory/sessions",
    "/-/pi-memory/usage",
    "/history/entries.json",
)


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["text", "sqlite"])
async def test_a_non_index_file_under_the_server_never_breaks_it_once_a_valid_index_is_back(ds, world, locations, kind):
    from pimem_index import store

    assert await _ids(ds, world, "heron")
    put_in_place_of_index(locations.db_path, kind)
    for _ in range(3 * WORKER_THREADS):  # every worker thread meets the foreign file, some twice
        broken = await ds.client.get(api_path("search", world, scope="global"), actor=ROOT)
        assert broken.status_code != 200 and "heron" not in broken.text, broken.text[:500]
    store.delete_index_files(locations.db_path)
    fresh = store.open_index(locations.db_path)
    try:
        index_all(fresh, locations)  # one indexing pass of a valid index
    finally:
        fresh.close()
    for _ in range(2):  # each route on more than one worker thread
        for path in ROUTES_AFTER_A_REPLACEMENT:
            res = await ds.client.get(path, actor=ROOT)
            assert res.status_code == 200, (path, res.text[:300])
    assert await _ids(ds, world, "heron") and await _ids(ds, world, "kestrel") == [world["other"]]


@pytest.mark.asyncio
async def test_a_datasette_without_the_index_never_creates_one(locations, tmp_path):
    other_db = tmp_path / "unrelated.db"
    sqlite3.connect(other_db).close()
    datasette = Datasette([str(other_db)], plugin_config={PLUGIN: {"background_index": False}})
    await datasette.invoke_startup()
    try:
        for path in ("/", "/unrelated", "/-/versions.json"):
            assert (await datasette.client.get(path)).status_code == 200
        assert not locations.db_path.exists()
    finally:
        await datasette.invoke_shutdown()


def _count(db_path, sql: str = "SELECT count(*) FROM entries") -> int | None:
    """Rows in the index file now at db_path, or None while there is none (or it is not ready)."""
    if not os.path.exists(db_path):
        return None
    try:
        c = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            return c.execute(sql).fetchone()[0]
        finally:
            c.close()
    except sqlite3.Error:
        return None


def _wait_for(condition, seconds: float = 30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_the_watching_indexer_moves_to_a_new_index_file(locations, world, conn):
    import subprocess
    import sys

    from pimem_index import store

    expected = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
    conn.close()
    child = subprocess.Popen(
        [sys.executable, "-m", "pimem_index", "index", "--watch", "--interval", "0.05", "--db", str(locations.db_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        running = world["a"].user("written while the child runs: the skua")
        _wait_for(lambda: _count(locations.db_path, f"SELECT count(*) FROM entries WHERE id = '{running}'") == 1)
        store.delete_index_files(locations.db_path)
        fresh = world["a"].user("written after the index was deleted: the gannet")
        _wait_for(lambda: _count(locations.db_path, f"SELECT count(*) FROM entries WHERE id = '{fresh}'") == 1)
        assert _count(locations.db_path) == expected + 2  # every journal again, in the new file
        assert child.poll() is None
    finally:
        child.terminate()
        _, err = child.communicate(timeout=30)
    assert b"Traceback" not in err


# ---- every API error is JSON (issue 14 item 7) ---------------------------------------------------


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


# ---- pages load nothing from other origins (issue 25 item 13) -----------------------------------

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
