"""Pi's session journal format, versions 1 to 3: the one module that knows what a line means.

A journal is JSONL. The first line is a header; every other line is an entry of some type.
Only conversation lines become index entries; settings, labels and extension state do not.
A line that cannot be read as an entry (not a JSON object within the parsers' limits, or a
field we read holding the wrong type or a number no 64-bit column holds) is Malformed:
counted and skipped, never fatal, whatever else the journal holds. The figures beside the text
(`Usage`: model, tokens, cost, stop reason, tool outcomes, tool calls) follow a milder rule: a
figure of the wrong type or out of range is dropped on its own (None), so a broken figure never
takes a conversation's text out of search.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

import orjson

KINDS = ("user", "assistant", "tool_result", "bash", "custom", "compaction", "branch_summary")
SUMMARY_KINDS = ("compaction", "branch_summary")
IMAGE_MARKER = "[image]"

# Message roles Pi writes, and the entry kind each becomes. `hookMessage` is version 2's name
# for `custom`; both are kept so an unmigrated version-2 journal reads the same as a migrated one.
ROLE_KINDS = {
    "user": "user",
    "assistant": "assistant",
    "toolResult": "tool_result",
    "bashExecution": "bash",
    "custom": "custom",
    "hookMessage": "custom",
}

_CANONICAL_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
# What a 64-bit SQLite column holds: a larger integer where we store one makes the line malformed.
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
# orjson reads integers from -2**63 to 2**64 - 1 and larger ones as floats; the fallback does the same.
_UINT64_END = 1 << 64
# Figures no real session reaches (an answer's tokens: a thousand times the largest context window;
# its cost: a million dollars) are dropped like unreadable ones, so no sum of them overflows in practice
# (and the sums use SQL's total() besides, which never does).
MAX_TOKENS = 1 << 40  # about 1.1e12
MAX_DOLLARS = 1e6


@dataclass(slots=True)
class Header:
    """The `session` line: who, where and when the session started."""

    session_id: str | None
    cwd: str | None
    timestamp: str | None
    parent_session: str | None
    version: int


@dataclass(slots=True)
class SessionName:
    """A `session_info` line: the name the user gave the session."""

    name: str | None


class ToolCall(NamedTuple):
    """One tool call of an assistant message: its id, the tool, and its file argument if any."""

    call_id: str | None
    tool: str | None
    path: str | None


class Usage(NamedTuple):
    """What an entry says happened, beside its text (each figure None when absent or unreadable):
    an assistant message's model, provider, stop reason, tokens, cost (dollars) and tool calls;
    a tool result's call id and outcome; a bash execution's exit code."""

    model: str | None = None
    provider: str | None = None
    stop_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost: float | None = None
    is_error: int | None = None
    exit_code: int | None = None
    call_id: str | None = None
    calls: tuple[ToolCall, ...] = ()


NO_USAGE = Usage()


@dataclass(slots=True)
class Entry:
    """One conversation line as the index sees it: metadata plus the text to index and show."""

    id: str
    parent_id: str | None
    timestamp: str | None
    kind: str
    role: str | None
    tool: str | None
    text: str
    tokens_before: int | None = None
    usage: Usage = NO_USAGE
    # Where the text holds structure, not content (tool calls' argument names and object keys), as
    # (start, end) spans in order: left out of the term index and of excerpts (`redaction.parts`).
    labels: tuple[tuple[int, int], ...] = ()


class Malformed(Exception):
    """A line that cannot be read as an entry: skipped and counted, never fatal."""


def fingerprint(data: bytes) -> int:
    """A 32-bit signed fingerprint (CRC-32) of a line's bytes, stored to detect a rewritten journal.

    It guards against accidents, not adversaries, and is always checked together with the
    entry id, so CRC-32's speed (it runs on every indexed byte) wins over a cryptographic hash.
    """
    value = zlib.crc32(data)
    return value - (1 << 32) if value >= 1 << 31 else value


def loads(line: bytes) -> dict:
    """Parse one journal line, keeping lines with invalid UTF-8 or lone surrogate escapes.

    Node's JSON.stringify writes a string cut inside an emoji as a lone `\\ud83d` escape,
    which orjson refuses; the standard library reads it and the bad character is replaced.
    """
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        obj = _loads_leniently(line)
    if type(obj) is not dict:
        raise Malformed("not a JSON object")
    return obj


def _loads_leniently(line: bytes):
    """The standard library's reading of a line orjson refused, for its strings' sake and for numbers
    no float holds (`1e400` is JSON: it reads as infinite, which every figure drops and no other field
    takes); what else orjson refuses (nesting deeper than it reads, NaN, Infinity) stays malformed."""
    try:
        return _clean(
            json.loads(
                line.decode("utf-8", "replace"),
                parse_constant=_no_constant,
                parse_float=float,
                parse_int=_int_as_orjson_reads_it,
            )
        )
    except (ValueError, RecursionError) as e:
        raise Malformed(str(e)) from None


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _int_as_orjson_reads_it(text: str):
    value = int(text)
    return value if INT64_MIN <= value < _UINT64_END else float(text)


def _clean(value):
    """Replace lone surrogates, which cannot be encoded, throughout a parsed value."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    return value


