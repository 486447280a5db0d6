"""`pimem serve` and `pimem token`: Datasette on the index with this plugin, and the agent's token.

`serve` runs Datasette's own `serve` command in this process, so the server behaves
exactly like `datasette serve` (startup, lifespan, uvicorn) with the arguments pimem decides:
the index file (mutable), a persistent secret, metadata.yaml's instance words, and a
configuration that keeps anonymous visitors out and lets root do everything (root logs in with
login.py's one-time link, printed here). It records itself for `pimem serve status` (daemon.py).
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import secrets
import socket
import stat
import tempfile
from pathlib import Path

import click

from datasette_pi_memory import login
from datasette_pi_memory.catalog import instance_metadata
from datasette_pi_memory.server import hooks
from datasette_pi_memory.server.daemon import is_detached, record_server, url_host
from datasette_pi_memory.state import ACTION, AGENT_ID, PLUGIN
from pimem_index import Locations, UserError, open_located, refuse_planted

SECRET_FILE = "secret"


def ensure_secret(locations: Locations) -> str:
    """The server secret in <agent folder>/pi-memory/secret (0600, folder 0700), made once.

    Tokens and the root login cookie are signed with it, so they survive restarts.
    The file appears atomically (hard link of a finished temporary file), so a
    concurrent `pimem token` and `pimem serve` agree on one secret.
    """
    folder = locations.ensure_memory_dir()
    path = folder / SECRET_FILE
    for _attempt in range(3):
        try:
            value = path.read_text().strip()
        except FileNotFoundError:
            value = None
        if value:
            refuse_planted(path, "secret")  # another user's, or one others could write, would sign tokens
            if path.stat().st_mode & 0o077:
                os.chmod(path, 0o600)
            return value
        tmp: str | None
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".secret-")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_hex(32) + "\n")
            try:
                os.link(tmp, path)
            except FileExistsError:
                if value == "":  # an empty file left by something else: replace it
                    os.replace(tmp, path)
                    tmp = None
        finally:
            if tmp is not None:
                os.unlink(tmp)
    raise UserError(f"could not create the server secret {path}; check that folder's permissions")


def make_token(locations: Locations) -> str:
    """A signed Datasette API token (dstok_...) for the agent's actor, restricted to pi-memory-read."""
    from datasette.app import Datasette
    from datasette.tokens import TokenRestrictions

    secret = ensure_secret(locations)

    async def create() -> str:
        ds = Datasette(secret=secret)
        try:
            # Before startup the action is written by its full name, which every version reads.
            restrictions = TokenRestrictions().allow_all(ACTION)
            return await ds.create_token(AGENT_ID, restrictions=restrictions)
        finally:
            ds.close()

    return asyncio.run(create())


def metadata_and_config(locations: Locations, database: str, background_index: bool) -> tuple[dict, dict]:
    """The instance metadata (title, description) and the configuration pimem serve runs with.

    The index's own descriptions, table settings and canned queries come from the plugin's
    startup hook (catalog.py), as under any Datasette that serves the index.
    """
    config: dict = {
        # Only authenticated actors (root via the login link, the agent's token) see the
        # instance: anonymous visitors get no index metadata and no SQL.
        "allow": {"id": "*"},
        "allow_sql": {"id": "*"},
        # Datasette suggests facets by grouping every column of a table page; on the sessions view (which sums
        # each session's entries) that multiplied a page's cost by 10-20 on a big index (docs/performance.md).
        "settings": {"suggest_facets": False},
        "plugins": {
            PLUGIN: {
                "db": str(locations.db_path),
                "database": database,
                # recorded folders (folders.json) the plugin reads itself, and picks up when they change
                "sessions_dirs": [str(d) for d in locations.given_dirs if d not in locations.recorded_dirs],
                "background_index": background_index,
                "root": True,  # root may do everything, as with datasette --root (login.py logs root in)
            }
        },
    }
    return instance_metadata(), config


def serve(locations: Locations, host: str = "127.0.0.1", port: int = 8001, background_index: bool = True) -> None:
    """Run Datasette with this plugin on the index until interrupted."""
    from datasette.cli import serve as datasette_serve

    open_located(locations).close()  # the index's path problems, worded as every pimem command words them
    _check_port(host, port)
    secret = ensure_secret(locations)
    database = Path(locations.db_path).stem
    metadata, config = metadata_and_config(locations, database, background_index)
    base = f"http://{url_host(host)}:{port}"
    if not record_server(locations, host, port) and is_detached():
        raise UserError(f"another pimem serve is running (see: pimem serve status); not starting one on {base}")
    click.echo(f"Pi memory: {base}/-/pi-memory  (index {locations.db_path})")
    click.echo(f"Journals:  {', '.join(str(d) for d in locations.sessions_dirs)}")
    click.echo("API token for the Pi tool: pimem token  (send it as Authorization: Bearer ...)")
    if _output_is_seen_not_kept():
        click.echo(f"Log in as root (the reviewer) with this link, valid once for {login.TTL_SECONDS // 60} minutes")
        click.echo("(another at any time: pimem login):")
        click.echo(login.mint(secret, base))
    else:  # a log file or journald would keep a valid link for whoever reads it later
        click.echo("Log in as root (the reviewer): pimem login  (prints a one-time link)")
    args = [
        str(locations.db_path),
        "--host",
        host,
        "--port",
        str(port),
        "--secret",
        secret,
        "-c",
        _readable_once(json.dumps(config)),
        "-m",
        _readable_once(json.dumps(metadata)),
    ]
    hooks.register()
    datasette_serve.main(args=args, prog_name="pimem serve", standalone_mode=False)


def _output_is_seen_not_kept() -> bool:
    """Whether standard output is a terminal or a pipe (read by someone now), not a file or a socket
    (a log, journald) that keeps what is written."""
    try:
        mode = os.fstat(1).st_mode
    except OSError:
        return False
    return os.isatty(1) or stat.S_ISFIFO(mode)


def _check_port(host: str, port: int) -> None:
    """Fail with one line, before anything starts, when the address cannot be bound."""
    if not host.strip():
        raise UserError("--host needs an address of this machine (e.g. --host 127.0.0.1)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except (OSError, OverflowError, ValueError, TypeError, UnicodeError) as e:
            raise UserError(f"cannot listen on {host}:{port}: {_bind_problem(e, port)}") from None


def _bind_problem(error: BaseException, port: int) -> str:
    """Why a bind failed and what to pass instead, blaming the port or the host as the error does."""
    reason = getattr(error, "strerror", None) or str(error)
    if isinstance(error, OSError) and error.errno in (errno.EADDRINUSE, errno.EACCES):
        hint = " (is pimem serve already running?)" if error.errno == errno.EADDRINUSE else ""
        return f"{reason}{hint}; choose another port, e.g. pimem serve --port {port % 65535 + 1}"
    if isinstance(error, OverflowError):
        return f"{reason}; choose a port from 1 to 65535, e.g. pimem serve --port 8001"
    return f"{reason}; --host takes an address of this machine (e.g. --host 127.0.0.1)"


def _readable_once(text: str) -> str:
    """A /dev/fd path that reads back `text`: configuration passed without a file left behind.

    uvicorn re-raises SIGTERM after a graceful shutdown, so nothing written to disk here would
    reliably be cleaned up.
    """
    data = text.encode()
    read_fd, write_fd = os.pipe()
    if len(data) > 60_000:  # more than a pipe buffer holds
        os.close(read_fd)
        os.close(write_fd)
        raise UserError("the pimem serve configuration is unexpectedly large")
    os.write(write_fd, data)
    os.close(write_fd)
    return f"/dev/fd/{read_fd}"
