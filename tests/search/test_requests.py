"""Request objects: every field of a search or read checked once, when the request is built, from
values, the CLI's options or the API's parameters; the queries take them. And the scopes a cap offers."""

from __future__ import annotations

import os

import pytest
from datasette.utils import MultiParams

from pimem_index import journal
from pimem_index.errors import UserError
from pimem_index.index.indexer import index_all
from pimem_index.search import query, scope
from pimem_index.search.request import MAX_OFFSET, ReadRequest, SearchRequest, check_offset, parse_bound, query_args


@pytest.fixture
def two_projects(conn, locations, new_journal):
    """A deploy note in each of two projects, indexed: (journal, entry id) by project."""
    made = {}
    for name in ("Apps/mine", "Apps/other"):
        j = new_journal(name)
        made[name] = (j, j.user(f"deploy notes for {name}"))
    index_all(conn, locations)
    return made


def test_a_search_request_refuses_a_wrong_field_when_built():
    with pytest.raises(UserError, match=r"limit must be a whole number from 1 to 100 \(e.g. limit=20\)"):
        SearchRequest.create("deploy", limit="twenty")
    request = SearchRequest.create("Deploy deploy notes", limit="20", since="2026-03-15", kinds=["user", ""])
    assert (request.terms, request.limit, request.kinds) == (("deploy", "notes"), 20, ("user",))
    assert request.since.endswith("Z") and request.since != "2026-03-15", "a day becomes a UTC instant"


def test_a_summaries_request_holds_only_summary_kinds():
    assert SearchRequest.create(None, summaries=True).kinds == tuple(journal.SUMMARY_KINDS)
    assert SearchRequest.create(None, summaries=True, kinds=["compaction"]).kinds == ("compaction",)
    with pytest.raises(UserError, match="summaries holds only compaction and branch_summary entries, not 'user'"):
        SearchRequest.create(None, summaries=True, kinds=["user"])


def test_a_read_request_needs_an_id_and_a_whole_offset():
    assert ReadRequest.create("c3d4e5f6", offset="16000").offset == 16000
    with pytest.raises(UserError, match="read needs an entry id"):
        ReadRequest.create("")
    with pytest.raises(UserError, match="offset must be a whole number, 0 or more"):
        ReadRequest.create("c3d4e5f6", offset="-1")


def test_the_cli_options_make_a_relative_cwd_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert SearchRequest.from_options("deploy", cwd="Apps/mine").cwd == str(tmp_path / "Apps/mine")
    assert SearchRequest.from_options("deploy", cwd=None).cwd == str(tmp_path)
    assert ReadRequest.from_options("c3d4e5f6", cwd="Apps").cwd == str(tmp_path / "Apps")
    assert not SearchRequest.from_options("deploy", cwd="Apps/mine").cwd.startswith("Apps")


def test_a_search_takes_its_request(conn, locations, home, two_projects):
    mine = str(home / "Apps/mine")
    reply = query.search(conn, locations, SearchRequest.create("deploy", cwd=mine))
    assert [hit["id"] for hit in reply["results"]] == [two_projects["Apps/mine"][1]]
    assert two_projects["Apps/other"][1] not in [hit["id"] for hit in reply["results"]]
    assert reply == query.search(conn, locations, "deploy", cwd=mine), "the keyword form builds the same request"


def test_the_api_parameters_take_the_project_from_the_callers_journal(conn, locations, home, two_projects):
    journal_path = str(two_projects["Apps/mine"][0].path)
    args = query_args(MultiParams({"q": ["deploy"], "cwd": [""], "kind": ["user", ""]}))
    request = SearchRequest.from_args(args, max_scope="project", journal_path=journal_path)
    assert (request.scope, request.cwd, request.kinds) == ("project", None, ("user",)), "parsed without the index"
    assert scope.request_scope(conn, request).root == str(home / "Apps/mine"), "the journal's folder, resolved"
    reply = query.search(conn, locations, request)
    assert [hit["id"] for hit in reply["results"]] == [two_projects["Apps/mine"][1]]
    with pytest.raises(UserError, match="scope 'project' needs cwd or journal"):
        SearchRequest.from_args(args, max_scope="project")


def test_the_api_parameters_default_to_the_widest_scope_a_session_cap_allows(conn, home, two_projects):
    args = query_args(MultiParams({"id": [two_projects["Apps/mine"][1]]}))
    assert ReadRequest.from_args(args, max_scope="session").scope == "session"
    assert (
        ReadRequest.from_args(query_args(MultiParams({"id": ["x"], "cwd": [str(home)]})), max_scope="global").scope
        == "project"
    )


