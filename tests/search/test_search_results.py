"""What a page of search results shows: repeats folded, pages that add up, phrases, where else to look.

Through the library, the pimem command, the JSON API and the search page, over real journals.
"""

from __future__ import annotations

import json
import re

import pytest
import pytest_asyncio
from click.testing import CliRunner
from support.plugin_world import ROOT, api_path, bearer, make_datasette, running

from pimem_index.cli import cli
from pimem_index.index.indexer import index_all
from pimem_index.search import query, results

REPEATED = "bash command: redis-cli --timeout 30 ping (redis timeout: 30)"
REPEATS = 18


def ids(reply) -> list[str]:
    return [r["id"] for r in reply["results"]]


@pytest.fixture
def flood(conn, locations, new_journal, home):
    """One session writing the same redis timeout line 18 times, and two other sessions of the same
    project that mention redis and its timeout in longer (lower ranked) entries."""
    noisy = new_journal("Apps/prjct")
    repeats = [noisy.tool_result("bash", REPEATED) for _ in range(REPEATS)]
    same_length = noisy.tool_result("bash", REPEATED.replace("30)", "31)"))
    quiet = [new_journal("Apps/prjct") for _ in range(2)]
    others = [
        j.user(f"the redis timeout was raised after the outage number {n}; see the incident notes and the runbook")
        for n, j in enumerate(quiet)
    ]
    index_all(conn, locations)
    return {
        "noisy": noisy,
        "repeats": repeats,
        "same_length": same_length,
        "others": others,
        "cwd": str(home / "Apps/prjct"),
    }


# ---- no flood: one hit for the same text from the same session ------------------------------------


def test_repeats_of_one_line_in_a_session_fold_into_one_hit_and_other_sessions_appear(conn, locations, flood):
    reply = query.search(conn, locations, "redis timeout", cwd=flood["cwd"], limit=5)
    noisy = [h for h in reply["results"] if h["session_id"] == flood["noisy"].session_id]
    assert set(flood["others"]) <= set(ids(reply))
    assert [h["folded"] for h in noisy if h["id"] in flood["repeats"]] == [REPEATS - 1]
    assert reply["folded"] == REPEATS - 1
    assert len([h for h in noisy if h["id"] in flood["repeats"]]) == 1, "a repeat must not be shown twice"


def test_an_entry_of_the_same_length_but_other_text_is_not_folded(conn, locations, flood):
    reply = query.search(conn, locations, "redis timeout", cwd=flood["cwd"], limit=10)
    assert flood["same_length"] in ids(reply)
    shown = {h["id"]: h for h in reply["results"]}
    assert shown[flood["same_length"]]["folded"] == 0
    assert sum(h["folded"] for h in reply["results"]) == REPEATS - 1


def test_a_session_search_shows_every_repeat(conn, locations, flood):
    sid = flood["noisy"].session_id
    reply = query.search(conn, locations, "redis timeout", scope="session", session_id=sid, limit=50)
    assert set(flood["repeats"]) <= set(ids(reply))
    assert reply["folded"] == 0 and all(h["folded"] == 0 for h in reply["results"])


def test_the_same_text_in_two_sessions_is_one_hit_saying_where_else(conn, locations, flood, new_journal):
    twin = new_journal("Apps/prjct")
    twin_id = twin.tool_result("bash", REPEATED)
    index_all(conn, locations)
    reply = query.search(conn, locations, "redis timeout", cwd=flood["cwd"], limit=10)
    same = [h for h in reply["results"] if h["id"] in flood["repeats"] or h["id"] == twin_id]
    assert len(same) == 1
    assert same[0]["like"] == {"entries": 1, "sessions": 1}


# ---- pages of results --------------------------------------------------------------------------


def test_pages_of_a_search_add_up_to_every_hit_once(conn, locations, new_journal, home):
    made = []
    for s in range(5):
        j = new_journal("Apps/prjct")
        made += [j.user(f"kestrel note {s}-{n} about the deploy") for n in range(5)]
    index_all(conn, locations)
    seen, offsets, offset = [], [], 0
    while offset is not None:
        reply = query.search(conn, locations, "kestrel", cwd=str(home / "Apps/prjct"), limit=10, offset=offset)
        offsets.append(reply["offset"])
        seen += ids(reply)
        offset = reply["next_offset"]
    assert offsets == [0, 10, 20]
    assert sorted(seen) == sorted(made)
    assert len(seen) == len(set(seen)), "no hit may be shown on two pages"


