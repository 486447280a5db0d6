"""Every string a journal holds is redacted before it is stored or shown (issue 27, class 7).

A session written line by line as Pi writes it carries a distinct secret (a GitHub token, built at
test time) in every string field of every line type: the header, model and thinking level changes,
labels, session names, extension state, custom messages, compactions and branch summaries with
their file lists, user, assistant (model, provider, stop reason, error message, tool call names and
arguments, thinking), tool result (tool name, details) and bash lines. It is indexed; then the
index file's bytes, its terms, every page, every API action and every CLI command (JSON and text)
are searched for each secret. None may be found, and the fields must still be there, masked.

Ids (entry ids, parent ids, call ids, the session id) and the cwd are identifiers the index keys
on; they are covered by their own test below.
"""

from __future__ import annotations

import json
import random
import string
from urllib.parse import urlencode

import pytest
import pytest_asyncio
from support.indexed import vocab
from support.pijournal import Journal, usage
from support.plugin_world import ROOT, make_datasette, running

from pimem_index.index import indexer

RNG = random.Random(2707)
ALNUM = string.ascii_letters + string.digits
GH = "gh" + "p_"
WORD = "wombat"  # in every entry's text, so a search lists them all

# Each field's secret stands after a tag naming the field: "<tag>:ghp_<body>" shows as "<tag>:ghp_[REDACTED]".
FIELDS = (
    "header_parent_session",
    "header_provider",
    "header_model_id",
    "header_thinking_level",
    "model_change_provider",
    "model_change_model_id",
    "thinking_level",
    "label",
    "session_name",
    "custom_type",
    "custom_data",
    "custom_message_type",
    "custom_message_content",
    "custom_message_details",
    "user_text",
    "image_mime_type",
    "assistant_model",
    "assistant_provider",
    "assistant_api",
    "assistant_response_id",
    "assistant_stop_reason",
    "assistant_error_message",
    "assistant_error_ending",
    "assistant_text",
    "thinking",
    "thinking_signature",
    "tool_name",
    "tool_path",
    "tool_argument",
    "result_tool_name",
    "result_text",
    "result_details",
    "bash_command",
    "bash_output",
    "bash_full_output_path",
    "hook_custom_type",
    "hook_content",
    "compaction_summary",
    "compaction_read_file",
    "compaction_modified_file",
    "branch_summary",
    "branch_read_file",
    "branch_modified_file",
)


TABLES = ("files", "entries", "tool_calls", "sessions", "journal_errors", "meta")
CANNED_QUERIES = (
    "sessions_per_project_per_week",
    "largest_tool_outputs",
    "compactions",
    "tool_usage",
    "activity_per_day",
    "cost_per_project_per_week",
    "cost_per_model_per_day",
    "most_expensive_sessions",
    "failing_tools_by_rate",
    "files_most_edited",
)


def planted() -> dict[str, str]:
    """A distinct secret per field: its tag, then a GitHub token of random characters."""
    return {field: f"{field.replace('_', '')}:{GH}{''.join(RNG.choice(ALNUM) for _ in range(36))}" for field in FIELDS}


def masked(value: str) -> str:
    return value.split(GH)[0] + GH + "[REDACTED]"


def body(value: str) -> str:
    return value.split(GH)[1]


