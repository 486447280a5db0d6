"""The Pi format: which lines are entries, and what text each contributes to the index."""

from __future__ import annotations

import json

import pytest

from pimem_index import journal


def parse(obj: dict, lineno: int = 2):
    return journal.parse_line(json.dumps(obj).encode(), lineno)


def message(role: str, **fields) -> dict:
    return {
        "type": "message",
        "id": "c3d4e5f6",
        "parentId": "b2c3d4e5",
        "timestamp": "2026-03-15T22:40:25.500Z",
        "message": {"role": role, **fields},
    }


def test_header_gives_session_cwd_start_and_parent():
    item = parse(
        {
            "type": "session",
            "version": 3,
            "id": "sess-1",
            "timestamp": "2026-03-15T22:40:18.123Z",
            "cwd": "/home/u/proj",
            "parentSession": "/x/old.jsonl",
        },
        1,
    )
    assert isinstance(item, journal.Header)
    assert (item.session_id, item.cwd, item.timestamp, item.parent_session, item.version) == (
        "sess-1",
        "/home/u/proj",
        "2026-03-15T22:40:18.123Z",
        "/x/old.jsonl",
        3,
    )


def test_header_without_version_is_version_1_and_branched_from_is_the_parent():
    item = parse(
        {
            "type": "session",
            "id": "s",
            "timestamp": "2025-06-01T10:00:00.000Z",
            "cwd": "/p",
            "branchedFrom": "/x/a.jsonl",
            "provider": "anthropic",
            "modelId": "m",
        },
        1,
    )
    assert item.version == 1
    assert item.parent_session == "/x/a.jsonl"


def test_user_text_and_string_content():
    blocks = parse(message("user", content=[{"type": "text", "text": "fix the login bug"}]))
    plain = parse(message("user", content="fix the login bug"))
    assert blocks.kind == plain.kind == "user"
    assert blocks.text == plain.text == "fix the login bug"
    assert blocks.id == "c3d4e5f6" and blocks.parent_id == "b2c3d4e5"


def test_image_becomes_a_marker_and_never_base64():
    data = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB" * 50
    item = parse(
        message(
            "user", content=[{"type": "text", "text": "look"}, {"type": "image", "data": data, "mimeType": "image/png"}]
        )
    )
    assert item.text == "look\n[image]"
    assert data[:20] not in item.text


def test_assistant_text_thinking_and_tool_calls_but_no_signature():
    signature = "EqQBCkgIARABGAIiQK" * 60
    item = parse(
        message(
            "assistant",
            content=[
                {"type": "thinking", "thinking": "Look at auth first", "thinkingSignature": signature},
                {"type": "text", "text": "Reading the file."},
                {
                    "type": "toolCall",
                    "id": "toolu_01AB",
                    "name": "read",
                    "arguments": {"path": "src/auth.ts", "limit": 40},
                },
                {"type": "toolCall", "id": "toolu_01AC", "name": "bash", "arguments": {"command": "ls -la\nwc -l x"}},
            ],
            usage={"input": 2775, "totalTokens": 2916},
            stopReason="toolUse",
        )
    )
    assert item.kind == "assistant" and item.role == "assistant"
    assert "Look at auth first" in item.text
    assert "Reading the file." in item.text
    assert "read\npath: src/auth.ts\nlimit: 40" in item.text
    assert "command: ls -la\nwc -l x" in item.text
    assert item.tool == "read,bash"
    assert signature[:16] not in item.text
    assert "toolu_01AB" not in item.text
    assert "2775" not in item.text


def test_redacted_thinking_is_not_indexed():
    item = parse(
        message(
            "assistant",
            content=[
                {
                    "type": "thinking",
                    "thinking": "[Reasoning redacted]",
                    "thinkingSignature": "ENCRYPTEDPAYLOAD",
                    "redacted": True,
                },
                {"type": "text", "text": "Done."},
            ],
        )
    )
    assert item.text == "Done."
    assert "ENCRYPTEDPAYLOAD" not in item.text and "Reasoning" not in item.text


