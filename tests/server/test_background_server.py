"""The managed background server as real processes: `pimem serve --background`, `status`, `stop`, stale
records, and `pimem login`'s one-time links to a server that was started before them."""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from support.faults import wait_for
from support.servers import free_port, get, listening_addresses

pytestmark = pytest.mark.slow  # real processes: pytest -m 'not slow' is the fast loop

STATE = "server.json"


@pytest.fixture
def env(agent_dir) -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ("PIMEM_DB", "PIMEM_SESSIONS_DIRS", "DATASETTE_SECRET")}
    e["PI_CODING_AGENT_DIR"] = str(agent_dir)
    return e


def run(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pimem_index", *args], env=env, capture_output=True, text=True, timeout=120
    )


def record(agent_dir: Path) -> dict | None:
    try:
        return json.loads((agent_dir / "pi-memory" / STATE).read_text())
    except FileNotFoundError:
        return None


def alive(pid: int) -> bool:
    """A live, non-zombie process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return not stat[stat.rindex(")") + 2 :].startswith("Z")


def group_members(pgid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.getpgid(int(entry.name)) == pgid and alive(int(entry.name)):
                    found.append(int(entry.name))
    return found


@pytest.fixture
def background(env, agent_dir):
    """Start `pimem serve --background` on a free port; always stopped afterwards, even on failure."""
    started: list[int] = []

    def start(*extra: str, port: int | None = None) -> tuple[subprocess.CompletedProcess, int]:
        port = port or free_port()
        done = run(env, "serve", "--background", "--port", str(port), *extra)
        found = record(agent_dir)
        if found:
            started.append(found["pid"])
        return done, port

    yield start
    run(env, "serve", "stop")
    for pid in started:  # whatever stop could not end: only our server's group, never a reused pid
        with contextlib.suppress(OSError):
            if alive(pid) and b"serve" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                os.killpg(pid, signal.SIGKILL)


def test_serve_background_returns_once_it_answers_detached_with_a_private_log(background, agent_dir):
    done, port = background()
    assert done.returncode == 0, done.stderr
    url = f"http://127.0.0.1:{port}"
    assert f"{url}/-/pi-memory" in done.stdout
    status, _ = get(f"{url}/-/pi-memory/api/status")
    assert status == 401  # it answers at once, and keeps anonymous callers out
    server = record(agent_dir)
    assert server["url"] == url and server["port"] == port
    assert os.getsid(server["pid"]) == server["pid"]  # its own session and process group
    assert os.getsid(server["pid"]) != os.getsid(0)
    for name in (STATE, "server.log"):
        assert (agent_dir / "pi-memory" / name).stat().st_mode & 0o777 == 0o600, name
    assert "Uvicorn running" in (agent_dir / "pi-memory" / "server.log").read_text()
    assert listening_addresses(port) == {"0100007F"}


def test_a_second_background_start_says_one_runs_and_starts_nothing(background, agent_dir):
    first, port = background()
    assert first.returncode == 0, first.stderr
    pid = record(agent_dir)["pid"]
    second, other_port = background(port=free_port())
    assert second.returncode == 0, second.stderr
    assert "already running" in second.stdout and f"127.0.0.1:{port}" in second.stdout
    assert f"(not on port {other_port})" in second.stdout
    assert record(agent_dir)["pid"] == pid
    assert listening_addresses(other_port) == set()


def test_two_background_starts_at_once_leave_one_server_and_both_succeed(background, env, agent_dir):
    ports = [free_port(), free_port()]
    starts = [
        subprocess.Popen(
            [sys.executable, "-m", "pimem_index", "serve", "--background", "--port", str(port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for port in ports
    ]
    outputs = [start.communicate(timeout=120) for start in starts]  # the background fixture stops what runs
    assert [start.returncode for start in starts] == [0, 0], outputs
    server = record(agent_dir)
    assert server is not None and server["port"] in ports
    listening = [port for port in ports if listening_addresses(port)]
    assert listening == [server["port"]]
    assert sum("already running" in out for out, _err in outputs) == 1


def test_serve_status_tells_running_with_its_figures_and_not_running_with_exit_1(
    background, env, agent_dir, new_journal
):
    new_journal().user("the status heron")
    before = run(env, "serve", "status", "--json")
    assert before.returncode == 1 and json.loads(before.stdout)["running"] is False
    done, port = background()
    assert done.returncode == 0, done.stderr
    assert wait_for(lambda: json.loads(run(env, "serve", "status", "--json").stdout)["indexing"]["complete"])
    status = run(env, "serve", "status", "--json")
    assert status.returncode == 0
    data = json.loads(status.stdout)
    assert data["url"] == f"http://127.0.0.1:{port}" and data["pid"] == record(agent_dir)["pid"]
    assert data["uptime_s"] >= 0 and data["indexing"] == {"complete": True, "journals_indexed": 1, "journals_total": 1}
    words = run(env, "serve", "status")
    assert words.returncode == 0 and "is running at" in words.stdout and "1 of 1 journals" in words.stdout
    run(env, "serve", "stop")
    after = run(env, "serve", "status")
    assert after.returncode == 1 and "not running" in after.stdout


def test_serve_stop_ends_the_server_and_its_indexer_and_frees_the_port(background, env, agent_dir):
    done, port = background()
    assert done.returncode == 0, done.stderr
    pid = record(agent_dir)["pid"]
    assert wait_for(lambda: len(group_members(pid)) == 2)  # the server and its indexer child
    stopped = run(env, "serve", "stop")
    assert stopped.returncode == 0 and "Stopped" in stopped.stdout
    assert not alive(pid) and group_members(pid) == []
    assert listening_addresses(port) == set()
    assert record(agent_dir) is None
    again = run(env, "serve", "stop")
    assert again.returncode == 0 and "not running" in again.stdout


def test_a_record_with_a_dead_pid_is_removed_never_trusted(env, agent_dir, background):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (agent_dir / "pi-memory").mkdir(mode=0o700, exist_ok=True)
    stale = {
        "pid": gone.pid,
        "pgid": gone.pid,
        "host": "127.0.0.1",
        "port": 1,
        "url": "http://127.0.0.1:1",
        "started": 0,
    }
    (agent_dir / "pi-memory" / STATE).write_text(json.dumps(stale))
    status = run(env, "serve", "status")
    assert status.returncode == 1 and "not running" in status.stdout
    assert record(agent_dir) is None
    done, port = background()  # the stale record does not stop a start
    assert done.returncode == 0 and "already" not in done.stdout, done.stderr
    assert record(agent_dir)["port"] == port


def test_a_record_naming_a_live_process_that_is_not_pimem_serve_is_stale_and_that_process_is_left_alone(env, agent_dir):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        (agent_dir / "pi-memory").mkdir(mode=0o700, exist_ok=True)
        stale = {"pid": other.pid, "pgid": other.pid, "host": "127.0.0.1", "port": 1, "url": "http://127.0.0.1:1"}
        (agent_dir / "pi-memory" / STATE).write_text(json.dumps(stale))
        stop = run(env, "serve", "stop")
        assert stop.returncode == 0 and "not running" in stop.stdout
        assert other.poll() is None  # never signalled
        assert record(agent_dir) is None
        login = run(env, "login")
        assert login.returncode == 1 and "pimem serve --background" in login.stderr
    finally:
        other.kill()
        other.wait(timeout=10)


def test_a_background_start_that_fails_is_one_line_with_the_logs_last_lines(env, agent_dir, tmp_path):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    done = run(env, "serve", "--background", "--port", str(free_port()), "--db", str(folder))
    assert done.returncode == 1
    assert "pimem serve --background exited with status 1" in done.stderr
    assert f"{folder} is a folder" in done.stderr and "server.log" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert record(agent_dir) is None


def opener_with_jar():
    jar = http.cookiejar.CookieJar()

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    return jar, urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)


def visit(opener, url: str) -> tuple[int, dict, str]:
    try:
        with opener.open(url, timeout=30) as res:
            return res.status, dict(res.headers), res.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def test_pimem_login_gives_a_link_that_logs_root_in_once_and_lands_on_pi_memory(background, env, agent_dir):
    done, port = background()
    assert done.returncode == 0, done.stderr
    link = run(env, "login").stdout.strip()  # minted after the server started
    assert link.startswith(f"http://127.0.0.1:{port}/-/pi-memory/login?token=")
    jar, opener = opener_with_jar()
    status, headers, _ = visit(opener, link)
    assert status == 302 and headers["Location"] == "/-/pi-memory"
    assert [c.name for c in jar] == ["ds_actor"]
    status, _, body = visit(opener, f"http://127.0.0.1:{port}/-/pi-memory")
    assert status == 200 and "Pi memory" in body
    again_jar, again = opener_with_jar()
    status, _, body = visit(again, link)
    assert status == 403 and "already used" in body and "pimem login" in body
    assert list(again_jar) == []
    fresh_jar, fresh = opener_with_jar()
    assert visit(fresh, run(env, "login").stdout.strip())[0] == 302 and list(fresh_jar)


def test_pimem_login_without_a_running_server_says_how_to_start_one_or_name_it(env, agent_dir):
    done = run(env, "login")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        "Error: pimem serve is not running; start it (pimem serve --background) or name the server "
        "(e.g. pimem login --url http://127.0.0.1:8001)"
    )
    named = run(env, "login", "--url", "http://127.0.0.1:8123/")
    assert named.returncode == 0 and named.stdout.startswith("http://127.0.0.1:8123/-/pi-memory/login?token=")


def test_an_expired_login_link_is_refused_and_says_how_to_get_another(tmp_path):
    from datasette import Forbidden

    from datasette_pi_memory import login

    link = login.mint("the-secret", "http://127.0.0.1:8001", now=1_000_000)
    token = link.split("token=", 1)[1]
    used = tmp_path / "login-used"
    with pytest.raises(Forbidden, match="expired .*pimem login"):
        login.check("the-secret", token, used, now=1_000_000 + login.TTL_SECONDS + 1)
    assert login.check("the-secret", token, used, now=1_000_000 + login.TTL_SECONDS - 1) == {"id": "root"}


def test_a_login_link_signed_with_another_secret_is_refused(tmp_path):
    from datasette import Forbidden

    from datasette_pi_memory import login

    token = login.mint("another-secret", "http://127.0.0.1:8001").split("token=", 1)[1]
    with pytest.raises(Forbidden, match="not valid for this server"):
        login.check("the-secret", token, tmp_path / "login-used")
    assert not (tmp_path / "login-used").exists()


def test_pi_install_starts_the_background_server_the_tool_is_set_up_for(background, env, agent_dir):
    port = free_port()
    try:
        done = run(env, "pi", "install", "--url", f"http://127.0.0.1:{port}")
        assert done.returncode == 0, done.stderr
        assert f"running at http://127.0.0.1:{port}" in done.stdout
        server = record(agent_dir)
        assert server is not None and server["port"] == port
        config = json.loads((agent_dir / "pi-memory" / "pi-tool.json").read_text())
        assert config["serve_args"][:6] == ["serve", "--background", "--host", "127.0.0.1", "--port", str(port)]
        status, _ = get(f"http://127.0.0.1:{port}/-/pi-memory/api/status", config["token"])
        assert status == 200
    finally:
        run(env, "serve", "stop")


def test_pi_install_for_a_remote_url_starts_nothing(env, agent_dir):
    done = run(env, "pi", "install", "--url", "https://memory.example.com")
    assert done.returncode == 0, done.stderr
    assert record(agent_dir) is None
    assert "pimem" not in json.loads((agent_dir / "pi-memory" / "pi-tool.json").read_text())


@pytest.fixture
def without_systemctl(env, tmp_path) -> dict:
    """The environment with a PATH that holds no systemctl, and a private XDG_CONFIG_HOME."""
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    return {**env, "PATH": str(bare), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def test_serve_install_writes_a_user_unit_running_this_pimem_and_uninstall_removes_it(
    without_systemctl, agent_dir, tmp_path
):
    port = free_port()
    db = tmp_path / "index" / "history.sqlite"
    done = run(without_systemctl, "serve", "--install", "--port", str(port), "--db", str(db))
    assert done.returncode == 0, done.stderr
    unit = tmp_path / "config" / "systemd" / "user" / "pimem.service"
    text = unit.read_text()
    [exec_start] = [line for line in text.splitlines() if line.startswith("ExecStart=")]
    words = [w.strip('"') for w in exec_start[len("ExecStart=") :].split(" ")]
    assert Path(words[0]).is_absolute() and os.access(words[0], os.X_OK)
    assert words[words.index("--port") + 1] == str(port) and words[words.index("--db") + 1] == str(db)
    assert "--background" not in words  # systemd supervises the foreground server
    assert f'Environment="PI_CODING_AGENT_DIR={agent_dir}"' in text and "WantedBy=default.target" in text
    assert "systemctl --user enable --now pimem.service" in done.stdout
    assert record(agent_dir) is None and listening_addresses(port) == set()  # nothing started here
    removed = run(without_systemctl, "serve", "--uninstall")
    assert removed.returncode == 0 and f"Removed {unit}" in removed.stdout
    assert not unit.exists()
    again = run(without_systemctl, "serve", "--uninstall")
    assert again.returncode == 0 and "No pimem service was installed" in again.stdout


def test_serve_install_and_uninstall_together_is_a_one_line_error(without_systemctl, tmp_path):
    done = run(without_systemctl, "serve", "--install", "--uninstall")
    assert done.returncode == 1 and done.stderr.startswith("Error: --install and --uninstall exclude each other")
    assert not (tmp_path / "config").exists()


# ---- which server is ours: never a command-line pattern (issue 25 items 3 and 7) ----------------


def write_record(agent_dir: Path, **fields) -> None:
    (agent_dir / "pi-memory").mkdir(mode=0o700, exist_ok=True)
    base = {"pgid": fields.get("pid"), "detached": True, "host": "127.0.0.1", "port": 1, "url": "http://127.0.0.1:1"}
    (agent_dir / "pi-memory" / STATE).write_text(json.dumps({**base, **fields}))


def test_a_record_naming_a_process_that_only_looks_like_pimem_serve_is_stale_and_it_is_left_alone(
    env, agent_dir, background
):
    decoy = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "/home/u/src/pimem", "serve"], start_new_session=True
    )
    try:
        write_record(agent_dir, pid=decoy.pid, started=time.time())
        status = run(env, "serve", "status")
        assert status.returncode == 1 and "not running" in status.stdout
        assert record(agent_dir) is None
        write_record(agent_dir, pid=decoy.pid, started=time.time())
        stop = run(env, "serve", "stop")
        assert stop.returncode == 0 and "not running" in stop.stdout
        assert decoy.poll() is None  # never signalled, nor its group
        write_record(agent_dir, pid=decoy.pid, started=time.time())
        done, port = background()
        assert done.returncode == 0 and "already" not in done.stdout, done.stderr
        assert record(agent_dir)["port"] == port and record(agent_dir)["pid"] != decoy.pid
        assert decoy.poll() is None
    finally:
        decoy.kill()
        decoy.wait(timeout=10)


def test_a_stale_record_whose_pid_is_now_another_agent_folders_server_leaves_that_server_alone(
    env, agent_dir, background, tmp_path
):
    other_agent = tmp_path / "other-agent"
    (other_agent / "sessions").mkdir(parents=True)
    other_env = {**env, "PI_CODING_AGENT_DIR": str(other_agent)}
    port = free_port()
    try:
        started = run(other_env, "serve", "--background", "--port", str(port))
        assert started.returncode == 0, started.stderr
        theirs = record(other_agent)
        ours_then = {**theirs, "db": str(agent_dir / "pi-memory" / "history.sqlite"), "process_start": "0"}
        for forged in (ours_then, {**ours_then, "process_start": None}):  # an old record of ours naming that pid
            write_record(agent_dir, **forged)
            status = run(env, "serve", "status", "--json")
            assert status.returncode == 1 and json.loads(status.stdout)["running"] is False
            assert record(agent_dir) is None
            write_record(agent_dir, **forged)
            stop = run(env, "serve", "stop")
            assert stop.returncode == 0 and "not running" in stop.stdout
            assert alive(theirs["pid"]) and get(f"http://127.0.0.1:{port}/-/pi-memory/api/status")[0] == 401
        done, mine = background()
        assert done.returncode == 0 and "already" not in done.stdout, done.stderr
        assert record(agent_dir)["port"] == mine and alive(theirs["pid"])
        ours = run(env, "serve", "status", "--json")
        assert ours.returncode == 0 and json.loads(ours.stdout)["pid"] == record(agent_dir)["pid"]
    finally:
        run(other_env, "serve", "stop")


@pytest.mark.parametrize("pid", [2147483648, 2**70, -1, -(2**63), 0, True, 1.5])
def test_a_record_with_an_impossible_pid_is_stale_and_removed_never_a_traceback(env, agent_dir, pid):
    for args in (("serve", "status"), ("serve", "stop"), ("login",)):
        write_record(agent_dir, pid=pid, started=time.time())
        done = run(env, *args)
        assert "Traceback" not in done.stderr and "Error" not in done.stdout, (args, done.stderr)
        assert done.returncode == (0 if args == ("serve", "stop") else 1), (args, done.stderr)
        assert "not running" in done.stdout + done.stderr
        assert record(agent_dir) is None, args


def test_a_background_start_over_a_record_with_an_overflowing_pid_replaces_it(env, agent_dir, background):
    write_record(agent_dir, pid=2147483648, started=time.time())
    done, port = background()
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "already" not in done.stdout and record(agent_dir)["port"] == port


def test_no_unused_login_link_is_ever_written_to_the_server_log(background, env, agent_dir, tmp_path):
    done, port = background()
    assert done.returncode == 0, done.stderr
    log = (agent_dir / "pi-memory" / "server.log").read_text()
    assert "Uvicorn running" in log and "pimem login" in log
    assert "login?token=" not in log and "login?token=" not in done.stdout
    link = run(env, "login").stdout.strip()  # a link is minted when asked for, on the terminal
    jar, opener = opener_with_jar()
    assert visit(opener, link)[0] == 302 and [c.name for c in jar] == ["ds_actor"]
    run(env, "serve", "stop")
    into_file = tmp_path / "foreground.out"  # a foreground server whose output goes to a file
    with into_file.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "pimem_index", "serve", "--port", str(port)], env=env, stdout=out, stderr=out
        )
    try:
        assert wait_for(lambda: "Uvicorn running" in into_file.read_text(), 60), into_file.read_text()
        assert "login?token=" not in into_file.read_text() and "pimem login" in into_file.read_text()
    finally:
        server.terminate()
        server.wait(timeout=30)