def test_folding_and_paging_agree_no_hit_twice_none_lost(conn, locations, flood):
    seen, offset = [], 0
    while offset is not None:
        reply = query.search(conn, locations, "redis timeout", cwd=flood["cwd"], limit=1, offset=offset)
        seen += ids(reply)
        offset = reply["next_offset"]
    assert len(seen) == len(set(seen)) == 4  # the folded repeats, the same-length line, two other sessions
    assert set(flood["others"]) | {flood["same_length"]} <= set(seen)
    assert len(set(seen) & set(flood["repeats"])) == 1


def test_the_newest_entries_page_too(conn, locations, flood):
    first = query.search(conn, locations, None, cwd=flood["cwd"], limit=3)
    second = query.search(conn, locations, None, cwd=flood["cwd"], limit=3, offset=3)
    assert first["next_offset"] == 3 and second["offset"] == 3
    assert first["folded"] == 0 and all(h["folded"] == 0 for h in first["results"]), "the newest entries are not folded"
    assert not set(ids(first)) & set(ids(second))
    last = query.search(conn, locations, None, cwd=flood["cwd"], limit=3, offset=REPEATS + 3 - 1)
    assert len(last["results"]) == 1 and last["next_offset"] is None


def test_summaries_take_an_offset(conn, locations, new_journal, home):
    j = new_journal("Apps/prjct")
    made = [j.compaction(f"summary {n} of the heron work") for n in range(3)]
    index_all(conn, locations)
    first = query.summaries(conn, locations, "heron", cwd=str(home / "Apps/prjct"), limit=2)
    rest = query.summaries(conn, locations, "heron", cwd=str(home / "Apps/prjct"), limit=2, offset=2)
    assert sorted(ids(first) + ids(rest)) == sorted(made)
    assert first["next_offset"] == 2 and rest["next_offset"] is None


def test_a_negative_offset_is_a_one_line_error_with_an_example(conn, locations, flood):
    from pimem_index.errors import UserError

    with pytest.raises(UserError, match=r"offset must be a whole number, 0 or more \(e\.g\. offset=20\)"):
        query.search(conn, locations, "redis", cwd=flood["cwd"], offset=-1)


# ---- phrases ----------------------------------------------------------------------------------


@pytest.fixture
def phrased(conn, locations, new_journal, home):
    j = new_journal("Apps/prjct")
    made = {
        "phrase": j.user("the server said: Connection  refused, again"),
        "apart": j.user("refused the connection twice"),
    }
    index_all(conn, locations)
    return {**made, "cwd": str(home / "Apps/prjct")}


def test_a_quoted_phrase_keeps_only_entries_holding_its_words_in_order(conn, locations, phrased):
    reply = query.search(conn, locations, '"connection refused"', cwd=phrased["cwd"])
    assert ids(reply) == [phrased["phrase"]]
    assert phrased["apart"] not in ids(reply)
    assert reply["phrases"] == {"phrases": ["connection refused"], "checked": 2, "complete": True}
    unquoted = query.search(conn, locations, "connection refused", cwd=phrased["cwd"])
    assert set(ids(unquoted)) == {phrased["phrase"], phrased["apart"]} and "phrases" not in unquoted


def test_a_phrase_search_checks_a_bounded_number_of_candidates_and_says_when_it_stopped(
    conn, locations, new_journal, home
):
    j = new_journal("Apps/prjct")
    for n in range(results.PHRASE_REREADS + 5):
        j.user(f"refused then connection {n}")
    index_all(conn, locations)
    reply = query.search(conn, locations, '"connection refused"', cwd=str(home / "Apps/prjct"))
    assert reply["results"] == []
    assert reply["phrases"]["checked"] == results.PHRASE_REREADS and reply["phrases"]["complete"] is False
    assert "only the best" in reply["phrases"]["note"]


# ---- helpful zero results ----------------------------------------------------------------------


