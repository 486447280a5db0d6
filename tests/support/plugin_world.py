"""The two-project world the plugin tests serve: its words, a Datasette over it, API paths and tokens.

The `world` and `token` fixtures themselves are in conftest.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlencode

from datasette_test import Datasette

from datasette_pi_memory.server.serve import ensure_secret, metadata_and_config
from datasette_pi_memory.state import PLUGIN

HERON = "heron pipeline deploy notes"
FLUENT = "kestrel migration only in the fluenty project"
ROOT = {"id": "root"}


def make_datasette(locations, plugin_config=None, **kwargs) -> Datasette:
    """A Datasette over the index as `pimem serve` starts it (root enabled), without background indexing."""
    config = {"background_index": False, **(plugin_config or {})}
    ds = Datasette([str(locations.db_path)], secret=ensure_secret(locations), plugin_config={PLUGIN: config}, **kwargs)
    ds.root_enabled = True  # what `pimem serve` gets from Datasette's --root
    return ds


def pimem_serve_datasette(locations) -> Datasette:
    """A Datasette with exactly the configuration and metadata `pimem serve` uses (root enabled)."""
    metadata, config = metadata_and_config(locations, "history", background_index=False)
    ds = Datasette([str(locations.db_path)], secret=ensure_secret(locations), config=config, metadata=metadata)
    ds.root_enabled = True
    return ds


def bearer(token: str) -> dict:
    """Request options sending `token` as the bearer token."""
    return {"headers": {"Authorization": f"Bearer {token}"}}


def api_path(action: str, world, **params) -> str:
    """The JSON API path of `action` over the world (a search for heron, a read of its first entry)."""
    base = {"q": "heron", "cwd": world["cwd_a"]}
    if action == "read":
        base = {"id": world["ids"]["user"], "cwd": world["cwd_a"]}
    if action == "status":
        base = {}
    base.update(params)
    return f"/-/pi-memory/api/{action}?{urlencode(base, doseq=True)}"


@contextlib.asynccontextmanager
async def running(datasette: Datasette) -> AsyncIterator[Datasette]:
    """The Datasette started (its startup hooks run), and shut down however the block ends."""
    await datasette.invoke_startup()
    try:
        yield datasette
    finally:
        await datasette.invoke_shutdown()


async def page_html(datasette, path: str, **params) -> str:
    """A page's HTML as root sees it; anything but a 200 fails the test with the start of the answer."""
    res = await datasette.client.get(path, params=params, actor=ROOT)
    assert res.status_code == 200, res.text[:500]
    return res.text