def test_tool_result_names_its_tool_and_marks_images():
    item = parse(
        message(
            "toolResult",
            toolCallId="toolu_01AB",
            toolName="read",
            isError=False,
            content=[
                {"type": "text", "text": "export function login"},
                {"type": "image", "data": "QUJD" * 100, "mimeType": "image/png"},
            ],
        )
    )
    assert (item.kind, item.role, item.tool) == ("tool_result", "toolResult", "read")
    assert item.text == "export function login\n[image]"


def test_bash_execution_is_command_and_output():
    item = parse(message("bashExecution", command="ls", output="src\n", exitCode=0, cancelled=False, truncated=False))
    assert item.kind == "bash"
    assert item.text == "$ ls\nsrc\n"


@pytest.mark.parametrize("role", ["custom", "hookMessage"])
def test_migrated_custom_and_version_2_hook_messages_are_custom(role):
    item = parse(message(role, customType="team-note", content="deploy freeze friday", display=True))
    assert item.kind == "custom"
    assert item.tool == "team-note"
    assert item.text == "deploy freeze friday"


def test_custom_message_line_is_custom_with_blocks():
    item = parse(
        {
            "type": "custom_message",
            "id": "a1b2c3d4",
            "parentId": None,
            "timestamp": "2026-03-15T22:41:00.000Z",
            "customType": "reminder",
            "content": [{"type": "text", "text": "check the CI"}],
            "display": True,
        }
    )
    assert (item.kind, item.tool, item.text) == ("custom", "reminder", "check the CI")
    assert item.parent_id is None


def test_compaction_keeps_summary_and_tokens_before():
    item = parse(
        {
            "type": "compaction",
            "id": "0a1b2c3d",
            "parentId": "f6a7b8c9",
            "timestamp": "2026-03-15T23:10:00.000Z",
            "summary": "## Goal\nfix login",
            "firstKeptEntryId": "e5f6a7b8",
            "tokensBefore": 175004,
        }
    )
    assert (item.kind, item.tokens_before, item.text) == ("compaction", 175004, "## Goal\nfix login")


def test_branch_summary_is_an_entry():
    item = parse(
        {
            "type": "branch_summary",
            "id": "1b2c3d4e",
            "parentId": "c3d4e5f6",
            "timestamp": "2026-03-15T23:15:00.000Z",
            "fromId": "c3d4e5f6",
            "summary": "explored redis",
        }
    )
    assert (item.kind, item.text) == ("branch_summary", "explored redis")


@pytest.mark.parametrize(
    "line",
    [
        {"type": "model_change", "id": "a", "provider": "openai", "modelId": "gpt-5"},
        {"type": "thinking_level_change", "id": "b", "thinkingLevel": "high"},
        {"type": "label", "id": "c", "targetId": "x", "label": "important"},
        {"type": "custom", "id": "d", "customType": "state", "data": {"secret": "x"}},
        {"type": "message", "id": "e", "message": {"role": "somethingNew", "content": "x"}},
        {"type": "unknown_future_type", "id": "f"},
    ],
)
def test_settings_labels_state_and_unknown_lines_are_not_entries(line):
    assert parse(line) is None


def test_session_info_gives_the_name():
    item = parse({"type": "session_info", "id": "a", "name": "Login refactor"})
    assert isinstance(item, journal.SessionName) and item.name == "Login refactor"


def test_version_1_line_without_id_gets_line_number_id():
    item = parse(
        {"type": "message", "timestamp": "2025-06-01T10:00:00.000Z", "message": {"role": "user", "content": "hello"}},
        lineno=7,
    )
    assert item.id == "L7"
    assert item.parent_id is None


def test_timestamp_falls_back_to_message_milliseconds():
    item = parse({"type": "message", "message": {"role": "user", "content": "x", "timestamp": 1773614425499}})
    assert item.timestamp == "2026-03-15T22:40:25.499Z"


@pytest.mark.parametrize("raw", [b"{not json", b"[1,2,3]", b'"a string"', b""])
def test_malformed_lines_raise_malformed(raw):
    with pytest.raises(journal.Malformed):
        journal.parse_line(raw, 3)


def test_invalid_utf8_is_replaced_not_lost():
    raw = b'{"type":"message","id":"abcd1234","message":{"role":"user","content":"caf\xe9 au lait"}}'
    item = journal.parse_line(raw, 2)
    assert item.id == "abcd1234"
    assert "au lait" in item.text


