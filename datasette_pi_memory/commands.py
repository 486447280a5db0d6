"""The `pimem` commands that need Datasette: `serve`, `token` and `pi install`/`pi uninstall`.

pimem_index's click group loads them through the `pimem_index.commands` entry point
(`register`), so the library names neither Datasette nor this plugin.
"""

from __future__ import annotations

import click

from pimem_index import pi_tool
from pimem_index.cli import common
from pimem_index.errors import UserError
from pimem_index.locations import Locations

from .serve import make_token
from .serve import serve as run_server


def register(cli: click.Group) -> None:
    """Add this plugin's commands to the `pimem` group (the `pimem_index.commands` entry point)."""
    for command in (serve, token, pi):
        cli.add_command(command)


@click.command()
@common
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default)")
@click.option("--port", default=8001, show_default=True, type=click.IntRange(1, 65535), help="Port to bind")
@click.option("--no-index", is_flag=True, help="Serve without indexing in the background")
def serve(locations: Locations, host, port, no_index):
    """Run Datasette with the pi-memory plugin on the index, indexing in the background.

    Prints a login link for the reviewer (root). Journal text needs that login or an API
    token (pimem token); anonymous visitors see nothing.

    \b
    Example:
        pimem serve --port 8001
    """
    run_server(locations, host=host, port=port, background_index=not no_index)


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
@click.option("--url", default="http://127.0.0.1:8001", show_default=True, help="Where pimem serve answers")
def pi_install(locations: Locations, url):
    """Put the memory_context extension into Pi's extensions folder, with a token to reach pimem serve.

    The URL and token go to <agent folder>/pi-memory/pi-tool.json (mode 0600), which the
    extension reads. Run it again after changing the port; it replaces both files.

    \b
    Example:
        pimem pi install --url http://127.0.0.1:8001
    """
    if not url.startswith(("http://", "https://")):
        raise UserError(f"--url must be an http(s) address (e.g. --url http://127.0.0.1:8001), not {url!r}")
    written = pi_tool.install(locations.agent, url.rstrip("/"), make_token(locations))
    for path in written:
        click.echo(f"Wrote {path}")
    click.echo("Restart Pi to load the memory_context tool; keep `pimem serve` running.")


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