def write_planted_session(new_journal, home, s: dict[str, str]) -> Journal:
    """One session with a secret in every string field of every line type Pi writes."""
    parent = f"{home}/.pi/agent/sessions/--gone--/{s['header_parent_session']}.jsonl"
    j = new_journal("Apps/prjct", header=False)
    j.header(
        parent_session=parent,
        provider=s["header_provider"],
        modelId=s["header_model_id"],
        thinkingLevel=s["header_thinking_level"],
    )
    j.entry({"type": "model_change", "provider": s["model_change_provider"], "modelId": s["model_change_model_id"]})
    j.entry({"type": "thinking_level_change", "thinkingLevel": s["thinking_level"]})
    j.session_info(f"{WORD} work {s['session_name']}")
    user = j.message(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"{WORD} question {s['user_text']}"},
                {"type": "image", "data": "iVBORw0KGgo" + "QUFB" * 20, "mimeType": s["image_mime_type"]},
            ],
        }
    )
    j.label(user, s["label"])
    j.entry({"type": "custom", "customType": s["custom_type"], "data": {"note": s["custom_data"]}})
    j.entry(
        {
            "type": "custom_message",
            "customType": s["custom_message_type"],
            "content": f"{WORD} extension says {s['custom_message_content']}",
            "display": True,
            "details": {"note": s["custom_message_details"]},
        }
    )
    call_id = "toolu_01planted"
    j.message(
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": f"{WORD} {s['thinking']}",
                    "thinkingSignature": s["thinking_signature"],
                },
                {"type": "text", "text": f"{WORD} answer {s['assistant_text']}"},
                {
                    "type": "toolCall",
                    "id": call_id,
                    "name": s["tool_name"],
                    "arguments": {"path": f"src/{s['tool_path']}/main.py", "pattern": s["tool_argument"]},
                },
            ],
            "api": s["assistant_api"],
            "provider": s["assistant_provider"],
            "model": s["assistant_model"],
            "responseId": s["assistant_response_id"],
            "usage": usage(1200, 80, 0.25),
            "stopReason": s["assistant_stop_reason"],
            "errorMessage": s["assistant_error_message"],
        }
    )
    j.message(
        {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": s["result_tool_name"],
            "content": [{"type": "text", "text": f"{WORD} result {s['result_text']}"}],
            "details": {"diff": s["result_details"], "firstChangedLine": 1},
            "isError": True,
        }
    )
    j.message(
        {
            "role": "bashExecution",
            "command": f"echo {WORD} {s['bash_command']}",
            "output": f"{WORD} {s['bash_output']}",
            "exitCode": 2,
            "cancelled": False,
            "truncated": True,
            "fullOutputPath": f"/tmp/{s['bash_full_output_path']}.log",
        }
    )
    j.hook_message(s["hook_custom_type"], f"{WORD} hook {s['hook_content']}")
    j.message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": f"{WORD} failed turn"}],
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": usage(10, 0, 0.0),
            "stopReason": "error",
            "errorMessage": s["assistant_error_ending"],
        }
    )
    j.entry(
        {
            "type": "compaction",
            "summary": f"{WORD} summary {s['compaction_summary']}",
            "firstKeptEntryId": user,
            "tokensBefore": 5000,
            "details": {
                "readFiles": [f"src/{s['compaction_read_file']}.py"],
                "modifiedFiles": [f"src/{s['compaction_modified_file']}.py"],
            },
            "fromHook": False,
        }
    )
    j.entry(
        {
            "type": "branch_summary",
            "fromId": user,
            "summary": f"{WORD} branch {s['branch_summary']}",
            "details": {
                "readFiles": [f"src/{s['branch_read_file']}.py"],
                "modifiedFiles": [f"src/{s['branch_modified_file']}.py"],
            },
            "fromHook": False,
        }
    )
    return j


@pytest.fixture
def secrets(conn, locations, new_journal, home):
    s = planted()
    journal = write_planted_session(new_journal, home, s)
    (home / "Apps" / "prjct").mkdir(parents=True, exist_ok=True)
    indexer.index_all(conn, locations)
    return {"values": s, "journal": journal}


def entry_ids(conn) -> list[str]:
    return [i for (i,) in conn.execute("SELECT id FROM entries ORDER BY rowid")]


