"""End to end with the REAL Pi: a scripted model drives `pi -p`, the memory_context tool
calls `pimem serve`, and the journals Pi writes are what we assert on. No server is started by
hand: the tool's first call starts it in the background (and the test stops it at its end).

- session 1 (project A): Pi's real bash tool prints a distinctive fact and a secret;
- session 2 (new, project A): memory_context search for the fact, then read on the hit;
  the tool result recorded in session 2's journal holds the fact verbatim, never the secret;
- session 3 (project B): the same search under the default scope does not see project A.

Needs node and the pinned Pi (`npm ci --prefix datasette_pi_memory/server/pi_extension`, or PIMEM_PI_BIN);
skips with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import string
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from support.scripted_model import (
    MODEL_ID,
    PROVIDER,
    Call,
    ScriptedModel,
    Text,
    ToolCalls,
    find_pi,
    last_tool_result,
    tool_names,
)

from datasette_pi_memory.server import pi_tool

pytestmark = pytest.mark.slow  # real processes: pytest -m 'not slow' is the fast loop

PI_TIMEOUT = 180


# ---- helpers ------------------------------------------------------------------------------


def _pimem() -> list[str]:
    exe = Path(sys.executable).with_name("pimem")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("pimem")
    if found:
        return [found]
    return [sys.executable, "-c", "from pimem_index.cli import cli; cli()"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, n: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def _random_word(n: int) -> str:
    return "".join(secrets.choice(string.ascii_lowercase) for _ in range(n))


def _journals(agent: Path) -> list[Path]:
    return sorted((agent / "sessions").rglob("*.jsonl"))


def _lines(journal: Path) -> list[dict]:
    out = []
    for line in journal.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _header(journal: Path) -> dict:
    return _lines(journal)[0]


def _tool_results(journal: Path, tool: str) -> list[dict]:
    """The toolResult messages for one tool, in order: {"text", "isError"}."""
    out = []
    for entry in _lines(journal):
        msg = entry.get("message") or {}
        if entry.get("type") == "message" and msg.get("role") == "toolResult" and msg.get("toolName") == tool:
            text = "".join(c.get("text", "") for c in msg.get("content", []) if c.get("type") == "text")
            out.append({"text": text, "isError": msg.get("isError")})
    return out


# ---- the environment: Pi, pimem serve, token, the tool ---------------------------------------


@pytest.fixture
def pi_bin() -> Path:
    path, why = find_pi()
    if path is None:
        pytest.skip(f"end-to-end Pi test skipped: {why}")
    return path


def _require_pimem_commands(env: dict) -> None:
    """`pimem --help` works and lists serve, token and pi (a missing one is a failure, not a skip)."""
    proc = subprocess.run(_pimem() + ["--help"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, f"`pimem --help` failed:\n{proc.stderr[-2000:]}"
    commands = set(re.findall(r"^\s{2}([a-z][\w-]*)\s", proc.stdout, re.M))
    missing = [c for c in ("serve", "token", "pi") if c not in commands]
    assert not missing, f"pimem lacks {missing}; pimem --help lists: {sorted(commands)}"


class Stack:
    def __init__(self, tmp: Path, pi: Path):
        self.tmp = tmp
        self.pi = pi
        self.agent = tmp / "agent"
        self.home = tmp / "home"
        self.project_a = tmp / "work" / "alpha"
        self.project_b = tmp / "work" / "beta"
        for d in (self.agent, self.home, self.project_a, self.project_b):
            d.mkdir(parents=True)
        self.db = tmp / "index" / "history.sqlite"
        self.db.parent.mkdir()
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server_log = self.agent / "pi-memory" / "server.log"  # the background server's log
        self.token = ""
        self.model = ScriptedModel()

    @property
    def env(self) -> dict:
        env = dict(os.environ)
        env.pop("PIMEM_DB", None)
        env.pop("PIMEM_SESSIONS_DIRS", None)
        env["PI_CODING_AGENT_DIR"] = str(self.agent)
        return env

    def pimem(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(_pimem() + list(args), capture_output=True, text=True, env=self.env, timeout=120)
        if check:
            assert proc.returncode == 0, f"pimem {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
        return proc

    def start(self) -> None:
        """Pi, the scripted model and the installed tool; no server: the tool's first call starts it."""
        _require_pimem_commands(self.env)
        self.model.start()
        (self.agent / "models.json").write_text(json.dumps(self.model.models_json(), indent=2))

        self.pimem("pi", "install", "--url", self.url, "--db", str(self.db), "--no-start")
        cfg = json.loads((self.agent / "pi-memory" / "pi-tool.json").read_text())
        assert cfg["url"].rstrip("/") == self.url
        assert Path(cfg["pimem"]).is_absolute() and "--background" in cfg["serve_args"]
        assert (self.agent / "extensions" / "memory_context.ts").read_text() == pi_tool.extension_source()
        self.token = cfg["token"]
        assert not self.answers(), f"something already answers on {self.url}"

    def answers(self) -> bool:
        try:
            self.api_get("status")
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False
        return True

    def api_get(self, action: str, **params: str) -> dict:
        query = urllib.parse.urlencode(params)
        req = urllib.request.Request(
            f"{self.url}/-/pi-memory/api/{action}?{query}", headers={"Authorization": f"Bearer {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=30) as res:
            return json.loads(res.read())

    def run_pi(self, project: Path, prompt: str) -> subprocess.CompletedProcess:
        env = dict(self.env, HOME=str(self.home), PI_OFFLINE="1", NO_COLOR="1")
        proc = subprocess.run(
            [str(self.pi), "-p", "--provider", PROVIDER, "--model", MODEL_ID, prompt],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=PI_TIMEOUT,
        )
        assert proc.returncode == 0, (
            f"pi exited {proc.returncode}\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-3000:]}\n"
            f"server log:\n{_tail(self.server_log)}"
        )
        return proc

    def new_journal(self, before: set[Path], project: Path) -> Path:
        fresh = [p for p in _journals(self.agent) if p not in before and _header(p).get("cwd") == str(project)]
        assert len(fresh) == 1, f"expected one new journal for {project}, got {fresh}"
        return fresh[0]

    def stop(self) -> None:
        """Stop the server the tool started (if any) and the scripted model."""
        try:
            self.pimem("serve", "stop", check=False)
        finally:
            self.model.stop()


@pytest.fixture
def stack(tmp_path, pi_bin):
    s = Stack(tmp_path, pi_bin)
    try:
        s.start()
        yield s
    finally:
        s.stop()


# ---- the scenario -------------------------------------------------------------------------


def _hits_by_session(search_text: str) -> dict[str, list[tuple[str, str]]]:
    """The tool's hits, {short session id: [(entry id, kind), ...]}: each session's header line
    (`[short id] title · folder · day`), then a line per hit (`  id time kind ...`)."""
    found: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in search_text.splitlines():
        header = re.match(r"\[(\S+)\] ", line)
        if header:
            current = found.setdefault(header.group(1), [])
        hit = re.match(r"  (\S+) [\d:\- ]+? (\w+)", line)
        if hit and current is not None and not line.startswith("    "):
            current.append((hit.group(1), hit.group(2)))
    return found


def _hits_of(search_text: str, session_id: str) -> list[tuple[str, str]]:
    """The hits of the session with that full id (its header names it by a short id within it)."""
    return [hit for short, hits in _hits_by_session(search_text).items() if short in session_id for hit in hits]


def _pick_hit(search_text: str, session_id: str) -> str | None:
    """The id of a search hit from the given session, preferring the bash tool result."""
    mine = _hits_of(search_text, session_id)
    for entry_id, kind in mine:
        if kind.startswith("tool_result"):
            return entry_id
    return mine[0][0] if mine else None


def test_memory_context_end_to_end_with_real_pi(stack):
    word = "quokka" + _random_word(10)
    fact = f"vault codeword: {word}"
    body = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))
    secret = "gh" + "p_" + body
    (stack.project_a / "notes.txt").write_text(f"{fact}\nci login {secret}\n")

    # -- session 1, project A: Pi's real bash tool prints the fact and the secret
    stack.model.add(ToolCalls([Call("bash", {"command": "cat notes.txt"})]), Text("Read the notes."))
    before = set(_journals(stack.agent))
    stack.run_pi(stack.project_a, "Show me the project notes.")
    s1 = stack.new_journal(before, stack.project_a)
    s1_id = _header(s1)["id"]
    [bash_result] = _tool_results(s1, "bash")
    assert fact in bash_result["text"] and secret in bash_result["text"], "session 1 must have produced both"
    stack.pimem("index", "--db", str(stack.db))  # the index exists from before; no server runs yet
    assert not stack.answers()

    # -- session 2, project A: search for the fact, then read the hit
    seen: dict[str, str] = {}

    def read_the_hit(request: dict):
        text = last_tool_result(request)
        seen["search"] = text
        entry_id = _pick_hit(text, s1_id)
        if entry_id is None:
            return Text(f"NO HIT FROM SESSION 1 IN: {text}")
        return ToolCalls([Call("memory_context", {"action": "read", "entryId": entry_id, "sessionId": s1_id})])

    stack.model.add(
        ToolCalls([Call("memory_context", {"action": "search", "query": word})]),
        read_the_hit,
        Text("Found it."),
    )
    before = set(_journals(stack.agent))
    first_s2_request = len(stack.model.requests)
    stack.run_pi(stack.project_a, f"What did we note down about {word} last time?")
    s2 = stack.new_journal(before, stack.project_a)
    assert "memory_context" in tool_names(stack.model.requests[-1]), "Pi must offer the tool to the model"
    results = _tool_results(s2, "memory_context")
    assert len(results) == 2, f"expected a search and a read in session 2, got: {results}\nsearch saw: {seen}"
    search, read = results
    print(f"--- session 2 search ---\n{search['text']}\n--- session 2 read ---\n{read['text']}")
    assert not search["isError"], search["text"]
    assert _hits_of(search["text"], s1_id), f"search did not find session 1:\n{search['text']}"
    # the tool passes its own journal, so the question asked a moment ago is found too, but never
    # the assistant message holding this very search (the caller's own turn)
    [asked] = [e["id"] for e in _lines(s2) if (e.get("message") or {}).get("role") == "user"]
    [own_call] = [
        e["id"]
        for e in _lines(s2)
        for block in (e.get("message") or {}).get("content") or []
        if isinstance(block, dict) and block.get("type") == "toolCall" and block["arguments"].get("action") == "search"
    ]
    s2_hits = [entry_id for entry_id, _kind in _hits_of(search["text"], _header(s2)["id"])]
    assert asked in s2_hits, f"the current journal was not indexed first:\n{search['text']}"
    assert own_call not in s2_hits, f"the caller's own call was a hit:\n{search['text']}"
    assert not read["isError"], read["text"]
    assert fact in read["text"], f"read did not return session 1's text verbatim:\n{read['text']}"
    assert stack.answers(), "the tool's first call started the server, which keeps running"
    # the model got the same text Pi recorded
    assert fact in last_tool_result(stack.model.requests[-1])

    # the secret never comes back through the tool (redacted on every text returned)
    s2_text = s2.read_text()
    assert secret not in s2_text, "the secret came back through memory_context"
    assert body not in s2_text, "the secret's body came back through memory_context"
    assert "ci login" in read["text"], "the line that held the secret should still be there, redacted"
    assert secret not in json.dumps(stack.model.requests[first_s2_request:]), "the model was sent the secret"

    # -- session 3, project B: the default scope keeps project A out
    stack.model.add(ToolCalls([Call("memory_context", {"action": "search", "query": word})]), Text("Nothing here."))
    before = set(_journals(stack.agent))
    stack.run_pi(stack.project_b, "What did we note down in this project last time?")
    s3 = stack.new_journal(before, stack.project_b)
    [other] = _tool_results(s3, "memory_context")
    print(f"--- session 3 search ---\n{other['text']}")
    assert not other["isError"], other["text"]
    assert fact not in other["text"], f"project B saw project A's fact:\n{other['text']}"
    assert not _hits_of(other["text"], s1_id) and s1_id not in other["text"], other["text"]
    assert str(stack.project_a) not in other["text"], other["text"]
    assert secret not in s3.read_text()

    assert stack.model.exhausted == 0, "Pi asked the scripted model more often than scripted"
    assert stack.model.errors == []