def parse_line(line: bytes, lineno: int) -> Header | SessionName | Entry | None:
    """Interpret one line (without its newline). None for lines that are not entries."""
    return interpret(loads(line), lineno)


def interpret(obj: dict, lineno: int) -> Header | SessionName | Entry | None:
    """Turn a parsed line into a Header, a SessionName, an Entry, or None."""
    kind = obj.get("type")
    if kind == "message":
        return _message_entry(obj, lineno)
    if kind == "compaction":
        return _entry(
            obj, lineno, "compaction", _str(obj.get("summary")), tokens_before=_count(obj.get("tokensBefore"))
        )
    if kind == "branch_summary":
        return _entry(obj, lineno, "branch_summary", _str(obj.get("summary")))
    if kind == "custom_message":
        return _entry(
            obj,
            lineno,
            "custom",
            content_text(obj.get("content")),
            role="custom",
            tool=_str_or_none(obj.get("customType")),
        )
    if kind == "session":
        version = _int64(obj.get("version"))
        cwd = _str_or_none(obj.get("cwd"))
        return Header(
            session_id=_str_or_none(obj.get("id")),
            cwd=os.path.normpath(cwd) if cwd and cwd.startswith("/") else cwd,
            timestamp=_timestamp_field(obj.get("timestamp")),
            parent_session=_str_or_none(obj.get("parentSession") or obj.get("branchedFrom")),
            version=1 if version is None else version,
        )
    if kind == "session_info":
        return SessionName(name=_str_or_none(obj.get("name")))
    if type(kind) is not str:
        raise Malformed("the line's type is not a string")
    return None


def _entry(
    obj: dict,
    lineno: int,
    kind: str,
    text: str,
    *,
    role: str | None = None,
    tool: str | None = None,
    tokens_before: int | None = None,
    message: dict | None = None,
    usage: Usage = NO_USAGE,
) -> Entry:
    """An Entry with the keys every entry line shares: id, parentId and timestamp."""
    return Entry(
        id=_entry_id(obj, lineno),
        parent_id=_str_or_none(obj.get("parentId")),
        timestamp=_timestamp(obj, message),
        kind=kind,
        role=role,
        tool=tool,
        text=text,
        tokens_before=tokens_before,
        usage=usage,
    )


