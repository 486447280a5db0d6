"""`pimem serve` as a real process: loopback only, a login link, the token, background indexing."""

from __future__ import annotations

import http.cookiejar
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from support.commands import pimem
from support.faults import put_in_place_of_index
from support.pijournal import Journal
from support.servers import Server, free_port, get, listening_addresses, wait_indexed

pytestmark = pytest.mark.slow  # real processes: pytest -m 'not slow' is the fast loop


@pytest.fixture
def env(agent_dir) -> dict:
    e = dict(os.environ)
    e.pop("PIMEM_DB", None)
    e.pop("PIMEM_SESSIONS_DIRS", None)
    e.pop("DATASETTE_SECRET", None)
    e["PI_CODING_AGENT_DIR"] = str(agent_dir)
    e["PYTHONUNBUFFERED"] = "1"
    return e


@pytest.fixture
def servers():
    started: list[Server] = []
    yield started
    for s in started:
        s.stop()


def indexer_pids(db_path: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--watch" in cmd and str(db_path).encode() in cmd:
            pids.append(int(proc.name))
    return pids


def background_tasks(server: Server, opener) -> tuple[bool, list[str]]:
    """Whether Datasette has launched its background tasks, and their names (/-/tasks.json, root only)."""
    status, body = get(f"{server.url}/-/tasks.json", opener=opener)
    assert status == 200, body
    data = json.loads(body)
    return data["launched"], [t["name"] for t in data["tasks"]]


def login(link: str):
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    status, _ = get(link, opener=opener)
    assert status == 200
    assert any(c.name == "ds_actor" for c in jar)
    return opener


def test_serve_loopback_login_token_and_background_indexing(env, agent_dir, home, servers):
    cwd = str(home / "Apps/prjct")
    journal = Journal(agent_dir / "sessions", cwd)
    journal.user("the heron pipeline is flaky")
    token = pimem(env, "token").strip().splitlines()[-1]
    assert token.startswith("dstok_")

    server = Server(env)
    servers.append(server)
    link = server.wait_ready()
    assert link.startswith(f"{server.url}/-/pi-memory/login?token=")  # issue 19: lands on /-/pi-memory
    assert listening_addresses(server.port) == {"0100007F"}  # 127.0.0.1 only

    # the token printed before the server started works; anonymous visitors get nothing
    status, body = get(f"{server.url}/-/pi-memory/api/status", token)
    assert status == 200 and json.loads(body)["journals_total"] == 1
    for path in ("/-/pi-memory/api/status", "/-/pi-memory/api/search?q=heron&cwd=" + urllib.parse.quote(cwd)):
        status, body = get(server.url + path)
        assert status == 401 and "heron" not in body
    for path in (
        "/",
        "/history",
        "/history/files.json",
        "/history/entries",
        "/history/-/query.json?sql=select+1",
        "/-/pi-memory",
        "/-/pi-memory/search?q=heron&scope=global",
    ):
        status, body = get(server.url + path)
        assert status == 403, path
        assert "heron" not in body and "Apps/prjct" not in body, path
    status, _ = get(f"{server.url}/-/pi-memory/api/status", "dstok_bogus")
    assert status == 401

    wait_indexed(server, token)

    # root logs in with the printed link (once) and sees the pages and the index
    opener = login(link)
    assert background_tasks(server, opener) == (True, ["pi-memory-indexer"])
    status, body = get(f"{server.url}/-/pi-memory", opener=opener)
    assert status == 200 and "the heron pipeline is flaky" in body
    status, body = get(f"{server.url}/history/sessions", opener=opener)
    assert status == 200 and "cwd" in body
    status, _ = get(link)
    assert status == 403  # the login link is single-use

    # a new line becomes searchable through background indexing alone, within about 2 s
    fresh = journal.user("the cormorant shipped")
    started = time.monotonic()
    found = []
    while time.monotonic() - started < 10 and not found:
        status, body = get(f"{server.url}/-/pi-memory/api/search?q=cormorant&cwd={urllib.parse.quote(cwd)}", token)
        found = [h["id"] for h in json.loads(body)["results"]]
        if not found:
            time.sleep(0.1)
    elapsed = time.monotonic() - started
    assert found == [fresh]
    assert elapsed < 3.0, f"searchable after {elapsed:.2f}s"

    # shutdown stops the background indexer too
    db_path = agent_dir / "pi-memory" / "history.sqlite"
    assert indexer_pids(db_path)
    server.stop()
    assert server.proc.returncode in (0, -15), server.output  # uvicorn re-raises SIGTERM after a clean shutdown
    assert "Application shutdown complete" in server.output
    deadline = time.monotonic() + 10
    while indexer_pids(db_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert indexer_pids(db_path) == []


def test_serve_on_a_missing_pi_folder_starts_and_finds_the_first_journal_later(env, agent_dir, home, servers):
    os.rmdir(agent_dir / "sessions")
    server = Server(env)
    servers.append(server)
    link = server.wait_ready()
    assert (agent_dir / "pi-memory" / "history.sqlite").exists()
    secret = agent_dir / "pi-memory" / "secret"
    assert secret.stat().st_mode & 0o777 == 0o600
    token = pimem(env, "token").strip()
    status, body = get(f"{server.url}/-/pi-memory/api/status", token)
    assert status == 200 and json.loads(body)["journals_total"] == 0
    opener = login(link)
    status, body = get(f"{server.url}/-/pi-memory", opener=opener)
    assert status == 200 and "Run Pi once" in body and "(missing)" in body

    # Pi runs for the first time: its journal shows up without a restart
    journal = Journal(agent_dir / "sessions", str(home / "Apps/new"))
    first = journal.user("first ever session about the puffin")
    deadline = time.monotonic() + 10
    found = []
    while time.monotonic() < deadline and not found:
        status, body = get(
            f"{server.url}/-/pi-memory/api/search?q=puffin&cwd={urllib.parse.quote(str(home / 'Apps/new'))}", token
        )
        found = [h["id"] for h in json.loads(body)["results"]]
        time.sleep(0.2)
    assert found == [first]


def test_serve_no_index_starts_no_indexer_but_indexes_a_named_journal_on_demand(env, agent_dir, home, servers):
    journal = Journal(agent_dir / "sessions", str(home / "Apps/prjct"))
    journal.user("nothing indexes the grebe")
    server = Server(env, "--no-index")
    servers.append(server)
    link = server.wait_ready()
    token = pimem(env, "token").strip()
    # Background tasks have launched and none indexes: nothing can index the journal from now on.
    assert background_tasks(server, login(link)) == (True, [])
    cwd = urllib.parse.quote(str(home / "Apps/prjct"))
    status, body = get(f"{server.url}/-/pi-memory/api/search?q=grebe&cwd={cwd}", token)
    assert json.loads(body)["results"] == []
    assert indexer_pids(agent_dir / "pi-memory" / "history.sqlite") == []
    # the caller's journal is still indexed on demand
    path = urllib.parse.quote(str(journal.path))
    status, body = get(f"{server.url}/-/pi-memory/api/search?q=grebe&journal={path}", token)
    assert status == 200 and len(json.loads(body)["results"]) == 1


def test_serve_on_a_port_in_use_is_a_one_line_error(agent_dir):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "pimem_index", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ),
        )
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and "--port" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Uvicorn running" not in result.stderr + result.stdout


