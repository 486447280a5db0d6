"""The managed background server: `pimem serve --background`, `pimem serve status`, `pimem serve stop`.

Every `pimem serve` records itself in `<agent folder>/pi-memory/server.json` (0600: pid, process
group, host, port, URL, index, start time, and the process's start time as the kernel tells it)
unless a live server is recorded there already. A record is trusted only while its pid is alive,
started exactly when the record says (a reused pid, a decoy command line or another agent folder's
server did not); any other record is stale and is removed when read.
`--background` starts `pimem serve` in its own session with its output in
`<agent folder>/pi-memory/server.log` (0600) and returns once the server answers.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pimem_index import Locations, UserError, folder_listing, location_args
from pimem_index.replies import ServeStatusReply

STATE_FILE = "server.json"
LOG_FILE = "server.log"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 20.0
POLL = 0.1
LOG_TAIL_LINES = 8
MAX_PID = 2**31  # pids are positive C ints: a record naming another is stale, never passed to kill()


def state_path(locations: Locations) -> Path:
    return locations.memory_dir / STATE_FILE


def log_path(locations: Locations) -> Path:
    return locations.memory_dir / LOG_FILE


def _write_private(path: Path, text: str) -> None:
    """Write atomically with mode 0600 from the first byte."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def record_server(locations: Locations, host: str, port: int) -> bool:
    """Record this process as the running `pimem serve`, unless a live one is recorded; True if recorded.

    The record appears atomically and only where none is (a hard link), so of two servers starting
    at once exactly one is recorded.
    """
    folder = locations.ensure_memory_dir()
    record = {
        "pid": os.getpid(),
        "pgid": os.getpgrp(),
        "detached": is_detached(),
        "host": host,
        "port": port,
        "url": f"http://{url_host(host)}:{port}",
        "db": str(locations.db_path),
        "started": time.time(),
        "process_start": process_start(os.getpid()),
    }
    tmp = folder / f".{STATE_FILE}.{os.getpid()}"
    _write_private(tmp, json.dumps(record) + "\n")
    try:
        for _attempt in range(3):
            if running_server(locations) is not None:  # a stale record is removed here
                return False
            try:
                os.link(tmp, state_path(locations))
                return True
            except FileExistsError:
                continue
        return False
    finally:
        tmp.unlink()


def is_detached() -> bool:
    """Whether this process leads its own session (started by --background, or by a service manager)."""
    return os.getsid(0) == os.getpid()


def forget_server(locations: Locations, pid: int) -> None:
    """Remove the record if it names `pid` (a server shutting down, or one just stopped)."""
    path = state_path(locations)
    record = _read_record(path)
    if record is not None and record.get("pid") == pid:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def running_server(locations: Locations) -> dict | None:
    """The recorded server if its process is the one that wrote the record; a stale record (unreadable,
    impossible pid, a dead process or another one under that pid) is removed."""
    path = state_path(locations)
    record = _read_record(path)
    if record is None:
        if path.exists():
            _remove_stale(path)
        return None
    if not _is_recorded_process(record):
        _remove_stale(path)
        return None
    return record


def _read_record(path: Path) -> dict | None:
    """The record when every field it is trusted for has a possible value, else None."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    pid, port = record.get("pid"), record.get("port")
    if isinstance(pid, bool) or not isinstance(pid, int) or not 0 < pid < MAX_PID:
        return None
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        return None
    if not isinstance(record.get("url"), str) or not isinstance(record.get("process_start"), str):
        return None
    return record


def _remove_stale(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _is_recorded_process(record: dict) -> bool:
    """Whether the record's pid is alive and started when the record says (never a reused pid)."""
    started = process_start(record["pid"])
    return started is not None and started == record["process_start"]


def process_start(pid: int) -> str | None:
    """When the process started, as the kernel keeps it (boot id and clock ticks on Linux, `ps`'s
    start time elsewhere); None when it is gone, a zombie, or not ours to see."""
    if not 0 < pid < MAX_PID:
        return None
    proc = Path(f"/proc/{pid}")
    if Path("/proc/self/stat").exists():
        try:
            stat = (proc / "stat").read_text()
            boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
            if proc.stat().st_uid != os.getuid():
                return None  # another user's process: never ours
        except OSError:
            return None
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] == "Z":
            return None
        return f"{boot}:{fields[19]}"  # field 22 of stat: the start time in clock ticks after boot
    done = subprocess.run(["ps", "-o", "stat=,lstart=", "-p", str(pid)], capture_output=True, text=True)
    fields = done.stdout.split(maxsplit=1)
    if done.returncode != 0 or len(fields) != 2 or fields[0].startswith("Z"):
        return None
    return fields[1].strip()