def _message_entry(obj: dict, lineno: int) -> Entry | None:
    message = obj.get("message")
    if type(message) is not dict:
        raise Malformed("a message line's message is not an object")
    role = message.get("role")
    if type(role) is not str:
        raise Malformed("a message's role is not a string")
    kind = ROLE_KINDS.get(role)
    if kind is None:
        return None
    tool = None
    usage = NO_USAGE
    if kind == "assistant":
        text, calls, labels = blocks_text(message.get("content"))
        if calls:
            tools = dict.fromkeys(call.tool for call in calls if call.tool)
            tool = ",".join(tools) if tools else None
        usage = assistant_usage(message, calls)
        if labels:
            entry = _entry(obj, lineno, kind, text, role=role, tool=tool, message=message, usage=usage)
            entry.labels = labels
            return entry
    elif kind == "tool_result":
        text = content_text(message.get("content"))
        tool = _str_or_none(message.get("toolName"))
        is_error = _outcome(message.get("isError"))
        exit_code = bash_result_exit(text, is_error) if tool == "bash" else None
        usage = _result_usage(is_error, _label(message.get("toolCallId")), exit_code)
    elif kind == "bash":
        command = _str(message.get("command"))
        output = _str(message.get("output"))
        text = f"$ {command}\n{output}" if output else f"$ {command}"
        usage = _bash_usage(_exit_code(message.get("exitCode")))
    elif kind == "custom":
        text = content_text(message.get("content"))
        tool = _str_or_none(message.get("customType"))
    else:
        text = content_text(message.get("content"))
    return _entry(obj, lineno, kind, text, role=role, tool=tool, message=message, usage=usage)


def _result_usage(is_error: int | None, call_id: str | None, exit_code: int | None = None) -> Usage:
    """A tool result's figures (by position: a named tuple's keywords cost a microsecond a line)."""
    return Usage(None, None, None, None, None, None, None, None, is_error, exit_code, call_id, ())


# Pi's bash tool ends the text of a non-zero exit with this status line (after a blank line when there was output);
# an aborted or timed-out command ends with another status and has no exit code.
BASH_EXIT_STATUS = "Command exited with code "


def bash_result_exit(text: str, is_error: int | None) -> int | None:
    """The exit code of the agent's bash call from its result: 0 when it succeeded, N from the text's
    `Command exited with code N` when it failed, None when it failed otherwise (aborted, timed out)."""
    if is_error == 0:
        return 0
    if is_error is None:
        return None
    at = text.rfind(BASH_EXIT_STATUS)
    code = text[at + len(BASH_EXIT_STATUS) :]
    if at < 0 or not (at == 0 or text.endswith("\n\n", 0, at)) or not re.fullmatch(r"-?\d{1,10}", code):
        return None
    return _exit_code(int(code))


def _bash_usage(exit_code: int | None) -> Usage:
    """A bash execution's figures: its exit code (by position, as `_result_usage`)."""
    return NO_USAGE if exit_code is None else Usage(None, None, None, None, None, None, None, None, None, exit_code)


def assistant_usage(message: dict, calls: tuple[ToolCall, ...] = ()) -> Usage:
    """An assistant message's figures: model, provider, stop reason, `usage` tokens and
    `usage.cost.total`, with its tool calls (`blocks_text`); each unreadable figure dropped on its own.
    The checks are `_label`, `_count` and `_dollars` written out: this runs for every assistant line."""
    get = message.get
    model, provider, stop = get("model"), get("provider"), get("stopReason")
    usage = get("usage")
    inp = out = cache_read = cache_write = cost = None
    if type(usage) is dict:
        uget = usage.get
        inp, out, cache_read, cache_write = uget("input"), uget("output"), uget("cacheRead"), uget("cacheWrite")
        if not (type(inp) is int and 0 <= inp <= MAX_TOKENS):
            inp = None
        if not (type(out) is int and 0 <= out <= MAX_TOKENS):
            out = None
        if not (type(cache_read) is int and 0 <= cache_read <= MAX_TOKENS):
            cache_read = None
        if not (type(cache_write) is int and 0 <= cache_write <= MAX_TOKENS):
            cache_write = None
        money = uget("cost")
        cost = _dollars(money.get("total")) if type(money) is dict else None
    return Usage(  # by position (a named tuple's keywords cost more): the fields' order
        model if type(model) is str and model else None,
        provider if type(provider) is str and provider else None,
        stop if type(stop) is str and stop else None,
        inp,
        out,
        cache_read,
        cache_write,
        cost,
        None,
        None,
        None,
        calls,
    )


# The argument naming the file a tool works on (read, edit, write, ls, grep, find; file_path in other harnesses).
PATH_ARGUMENTS = ("path", "file_path")


