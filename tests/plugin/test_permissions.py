"""Who sees what through Datasette: pages are for people within their scope cap, the index is
private to pi-memory-read and read-only for everyone (root included).

A real index built from journals written by tests/pijournal.py, served by a real Datasette;
each positive check sits beside the must-not over the same data.
"""

from __future__ import annotations

import sqlite3

import pytest
import pytest_asyncio
from datasette_test import Datasette
from support.plugin_world import FLUENT, HERON, ROOT, api_path, bearer, make_datasette, pimem_serve_datasette, running

from datasette_pi_memory.state import ACTION, PLUGIN
from pimem_index.index.indexer import index_all

OTHER_NAME = "osprey-rollout-planning"  # the other project's session name
ALICE = {"id": "alice"}


@pytest.fixture
def named_world(world, conn, locations):
    """The two-project world, the other project's session given a name."""
    world["b"].session_info(OTHER_NAME)
    index_all(conn, locations)
    return world


def shows_the_other_project(text: str, world) -> bool:
    """Whether a reply shows anything of the other project: its text, session name, cwd or session id."""
    return any(s in text for s in (FLUENT, "kestrel", OTHER_NAME, "Apps/fluenty", world["b"].session_id))


def pages(world) -> list[str]:
    return [
        "/-/pi-memory",
        "/-/pi-memory/search?q=kestrel",
        "/-/pi-memory/search?q=kestrel&scope=global",
        "/-/pi-memory/summaries",
        f"/-/pi-memory/read?id={world['other']}&session_id={world['b'].session_id}",
        f"/-/pi-memory/sessions/{world['b'].session_id}",
    ]


async def assert_every_page_refuses(ds, world, **request) -> list:
    """Every page answers 403 to this request and shows nothing of the other project; the replies."""
    replies = []
    for path in pages(world):
        res = await ds.client.get(path, **request)
        assert res.status_code == 403, (path, res.status_code)
        assert not shows_the_other_project(res.text, world), path
        replies.append(res)
    return replies


# ---- item 2: pages are for people, within their cap ------------------------------------------


@pytest.mark.asyncio
async def test_the_agent_token_is_refused_on_every_page_and_pointed_at_the_api(locations, named_world, token):
    async with running(make_datasette(locations)) as ds:
        for res in await assert_every_page_refuses(ds, named_world, **bearer(token)):
            assert "/-/pi-memory/api/" in res.text
        own = await ds.client.get(api_path("search", named_world, q="heron"), **bearer(token))
        assert own.status_code == 200 and own.json()["results"]


@pytest.mark.asyncio
async def test_the_agent_actor_is_refused_on_pages_even_without_a_token(locations, named_world):
    async with running(make_datasette(locations)) as ds:
        await assert_every_page_refuses(ds, named_world, actor={"id": "pi-agent"})
        own = await ds.client.get(api_path("read", named_world), actor={"id": "pi-agent"})
        assert own.json()["status"] == "ok" and HERON in own.json()["text"]


@pytest.mark.asyncio
async def test_a_session_capped_agent_is_refused_on_every_page(locations, named_world, token):
    async with running(make_datasette(locations, {"agent_max_scope": "session"})) as ds:
        await assert_every_page_refuses(ds, named_world, **bearer(token))
        own = await ds.client.get(
            api_path("search", named_world, scope="session", journal=str(named_world["a"].path)), **bearer(token)
        )
        assert own.status_code == 200 and own.json()["results"]


@pytest.mark.asyncio
async def test_a_session_capped_person_is_refused_on_pages_but_not_the_api(locations, named_world):
    async with running(
        make_datasette(locations, {"max_scope": "session"}, permissions={ACTION: {"id": "alice"}})
    ) as ds:
        for res in await assert_every_page_refuses(ds, named_world, actor=ALICE):
            assert "session" in res.text
        own = await ds.client.get(
            api_path("search", named_world, scope="session", journal=str(named_world["a"].path)), actor=ALICE
        )
        assert own.status_code == 200 and own.json()["results"]


