"""The `pimem` commands that need Datasette: `serve` (with `status`, `stop`), `token`, `login` and `pi`.

pimem_index's click group loads them through the `pimem_index.commands` entry point
(`register`), so the library names neither Datasette nor this plugin.
"""

from __future__ import annotations

import urllib.parse

import click

from datasette_pi_memory.login import mint
from datasette_pi_memory.server import daemon, pi_tool, service
from datasette_pi_memory.server.serve import ensure_secret, make_token
from datasette_pi_memory.server.serve import serve as run_server
from pimem_index import Locations, UserError, location_args, record_folders, refreshed
from pimem_index.cli import common, emit_json

DEFAULT_PORT = 8001


def register(cli: click.Group) -> None:
    """Add this plugin's commands to the `pimem` group (the `pimem_index.commands` entry point)."""
    for command in (serve, token, login, pi):
        cli.add_command(command)


@click.group(invoke_without_command=True)
@common
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default)")
@click.option(
    "--port",
    default=None,
    type=click.IntRange(1, 65535),
    help=f"Port to bind [default: the one pimem pi install chose, else {DEFAULT_PORT}]",
)
@click.option("--no-index", is_flag=True, help="Serve without indexing in the background")
@click.option(
    "--background", is_flag=True, help="Start detached, return once it answers (log in <agent folder>/pi-memory)"
)
@click.option("--install", is_flag=True, help="Run it from login on: write and enable a systemd user unit (Linux)")
@click.option("--uninstall", is_flag=True, help="Disable and remove that unit")
@click.pass_context
def serve(ctx, locations: Locations, host, port, no_index, background, install, uninstall):
    """Run Datasette with the pi-memory plugin on the index, indexing in the background.

    Prints a login link for the reviewer (root). Journal text needs that login or an API
    token (pimem token); anonymous visitors see nothing. With --background it runs detached
    until `pimem serve stop`; `pimem serve status` tells whether it runs. --install makes
    systemd start it at login.

    \b
    Examples:
        pimem serve --port 8001
        pimem serve --background
    """
    if ctx.invoked_subcommand is not None:
        return
    if port is None:
        port = default_port(locations)
    if install and uninstall:
        raise UserError("--install and --uninstall exclude each other (e.g. pimem serve --install --port 8001)")
    if not uninstall:
        locations = record_given(locations)
    if install or uninstall:
        lines = (
            service.install(locations, host, port, not no_index, lambda: daemon.stop(locations))
            if install
            else service.uninstall()
        )
        click.echo("\n".join(lines))
        return
    if background:
        _start_background(locations, host, port, not no_index)
        return
    run_server(locations, host=host, port=port, background_index=not no_index)


def default_port(locations: Locations) -> int:
    """The port every start uses unless told: the one `pimem pi install` recorded for the tool, else 8001."""
    return pi_tool.recorded_port(locations.agent) or DEFAULT_PORT


def record_given(locations: Locations) -> Locations:
    """Record the --sessions-dir folders (serve and pi install keep them for every later command and
    server); the locations with them recorded. A folder PIMEM_SESSIONS_DIRS names too is left to it (the
    background server gets those as flags, and must not record them)."""
    given = [d for d in locations.given_dirs if d not in locations.env_dirs]
    for path in record_folders(locations.agent, given):
        click.echo(f"Recorded journal folder {path} (pimem folders list; pimem folders remove DIR)")
    return refreshed(locations)


def _start_background(locations: Locations, host: str, port: int, background_index: bool) -> None:
    """Start the background server, or say the one running; either way its URL."""
    record = daemon.start_background(locations, host, port, background_index)
    if record["already"]:
        elsewhere = "" if record.get("port") == port else f" (not on port {port})"
        click.echo(
            f"pimem serve is already running at {record['url']}{elsewhere} (pid {record['pid']}); "
            "stop it: pimem serve stop"
        )
        return
    click.echo(f"pimem serve is running at {record['url']}/-/pi-memory (pid {record['pid']})")
    click.echo(f"Log: {daemon.log_path(locations)}")
    click.echo("Log in as root: pimem login   Stop it: pimem serve stop")


@serve.command(name="status")
@common
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON")
def serve_status(locations: Locations, as_json):
    """Whether the pimem server runs: URL, pid, uptime and indexing progress (exit 1 when it does not).

    \b
    Example:
        pimem serve status --json
    """
    data = daemon.status(locations, make_token)
    if as_json:
        emit_json(data)
    elif not data["running"]:
        click.echo("pimem serve is not running; start it: pimem serve --background")
        for folder in data["folders"]:
            click.echo(f"Folder:   {daemon.describe_folder(folder)}")
    else:
        click.echo(daemon.describe(data))
    if not data["running"]:
        raise SystemExit(1)