def _file_argument(arguments) -> str | None:
    """The file a tool call works on: its first non-empty `path` or `file_path` string argument."""
    if type(arguments) is dict:
        for key in PATH_ARGUMENTS:
            value = arguments.get(key)
            if type(value) is str and value:
                return value
    return None


def content_text(content) -> str:
    """Text of a string or a list of content blocks; each image becomes `[image]`."""
    return blocks_text(content)[0]


def blocks_text(content) -> tuple[str, tuple[ToolCall, ...], tuple[tuple[int, int], ...]]:
    """Text, plain thinking and tool calls (name and arguments) of a message's content, the
    tool calls themselves, and where the text's labels are (`Entry.labels`: the tool calls'
    argument names); never thinking signatures, redacted reasoning or image data.
    Block types we do not know are left out; a block that is not an object is malformed."""
    if type(content) is str:
        return content, (), ()
    if type(content) is not list:
        if content is None:
            return "", (), ()
        raise Malformed("content is neither text nor a list of blocks")
    parts: list[str] = []
    calls: list[ToolCall] = []
    labels: list[int] = []
    at = 0  # where the next non-empty part starts in the joined text
    for block in content:
        if type(block) is not dict:
            raise Malformed("a content block is not an object")
        btype = block.get("type")
        before = len(parts)
        if btype == "text":
            parts.append(_str(block.get("text")))
        elif btype == "thinking":
            if not _flag(block.get("redacted")):
                parts.append(_str(block.get("thinking")))
        elif btype == "toolCall":
            name = _str(block.get("name"))
            arguments = block.get("arguments")
            calls.append(ToolCall(_label(block.get("id")), name or None, _file_argument(arguments)))
            parts.append(_labelled_call_text(name, arguments, at, labels))
        elif btype == "image":
            parts.append(IMAGE_MARKER)
        elif type(btype) is not str:
            raise Malformed("a content block's type is not a string")
        if len(parts) > before and parts[-1]:
            at += len(parts[-1]) + 1
    spans = iter(labels)
    return "\n".join(p for p in parts if p), tuple(calls) if calls else (), tuple(zip(spans, spans, strict=True))


def tool_call_text(name: str, arguments) -> str:
    """A tool call as readable text: the name, then each argument as `key: value` (argument_lines)."""
    return _labelled_call_text(name, arguments, 0, [])


def _labelled_call_text(name: str, arguments, at: int, labels: list[int]) -> str:
    """`tool_call_text`, starting at `at` in an entry's text, adding to `labels` where each argument's
    `key: ` and each `"key":` of an object in a value sit: the structure, not the call's content."""
    if type(arguments) is dict and not (name == EDIT_TOOL and "edits" in arguments):
        return _labelled_pairs(name, arguments, at, labels)
    lines = [name]
    pos = at + len(name) + 1
    given = arguments if isinstance(arguments, dict) else {}
    for key, shown in argument_lines(name, arguments):
        if key is None:
            value_at = pos
            line = shown
        else:
            labels += (pos, pos + len(key) + 2)
            value_at = pos + len(key) + 2
            line = f"{key}: {shown}"
        value = given.get(key) if key is not None else arguments
        if isinstance(value, (dict, list)):  # an object's keys are labels too, when shown as its JSON
            found: list[int] = []
            if _labelled_json(value, value_at, found) == shown:
                labels += found
        lines.append(line)
        pos += len(line) + 1
    return "\n".join(lines)


def _labelled_pairs(name: str, arguments: dict, at: int, labels: list[int]) -> str:
    """`_labelled_call_text` of arguments that are an object without an edit's replacements (most
    calls): each pair as `argument_lines` shows it, written in one walk of the object."""
    lines = [name]
    pos = at + len(name) + 1
    for key, value in arguments.items():
        value_at = pos + len(key) + 2
        labels += (pos, value_at)
        if type(value) is str:
            shown = value
        else:
            shown = _json_text(value)
            if isinstance(value, (dict, list)):  # an object's keys are labels too, when shown as its JSON
                found: list[int] = []
                if _labelled_json(value, value_at, found) == shown:
                    labels += found
        lines.append(f"{key}: {shown}")
        pos = value_at + len(shown) + 1
    return "\n".join(lines)


