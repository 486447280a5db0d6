"""No line stops indexing, and whatever goes wrong in one journal stays with that journal.

Hostile lines (nested deeper than the parsers read, numbers no 64-bit column holds) are
counted malformed and skipped on every path: `pimem index` (a parsing thread or parsing
processes), `pimem search` catching up, and the API's `journal=`. A journal that fails for
another reason is recorded (`pimem status`, the overview page), retried later, and never
stops the other journals, the pass or `pimem index --watch`.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.passes import Watch, threaded_or_bulk, use_by_default
from support.pijournal import Journal
from support.plugin_world import bearer, make_datasette

from datasette_pi_memory.server.serve import make_token
from pimem_index import journal, store
from pimem_index.cli import cli
from pimem_index.index import forgotten, indexer, parsing
from pimem_index.index.indexer import index_all, index_journal
from pimem_index.locations import resolve

DEEP = 1025  # one level deeper than orjson reads; the standard library raises RecursionError


def deep_value(depth: int = DEEP) -> str:
    return '{"a":' * depth + '"x"' + "}" * depth


def hostile_journal(new_journal, project: str = "Apps/hostile"):
    """A journal with good lines around hostile ones, as Node's JSON.stringify writes them."""
    j = new_journal(project)
    first = j.user("before the hostile lines: walrus")
    j.append_bytes(
        b'{"type":"message","id":"deep0001","parentId":null,"message":{"role":"assistant","content":'
        b'[{"type":"toolCall","id":"t1","name":"bash","arguments":{"plan":' + deep_value().encode() + b"}}]}}\n"
    )
    j.append_bytes(b'{"type":"custom","id":"deep0002","customType":"ext","data":' + deep_value().encode() + b"}\n")
    j.append_bytes(b'{"type":"compaction","id":"nan00001","summary":"not json","tokensBefore":NaN}\n')
    last = j.user("after the hostile lines: capybara")
    return j, [first, last]


def good_journals(new_journal, n: int = 3) -> list:
    journals = []
    for k in range(n):
        j = new_journal(f"Apps/good{k}")
        j.user(f"good journal {k} mentions the heron")
        j.assistant(f"answer {k}", tool_calls=[("read", {"path": f"src/{k}.py"})])
        journals.append(j)
    return journals


def entry_ids(conn, path=None) -> set[str]:
    sql = "SELECT e.id FROM entries e JOIN files f ON f.id = e.file_id"
    rows = conn.execute(sql + " WHERE f.path = ?", (str(path),)) if path else conn.execute(sql)
    return {r[0] for r in rows}


def run(*args):
    """`pimem ARGS` in this process (the fixtures' agent folder), its exceptions kept in the result."""
    return CliRunner().invoke(cli, list(args))


def watched_passes(monkeypatch, bulk: bool, **sizes) -> Watch:
    """Every pass of the test, `pimem index` included, parses in two parsing processes (bulk) or
    in a thread, and is watched."""
    watch = Watch()
    use_by_default(monkeypatch, threaded_or_bulk(bulk, after_batch=watch, **sizes))
    return watch


# ---- hostile lines are malformed, on every path ---------------------------------------------


