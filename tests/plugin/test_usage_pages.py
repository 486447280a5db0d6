"""Issue 17's figures over HTTP: the usage and sessions API, the sessions and usage pages, the session
header, the overview's headline, the canned queries and the links the render hook puts on ids.

Every positive check sits beside a must-not over the same data (another project's session, a
token's cap, a secret in a first message, another database's ids).
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
import pytest_asyncio
from click.testing import CliRunner
from datasette.database import Database
from support.commands import pimem
from support.pijournal import Journal
from support.pijournal import usage as usage_figures
from support.plugin_world import HERON, ROOT, bearer, make_datasette, pimem_serve_datasette, running
from support.usage_world import GPT, OPUS, SECRET, SONNET, expected, local_noon, write_usage_world

from datasette_pi_memory.state import ACTION
from pimem_index.cli import cli
from pimem_index.index.indexer import index_all

# ---- the render hook's links ------------------------------------------------------------------


@pytest.mark.asyncio
async def test_session_and_entry_ids_in_index_sql_link_to_the_plugin_pages(ds, world):
    sid, entry = world["a"].session_id, world["ids"]["user"]
    sql = f"select session_id, id as entry_id from entries where id = '{entry}'"
    res = await ds.client.get("/history/-/query", params={"sql": sql}, actor=ROOT)
    assert res.status_code == 200, res.text
    assert f'<a href="/-/pi-memory/sessions/{sid}">{sid}</a>' in res.text
    assert f'<a href="/-/pi-memory/read?id={entry}&amp;session_id={sid}">{entry}</a>' in res.text
    assert HERON not in res.text  # a link reads nothing


@pytest.mark.asyncio
async def test_ids_in_another_database_stay_plain_text(locations, world, tmp_path):
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE t (session_id TEXT, entry_id TEXT)")
        c.execute("INSERT INTO t VALUES (?, ?)", (world["a"].session_id, world["ids"]["user"]))
    datasette = make_datasette(locations)
    datasette.add_database(Database(datasette, str(other)), name="other")
    async with running(datasette):
        res = await datasette.client.get("/other/t", actor=ROOT)
        index = await datasette.client.get("/history/sessions", actor=ROOT)
    assert res.status_code == 200 and world["a"].session_id in res.text
    assert "/-/pi-memory/sessions/" not in res.text and "/-/pi-memory/read?" not in res.text
    assert f'href="/-/pi-memory/sessions/{world["a"].session_id}"' in index.text  # the index's own view links


# ---- the usage world: three sessions with figures, indexed and served ---------------------------


@pytest.fixture
def usage(conn, locations, sessions_dir, home):
    """write_usage_world's three sessions, indexed."""
    made = write_usage_world(sessions_dir, home)
    index_all(conn, locations)
    return made


@pytest_asyncio.fixture
async def figures_ds(locations, usage):
    async with running(make_datasette(locations)) as datasette:
        yield datasette


def _sessions_in(text: str, usage: dict) -> set[str]:
    """Which of the usage world's sessions a page links to."""
    return {name for name in ("big", "small", "other") if f"/-/pi-memory/sessions/{usage[name].session_id}" in text}


# ---- the API ----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_agent_token_gets_usage_and_sessions_of_its_own_project_only(figures_ds, usage, token):
    for action in ("usage", "sessions"):
        own = await figures_ds.client.get(f"/-/pi-memory/api/{action}?cwd={usage['prjct']}", **bearer(token))
        assert own.status_code == 200, own.text
        assert own.json()["scope"] == "project" and own.json()["root"] == usage["prjct"]
        assert usage["other"].session_id not in own.text and "gpt-5" not in own.text
        wide = await figures_ds.client.get(f"/-/pi-memory/api/{action}?scope=global", **bearer(token))
        assert wide.status_code == 400 and "wider than allowed" in wide.json()["error"]
        assert "gpt-5" not in wide.text
    ids = (await figures_ds.client.get(f"/-/pi-memory/api/sessions?cwd={usage['prjct']}", **bearer(token))).json()
    assert {s["session_id"] for s in ids["sessions"]} == {usage["big"].session_id, usage["small"].session_id}