def test_fingerprint_differs_for_different_bytes():
    assert journal.fingerprint(b"abc") == journal.fingerprint(b"abc")
    assert journal.fingerprint(b"abc") != journal.fingerprint(b"abd")


def test_lone_surrogate_escape_from_a_cut_emoji_is_kept_and_replaced():
    raw = (
        b'{"type":"message","id":"abcd1234","message":{"role":"toolResult","toolName":"bash",'
        b'"content":[{"type":"text","text":"output cut mid emoji \\ud83d and more"}]}}'
    )
    item = journal.parse_line(raw, 2)
    assert item.kind == "tool_result"
    assert "and more" in item.text
    item.text.encode("utf-8")


def test_header_cwd_is_normalised_so_scopes_compare_folders():
    item = parse({"type": "session", "version": 3, "id": "s", "cwd": "/home/u/proj/./sub/"}, 1)
    assert item.cwd == "/home/u/proj/sub"


# ---- lines that cannot be read as entries (issue 14, item 1) ------------------------------------


def nested(depth: int, leaf="x") -> dict:
    """{"a": {"a": ... leaf}} with `depth` objects."""
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


DEEP = "__DEEP__"


def with_depth(line: dict, depth: int) -> bytes:
    """The line with DEEP replaced by `depth` nested objects, written as Node writes any depth."""
    deep = '{"a":' * depth + '"x"' + "}" * depth
    return json.dumps(line, separators=(",", ":")).replace(f'"{DEEP}"', deep).encode()


def tool_call_line(arguments) -> dict:
    return message(
        "assistant",
        content=[
            {"type": "text", "text": "calling"},
            {"type": "toolCall", "id": "t1", "name": "read", "arguments": arguments},
        ],
    )


DEEP_LINES = {
    "tool call arguments": (tool_call_line({"path": DEEP}), journal.Entry),
    "custom line": ({"type": "custom", "id": "d", "customType": "ext", "data": DEEP}, type(None)),
    "header": ({"type": "session", "version": 3, "id": "s", "cwd": "/p", "extra": DEEP}, journal.Header),
}


@pytest.mark.parametrize("line, kind", DEEP_LINES.values(), ids=DEEP_LINES.keys())
def test_a_line_nested_deeper_than_the_parsers_read_is_malformed(line, kind):
    with pytest.raises(journal.Malformed):
        journal.parse_line(with_depth(line, 1025), 2)
    assert isinstance(journal.parse_line(with_depth(line, 200), 2), kind)


def test_a_deep_line_with_a_lone_surrogate_is_malformed_not_a_recursion_error():
    line = tool_call_line({"path": DEEP})
    cut = with_depth(line, 1025).replace(b'"calling"', b'"cut \\ud83d"')
    with pytest.raises(journal.Malformed):
        journal.parse_line(cut, 2)
    kept = journal.parse_line(with_depth(line, 40).replace(b'"calling"', b'"cut \\ud83d"'), 2)
    assert kept.text.startswith("cut ")


def test_tool_call_arguments_deeper_than_orjson_writes_are_still_indexed():
    item = parse(tool_call_line({"plan": nested(300, "zebrafish")}))
    assert isinstance(item, journal.Entry)
    assert "zebrafish" in item.text and item.tool == "read"


@pytest.mark.parametrize(
    "line",
    [
        {"type": "session", "version": 2**63, "id": "s", "cwd": "/p"},
        {"type": "session", "version": 2**64, "id": "s", "cwd": "/p"},  # orjson reads it as a float
    ],
    ids=["version 2**63", "version 2**64"],
)
def test_an_integer_no_64_bit_column_holds_makes_the_line_malformed(line):
    with pytest.raises(journal.Malformed):
        parse(line)
    fits = {k: (2**63 - 1 if isinstance(v, int) and abs(v) >= 2**63 else v) for k, v in line.items()}
    assert parse(fits).version == 2**63 - 1


