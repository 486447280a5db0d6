"""`pimem usage` and `pimem sessions` (library and CLI): tokens and cost per key, sessions with their
figures, each checked against sums written here from what the journals were given."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime

import pytest
from support.pijournal import usage

from pimem_index.errors import UserError
from pimem_index.index.indexer import index_all
from pimem_index.search.request import SessionsRequest, UsageRequest
from pimem_index.session import activity


@pytest.fixture
def world(conn, locations, new_journal, home):
    """Three sessions: two in prjct (opus on 2026-03-02, sonnet on 2026-03-09), one in other (gpt-5,
    2026-03-09), each with known figures."""
    opus = new_journal("Apps/prjct", start=datetime(2026, 3, 2, 10, 0, tzinfo=UTC))
    opus.user("plan")
    opus.assistant("a", model="claude-opus-4-5", usage=usage(1000, 100, 1.5, 5000, 200))
    opus.assistant("b", model="claude-opus-4-5", usage=usage(2000, 200, 2.5))
    sonnet = new_journal("Apps/prjct", start=datetime(2026, 3, 9, 10, 0, tzinfo=UTC))
    sonnet.assistant("c", tool_calls=[("bash", {"command": "ls"})], usage=usage(300, 30, 0.25))
    sonnet.tool_result("bash", "no such file", is_error=True, call_id=sonnet.call_ids[0])
    other = new_journal("Apps/other", start=datetime(2026, 3, 9, 12, 0, tzinfo=UTC))
    other.assistant("d", model="gpt-5", provider="openai", usage=usage(40, 4, 0.125))
    index_all(conn, locations)
    return {"opus": opus, "sonnet": sonnet, "other": other, "prjct": str(home / "Apps/prjct")}


def by_key(data: dict) -> dict:
    return {row["key"]: row for row in data["rows"]}


def test_usage_by_model_counts_each_model_s_tokens_cost_messages_and_sessions(conn, world):
    rows = by_key(activity.usage(conn, UsageRequest.create("model")))
    assert rows["claude-opus-4-5"] == {
        "key": "claude-opus-4-5",
        "input_tokens": 3000,
        "output_tokens": 300,
        "cache_read_tokens": 5000,
        "cache_write_tokens": 200,
        "total_tokens": 8500,
        "cost": 4.0,
        "messages": 2,
        "sessions": 1,
    }
    assert rows["claude-sonnet-4-5"]["input_tokens"] == 300  # not mixed into opus
    assert list(rows) == ["claude-opus-4-5", "claude-sonnet-4-5", "gpt-5"]  # the largest cost first


def test_the_usage_total_is_the_sum_of_every_project_s_rows(conn, world):
    data = activity.usage(conn, UsageRequest.create("session"))
    assert data["total"]["cost"] == pytest.approx(1.5 + 2.5 + 0.25 + 0.125)
    assert (data["total"]["messages"], data["total"]["sessions"]) == (4, 3)
    assert data["scope"] == "global"


def test_a_cwd_narrows_usage_to_its_project_and_leaves_the_other_out(conn, world):
    data = activity.usage(conn, UsageRequest.create("model", cwd=world["prjct"]))
    assert set(by_key(data)) == {"claude-opus-4-5", "claude-sonnet-4-5"}
    assert "gpt-5" not in by_key(data)
    assert (data["scope"], data["root"]) == ("project", world["prjct"])


def test_usage_by_project_keys_each_session_by_its_project_root(conn, world, home):
    rows = by_key(activity.usage(conn, UsageRequest.create("project")))
    assert rows[world["prjct"]]["sessions"] == 2
    assert rows[str(home / "Apps/other")]["sessions"] == 1


def test_usage_by_week_and_month_uses_iso_weeks_and_calendar_months(conn, world):
    weeks = by_key(activity.usage(conn, UsageRequest.create("week")))
    months = by_key(activity.usage(conn, UsageRequest.create("month")))
    assert {k: v["messages"] for k, v in weeks.items()} == {"2026-W10": 2, "2026-W11": 2}
    assert {k: v["messages"] for k, v in months.items()} == {"2026-03": 4}
    assert activity.iso_week("2026-12-31") == "2026-W53" and activity.iso_week("2027-01-04") == "2027-W01"


@pytest.fixture
def local_zone(monkeypatch):
    """Set the local time zone (TZ) for this test; the machine's own is back afterwards."""

    def use(zone: str) -> None:
        monkeypatch.setenv("TZ", zone)
        time.tzset()

    yield use
    monkeypatch.undo()
    time.tzset()