def test_a_project_search_finding_nothing_says_how_many_match_in_other_projects(conn, locations, world):
    reply = query.search(conn, locations, "kestrel", cwd=world["cwd_a"])
    assert reply["results"] == []
    assert reply["elsewhere"] == {"global": 1}
    assert reply["hint"] == query.NO_MATCH_HINT
    full = query.search(conn, locations, "heron", cwd=world["cwd_a"], limit=1)
    assert full["results"] and "elsewhere" not in full and "hint" not in full, "a full page counts nothing"


def test_a_capped_caller_gets_a_hint_and_no_count_from_outside_its_cap(conn, locations, world):
    reply = query.search(conn, locations, "kestrel", cwd=world["cwd_a"], max_scope="project")
    assert reply["hint"] == "nothing matched in this scope; try other or fewer terms"
    assert "elsewhere" not in reply
    assert "fluenty" not in json.dumps(reply)


def test_a_session_search_counts_the_rest_of_its_project_and_every_project(conn, locations, world, new_journal):
    sibling = new_journal("Apps/prjct")
    sibling.user("kestrel seen in a sibling session")
    index_all(conn, locations)
    sid = world["a"].session_id
    reply = query.search(conn, locations, "kestrel", scope="session", session_id=sid)
    assert reply["elsewhere"] == {"project": 1, "global": 2}
    capped = query.search(
        conn, locations, "kestrel", scope="session", session_id=sid, cwd=world["cwd_a"], max_scope="project"
    )
    assert capped["elsewhere"] == {"project": 1}, "a project cap counts its project, never other projects"


# ---- the pimem command -------------------------------------------------------------------------


def test_the_cli_folds_repeats_and_says_how_to_see_them(run, flood):
    result = run("search", "redis timeout", "--cwd", flood["cwd"], "--limit", "5", "--no-index")
    assert result.exit_code == 0, result.output
    sid = flood["noisy"].session_id
    short = json.loads(run("search", "redis timeout", "--cwd", flood["cwd"], "--json", "--no-index").output)[
        "sessions"
    ][sid]["short_id"]
    assert (
        f"and {REPEATS - 1} more like it in this session (see them: pimem search 'redis timeout' --session {short})"
        in (result.output)
    )
    assert all(f"id {o}" in result.output for o in flood["others"])
    assert result.output.count(f"  session {short}\n") == 2, (
        "the repeats are one hit (and the same-length line another)"
    )
    assert sid not in result.output, "sessions are shown by their short ids"


def test_the_cli_points_folded_summaries_at_a_summaries_search_of_the_session(run, conn, locations, new_journal, home):
    j = new_journal("Apps/prjct")
    for _ in range(3):
        j.compaction("Summary: the heron pipeline was fixed")
    index_all(conn, locations)
    result = run("summaries", "heron", "--cwd", home / "Apps/prjct", "--no-index")
    short = json.loads(run("summaries", "heron", "--cwd", home / "Apps/prjct", "--no-index", "--json").output)[
        "sessions"
    ][j.session_id]["short_id"]
    assert f"and 2 more like it in this session (see them: pimem summaries heron --session {short})" in (result.output)
    assert "pimem search heron" not in result.output


def test_the_cli_pages_with_offset_and_says_where_the_next_page_starts(run, flood):
    first = run("search", "redis timeout", "--cwd", flood["cwd"], "--limit", "2", "--no-index")
    assert "[more results: --offset 2]" in first.output
    second = run("search", "redis timeout", "--cwd", flood["cwd"], "--limit", "2", "--offset", "2", "--no-index")
    assert second.output.startswith("2 results after the first 2 in project")
    assert "more results" not in second.output
    data = json.loads(run("search", "redis timeout", "--cwd", flood["cwd"], "--offset", "2", "--json").output)
    assert data["offset"] == 2 and data["next_offset"] is None
    bad = CliRunner().invoke(cli, ["search", "redis", "--offset", "-1"])
    assert bad.exit_code == 1 and "offset must be a whole number, 0 or more" in bad.output
    assert "Traceback" not in bad.output


