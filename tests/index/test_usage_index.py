"""The index's usage metadata: figures per entry, tool calls paired with their results, the sessions
view's totals, all equal to an independent sum over the journals (json.loads per line, here)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.passes import threaded_or_bulk
from support.pijournal import usage

from pimem_index import journal
from pimem_index.cli import cli
from pimem_index.index.indexer import index_all
from pimem_index.manage import forget
from pimem_index.session import review


def journal_sums(paths: list[Path], forgotten: frozenset[str] = frozenset()) -> dict[str, dict]:
    """Per session, straight from the journals: tokens, cost, models, messages, tool calls (with
    the outcome of the result answering each) and errors, leaving out the forgotten entry ids."""
    sums: dict[str, dict] = {}
    for path in paths:
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        s = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "cost": 0.0, "models": set()}
        s.update(messages=0, calls={}, errors=0)
        outcomes = {}
        for obj in lines[1:]:
            message = obj.get("message") or {}
            if obj.get("type") != "message" or obj.get("id") in forgotten:
                continue
            if message["role"] == "assistant":
                u = message["usage"]
                s["input"] += u["input"]
                s["output"] += u["output"]
                s["cache_read"] += u["cacheRead"]
                s["cache_write"] += u["cacheWrite"]
                s["cost"] += u["cost"]["total"]
                s["models"].add(message["model"])
                s["messages"] += 1
                for block in message["content"]:
                    if block["type"] == "toolCall":
                        s["calls"][block["id"]] = None
            elif message["role"] == "toolResult":
                outcomes[message["toolCallId"]] = int(message["isError"])
                s["errors"] += int(message["isError"])
            elif message["role"] == "bashExecution":
                s["errors"] += int(message["exitCode"] != 0)
        s["calls"] = {call: outcomes.get(call) for call in s["calls"]}
        sums[lines[0]["id"]] = s
    return sums


def index_sums(conn) -> dict[str, dict]:
    """The same figures as the index holds them: the sessions view, entries and tool_calls."""
    sums = {}
    for row in conn.execute(
        "SELECT session_id, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, models, "
        "messages, tool_calls, errors FROM sessions"
    ):
        sid, i, o, cr, cw, cost, models, messages, tool_calls, errors = row
        calls = dict(
            conn.execute(
                "SELECT c.call_id, c.is_error FROM tool_calls c JOIN entries e ON e.rowid = c.entry_rowid "
                "WHERE e.session_id = ?",
                (sid,),
            ).fetchall()
        )
        assert tool_calls == len(calls)
        sums[sid] = {"input": i, "output": o, "cache_read": cr, "cache_write": cw, "cost": cost}
        sums[sid].update(models=set((models or "").split(",")) - {""}, messages=messages or 0, calls=calls)
        sums[sid]["errors"] = errors
    return sums


def same(index: dict[str, dict], journals: dict[str, dict]) -> None:
    """The index's figures are the journals' (cost to the cent's thousandth)."""
    assert index.keys() == journals.keys()
    for sid, want in journals.items():
        got = index[sid]
        assert got["cost"] == pytest.approx(want["cost"], abs=1e-9)
        assert {k: v for k, v in got.items() if k != "cost"} == {k: v for k, v in want.items() if k != "cost"}


@pytest.fixture(params=[False, True], ids=["thread", "processes"])
def history(request, conn, locations, new_journal):
    """Two sessions over two models, with a failed tool call, a non-zero exit and an edit, indexed by
    a pass parsing in a thread or in parsing processes (whose batches travel pickled)."""
    a = new_journal("Apps/prjct")
    a.user("fix the login")
    a.assistant(
        "reading",
        tool_calls=[("read", {"path": "src/auth.ts"})],
        model="claude-opus-4-5",
        usage=usage(900, 80, 0.25, 4000, 300),
    )
    a.tool_result("read", "export function login", call_id=a.call_ids[0])
    a.assistant(
        "editing",
        tool_calls=[("edit", {"path": "src/auth.ts", "oldText": "a", "newText": "b"})],
        model="claude-opus-4-5",
        usage=usage(1000, 120, 0.5),
    )
    a.tool_result("edit", "oldText not found", is_error=True, call_id=a.call_ids[0])
    a.bash("npm test", "1 failing", exit_code=1)
    a.bash("ls", "src", exit_code=0)
    b = new_journal("Apps/other")
    b.user("summarise")
    b.assistant("done", model="gpt-5", provider="openai", usage=usage(50, 5, 0.001))
    index_all(conn, locations, settings=threaded_or_bulk(request.param))
    return a, b


def test_the_index_totals_equal_an_independent_sum_over_the_journals(conn, locations, history):
    a, b = history
    assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 2
    same(index_sums(conn), journal_sums([a.path, b.path]))


def test_an_appended_line_adds_to_the_totals_and_pairs_with_a_call_of_an_earlier_pass(conn, locations, history):
    a, b = history
    a.assistant("again", tool_calls=[("write", {"path": "NOTES.md", "content": "x"})], usage=usage(10, 2, 0.01))
    index_all(conn, locations)
    call = a.call_ids[0]
    waiting = conn.execute("SELECT result_rowid, path FROM tool_calls WHERE call_id = ?", (call,)).fetchone()
    assert waiting == (None, "NOTES.md")
    a.tool_result("write", "permission denied", is_error=True, call_id=call)
    index_all(conn, locations)
    paired = conn.execute(
        "SELECT e.kind, c.is_error FROM tool_calls c JOIN entries e ON e.rowid = c.result_rowid WHERE c.call_id = ?",
        (call,),
    ).fetchone()
    assert paired == ("tool_result", 1)
    same(index_sums(conn), journal_sums([a.path, b.path]))


def test_a_rewritten_journal_is_recomputed_not_added_to(conn, locations, history, new_journal):
    a, b = history
    lines = b.path.read_text().splitlines(keepends=True)
    rewritten = json.loads(lines[-1])
    rewritten["message"]["usage"] = usage(7, 3, 0.002)
    b.path.write_text("".join(lines[:-1]) + json.dumps(rewritten) + "\n")
    index_all(conn, locations)
    index = index_sums(conn)
    assert index[b.session_id]["input"] == 7  # not 50 + 7: the old rows went with the rewrite
    same(index, journal_sums([a.path, b.path]))


def test_a_forgotten_entry_s_figures_and_tool_calls_do_not_count(conn, locations, history):
    a, b = history
    lines = [json.loads(line) for line in a.path.read_text().splitlines()]
    opus_with_edit = lines[4]["id"]
    failed_result = lines[5]["id"]
    forget.forget_entry(conn, locations, opus_with_edit, a.session_id)
    forget.forget_entry(conn, locations, failed_result, a.session_id)
    gone = frozenset({opus_with_edit, failed_result})
    assert conn.execute("SELECT count(*) FROM tool_calls WHERE tool = 'edit'").fetchone()[0] == 0
    assert index_sums(conn)[a.session_id]["errors"] == 1  # the bash exit only
    same(index_sums(conn), journal_sums([a.path, b.path], forgotten=gone))


def test_a_forgotten_result_leaves_its_call_waiting_without_an_outcome(conn, locations, history):
    a, _b = history
    lines = [json.loads(line) for line in a.path.read_text().splitlines()]
    forget.forget_entry(conn, locations, lines[3]["id"], a.session_id)  # the read's result
    rows = dict(conn.execute("SELECT tool, result_rowid IS NULL AND is_error IS NULL FROM tool_calls").fetchall())
    assert rows == {"read": 1, "edit": 0}


def test_assistant_figures_and_tool_outcomes_are_columns_of_their_entries(conn, history):
    a, _b = history
    rows = conn.execute(
        "SELECT kind, model, provider, stop_reason, input_tokens, cache_read_tokens, cost, is_error, exit_code "
        "FROM entries WHERE session_id = ? ORDER BY offset",
        (a.session_id,),
    ).fetchall()
    assert rows[1] == ("assistant", "claude-opus-4-5", "anthropic", "toolUse", 900, 4000, 0.25, None, None)
    assert rows[4][0:1] + rows[4][7:] == ("tool_result", 1, None)
    assert [r[8] for r in rows if r[0] == "bash"] == [1, 0]
    assert {r[1:7] for r in rows if r[0] in ("user", "tool_result", "bash")} == {(None,) * 6}


def test_tool_calls_keep_their_tool_and_file_argument_not_other_arguments(conn, history):
    rows = conn.execute("SELECT tool, path, call_id LIKE 'toolu_%' FROM tool_calls ORDER BY rowid").fetchall()
    assert rows == [("read", "src/auth.ts", 1), ("edit", "src/auth.ts", 1)]
    assert conn.execute("SELECT count(*) FROM tool_calls WHERE path LIKE '%oldText%'").fetchone()[0] == 0


def test_journal_strings_beside_the_figures_are_stored_redacted(conn, locations, new_journal):
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    j = new_journal("Apps/prjct")
    j.assistant("x", tool_calls=[("read", {"path": f"/tmp/{secret}.txt"})], model=f"m-{secret}")
    index_all(conn, locations)
    stored = conn.execute(
        "SELECT e.model, c.path FROM entries e JOIN tool_calls c ON c.entry_rowid = e.rowid"
    ).fetchone()
    assert secret not in "".join(stored)
    assert stored[1].startswith("/tmp/")


def test_a_duration_runs_from_the_first_to_the_last_timestamp(conn, history):
    a, _b = history
    row = conn.execute("SELECT started, last_timestamp, duration_s FROM sessions WHERE session_id = ?", (a.session_id,))
    started, last, duration = row.fetchone()
    seconds = (datetime.fromisoformat(last) - datetime.fromisoformat(started)).total_seconds()
    assert duration == round(seconds) and duration > 0


def assistant_line(**message) -> bytes:
    """An assistant journal line whose message has these keys beside its text."""
    body = {"role": "assistant", "content": [{"type": "text", "text": "the heron answer"}], **message}
    return json.dumps({"type": "message", "id": "a1", "message": body}).encode()


def test_a_figure_of_the_wrong_type_or_out_of_range_is_dropped_and_the_entry_keeps_its_text():
    figures = {"input": "12", "output": 2**70, "cacheRead": -5, "cacheWrite": True, "cost": {"total": "0.5"}}
    entry = journal.parse_line(assistant_line(model=42, provider=["x"], stopReason=None, usage=figures), 2)
    assert entry.text == "the heron answer"
    assert entry.usage == journal.Usage()


def test_readable_figures_beside_unreadable_ones_are_kept():
    figures = {"input": 12, "output": "many", "cost": {"total": 3}}
    entry = journal.parse_line(assistant_line(model="gpt-5", usage=figures), 2)
    assert (entry.usage.model, entry.usage.input_tokens, entry.usage.cost) == ("gpt-5", 12, 3.0)
    assert entry.usage.output_tokens is None


def test_a_figure_no_real_session_reaches_is_dropped_and_real_large_figures_are_kept():
    absurd = {"input": 2**62, "output": journal.MAX_TOKENS + 1, "cacheRead": 2**63 - 1, "cost": {"total": 1.7e308}}
    entry = journal.parse_line(assistant_line(model="gpt-5", usage=absurd), 2)
    assert entry.text == "the heron answer" and entry.usage.model == "gpt-5"
    assert (entry.usage.input_tokens, entry.usage.output_tokens, entry.usage.cache_read_tokens) == (None,) * 3
    assert entry.usage.cost is None
    large = {"input": 2_000_000, "output": 128_000, "cacheRead": 10_000_000, "cost": {"total": 950.5}}
    kept = journal.parse_line(assistant_line(usage=large), 2).usage
    assert (kept.input_tokens, kept.output_tokens, kept.cache_read_tokens, kept.cost) == (
        2_000_000,
        128_000,
        10**7,
        950.5,
    )


def test_sums_of_figures_at_the_column_limit_never_overflow(conn, locations, history):
    a, b = history
    conn.execute(  # an integer SQLite's sum() overflows on, and the largest cost indexing keeps
        "UPDATE entries SET input_tokens = 9223372036854775807, cost = ? WHERE kind = 'assistant'",
        (journal.MAX_DOLLARS,),
    )
    conn.commit()
    row = conn.execute("SELECT input_tokens, cost FROM sessions WHERE session_id = ?", (a.session_id,)).fetchone()
    assert row[0] > 0 and row[1] < float("inf")
    runner = CliRunner()
    for args in (["usage", "--json"], ["sessions", "--json"]):
        result = runner.invoke(cli, [*args, "--no-index"])
        assert result.exit_code == 0, result.output
        assert "Infinity" not in result.output and "overflow" not in result.output


def test_a_value_that_is_not_json_still_makes_the_line_malformed():
    line = assistant_line(usage={"input": 1, "cost": {"total": 0.5}}).replace(b"0.5", b"NaN")
    with pytest.raises(journal.Malformed):
        journal.parse_line(line, 2)
    with pytest.raises(journal.Malformed):
        journal.parse_line(line.replace(b"NaN", b"Infinity"), 2)


def test_a_json_number_no_float_holds_drops_its_figure_and_keeps_the_text():
    line = assistant_line(usage={"input": 7, "cost": {"total": 0.5}}).replace(b"0.5", b"1e400")
    entry = journal.parse_line(line, 2)
    assert entry.text == "the heron answer" and entry.usage.input_tokens == 7
    assert entry.usage.cost is None
    huge = json.dumps({"type": "compaction", "id": "c1", "summary": "the heron summary", "tokensBefore": 2**63})
    compaction = journal.parse_line(huge.encode(), 3)
    assert (compaction.text, compaction.tokens_before) == ("the heron summary", None)
    kept = journal.parse_line(huge.replace(str(2**63), "120020").encode(), 3)
    assert kept.tokens_before == 120020


def test_text_beside_figures_no_column_holds_stays_searchable(conn, locations, new_journal):
    j = new_journal("Apps/prjct")
    j.user("an ordinary question")
    j.write_line(
        {
            "type": "compaction",
            "id": "c0ffee01",
            "parentId": j.last_id,
            "timestamp": j.tick(),
            "summary": "the quetzal summary survives",
            "firstKeptEntryId": j.last_id,
            "tokensBefore": 2**63,
        }
    )
    answer = j.assistant("the quetzal answer survives", usage=usage(10, 2, 0.125))
    text = j.path.read_bytes().replace(b'"total":0.125', b'"total":1e400')
    j.path.write_bytes(text)
    result = CliRunner().invoke(cli, ["index", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["malformed_lines"] == 0
    found = json.loads(CliRunner().invoke(cli, ["search", "quetzal", "--json", "--cwd", j.cwd]).output)
    assert {hit["id"] for hit in found["results"]} == {"c0ffee01", answer}
    figures = conn.execute("SELECT id, tokens_before, cost, input_tokens FROM entries WHERE kind != 'user'").fetchall()
    assert sorted(figures) == sorted([("c0ffee01", None, None, None), (answer, None, None, 10)])


def message_line(**message) -> bytes:
    return json.dumps({"type": "message", "id": "t1", "message": message}).encode()


def test_tool_outcomes_are_read_as_0_or_1_and_exit_codes_as_whole_numbers():
    ok = journal.parse_line(message_line(role="toolResult", toolCallId="c1", content="x"), 2).usage
    odd = journal.parse_line(message_line(role="toolResult", toolCallId=7, isError="yes", content="x"), 2).usage
    assert (ok.is_error, ok.call_id) == (0, "c1")
    assert (odd.is_error, odd.call_id) == (None, None)
    codes = [-1, 3.5, 2**40, None]
    read = [journal.parse_line(message_line(role="bashExecution", command="ls", exitCode=c), 2).usage for c in codes]
    assert [u.exit_code for u in read] == [-1, None, None, None]


def test_a_tool_call_s_file_argument_is_a_non_empty_path_or_file_path_string():
    calls = [
        {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.py"}},
        {"type": "toolCall", "id": "c2", "name": "Edit", "arguments": {"file_path": "b.py", "path": ""}},
        {"type": "toolCall", "id": "c3", "name": "bash", "arguments": {"command": "cat c.py"}},
        {"type": "toolCall", "id": 4, "name": "write", "arguments": "d.py"},
    ]
    entry = journal.parse_line(message_line(role="assistant", content=calls), 2)
    assert [(c.call_id, c.tool, c.path) for c in entry.usage.calls] == [
        ("c1", "read", "a.py"),
        ("c2", "Edit", "b.py"),
        ("c3", "bash", None),
        (None, "write", None),
    ]


def test_an_exit_code_of_minus_one_is_stored_apart_from_a_missing_one(conn, locations, new_journal):
    j = new_journal("Apps/prjct")
    j.bash("kill", "", exit_code=-1)
    j.message({"role": "bashExecution", "command": "sleep", "output": "", "cancelled": True})
    index_all(conn, locations)
    assert [r[0] for r in conn.execute("SELECT exit_code FROM entries ORDER BY offset")] == [-1, None]


def test_pimem_usage_and_pimem_sessions_report_the_independent_sum(conn, locations, history):
    a, b = history
    a.tool_result("read", "late result for nothing", is_error=True)  # appended after the pass: the CLI indexes it
    want = journal_sums([a.path, b.path])
    runner = CliRunner()
    usage_json = json.loads(runner.invoke(cli, ["usage", "--by", "session", "--json"]).output)
    sessions_json = json.loads(runner.invoke(cli, ["sessions", "--json"]).output)
    rows = {row["key"]: row for row in usage_json["rows"]}
    for sid, s in want.items():
        assert (rows[sid]["input_tokens"], rows[sid]["messages"]) == (s["input"], s["messages"])
        assert rows[sid]["cost"] == pytest.approx(s["cost"], abs=1e-6)
    assert usage_json["total"]["cache_read_tokens"] == sum(s["cache_read"] for s in want.values())
    by_session = {s["session_id"]: s for s in sessions_json["sessions"]}
    assert {sid: (s["errors"], s["tool_calls"]) for sid, s in by_session.items()} == {
        sid: (s["errors"], len(s["calls"])) for sid, s in want.items()
    }
    assert by_session[a.session_id]["errors"] == 3  # the failed edit, the exit 1 and the late failure


def test_the_agents_bash_results_carry_their_exit_code(tmp_path, monkeypatch):
    from support.real_pi_index import indexed_corpus

    world = indexed_corpus(tmp_path, monkeypatch)

    def bash_results(role: str) -> list[tuple[int, int | None]]:
        return world.conn.execute(
            "SELECT is_error, exit_code FROM entries WHERE session_id = ? AND kind = 'tool_result' AND tool = 'bash'",
            (world.session(role),),
        ).fetchall()

    assert (1, 3) in bash_results("with_failures")  # "...\n\nCommand exited with code 3"
    assert bash_results("all_tools") and set(bash_results("all_tools")) == {(0, 0)}
    assert (1, None) in bash_results("aborted")  # "Command aborted": failed, but no exit code to report
    assert (1, 0) not in bash_results("aborted") + bash_results("with_failures")
    others = world.conn.execute(
        "SELECT count(*) FROM entries WHERE kind = 'tool_result' AND tool <> 'bash' AND exit_code IS NOT NULL"
    ).fetchone()[0]
    assert others == 0  # read, edit, grep... results have no exit code
    world.conn.close()


def test_usage_figures_come_from_the_entries_table_and_no_index_copies_them(conn, locations, history):
    a, b = history
    same(index_sums(conn), journal_sums([a.path, b.path]))
    copies = [
        name
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'entries'")
        if {"input_tokens", "cost"} & {col for (_n, _c, col) in conn.execute(f"PRAGMA index_info('{name}')")}
    ]
    assert copies == []


def test_a_session_s_edits_are_looked_up_through_its_own_entries_never_a_scan_of_every_call(conn, locations, history):
    a, b = history
    for journal_ in (a, b):
        journal_.assistant("writing", tool_calls=[("write", {"path": "NOTES.md", "content": "x"})])
        journal_.tool_result("write", "ok", call_id=journal_.call_ids[0])
    index_all(conn, locations)
    sid = conn.execute("SELECT session_id FROM files WHERE path = ?", (str(a.path),)).fetchone()[0]
    plan = " ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + review.CHANGES_SQL, (sid,)))
    assert "INDEX files_session_id (session_id=?)" in plan and "INDEX tool_calls_entry (entry_rowid=?)" in plan
    assert "SCAN c" not in plan and "SCAN e" not in plan and "SCAN tool_calls" not in plan
    found = {row[0] for row in conn.execute(review.CHANGES_SQL, (sid,))}
    own = {r for (r,) in conn.execute("SELECT c.entry_rowid FROM tool_calls c WHERE c.session_id = ?", (sid,))}
    assert found and found <= own
    other = conn.execute("SELECT session_id FROM files WHERE path = ?", (str(b.path),)).fetchone()[0]
    assert not found & {r for (r,) in conn.execute("SELECT entry_rowid FROM tool_calls WHERE session_id = ?", (other,))}