@pytest.mark.asyncio
async def test_the_render_hook_shows_the_agent_no_text(locations, named_world):
    async with running(make_datasette(locations)) as ds:
        agent = await ds.client.get("/history/entries", actor={"id": "pi-agent"})
        assert HERON not in agent.text and "pi-memory-cell" not in agent.text
        root = await ds.client.get("/history/entries", actor=ROOT)
        assert HERON in root.text and "pi-memory-cell" in root.text


@pytest.mark.asyncio
async def test_a_project_capped_person_gets_the_pages_but_no_global_search(locations, named_world):
    async with running(make_datasette(locations, permissions={ACTION: {"id": ["alice", "root"]}})) as ds:
        overview = await ds.client.get("/-/pi-memory", actor=ALICE)
        assert overview.status_code == 200
        assert '<option value="global"' not in overview.text and '<option value="project"' in overview.text
        own = await ds.client.get(
            "/-/pi-memory/search", params={"q": "heron", "scope": "project", "cwd": named_world["cwd_a"]}, actor=ALICE
        )
        assert own.status_code == 200 and "<mark>heron</mark>" in own.text
        assert '<option value="global"' not in own.text
        wide = await ds.client.get("/-/pi-memory/search", params={"q": "kestrel", "scope": "global"}, actor=ALICE)
        assert wide.status_code == 400 and "wider than allowed" in wide.text and FLUENT not in wide.text
        api = await ds.client.get(api_path("search", named_world, q="kestrel", scope="global"), actor=ALICE)
        assert api.status_code == 400 and "kestrel only" not in api.text
        root = await ds.client.get("/-/pi-memory/search", params={"q": "kestrel", "scope": "global"}, actor=ROOT)
        assert root.status_code == 200 and "only in the fluenty" in root.text


@pytest.mark.asyncio
async def test_a_scope_wider_than_the_cap_shows_the_widest_allowed_as_chosen(locations, named_world):
    async with running(make_datasette(locations, permissions={ACTION: {"id": ["alice", "root"]}})) as ds:
        wide = await ds.client.get("/-/pi-memory/search", params={"q": "kestrel", "scope": "global"}, actor=ALICE)
        assert wide.status_code == 400
        assert '<option value="project" selected>' in wide.text
        assert '<option value="session" selected>' not in wide.text


@pytest.mark.asyncio
async def test_the_menu_link_is_for_people_only(locations, named_world):
    async with running(make_datasette(locations)) as ds:
        root = await ds.client.get("/", actor=ROOT)
        assert 'href="/-/pi-memory">Pi memory</a>' in root.text
        agent = await ds.client.get("/-/versions", actor={"id": "pi-agent"})
        assert 'href="/-/pi-memory">Pi memory</a>' not in agent.text


# ---- item 4: the index is private to pi-memory-read ---------------------------------------------


@pytest.fixture
def other_db(tmp_path) -> str:
    """An unrelated database served beside the index."""
    path = tmp_path / "other.db"
    c = sqlite3.connect(path)
    c.execute("CREATE TABLE birds (name TEXT)")
    c.execute("INSERT INTO birds VALUES ('wren-in-the-other-db')")
    c.commit()
    c.close()
    return str(path)


@pytest_asyncio.fixture
async def plain(locations, world, other_db):
    """`datasette serve history.sqlite other.db` with the plugin installed: no allow block; bob is granted
    pi-memory-read and people's cap is global (`max_scope: global`), so bob reads the index's own tables."""
    ds = Datasette(
        [str(locations.db_path), other_db],
        permissions={ACTION: {"id": ["bob", "root"]}},
        plugin_config={PLUGIN: {"max_scope": "global"}},
    )
    ds.root_enabled = True
    async with running(ds):
        yield ds


BOB = {"id": "bob"}  # granted pi-memory-read by configuration, capped at global