def test_usage_by_day_counts_a_message_on_its_local_day(conn, locations, new_journal, local_zone):
    local_zone("Asia/Tokyo")
    late = new_journal("Apps/prjct", start=datetime(2026, 3, 15, 23, 30, tzinfo=UTC))
    late.assistant("late", usage=usage(10, 1, 0.01))
    index_all(conn, locations)
    days = by_key(activity.usage(conn, UsageRequest.create("day")))
    assert list(days) == ["2026-03-16"]  # 08:30 in Tokyo
    assert "2026-03-15" not in days


def test_a_half_hour_zone_splits_one_utc_hour_at_its_local_midnight(conn, locations, new_journal, local_zone):
    local_zone("Asia/Kolkata")  # UTC+5:30: 18:30 UTC is local midnight
    j = new_journal("Apps/prjct", start=datetime(2026, 3, 15, 18, 14, tzinfo=UTC))
    j.assistant("before midnight", usage=usage(10, 1, 0.01))  # 18:14 UTC, 23:44 local
    j.tick(30 * 60)
    j.assistant("after midnight", usage=usage(20, 2, 0.02))  # 18:44 UTC, 00:14 local
    index_all(conn, locations)
    days = by_key(activity.usage(conn, UsageRequest.create("day")))
    assert {day: row["input_tokens"] for day, row in days.items()} == {"2026-03-15": 10, "2026-03-16": 20}


def test_since_and_until_keep_the_messages_of_those_local_days(conn, world):
    data = activity.usage(conn, UsageRequest.create("day", since="2026-03-05", until="2026-03-09"))
    assert list(by_key(data)) == ["2026-03-09"]
    assert data["total"]["messages"] == 2


def test_an_agent_capped_at_its_project_gets_its_project_s_usage_and_never_global(conn, world):
    args = {"by": "model", "cwd": world["prjct"]}
    data = activity.usage(conn, UsageRequest.from_args(args, max_scope="project"))
    assert "gpt-5" not in by_key(data) and "claude-opus-4-5" in by_key(data)
    with pytest.raises(UserError, match="wider than allowed"):
        activity.usage(conn, UsageRequest.from_args({**args, "scope": "global"}, max_scope="project"))


def test_an_unknown_grouping_is_refused_with_an_example():
    with pytest.raises(UserError, match=r"unknown grouping 'year'.*e\.g\. by=model"):
        UsageRequest.create("year")


def test_sessions_come_newest_first_with_their_figures(conn, world):
    page = activity.sessions(conn, SessionsRequest.create())["sessions"]
    assert [s["session_id"] for s in page] == [world[k].session_id for k in ("other", "sonnet", "opus")]
    sonnet = page[1]
    contract = {"session_id", "name", "cwd", "started", "last_activity", "duration_s", "entries"}
    contract |= {"input_tokens", "output_tokens", "cost", "models", "tool_calls", "errors"}
    assert set(sonnet) >= contract
    assert (sonnet["tool_calls"], sonnet["errors"], sonnet["models"]) == (1, 1, ["claude-sonnet-4-5"])
    assert (sonnet["input_tokens"], sonnet["output_tokens"], sonnet["cost"]) == (300, 30, 0.25)
    assert page[2]["errors"] == 0