def url_host(host: str) -> str:
    """The host as it goes in a URL (an IPv6 address in brackets; any-address as loopback)."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def answers(url: str, timeout: float = 2.0) -> bool:
    """Whether an HTTP server answers at url (any status counts: a 401 is an answer)."""
    try:
        with urllib.request.urlopen(f"{url}/-/pi-memory/api/status", timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


def serve_command(locations: Locations, host: str, port: int, background_index: bool) -> list[str]:
    """The foreground `pimem serve` command line the background server runs, with this interpreter."""
    command = [sys.executable, "-m", "pimem_index", "serve", "--host", host, "--port", str(port)]
    command += location_args(locations)
    return command + ([] if background_index else ["--no-index"])


def start_background(locations: Locations, host: str, port: int, background_index: bool = True) -> dict:
    """Start `pimem serve` detached and wait until it answers; its record. A live one is returned as is
    with "already": True."""
    found = running_server(locations)
    if found is not None:
        return {**found, "already": True}
    locations.ensure_memory_dir()
    log = log_path(locations)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    try:
        proc = subprocess.Popen(
            serve_command(locations, host, port, background_index),
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    finally:
        os.close(fd)
    return _wait_started(locations, proc, log)


def _wait_started(locations: Locations, proc: subprocess.Popen, log: Path) -> dict:
    """Wait (bounded) until the started server has recorded itself and answers; else a one-line error."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            other = running_server(locations)  # a start at the same moment won the port
            if other is not None:
                return {**other, "already": True}
            raise UserError(f"pimem serve --background exited with status {proc.returncode}: {_log_tail(log)}")
        record = running_server(locations)
        if record is not None and record["pid"] == proc.pid and answers(record["url"]):
            return {**record, "already": False}
        time.sleep(POLL)
    _kill_group(proc.pid)
    raise UserError(f"pimem serve --background did not answer within {START_TIMEOUT:.0f}s: {_log_tail(log)}")


def _log_tail(log: Path) -> str:
    """The log's last lines, joined on one line, with where the whole log is."""
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    tail = " | ".join(lines[-LOG_TAIL_LINES:]) or "(no output)"
    return f"{tail} (log: {log})"


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def stop(locations: Locations) -> dict | None:
    """Stop the recorded server and its indexer, wait until the port is free; its record, None if none ran."""
    record = running_server(locations)
    if record is None:
        return None
    pid = record["pid"]
    own_group = record.get("detached") is True and record.get("pgid") == pid  # --background: the group is its own
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if not _wait(lambda: not _is_recorded_process(record), STOP_TIMEOUT):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _wait(lambda: not _is_recorded_process(record), STOP_TIMEOUT)
    if own_group:
        _end_group(pid)
    _wait(lambda: _port_free(record.get("host", "127.0.0.1"), int(record["port"])), STOP_TIMEOUT)
    forget_server(locations, pid)
    return record


def _end_group(pgid: int) -> None:
    """What is left of the server's process group (its indexer child) gets SIGTERM, then SIGKILL."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    if not _wait(lambda: not _group_alive(pgid), STOP_TIMEOUT / 2):
        _kill_group(pgid)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return any(process_start(pid) is not None for pid in _group_members(pgid))


def _group_members(pgid: int) -> list[int]:
    """Pids in the process group (Linux /proc; elsewhere the group itself stands for them)."""
    if not Path("/proc").is_dir():
        return [pgid]
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    members.append(int(entry.name))
            except (ProcessLookupError, PermissionError):
                continue
    return members


def _port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.settimeout(1)
        try:
            probe.connect(({"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host), port))
        except OSError:
            return True
    return False


def _wait(condition, timeout: float) -> bool:
    """Poll `condition` until true or `timeout` seconds pass; whether it became true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(POLL)
    return condition()


def status(locations: Locations, make_token) -> ServeStatusReply:
    """The running server's record with its uptime and indexing progress (asked of the server itself),
    or {"running": False}."""
    record = running_server(locations)
    if record is None:
        return {"running": False, "folders": folder_listing(locations)}
    data: ServeStatusReply = {
        "running": True,
        "url": record["url"],
        "pid": record["pid"],
        "uptime_s": round(time.time() - float(record.get("started", time.time())), 1),
        "db": record.get("db"),
        "log": str(log_path(locations)),
        "answering": False,
        "indexing": None,
        "folders": folder_listing(locations),
    }
    figures = _server_status(record["url"], make_token(locations))
    if figures is not None:
        if isinstance(figures.get("folders"), list):  # what the server reads, given folders included
            data["folders"] = figures["folders"]
        total, pending = int(figures.get("journals_total", 0)), int(figures.get("journals_pending", 0))
        data["answering"] = True
        data["indexing"] = {"complete": pending == 0, "journals_indexed": total - pending, "journals_total": total}
    return data


def _server_status(url: str, token: str) -> dict | None:
    """GET /-/pi-memory/api/status with the agent's token; None when it does not answer with figures."""
    request = urllib.request.Request(f"{url}/-/pi-memory/api/status", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as res:
            figures = json.loads(res.read())
    except (OSError, ValueError):
        return None
    return figures if isinstance(figures, dict) else None


def describe(data: Mapping[str, Any]) -> str:
    """`pimem serve status` for people: where, which process, how long, how far indexing is."""
    minutes, seconds = divmod(int(data["uptime_s"]), 60)
    hours, minutes = divmod(minutes, 60)
    uptime = f"{hours}h {minutes}m" if hours else f"{minutes}m {seconds}s"
    lines = [f"pimem serve is running at {data['url']}/-/pi-memory (pid {data['pid']}, up {uptime})"]
    indexing = data["indexing"]
    if indexing is None:
        lines.append("Indexing: unknown (the server does not answer yet)")
    else:
        done = "complete" if indexing["complete"] else "in progress"
        lines.append(f"Indexing: {indexing['journals_indexed']:,} of {indexing['journals_total']:,} journals ({done})")
    lines += [f"Index:    {data['db']}", f"Log:      {data['log']}"]
    lines += [f"Folder:   {describe_folder(folder)}" for folder in data["folders"]]
    return "\n".join(lines)


FOLDER_SOURCES = {"default": "the agent's own", "recorded": "recorded", "given": "this server only"}


def describe_folder(folder: Mapping[str, Any]) -> str:
    """A journal folder for people: its path, where it comes from, whether it is missing."""
    source = FOLDER_SOURCES.get(folder["source"], "PIMEM_SESSIONS_DIRS")
    return f"{folder['path']} ({source}{'' if folder['exists'] else ', missing'})"
