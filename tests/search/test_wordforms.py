"""Word forms: a query word finds the other forms of it, through the library, the CLI, the API and the search page.

Every positive check sits beside a must-not over the same data: another project's entry holding
the same form is never returned, an entry holding the words as written ranks above one holding
only other forms of them, an identifier's parts match only as written, a word with no other
forms finds what it found before, and only the whole words a query matched are marked.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.plugin_world import ROOT, make_datasette, running

from datasette_pi_memory.html import highlight
from pimem_index.cli import cli
from pimem_index.search import query, wordforms


@pytest.fixture
def forms_world(agent_dir, new_journal, home):
    """Two projects, indexed: prjct's entries hold other forms of the query words, and so does other's."""
    a = new_journal("Apps/prjct")
    ids = {
        "timeouts": a.user("the gateway timeouts came back with ERROR 504 twice"),
        "migrating": a.user("we are migrating the widgets table tonight"),
        "parse_args": a.user("call parse_args before main runs, then read every option it returns to the caller"),
        "exact_err": a.user("fetch failed: ERR_CONNECTION_REFUSED on port 8080 while the dev server was restarting"),
        "parsed": a.user("parsed arg"),  # other forms of parse and args only: shorter and newer than the exact one
        "connect": a.user("connect refused err"),  # other forms of connection only, as short and newer
    }
    b = new_journal("Apps/other")
    ids["other"] = b.user("migrating the billing service next week")
    assert CliRunner().invoke(cli, ["index"]).exit_code == 0
    return {"ids": ids, "cwd_a": str(home / "Apps/prjct"), "cwd_b": str(home / "Apps/other")}


def hit_ids(reply: dict) -> list[str]:
    return [h["id"] for h in reply["results"]]


def cli_search(query_text: str, cwd: str) -> dict:
    result = CliRunner().invoke(cli, ["search", query_text, "--json", "--cwd", cwd])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


# -- the rule: which words a query word matches


def test_a_word_matches_its_other_forms_and_not_longer_words_that_merely_start_with_it():
    assert {"timeouts"} <= set(wordforms.of("timeout"))
    assert {"migrating", "migrated", "migration"} <= set(wordforms.of("migrate"))
    assert "timeout" not in wordforms.of("time")  # a longer word is not a form of it


def test_numbers_and_short_words_have_no_other_forms():
    assert wordforms.of("504") == ("504",)
    assert wordforms.of("ok") == ("ok",)


# -- the library


def test_library_timeout_errors_finds_the_entry_holding_timeouts_and_error(conn, locations, forms_world):
    reply = query.search(conn, locations, "timeout errors", cwd=forms_world["cwd_a"])
    assert hit_ids(reply) == [forms_world["ids"]["timeouts"]]
    assert reply["match"] == "all"  # every word matched, in some form: no fallback to any word


def test_library_migrate_finds_migrating_in_its_own_project_only(conn, locations, forms_world):
    reply = query.search(conn, locations, "migrate", cwd=forms_world["cwd_a"])
    assert hit_ids(reply) == [forms_world["ids"]["migrating"]]
    assert forms_world["ids"]["other"] not in hit_ids(reply)


def test_library_an_identifier_finds_its_exact_entry_and_no_other_forms(conn, locations, forms_world):
    ids = forms_world["ids"]
    found = hit_ids(query.search(conn, locations, "parse_args", cwd=forms_world["cwd_a"]))
    assert found[0] == ids["parse_args"]
    assert ids["parsed"] not in found  # shorter and newer, and an identifier's parts have no other forms
    found = hit_ids(query.search(conn, locations, "ERR_CONNECTION_REFUSED", cwd=forms_world["cwd_a"]))
    assert found[0] == ids["exact_err"]
    assert ids["connect"] not in found


def test_library_a_page_the_words_as_written_fill_holds_no_other_form(conn, locations, forms_world, new_journal):
    j = new_journal("Apps/prjct")
    exact = [j.user(f"the widgets table migrate step {n}") for n in range(2)]
    assert CliRunner().invoke(cli, ["index"]).exit_code == 0
    page = hit_ids(query.search(conn, locations, "migrate", cwd=forms_world["cwd_a"], limit=2))
    assert sorted(page) == sorted(exact)
    assert forms_world["ids"]["migrating"] not in page  # found with a longer page, never above an exact entry
    longer = hit_ids(query.search(conn, locations, "migrate", cwd=forms_world["cwd_a"], limit=3))
    assert longer[2] == forms_world["ids"]["migrating"]


def test_library_repeats_folded_away_leave_room_for_other_forms(conn, locations, forms_world, new_journal):
    j = new_journal("Apps/prjct")
    repeats = [j.user("the widgets table migrate step") for _ in range(4)]
    assert CliRunner().invoke(cli, ["index"]).exit_code == 0
    reply = query.search(conn, locations, "migrate", cwd=forms_world["cwd_a"], limit=3)
    page = hit_ids(reply)
    assert len([i for i in page if i in repeats]) == 1 and reply["folded"] == 3  # one hit for the four repeats
    assert forms_world["ids"]["migrating"] in page  # the room folding left goes to another form
    assert forms_world["ids"]["other"] not in page


def test_library_a_word_with_no_other_forms_finds_what_it_did_before(conn, locations, forms_world):
    reply = query.search(conn, locations, "504", cwd=forms_world["cwd_a"])
    assert hit_ids(reply) == [forms_world["ids"]["timeouts"]]
    assert query.search(conn, locations, "zebrafish", cwd=forms_world["cwd_a"])["results"] == []


def test_library_the_excerpt_starts_near_the_form_that_matched(conn, locations, forms_world, new_journal):
    j = new_journal("Apps/prjct")
    long_id = j.user("filler words here " * 40 + "then the migrations ran")
    assert CliRunner().invoke(cli, ["index"]).exit_code == 0
    hits = query.search(conn, locations, "migrate", cwd=forms_world["cwd_a"])["results"]
    excerpt = next(h["excerpt"] for h in hits if h["id"] == long_id)
    assert "migrations ran" in excerpt
    assert not excerpt.startswith("filler")  # centred on the match, not the entry's start


# -- the CLI


def test_cli_timeout_errors_finds_the_entry_holding_timeouts_and_error(forms_world):
    reply = cli_search("timeout errors", forms_world["cwd_a"])
    assert hit_ids(reply) == [forms_world["ids"]["timeouts"]]
    assert "timeouts" in reply["results"][0]["excerpt"]


def test_cli_migrate_finds_migrating_in_its_own_project_only(forms_world):
    reply = cli_search("migrate", forms_world["cwd_a"])
    assert hit_ids(reply) == [forms_world["ids"]["migrating"]]
    assert forms_world["ids"]["other"] not in hit_ids(reply)


def test_cli_an_identifier_finds_its_exact_entry_first(forms_world):
    found = hit_ids(cli_search("parse_args", forms_world["cwd_a"]))
    assert found[0] == forms_world["ids"]["parse_args"]
    assert forms_world["ids"]["parsed"] not in found


def test_cli_marks_the_whole_form_that_matched_and_nothing_else(forms_world):
    result = CliRunner().invoke(cli, ["search", "migrate", "--cwd", forms_world["cwd_a"]], color=True)
    assert result.exit_code == 0, result.output
    assert "\x1b[1m\x1b[4mmigrating\x1b[0m" in result.output
    assert "\x1b[4mthe" not in result.output and "\x1b[4mwidgets" not in result.output


# -- the API


@pytest.mark.asyncio
async def test_api_timeout_errors_finds_the_entry_holding_timeouts_and_error(locations, forms_world):
    async with running(make_datasette(locations)) as ds:
        res = await ds.client.get(
            "/-/pi-memory/api/search", params={"q": "timeout errors", "cwd": forms_world["cwd_a"]}, actor=ROOT
        )
    assert res.status_code == 200
    assert hit_ids(res.json()) == [forms_world["ids"]["timeouts"]]


@pytest.mark.asyncio
async def test_api_migrate_finds_migrating_in_its_own_project_only(locations, forms_world):
    async with running(make_datasette(locations)) as ds:
        res = await ds.client.get(
            "/-/pi-memory/api/search", params={"q": "migrate", "cwd": forms_world["cwd_a"]}, actor=ROOT
        )
    assert hit_ids(res.json()) == [forms_world["ids"]["migrating"]]
    assert forms_world["ids"]["other"] not in hit_ids(res.json())


@pytest.mark.asyncio
async def test_api_an_identifier_finds_its_exact_entry_first(locations, forms_world):
    async with running(make_datasette(locations)) as ds:
        res = await ds.client.get(
            "/-/pi-memory/api/search", params={"q": "ERR_CONNECTION_REFUSED", "cwd": forms_world["cwd_a"]}, actor=ROOT
        )
    found = hit_ids(res.json())
    assert found[0] == forms_world["ids"]["exact_err"]
    assert forms_world["ids"]["connect"] not in found


# -- the search page


@pytest.mark.asyncio
async def test_search_page_finds_and_marks_timeouts_and_error_for_timeout_errors(locations, forms_world):
    async with running(make_datasette(locations)) as ds:
        res = await ds.client.get(
            "/-/pi-memory/search",
            params={"q": "timeout errors", "scope": "project", "cwd": forms_world["cwd_a"]},
            actor=ROOT,
        )
    assert "<mark>timeouts</mark>" in res.text and "<mark>ERROR</mark>" in res.text
    assert "<mark>gateway</mark>" not in res.text and "widgets" not in res.text


@pytest.mark.asyncio
async def test_search_page_finds_migrating_for_migrate_in_its_own_project_only(locations, forms_world):
    async with running(make_datasette(locations)) as ds:
        res = await ds.client.get(
            "/-/pi-memory/search", params={"q": "migrate", "scope": "project", "cwd": forms_world["cwd_a"]}, actor=ROOT
        )
    assert "<mark>migrating</mark> the widgets" in res.text
    assert "billing" not in res.text


# -- highlighting marks what search matched


def test_highlight_marks_whole_words_the_query_matched_never_a_word_it_merely_starts():
    assert str(highlight("timeouts and timekeeping", ["timeout"])) == "<mark>timeouts</mark> and timekeeping"
    assert "<mark>" not in str(highlight("timeouts and timekeeping", ["time"]))


def test_highlight_marks_both_halves_of_an_identifier_and_escapes_the_rest():
    marked = str(highlight("call parse_args <now>", ["parse", "args"]))
    assert marked == "call <mark>parse</mark>_<mark>args</mark> &lt;now&gt;"