@pytest.mark.asyncio
async def test_root_gets_every_projects_usage_and_sessions_by_default(figures_ds, usage):
    data = (await figures_ds.client.get("/-/pi-memory/api/usage?by=model", actor=ROOT)).json()
    assert data["scope"] == "global" and {r["key"] for r in data["rows"]} == {OPUS, SONNET, GPT}
    listed = (await figures_ds.client.get("/-/pi-memory/api/sessions", actor=ROOT)).json()
    assert len(listed["sessions"]) == 3 and listed["next_offset"] is None


@pytest.mark.asyncio
@pytest.mark.parametrize("action", ("usage", "sessions"))
async def test_usage_and_sessions_need_the_permission(figures_ds, usage, token, action):
    anon = await figures_ds.client.get(f"/-/pi-memory/api/{action}")
    assert anon.status_code == 401 and "error" in anon.json() and "claude" not in anon.text
    alice = await figures_ds.client.get(f"/-/pi-memory/api/{action}", actor={"id": "alice"})
    assert alice.status_code == 403 and "claude" not in alice.text


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("action", "params", "example"),
    [
        ("usage", "by=hour", "(e.g. by=model)"),
        ("usage", "since=last+week", "(e.g. since=2026-03-15"),
        ("sessions", "sort=name", "(e.g. sort=cost)"),
        ("sessions", "offset=-5", "(e.g. offset=20)"),
        ("sessions", "limit=0", "(e.g. limit=20)"),
        ("sessions", "until=13/03/2026", "(e.g. until=2026-03-15"),
    ],
)
async def test_a_bad_argument_is_a_json_400_with_an_example(figures_ds, usage, action, params, example):
    res = await figures_ds.client.get(f"/-/pi-memory/api/{action}?{params}", actor=ROOT)
    assert res.status_code == 400
    assert example in res.json()["error"] and "\n" not in res.json()["error"]
    assert "rows" not in res.json() and "sessions" not in res.json()


@pytest.mark.asyncio
async def test_sessions_sort_by_cost_tokens_and_size_largest_first(figures_ds, usage):
    async def order(sort):
        res = await figures_ds.client.get(f"/-/pi-memory/api/sessions?sort={sort}", actor=ROOT)
        return [s["session_id"] for s in res.json()["sessions"]]

    big, small, other = (usage[name].session_id for name in ("big", "small", "other"))
    assert await order("cost") == [big, other, small]
    assert await order("tokens") == [big, other, small]
    assert await order("size") == [big, small, other]
    assert (await order("date"))[-1] == big  # the newest activity first: the oldest session last


# ---- the sessions list ------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_sessions_list_links_every_session_to_its_conversation_titled_and_redacted(figures_ds, usage):
    res = await figures_ds.client.get("/-/pi-memory/sessions", actor=ROOT)
    assert res.status_code == 200, res.text
    assert _sessions_in(res.text, usage) == {"big", "small", "other"}
    assert "Tidy the README" in res.text  # its name
    assert "translate the onboarding screens" in res.text  # no name: its first message
    assert "Fix the flaky deploy" in res.text and SECRET not in res.text  # reread and redacted
    assert "$2.50" in res.text and "claude-opus-4-5" in res.text


@pytest.mark.asyncio
async def test_the_sessions_list_filters_by_project_model_and_date(figures_ds, usage):
    async def shown(**params):
        res = await figures_ds.client.get("/-/pi-memory/sessions", params=params, actor=ROOT)
        assert res.status_code == 200, res.text
        return _sessions_in(res.text, usage)

    assert await shown(cwd=usage["fluenty"]) == {"other"}
    assert await shown(model=OPUS) == {"big"}
    day = local_noon(3).date().isoformat()
    assert await shown(since=day, until=day) == {"big"}
    assert await shown(since=local_noon(1).date().isoformat(), model=SONNET) == {"small"}