def index_bytes(conn, locations) -> bytes:
    """The index file's bytes and its write-ahead log's, after a checkpoint."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = locations.db_path.read_bytes()
    wal = locations.db_path.with_name(locations.db_path.name + "-wal")
    return data + (wal.read_bytes() if wal.exists() else b"")


def found(shown: dict[str, str], values: dict[str, str]) -> dict[str, list[str]]:
    """For each view, the fields whose secret it shows."""
    out = {}
    for view, text in shown.items():
        fields = [field for field, value in values.items() if body(value) in text or body(value).lower() in text]
        if fields:
            out[view] = fields
    return out


def shown_fields(shown: dict[str, str], values: dict[str, str]) -> set[str]:
    """The fields shown masked in some view."""
    everything = "\n".join(shown.values())
    return {field for field, value in values.items() if masked(value) in everything}


def test_no_secret_from_any_field_is_in_the_index_file_or_its_terms(conn, locations, secrets):
    values = secrets["values"]
    data = index_bytes(conn, locations)
    terms = vocab(conn)
    assert [f for f, v in values.items() if body(v).encode() in data] == []
    assert [f for f, v in values.items() if body(v).lower() in terms] == []
    stored = {
        "model": conn.execute("SELECT group_concat(model) FROM entries").fetchone()[0],
        "provider": conn.execute("SELECT group_concat(provider) FROM entries").fetchone()[0],
        "stop_reason": conn.execute("SELECT group_concat(stop_reason) FROM entries").fetchone()[0],
        "tool": conn.execute("SELECT group_concat(tool) FROM entries").fetchone()[0],
        "calls": conn.execute("SELECT group_concat(tool || ' ' || path) FROM tool_calls").fetchone()[0],
        "name": conn.execute("SELECT group_concat(name) FROM files").fetchone()[0],
        "parent": conn.execute("SELECT group_concat(parent_session) FROM files").fetchone()[0],
    }
    assert masked(values["assistant_model"]) in stored["model"]
    assert masked(values["assistant_provider"]) in stored["provider"]
    assert masked(values["assistant_stop_reason"]) in stored["stop_reason"]
    assert {masked(values[f]) for f in ("tool_name", "result_tool_name", "hook_custom_type")} <= set(
        stored["tool"].split(",")
    )
    assert masked(values["tool_path"]) in stored["calls"]
    assert masked(values["session_name"]) in stored["name"]
    assert masked(values["header_parent_session"]) in stored["parent"]
    assert {WORD, "question", "summary", "branch"} <= set(terms)


@pytest_asyncio.fixture
async def ds(locations, secrets):
    async with running(make_datasette(locations)) as datasette:
        yield datasette


async def fetch(ds, paths) -> dict[str, str]:
    out = {}
    for path in paths:
        res = await ds.client.get(path, actor=ROOT)
        assert res.status_code == 200, (path, res.text[:300])
        out[path] = res.text
    return out


@pytest.mark.asyncio
async def test_no_page_or_api_reply_shows_a_secret_from_any_field(ds, conn, secrets):
    values, journal = secrets["values"], secrets["journal"]
    sid, cwd = journal.session_id, journal.cwd
    ids = entry_ids(conn)
    scope = {"cwd": cwd, "scope": "global"}
    pages = [
        "/-/pi-memory",
        "/-/pi-memory/search?" + urlencode({"q": WORD, **scope}),
        "/-/pi-memory/search?" + urlencode(scope),
        "/-/pi-memory/summaries?" + urlencode(scope),
        "/-/pi-memory/sessions",
        f"/-/pi-memory/sessions/{sid}",
        *(f"/-/pi-memory/usage?by={by}" for by in ("day", "model", "project", "session")),
        *("/-/pi-memory/read?" + urlencode({"id": i, "session_id": sid, "cwd": cwd, "around": 3}) for i in ids),
    ]
    api = [
        "/-/pi-memory/api/search?" + urlencode({"q": WORD, "limit": 50, **scope}),
        "/-/pi-memory/api/search?" + urlencode({"limit": 50, **scope}),
        "/-/pi-memory/api/summaries?" + urlencode(scope),
        "/-/pi-memory/api/status",
        "/-/pi-memory/api/sessions",
        *(f"/-/pi-memory/api/usage?by={by}" for by in ("day", "week", "month", "model", "project", "session")),
        *("/-/pi-memory/api/read?" + urlencode({"id": i, "session_id": sid, "cwd": cwd, "around": 3}) for i in ids),
    ]
    tables = [f"/history/{t}.json?_shape=array" for t in (*TABLES, *CANNED_QUERIES)]
    shown = await fetch(ds, pages + api + tables)
    assert found(shown, values) == {}
    assert {
        "assistant_model",
        "assistant_provider",
        "assistant_stop_reason",
        "assistant_error_message",
        "session_name",
        "label",
        "thinking_level",
        "model_change_model_id",
        "tool_name",
        "tool_path",
        "result_tool_name",
        "hook_custom_type",
        "custom_message_type",
        "header_parent_session",
        "bash_command",
        "user_text",
        "assistant_error_ending",
    } <= shown_fields(shown, values)
    usage_api = json.loads(shown["/-/pi-memory/api/usage?by=model"])
    assert masked(values["assistant_model"]) in [row["key"] for row in usage_api["rows"]]
    sessions_api = json.loads(shown["/-/pi-memory/api/sessions"])["sessions"]
    assert masked(values["assistant_model"]) in sessions_api[0]["models"]


def test_no_cli_command_prints_a_secret_from_any_field(run, conn, secrets):
    values, journal = secrets["values"], secrets["journal"]
    sid, cwd = journal.session_id, journal.cwd
    ids = entry_ids(conn)
    commands = [
        ["index"],
        ["status"],
        ["search", WORD, "--cwd", cwd, "--limit", "50"],
        ["search", "--cwd", cwd, "--limit", "50"],
        ["summaries", "--cwd", cwd],
        ["sessions", "--scope", "global"],
        *(["usage", "--by", by] for by in ("day", "week", "month", "model", "project", "session")),
        *(["read", i, "--session", sid, "--around", "3"] for i in ids),
        ["forget", "--list"],
    ]
    shown = {}
    for args in commands:
        for form in ([], ["--json"]):
            result = run(*args, *form, cwd=cwd)
            assert result.exit_code == 0, (args, result.output)
            shown[" ".join([*args, *form])] = result.output
    assert found(shown, values) == {}
    assert {
        "assistant_model",
        "session_name",
        "tool_name",
        "result_tool_name",
        "hook_custom_type",
        "user_text",
        "bash_output",
    } <= shown_fields(shown, values)
    assert masked(values["assistant_model"]) in shown["usage --by model"]


def discord_token() -> tuple[str, str]:
    """(a Discord-shaped bot token that is a secret only beside the word discord, its masked part)."""
    first = "M" + "".join(RNG.choice(ALNUM) for _ in range(23))
    rest = "".join(RNG.choice(ALNUM) for _ in range(6)) + "." + "".join(RNG.choice(ALNUM) for _ in range(38))
    return f"{first}.{rest}", rest


@pytest.mark.asyncio
async def test_a_long_label_error_message_or_recorded_diff_is_redacted_whole_before_it_is_cut(
    conn, locations, new_journal
):
    """The session page shows the first characters of a label, an error message or the diff Pi recorded;
    the word that makes a token a secret may stand far beyond them."""
    label, label_secret = discord_token()
    error, error_secret = discord_token()
    diff, diff_secret = discord_token()
    j = new_journal("Apps/prjct")
    asked = j.user(f"{WORD} why does the bot fail")
    j.label(asked, f"bot {label} " + "and more words " * 300 + "for the discord bot")
    j.message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": f"{WORD} trying"}],
            "model": "claude-sonnet-4-5",
            "provider": "anthropic",
            "usage": usage(10, 1, 0.0),
            "stopReason": "error",
            "errorMessage": f"gateway refused {error}\n" + "retrying the connection\n" * 5000 + "discord said no",
        }
    )
    j.assistant("Editing.", tool_calls=[("edit", {"path": "bot.py", "edits": [{"oldText": "a", "newText": "b"}]})])
    lines = [f"+{n:>6} bot {diff} here" if n == 1 else f" {n:>6} plain line" for n in range(1, 25_000)]
    j.message(
        {
            "role": "toolResult",
            "toolCallId": j.call_ids[0],
            "toolName": "edit",
            "content": [{"type": "text", "text": "Successfully replaced 1 block(s) in bot.py."}],
            "details": {"diff": "\n".join(lines) + "\n+ 25000 # the discord bot", "firstChangedLine": 1},
            "isError": False,
        }
    )
    indexer.index_all(conn, locations)
    async with running(make_datasette(locations)) as ds:
        page = (await ds.client.get(f"/-/pi-memory/sessions/{j.session_id}", actor=ROOT)).text
    assert [s for s in (label_secret, error_secret, diff_secret) if s in page] == []
    tokens = {"label": label, "error": error, "diff": diff}
    shown = {name: token.split(".")[0] + ".[REDACTED]" for name, token in tokens.items()}
    assert [name for name, masked_token in shown.items() if masked_token not in page] == []


@pytest.mark.asyncio
async def test_ids_holding_a_secret_stand_in_as_their_digest_and_still_link(
    run, conn, locations, new_journal, home, sessions_dir
):
    """An id a secret rule would mask (the session's, an entry's and its child's parent id, a tool
    call's, a label's target) is stored and shown as `redacted-` and a digest, the same wherever it is
    read: the entry is found and read by it, its child links to it, its label shows, its call pairs."""
    ids = {k: f"{k}-{GH}{''.join(RNG.choice(ALNUM) for _ in range(36))}" for k in ("session", "entry", "call")}
    # the file's name is the filesystem's, not the journal's: here it does not repeat the session id
    j = new_journal("Apps/prjct", session_id=ids["session"], path=sessions_dir / "planted-ids.jsonl")
    j.user(f"{WORD} first")
    j.write_line(
        {
            "type": "message",
            "id": ids["entry"],
            "parentId": j.last_id,
            "timestamp": j.tick(),
            "message": {"role": "user", "content": f"{WORD} kingfisher planted"},
        }
    )
    j.last_id = ids["entry"]
    j.label(ids["entry"], "heronlabel")
    j.last_id = ids["entry"]
    j.assistant(f"{WORD} running", tool_calls=[("bash", {"command": "ls"}, ids["call"])])
    j.tool_result("bash", f"{WORD} listing", call_id=ids["call"])
    (home / "Apps" / "prjct").mkdir(parents=True, exist_ok=True)
    indexer.index_all(conn, locations)

    entry_id, parent_of_next = conn.execute(
        "SELECT e.id, (SELECT n.parent_id FROM entries n WHERE n.rowid > e.rowid ORDER BY n.rowid LIMIT 1) "
        "FROM entries e WHERE e.kind = 'user' ORDER BY e.rowid DESC LIMIT 1"
    ).fetchone()
    session_id = conn.execute("SELECT session_id FROM files").fetchone()[0]
    assert entry_id.startswith("redacted-") and session_id.startswith("redacted-")
    assert parent_of_next == entry_id, "the child links to the stand-in"
    assert conn.execute("SELECT count(*) FROM tool_calls WHERE result_rowid IS NOT NULL").fetchone()[0] == 1

    async with running(make_datasette(locations)) as ds:
        shown = await fetch(
            ds,
            [
                "/-/pi-memory",
                f"/-/pi-memory/sessions/{session_id}",
                "/-/pi-memory/api/search?" + urlencode({"q": WORD, "cwd": j.cwd, "limit": 50}),
                "/-/pi-memory/api/read?" + urlencode({"id": entry_id, "session_id": session_id, "cwd": j.cwd}),
                "/-/pi-memory/api/sessions",
                *(f"/history/{t}.json?_shape=array" for t in TABLES),
            ],
        )
    for args in (["search", "kingfisher", "--json"], ["read", entry_id, "--session", session_id, "--json"]):
        shown[" ".join(args)] = run(*args, "--cwd", j.cwd).output
    assert found(shown, ids) == {}
    assert [v for v in ids.values() if body(v).encode() in index_bytes(conn, locations)] == []
    assert [v for v in ids.values() if body(v).lower() in vocab(conn)] == []
    read = json.loads(shown[f"read {entry_id} --session {session_id} --json"])
    assert read["status"] == "ok" and "kingfisher planted" in read["text"]
    assert "heronlabel" in shown[f"/-/pi-memory/sessions/{session_id}"]
    assert entry_id in shown["search kingfisher --json"]
