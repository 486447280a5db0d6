"""Generate a corpus of session journals written by the REAL Pi (the pinned 0.73.1).

The scripted model (tests/scripted_model.py) plays the LLM; Pi runs in RPC mode
(`pi --mode rpc`, JSON commands on stdin) or print mode (`pi -p`) with its own
tools, a tiny extension of ours (a tool, commands that label, navigate the tree and
send a custom message) and an agent folder under a root folder of our choosing.
What comes out is what Pi wrote: nothing here edits a journal.

    cd tests && python -m support.real_pi_corpus --out fixtures/real_pi

writes ``<out>/sessions/--<encoded cwd>--/<ts>_<uuid>.jsonl`` and ``<out>/corpus.json``,
which names the root the journals' absolute paths start with and says which journal
covers what. ``support.real_pi.copy_corpus`` copies it for a test, moving the root.

Needs node, the pinned Pi (`npm ci --prefix datasette_pi_memory/server/pi_extension`), ripgrep (`rg`,
for the grep tool) and fd (`fd`, or Debian's `fdfind`, for the find tool).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import queue
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support import scripted_model
from support.scripted_model import MODEL_ID, PROVIDER, Call, ScriptedModel, Text, ToolCalls, find_pi

PI_VERSION = scripted_model.PI_VERSION
SECOND_MODEL = "scripted-reasoner"  # a second model of the same provider, for model_change
STEP_TIMEOUT = 90  # seconds any one RPC step may take
TOOLS = "read,bash,edit,write,grep,find,ls,fixture_lookup"

# A tiny extension: a tool the model can call, and commands (sent as RPC prompts) for what
# RPC has no command of its own: a custom message, a label, /tree navigation with a summary.
EXTENSION = r"""
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";

