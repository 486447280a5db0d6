"""Pi's journal lines as Pi 0.73 writes them: every line type's keys in Pi's order, one compact JSON object a line.

The one writer of the format for the tests (`tests/support/pijournal.py`) and the benchmark corpus
(`benchmarks/corpus.py`); `pimem_index.journal` is its reader. It is a package of its own beside them, not shipped
in the wheel (the library carries no test helpers) and importing neither, so neither imports the other. The key
orders are those of the journals the real Pi 0.73.1 wrote in `tests/fixtures/real_pi` (tests/test_pi_lines.py
compares them). Callers choose ids, timestamps and contents; this module only shapes and serialises.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import orjson

# Entry types whose own keys come before the common ones (`{"type","customType",...,"id","parentId","timestamp"}`).
OWN_KEYS_FIRST = frozenset({"custom", "custom_message"})


class At(NamedTuple):
    """Where an entry sits: its id and its parent's (both None in a version-1 journal, which has no ids) and its
    ISO timestamp."""

    id: str | None
    parent_id: str | None
    timestamp: str


def dumps(obj: dict) -> bytes:
    """One line: compact JSON, UTF-8 kept as it is, and the newline. orjson writes numbers as JavaScript does for
    the figures Pi writes; an int past 64 bits (which orjson refuses) goes through the json module."""
    try:
        return orjson.dumps(obj) + b"\n"
    except TypeError:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def header(
    session_id: str, timestamp: str, cwd: str, *, version: int = 3, parent_session: str | None = None, **extra: Any
) -> dict:
    """The session header: version 1 has no `version` key (its model fields come in `extra`)."""
    line: dict[str, Any] = {"type": "session"}
    if version >= 2:
        line["version"] = version
    line.update({"id": session_id, "timestamp": timestamp, "cwd": cwd})
    if parent_session:
        line["parentSession"] = parent_session
    line.update(extra)
    return line


def entry(type_: str, at: At, **fields: Any) -> dict:
    """An entry line: `type`, then `id` and `parentId` (versions 2 and 3), `timestamp`, then its own fields; custom
    entries put their own fields first."""
    common: dict[str, Any] = {"id": at.id, "parentId": at.parent_id} if at.id is not None else {}
    common["timestamp"] = at.timestamp
    if type_ in OWN_KEYS_FIRST:
        return {"type": type_, **fields, **common}
    return {"type": type_, **common, **fields}


def message(at: At, body: dict) -> dict:
    """A `message` entry holding `body` (one of the message builders below)."""
    return entry("message", at, message=body)


def user(content: object, timestamp_ms: int) -> dict:
    """A user message: content is a list of blocks from Pi 0.73 (a string in older journals; None only in
    tests of what a reader survives)."""
    return {"role": "user", "content": content, "timestamp": timestamp_ms}


def assistant(
    content: list[dict],
    *,
    api: str,
    provider: str,
    model: str,
    usage: dict,
    stop_reason: str,
    timestamp_ms: int,
    response_id: str | None = None,
    error_message: str | None = None,
) -> dict:
    msg = {
        "role": "assistant",
        "content": content,
        "api": api,
        "provider": provider,
        "model": model,
        "usage": usage,
        "stopReason": stop_reason,
        "timestamp": timestamp_ms,
    }
    if response_id is not None:
        msg["responseId"] = response_id
    if error_message is not None:
        msg["errorMessage"] = error_message
    return msg


def usage(
    input_tokens: int, output_tokens: int, cache_read: int, cache_write: int, cost: dict, *, total: bool = True
) -> dict:
    """`usage` on an assistant message: `totalTokens` (the four summed) from version 3 on."""
    out: dict[str, Any] = {"input": input_tokens, "output": output_tokens, "cacheRead": cache_read}
    out["cacheWrite"] = cache_write
    if total:
        out["totalTokens"] = input_tokens + output_tokens + cache_read + cache_write
    out["cost"] = cost
    return out


def tool_call(call_id: str, name: str, arguments: dict) -> dict:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def tool_result(
    call_id: str, tool_name: str, content: list[dict], is_error: bool, timestamp_ms: int, details: dict | None = None
) -> dict:
    """A tool result: `details` (an edit's diff, `{}` on failure) before `isError`, as Pi 0.73 writes it."""
    msg: dict[str, Any] = {"role": "toolResult", "toolCallId": call_id, "toolName": tool_name, "content": content}
    if details is not None:
        msg["details"] = details
    msg["isError"] = is_error
    msg["timestamp"] = timestamp_ms
    return msg


def bash_execution(
    command: str,
    output: str,
    exit_code: int,
    timestamp_ms: int,
    *,
    cancelled: bool = False,
    truncated: bool = False,
    full_output_path: str | None = None,
    exclude_from_context: bool | None = None,
) -> dict:
    """A user's `!cmd`: `fullOutputPath` and `excludeFromContext` are absent, not null, when unused."""
    msg: dict[str, Any] = {
        "role": "bashExecution",
        "command": command,
        "output": output,
        "exitCode": exit_code,
        "cancelled": cancelled,
        "truncated": truncated,
        "timestamp": timestamp_ms,
    }
    if full_output_path is not None:
        msg["fullOutputPath"] = full_output_path
    if exclude_from_context is not None:
        msg["excludeFromContext"] = exclude_from_context
    return msg


def custom_role(
    custom_type: str, content: str | list[dict], display: bool, timestamp_ms: int, *, role: str = "custom"
) -> dict:
    """A message of role `custom` (journals migrated from version 2, whose `hookMessage` it was)."""
    return {"role": role, "customType": custom_type, "content": content, "display": display, "timestamp": timestamp_ms}
