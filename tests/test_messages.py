"""Messages say the right thing in the right syntax: each surface writes its own examples.

The CLI names arguments as options (`--limit 20`), the API and the pages as parameters
(`limit=20`); a command to run reads as a command everywhere (`pimem read c3d4e5f6`).
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
import pytest_asyncio
from click.testing import CliRunner
from support.plugin_world import ROOT, make_datasette, running

from pimem_index import errors
from pimem_index import humanize as words
from pimem_index.cli import cli


@pytest_asyncio.fixture
async def ds(locations, world):
    async with running(make_datasette(locations)) as datasette:
        yield datasette


# (CLI arguments, API action and parameters, the CLI's example, the API's example)
BAD_ARGUMENTS = [
    (["search", "heron", "--limit", "0"], ("search", {"q": "heron", "limit": "0"}), "--limit 20", "limit=20"),
    (
        ["search", "heron", "--kind", "toolresult"],
        ("search", {"q": "heron", "kind": "toolresult"}),
        "--kind tool_result",
        "kind=tool_result",
    ),
    (
        ["read", "{user}", "--offset", "-1"],
        ("read", {"id": "{user}", "offset": "-1"}),
        "--offset 16000",
        "offset=16000",
    ),
    (["read", "{user}", "--offset", "99999"], ("read", {"id": "{user}", "offset": "99999"}), "--offset 0", "offset=0"),
    (
        ["search", "heron", "--session", "nosuchsession"],
        ("search", {"q": "heron", "scope": "session", "session_id": "nosuchsession"}),
        "--session 0b6e6f2c",
        "session_id=0b6e6f2c",
    ),
    (
        ["search", "heron", "--since", "yesterday"],
        ("search", {"q": "heron", "since": "yesterday"}),
        "--since 2026-03-15",
        "since=2026-03-15",
    ),
    (
        ["search", "heron", "--scope", "world"],
        ("search", {"q": "heron", "scope": "world"}),
        "--scope project",
        "scope=project",
    ),
]
IDS = ["limit", "kind", "offset", "offset-past-end", "session", "since", "scope"]


def _filled(value: str, world) -> str:
    return value.format(user=world["ids"]["user"])


@pytest.mark.parametrize("cli_args, api, cli_example, api_example", BAD_ARGUMENTS, ids=IDS)
def test_a_cli_error_shows_its_example_as_options_never_as_parameters(
    run, world, cli_args, api, cli_example, api_example
):
    result = run(*[_filled(a, world) for a in cli_args], "--no-index", "--cwd", world["cwd_a"])
    assert result.exit_code == 1
    assert f"e.g. {cli_example}" in result.output
    assert api_example not in result.output and "=" not in result.output.split("(e.g.")[1]


@pytest.mark.asyncio
@pytest.mark.parametrize("cli_args, api, cli_example, api_example", BAD_ARGUMENTS, ids=IDS)
async def test_an_api_error_shows_its_example_as_parameters_never_as_options(
    ds, world, cli_args, api, cli_example, api_example
):
    action, params = api
    query = urlencode({"cwd": world["cwd_a"], **{k: _filled(v, world) for k, v in params.items()}})
    res = await ds.client.get(f"/-/pi-memory/api/{action}?{query}", actor=ROOT)
    assert res.status_code == 400
    error = res.json()["error"]
    assert f"e.g. {api_example}" in error
    assert cli_example not in error and "--" not in error.split("(e.g.")[1]


@pytest.mark.asyncio
async def test_a_page_error_shows_its_example_as_parameters_never_as_options(ds, world):
    res = await ds.client.get("/-/pi-memory/search?q=heron&scope=global&limit=0", actor=ROOT)
    assert res.status_code == 400
    assert "(e.g. limit=20)" in res.text
    assert "--limit" not in res.text


@pytest.mark.asyncio
async def test_a_page_asks_for_a_session_as_a_parameter_never_as_an_option(ds, world):
    res = await ds.client.get("/-/pi-memory/search?q=heron&scope=session", actor=ROOT)
    assert res.status_code == 400
    assert "(e.g. session_id=0b6e6f2c-...)" in res.text
    assert "--session" not in res.text


def test_a_query_example_is_a_quoted_argument_on_the_cli_and_a_parameter_on_the_api():
    error = errors.UserError("keep the distinctive words", errors.Arg("q", "widgets migration"))
    assert error.for_cli() == "keep the distinctive words (e.g. 'widgets migration')"
    assert error.for_http() == "keep the distinctive words (e.g. q=widgets%20migration)"
    assert "q=" not in error.for_cli() and "'" not in error.for_http()


def test_a_command_example_reads_as_a_command_on_every_surface():
    error = errors.UserError("no such entry", "pimem read c3d4e5f6", errors.Arg("id", "c3d4e5f6"))
    assert error.for_cli() == "no such entry (e.g. pimem read c3d4e5f6, or c3d4e5f6)"
    assert error.for_http() == "no such entry (e.g. pimem read c3d4e5f6, or id=c3d4e5f6)"
    assert "--id" not in error.for_cli()


def test_arguments_given_together_join_as_one_example():
    error = errors.UserError("needs a session", (errors.Arg("scope", "session"), errors.Arg("session_id", "0b6e6f2c")))
    assert error.for_cli() == "needs a session (e.g. --scope session --session 0b6e6f2c)"
    assert error.for_http() == "needs a session (e.g. scope=session&session_id=0b6e6f2c)"
    assert "--session-id" not in error.for_cli()


# ---- what a message suggests -------------------------------------------------------------------


def test_an_entry_missing_from_a_narrow_scope_suggests_the_global_scope(run, world):
    other = world["other"]  # in the other project
    result = run("read", other, "--no-index", "--cwd", world["cwd_a"])
    assert result.exit_code == 1
    assert f"no entry {other} in the project scope" in result.output and "(e.g. --scope global)" in result.output
    assert "--scope project" not in result.output


def test_an_entry_missing_from_the_global_scope_suggests_no_scope_at_all(run, world):
    result = run("read", "deadbeef", "--scope", "global", "--no-index")
    assert result.exit_code == 1
    assert "no entry deadbeef in the index" in result.output and "pimem search" in result.output
    assert "--scope global" not in result.output.replace("pimem search QUERY --scope global", "")


@pytest.mark.asyncio
async def test_the_read_page_offers_a_wider_scope_only_when_there_is_one(ds, world):
    other = world["other"]
    narrow = await ds.client.get(f"/-/pi-memory/read?id={other}&scope=project&cwd={world['cwd_a']}", actor=ROOT)
    assert "Look in the global scope" in narrow.text and "scope=global" in narrow.text
    wide = await ds.client.get("/-/pi-memory/read?id=deadbeef&scope=global", actor=ROOT)
    assert "No entry deadbeef in the global scope" in wide.text and "Look in the" not in wide.text


def test_the_scope_to_try_is_wider_than_the_one_searched_and_within_the_cap():
    from pimem_index.search.scope import wider

    assert [wider(s, "global") for s in ("session", "project", "global")] == ["global", "global", None]
    assert wider("session", "project") == "project" and wider("project", "project") is None


def test_forgetting_a_forgotten_entry_again_says_it_is_already_forgotten(run, world):
    entry, sid = world["ids"]["user"], world["a"].session_id
    assert run("forget", entry).exit_code == 0
    again = run("forget", entry)
    assert again.exit_code == 1
    assert f"entry {entry} in session {sid} is already forgotten" in again.output
    assert f"pimem unforget {entry} --session {sid}" in again.output and "in the index" not in again.output


def test_an_unknown_session_to_forget_points_to_the_sessions_command(run, world):
    result = run("forget", "--session", "no-such-session")
    assert result.exit_code == 1 and "list sessions with: pimem sessions" in result.output
    assert "pimem search" not in result.output


# ---- counts in the right number ----------------------------------------------------------------


def test_a_rebuild_of_one_journal_says_journal_and_entry_in_the_singular(run, new_journal):
    new_journal().user("only one")
    result = run("rebuild")
    assert result.exit_code == 0 and "1 entry from 1 journal in" in result.output
    assert "1 journals" not in result.output and "1 entries" not in result.output


@pytest.mark.asyncio
async def test_the_overview_says_one_session_in_the_singular(locations, new_journal):
    from pimem_index import store
    from pimem_index.index import indexer

    new_journal().user("only one")
    conn = store.open_index(locations.db_path)
    indexer.index_all(conn, locations)
    conn.close()
    async with running(make_datasette(locations)) as datasette:
        page = (await datasette.client.get("/-/pi-memory", actor=ROOT)).text
    assert "</strong> session</div>" in page and "</strong> journal (" in page
    assert "</strong> sessions</div>" not in page and "</strong> journals (" not in page


# ---- why an entry is unavailable -------------------------------------------------------------


@pytest.fixture
def outside_entry(agent_dir, home, tmp_path):
    """An entry indexed from a folder given with --sessions-dir, then read without that folder."""
    from support.pijournal import Journal

    extra = tmp_path / "extra"
    journal = Journal(extra, str(home / "Apps/prjct"))
    entry = journal.user("zebrafish lives outside")
    assert CliRunner().invoke(cli, ["index", "--sessions-dir", str(extra)]).exit_code == 0
    return {"id": entry, "session_id": journal.session_id, "journal": str(journal.path)}


def test_a_search_hit_outside_the_journal_folders_says_why_it_is_unavailable(run, outside_entry):
    result = run("search", "zebrafish", "--scope", "global", "--no-index")
    assert "[journal line unavailable: the journal" in result.output and "outside the journal folders" in result.output
    assert "zebrafish lives" not in result.output


def test_the_api_gives_the_reason_of_an_unavailable_hit(run, outside_entry):
    import json

    hit = json.loads(run("search", "zebrafish", "--scope", "global", "--no-index", "--json").output)["results"][0]
    assert "outside the journal folders" in hit["reason"] and outside_entry["journal"] in hit["reason"]
    assert "zebrafish lives" not in json.dumps(hit)


@pytest.mark.asyncio
async def test_the_pages_give_the_reason_of_an_unavailable_entry(locations, outside_entry):
    sid, entry = outside_entry["session_id"], outside_entry["id"]
    async with running(make_datasette(locations)) as datasette:
        read = (await datasette.client.get(f"/-/pi-memory/read?id={entry}&scope=global", actor=ROOT)).text
        session = (await datasette.client.get(f"/-/pi-memory/sessions/{sid}", actor=ROOT)).text
        search = (await datasette.client.get("/-/pi-memory/search?q=zebrafish&scope=global", actor=ROOT)).text
    for page in (read, session, search):
        assert "unavailable: the journal " in page and "outside the journal folders" in page
        assert "zebrafish lives" not in page


def test_an_entry_whose_journal_changed_says_it_is_queued_for_reindexing(conn, locations, world):
    from pimem_index.session import conversation

    world["a"].path.write_bytes(world["a"].path.read_bytes().replace(b"heron", b"egret"))
    page = conversation.page(conn, locations, world["a"].session_id)
    shown = [item["entry"] for item in page["items"] if item["type"] == "entry"]
    assert shown[0]["text"] == "[journal line unavailable: the journal line changed since it was indexed; " + (
        "the journal is queued for reindexing]"
    )
    assert not any("egret" in e["text"] for e in shown if e["unavailable"])


# ---- pages: projects, what is searched, summaries ----------------------------------------------


@pytest.fixture
def nested_projects(conn, locations, new_journal):
    """A project with sessions at its root and in two sub-folders, and another project."""
    from pimem_index.index import indexer

    for folder in ("Apps/prjct", "Apps/prjct/prjct-fe", "Apps/prjct/prjct-be", "Apps/other"):
        new_journal(folder).user(f"work in {folder}")
    indexer.index_all(conn, locations)


def test_the_project_list_names_each_root_once_with_its_sub_folders_as_a_note(conn, home, nested_projects):
    from pimem_index.session import browse

    listed = {p["cwd"]: p for p in browse.projects(conn)}
    assert sorted(listed) == [str(home / "Apps/other"), str(home / "Apps/prjct")]
    assert sorted(listed[str(home / "Apps/prjct")]["folders"]) == [
        str(home / "Apps/prjct/prjct-be"),
        str(home / "Apps/prjct/prjct-fe"),
    ]
    assert str(home / "Apps/prjct/prjct-fe") not in listed and listed[str(home / "Apps/other")]["note"] == ""


@pytest.mark.asyncio
async def test_the_project_dropdowns_offer_roots_only(locations, home, nested_projects):
    paths = ("/-/pi-memory", "/-/pi-memory/search?q=work&scope=global", "/-/pi-memory/sessions", "/-/pi-memory/usage")
    async with running(make_datasette(locations)) as datasette:
        pages = [(await datasette.client.get(path, actor=ROOT)).text for path in paths]
    for page in pages:
        assert f'<option value="{home}/Apps/prjct"' in page and "(also prjct-" in page
        assert f'<option value="{home}/Apps/prjct/prjct-fe"' not in page


@pytest.mark.asyncio
async def test_a_sub_folder_chooses_its_project_root_in_every_project_select(locations, home, nested_projects):
    fe = home / "Apps/prjct/prjct-fe"
    paths = (f"/-/pi-memory/search?q=work&cwd={fe}", f"/-/pi-memory/sessions?cwd={fe}", f"/-/pi-memory/usage?cwd={fe}")
    async with running(make_datasette(locations)) as datasette:
        pages = [(await datasette.client.get(path, actor=ROOT)).text for path in paths]
    for path, page in zip(paths, pages, strict=True):
        assert f'<option value="{home}/Apps/prjct" selected>' in page, path
        assert f'<option value="{home}/Apps/other" selected>' not in page, path


@pytest.mark.asyncio
async def test_the_overview_preselects_no_project_while_the_scope_is_global(locations, home, nested_projects):
    async with running(make_datasette(locations)) as datasette:
        page = (await datasette.client.get("/-/pi-memory", actor=ROOT)).text
    assert '<option value="global" selected>' in page and '<option value="" selected>(every project)' in page
    assert f'<option value="{home}/Apps/prjct" selected' not in page
    assert f'<option value="{home}/Apps/other" selected' not in page


@pytest.mark.asyncio
async def test_a_project_search_without_a_folder_says_which_project_it_searched(locations, home, nested_projects):
    async with running(make_datasette(locations)) as datasette:
        picked = (await datasette.client.get("/-/pi-memory/search?q=work&scope=project", actor=ROOT)).text
        chosen = (
            await datasette.client.get(f"/-/pi-memory/search?q=work&scope=project&cwd={home}/Apps/other", actor=ROOT)
        ).text
    assert "No project was chosen: searching <code>" in picked and "the most recently active one" in picked
    assert "No project was chosen" not in chosen


@pytest.mark.asyncio
async def test_the_summaries_page_renders_markdown_with_html_as_text_and_secrets_masked(locations, new_journal):
    from pimem_index import store
    from pimem_index.index import indexer

    secret = "sk-" + "ant-" + "api03-" + "Hq7Lm2Xv9Rt4Wz8Kp3Nb6Yc1Df5Gs0Ja"
    journal = new_journal()
    journal.compaction(
        f"## Goal\nShip the otter release\n\n- [x] tests\n- [ ] docs\n\n<script>alert('x')</script>\nkey {secret}",
        tokens_before=98765,
    )
    conn = store.open_index(locations.db_path)
    indexer.index_all(conn, locations)
    conn.close()
    async with running(make_datasette(locations)) as datasette:
        page = (await datasette.client.get("/-/pi-memory/summaries?scope=global", actor=ROOT)).text
    assert "<h2>Goal</h2>" in page and "<li>[x] tests</li>" in page and "98,765 tokens before" in page
    assert "&lt;script&gt;alert(" in page and "<script>alert(" not in page
    assert secret not in page and secret[-16:] not in page


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (None, "-"),
        (45, "45 s"),
        (12 * 60 + 5, "12 min"),
        (3 * 3600 + 5 * 60, "3 h 05 min"),
        (2 * 86400 + 4 * 3600, "2 d 4 h"),
    ],
)
def test_a_duration_reads_in_the_two_largest_units_the_cli_and_the_pages_share(seconds, shown):
    assert words.duration(seconds) == shown
    assert "3h05m" not in words.duration(seconds)  # one format for the CLI and the pages


def test_pimem_sessions_shows_durations_as_the_pages_do(run, new_journal):
    j = new_journal("Apps/prjct")
    j.user("start")
    j.tick(12 * 60)
    j.user("twelve minutes later")
    result = run("sessions", "--scope", "global")
    assert result.exit_code == 0 and "12 min" in result.output
    assert "12m " not in result.output