def argument_lines(name: str, arguments) -> list[tuple[str | None, str]]:
    """A tool call's arguments as (key, value shown) pairs, in order: a string as it is, anything else
    as compact JSON; an edit's replacements (`edit_replacements`, whatever shape the model sent) as an
    `oldText` and a `newText` pair each, never as JSON. Arguments that are not an object are one pair
    without a key."""
    if isinstance(arguments, dict):
        pairs: list[tuple[str | None, str]] = []
        for key, value in arguments.items():
            if key == "edits" and name == EDIT_TOOL:
                replacements = edit_replacements(value)
                if replacements is not None:
                    for r in replacements:
                        pairs += (("oldText", r.old), ("newText", r.new))
                    continue
            pairs.append((key, value if isinstance(value, str) else _json_text(value)))
        return pairs
    if arguments is not None:
        return [(None, _json_text(arguments) if not isinstance(arguments, str) else arguments)]
    return []


EDIT_TOOL = "edit"


class Replacement(NamedTuple):
    """One replacement of an edit call: the text it looked for and the text it put there."""

    old: str
    new: str


def edit_replacements(edits) -> list[Replacement] | None:
    """The replacements an edit call's `edits` argument holds: Pi 0.73's list of `{oldText, newText}`,
    or that list sent by the model as a JSON string (the journal keeps the string). None when it is
    neither (a malformed string is then shown as the text it is). The legacy shape, `oldText` and
    `newText` as arguments of their own, needs nothing here: each is already a `key: value` pair."""
    if isinstance(edits, str):
        try:
            edits = orjson.loads(edits)
        except orjson.JSONDecodeError:
            return None
    if type(edits) is not list or not edits:
        return None
    found: list[Replacement] = []
    for item in edits:
        if type(item) is not dict:
            return None
        old, new = item.get("oldText"), item.get("newText")
        if type(old) is not str or type(new) is not str:
            return None
        found.append(Replacement(old, new))
    return found


def _labelled_json(value, at: int, labels: list[int]) -> str:
    """`_json_text(value)` starting at `at`, adding to `labels` where each object key (quoted, with
    its colon) sits. A value orjson cannot write as it is gets `_json_text`'s form, unlabelled."""
    if not isinstance(value, (dict, list)):
        return _json_text(value)
    found: list[int] = []
    try:
        text = _json_pieces(value, at, found, 0)
    except (orjson.JSONEncodeError, RecursionError, TypeError):
        return _json_text(value)
    labels += found
    return text


def _json_pieces(value, at: int, labels: list[int], depth: int) -> str:
    """orjson's compact JSON of `value` written piece by piece, recording the keys' spans."""
    if depth > 200:
        raise RecursionError("deeper than labels are recorded")
    if isinstance(value, dict):
        out, pos = ["{"], at + 1
        for i, (key, item) in enumerate(value.items()):
            if i:
                out.append(",")
                pos += 1
            label = orjson.dumps(key).decode() + ":"
            labels += (pos, pos + len(label))
            pos += len(label)
            piece = _json_pieces(item, pos, labels, depth + 1)
            out += (label, piece)
            pos += len(piece)
        out.append("}")
        return "".join(out)
    if isinstance(value, list):
        out, pos = ["["], at + 1
        for i, item in enumerate(value):
            if i:
                out.append(",")
                pos += 1
            piece = _json_pieces(item, pos, labels, depth + 1)
            out.append(piece)
            pos += len(piece)
        out.append("]")
        return "".join(out)
    return orjson.dumps(value).decode()


def _json_text(value) -> str:
    """Free-form JSON (a tool call's arguments) as compact text. orjson writes 254 levels; deeper
    ones (a line may hold 1,024) go through the standard library, and the deepest are malformed."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        except (RecursionError, ValueError) as e:
            raise Malformed(f"arguments too deep to write as text: {e}") from None


# ---- a line's structure, for the session page (the text spans are the indexed text's) -------------


@dataclass(slots=True)
class Span:
    """Characters start to end of an entry's text: where a piece of it is, to redact it as part of the whole."""

    start: int
    end: int