INDEX_PATHS = [
    "/history",
    "/history.json",
    "/history/files",
    "/history/files.json",
    "/history/files.csv",
    "/history/entries",
    "/history/entries.json",
    "/history/entries.csv",
    "/history/entries.json?_search=hero*&_searchmode=raw",
    "/history/entries/1",
    "/history/entries/1.json",
    "/history/sessions.json",
    "/history/meta.json",
    "/history/-/query.json?sql=select+rowid+from+entries_fts+where+entries_fts+match+'heron'",
    "/history/-/query.json?sql=select+path,cwd+from+files",
    "/history/-/query?sql=select+path,cwd+from+files",
    "/history/-/schema.json",
    "/history/entries/-/schema.json",
]
REVEALS = ("Apps/prjct", ".jsonl", "entries_fts", "session_id")


@pytest.mark.asyncio
@pytest.mark.parametrize("path", INDEX_PATHS)
async def test_the_index_is_closed_to_actors_without_pi_memory_read(plain, world, path):
    for kwargs in ({}, {"actor": ALICE}):
        res = await plain.client.get(path, **kwargs)
        assert res.status_code in (403, 404), (path, kwargs, res.status_code)
        assert not any(s in res.text for s in REVEALS), (path, kwargs)
    for actor in (ROOT, BOB):
        res = await plain.client.get(path, actor=actor)
        assert res.status_code == 200, (path, actor, res.status_code)


@pytest.mark.asyncio
async def test_the_term_index_answers_readers_only(plain, world):
    path = "/history/entries.json?_search=hero*&_searchmode=raw&_shape=array"
    alice = await plain.client.get(path, actor=ALICE)
    assert alice.status_code == 403 and world["ids"]["user"] not in alice.text
    bob = await plain.client.get(path, actor=BOB)
    assert bob.status_code == 200 and world["ids"]["user"] in bob.text


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path",
    [
        "/.json",
        "/",
        "/-/databases.json",
        "/-/schema.json",
        "/-/jump.json?q=entries",
        "/-/allowed.json?action=view-table",
        "/-/allowed.json?action=view-database",
    ],
)
async def test_introspection_lists_the_index_to_readers_only(plain, world, path):
    for kwargs in ({}, {"actor": ALICE}):
        res = await plain.client.get(path, **kwargs)
        assert res.status_code in (200, 403), (path, res.status_code)
        assert "history" not in res.text and "entries_fts" not in res.text, (path, kwargs)
        if res.status_code == 200 and path.startswith(
            ("/.json", "/-/databases", "/-/allowed.json?action=view-database")
        ):
            assert "other" in res.text, path  # the unrelated database is still listed
    root = await plain.client.get(path, actor=ROOT)
    assert root.status_code == 200 and "history" in root.text, path


@pytest.mark.asyncio
async def test_an_unrelated_database_stays_readable_anonymously(plain, world):
    table = await plain.client.get("/other/birds.json?_shape=array")
    assert table.status_code == 200 and table.json() == [{"rowid": 1, "name": "wren-in-the-other-db"}]
    sql = await plain.client.get("/other/-/query.json", params={"sql": "select name from birds", "_shape": "array"})
    assert sql.status_code == 200 and sql.json() == [{"name": "wren-in-the-other-db"}]
    page = await plain.client.get("/other", actor=ALICE)
    assert page.status_code == 200 and "birds" in page.text
    index = await plain.client.get("/history/files.json")
    assert index.status_code == 403


@pytest.mark.asyncio
async def test_cross_database_sql_does_not_reach_the_index(locations, world, other_db):
    ds = Datasette([str(locations.db_path), other_db], crossdb=True, permissions={ACTION: {"id": "root"}})
    ds.root_enabled = True
    async with running(ds):
        sql = {"sql": "select path from history.files", "_shape": "array"}
        anon = await ds.client.get("/_memory/-/query.json", params=sql)
        assert anon.status_code == 403 and ".jsonl" not in anon.text
        root = await ds.client.get("/_memory/-/query.json", params=sql, actor=ROOT)
        assert root.status_code == 200 and ".jsonl" in root.text
        other = await ds.client.get("/other/-/query.json", params={"sql": "select name from birds"})
        assert other.status_code == 200