def test_sessions_sorted_by_tokens_count_input_and_output_as_the_list_shows_them(conn, locations, new_journal):
    cached = new_journal("Apps/cache")  # few tokens of its own, many read from the cache
    cached.assistant("e", usage=usage(100, 10, 0.01, 90_000, 5_000))
    busy = new_journal("Apps/busy")
    busy.assistant("f", usage=usage(4_000, 400, 0.02))
    index_all(conn, locations)
    page = activity.sessions(conn, SessionsRequest.create(sort="tokens", scope="global"))["sessions"]
    shown = [(s["session_id"], s["input_tokens"] + s["output_tokens"]) for s in page]
    assert shown[0] == (busy.session_id, 4_400)
    assert shown == sorted(shown, key=lambda s: -s[1])  # not by the cache tokens the list does not show
    assert [s for s, _ in shown].index(cached.session_id) > [s for s, _ in shown].index(busy.session_id)


def test_sessions_filtered_by_model_keep_only_those_that_used_it(conn, world):
    page = activity.sessions(conn, SessionsRequest.create(model="gpt-5"))["sessions"]
    assert [s["session_id"] for s in page] == [world["other"].session_id]


def test_sessions_are_paged_and_say_where_the_next_page_starts(conn, world):
    first = activity.sessions(conn, SessionsRequest.create(limit=2))
    last = activity.sessions(conn, SessionsRequest.create(limit=2, offset=first["next_offset"]))
    assert (len(first["sessions"]), first["next_offset"]) == (2, 2)
    assert ([s["session_id"] for s in last["sessions"]], last["next_offset"]) == ([world["opus"].session_id], None)


def test_sessions_since_a_day_leave_out_sessions_that_ended_before(conn, world):
    page = activity.sessions(conn, SessionsRequest.create(since="2026-03-05"))["sessions"]
    assert world["opus"].session_id not in {s["session_id"] for s in page}
    assert len(page) == 2


def test_a_negative_offset_is_refused_with_an_example():
    with pytest.raises(UserError, match=r"offset must be .* \(e\.g\. offset=20\)"):
        SessionsRequest.create(offset=-1)


def test_pimem_usage_json_is_the_library_s_reply(conn, world, run):
    result = run("usage", "--by", "model", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == activity.usage(conn, UsageRequest.create("model"))


def test_pimem_usage_prints_a_table_with_a_total_row(world, run):
    result = run("usage", "--by", "model", "--cwd", world["prjct"])
    lines = result.output.splitlines()
    assert lines[0].split()[:2] == ["model", "input"]
    assert lines[-1].split()[0] == "total" and "4.25" in lines[-1]
    assert "gpt-5" not in result.output


def test_pimem_sessions_json_pages_with_next_offset(world, run):
    data = json.loads(run("sessions", "--limit", "1", "--json").output)
    assert [s["session_id"] for s in data["sessions"]] == [world["other"].session_id]
    assert data["next_offset"] == 1


def test_pimem_sessions_prints_one_line_a_session(world, run):
    result = run("sessions", "--cwd", world["prjct"])
    assert result.exit_code == 0
    assert world["sonnet"].session_id[:8] in result.output and world["other"].session_id[:8] not in result.output


@pytest.mark.parametrize(
    ("args", "example"),
    [
        (("usage", "--by", "year"), "--by model"),
        (("usage", "--since", "last week"), "2026-03-15"),
        (("sessions", "--offset", "-3"), "--offset 20"),
        (("sessions", "--limit", "0"), "--limit 20"),
        (("usage", "--scope", "everything"), "--scope project"),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_status_1(world, run, args, example):
    result = run(*args)
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1 and example in result.output
    assert "Traceback" not in result.output


def test_a_relative_cwd_is_taken_from_the_current_folder(world, run, home, monkeypatch):
    (home / "Apps/prjct").mkdir(parents=True)
    monkeypatch.chdir(home / "Apps")
    data = json.loads(run("usage", "--by", "model", "--cwd", "prjct", "--json").output)
    assert data["root"] == world["prjct"] and os.path.isabs(data["root"])