@pytest.mark.parametrize("tokens", [2**63, -(2**63) - 1, 2**41, -1, "175004", 1.5, True])
def test_a_compaction_s_unreadable_token_count_is_dropped_and_its_summary_kept(tokens):
    item = parse({"type": "compaction", "id": "c", "summary": "the summary", "tokensBefore": tokens})
    assert (item.text, item.tokens_before) == ("the summary", None)
    assert parse({"type": "compaction", "id": "c", "summary": "s", "tokensBefore": 175004}).tokens_before == 175004


@pytest.mark.parametrize("number", [b"1e400", b"-1e400"])
@pytest.mark.parametrize("lone_surrogate", [False, True], ids=["utf8", "lone surrogate"])
def test_a_number_no_float_holds_is_dropped_and_the_line_kept(number, lone_surrogate):
    text = b'"cut \\ud83d"' if lone_surrogate else b'"fine"'
    line = (
        b'{"type":"message","id":"abcd1234","message":{"role":"assistant","content":[{"type":"text","text":'
        + text
        + b'}],"usage":{"input":3,"cost":{"total":'
        + number
        + b"}}}}"
    )
    item = journal.parse_line(line, 2)
    assert (item.id, item.usage.input_tokens, item.usage.cost) == ("abcd1234", 3, None)
    assert journal.parse_line(line.replace(number, b"1e300"), 2).usage.cost is None  # above MAX_DOLLARS too
    assert journal.parse_line(line.replace(number, b"0.25"), 2).usage.cost == 0.25


@pytest.mark.parametrize("number", [b"NaN", b"Infinity", b"-Infinity"])
@pytest.mark.parametrize("lone_surrogate", [False, True], ids=["utf8", "lone surrogate"])
def test_a_constant_json_does_not_have_makes_the_line_malformed(number, lone_surrogate):
    text = b'"cut \\ud83d"' if lone_surrogate else b'"fine"'
    line = (
        b'{"type":"message","id":"abcd1234","message":{"role":"user","content":'
        + text
        + b',"usage":{"cost":'
        + number
        + b"}}}"
    )
    with pytest.raises(journal.Malformed):
        journal.parse_line(line, 2)
    assert journal.parse_line(line.replace(number, b"1e300"), 2).id == "abcd1234"


def test_an_integer_beyond_64_bits_in_free_form_data_is_read_as_orjson_reads_it():
    for text in (b'"fine"', b'"cut \\ud83d"'):  # orjson, and the fallback for lone surrogates
        line = (
            b'{"type":"message","id":"abcd1234","message":{"role":"assistant","content":['
            b'{"type":"text","text":'
            + text
            + b'},{"type":"toolCall","name":"n","arguments":{"n":'
            + str(2**70).encode()
            + b"}}]}}"
        )
        item = journal.parse_line(line, 2)
        assert "n: 1.1805916207174113e+21" in item.text


WRONG_TYPES = {
    "type is a number": {"type": 5, "id": "a"},
    "message is null": {"type": "message", "id": "a", "message": None},
    "message is absent": {"type": "message", "id": "a"},
    "message is a string": {"type": "message", "id": "a", "message": "hello"},
    "role is a number": message(7, content="x"),
    "role is absent": {"type": "message", "id": "a", "message": {"content": "x"}},
    "id is a number": {**message("user", content="x"), "id": 12345678},
    "parentId is an object": {**message("user", content="x"), "parentId": {"id": "x"}},
    "timestamp is an object": {**message("user", content="x"), "timestamp": {"ms": 1}},
    "timestamp is true": {**message("user", content="x"), "timestamp": True},
    "content is an object": message("user", content={"text": "x"}),
    "content is a number": message("user", content=3),
    "a block is a string": message("user", content=["x"]),
    "a block's text is an object": message("user", content=[{"type": "text", "text": {"t": "x"}}]),
    "a block's text is a number": message("assistant", content=[{"type": "text", "text": 3}]),
    "a block's type is a number": message("assistant", content=[{"type": 1, "text": "x"}]),
    "thinking is a list": message("assistant", content=[{"type": "thinking", "thinking": ["x"]}]),
    "redacted is a string": message("assistant", content=[{"type": "thinking", "thinking": "x", "redacted": "yes"}]),
    "a tool name is a number": message("assistant", content=[{"type": "toolCall", "name": 3, "arguments": {}}]),
    "toolName is a list": message("toolResult", toolName=["read"], content="x"),
    "command is a number": message("bashExecution", command=1, output="x"),
    "output is an object": message("bashExecution", command="ls", output={"o": 1}),
    "customType is a number": message("custom", customType=1, content="x"),
    "summary is a list": {"type": "compaction", "id": "c", "summary": ["s"], "tokensBefore": 1},
    "branch summary is a number": {"type": "branch_summary", "id": "b", "summary": 3},
    "custom_message content is a number": {"type": "custom_message", "id": "m", "customType": "r", "content": 3},
    "header id is a number": {"type": "session", "version": 3, "id": 1, "cwd": "/p"},
    "header cwd is a list": {"type": "session", "version": 3, "id": "s", "cwd": ["/p"]},
    "header version is text": {"type": "session", "version": "3", "id": "s", "cwd": "/p"},
    "header timestamp is a list": {"type": "session", "version": 3, "id": "s", "timestamp": [1]},
    "parentSession is an object": {"type": "session", "version": 3, "id": "s", "parentSession": {"p": 1}},
    "session name is a number": {"type": "session_info", "id": "a", "name": 3},
}