@pytest.mark.parametrize(
    "cap, offered, page_default",
    [
        ("session", ["session"], "session"),
        ("project", ["session", "project"], "project"),
        ("global", ["session", "project", "global"], "global"),
    ],
)
def test_a_capped_caller_is_offered_only_the_scopes_within_its_cap(cap, offered, page_default):
    assert scope.offered(cap) == offered and scope.page_default_scope(cap) == page_default
    assert all(not scope.allowed(wider, cap) for wider in scope.SCOPES if wider not in offered)


def test_a_configured_cap_must_be_a_scope():
    assert scope.checked_setting("plugins.datasette-pi-memory.max_scope", "global") == "global"
    with pytest.raises(
        UserError,
        match=r"^plugins.datasette-pi-memory.max_scope must be session, project or "
        r"global \(e.g. max_scope: project\), got 'everything'$",
    ):
        scope.checked_setting("plugins.datasette-pi-memory.max_scope", "everything")


def test_a_cwd_given_to_the_api_must_be_absolute(conn, two_projects):
    with pytest.raises(UserError, match="cwd must be an absolute folder"):
        scope.project_cwd(conn, "Apps/mine", None)
    assert scope.project_cwd(conn, os.sep + "Apps", None) == os.sep + "Apps"


# ---- every number and date has bounds (issue 25 item 6) ------------------------------------------

HUGE = "99999999999999999999"  # past 2**63: SQLite cannot bind it


def test_an_offset_is_a_whole_number_up_to_a_billion():
    assert check_offset(str(MAX_OFFSET)) == MAX_OFFSET == 10**9
    for wrong in (HUGE, str(MAX_OFFSET + 1), "9" * 5000):
        with pytest.raises(UserError, match=r"offset must be a whole number from 0 to 1,000,000,000 \(e.g. offset="):
            check_offset(wrong)
    for wrong in ("-1", "1e3"):
        with pytest.raises(UserError, match=r"offset must be a whole number, 0 or more \(e.g. offset="):
            check_offset(wrong)


@pytest.mark.parametrize("value", ["9999-12-31", "1900-01-01", "1969-12-31", "2200-01-01", "0001-01-01T00:00:00+14:00"])
def test_a_date_outside_1970_to_2199_is_refused_in_one_line(value):
    with pytest.raises(UserError, match=r"since: .* must fall between 1970 and 2199 \(e.g. since=2026-03-15") as e:
        parse_bound(value, end=False, name="since")
    assert "\n" not in str(e.value)


def test_the_first_and_last_days_within_the_bounds_are_read():
    assert parse_bound("1970-01-02", end=False, name="since").startswith("1970-01-0")
    assert parse_bound("2199-12-30", end=True, name="until").startswith("2199-12-3")


@pytest.mark.asyncio
async def test_an_out_of_bounds_number_or_date_is_a_400_everywhere_and_an_exit_1_on_the_cli(locations, two_projects):
    from click.testing import CliRunner
    from support.plugin_world import ROOT, make_datasette, running

    from pimem_index.cli import cli

    cwd = two_projects["Apps/mine"][0].cwd
    paths = [
        f"/-/pi-memory/api/search?offset={HUGE}&scope=global",
        f"/-/pi-memory/api/summaries?offset={HUGE}&scope=global",
        f"/-/pi-memory/api/sessions?offset={HUGE}",
        f"/-/pi-memory/api/read?id={two_projects['Apps/mine'][1]}&offset={HUGE}&cwd={cwd}",
        "/-/pi-memory/api/usage?since=9999-12-31",
        f"/-/pi-memory/sessions?offset={HUGE}",
        f"/-/pi-memory/summaries?offset={HUGE}&scope=global",
        f"/-/pi-memory/search?q=deploy&offset={HUGE}&scope=global",
        f"/-/pi-memory/sessions/{two_projects['Apps/mine'][0].session_id}?offset={HUGE}",
        "/-/pi-memory/usage?since=9999-12-31",
        "/-/pi-memory/usage?since=1900-01-01&until=9999-12-30",
    ]
    async with running(make_datasette(locations)) as datasette:
        for path in paths:
            res = await datasette.client.get(path, actor=ROOT)
            assert res.status_code == 400, (path, res.status_code)
            assert "1,000,000,000" in res.text or "between 1970 and 2199" in res.text, path
            assert "deploy notes" not in res.text and "Traceback" not in res.text, path
        fine = await datasette.client.get(f"/-/pi-memory/api/sessions?offset={MAX_OFFSET}", actor=ROOT)
        assert fine.status_code == 200 and fine.json()["sessions"] == []
    runner = CliRunner()
    for args in (["sessions", "--offset", HUGE], ["search", "--offset", HUGE], ["usage", "--since", "9999-12-31"]):
        result = runner.invoke(cli, [*args, "--no-index"])
        assert result.exit_code == 1, (args, result.output)
        assert result.output.count("\n") == 1 and "Traceback" not in result.output, result.output