@dataclass(slots=True)
class ToolCallShape:
    """A tool call in an assistant message: its id, and the spans of its name and of each argument's key and value."""

    call_id: str | None
    name: Span
    arguments: list[tuple[Span, Span]]


@dataclass(slots=True)
class Block:
    """One content block of a message: `text`, `thinking`, `redacted_thinking`, `image` or `tool_call`."""

    kind: str
    span: Span
    call: ToolCallShape | None = None


@dataclass(slots=True)
class Shape:
    """What an entry line says beyond its text, for a page: its text (as indexed) cut into blocks,
    a tool result's call id and error flag, a bash run's command, output and exit, an assistant's
    model and stop reason, the diff Pi recorded in a tool result's `details.diff` (an edit's)."""

    text: str
    blocks: list[Block]
    model: str | None = None
    stop_reason: str | None = None
    error_message: str | None = None
    call_id: str | None = None
    is_error: bool = False
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    diff: str | None = None


def shape(obj: dict, entry: Entry) -> Shape:
    """The structure of an entry's line (`obj`, already read as `entry`); the blocks' spans index
    `entry.text`, which this rebuilds for assistant messages and bash runs the way the indexer does."""
    message = obj.get("message") if obj.get("type") == "message" else None
    whole = [Block("text", Span(0, len(entry.text)))] if entry.text else []
    if type(message) is not dict:
        return Shape(entry.text, whole)
    if entry.kind == "assistant":
        text, blocks = _assistant_blocks(message.get("content"))
        return Shape(
            text,
            blocks,
            model=_str_or_none(message.get("model")),
            stop_reason=_str_or_none(message.get("stopReason")),
            error_message=_str_or_none(message.get("errorMessage")),
        )
    if entry.kind == "tool_result":
        call_id = _str_or_none(message.get("toolCallId"))
        details = message.get("details")
        recorded = details.get("diff") if type(details) is dict else None
        return Shape(
            entry.text,
            whole,
            call_id=call_id,
            is_error=_flag(message.get("isError")),
            diff=recorded if type(recorded) is str and recorded else None,
        )
    if entry.kind == "bash":
        command = _str(message.get("command"))
        blocks = [Block("command", Span(2, 2 + len(command)))]
        if len(entry.text) > len(command) + 2:
            blocks.append(Block("output", Span(len(command) + 3, len(entry.text))))
        code = message.get("exitCode")
        return Shape(
            entry.text,
            blocks,
            exit_code=code if type(code) is int else None,
            cancelled=_flag(message.get("cancelled")),
            truncated=_flag(message.get("truncated")),
        )
    return Shape(entry.text, whole)


def _assistant_blocks(content) -> tuple[str, list[Block]]:
    """An assistant message's text as blocks_text writes it, with each block's span in it."""
    if type(content) is str:
        return content, [Block("text", Span(0, len(content)))] if content else []
    parts: list[str] = []
    blocks: list[Block] = []
    for block in content if type(content) is list else ():
        if type(block) is not dict:
            continue
        btype = block.get("type")
        at = sum(len(p) for p in parts) + len(parts)  # where a piece appended now starts
        if btype == "text":
            piece, kind, call = _str(block.get("text")), "text", None
        elif btype == "thinking" and _flag(block.get("redacted")):
            piece, kind, call = "", "redacted_thinking", None
        elif btype == "thinking":
            piece, kind, call = _str(block.get("thinking")), "thinking", None
        elif btype == "image":
            piece, kind, call = IMAGE_MARKER, "image", None
        elif btype == "toolCall":
            piece = tool_call_text(_str(block.get("name")), block.get("arguments"))
            kind, call = "tool_call", _call_shape(block, at)
        else:
            continue
        if piece:
            parts.append(piece)
        if piece or kind == "redacted_thinking":
            blocks.append(Block(kind, Span(at, at + len(piece)), call))
    return "\n".join(parts), blocks