@pytest.mark.parametrize("bulk", [False, True], ids=["thread", "processes"])
def test_pimem_index_skips_a_1025_deep_line_and_indexes_everything_else(
    locations, conn, new_journal, monkeypatch, bulk
):
    hostile, kept = hostile_journal(new_journal)
    others = good_journals(new_journal)
    watch = watched_passes(monkeypatch, bulk)
    result = run("index", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["malformed_lines"] == 3 and report["failed"] == 0
    assert set(watch.parsed_apart) == {bulk}  # the pass took the path under test
    assert entry_ids(conn, hostile.path) == set(kept)
    assert not entry_ids(conn, hostile.path) & {"deep0001", "deep0002", "nan00001"}
    for j in others:
        assert len(entry_ids(conn, j.path)) == 2
    again = run("index", "--json")  # a rerun is clean: nothing left, nothing fails
    assert again.exit_code == 0, again.output
    assert json.loads(again.output) | {"seconds": 0} == {
        "files": 0,
        "entries_added": 0,
        "bytes_read": 0,
        "seconds": 0,
        "malformed_lines": 0,
        "reindexed": 0,
        "removed": 0,
        "failed": 0,
        "outside": 0,
    }


def test_a_header_whose_version_no_64_bit_column_holds_is_malformed_and_the_entries_are_kept(
    locations, conn, new_journal
):
    j = new_journal(header=False)
    j.header(version=2**63)
    kept = j.user("the entries of a journal with a hostile header stay")
    result = run("index", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["malformed_lines"] == 1
    assert entry_ids(conn, j.path) == {kept}
    assert conn.execute("SELECT version, session_id FROM files").fetchone() == (None, None)


def test_pimem_search_catches_up_over_a_hostile_journal(locations, conn, new_journal, home):
    hostile, _kept = hostile_journal(new_journal)
    result = run("search", "capybara", "--scope", "global", "--json")
    assert result.exit_code == 0, result.output
    reply = json.loads(result.output)
    hits = reply["results"]
    assert [reply["sessions"][h["session_id"]]["journal"] for h in hits] == [str(hostile.path)]
    assert "walrus" not in json.dumps(hits) and "huge tokens" not in json.dumps(hits)


@pytest.fixture
def token(locations) -> str:
    return make_token(locations)


@pytest.mark.asyncio
async def test_the_api_indexes_a_hostile_journal_named_by_journal_and_answers_json(locations, conn, new_journal, token):
    hostile, kept = hostile_journal(new_journal)
    ds = make_datasette(locations)
    await ds.invoke_startup()
    try:
        res = await ds.client.get(
            f"/-/pi-memory/api/search?q=capybara&scope=session&journal={hostile.path}", **bearer(token)
        )
        assert res.status_code == 200, res.text
        assert res.headers["content-type"].startswith("application/json")
        assert [h["id"] for h in res.json()["results"]] == [kept[1]]
        assert "deep0001" not in res.text
    finally:
        await ds.invoke_shutdown()
    assert conn.execute("SELECT malformed FROM files WHERE path = ?", (str(hostile.path),)).fetchone() == (3,)


# ---- a journal that fails is contained, recorded and retried --------------------------------


def unencodable_journal(sessions_dir, lines: int = 1) -> bytes:
    """A journal whose file name is not UTF-8 (bytes 0xff): SQLite's TEXT cannot hold its path."""
    folder = os.fsencode(sessions_dir / "--bytes--")
    os.makedirs(folder, exist_ok=True)
    path = folder + b"/2026-03-15T22-40-18-123Z_\xff.jsonl"
    with open(path, "wb") as fh:
        fh.write(json.dumps({"type": "session", "version": 3, "id": "bytes-session", "cwd": "/tmp/b"}).encode() + b"\n")
        for k in range(lines):
            fh.write(
                json.dumps(
                    {"type": "message", "id": f"byte{k:04d}", "message": {"role": "user", "content": f"osprey {k}"}}
                ).encode()
                + b"\n"
            )
    return path


@pytest.mark.parametrize("bulk", [False, True], ids=["thread", "processes"])
def test_a_journal_that_fails_is_recorded_and_the_others_of_its_group_are_indexed(
    locations, conn, sessions_dir, new_journal, monkeypatch, bulk
):
    others = good_journals(new_journal)  # small journals: written in one transaction with it
    unencodable_journal(sessions_dir)
    watch = watched_passes(monkeypatch, bulk)
    result = run("index")
    assert result.exit_code == 0, result.output
    assert "Could not index 1 journal;" in result.output
    assert set(watch.parsed_apart) == {bulk}
    for j in others:
        assert len(entry_ids(conn, j.path)) == 2
    assert "byte0001" not in entry_ids(conn)
    status = run("status", "--json")
    failed = json.loads(status.output)["journals_failed"]
    assert [f["path"] for f in failed] == [str(sessions_dir / "--bytes--" / "2026-03-15T22-40-18-123Z_\\xff.jsonl")]
    assert failed[0]["reason"].startswith("UnicodeEncodeError: ") and failed[0]["at"]
    text = run("status").output
    assert "Failed:    " in text and "\\xff.jsonl: UnicodeEncodeError" in text
    assert set(json.loads(status.output)) >= {
        "sessions",
        "entries",
        "summaries",
        "indexed_bytes",
        "journals_total",
        "journals_pending",
        "db_bytes",
        "schema_version",
    }


@pytest.mark.parametrize("bulk", [False, True], ids=["thread", "processes"])
def test_a_large_journal_that_fails_is_skipped_batch_by_batch_and_the_next_journals_follow(
    locations, conn, sessions_dir, new_journal, bulk
):
    others = good_journals(new_journal)
    for j in others:  # older: parsed after the failing journal, behind its remaining batches
        j.set_mtime(datetime.now(UTC) - timedelta(days=1))
    path = unencodable_journal(sessions_dir, lines=20)
    watch = Watch()  # batches of 4 entries: the failing journal of 20 comes in several
    report = index_all(conn, locations, settings=threaded_or_bulk(bulk, batch_entries=4, after_batch=watch))
    assert set(watch.parsed_apart) == {bulk}
    assert report.failed == 1 and report.entries_added == 2 * len(others)
    assert all(len(entry_ids(conn, j.path)) == 2 for j in others)
    assert [f["path"] for f in indexer.failed_journals(conn)] == [indexer.shown_path(os.fsdecode(path))]


@pytest.mark.parametrize("bulk", [False, True], ids=["thread", "processes"])
def test_a_journal_whose_reading_fails_in_a_parsing_process_comes_back_as_a_failure(locations, conn, new_journal, bulk):
    others = good_journals(new_journal, n=4)
    edited = others.pop(1)
    index_all(conn, locations)
    with store.db.write(conn):  # another tool edited the index: this journal's tail offset is text
        conn.execute("UPDATE files SET tail_offset = 'edited' WHERE path = ?", (str(edited.path),))
    edited.user("appended after the edit")
    fresh = [j.user("a fresh line") for j in others]
    watch = Watch()
    report = index_all(conn, locations, settings=threaded_or_bulk(bulk, after_batch=watch))
    assert set(watch.parsed_apart) == {bulk}
    assert report.failed == 1 and report.entries_added == 3
    assert set(fresh) <= entry_ids(conn)
    assert [f["path"] for f in indexer.failed_journals(conn)] == [str(edited.path)]


def test_index_journal_records_a_failure_instead_of_raising_it(locations, conn, new_journal):
    j = new_journal()
    j.user("first")
    index_journal(conn, j.path)
    with store.db.write(conn):
        conn.execute("UPDATE files SET tail_offset = 'edited'")
    j.user("second")
    report = index_journal(conn, j.path)
    assert report.failed == 1 and report.entries_added == 0
    assert [f["path"] for f in indexer.failed_journals(conn)] == [str(j.path)]


def test_a_failed_journal_is_held_back_until_its_retry_time_and_cleared_once_it_indexes(locations, conn, new_journal):
    j = new_journal()
    j.user("first")
    index_all(conn, locations)
    offset = conn.execute("SELECT tail_offset FROM files").fetchone()[0]
    with store.db.write(conn):
        conn.execute("UPDATE files SET tail_offset = 'edited'")
    second = j.user("second")
    assert index_all(conn, locations).failed == 1
    retry_at = conn.execute("SELECT failures, retry_at FROM journal_errors").fetchone()
    assert retry_at[0] == 1 and retry_at[1] >= time.time() + indexer.RETRY_FIRST_SECONDS - 5
    assert index_all(conn, locations).failed == 0  # held back: not parsed again every pass
    assert conn.execute("SELECT failures FROM journal_errors").fetchone() == (1,)
    with store.db.write(conn):  # its retry time came: tried again, failed again, waits twice as long
        conn.execute("UPDATE journal_errors SET retry_at = 0")
    assert index_all(conn, locations).failed == 1
    failures, retry_at = conn.execute("SELECT failures, retry_at FROM journal_errors").fetchone()
    assert failures == 2 and retry_at >= time.time() + 2 * indexer.RETRY_FIRST_SECONDS - 5
    with store.db.write(conn):  # the index is repaired; naming the journal tries it at once
        conn.execute("UPDATE files SET tail_offset = ?", (offset,))
    assert run("index", str(j.path)).exit_code == 0
    assert second in entry_ids(conn)
    assert indexer.failed_journals(conn) == []


def test_a_failed_journal_that_is_gone_is_forgotten(locations, conn, sessions_dir):
    path = unencodable_journal(sessions_dir)
    assert index_all(conn, locations).failed == 1
    assert len(indexer.failed_journals(conn)) == 1
    os.remove(path)
    index_all(conn, locations)
    assert indexer.failed_journals(conn) == []


@pytest.mark.asyncio
async def test_the_overview_page_lists_failed_journals_for_root_only(locations, conn, sessions_dir, new_journal, token):
    new_journal().user("a good one")
    unencodable_journal(sessions_dir)
    index_all(conn, locations)
    ds = make_datasette(locations)
    await ds.invoke_startup()
    try:
        page = await ds.client.get("/-/pi-memory", actor={"id": "root"})
        assert page.status_code == 200
        assert "1 journal could not be indexed" in page.text and "\\xff.jsonl" in page.text
        status = await ds.client.get("/-/pi-memory/api/status", **bearer(token))
        assert status.status_code == 200 and status.json()["journals_failed"] == []  # names another project
        root_status = await ds.client.get("/-/pi-memory/api/status", actor={"id": "root"})
        assert len(root_status.json()["journals_failed"]) == 1
    finally:
        await ds.invoke_shutdown()


@pytest.mark.asyncio
async def test_the_api_lists_links_outside_the_journal_folders_for_root_only(
    locations, conn, sessions_dir, new_journal, tmp_path, token
):
    new_journal().user("a good one")
    outside = tmp_path / "elsewhere" / "x.jsonl"
    outside.parent.mkdir()
    outside.write_text("{}\n")
    (sessions_dir / "link.jsonl").symlink_to(outside)
    index_all(conn, locations)
    ds = make_datasette(locations)
    await ds.invoke_startup()
    try:
        status = await ds.client.get("/-/pi-memory/api/status", **bearer(token))
        assert status.status_code == 200 and status.json()["journals_outside"] == []  # a path names a project
        root_status = await ds.client.get("/-/pi-memory/api/status", actor={"id": "root"})
        assert root_status.json()["journals_outside"] == [str(sessions_dir / "link.jsonl")]
    finally:
        await ds.invoke_shutdown()


# ---- the watch loop goes on ---------------------------------------------------------------


def test_watch_logs_a_pass_that_stopped_in_one_line_and_goes_on(tmp_path, locations, conn, new_journal):
    j = new_journal()
    j.user("already indexed")
    index_all(conn, locations)
    fresh = j.user("written while another writer held the index")
    script = (
        "import sys\n"
        "from pimem_index import db\n"
        "db.BUSY_TIMEOUT_MS = 50  # a pass gives up on a locked index at once instead of after 30 s\n"
        "from pimem_index.cli import cli\n"
        f"cli(['index', '--watch', '--interval', '0.1', '--db', {str(locations.db_path)!r}])\n"
    )
    holder = store.open_index(locations.db_path)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the index: every pass stops
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    try:
        line = proc.stderr.readline()  # waits for the first failed pass (the test's timeout bounds it)
        assert line.startswith("pimem index --watch: a pass stopped (OperationalError: database is locked)")
        holder.execute("ROLLBACK")  # the other writer is done: the next pass goes on
        deadline = time.monotonic() + 30
        while fresh not in entry_ids(conn) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert fresh in entry_ids(conn)
        assert proc.poll() is None  # still watching: never exited for the supervisor to restart
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=30)
        holder.close()
    assert "Traceback" not in err


# ---- property: no line, however mutated, escapes as an exception or costs the journal ---------

# Lines as Pi writes them (docs/session-format.md's examples, version 1 and 2 forms included).
PI_LINES = [
    b'{"type":"session","version":3,"id":"0b6e4c1a-5d2f-4e8b-9c3d-1f2e3d4c5b6a","timestamp":"2026-03-15T22:40:18.123Z",'
    b'"cwd":"/home/u/proj","parentSession":"/home/u/.pi/agent/sessions/--home-u-proj--/old.jsonl"}',
    b'{"type":"session","id":"v1-session","timestamp":"2025-06-01T10:00:00.000Z","cwd":"/p","provider":"anthropic",'
    b'"modelId":"m","thinkingLevel":"off"}',
    b'{"type":"message","id":"c3d4e5f6","parentId":"b2c3d4e5","timestamp":"2026-03-15T22:40:25.500Z","message":'
    b'{"role":"user","content":[{"type":"text","text":"fix the login bug"},{"type":"image","data":"iVBORw0KGgo=",'
    b'"mimeType":"image/png"}],"timestamp":1773614425499}}',
    b'{"type":"message","id":"d4e5f6a7","parentId":"c3d4e5f6","timestamp":"2026-03-15T22:40:31.020Z","message":'
    b'{"role":"assistant","content":[{"type":"thinking","thinking":"Look at auth","thinkingSignature":"EqQB..."},'
    b'{"type":"text","text":"Reading the file."},{"type":"toolCall","id":"toolu_01AB","name":"read","arguments":'
    b'{"path":"src/auth.ts","limit":40,"opts":{"a":[1,2.5,null,true]}}}],"api":"anthropic-messages","provider":'
    b'"anthropic","model":"claude-sonnet-4-5","usage":{"input":2775,"output":141,"cacheRead":0,"cacheWrite":0,'
    b'"totalTokens":2916,"cost":{"input":0.0083,"output":0.0021,"cacheRead":0,"cacheWrite":0,"total":0.0104}},'
    b'"stopReason":"toolUse","timestamp":1773614425600}}',
    b'{"type":"message","id":"e5f6a7b8","parentId":"d4e5f6a7","timestamp":"2026-03-15T22:40:31.060Z","message":'
    b'{"role":"toolResult","toolCallId":"toolu_01AB","toolName":"read","content":[{"type":"text","text":'
    b'"export function login..."}],"isError":false,"timestamp":1773614431058}}',
    b'{"type":"message","id":"f6a7b8c9","parentId":"e5f6a7b8","timestamp":"2026-03-15T22:41:00.000Z","message":'
    b'{"role":"bashExecution","command":"ls","output":"src\\n","exitCode":0,"cancelled":false,"truncated":false,'
    b'"timestamp":1773614460000}}',
    b'{"type":"compaction","id":"0a1b2c3d","parentId":"f6a7b8c9","timestamp":"2026-03-15T23:10:00.000Z","summary":'
    b'"## Goal\\n...","firstKeptEntryId":"e5f6a7b8","tokensBefore":175004,"details":{"readFiles":["src/auth.ts"],'
    b'"modifiedFiles":[]},"fromHook":false}',
    b'{"type":"branch_summary","id":"1b2c3d4e","parentId":"c3d4e5f6","timestamp":"2026-03-15T23:15:00.000Z",'
    b'"fromId":"c3d4e5f6","summary":"The user explored a different conversation branch."}',
    b'{"type":"custom","id":"2c3d4e5f","parentId":"1b2c3d4e","timestamp":"2026-03-15T23:16:00.000Z",'
    b'"customType":"ext-state","data":{"cursor":3,"seen":["a","b"]}}',
    b'{"type":"message","timestamp":"2025-06-01T10:00:00.000Z","message":{"role":"hookMessage","customType":"note",'
    b'"content":"deploy freeze","display":true,"timestamp":1748772000000}}',
]


@functools.lru_cache(maxsize=1)
def seed_lines() -> tuple[bytes, ...]:
    """Every line type tests/pijournal.py writes (versions 1 and 3), then Pi's own example lines."""
    lines: list[bytes] = []
    with tempfile.TemporaryDirectory() as folder:
        for version in (1, 3):
            j = Journal(Path(folder), "/home/u/proj", version=version)
            u = j.user("find the walrus config", images=1)
            j.user("plain string content", as_string=True)
            j.model_change()
            j.thinking_level_change()
            j.assistant(
                "Looking.",
                thinking="grep first",
                signature="SIG" * 10,
                tool_calls=[("bash", {"command": "grep -r walrus .", "timeout": 30})],
            )
            j.assistant(redacted_thinking="OPAQUE", text="Done.")
            j.tool_result("bash", "./conf/walrus.yaml: enabled", images=1)
            j.bash("git status", "On branch main")
            j.hook_message("team-note", "deploy freeze friday")
            j.custom_message("reminder", [{"type": "text", "text": "tests must pass"}])
            j.custom_state("ext-state", {"cursor": 3})
            j.label(u, "start")
            j.session_info("Config hunt")
            j.compaction("## Goal\nFound the walrus config")
            j.branch_summary("Tried zebras")
            lines += j.path.read_bytes().splitlines()
    return tuple(lines + PI_LINES)


HOLE = "\x00hole\x00"
RAW_VALUES = [
    b'{"a":' * 1025 + b"1" + b"}" * 1025,
    b"[" * 1024 + b"]" * 1024,
    b"[" * 1100 + b"]" * 1100,
    b'{"a":' * 300 + b'"x"' + b"}" * 300,
    b"1e400",
    b"-1e400",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1" + b"0" * 400,
    b"1" + b"0" * 5000,
    str(2**63).encode(),
    str(2**64).encode(),
    str(-(2**63) - 1).encode(),
    b"-0",
    b"1e-400",
    b'"\\ud83d"',
    b'"cut \\udc00 here"',
    b'"\\ud83d\\ude00"',
    b'"nul \\u0000 byte"',
    b'"bad \xff utf8"',
]
SWAPS = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    "",
    "text",
    "L1",
    [],
    {},
    [1, "x"],
    {"type": "text", "text": 3},
    {"a": None},
    [{"type": "toolCall", "name": ["x"], "arguments": 5}],
]
WHOLE_LINES = [b"[]", b"[1,2]", b'"a string"', b"null", b"3", b"true", b"{}", b"{", b"}", b"", b" ", b"\xff"]


