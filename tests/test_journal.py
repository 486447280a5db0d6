"""The Pi format: which lines are entries, and what text each contributes to the index."""

from __future__ import annotations

import json

import pytest

from pimem_index import journal


def parse(obj: dict, lineno: int = 2):
    return journal.parse_line(json.dumps(obj).encode(), lineno)


def message(role: str, **fields) -> dict:
    return {"type": "message", "id": "c3d4e5f6", "parentId": "b2c3d4e5",
            "timestamp": "2026-03-15T22:40:25.500Z", "message": {"role": role, **fields}}


def test_header_gives_session_cwd_start_and_parent():
    item = parse({"type": "session", "version": 3, "id": "sess-1", "timestamp": "2026-03-15T22:40:18.123Z",
                  "cwd": "/home/u/proj", "parentSession": "/x/old.jsonl"}, 1)
    assert isinstance(item, journal.Header)
    assert (item.session_id, item.cwd, item.timestamp, item.parent_session, item.version) == (
        "sess-1", "/home/u/proj", "2026-03-15T22:40:18.123Z", "/x/old.jsonl", 3)


def test_header_without_version_is_version_1_and_branched_from_is_the_parent():
    item = parse({"type": "session", "id": "s", "timestamp": "2025-06-01T10:00:00.000Z", "cwd": "/p",
                  "branchedFrom": "/x/a.jsonl", "provider": "anthropic", "modelId": "m"}, 1)
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
    item = parse(message("user", content=[{"type": "text", "text": "look"},
                                          {"type": "image", "data": data, "mimeType": "image/png"}]))
    assert item.text == "look\n[image]"
    assert data[:20] not in item.text


def test_assistant_text_thinking_and_tool_calls_but_no_signature():
    signature = "EqQBCkgIARABGAIiQK" * 60
    item = parse(message("assistant", content=[
        {"type": "thinking", "thinking": "Look at auth first", "thinkingSignature": signature},
        {"type": "text", "text": "Reading the file."},
        {"type": "toolCall", "id": "toolu_01AB", "name": "read", "arguments": {"path": "src/auth.ts", "limit": 40}},
        {"type": "toolCall", "id": "toolu_01AC", "name": "bash", "arguments": {"command": "ls -la\nwc -l x"}},
    ], usage={"input": 2775, "totalTokens": 2916}, stopReason="toolUse"))
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
    item = parse(message("assistant", content=[
        {"type": "thinking", "thinking": "[Reasoning redacted]", "thinkingSignature": "ENCRYPTEDPAYLOAD", "redacted": True},
        {"type": "text", "text": "Done."}]))
    assert item.text == "Done."
    assert "ENCRYPTEDPAYLOAD" not in item.text and "Reasoning" not in item.text


def test_tool_result_names_its_tool_and_marks_images():
    item = parse(message("toolResult", toolCallId="toolu_01AB", toolName="read", isError=False,
                         content=[{"type": "text", "text": "export function login"},
                                  {"type": "image", "data": "QUJD" * 100, "mimeType": "image/png"}]))
    assert (item.kind, item.role, item.tool) == ("tool_result", "toolResult", "read")
    assert item.text == "export function login\n[image]"


def test_bash_execution_is_command_and_output():
    item = parse(message("bashExecution", command="ls", output="src\n", exitCode=0,
                         cancelled=False, truncated=False))
    assert item.kind == "bash"
    assert item.text == "$ ls\nsrc\n"


@pytest.mark.parametrize("role", ["custom", "hookMessage"])
def test_migrated_custom_and_version_2_hook_messages_are_custom(role):
    item = parse(message(role, customType="team-note", content="deploy freeze friday", display=True))
    assert item.kind == "custom"
    assert item.tool == "team-note"
    assert item.text == "deploy freeze friday"


def test_custom_message_line_is_custom_with_blocks():
    item = parse({"type": "custom_message", "id": "a1b2c3d4", "parentId": None,
                  "timestamp": "2026-03-15T22:41:00.000Z", "customType": "reminder",
                  "content": [{"type": "text", "text": "check the CI"}], "display": True})
    assert (item.kind, item.tool, item.text) == ("custom", "reminder", "check the CI")
    assert item.parent_id is None


def test_compaction_keeps_summary_and_tokens_before():
    item = parse({"type": "compaction", "id": "0a1b2c3d", "parentId": "f6a7b8c9",
                  "timestamp": "2026-03-15T23:10:00.000Z", "summary": "## Goal\nfix login",
                  "firstKeptEntryId": "e5f6a7b8", "tokensBefore": 175004})
    assert (item.kind, item.tokens_before, item.text) == ("compaction", 175004, "## Goal\nfix login")


def test_branch_summary_is_an_entry():
    item = parse({"type": "branch_summary", "id": "1b2c3d4e", "parentId": "c3d4e5f6",
                  "timestamp": "2026-03-15T23:15:00.000Z", "fromId": "c3d4e5f6", "summary": "explored redis"})
    assert (item.kind, item.text) == ("branch_summary", "explored redis")


@pytest.mark.parametrize("line", [
    {"type": "model_change", "id": "a", "provider": "openai", "modelId": "gpt-5"},
    {"type": "thinking_level_change", "id": "b", "thinkingLevel": "high"},
    {"type": "label", "id": "c", "targetId": "x", "label": "important"},
    {"type": "custom", "id": "d", "customType": "state", "data": {"secret": "x"}},
    {"type": "message", "id": "e", "message": {"role": "somethingNew", "content": "x"}},
    {"type": "unknown_future_type", "id": "f"},
])
def test_settings_labels_state_and_unknown_lines_are_not_entries(line):
    assert parse(line) is None


def test_session_info_gives_the_name():
    item = parse({"type": "session_info", "id": "a", "name": "Login refactor"})
    assert isinstance(item, journal.SessionName) and item.name == "Login refactor"


def test_version_1_line_without_id_gets_line_number_id():
    item = parse({"type": "message", "timestamp": "2025-06-01T10:00:00.000Z",
                  "message": {"role": "user", "content": "hello"}}, lineno=7)
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
    raw = b'{"type":"message","id":"abcd1234","message":{"role":"toolResult","toolName":"bash",' \
          b'"content":[{"type":"text","text":"output cut mid emoji \\ud83d and more"}]}}'
    item = journal.parse_line(raw, 2)
    assert item.kind == "tool_result"
    assert "and more" in item.text
    item.text.encode("utf-8")


def test_header_cwd_is_normalised_so_scopes_compare_folders():
    item = parse({"type": "session", "version": 3, "id": "s", "cwd": "/home/u/proj/./sub/"}, 1)
    assert item.cwd == "/home/u/proj/sub"
