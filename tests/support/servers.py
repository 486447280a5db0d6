"""`pimem serve` as a real process on a free loopback port, and HTTP requests to it."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

START_TIMEOUT = 30


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a listening TCP socket on this port (from /proc/net/tcp*)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            addr, hexport = fields[1].split(":")
            if int(hexport, 16) == port and fields[3] == "0A":
                found.add(addr)
    return found


class Server:
    def __init__(self, env: dict, *args: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = env
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pimem_index", "serve", "--port", str(self.port), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            text=True,
            bufsize=1,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_ready(self) -> str:
        """Wait for the login link and for the port to answer; returns the link."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"pimem serve exited with {self.proc.returncode}:\n{self.output}")
            link = re.search(r"http://127\.0\.0\.1:\d+/-/pi-memory/login\?token=[\w.-]+", self.output)
            if link and "Uvicorn running" in self.output:
                return link.group(0)
            time.sleep(0.1)
        pytest.fail(f"pimem serve did not start within {START_TIMEOUT}s:\n{self.output}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)


def get(url: str, token: str | None = None, opener=None) -> tuple[int, str]:
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with opener.open(req, timeout=30) if opener else urllib.request.urlopen(req, timeout=30) as res:
            return res.status, res.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wait_indexed(server: Server, token: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = get(f"{server.url}/-/pi-memory/api/status", token)
        data = json.loads(body)
        if status == 200 and data["entries"] and not data["journals_pending"]:
            return
        time.sleep(0.1)
    pytest.fail(f"the background indexer did not catch up:\n{server.output}")