@pytest.mark.parametrize(
    "args, says, code",
    [
        (["--port", "99999"], "99999 is not in the range 1<=x<=65535", 2),
        (["--port", "0"], "0 is not in the range 1<=x<=65535", 2),
        (["--host", "not a host!"], "--host takes an address of this machine (e.g. --host 127.0.0.1)", 1),
        (["--host", ""], "--host needs an address of this machine (e.g. --host 127.0.0.1)", 1),
    ],
)
def test_a_bad_port_or_host_is_one_line_not_a_traceback(env, args, says, code):
    result = subprocess.run(
        [sys.executable, "-m", "pimem_index", "serve", *args], capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == code, result.stderr
    assert says in result.stderr
    assert "Traceback" not in result.stderr and "Uvicorn running" not in result.stderr + result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1


def test_serve_on_a_read_only_index_says_it_cannot_be_written(env, agent_dir, immutable):
    db_path = agent_dir / "pi-memory" / "history.sqlite"
    pimem(env, "index")
    immutable(db_path, db_path.parent)
    result = subprocess.run(
        [sys.executable, "-m", "pimem_index", "serve", "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 1
    assert f"cannot write {db_path}; check its permissions" in result.stderr
    assert "not a pimem index" not in result.stderr and "delete" not in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_serve_on_a_folder_as_index_asks_for_the_index_file_as_every_command_does(env, tmp_path):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "pimem_index", "serve", "--db", str(folder), "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 1
    assert result.stderr == (
        f"Error: {folder} is a folder; --db takes the index file (e.g. --db {folder / 'history.sqlite'})\n"
    )
    assert "Uvicorn running" not in result.stdout and list(folder.iterdir()) == []


@pytest.mark.parametrize("kind", ["text", "sqlite"])
def test_a_live_server_answers_every_route_again_once_a_replaced_index_is_deleted(env, agent_dir, home, servers, kind):
    cwd = urllib.parse.quote(str(home / "Apps/prjct"))
    journal = Journal(agent_dir / "sessions", str(home / "Apps/prjct"))
    heron = journal.user("the heron pipeline is flaky")
    token = pimem(env, "token").strip().splitlines()[-1]
    server = Server(env)
    servers.append(server)
    opener = login(server.wait_ready())
    wait_indexed(server, token)
    db_path = agent_dir / "pi-memory" / "history.sqlite"
    put_in_place_of_index(db_path, kind)
    for _ in range(12):  # more requests than worker threads: each meets the foreign file
        status, body = get(f"{server.url}/-/pi-memory/api/search?q=heron&cwd={cwd}", token)
        assert status != 200 and "flaky" not in body
    db_path.unlink()
    wait_indexed(server, token)  # one indexing pass of a valid index
    api = [f"/-/pi-memory/api/{a}?cwd={cwd}" for a in ("status", "summaries", "sessions", "usage")]
    for _ in range(3):  # each route on more than one worker thread
        for path in api:
            status, body = get(server.url + path, token)
            assert status == 200, (path, body[:300])
        for path in ("/-/pi-memory", "/-/pi-memory/sessions", "/-/pi-memory/usage", "/history/entries.json"):
            status, body = get(server.url + path, opener=opener)
            assert status == 200, (path, body[:300])
        status, body = get(f"{server.url}/-/pi-memory/api/search?q=heron&cwd={cwd}", token)
        assert status == 200 and [h["id"] for h in json.loads(body)["results"]] == [heron]
        status, body = get(f"{server.url}/-/pi-memory/api/search?q=kestrel&cwd={cwd}", token)
        assert status == 200 and json.loads(body)["results"] == []
