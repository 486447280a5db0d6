"""What the plugin knows about one Datasette instance: its configuration, the index and its threads.

Every read of journal text happens in pimem_index code on a worker thread with its own
connection opened through pimem_index (so the SQLite module is the one Datasette uses too),
never on the event loop.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pimem_index import db, store
from pimem_index.locations import Locations, resolve
from pimem_index.query import SCOPES

PLUGIN = "datasette-pi-memory"
ACTION = "pi-memory-read"
ACTION_ABBR = "pmr"
AGENT_ID = "pi-agent"
DEFAULT_DATABASE = "history"
WORKER_THREADS = 4

_states: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


@dataclass(frozen=True)
class Settings:
    """The plugin configuration after defaults are applied."""

    database: str
    locations: Locations
    agent_max_scope: str
    max_scope: str
    background_index: bool


def _scope_setting(config: dict, key: str, default: str) -> str:
    from datasette.utils import StartupError

    value = config.get(key) or default
    if value not in SCOPES:
        raise StartupError(
            f"plugins.{PLUGIN}.{key} must be session, project or global (e.g. {key}: project), got {value!r}"
        )
    return value


def settings_for(datasette) -> Settings:
    """Apply the plugin configuration's defaults against this instance's databases."""
    config = datasette.plugin_config(PLUGIN) or {}
    dirs = config.get("sessions_dirs") or []
    if isinstance(dirs, str):
        dirs = [dirs]
    db_path = config.get("db")
    name = config.get("database")
    if name is None:
        locations = resolve(db_path, dirs)
        wanted = _real(locations.db_path)
        for candidate, database in datasette.databases.items():
            if database.path and _real(Path(database.path)) == wanted:
                name = candidate
                break
        else:
            name = DEFAULT_DATABASE
    if db_path is None and name in datasette.databases and datasette.databases[name].path:
        db_path = datasette.databases[name].path
    locations = resolve(db_path, dirs)
    served = name in datasette.databases and datasette.databases[name].path is not None and (
        _real(Path(datasette.databases[name].path)) == _real(locations.db_path))
    return Settings(
        database=name,
        locations=locations,
        agent_max_scope=_scope_setting(config, "agent_max_scope", "project"),
        max_scope=_scope_setting(config, "max_scope", "project"),
        # By default only an instance that serves the index indexes in the background, so
        # installing the plugin never starts an indexer under some other Datasette.
        background_index=bool(config.get("background_index", served)),
    )


def _real(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except OSError:
        return Path(os.path.abspath(path))


class PiMemory:
    """Per-instance state: settings, a small thread pool, one pimem connection per thread."""

    def __init__(self, datasette):
        self.settings = settings_for(datasette)
        self.executor = ThreadPoolExecutor(max_workers=WORKER_THREADS, thread_name_prefix="pi-memory")
        self._local = threading.local()
        self._connections: list = []
        self._conn_lock = threading.Lock()
        self.indexer = None  # the background indexer supervisor, when running

    @property
    def locations(self) -> Locations:
        return self.settings.locations

    def connection(self) -> db.Connection:
        """This thread's connection to the index (created, with its schema, on first use)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = store.open_index(self.locations.db_path)
            self._local.conn = conn
            with self._conn_lock:
                self._connections.append(conn)
        return conn

    async def run(self, fn, *args, **kwargs):
        """Run fn(conn, *args, **kwargs) on a worker thread with that thread's connection."""

        def call():
            return fn(self.connection(), *args, **kwargs)

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, functools.partial(call))

    def max_scope_for(self, actor: dict | None) -> str:
        """The widest scope this actor may ask for: root global, the agent and others as configured."""
        actor_id = (actor or {}).get("id")
        if actor_id == "root":
            return "global"
        if actor_id == AGENT_ID:
            return self.settings.agent_max_scope
        return self.settings.max_scope

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        with self._conn_lock:
            for conn in self._connections:
                try:
                    conn.close()
                except Exception:
                    pass
            self._connections.clear()


def state(datasette) -> PiMemory:
    """The PiMemory for this Datasette, created on first use."""
    with _lock:
        found = _states.get(datasette)
        if found is None:
            found = PiMemory(datasette)
            _states[datasette] = found
        return found


def forget(datasette) -> None:
    with _lock:
        found = _states.pop(datasette, None)
    if found is not None:
        found.close()
