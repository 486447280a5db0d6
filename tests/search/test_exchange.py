"""Calls with their results, on the real-Pi corpus: a call's hit says how it ended, a result's hit
which call it answers, and a read gives the entries around an entry on its branch."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.real_pi_index import indexed_corpus

from pimem_index.cli import cli
from pimem_index.errors import UserError
from pimem_index.index.indexer import index_all
from pimem_index.search import exchange, query


@pytest.fixture
def world(tmp_path, monkeypatch):
    world = indexed_corpus(tmp_path, monkeypatch)
    yield world
    world.conn.close()


def search(world, q, *kinds):
    return query.search(world.conn, world.locations, q, scope="global", kinds=list(kinds))["results"]


def test_a_tool_calls_hit_carries_its_outcome_and_the_first_line_of_its_result(world):
    [failed] = search(world, "nowhere", "assistant")  # edit (old text absent), bash exit 3, read of a missing file
    assert failed["outcome"] == "error"
    assert failed["result"].startswith("Could not find the exact text in src/app.py")
    [fine] = search(world, "wc", "assistant")  # read-only tools that all worked
    assert fine["outcome"] == "ok" and fine["result"] == "def add(a, b):"
    assert "call" not in failed and "call" not in fine


def test_a_failed_bash_call_says_its_exit_code(conn, locations, new_journal, home):
    j = new_journal("Apps/prjct")
    failing = j.assistant(tool_calls=[("bash", {"command": "make lint-zebra"})])
    j.tool_result("bash", "lint: 2 problems\n\nCommand exited with code 3", is_error=True, call_id=j.call_ids[0])
    passing = j.assistant(tool_calls=[("bash", {"command": "make test-zebra"})])
    j.tool_result("bash", "all green", call_id=j.call_ids[0])
    index_all(conn, locations)
    hits = {h["id"]: h for h in query.search(conn, locations, "zebra", cwd=str(home / "Apps/prjct"))["results"]}
    assert hits[failing]["outcome"] == "exit 3" and hits[failing]["result"] == "lint: 2 problems"
    assert hits[passing]["outcome"] == "ok" and hits[passing]["outcome"] != "exit 3"


def test_a_results_hit_carries_its_call(world):
    [missing] = search(world, "ENOENT", "tool_result")
    assert missing["call"] == "read: missing.txt"
    [bash] = search(world, "checking", "tool_result")
    assert bash["call"] == "bash: echo checking; ls no-such-dir; exit 3"
    assert "outcome" not in bash and "result" not in bash
    for hit in search(world, "fail", "user"):
        assert not {"call", "outcome", "result"} & hit.keys()


def test_a_results_hit_carries_its_call_even_when_the_call_was_indexed_long_before(conn, locations, new_journal, home):
    j = new_journal("Apps/prjct")
    j.assistant(tool_calls=[("bash", {"command": "make far-zebra"})])
    far_call = j.call_ids[0]
    index_all(conn, locations)  # the call is indexed; the session goes on while others are written
    other = new_journal("Apps/other")
    for n in range(120):
        other.user(f"note {n}")
    index_all(conn, locations)
    far = j.tool_result("bash", "zebra built", call_id=far_call)
    j.assistant(tool_calls=[("bash", {"command": "make near-zebra"})])
    near = j.tool_result("bash", "zebra tested", call_id=j.call_ids[0])
    index_all(conn, locations)
    reply = query.search(conn, locations, "zebra", cwd=str(home / "Apps/prjct"), kinds=["tool_result"])
    hits = {h["id"]: h for h in reply["results"]}
    assert hits[far]["call"] == "bash: make far-zebra"
    assert hits[near]["call"] == "bash: make near-zebra"  # the near result is not given another call


def test_a_user_bash_run_carries_its_exit_code(world):
    hits = search(world, "", "bash")
    outcomes = {hit["outcome"] for hit in hits}
    assert outcomes == {"ok", "exit 2"}


def test_read_around_gives_the_entries_before_and_after_on_its_branch(world):
    [call] = search(world, "nowhere", "assistant")
    read = query.read(world.conn, world.locations, call["id"], scope="global", around=3, session_id=call["session_id"])
    around = read["around"]
    assert [a["kind"] for a in around] == ["user", "tool_result", "tool_result", "tool_result"]
    assert around[0]["text"] == "Try a few things that will fail."
    assert [a["call"] for a in around[1:]] == [
        "edit: src/app.py",
        "bash: echo checking; ls no-such-dir; exit 3",
        "read: missing.txt",
    ]
    assert call["id"] not in [a["id"] for a in around]
    assert all(a["session_id"] == call["session_id"] for a in around)
    plain = query.read(world.conn, world.locations, call["id"], scope="global", session_id=call["session_id"])
    assert "around" not in plain


def test_read_around_shows_a_call_without_its_argument_names(world):
    [result] = search(world, "checking", "tool_result")
    read = query.read(world.conn, world.locations, result["id"], scope="global", around=2)
    call, edited, missing = read["around"][:3]  # parallel calls' results follow one another
    assert call["kind"] == "assistant" and "echo checking; ls no-such-dir; exit 3" in call["text"]
    assert "command:" not in call["text"] and "path:" not in call["text"]
    assert edited["call"] == "edit: src/app.py" and missing["call"] == "read: missing.txt"


@pytest.mark.parametrize("around", ["21", "-1", "two"])
def test_around_out_of_range_is_a_one_line_error(world, around):
    [call] = search(world, "nowhere", "assistant")
    with pytest.raises(UserError) as e:
        query.read(world.conn, world.locations, call["id"], scope="global", around=around)
    assert "around must be a whole number from 0 to 20" in str(e.value)


def test_the_cli_reads_an_exchange_with_around(world):
    runner = CliRunner()

    def run(*args):
        return runner.invoke(cli, list(args), catch_exceptions=False)

    [call] = search(world, "nowhere", "assistant")
    out = run("read", call["id"], "--scope", "global", "--around", "3", "--session", call["session_id"]).output
    assert "outcome: error" in out
    assert out.index("Try a few things that will fail.") < out.index("def nowhere():") < out.index("exit 3")
    assert "call: read: missing.txt" in out
    data = json.loads(run("read", call["id"], "--scope", "global", "--around", "1", "--json").output)
    assert [a["kind"] for a in data["around"]] == ["user", "tool_result"]
    bad = run("read", call["id"], "--scope", "global", "--around", "50")
    assert bad.exit_code == 1 and "--around 3" in bad.output and "Traceback" not in bad.output


def test_the_cli_search_shows_how_a_call_ended_and_which_call_a_result_answers(world):
    out = CliRunner().invoke(cli, ["search", "nowhere", "--scope", "global"], catch_exceptions=False).output
    assert "outcome: error — Could not find the exact text in src/app.py" in out
    results = CliRunner().invoke(cli, ["search", "ENOENT", "--scope", "global"], catch_exceptions=False).output
    assert "call: read: missing.txt" in results and "outcome:" not in results


def _around_ids(conn, locations, entry_id: str, n: int) -> list[tuple[str, str]]:
    read = query.read(conn, locations, entry_id, scope="global", around=n)
    return [(a["side"], a["id"]) for a in read["around"]]


def test_around_an_entry_whose_branch_starts_far_back_in_the_journal_walks_that_branch(conn, locations, new_journal):
    j = new_journal()
    asked = j.user("where is the heron config")
    answered = j.assistant("in heron.toml")
    setting = j.model_change()  # the branch hangs from this line, which is not an entry
    main_line = []
    for turn in range(60):  # far more entries than read's window around an entry holds
        main_line += [j.user(f"turn {turn}"), j.assistant(f"reply {turn}")]
    j.branch_from(setting)
    retried = j.user("and the heron logs?")
    reply = j.assistant("in /var/log/heron")
    index_all(conn, locations)
    shown = _around_ids(conn, locations, retried, 2)
    assert shown == [("before", asked), ("before", answered), ("after", reply)]
    assert not {i for _side, i in shown} & set(main_line)


def test_around_follows_the_conversation_written_first_past_a_setting_line(conn, locations, new_journal):
    j = new_journal()
    j.user("rename the heron module")
    answer = j.assistant("renamed")
    j.model_change()  # the conversation goes on under this line
    went_on = j.user("now the tests")
    j.assistant("done")
    j.branch_from(answer)  # a later retry straight from the answer
    retry = j.user("undo that")
    index_all(conn, locations)
    shown = _around_ids(conn, locations, answer, 1)
    assert ("after", went_on) in shown
    assert ("after", retry) not in shown


def test_a_results_call_is_found_however_many_assistant_turns_came_between(conn, locations, new_journal, home):
    j = new_journal()
    j.assistant(tool_calls=[("bash", {"command": "make slow-heron-build"})])
    call_id = j.call_ids[0]
    for turn in range(25):  # more than the assistant entries a result's call is first looked for in
        j.assistant(f"still waiting {turn}")
    j.tool_result("bash", "heron built after a long wait", call_id=call_id)
    j.assistant(tool_calls=[("bash", {"command": "make quick-heron-check"})])
    j.tool_result("bash", "heron checked quickly", call_id=j.call_ids[0])
    index_all(conn, locations)
    hits = {
        h["excerpt"]: h
        for h in query.search(conn, locations, "heron", cwd=str(home / "Apps/prjct"), kinds=["tool_result"])["results"]
    }
    [slow] = [h for e, h in hits.items() if "long wait" in e]
    [quick] = [h for e, h in hits.items() if "quickly" in e]
    assert slow["call"] == "bash: make slow-heron-build"
    assert quick["call"] == "bash: make quick-heron-check" and quick["call"] != slow["call"]


@pytest.mark.parametrize("sql", ["ASSISTANTS_BEFORE", "ENTRIES_BEFORE", "ENTRIES_FROM", "FILE_ENTRIES"])
def test_a_journals_entries_are_read_in_written_order_through_entries_file_without_a_sort(world, sql):
    """A result's call and the entries around an entry are looked up per request: the index must give a
    journal's entries in order (rowid: the order they are written), not sort all of the journal's rows."""
    statement = getattr(exchange, sql)
    params = [1] * statement.count("?")
    plan = " | ".join(row[-1] for row in world.conn.execute(f"EXPLAIN QUERY PLAN {statement}", params))
    assert "USING COVERING INDEX entries_file" in plan or "USING INDEX entries_file" in plan
    assert "TEMP B-TREE" not in plan and "SCAN entries" not in plan