@serve.command(name="stop")
@common
def serve_stop(locations: Locations):
    """Stop the running pimem server and its indexer; returns once the port is free.

    \b
    Example:
        pimem serve stop
    """
    record = daemon.stop(locations)
    if record is None:
        click.echo("pimem serve is not running.")
        return
    click.echo(f"Stopped pimem serve at {record['url']} (pid {record['pid']}).")


@click.command()
@common
@click.option("--url", default=None, help="The server's address when no running pimem serve is recorded")
def login(locations: Locations, url):
    """Print a fresh login link (root, valid once for a few minutes) to the running server's Pi memory page.

    \b
    Example:
        pimem login
    """
    if url is None:
        record = daemon.running_server(locations)
        if record is None:
            raise UserError(
                "pimem serve is not running; start it (pimem serve --background) or name the server "
                "(e.g. pimem login --url http://127.0.0.1:8001)"
            )
        url = record["url"]
    elif not url.startswith(("http://", "https://")):
        raise UserError(f"--url must be an http(s) address (e.g. --url http://127.0.0.1:8001), not {url!r}")
    click.echo(mint(ensure_secret(locations), url))


@click.command()
@common
def token(locations: Locations):
    """Print an API token the Pi tool can use against pimem serve (restricted to pi-memory).

    \b
    Example:
        curl -H "Authorization: Bearer $(pimem token)" http://127.0.0.1:8001/-/pi-memory/api/status
    """
    click.echo(make_token(locations))


@click.group()
def pi():
    """Install or remove the memory_context tool in Pi."""


@pi.command(name="install")
@common
@click.option(
    "--url",
    default=None,
    help=f"Where pimem serve answers [default: the URL installed before, else http://127.0.0.1:{DEFAULT_PORT}]",
)
@click.option("--no-start", is_flag=True, help="Do not start the background server now")
def pi_install(locations: Locations, url, no_start):
    """Put the memory_context extension into Pi's extensions folder, with a token to reach pimem serve,
    and start the server in the background (a local --url only).

    The URL, the token and how to start the server (this pimem's absolute path with
    `serve --background` and its port) go to <agent folder>/pi-memory/pi-tool.json (mode 0600),
    which the extension reads; it starts the server itself when it cannot reach it. Run it again
    after changing the port; it replaces both files.

    \b
    Example:
        pimem pi install --url http://127.0.0.1:8001
    """
    if url is None:  # installing again (a new token, a new pimem) keeps the port every start uses
        url = pi_tool.recorded_url(locations.agent) or f"http://127.0.0.1:{DEFAULT_PORT}"
    if not url.startswith(("http://", "https://")):
        raise UserError(f"--url must be an http(s) address (e.g. --url http://127.0.0.1:8001), not {url!r}")
    address = local_address(url)
    locations = record_given(locations)
    start = None if address is None else [*pi_tool.pimem_command(), *background_args(locations, *address)]
    written = pi_tool.install(locations.agent, url.rstrip("/"), make_token(locations), start)
    for path in written:
        click.echo(f"Wrote {path}")
    if address is None:
        click.echo(f"Restart Pi to load the memory_context tool; keep the server at {url} running.")
        return
    if not no_start:
        _start_for_pi(locations, *address)
    click.echo("Restart Pi to load the memory_context tool; it starts the server itself when it is not running.")


def local_address(url: str) -> tuple[str, int] | None:
    """(host, port) of an http URL on this machine's loopback, which pimem can start a server on; else None."""
    parts = urllib.parse.urlsplit(url)
    host = {"localhost": "127.0.0.1"}.get(parts.hostname or "", parts.hostname or "")
    if parts.scheme != "http" or host not in ("127.0.0.1", "::1"):
        return None
    try:
        return host, parts.port or 80
    except ValueError:
        return None


def background_args(locations: Locations, host: str, port: int) -> list[str]:
    """The pimem arguments that start the background server on host:port over these locations."""
    return ["serve", "--background", "--host", host, "--port", str(port), *location_args(locations)]


def _start_for_pi(locations: Locations, host: str, port: int) -> None:
    """Start the background server now; a failure is reported, not fatal (the tool tries again)."""
    try:
        record = daemon.start_background(locations, host, port)
    except UserError as e:
        click.echo(f"Could not start the server now ({e}); the tool tries again on its first call.", err=True)
        return
    click.echo(f"pimem serve is {'already ' if record['already'] else ''}running at {record['url']}")
    if record.get("port") != port:
        click.echo(
            f"The tool is set up for port {port}: stop that server (pimem serve stop) so the tool starts its own.",
            err=True,
        )


@pi.command(name="uninstall")
@common
def pi_uninstall(locations: Locations):
    """Remove the memory_context extension and its settings from the agent folder.

    \b
    Example:
        pimem pi uninstall
    """
    removed = pi_tool.uninstall(locations.agent)
    for path in removed:
        click.echo(f"Removed {path}")
    if not removed:
        click.echo("The memory_context tool was not installed.")
