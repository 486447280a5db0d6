"""The hooks that only `pimem serve` adds to Datasette: its server record leaves with it."""

from __future__ import annotations

import os

from datasette import hookimpl

from datasette_pi_memory.server import daemon
from datasette_pi_memory.state import state


@hookimpl
def shutdown(datasette):
    async def inner():
        daemon.forget_server(state(datasette).locations, os.getpid())  # pimem serve's record, if it is ours

    return inner


def register() -> None:
    """Add these hooks to Datasette's plugin manager (once per process)."""
    import sys

    from datasette.plugins import pm

    module = sys.modules[__name__]
    if not pm.is_registered(module):
        pm.register(module, name="pimem-serve")
