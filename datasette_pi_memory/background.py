"""Background indexing: a supervised `pimem index --watch` child process.

Parsing, redaction and FTS writes happen in a separate process, so they never hold the
server's event loop or GIL; the child writes in short transactions (pimem_index's batches)
so pages and the API stay responsive. The supervisor restarts the child if it dies and
terminates it on shutdown; on Linux the child also gets SIGTERM if the server dies.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from pimem_index import watch_command

logger = logging.getLogger("datasette_pi_memory")

INTERVAL_SECONDS = 1.0
RESTART_DELAYS = (1, 2, 5, 10, 30)
STOP_GRACE_SECONDS = 5.0


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class Indexer:
    """The supervisor of one Datasette's indexer child: owned by its PiMemory, gone with it."""

    def __init__(self, locations) -> None:
        self.locations = locations
        self.stopping = False
        self.child: asyncio.subprocess.Process | None = None

    async def supervise(self) -> None:
        """Run the child, restart it with growing delays when it dies, until `stop`."""
        failures = 0
        cmd = watch_command(self.locations, INTERVAL_SECONDS)
        while not self.stopping:
            proc = await asyncio.create_subprocess_exec(
                *cmd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            )
            self.child = proc
            try:
                code = await proc.wait()
            except asyncio.CancelledError:
                await _terminate(proc)
                raise
            finally:
                self.child = None
            if self.stopping:
                return
            delay = RESTART_DELAYS[min(failures, len(RESTART_DELAYS) - 1)]
            failures += 1
            logger.warning("pi-memory indexer exited with status %s; restarting in %ss", code, delay)
            await asyncio.sleep(delay)

    async def stop(self) -> None:
        """Terminate the child now (shutdown hooks run before background tasks are cancelled)."""
        self.stopping = True
        if self.child is not None:
            await _terminate(self.child)


async def _terminate(proc) -> None:
    if proc.returncode is not None:
        return
    try:
        proc.terminate()
    except ProcessLookupError:
        return
    try:
        await asyncio.wait_for(proc.wait(), STOP_GRACE_SECONDS)
    except TimeoutError:
        try:
            proc.kill()
        except ProcessLookupError:
            return
        await proc.wait()


def start(datasette, memory) -> None:
    """Register the supervised indexer with Datasette's background tasks."""
    indexer = Indexer(memory.locations)
    memory.indexer = indexer

    async def pi_memory_indexer(ds):
        await indexer.supervise()

    datasette.add_background_task(pi_memory_indexer, name="pi-memory-indexer")


async def stop(memory) -> None:
    """Stop this instance's indexer, if it runs one."""
    if memory.indexer is not None:
        await memory.indexer.stop()