@pytest.mark.asyncio
async def test_the_sessions_list_sorts_and_pages(figures_ds, usage):
    res = await figures_ds.client.get("/-/pi-memory/sessions?sort=cost&limit=2", actor=ROOT)
    text = res.text
    big, other, small = (f"/-/pi-memory/sessions/{usage[n].session_id}" for n in ("big", "other", "small"))
    assert text.index(big) < text.index(other) and small not in text
    assert 'href="/-/pi-memory/sessions?sort=cost&amp;limit=2&amp;offset=2">next page' in text
    second = await figures_ds.client.get("/-/pi-memory/sessions?sort=cost&limit=2&offset=2", actor=ROOT)
    assert small in second.text and big not in second.text and other not in second.text


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ("/-/pi-memory/sessions", "/-/pi-memory/usage"))
async def test_a_bad_date_on_a_figures_page_is_a_400_saying_the_right_form(figures_ds, usage, path):
    res = await figures_ds.client.get(f"{path}?since=yesterday", actor=ROOT)
    assert res.status_code == 400 and "(e.g. since=2026-03-15" in res.text and "--since" not in res.text
    assert _sessions_in(res.text, usage) == set() and "$2.50" not in res.text
    assert 'value="yesterday"' in res.text  # the form shows what was asked, to correct it


# ---- the usage page ---------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_usage_page_stacks_cost_per_day_by_model_each_bar_linking_to_its_sessions(figures_ds, usage):
    res = await figures_ds.client.get("/-/pi-memory/usage", actor=ROOT)
    assert res.status_code == 200, res.text
    day = local_noon(3).date().isoformat()
    link = f"/-/pi-memory/sessions?since={day}&amp;until={day}&amp;model={OPUS}"
    assert res.text.count(f'href="{link}"') == 2  # the cost chart's bar and the tokens chart's
    assert f"{day} &middot; {OPUS}: $2.00" in res.text
    assert f"model={GPT}&amp;since={day}" not in res.text and f"until={day}&amp;model={GPT}" not in res.text
    opened = await figures_ds.client.get(link.replace("&amp;", "&"), actor=ROOT)
    assert _sessions_in(opened.text, usage) == {"big"}


@pytest.mark.asyncio
async def test_the_usage_page_lists_models_projects_and_the_costliest_sessions(figures_ds, usage):
    res = await figures_ds.client.get("/-/pi-memory/usage", actor=ROOT)
    text = res.text
    month = (local_noon(0) - timedelta(days=29)).date().isoformat()
    assert "$2.75" in text  # the total
    for model, cost in ((OPUS, "$2.00"), (SONNET, "$0.55"), (GPT, "$0.20")):
        # the legend, its name and its bar open its sessions in the page's period (the last 30 days)
        assert cost in text and text.count(f'href="/-/pi-memory/sessions?since={month}&amp;model={model}"') == 3
    assert "$2.55" in text  # Apps/prjct
    assert text.index(usage["big"].session_id) < text.index(usage["other"].session_id)
    assert SECRET not in text
    fluenty = await figures_ds.client.get("/-/pi-memory/usage", params={"cwd": usage["fluenty"]}, actor=ROOT)
    assert "$0.20" in fluenty.text and OPUS not in fluenty.text and _sessions_in(fluenty.text, usage) == {"other"}


@pytest.mark.asyncio
async def test_the_usage_page_charts_a_long_period_per_week(figures_ds, usage):
    res = await figures_ds.client.get("/-/pi-memory/usage?since=2025-01-01", actor=ROOT)
    assert res.status_code == 200 and "Cost per ISO week" in res.text
    year, week, _ = local_noon(3).date().isocalendar()
    assert f"{year}-W{week:02d} &middot; {OPUS}: $2.00" in res.text
    assert "Cost per day" not in res.text


@pytest.mark.asyncio
async def test_the_usage_page_shows_the_last_30_days_unless_asked_and_marks_the_period_shown(figures_ds, usage):
    default = (await figures_ds.client.get("/-/pi-memory/usage", actor=ROOT)).text
    assert 'aria-current="true">Last 30 days</a>' in default and 'aria-current="true">All time' not in default
    every = (await figures_ds.client.get("/-/pi-memory/usage?since=", actor=ROOT)).text
    assert 'aria-current="true">All time</a>' in every and 'aria-current="true">Last 30 days' not in every
    first = local_noon(3).date().isoformat()
    assert f"{first} to {local_noon(0).date().isoformat()} (local days)" in every  # from the first day with figures