@pytest.mark.asyncio
async def test_the_pimem_serve_configuration_keeps_its_private_index(locations, world):
    """An allow block for every authenticated actor does not open the index to one without the action."""
    async with running(pimem_serve_datasette(locations)) as ds:
        for path in (
            "/history/files.json",
            "/history/-/query.json?sql=select+path+from+files",
            "/history/compactions.json",
        ):
            alice = await ds.client.get(path, actor=ALICE)
            assert alice.status_code == 403 and ".jsonl" not in alice.text and "123456" not in alice.text, path
            root = await ds.client.get(path, actor=ROOT)
            assert root.status_code == 200, path
        stored = await ds.client.get("/-/queries.json", actor=ALICE)
        assert "compactions" not in stored.text
        assert "compactions" in (await ds.client.get("/-/queries.json", actor=ROOT)).text


# ---- item 4: nobody writes the index through Datasette -------------------------------------------


WRITES = [
    ("/history/entries/1/-/delete", {}),
    ("/history/entries/1/-/update", {"update": {"kind": "user"}}),
    (
        "/history/entries/-/insert",
        {
            "row": {
                "file_id": 1,
                "id": "zz",
                "kind": "user",
                "chars": 1,
                "line": 1,
                "offset": 0,
                "length": 1,
                "fingerprint": 0,
            }
        },
    ),
    (
        "/history/entries/-/upsert",
        {
            "rows": [
                {
                    "rowid": 1,
                    "id": "zz",
                    "file_id": 1,
                    "kind": "user",
                    "chars": 1,
                    "line": 1,
                    "offset": 0,
                    "length": 1,
                    "fingerprint": 0,
                }
            ]
        },
    ),
    ("/history/entries/-/drop", {"confirm": True}),
    ("/history/entries/-/alter", {"operations": [{"op": "add_column", "args": {"name": "x", "type": "text"}}]}),
    ("/history/-/create", {"table": "junk", "columns": [{"name": "id", "type": "integer"}]}),
    ("/history/-/execute-write", {"sql": "delete from entries"}),
]


@pytest.mark.asyncio
@pytest.mark.parametrize("path,body", WRITES)
async def test_root_cannot_change_the_index(plain, world, conn, path, body):
    before = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
    schema = conn.execute("SELECT group_concat(sql) FROM sqlite_master").fetchone()[0]
    res = await plain.client.post(path, json=body, actor=ROOT)
    assert res.status_code == 403, (path, res.status_code, res.text)
    assert res.json().get("ok") is not True
    assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == before
    assert conn.execute("SELECT group_concat(sql) FROM sqlite_master").fetchone()[0] == schema
    first = conn.execute("SELECT id FROM entries WHERE rowid = 1").fetchone()[0]
    found = await plain.client.get(api_path("read", world, id=first, scope="global"), actor=ROOT)
    assert found.json()["status"] == "ok"
    other = await plain.client.post("/other/birds/-/insert", json={"row": {"name": "robin"}}, actor=ROOT)
    assert other.status_code == 201  # root still writes the unrelated database


@pytest.mark.asyncio
async def test_no_write_reaches_the_index_through_datasette_s_write_connection(plain, world, conn):
    before = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
    with pytest.raises(Exception, match="read-only"):
        await plain.get_database("history").execute_write("DELETE FROM entries")
    assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == before
    await plain.get_database("other").execute_write("INSERT INTO birds VALUES ('finch')")


