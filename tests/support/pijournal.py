"""Write journals line by line the way Pi does: compact JSON, one object a line, appended.

Journal keeps a session's ids, clock and file; every line's shape and bytes come from pi_lines, the one writer
of the format the benchmark corpus uses too."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pi_lines


def iso(dt: datetime) -> str:
    dt = dt.astimezone(UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def usage(input_tokens: int, output_tokens: int, cost: float, cache_read: int = 0, cache_write: int = 0) -> dict:
    """`usage` as Pi writes it on an assistant message."""
    return pi_lines.usage(input_tokens, output_tokens, cache_read, cache_write, {"total": cost})


def encode_cwd(cwd: str) -> str:
    """Pi's per-project folder name for a cwd (lossy; the header holds the real cwd)."""
    return "--" + cwd.lstrip("/\\").replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


class Journal:
    """A Pi session journal being written: each method appends one line and returns its id."""

    def __init__(
        self,
        sessions_dir: Path,
        cwd: str,
        *,
        version: int = 3,
        start: datetime | None = None,
        session_id: str | None = None,
        path: Path | None = None,
        parent_session: str | None = None,
        header: bool = True,
    ):
        self.cwd = cwd
        self.version = version
        self.session_id = session_id or str(uuid.uuid4())
        self.now = start or datetime.now(UTC) - timedelta(hours=1)
        if path is None:
            stamp = iso(self.now).replace(":", "-").replace(".", "-")
            path = Path(sessions_dir) / encode_cwd(cwd) / f"{stamp}_{self.session_id}.jsonl"
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.last_id: str | None = None
        self.call_ids: list[str] = []
        self.lines = 0
        self._counter = 0
        if header:
            self.header(parent_session=parent_session)

    # -- plumbing
    def tick(self, seconds: float = 1.0) -> str:
        self.now += timedelta(seconds=seconds)
        return iso(self.now)

    def write_line(self, obj: dict) -> None:
        self.append_bytes(pi_lines.dumps(obj))

    def append_bytes(self, data: bytes) -> None:
        with open(self.path, "ab") as fh:
            fh.write(data)
        self.lines += data.count(b"\n")

    def _new_id(self) -> str:
        self._counter += 1
        return uuid.uuid4().hex[:8]

    def entry(self, obj: dict, seconds: float = 1.0) -> str:
        """Append an entry line with Pi's common keys; version 1 lines carry no ids."""
        type_ = obj.pop("type")
        ts = self.tick(seconds)
        if self.version >= 2:
            entry_id = self._new_id()
            at = pi_lines.At(entry_id, self.last_id, ts)
        else:
            entry_id = f"L{self.lines + 1}"
            at = pi_lines.At(None, None, ts)
        self.write_line(pi_lines.entry(type_, at, **obj))
        self.last_id = entry_id
        return entry_id

    def _ms(self) -> int:
        return int(self.now.timestamp() * 1000)

    # -- line types
    def header(self, parent_session: str | None = None, **extra) -> None:
        """The session line; `extra` adds keys or replaces them (a hostile `version` in its place)."""
        version = extra.pop("version", self.version)
        self.write_line(
            pi_lines.header(
                self.session_id, iso(self.now), self.cwd, version=version, parent_session=parent_session, **extra
            )
        )

    def message(self, message: dict, seconds: float = 1.0) -> str:
        """A message entry; a message without a `timestamp` gets the entry's time, in milliseconds."""
        message = dict(message)
        message.setdefault("timestamp", self._ms() + int(seconds * 1000))
        return self.entry({"type": "message", "message": message}, seconds)

    def _next_ms(self, seconds: float = 1.0) -> int:
        """The time, in milliseconds, of the entry `message` writes next."""
        return self._ms() + int(seconds * 1000)

    def user(self, text: str | None = None, *, images: int = 0, as_string: bool = False) -> str:
        if as_string:
            return self.message(pi_lines.user(text, self._next_ms()))
        content = [{"type": "text", "text": text}] if text is not None else []
        content += [
            {"type": "image", "data": "iVBORw0KGgo" + "QUFB" * 200, "mimeType": "image/png"} for _ in range(images)
        ]
        return self.message(pi_lines.user(content, self._next_ms()))

    def assistant(
        self,
        text: str | None = None,
        *,
        thinking: str | None = None,
        signature: str | None = None,
        redacted_thinking: str | None = None,
        tool_calls: list[tuple] = (),
        stop: str | None = None,
        model: str = "claude-sonnet-4-5",
        provider: str = "anthropic",
        usage: dict | None = None,
    ) -> str:
        """An assistant message; the ids of its tool calls are in `call_ids` afterwards. `usage` as
        Pi writes it (default: 2775 in, 141 out, $0.0104)."""
        content: list[dict] = []
        if thinking is not None:
            block = {"type": "thinking", "thinking": thinking}
            if signature:
                block["thinkingSignature"] = signature
            content.append(block)
        if redacted_thinking is not None:
            content.append(
                {
                    "type": "thinking",
                    "thinking": "[Reasoning redacted]",
                    "thinkingSignature": redacted_thinking,
                    "redacted": True,
                }
            )
        if text is not None:
            content.append({"type": "text", "text": text})
        self.call_ids = []
        for name, args, *call_id in tool_calls:  # (name, arguments) or (name, arguments, call id)
            self.call_ids.append(call_id[0] if call_id else "toolu_" + uuid.uuid4().hex[:20])
            content.append(pi_lines.tool_call(self.call_ids[-1], name, args))
        default_cost = {"input": 0.0083, "output": 0.0021, "cacheRead": 0, "cacheWrite": 0, "total": 0.0104}
        return self.message(
            pi_lines.assistant(
                content,
                api="anthropic-messages",
                provider=provider,
                model=model,
                usage=usage or pi_lines.usage(2775, 141, 0, 0, default_cost),
                stop_reason=stop or ("toolUse" if tool_calls else "stop"),
                timestamp_ms=self._next_ms(),
                response_id="msg_" + uuid.uuid4().hex[:24],
            )
        )

    def tool_result(
        self,
        tool: str,
        text: str,
        *,
        images: int = 0,
        is_error: bool = False,
        call_id: str | None = None,
        details: dict | None = None,
    ) -> str:
        """A tool result, answering `call_id` (an id from `call_ids`) or a call id of its own."""
        content = [{"type": "text", "text": text}]
        content += [
            {"type": "image", "data": "iVBORw0KGgo" + "QkJC" * 200, "mimeType": "image/png"} for _ in range(images)
        ]
        call_id = call_id or "toolu_" + uuid.uuid4().hex[:20]
        return self.message(pi_lines.tool_result(call_id, tool, content, is_error, self._next_ms(), details))

    def bash(self, command: str, output: str, exit_code: int = 0) -> str:
        return self.message(pi_lines.bash_execution(command, output, exit_code, self._next_ms()))

    def hook_message(self, custom_type: str, text: str, role: str = "custom") -> str:
        return self.message(pi_lines.custom_role(custom_type, text, True, self._next_ms(), role=role))

    def custom_message(self, custom_type: str, content, details: dict | None = None) -> str:
        own = {"customType": custom_type, "content": content, "display": True}
        if details is not None:
            own["details"] = details
        return self.entry({"type": "custom_message", **own})

    def custom_state(self, custom_type: str, data: dict) -> str:
        return self.entry({"type": "custom", "customType": custom_type, "data": data})

    def compaction(self, summary: str, tokens_before: int = 175004) -> str:
        kept = (
            {"firstKeptEntryId": self.last_id} if self.version >= 2 else {"firstKeptEntryIndex": max(self.lines - 2, 1)}
        )
        return self.entry(
            {
                "type": "compaction",
                "summary": summary,
                **kept,
                "tokensBefore": tokens_before,
                "details": {"readFiles": [], "modifiedFiles": []},
                "fromHook": False,
            }
        )

    def branch_summary(self, summary: str, from_id: str | None = None) -> str:
        """A branch summary; Pi writes it under the entry navigated to, which `fromId` names too."""
        return self.entry(
            {
                "type": "branch_summary",
                "fromId": from_id or self.last_id,
                "summary": summary,
                "details": {"readFiles": [], "modifiedFiles": []},
                "fromHook": False,
            }
        )

    def model_change(self, model: str = "gpt-5") -> str:
        return self.entry({"type": "model_change", "provider": "openai", "modelId": model})

    def thinking_level_change(self, level: str = "high") -> str:
        return self.entry({"type": "thinking_level_change", "thinkingLevel": level})

    def label(self, target: str, label: str) -> str:
        return self.entry({"type": "label", "targetId": target, "label": label})

    def session_info(self, name: str) -> str:
        return self.entry({"type": "session_info", "name": name})

    def branch_from(self, entry_id: str) -> None:
        """Continue from an older entry, as Pi's /tree does: the next line's parent is `entry_id`."""
        self.last_id = entry_id

    def set_mtime(self, when: datetime) -> None:
        ts = when.timestamp()
        os.utime(self.path, (ts, ts))


def make_corpus(new_journal, sessions: int, turns: int) -> list[Journal]:
    """`sessions` journals over three projects, each of `turns` turns (user, assistant with a
    tool call, a 30-line tool result): a corpus large enough to come in several batches."""
    words = (
        "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi "
        "rho sigma tau upsilon phi chi psi omega"
    ).split()
    out = []
    for s in range(sessions):
        j = new_journal(f"Apps/proj{s % 3}/sub{s}")
        for t in range(turns):
            w = " ".join(words[(s * 7 + t + k) % len(words)] for k in range(40))
            j.user(f"turn {t} of session {s}: {w}")
            j.assistant(f"answer {t} {w}", tool_calls=[("bash", {"command": f"echo {t}"})])
            j.tool_result("bash", (w + "\n") * 30)
        out.append(j)
    return out