# ---- who sees the figures pages -----------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ("/-/pi-memory/sessions", "/-/pi-memory/usage"))
async def test_the_figures_pages_refuse_anonymous_visitors_and_the_agents_token(figures_ds, usage, token, path):
    for kwargs in ({}, {"actor": {"id": "alice"}}, bearer(token)):
        res = await figures_ds.client.get(path, **kwargs)
        assert res.status_code == 403 and "claude" not in res.text and "$2.50" not in res.text
    assert (await figures_ds.client.get(path, actor=ROOT)).status_code == 200


@pytest.mark.asyncio
async def test_an_actor_capped_to_the_project_sees_one_project_on_the_figures_pages(locations, usage):
    datasette = make_datasette(locations, permissions={ACTION: {"id": ["alice", "root"]}})
    alice = {"id": "alice"}
    async with running(datasette):
        listed = await datasette.client.get("/-/pi-memory/sessions", params={"cwd": usage["prjct"]}, actor=alice)
        default = await datasette.client.get("/-/pi-memory/usage", actor=alice)
    assert _sessions_in(listed.text, usage) == {"big", "small"}
    assert "All projects" not in listed.text
    assert default.status_code == 200 and "All projects" not in default.text
    # no project chosen: the most recently active one, never every project
    assert _sessions_in(default.text, usage) == {"big", "small"} and GPT not in default.text


# ---- the session header and the overview --------------------------------------------------------


@pytest.mark.asyncio
async def test_the_session_header_shows_models_duration_tokens_cost_tool_calls_and_errors(figures_ds, usage):
    res = await figures_ds.client.get(f"/-/pi-memory/sessions/{usage['big'].session_id}", actor=ROOT)
    assert res.status_code == 200
    header = res.text[res.text.index('class="pi-memory-session-figures"') :]
    header = header[: header.index("</div>\n</div>")]
    for shown in (OPUS, SONNET, "8 s", "36.0 k / 2.3 k", "$2.50", "2</strong> tool calls", "2</strong> errors"):
        assert shown in header, shown
    assert GPT not in header
    small = await figures_ds.client.get(f"/-/pi-memory/sessions/{usage['small'].session_id}", actor=ROOT)
    assert "$0.05" in small.text and OPUS not in small.text and "0</strong> errors" in small.text


@pytest.mark.asyncio
async def test_the_overview_shows_the_headline_figures_linked_to_the_usage_page(figures_ds, usage, locations):
    res = await figures_ds.client.get("/-/pi-memory", actor=ROOT)
    assert res.status_code == 200
    assert '<a href="/-/pi-memory/usage?since=">$2.75</a>' in res.text  # all time
    assert "3</a></strong> sessions with usage" in res.text
    assert '<a href="/-/pi-memory/sessions">All sessions' in res.text
    alice = make_datasette(locations, permissions={ACTION: {"id": ["alice", "root"]}})
    async with running(alice):
        capped = await alice.client.get("/-/pi-memory", actor={"id": "alice"})
    assert "$2.55" in capped.text and "$2.75" not in capped.text  # its project's figures, not every project's


# ---- canned queries -----------------------------------------------------------------------------

CANNED = (
    "cost_per_project_per_week",
    "cost_per_model_per_day",
    "most_expensive_sessions",
    "failing_tools_by_rate",
    "files_most_edited",
)


@pytest_asyncio.fixture
async def served_usage(locations, usage):
    """The usage world under exactly the configuration and metadata `pimem serve` uses."""
    async with running(pimem_serve_datasette(locations)) as datasette:
        yield datasette


@pytest.mark.asyncio
@pytest.mark.parametrize("name", CANNED)
async def test_each_canned_query_runs_for_readers_only(served_usage, usage, name):
    res = await served_usage.client.get(f"/history/{name}.json?_shape=array", actor=ROOT)
    assert res.status_code == 200, res.text
    assert res.json(), name
    assert SECRET not in res.text and "flaky deploy" not in res.text  # figures and ids, never journal text
    anon = await served_usage.client.get(f"/history/{name}.json?_shape=array")
    assert anon.status_code == 403 and usage["big"].session_id not in anon.text