def _call_shape(block: dict, at: int) -> ToolCallShape:
    """Where a tool call's name and each argument's key and value sit in its text, which starts at
    `at` (tool_call_text: the name, then a `key: value` line per pair of `argument_lines`)."""
    name = _str(block.get("name"))
    pos = at + len(name)
    spans: list[tuple[Span, Span]] = []
    for key, shown in argument_lines(name, block.get("arguments")):
        if key is None:
            spans.append((Span(pos + 1, pos + 1), Span(pos + 1, pos + 1 + len(shown))))
            pos += 1 + len(shown)
            continue
        key_end = pos + 1 + len(key)
        spans.append((Span(pos + 1, key_end), Span(key_end + 2, key_end + 2 + len(shown))))
        pos = key_end + 2 + len(shown)
    return ToolCallShape(_str_or_none(block.get("id")), Span(at, at + len(name)), spans)


@dataclass(slots=True)
class Node:
    """A line of the session tree that is not an index entry (a setting, a label, extension state, a
    forgotten entry): its id and parent, and what the settings and labels a page shows say
    (`value`: the model, the thinking level, the label or the session name; `target_id`: a label's entry)."""

    type: str
    id: str | None
    parent_id: str | None
    timestamp: str | None
    value: str | None = None
    target_id: str | None = None


def node(obj: dict) -> Node | None:
    """The tree node a parsed line that is not an entry stands for; None for a header or a line without a type."""
    kind = obj.get("type")
    if type(kind) is not str or kind == "session":
        return None
    value, target = None, None
    if kind == "model_change":
        provider, model = _text_or_none(obj.get("provider")), _text_or_none(obj.get("modelId"))
        value = f"{provider}/{model}" if provider and model else model or provider
    elif kind == "thinking_level_change":
        value = _text_or_none(obj.get("thinkingLevel"))
    elif kind == "label":
        value, target = _text_or_none(obj.get("label")), _text_or_none(obj.get("targetId"))
    elif kind == "session_info":
        value = _text_or_none(obj.get("name"))
    ts = obj.get("timestamp")
    return Node(
        kind, _text_or_none(obj.get("id")), _text_or_none(obj.get("parentId")), normalize_timestamp(ts), value, target
    )


def _text_or_none(value) -> str | None:
    """A field shown if it is text: None when absent, empty or of another type (never malformed: only shown)."""
    return value if type(value) is str and value else None


def _entry_id(obj: dict, lineno: int) -> str:
    value = obj.get("id")
    if type(value) is str and value:
        return value
    _str_or_none(value)  # any other type is malformed
    return f"L{lineno}"


def _timestamp(obj: dict, message: dict | None = None) -> str | None:
    value = obj.get("timestamp")
    ts = normalize_timestamp(value) if type(value) is str else _timestamp_field(value)
    if ts is None and message is not None:
        ts = _timestamp_field(message.get("timestamp"))
    return ts


def _timestamp_field(value) -> str | None:
    """A timestamp as it may be: an ISO string or epoch milliseconds (absent or unreadable: None);
    any other type makes the line malformed."""
    if value is None or type(value) is str or type(value) is int or type(value) is float:
        return normalize_timestamp(value)
    raise Malformed("a timestamp is neither text nor a number")


def normalize_timestamp(value) -> str | None:
    """Pi's ISO strings as they are; epoch milliseconds or other ISO forms as UTC `...T..:..:..mmmZ`."""
    if isinstance(value, str):
        if _CANONICAL_TS.match(value):
            return value
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=UTC)
            return iso_utc(dt)
        except (ValueError, OverflowError):  # not ISO, or out of range once in UTC (year 1, +01:00)
            return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return iso_utc(datetime.fromtimestamp(value / 1000, tz=UTC))
        except (OverflowError, OSError, ValueError):
            return None
    return None


def local_time(ts: str | None, empty: str = "") -> str:
    """A journal timestamp (UTC ISO) as the reader's local `YYYY-MM-DD HH:MM`."""
    if not ts:
        return empty
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return ts


