"""Journal folders and the port as settings, with real processes: a folder given to `pimem serve --background` or
`pimem pi install` is read by every later command and by a server the Pi tool restarts (its `serve_args` name no
folder), and every later start without `--port` uses the port `pimem pi install` chose."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.faults import wait_for
from support.real_pi import copy_corpus
from support.servers import free_port, get

from pimem_index.replies import ServeStatusReply, conforms

pytestmark = pytest.mark.slow  # real processes


@pytest.fixture
def env(agent_dir) -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ("PIMEM_DB", "PIMEM_SESSIONS_DIRS", "DATASETTE_SECRET")}
    e["PI_CODING_AGENT_DIR"] = str(agent_dir)
    return e


@pytest.fixture
def stopped_afterwards(env):
    """Whatever server a test starts is stopped afterwards, even on failure."""
    yield
    run(env, "serve", "stop")


def run(env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pimem_index", *map(str, args)], env=env, capture_output=True, text=True, timeout=120
    )


def record(agent_dir) -> dict:
    return json.loads((agent_dir / "pi-memory" / "server.json").read_text())


@pytest.fixture
def elsewhere(agent_dir, tmp_path):
    """Journals the real Pi wrote, in a folder outside the agent folder."""
    return copy_corpus(tmp_path / "old-pi")


def served_status(url: str, token: str) -> dict:
    status, body = get(f"{url}/-/pi-memory/api/status", token)
    assert status == 200, body
    return json.loads(body)


def test_a_folder_given_to_serve_background_is_read_by_later_commands_and_restarts(
    stopped_afterwards, env, agent_dir, elsewhere
):
    count = len(elsewhere.all_journals())
    port = free_port()
    done = run(env, "serve", "--background", "--port", port, "--sessions-dir", elsewhere.sessions)
    assert done.returncode == 0, done.stderr
    assert f"Recorded journal folder {elsewhere.sessions}" in done.stdout
    url = f"http://127.0.0.1:{port}"
    token = run(env, "token").stdout.strip()
    assert wait_for(
        lambda: served_status(url, token)["journals_pending"] == 0 and served_status(url, token)["sessions"]
    )
    status = json.loads(run(env, "status", "--json").stdout)  # a later command, without the flag
    assert status["journals_total"] == count and str(elsewhere.sessions) in status["sessions_dirs"]
    serve_status = json.loads(run(env, "serve", "status", "--json").stdout)
    assert conforms(serve_status, ServeStatusReply) == []
    assert {"path": str(elsewhere.sessions), "source": "recorded", "exists": True} in serve_status["folders"]
    assert f"{elsewhere.sessions} (recorded)" in run(env, "serve", "status").stdout
    run(env, "serve", "stop")
    port = free_port()
    again = run(env, "serve", "--background", "--port", port)  # a restart without the flag
    assert again.returncode == 0, again.stderr
    restarted = served_status(f"http://127.0.0.1:{port}", token)
    assert str(elsewhere.sessions) in restarted["sessions_dirs"] and restarted["journals_total"] == count


def test_the_tool_restarts_a_server_with_the_recorded_folders_on_the_installed_port(
    stopped_afterwards, env, agent_dir, elsewhere
):
    port = free_port()
    done = run(
        env, "pi", "install", "--url", f"http://127.0.0.1:{port}", "--no-start", "--sessions-dir", elsewhere.sessions
    )
    assert done.returncode == 0, done.stderr
    config = json.loads((agent_dir / "pi-memory" / "pi-tool.json").read_text())
    assert str(elsewhere.sessions) not in config["serve_args"] and "--sessions-dir" not in config["serve_args"]
    tool_start = subprocess.run(
        [config["pimem"], *config["serve_args"]], env=env, capture_output=True, text=True, timeout=120
    )  # what the tool runs when it cannot connect
    assert tool_start.returncode == 0, tool_start.stderr
    status = served_status(f"http://127.0.0.1:{port}", config["token"])
    assert str(elsewhere.sessions) in status["sessions_dirs"]
    assert status["journals_total"] == len(elsewhere.all_journals())
    run(env, "serve", "stop")
    plain_start = run(env, "serve", "--background")  # no --port: the port pimem pi install chose
    assert plain_start.returncode == 0, plain_start.stderr
    assert record(agent_dir)["port"] == port and f"127.0.0.1:{port}" in plain_start.stdout
    assert "8001" not in plain_start.stdout