@pytest.mark.asyncio
async def test_the_canned_queries_count_what_the_journals_say(served_usage, usage):
    async def rows(name):
        return (await served_usage.client.get(f"/history/{name}.json?_shape=array", actor=ROOT)).json()

    week = "{}-W{:02d}".format(*local_noon(3).isocalendar()[:2])
    same_week = local_noon(1).isocalendar()[:2] == local_noon(3).isocalendar()[:2]
    weekly = {(r["project"], r["week"]): r["cost"] for r in await rows("cost_per_project_per_week")}
    assert weekly[(usage["prjct"], week)] == pytest.approx(2.55 if same_week else 2.5)
    assert (usage["fluenty"], week) not in weekly or same_week
    daily = {(r["day"], r["model"]): r["cost"] for r in await rows("cost_per_model_per_day")}
    assert daily[(local_noon(3).date().isoformat(), OPUS)] == pytest.approx(2.0)
    assert (local_noon(1).date().isoformat(), OPUS) not in daily
    assert [r["session_id"] for r in await rows("most_expensive_sessions")][0] == usage["big"].session_id
    failing = {r["tool"]: r for r in await rows("failing_tools_by_rate")}
    assert failing["bash"]["failed"] == 1 and failing["bash"]["failed_percent"] == 100.0
    assert failing["bash"]["session_id"] == usage["big"].session_id
    assert failing["edit"]["failed"] == 0 and failing["edit"]["entry_id"] is None
    edited = {(r["path"], r["session_id"]): r["edits"] for r in await rows("files_most_edited")}
    assert edited == {("src/deploy.py", usage["big"].session_id): 1, ("README.md", usage["small"].session_id): 1}


@pytest.mark.asyncio
async def test_session_and_entry_ids_in_the_canned_queries_link_to_the_plugin_pages(served_usage, usage):
    res = await served_usage.client.get("/history/failing_tools_by_rate", actor=ROOT)
    sid = usage["big"].session_id
    assert f'<a href="/-/pi-memory/sessions/{sid}">{sid}</a>' in res.text
    rows = (await served_usage.client.get("/history/failing_tools_by_rate.json?_shape=array", actor=ROOT)).json()
    failed = next(r["entry_id"] for r in rows if r["tool"] == "bash")
    assert f'<a href="/-/pi-memory/read?id={failed}&amp;session_id={sid}">{failed}</a>' in res.text
    edited = await served_usage.client.get("/history/files_most_edited", actor=ROOT)
    assert f'<a href="/-/pi-memory/sessions/{usage["small"].session_id}">' in edited.text


# ---- the agreement test -------------------------------------------------------------------------


def _sql_sessions(conn) -> dict:
    rows = conn.execute(
        "SELECT session_id, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, models, "
        "tool_calls, errors FROM sessions"
    ).fetchall()
    return {
        r[0]: {
            **dict(zip(FIGURE_KEYS, r[1:6], strict=True)),
            "models": set(r[6].split(",")),
            "tool_calls": r[7],
            "errors": r[8],
        }
        for r in rows
    }


FIGURE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost")


def money(cost: float) -> str:
    """Dollars as the pages show a sum of a cent or more."""
    return f"${cost:,.2f}"


def _agrees(found: dict, want: dict, keys=FIGURE_KEYS) -> None:
    for key in keys:
        assert found[key] == pytest.approx(want[key]), key