export default function (pi: ExtensionAPI) {
  pi.registerTool({
    name: "fixture_lookup",
    label: "Fixture lookup",
    description: "Look up a fact about the fixture project by key",
    parameters: Type.Object({ key: Type.String({ description: "What to look up" }) }),
    async execute(_toolCallId, params) {
      return {
        content: [{ type: "text", text: `fixture fact for ${params.key}: the answer is 42` }],
        details: { key: params.key, answer: 42 },
      };
    },
  });

  pi.registerCommand("corpus-note", {
    description: "Send a custom message and store extension state",
    handler: async (args, _ctx) => {
      pi.sendMessage({
        customType: "corpus-note",
        content: `Note from the fixture extension: ${args}`,
        display: true,
        details: { source: "corpus_fixture", words: args.split(" ").length },
      });
      pi.appendEntry("corpus-state", { notes: 1, last: args });
    },
  });

  pi.registerCommand("corpus-label", {
    description: "corpus-label ENTRY_ID LABEL: label an entry",
    handler: async (args, _ctx) => {
      const [entryId, ...rest] = args.trim().split(" ");
      pi.setLabel(entryId, rest.join(" ") || undefined);
    },
  });

  pi.registerCommand("corpus-tree", {
    description: "corpus-tree ENTRY_ID [LABEL]: navigate the tree there, summarising the branch left",
    handler: async (args, ctx) => {
      const [entryId, label] = args.trim().split(" ");
      await ctx.navigateTree(entryId, { summarize: true, label: label || undefined });
    },
  });
}
"""


# -- the scripted model, plus reasoning ("thinking") deltas and usage details --------------


@dataclass
class ThinkingText(Text):
    """A final answer preceded by reasoning, streamed as `reasoning_content` deltas."""

    thinking: str = ""


@dataclass
class ThinkingToolCalls(ToolCalls):
    thinking: str = ""


_plain_chunks = scripted_model._chunks


def _chunks_with_thinking(turn: Any, body: dict) -> list[dict]:
    chunks = _plain_chunks(turn, body)
    thinking = getattr(turn, "thinking", "")
    if thinking:
        first = chunks[0]
        extra = {**first, "choices": [{"index": 0, "delta": {"reasoning_content": thinking}, "finish_reason": None}]}
        chunks.insert(1, extra)
    return chunks


def _usage(prompt: int, completion: int, cached: int = 0) -> dict:
    """Usage as an OpenAI-compatible server reports it (cached tokens are part of the prompt's)."""
    details = {"cached_tokens": cached}
    return {"prompt_tokens": prompt, "completion_tokens": completion, "prompt_tokens_details": details}


def _summariser(history: str, turn_prefix: str) -> Callable[[dict], Text]:
    """A turn answering either of compaction's two requests (which may come in either order)."""

    def turn(body: dict) -> Text:
        return Text(turn_prefix if "PREFIX of a turn" in json.dumps(body) else history)

    return turn


def _models_json(model: ScriptedModel) -> dict:
    data = model.models_json()
    provider = data["providers"][PROVIDER]
    first = provider["models"][0]
    first["input"] = ["text", "image"]
    first["cost"] = {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}  # $ per million tokens
    second = {**first, "id": SECOND_MODEL, "name": "Scripted reasoner", "reasoning": True}
    second["cost"] = {"input": 1.0, "output": 5.0, "cacheRead": 0.1, "cacheWrite": 1.25}
    provider["models"].append(second)
    return data


def tiny_png() -> bytes:
    """A 2x2 PNG, made here (deterministic, 70-odd bytes)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes([255, 0, 0, 0, 0, 255]) for _ in range(2))
    ihdr = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


# -- the real Pi in RPC mode --------------------------------------------------------------


class PiError(RuntimeError):
    pass


class RpcPi:
    """One `pi --mode rpc` process: send commands, wait for responses and events (bounded)."""

    def __init__(self, pi: Path, cwd: Path, env: dict, log: Path, extra: list[str] | None = None):
        args = [str(pi), "--mode", "rpc", "--provider", PROVIDER, "--model", MODEL_ID, "--tools", TOOLS]
        self._stderr = log.open("a")
        self.proc = subprocess.Popen(
            args + (extra or []),
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
        )
        self.events: list[dict] = []
        self._queue: queue.Queue = queue.Queue()
        self._n = 0
        threading.Thread(target=self._read, name="pi-rpc-reader", daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.rstrip("\r\n")
            if not line:
                continue
            try:
                self._queue.put(json.loads(line))
            except ValueError:
                continue
        self._queue.put(None)

    def _next(self, deadline: float, what: str) -> dict:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise PiError(f"timed out waiting for {what}")
        try:
            event = self._queue.get(timeout=remaining)
        except queue.Empty:
            raise PiError(f"timed out waiting for {what}") from None
        if event is None:
            raise PiError(f"pi exited ({self.proc.poll()}) while waiting for {what}")
        self.events.append(event)
        return event

    def send(self, command: dict) -> str:
        self._n += 1
        cid = f"corpus-{self._n}"
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({**command, "id": cid}) + "\n")
        self.proc.stdin.flush()
        return cid

    def wait_for(
        self, predicate: Callable[[dict], bool], what: str, since: int | None = None, timeout: float = STEP_TIMEOUT
    ) -> dict:
        """The first event matching `predicate`: among those seen from index `since` on, else the next ones."""
        if since is not None:
            for event in self.events[since:]:
                if predicate(event):
                    return event
        deadline = time.monotonic() + timeout
        while True:
            event = self._next(deadline, what)
            if predicate(event):
                return event

    def command(self, command: dict, timeout: float = STEP_TIMEOUT) -> dict:
        cid = self.send(command)
        resp = self.wait_for(
            lambda e: e.get("type") == "response" and e.get("id") == cid, command["type"], timeout=timeout
        )
        if not resp.get("success"):
            raise PiError(f"{command['type']} failed: {resp.get('error')}")
        return resp.get("data") or {}

    def prompt(self, message: str, images: list[dict] | None = None, *, run: bool = True) -> None:
        """Send a prompt; with `run`, wait until the agent has finished (agent_end)."""
        start = len(self.events)
        cmd: dict[str, Any] = {"type": "prompt", "message": message}
        if images:
            cmd["images"] = images
        self.command(cmd)
        if run:
            self.wait_for(lambda e: e.get("type") == "agent_end", f"agent_end after {message!r}", since=start)

    def state(self) -> dict:
        return self.command({"type": "get_state"})

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._stderr.close()


# -- the generator ------------------------------------------------------------------------


def _journal_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _entries(path: Path, kind: str | None = None, role: str | None = None) -> list[dict]:
    out = []
    for e in _journal_lines(path)[1:]:
        if kind and e.get("type") != kind:
            continue
        if role and (e.get("message") or {}).get("role") != role:
            continue
        out.append(e)
    return out


def _fd_shim(bin_dir: Path) -> None:
    """Put `fd` on PATH: the real one, or Debian's `fdfind`; drop `--no-require-git` if it is too old."""
    fd = shutil.which("fd") or shutil.which("fdfind")
    if fd is None:
        raise PiError("fd is not installed (the find tool needs it): apt-get install fd-find")
    help_text = subprocess.run([fd, "--help"], capture_output=True, text=True, timeout=30).stdout
    shim = bin_dir / "fd"
    if "--no-require-git" in help_text:
        shim.symlink_to(fd)
        return
    shim.write_text(
        "#!/bin/sh\n# fd older than 8.7 lacks --no-require-git, which Pi's find tool passes\n"
        'for a in "$@"; do shift; [ "$a" = "--no-require-git" ] || set -- "$@" "$a"; done\n'
        f'exec {fd} "$@"\n'
    )
    shim.chmod(0o755)


def tools_missing() -> str:
    """Why the corpus cannot be generated here ('' when it can)."""
    pi, why = find_pi()
    if pi is None:
        return why
    if shutil.which("rg") is None:
        return "ripgrep (`rg`) is not installed (Pi's grep tool needs it): pip install ripgrep"
    if shutil.which("fd") is None and shutil.which("fdfind") is None:
        return "fd is not installed (Pi's find tool needs it): apt-get install fd-find"
    return ""


APP_PY = """\
def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b
"""

NOTES_MD = """\
# Notes

- the parser lives in app.py
- TODO: handle division
"""


class Generator:
    def __init__(self, root: Path, pi: Path):
        self.root = root
        self.pi = pi
        self.agent = root / "agent"
        self.home = root / "home"
        self.alpha = root / "work" / "alpha"
        self.beta = root / "work" / "beta"
        self.bin = root / "bin"
        self.log = root / "pi-stderr.log"
        self.model = ScriptedModel()
        self.journals: list[dict] = []
        self.observations: dict[str, Any] = {}  # facts seen while generating, kept in corpus.json

    # -- setup
    def setup(self) -> None:
        for d in (self.agent / "extensions", self.home, self.alpha / "src", self.beta, self.bin):
            d.mkdir(parents=True, exist_ok=True)
        (self.alpha / "src" / "app.py").write_text(APP_PY)
        (self.alpha / "NOTES.md").write_text(NOTES_MD)
        (self.beta / "README.md").write_text("# beta\n\nA second project.\n")
        (self.agent / "extensions" / "corpus_fixture.ts").write_text(EXTENSION.lstrip())
        # keep little of the conversation on compaction, so a short session can be compacted
        settings = {"compaction": {"enabled": True, "keepRecentTokens": 60}, "retry": {"enabled": False}}
        (self.agent / "settings.json").write_text(json.dumps(settings, indent=2))
        _fd_shim(self.bin)
        self.model.start()
        # the aborted answer's connection is closed by Pi mid-stream: no traceback for that broken pipe
        assert self.model._server is not None
        self.model._server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        (self.agent / "models.json").write_text(json.dumps(_models_json(self.model), indent=2))

    @property
    def env(self) -> dict:
        env = dict(os.environ)
        for key in ("PIMEM_DB", "PIMEM_SESSIONS_DIRS"):
            env.pop(key, None)
        env.update(
            PI_CODING_AGENT_DIR=str(self.agent),
            HOME=str(self.home),
            PI_OFFLINE="1",
            NO_COLOR="1",
            PATH=f"{self.bin}{os.pathsep}{env.get('PATH', '')}",
        )
        return env

    def rpc(self, cwd: Path) -> RpcPi:
        return RpcPi(self.pi, cwd, self.env, self.log)

    def record(self, path: str | Path, project: str, roles: list[str], covers: list[str]) -> Path:
        path = Path(path)
        if not path.is_file():
            raise PiError(f"Pi did not write {path} ({roles})")
        self.journals.append({"path": path, "project": project, "roles": roles, "covers": covers})
        return path

    def check_model(self, step: str) -> None:
        if self.model.exhausted or self.model.errors or self.model.turns:
            raise PiError(
                f"after {step}: the scripted model was asked {self.model.exhausted} time(s) more than scripted, "
                f"{len(self.model.turns)} turn(s) left unused, errors {self.model.errors}"
            )

    # -- sessions
    def tools_tour(self) -> None:
        m = self.model
        m.add(
            ThinkingToolCalls(
                [
                    Call("read", {"path": "src/app.py"}),
                    Call("ls", {}),
                    Call("grep", {"pattern": "def ", "path": "src"}),
                    Call("find", {"pattern": "*.md"}),
                    Call("bash", {"command": "wc -l src/app.py"}),
                ],
                text="Let me look around the project.",
                thinking="The user wants a tour; start with every read-only tool.",
                usage=_usage(1200, 80, cached=800),
            ),
            ToolCalls(
                [
                    Call("write", {"path": "src/div.py", "content": "def div(a, b):\n    return a / b\n"}),
                    Call("fixture_lookup", {"key": "division"}),
                ],
                usage=_usage(1900, 60, cached=1200),
            ),
            ThinkingText(
                "I read app.py, listed and searched the project, and wrote src/div.py.",
                thinking="Everything worked; summarise.",
                usage={"prompt_tokens": 2300, "completion_tokens": 40},
            ),
        )
        pi = self.rpc(self.alpha)
        try:
            pi.prompt("Give me a tour of this project and add a division helper.")
            path = pi.state()["sessionFile"]
        finally:
            pi.close()
        self.check_model("tools_tour")
        self.record(
            path,
            "alpha",
            ["all_tools", "extension_tool", "thinking", "usage_with_cache"],
            ["read", "ls", "grep", "find", "bash", "write", "fixture_lookup (extension tool)", "thinking blocks"],
        )

    def edit_heavy(self) -> None:
        m = self.model
        m.add(
            ToolCalls([Call("edit", {"path": "src/app.py", "edits": [{"oldText": "a * b", "newText": "b * a"}]})]),
            ToolCalls(
                [
                    Call(
                        "edit",
                        {
                            "path": "src/app.py",
                            "edits": [
                                {"oldText": "def add(a, b):", "newText": "def add(a: int, b: int) -> int:"},
                                {"oldText": "def sub(a, b):", "newText": "def sub(a: int, b: int) -> int:"},
                                {"oldText": "    return b * a\n", "newText": "    return b * a  # commutes\n"},
                            ],
                        },
                    )
                ]
            ),
            ToolCalls(
                [
                    Call(
                        "edit",
                        {
                            "path": "NOTES.md",
                            # some models send `edits` as a JSON string; Pi parses it (prepareArguments)
                            "edits": json.dumps([{"oldText": "TODO: handle division", "newText": "DONE: division"}]),
                        },
                    )
                ]
            ),
            Text("Added type hints in src/app.py and updated NOTES.md."),
        )
        pi = self.rpc(self.alpha)
        try:
            pi.prompt("Add type hints to app.py and mark the division TODO done.")
            path = pi.state()["sessionFile"]
        finally:
            pi.close()
        self.check_model("edit_heavy")
        self.record(
            path,
            "alpha",
            ["edit_heavy", "edit_json_string"],
            ["edit with one replacement", "edit with three replacements", "edit whose edits is a JSON string"],
        )

    def with_failures(self) -> None:
        m = self.model
        m.add(
            ToolCalls(
                [
                    Call("edit", {"path": "src/app.py", "edits": [{"oldText": "def nowhere():", "newText": "x"}]}),
                    Call("bash", {"command": "echo checking; ls no-such-dir; exit 3"}),
                    Call("read", {"path": "missing.txt"}),
                ]
            ),
            Text("Three things failed: the edit, the command and the read."),
        )
        arrived, release = threading.Event(), threading.Event()

        def stalled(_body: dict) -> Text:
            arrived.set()
            release.wait(STEP_TIMEOUT)
            return Text("(too late: this answer was aborted)")

        m.add(stalled)
        m.add(ToolCalls([Call("bash", {"command": "sleep 60; echo never"})]))
        m.add(Text("Fine, stopping here."))
        pi = self.rpc(self.alpha)
        try:
            pi.prompt("Try a few things that will fail.")
            # an assistant message aborted while it streams
            mark = len(pi.events)
            pi.prompt("Write me a long essay.", run=False)
            if not arrived.wait(STEP_TIMEOUT):
                raise PiError("the model never got the essay request")
            pi.command({"type": "abort"})
            pi.wait_for(lambda e: e.get("type") == "agent_end", "agent_end after abort", since=mark)
            release.set()
            # a tool call aborted while the tool runs
            mark = len(pi.events)
            pi.prompt("Run the slow command.", run=False)
            pi.wait_for(
                lambda e: e.get("type") == "tool_execution_start" and e.get("toolName") == "bash",
                "the slow bash to start",
                since=mark,
            )
            pi.command({"type": "abort"})
            pi.wait_for(lambda e: e.get("type") == "agent_end", "agent_end after aborting bash", since=mark)
            pi.prompt("Never mind, stop.")
            path = pi.state()["sessionFile"]
        finally:
            release.set()
            pi.close()
        self.check_model("with_failures")
        self.record(
            path,
            "alpha",
            ["with_failures", "aborted"],
            [
                "edit whose oldText is absent (isError)",
                "bash exiting 3 (isError)",
                "read of a missing file (isError)",
                "assistant message aborted while streaming (stopReason aborted)",
                "bash tool call aborted while running",
            ],
        )

    def rich(self) -> None:
        m = self.model
        pi = self.rpc(self.alpha)
        try:
            pi.command({"type": "set_session_name", "name": "Fixture: the rich session"})
            pi.command({"type": "bash", "command": "echo hello from the user; ls src"})
            pi.command({"type": "bash", "command": "ls no-such-dir"})
            m.add(Text("I see the user ran ls; src holds app.py and div.py."))
            pi.prompt("What did my commands show?")
            m.add(Text("A tiny red and blue image."))
            img = {"type": "image", "data": base64.b64encode(tiny_png()).decode(), "mimeType": "image/png"}
            pi.prompt("What is in this picture?", images=[img])
            pi.command({"type": "set_model", "provider": PROVIDER, "modelId": SECOND_MODEL})
            pi.command({"type": "set_thinking_level", "level": "high"})
            m.add(ThinkingText("Division by zero raises ZeroDivisionError.", thinking="Think about b == 0 first."))
            pi.prompt("What happens when b is zero?")
            pi.prompt("/corpus-note remember to test division by zero", run=False)
            m.add(Text("Noted."))
            pi.prompt("Thanks.")
            path = Path(pi.state()["sessionFile"])
            users = _entries(path, "message", "user")
            pi.prompt(f"/corpus-label {users[0]['id']} first-question", run=False)
            # /tree: back to the first answer, summarising the branch being left
            first_answer = _entries(path, "message", "assistant")[0]
            m.add(Text("## Goal\nThe user asked about an image and division by zero.\n\n## Progress\n- answered"))
            pi.prompt(f"/corpus-tree {first_answer['id']} before-image", run=False)
            m.add(Text("Taking the other route: we skip the image."))
            pi.prompt("Let's go another way.")
            # /tree without a summary is not reachable from RPC; label the new leaf too
            leaf = _entries(path, "message", "assistant")[-1]
            pi.prompt(f"/corpus-label {leaf['id']} other-route", run=False)
            pi.prompt(f"/corpus-label {users[0]['id']}", run=False)  # clears the first label
            path_now = pi.state()["sessionFile"]
        finally:
            pi.close()
        self.check_model("rich")
        self.record(
            path_now,
            "alpha",
            [
                "rich",
                "bash_execution",
                "session_name",
                "model_change",
                "thinking_level_change",
                "image",
                "custom_message",
                "custom_entry",
                "label",
                "branch_summary",
                "tree_navigation",
            ],
            [
                "user !cmd (bashExecution, exit 0 and non-zero)",
                "session_info name",
                "model_change to a second model",
                "thinking_level_change to high",
                "user message with an image block",
                "custom_message and custom entries from the extension",
                "labels set and cleared",
                "/tree navigation with a branch_summary",
            ],
        )

    def compacted(self) -> None:
        m = self.model
        pi = self.rpc(self.alpha)
        try:
            for i, topic in enumerate(["parsing", "testing", "packaging"]):
                m.add(Text(f"Answer {i + 1}: some thoughts about {topic}. " + "Details follow. " * 20))
                pi.prompt(f"Tell me about {topic}.")
            # the cut falls inside the last turn: Pi asks for a history summary and a turn-prefix summary
            summaries = _summariser(
                "## Goal\nLearn about parsing, testing and packaging.\n\n## Done\n- three answers given",
                "## Original Request\nTell me about packaging.",
            )
            m.add(summaries, summaries)
            pi.command({"type": "compact", "customInstructions": "Keep it short."})
            # auto-compaction: an answer reporting a context nearly as large as the window
            m.add(Text("A very long context indeed.", usage={"prompt_tokens": 120000, "completion_tokens": 20}))
            m.add(Text("## Goal\nLearn about packaging.\n\n## Done\n- compacted twice"))
            start = len(pi.events)
            pi.prompt("And now something that fills the context.")
            pi.wait_for(lambda e: e.get("type") == "compaction_end", "auto-compaction", since=start)
            m.add(Text("Still here after compaction."))
            pi.prompt("Are you still there?")
            path = pi.state()["sessionFile"]
        finally:
            pi.close()
        self.check_model("compacted")
        self.record(
            path,
            "alpha",
            ["compacted", "auto_compacted"],
            ["manual compaction (RPC compact)", "auto-compaction after large reported usage"],
        )

    def fork_and_clone(self) -> None:
        m = self.model
        pi = self.rpc(self.beta)
        try:
            m.add(Text("Beta is a second project with a README."))
            pi.prompt("What is this project?")
            m.add(Text("You could add a CHANGELOG."))
            pi.prompt("What should I add next?")
            parent = Path(pi.state()["sessionFile"])
            second_user = _entries(parent, "message", "user")[1]
            pi.command({"type": "fork", "entryId": second_user["id"]})
            fork_path = Path(pi.state()["sessionFile"])
            self.observations["fork_file_exists_before_next_prompt"] = fork_path.is_file()
            m.add(Text("In the fork: add a LICENSE instead."))
            pi.prompt("What else could I add?")
            pi.command({"type": "switch_session", "sessionPath": str(parent)})
            pi.command({"type": "clone"})
            clone_path = Path(pi.state()["sessionFile"])
            self.observations["clone_file_exists_before_next_prompt"] = clone_path.is_file()
            m.add(Text("In the clone: the CHANGELOG it is."))
            pi.prompt("Go on with the CHANGELOG.")
        finally:
            pi.close()
        self.check_model("fork_and_clone")
        self.record(parent, "beta", ["fork_parent", "clone_parent"], ["two turns; forked and cloned"])
        self.record(fork_path, "beta", ["fork_child"], ["RPC fork before the second user message, then a turn"])
        self.record(clone_path, "beta", ["clone_child"], ["RPC clone of the whole branch, then a turn"])

    def same_minute(self) -> None:
        """Two print-mode (`pi -p`) sessions started a moment apart: their UUIDv7 ids share 8 chars."""
        for _attempt in range(3):
            paths = []
            for word in ("first", "second"):
                before = set((self.agent / "sessions").rglob("*.jsonl"))
                self.model.add(Text(f"The {word} quick answer."))
                proc = subprocess.run(
                    [str(self.pi), "-p", "--provider", PROVIDER, "--model", MODEL_ID, f"A {word} quick question."],
                    cwd=self.beta,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=STEP_TIMEOUT,
                )
                if proc.returncode != 0:
                    raise PiError(f"pi -p exited {proc.returncode}: {proc.stderr[-2000:]}")
                fresh = sorted(set((self.agent / "sessions").rglob("*.jsonl")) - before)
                if len(fresh) != 1:
                    raise PiError(f"expected one new journal from pi -p, got {fresh}")
                paths.append(fresh[0])
            self.check_model("same_minute")
            ids = [_journal_lines(p)[0]["id"] for p in paths]
            if ids[0][:8] == ids[1][:8]:
                break
            for p in paths:  # crossed a 65-second boundary of the UUIDv7 timestamp: try again
                p.unlink()
        else:
            raise PiError("could not start two sessions with the same 8-character id prefix")
        self.record(paths[0], "beta", ["same_minute_a", "print_mode"], ["pi -p session"])
        self.record(paths[1], "beta", ["same_minute_b"], ["pi -p session started right after same_minute_a"])

    # -- all
    def run(self) -> None:
        # the server looks `_chunks` up at each request: reasoning deltas only while we generate
        scripted_model._chunks = _chunks_with_thinking
        self.setup()
        try:
            self.tools_tour()
            self.edit_heavy()
            self.with_failures()
            self.rich()
            self.compacted()
            self.fork_and_clone()
            self.same_minute()
        finally:
            self.model.stop()
            scripted_model._chunks = _plain_chunks

    def write(self, out: Path) -> dict:
        """Copy the journals to `out` (an agent folder layout) and write corpus.json."""
        sessions = self.agent / "sessions"
        if (out / "sessions").exists():
            shutil.rmtree(out / "sessions")
        out.mkdir(parents=True, exist_ok=True)
        listed = {j["path"] for j in self.journals}
        stray = sorted(set(sessions.rglob("*.jsonl")) - listed)
        if stray:
            raise PiError(f"Pi wrote journals the generator did not record: {stray}")
        journals = []
        for j in self.journals:
            rel = j["path"].relative_to(sessions)
            dest = out / "sessions" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(j["path"], dest)
            file = f"sessions/{rel.as_posix()}"
            journals.append({"file": file, "project": j["project"], "roles": j["roles"], "covers": j["covers"]})
        corpus = {
            "pi_version": PI_VERSION,
            "generator": "tests/support/real_pi_corpus.py",
            "root": str(self.root),
            "agent_dir": str(self.agent),
            "projects": {"alpha": str(self.alpha), "beta": str(self.beta)},
            "journals": journals,
            "observations": self.observations,
        }
        (out / "corpus.json").write_text(json.dumps(corpus, indent=2) + "\n")
        return corpus


def generate(out: Path, root: Path | None = None, keep_root: bool = False) -> dict:
    """Drive the real Pi and write the corpus into `out`. Raises PiError when something is missing."""
    why = tools_missing()
    if why:
        raise PiError(why)
    pi, _ = find_pi()
    assert pi is not None
    made = root is None
    if root is None:
        root = Path(tempfile.mkdtemp(prefix="pi-corpus-"))
    root = root.resolve()
    if any(root.iterdir()) if root.exists() else False:
        raise PiError(f"{root} is not empty")
    gen = Generator(root, pi)
    try:
        gen.run()
        return gen.write(out)
    except PiError as exc:
        raise PiError(f"{exc}\n--- pi stderr (tail) ---\n{_tail(gen.log)}") from None
    finally:
        if made and not keep_root:
            shutil.rmtree(root, ignore_errors=True)


def _tail(path: Path, n: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write (sessions/ and corpus.json)")
    parser.add_argument("--root", type=Path, help="an empty or new folder to run Pi in (default: a temp folder)")
    parser.add_argument("--keep-root", action="store_true", help="keep the temp root (projects, agent folder, logs)")
    args = parser.parse_args(argv)
    try:
        corpus = generate(args.out, args.root, args.keep_root)
    except PiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for j in corpus["journals"]:
        print(f"{j['file']}: {', '.join(j['roles'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
