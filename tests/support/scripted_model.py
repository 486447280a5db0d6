"""A scripted OpenAI-compatible chat-completions server for driving the real Pi in tests.

The server binds to 127.0.0.1 on a free port and answers `POST /v1/chat/completions`
from a script: a queue of turns, one consumed per request. A turn is

- ``Text("...")``: a final assistant message (``finish_reason: "stop"``);
- ``ToolCalls([Call("bash", {"command": "ls"}), ...])``: a tool-calling turn
  (``finish_reason: "tool_calls"``);
- a callable ``f(request_body) -> Text | ToolCalls``, for turns that depend on what
  the model was sent (e.g. an id found in the previous tool result).

Pi always streams, so answers are Server-Sent Events; a non-streaming request gets a
plain chat.completion object. Every request body is recorded in ``requests`` so a test
can see the tool results Pi sent back. When the script runs out, the server answers
with a short text and counts it in ``exhausted``; tests should assert it stayed 0.

Usage::

    with ScriptedModel() as model:
        model.add(ToolCalls([Call("bash", {"command": "echo hi"})]), Text("done"))
        ... point Pi's models.json at model.base_url ...
        assert model.exhausted == 0
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL_ID = "scripted-model"
PROVIDER = "scripted"


@dataclass
class Text:
    text: str
    usage: dict[str, int] | None = None


@dataclass
class Call:
    name: str
    arguments: dict[str, Any]
    id: str | None = None


@dataclass
class ToolCalls:
    calls: list[Call]
    text: str = ""
    usage: dict[str, int] | None = None


Turn = Text | ToolCalls | Callable[[dict], Text | ToolCalls]

_ids = itertools.count(1)


@dataclass
class ScriptedModel:
    """The server; a context manager that starts on enter and stops on exit."""

    turns: deque = field(default_factory=deque)
    requests: list[dict] = field(default_factory=list)
    exhausted: int = 0
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- script ------------------------------------------------------------------------
    def add(self, *turns: Turn) -> ScriptedModel:
        with self._lock:
            self.turns.extend(turns)
        return self

    def _next_turn(self, body: dict) -> Text | ToolCalls:
        with self._lock:
            self.requests.append(body)
            turn = self.turns.popleft() if self.turns else None
            if turn is None:
                self.exhausted += 1
        if turn is None:
            return Text("(scripted model: script exhausted)")
        if callable(turn) and not isinstance(turn, (Text, ToolCalls)):
            try:
                turn = turn(body)
            except Exception as exc:  # surface script bugs to the test, not as a hang
                self.errors.append(f"{type(exc).__name__}: {exc}")
                return Text(f"(scripted model: turn raised {type(exc).__name__}: {exc})")
        return turn

    # -- server ------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedModel:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _json(self, status: int, payload: dict) -> None:
                send_json(self, status, payload)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._json(400, {"error": {"message": "body is not JSON"}})
                    return
                turn = model._next_turn(body)
                if body.get("stream"):
                    self._stream(turn, body)
                else:
                    self._json(200, _completion(turn, body))

            def _stream(self, turn: Text | ToolCalls, body: dict) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for chunk in _chunks(turn, body):
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- Pi configuration ----------------------------------------------------------------
    def models_json(self, context_window: int = 128000) -> dict:
        """A `models.json` registering this server as provider `scripted`, model `scripted-model`."""
        return {
            "providers": {
                PROVIDER: {
                    "baseUrl": self.base_url,
                    "api": "openai-completions",
                    "apiKey": "scripted-key",
                    "compat": {
                        "supportsDeveloperRole": False,
                        "supportsReasoningEffort": False,
                        "supportsStore": False,
                        "maxTokensField": "max_tokens",
                    },
                    "models": [
                        {
                            "id": MODEL_ID,
                            "name": "Scripted model",
                            "reasoning": False,
                            "input": ["text"],
                            "contextWindow": context_window,
                            "maxTokens": 4096,
                        }
                    ],
                }
            }
        }


# -- helpers for tests reading what Pi sent ------------------------------------------------


def message_text(message: dict) -> str:
    """The text of a chat message whose content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def tool_results(body: dict) -> list[str]:
    """Texts of every tool-role message in one request, oldest first."""
    return [message_text(m) for m in body.get("messages", []) if m.get("role") == "tool"]


def last_tool_result(body: dict) -> str:
    results = tool_results(body)
    return results[-1] if results else ""