@pytest.mark.asyncio
async def test_sql_the_cli_the_api_and_the_pages_agree_with_the_journals(figures_ds, usage, conn):
    want = expected([usage["big"], usage["small"], usage["other"]])
    env = dict(os.environ)

    # SQL: the sessions view
    sql = _sql_sessions(conn)
    assert set(sql) == set(want["sessions"])
    for sid, figures in want["sessions"].items():
        _agrees(sql[sid], figures)
        assert sql[sid]["models"] == figures["models"]
        assert (sql[sid]["tool_calls"], sql[sid]["errors"]) == (figures["tool_calls"], figures["errors"])

    # the CLI and the API: sessions, and usage per day and per model with the total
    api_sessions = (await figures_ds.client.get("/-/pi-memory/api/sessions", actor=ROOT)).json()
    cli_sessions = json.loads(pimem(env, "sessions", "--json", "--no-index"))
    for listed in (api_sessions, cli_sessions):
        found = {s["session_id"]: s for s in listed["sessions"]}
        assert set(found) == set(want["sessions"])
        for sid, figures in want["sessions"].items():
            _agrees(found[sid], figures, ("input_tokens", "output_tokens", "cost"))
            assert set(found[sid]["models"]) == figures["models"]
            assert (found[sid]["tool_calls"], found[sid]["errors"]) == (figures["tool_calls"], figures["errors"])
    for by, wanted in (("day", want["days"]), ("model", want["models"])):
        api = (await figures_ds.client.get(f"/-/pi-memory/api/usage?by={by}", actor=ROOT)).json()
        cli = json.loads(pimem(env, "usage", "--by", by, "--json", "--no-index"))
        for reply in (api, cli):
            rows = {row["key"]: row for row in reply["rows"]}
            assert set(rows) == set(wanted)
            for key, figures in wanted.items():
                _agrees(rows[key], figures, (*FIGURE_KEYS, "messages"))
            _agrees(reply["total"], want["total"], (*FIGURE_KEYS, "messages"))

    # the pages: each session's cost on the list, the total and each model's cost on the usage page
    listed = (await figures_ds.client.get("/-/pi-memory/sessions", actor=ROOT)).text
    for sid, figures in want["sessions"].items():
        row = listed[listed.index(f"/-/pi-memory/sessions/{sid}") :]
        assert f"<strong>{money(figures['cost'])}</strong>" in row[: row.index("</tr>")]
    page = (await figures_ds.client.get("/-/pi-memory/usage?since=", actor=ROOT)).text
    assert f"<strong>{money(want['total']['cost'])}</strong> cost" in page
    assert f"{int(want['total']['messages'])}</strong> messages" in page
    per_model = page[page.index("<h2>Per model</h2>") : page.index("<h2>Per project</h2>")]
    for model, figures in want["models"].items():
        row = per_model[per_model.index(f"model={model}") :]
        assert f"<strong>{money(figures['cost'])}</strong>" in row[: row.index("</tr>")], model


@pytest.mark.asyncio
async def test_a_forgotten_session_is_on_no_figures_page_nor_reply(locations, forgotten_session):
    kept = forgotten_session["kept"].session_id
    async with running(make_datasette(locations)) as datasette:
        for path in ("/-/pi-memory/sessions", "/-/pi-memory/api/sessions", "/-/pi-memory/usage?since=", "/-/pi-memory"):
            res = await datasette.client.get(path, actor=ROOT)
            assert res.status_code == 200, path
            assert not [secret for secret in forgotten_session["secrets"] if secret in res.text], path
            if "sessions" in path:
                assert kept in res.text, path


def test_pimem_sessions_sorts_as_the_api_does(usage):
    runner = CliRunner()
    by_cost = runner.invoke(cli, ["sessions", "--sort", "cost", "--json", "--no-index"])
    assert by_cost.exit_code == 0, by_cost.output
    ids = [s["session_id"] for s in json.loads(by_cost.output)["sessions"]]
    assert ids == [usage["big"].session_id, usage["other"].session_id, usage["small"].session_id]
    wrong = runner.invoke(cli, ["sessions", "--sort", "name"])
    assert wrong.exit_code == 2 and "'name' is not one of 'date', 'cost', 'tokens', 'size'" in wrong.output