def now_iso() -> str:
    """The current time as Pi writes its timestamps (UTC, milliseconds, Z)."""
    return iso_utc(datetime.now(UTC))


def iso_utc(dt: datetime) -> str:
    """Format an aware datetime the way Pi does: UTC with milliseconds and a Z."""
    dt = dt.astimezone(UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


# The fields we read, by type. Each may be absent (or null); any other type makes the line malformed.


def _str(value) -> str:
    """A text field: "" when absent."""
    if type(value) is str:
        return value
    if value is None:
        return ""
    raise Malformed("a text field is not a string")


def _str_or_none(value) -> str | None:
    """An id, name or path: None when absent or empty."""
    if type(value) is str:
        return value or None
    if value is None:
        return None
    raise Malformed("an id, name or path is not a string")


def _int64(value) -> int | None:
    """An integer we store that places a line (a header's version): one a 64-bit SQLite column holds."""
    if value is None or (type(value) is int and INT64_MIN <= value <= INT64_MAX):
        return value
    raise Malformed("an integer field is not an integer a 64-bit column holds")


# The figures beside the text (Usage): each is dropped (None) when unreadable, never malformed.


def _label(value) -> str | None:
    """A model id, provider, stop reason or call id: a non-empty string, else None."""
    return value if type(value) is str and value else None


def _count(value) -> int | None:
    """A token count: a whole number from 0 to MAX_TOKENS (more than any real session), else None."""
    return value if type(value) is int and 0 <= value <= MAX_TOKENS else None


def _dollars(value) -> float | None:
    """A cost in dollars: a number from 0 to MAX_DOLLARS (more than any real answer), else None
    (orjson never reads NaN; an infinite number is above the bound)."""
    if (type(value) is int or type(value) is float) and 0 <= value <= MAX_DOLLARS:
        return float(value)
    return None


def _outcome(value) -> int | None:
    """A tool result's isError as 0/1: absent is 0 (success), anything but true/false None."""
    if value is None or type(value) is bool:
        return int(bool(value))
    return None


def _exit_code(value) -> int | None:
    """A process exit code: a whole number a 32-bit int holds, else None (absent, killed, cancelled)."""
    return value if type(value) is int and -(1 << 31) <= value < (1 << 31) else None


def _flag(value) -> bool:
    """A true/false field: false when absent."""
    if value is None or type(value) is bool:
        return bool(value)
    raise Malformed("a true/false field is neither true nor false")


# ---- a tool call and its result, for a hit (search.exchange) -------------------------------------

# The argument that says what a call did, by preference: a command, a file, a pattern, a query.
MAIN_ARGUMENTS = ("command", *PATH_ARGUMENTS, "pattern", "query", "url")
# How Pi's bash tool ends the output of a command that exited non-zero (seen in Pi 0.73.1's journals).
_EXITED = re.compile(r"Command exited with code (-?\d+)\s*\Z")


def call_arguments(obj: dict, call_id: str) -> tuple[str, object] | None:
    """The tool name and arguments of the call `call_id` in an assistant line (parsed), or None."""
    message = obj.get("message")
    content = message.get("content") if type(message) is dict else None
    for block in content if type(content) is list else ():
        if type(block) is dict and block.get("type") == "toolCall" and block.get("id") == call_id:
            name = block.get("name")
            return (name if type(name) is str else ""), block.get("arguments")
    return None


def main_argument(arguments) -> tuple[str, str] | None:
    """(key, value) of the argument that says what a call did (MAIN_ARGUMENTS, else its first string
    argument); None when it has no string argument."""
    if type(arguments) is not dict:
        return None
    for key in MAIN_ARGUMENTS:
        value = arguments.get(key)
        if type(value) is str and value:
            return key, value
    for key, value in arguments.items():
        if type(value) is str and value:
            return key, value
    return None


def exited_with(result_text: str) -> int | None:
    """The exit code a bash tool result reports at its end (`Command exited with code 3`), else None."""
    m = _EXITED.search(result_text[-80:])
    return int(m.group(1)) if m else None