def json_paths(value, prefix=(), depth=0):
    """Every (container, key) path in a parsed line, to replace the value found there."""
    if depth > 8:
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield prefix + (key,)
        yield from json_paths(child, prefix + (key,), depth + 1)


def replaced(obj, path, new):
    if not path:
        return new
    copy = dict(obj) if isinstance(obj, dict) else list(obj)
    copy[path[0]] = replaced(obj[path[0]], path[1:], new)
    return copy


def swap_a_value(draw, line: bytes) -> bytes:
    """A field's value becomes another type, or a hostile raw value (deep, huge, non-finite...)."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return line
    paths = list(json_paths(obj))
    if not paths:
        return line
    path = draw(st.sampled_from(paths))
    if draw(st.booleans()):
        return json.dumps(replaced(obj, path, draw(st.sampled_from(SWAPS))), separators=(",", ":")).encode()
    text = json.dumps(replaced(obj, path, HOLE), separators=(",", ":")).encode()
    return text.replace(json.dumps(HOLE).encode(), draw(st.sampled_from(RAW_VALUES)))


def truncate(draw, line: bytes) -> bytes:
    return line[: draw(st.integers(0, max(0, len(line) - 1)))]


def insert_bytes(draw, line: bytes) -> bytes:
    at = draw(st.integers(0, len(line)))
    junk = draw(
        st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80", b"\\ud83d", b"\x00", b'"', b"}", b"\\", b"]"])
    )
    return line[:at] + junk + line[at:]


def random_bytes(draw, line: bytes) -> bytes:
    at = draw(st.integers(0, len(line)))
    return line[:at] + draw(st.binary(max_size=8)).replace(b"\n", b" ") + line[at + draw(st.integers(0, 4)) :]


def whole_line(draw, line: bytes) -> bytes:
    return draw(st.sampled_from(WHOLE_LINES))


BYTE_MUTATIONS = [truncate, insert_bytes, random_bytes, whole_line]


@st.composite
def hostile_lines(draw) -> bytes:
    """A line Pi or tests/pijournal.py wrote with up to three values swapped, and sometimes
    (always, when none was) broken as bytes too."""
    seed = line = draw(st.sampled_from(seed_lines()))
    for _ in range(draw(st.integers(0, 3))):
        line = swap_a_value(draw, line)
    if line == seed or draw(st.integers(0, 3)) == 0:
        line = draw(st.sampled_from(BYTE_MUTATIONS))(draw, line)
    return line.replace(b"\n", b" ")


def check_item(item) -> None:
    """What parse_line returns holds only what the index stores: text and 64-bit integers."""
    assert item is None or isinstance(item, (journal.Header, journal.SessionName, journal.Entry))
    if isinstance(item, journal.Entry):
        assert isinstance(item.id, str) and item.id and item.kind in journal.KINDS
        for text in (item.id, item.parent_id, item.timestamp, item.role, item.tool, item.text):
            assert text is None or isinstance(text, str)
            text is None or text.encode("utf-8")
        assert item.tokens_before is None or journal.INT64_MIN <= item.tokens_before <= journal.INT64_MAX
    if isinstance(item, journal.Header):
        assert type(item.version) is int and journal.INT64_MIN <= item.version <= journal.INT64_MAX


@settings(max_examples=600, deadline=None)
@given(hostile_lines())
def test_parse_line_returns_an_item_or_raises_malformed_whatever_the_line(line):
    try:
        item = journal.parse_line(line, 2)
    except journal.Malformed:
        return
    check_item(item)


GOOD_FIRST = b'{"type":"message","id":"goodfrst","message":{"role":"user","content":"first good line"}}'
GOOD_LAST = b'{"type":"message","id":"goodlast","message":{"role":"user","content":"last good line"}}'


def write_journal(folder: Path, lines: list[bytes], name: str = "hostile.jsonl") -> Path:
    path = folder / "--p--" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    header = b'{"type":"session","version":3,"id":"prop-session","cwd":"/p"}'
    path.write_bytes(b"\n".join([header, GOOD_FIRST, *lines, GOOD_LAST]) + b"\n")
    return path


@settings(max_examples=100, deadline=None)
@given(st.lists(hostile_lines(), min_size=1, max_size=6))
def test_the_batch_reader_reads_every_good_line_whatever_the_others_hold(lines):
    with tempfile.TemporaryDirectory() as folder:
        path = write_journal(Path(folder), lines)
        with parsing.prepare(None, str(path), forgotten.Forgotten()) as work:
            batches = list(work.batches())
    assert [b.failure for b in batches] == [None] * len(batches)
    ids = [row[0] for b in batches for row in b.rows]
    assert ids[0] == "goodfrst" and ids[-1] == "goodlast"
    assert sum(b.lines for b in batches) == len(lines) + 3


def index_hostile(lines: list[bytes], how: str) -> Watch:
    """Index a hostile journal beside a good one (a pass, or index_journal); nothing escapes."""
    with tempfile.TemporaryDirectory() as folder:
        sessions = Path(folder) / "sessions"
        path = write_journal(sessions, lines)
        good = write_journal(sessions, [], name="good.jsonl")
        locations = resolve(str(Path(folder) / "index.sqlite"), [str(sessions)])
        conn = store.open_index(locations.db_path)
        try:
            watch = Watch()
            if how == "index_journal":
                reports = [index_journal(conn, path), index_journal(conn, good)]
            else:
                reports = [index_all(conn, locations, settings=threaded_or_bulk(how == "processes", after_batch=watch))]
            assert sum(r.failed for r in reports) == 0 and indexer.failed_journals(conn) == []
            assert {"goodfrst", "goodlast"} <= entry_ids(conn, path)
            assert entry_ids(conn, good) == {"goodfrst", "goodlast"}
            assert conn.execute("SELECT SUM(lines) FROM files").fetchone()[0] == len(lines) + 3 + 3
        finally:
            conn.close()
    return watch


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(hostile_lines(), min_size=1, max_size=6))
def test_a_pass_in_a_parsing_thread_indexes_every_good_line_whatever_the_others_hold(agent_dir, lines):
    index_hostile(lines, "thread")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(hostile_lines(), min_size=1, max_size=6))
def test_index_journal_indexes_every_good_line_whatever_the_others_hold(agent_dir, lines):
    index_hostile(lines, "index_journal")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(hostile_lines(), min_size=2, max_size=8))
def test_a_pass_in_parsing_processes_indexes_every_good_line_whatever_the_others_hold(agent_dir, lines):
    watch = index_hostile(lines, "processes")
    assert set(watch.parsed_apart) == {True}  # parsed in processes, not in a thread


def test_a_hand_edited_decisions_file_never_stops_a_pass_and_its_valid_decisions_hold(
    locations, conn, new_journal, agent_dir
):
    gone = new_journal("Apps/gone")
    gone.user("okapi that stays forgotten")
    kept = new_journal("Apps/kept")
    kept.user("okapi that stays searchable")
    decisions = agent_dir / "pi-memory" / "forgotten.jsonl"
    decisions.parent.mkdir(parents=True, exist_ok=True)
    decisions.write_text(
        "\n".join(
            [
                "[1]",
                '"forget"',
                "null",
                '{"action": "forget", "session_id": ["not", "an", "id"]}',
                '{"action": "forget", "session_id": "x", "entry_id": 7}',
                json.dumps({"action": "forget", "session_id": gone.session_id, "entry_id": None, "at": "2026-01-01"}),
            ]
        )
        + "\n"
    )
    result = CliRunner().invoke(cli, ["index", "--json"])
    assert result.exit_code == 0, result.output
    indexed = {row[0] for row in conn.execute("SELECT session_id FROM files")}
    assert kept.session_id in indexed
    assert gone.session_id not in indexed


# ---- a line of any size: memory stays bounded (issue 25 item 17) ----------------------------------


def test_a_line_above_the_cap_is_skipped_and_counted_without_being_held_whole(locations, conn, new_journal):
    j = new_journal("Apps/huge")
    before = j.user("before the huge line: narwhal")
    kept = j.tool_result("bash", "a large output, under the cap: " + "y" * 2_000_000)
    j.user("z" * (100 * 1024 * 1024))  # a 100 MB line: three times the cap
    after = j.user("after the huge line: axolotl")
    tracemalloc.start()
    try:
        report = index_all(conn, locations, settings=threaded_or_bulk(False))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.malformed == 1 and report.failed == 0
    assert entry_ids(conn, j.path) == {before, kept, after}
    assert peak < 3 * parsing.MAX_LINE_BYTES  # never the line whole
    assert parsing.MAX_LINE_BYTES == 32 * 1024 * 1024  # the cap docs/design.md states