def test_the_cli_says_where_else_a_search_that_found_nothing_matches(run, world):
    result = run("search", "kestrel", "--cwd", world["cwd_a"], "--no-index")
    assert result.exit_code == 0, result.output
    assert "1 result in other projects: --scope global" in result.output
    found = run("search", "heron", "--cwd", world["cwd_a"], "--limit", "1", "--no-index")
    assert "other projects" not in found.output


def test_summaries_take_offset_on_the_command_line(run, world):
    result = run("summaries", "--scope", "global", "--limit", "1", "--offset", "1", "--json", "--no-index")
    data = json.loads(result.output)
    assert data["offset"] == 1 and len(data["results"]) == 1 and data["next_offset"] is None


# ---- the API and the search page ---------------------------------------------------------------


@pytest_asyncio.fixture
async def ds(locations, world, flood):
    async with running(make_datasette(locations)) as datasette:
        yield datasette


@pytest.mark.asyncio
async def test_the_api_folds_repeats_and_pages(ds, flood, world, token):
    res = await ds.client.get(api_path("search", world, q="redis timeout", limit=2), **bearer(token))
    data = res.json()
    assert data["folded"] == REPEATS - 1 and data["next_offset"] == 2
    assert len([i for i in ids(data) if i in flood["repeats"]]) == 1
    rest = (
        await ds.client.get(api_path("search", world, q="redis timeout", limit=2, offset=2), **bearer(token))
    ).json()
    assert not set(ids(rest)) & set(ids(data)) and rest["next_offset"] is None
    bad = await ds.client.get(api_path("search", world, offset="-3"), **bearer(token))
    assert bad.status_code == 400 and "offset=20" in bad.json()["error"]


@pytest.mark.asyncio
async def test_the_agent_gets_only_a_hint_people_get_the_count_elsewhere(ds, world, token):
    agent = (await ds.client.get(api_path("search", world, q="kestrel"), **bearer(token))).json()
    assert agent["hint"] == "nothing matched in this scope; try other or fewer terms"
    assert "elsewhere" not in agent and "fluenty" not in json.dumps(agent)
    person = (await ds.client.get(api_path("search", world, q="kestrel"), actor=ROOT)).json()
    assert person["elsewhere"] == {"global": 1}


@pytest.mark.asyncio
async def test_the_search_page_folds_repeats_with_a_link_to_the_session(ds, flood):
    params = {"q": "redis timeout", "scope": "project", "cwd": flood["cwd"], "limit": "5"}
    res = await ds.client.get("/-/pi-memory/search", params=params, actor=ROOT)
    assert f"and {REPEATS - 1} more like it in this session</a>" in res.text
    link = re.search(r'<a href="([^"]*)">and \d+ more like it', res.text).group(1)
    assert "scope=session" in link and f"session_id={flood['noisy'].session_id}" in link and "offset" not in link
    assert all(f"read?id={o}" in res.text for o in flood["others"])
    assert sum(res.text.count(f"read?id={r}&") for r in flood["repeats"]) == 1


@pytest.mark.asyncio
async def test_the_search_page_links_the_next_and_previous_pages(ds, flood):
    params = {"q": "redis timeout", "scope": "project", "cwd": flood["cwd"], "limit": "2"}
    first = await ds.client.get("/-/pi-memory/search", params=params, actor=ROOT)
    assert 'rel="next"' in first.text and "offset=2" in first.text and 'rel="prev"' not in first.text
    second = await ds.client.get("/-/pi-memory/search", params={**params, "offset": "2"}, actor=ROOT)
    assert "results 3&ndash;4" in second.text
    assert 'rel="prev"' in second.text and "offset=0" in second.text and 'rel="next"' not in second.text


@pytest.mark.asyncio
async def test_the_search_page_links_other_projects_when_a_project_has_nothing(ds, world):
    params = {"q": "kestrel", "scope": "project", "cwd": world["cwd_a"]}
    res = await ds.client.get("/-/pi-memory/search", params=params, actor=ROOT)
    assert "1 result in other projects" in res.text
    assert "scope=global" in res.text and ">search every project</a>" in res.text
    found = await ds.client.get("/-/pi-memory/search", params={**params, "q": "heron", "limit": "1"}, actor=ROOT)
    assert "in other projects" not in found.text