def tool_names(body: dict) -> list[str]:
    return [t.get("function", {}).get("name", "") for t in body.get("tools") or []]


# -- wire format ---------------------------------------------------------------------------

_DEFAULT_USAGE = {"prompt_tokens": 100, "completion_tokens": 10}


def _usage(turn: Text | ToolCalls) -> dict:
    u = dict(turn.usage or _DEFAULT_USAGE)
    u.setdefault("prompt_tokens", 0)
    u.setdefault("completion_tokens", 0)
    u["total_tokens"] = u["prompt_tokens"] + u["completion_tokens"]
    return u


def _tool_call_wire(turn: ToolCalls) -> list[dict]:
    out = []
    for i, call in enumerate(turn.calls):
        out.append(
            {
                "index": i,
                "id": call.id or f"call_{next(_ids):04d}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
        )
    return out


def _chunks(turn: Text | ToolCalls, body: dict) -> list[dict]:
    cid = f"chatcmpl-{next(_ids):06d}"
    base = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", MODEL_ID),
    }

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    if isinstance(turn, ToolCalls):
        if turn.text:
            chunks.append(chunk({"content": turn.text}))
        for call in _tool_call_wire(turn):
            args = call["function"]["arguments"]
            half = len(args) // 2  # split the arguments across two deltas, as real servers do
            first = {**call, "function": {"name": call["function"]["name"], "arguments": args[:half]}}
            chunks.append(chunk({"tool_calls": [first]}))
            chunks.append(chunk({"tool_calls": [{"index": call["index"], "function": {"arguments": args[half:]}}]}))
        chunks.append(chunk({}, "tool_calls"))
    else:
        chunks.append(chunk({"content": turn.text}))
        chunks.append(chunk({}, "stop"))
    chunks.append({**base, "choices": [], "usage": _usage(turn)})
    return chunks


def _completion(turn: Text | ToolCalls, body: dict) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    finish = "stop"
    if isinstance(turn, ToolCalls):
        message["tool_calls"] = _tool_call_wire(turn)
        finish = "tool_calls"
    return {
        "id": f"chatcmpl-{next(_ids):06d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", MODEL_ID),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(turn),
    }


# -- locating the real Pi ------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
EXTENSION_DIR = REPO / "datasette_pi_memory" / "server" / "pi_extension"
PI_VERSION = "0.73.1"


def find_pi() -> tuple[Path | None, str]:
    """The real `pi` executable, and why not when it is absent.

    Looked up in order: `$PIMEM_PI_BIN`; `node_modules/.bin/pi` under
    datasette_pi_memory/server/pi_extension (installed by `npm ci` there) or the repository root; PATH.
    """
    node = shutil.which("node")
    if node is None:
        return (
            None,
            "node is not installed (Pi needs Node 20.6+): "
            "install nodejs, then `npm ci --prefix datasette_pi_memory/server/pi_extension`",
        )
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        major, minor = (int(x) for x in version.lstrip("v").split(".")[:2])
    except (OSError, ValueError, subprocess.SubprocessError):
        return None, "`node --version` failed; Pi needs Node 20.6+"
    if (major, minor) < (20, 6):
        return None, f"node {version} is too old: Pi {PI_VERSION} needs Node 20.6+"
    env = os.environ.get("PIMEM_PI_BIN")
    if env:
        path = Path(os.path.expanduser(env))
        if path.is_file():
            return path, ""
        return None, f"PIMEM_PI_BIN={env} does not exist"
    for base in (EXTENSION_DIR, REPO):
        candidate = base / "node_modules" / ".bin" / "pi"
        if candidate.exists():
            return candidate, ""
    found = shutil.which("pi")
    if found:
        return Path(found), ""
    return None, (
        f"the real Pi is not installed: run `npm ci --prefix datasette_pi_memory/server/pi_extension` "
        f"(installs @mariozechner/pi-coding-agent@{PI_VERSION}) or set PIMEM_PI_BIN"
    )


def pi_package_dir(pi_bin: Path) -> Path | None:
    """The @mariozechner/pi-coding-agent package folder behind a `pi` executable."""
    real = Path(os.path.realpath(pi_bin))
    for parent in real.parents:
        pkg = parent / "package.json"
        if pkg.is_file():
            try:
                if json.loads(pkg.read_text()).get("name") == "@mariozechner/pi-coding-agent":
                    return parent
            except ValueError:
                return None
            return None
    return None


def send_json(handler, status: int, payload: dict) -> None:
    """Answer an http.server request with a JSON body."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