@pytest.mark.asyncio
async def test_the_weekly_session_query_counts_iso_weeks(locations, agent_dir, home):
    for day in (datetime(2027, 1, 1, 12, tzinfo=UTC), datetime(2027, 1, 4, 12, tzinfo=UTC)):  # a Friday, a Monday
        Journal(agent_dir / "sessions", str(home / "Apps/prjct"), start=day).user("a session of its week")
    assert CliRunner().invoke(cli, ["index"]).exit_code == 0
    async with running(pimem_serve_datasette(locations)) as datasette:
        res = await datasette.client.get("/history/sessions_per_project_per_week.json?_shape=array", actor=ROOT)
    weeks = {row["week"] for row in res.json()}
    assert weeks == {"2026-W53", "2027-W01"}  # 1 January 2027 is in 2026's last ISO week
    assert "2027-W00" not in weeks  # what SQLite's %W would have said


@pytest.mark.asyncio
async def test_the_largest_tool_outputs_link_each_entry_to_its_read_page(served_usage, usage):
    rows = (await served_usage.client.get("/history/largest_tool_outputs.json?_shape=array", actor=ROOT)).json()
    assert rows and "id" not in rows[0]  # the column is entry_id, which the render hook links
    page = await served_usage.client.get("/history/largest_tool_outputs", actor=ROOT)
    first = rows[0]
    link = f'<a href="/-/pi-memory/read?id={first["entry_id"]}&amp;session_id={first["session_id"]}">'
    assert link in page.text
    assert SECRET not in page.text


# ---- figures no real session reaches (issue 25 item 2) ---------------------------------------------


def _write_overflowing_session(new_journal) -> tuple[Journal, Journal]:
    """A session whose two answers report 2**62 input tokens and $1.7e308 each (their sums overflow a
    64-bit integer and a float), and an ordinary session beside it."""
    hostile = new_journal("Apps/prjct")
    hostile.user("the hostile overflow session")
    for _ in range(2):
        hostile.assistant("an answer with absurd figures", usage=usage_figures(2**62, 2**62, 1.7e308, 2**62, 2**62))
    ordinary = new_journal("Apps/fluenty")
    ordinary.user("an ordinary session")
    ordinary.assistant("a normal answer", usage=usage_figures(1200, 300, 0.25))
    return hostile, ordinary


FIGURE_SURFACES = (
    "/-/pi-memory",
    "/-/pi-memory/sessions",
    "/-/pi-memory/usage?since=",
    "/-/pi-memory/api/usage",
    "/-/pi-memory/api/sessions",
    "/history/sessions.json",
)


@pytest.mark.asyncio
async def test_figures_no_session_reaches_are_dropped_and_every_figure_surface_answers(locations, conn, new_journal):
    hostile, ordinary = _write_overflowing_session(new_journal)
    runner = CliRunner()
    for rebuilt in (False, True):
        result = runner.invoke(cli, ["rebuild"] if rebuilt else ["index"])
        assert result.exit_code == 0, result.output
        for args in (["sessions", "--json"], ["usage", "--json"], ["sessions"], ["usage", "--by", "session"]):
            result = runner.invoke(cli, [*args, "--no-index"])
            assert result.exit_code == 0 and "Traceback" not in result.output, (args, result.output)
        total = json.loads(runner.invoke(cli, ["usage", "--json", "--no-index"]).output)["total"]
        assert (total["input_tokens"], total["cost"]) == (1200, 0.25)  # the ordinary session alone
        assert total["messages"] == 3  # the hostile answers still count as messages: only their figures go
        async with running(make_datasette(locations)) as datasette:
            paths = (*FIGURE_SURFACES, f"/-/pi-memory/sessions/{hostile.session_id}")
            for path in (*paths, f"/-/pi-memory/sessions/{ordinary.session_id}"):
                res = await datasette.client.get(path, actor=ROOT)
                assert res.status_code == 200, (rebuilt, path, res.text[-300:])
                assert "Infinity" not in res.text and "9223372036854775807" not in res.text, path
            rows = (await datasette.client.get("/-/pi-memory/api/sessions", actor=ROOT)).json()["sessions"]
        figures = {s["session_id"]: (s["input_tokens"], s["cost"]) for s in rows}
        assert figures == {hostile.session_id: (0, 0.0), ordinary.session_id: (1200, 0.25)}
        assert conn.execute("SELECT count(*) FROM entries WHERE input_tokens > 1e15 OR cost > 1e12").fetchone()[0] == 0
