"""The Datasette most plugin tests ask: the plugin over the `world` journals, indexed, with no background indexer."""

from __future__ import annotations

import pytest_asyncio
from support.plugin_world import make_datasette, running


@pytest_asyncio.fixture
async def ds(locations, world):
    async with running(make_datasette(locations)) as datasette:
        yield datasette