@pytest.mark.asyncio
async def test_a_table_level_allow_in_the_configuration_does_not_open_the_index(locations, world, conn):
    config = {
        "databases": {
            "history": {
                "tables": {
                    "files": {"allow": True},
                    "entries": {"permissions": {"delete-row": {"id": "*"}, "view-table": {"id": "*"}}},
                }
            }
        }
    }
    ds = Datasette([str(locations.db_path)], config=config)
    ds.root_enabled = True
    async with running(ds):
        anon = await ds.client.get("/history/files.json")
        assert anon.status_code == 403 and ".jsonl" not in anon.text
        alice = await ds.client.get("/history/entries.json", actor=ALICE)
        assert alice.status_code == 403 and world["ids"]["user"] not in alice.text
        delete = await ds.client.post("/history/entries/1/-/delete", json={}, actor=ROOT)
        assert delete.status_code == 403
        assert conn.execute("SELECT count(*) FROM entries WHERE rowid = 1").fetchone()[0] == 1
        root = await ds.client.get("/history/files.json", actor=ROOT)
        assert root.status_code == 200 and ".jsonl" in root.text


# ---- a cap narrower than global keeps Datasette's own tables closed (issue 25 item 4) -----------------

CAPPED_PATHS = [
    "/history",
    "/history/files.json",
    "/history/sessions.json",
    "/history/tool_calls.json",
    "/history/entries.json",
    "/history/entries.json?_search=kestrel",
    "/history/entries.json?_search=kestrel&_searchmode=raw",
    "/history/-/query.json?sql=select+path,cwd+from+files",
    "/history/-/query.json?sql=select+rowid+from+entries_fts+where+entries_fts+match+'kestrel'",
    "/history/entries_fts_data.json",
    "/history/entries_fts_idx.json",
    "/history/entries_fts_config.json",
    "/history/sessions_per_project_per_week.json",
]


@pytest.mark.asyncio
@pytest.mark.parametrize("cap", ["session", "project"])
async def test_a_capped_reader_is_refused_datasette_s_tables_views_sql_and_term_search(locations, named_world, cap):
    capped = make_datasette(locations, {"max_scope": cap}, permissions={ACTION: {"id": ["alice", "root"]}})
    async with running(capped) as ds:
        for path in CAPPED_PATHS:
            alice = await ds.client.get(path, actor=ALICE)
            assert alice.status_code == 403, (path, alice.status_code)
            assert not shows_the_other_project(alice.text, named_world) and ".jsonl" not in alice.text, path
            root = await ds.client.get(path, actor=ROOT)
            assert root.status_code == 200, (path, root.status_code)
        own = await ds.client.get(  # what the cap allows still answers: the current session through the API
            api_path("search", named_world, q="heron", scope="session", journal=str(named_world["a"].path)),
            actor=ALICE,
        )
        assert own.status_code == 200 and "heron" in own.text


@pytest.mark.asyncio
async def test_the_agent_is_refused_datasette_s_tables_and_sql_and_a_global_reader_keeps_them(
    locations, named_world, token
):
    readers = {ACTION: {"id": ["alice", "root", "pi-agent"]}}
    wide = make_datasette(locations, {"max_scope": "global"}, permissions=readers)
    async with running(wide) as ds:
        for path in CAPPED_PATHS[:10]:
            for request in (bearer(token), {"actor": {"id": "pi-agent"}}):  # its token, or its actor alone
                agent = await ds.client.get(path, **request)
                assert agent.status_code == 403, (path, agent.status_code)
                assert not shows_the_other_project(agent.text, named_world), path
            alice = await ds.client.get(path, actor=ALICE)
            assert alice.status_code == 200, (path, alice.status_code)
        api = await ds.client.get(api_path("search", named_world), **bearer(token))
        assert api.status_code == 200 and "heron" in api.text  # the agent reads through the API


@pytest.mark.asyncio
async def test_a_refused_page_says_how_to_get_a_login_link(world, locations):
    async with running(pimem_serve_datasette(locations)) as ds:
        for res in await assert_every_page_refuses(ds, world, actor=ALICE):
            assert "pimem login" in res.text and "one-time link" in res.text
            assert "the link pimem serve printed" not in res.text
        root = await ds.client.get("/-/pi-memory", actor=ROOT)
        assert root.status_code == 200 and "pimem login" not in root.text