@pytest.mark.parametrize("line", WRONG_TYPES.values(), ids=WRONG_TYPES.keys())
def test_a_wrong_type_in_any_field_we_read_makes_the_line_malformed(line):
    with pytest.raises(journal.Malformed):
        parse(line)


def test_optional_fields_may_be_absent_or_null_and_unknown_ones_are_left_alone():
    line = {
        "type": "message",
        "id": "abcd1234",
        "parentId": None,
        "timestamp": None,
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text"},
                {"type": "thinking", "thinking": "plan", "redacted": False},
                {"type": "toolCall", "name": "bash"},
                {"type": "audio", "data": 7},
                {"type": "text", "text": "done"},
            ],
            "timestamp": 1773614425499.0,
            "usage": {"input": "n/a"},
            "stopReason": 3,
        },
    }
    item = parse(line)
    assert (item.id, item.parent_id, item.timestamp) == ("abcd1234", None, "2026-03-15T22:40:25.499Z")
    assert item.text == "plan\nbash\ndone" and item.tool == "bash"
    assert parse({"type": "session"}, 1).version == 1
    assert parse({"type": "compaction", "id": "c"}).tokens_before is None
    assert parse({"type": "custom", "id": 5, "data": [1, "x", None]}) is None  # not an entry: ids unread


def test_an_iso_timestamp_out_of_range_once_in_utc_is_no_timestamp_not_an_error():
    item = parse({**message("user", content="x"), "timestamp": "0001-01-01T00:00:00+01:00"})
    assert item.timestamp is None and item.text == "x"
    assert parse({**message("user", content="x"), "timestamp": "2026-03-15T23:40:25.500+01:00"}).timestamp == (
        "2026-03-15T22:40:25.500Z"
    )


@pytest.mark.parametrize("raw_line", [b"null", b"3", b"true", b'{"type":"message"', b"\xff\xfe"])
def test_json_that_is_not_an_object_is_malformed(raw_line):
    with pytest.raises(journal.Malformed):
        journal.parse_line(raw_line, 2)


def test_an_entrys_labels_are_exactly_its_tool_calls_argument_names(tmp_path):
    from support.real_pi import copy_corpus

    corpus = copy_corpus(tmp_path)
    seen = 0
    for path in sorted(corpus.sessions.rglob("*.jsonl")):
        for n, line in enumerate(path.read_bytes().splitlines(), 1):
            item = journal.parse_line(line, n)
            if not isinstance(item, journal.Entry) or not item.usage.calls:
                assert not getattr(item, "labels", ())
                continue
            message = json.loads(line)["message"]
            names = [
                f"{key}: "
                for block in message["content"]
                if block.get("type") == "toolCall"
                for key, _ in journal.argument_lines(block["name"], block.get("arguments"))
                if key is not None
            ]
            assert [item.text[a:z] for a, z in item.labels] == names
            seen += len(names)
    assert seen > 20
