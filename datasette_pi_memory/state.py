"""What the plugin knows about one Datasette instance: its configuration, the index and its threads.

Every read of journal text happens in pimem_index code on a worker thread with its own
connection opened through pimem_index (so the SQLite module is the one Datasette uses too),
never on the event loop.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from datasette_pi_memory.api import route_list
from datasette_pi_memory.kept import Recent
from pimem_index import IndexMemo, Locations, UserError, checked_setting, db, refreshed, resolve, store

if TYPE_CHECKING:
    from datasette_pi_memory.background import Indexer

PLUGIN = "datasette-pi-memory"
ACTION = "pi-memory-read"
ACTION_ABBR = "pmr"
AGENT_ID = "pi-agent"
DEFAULT_DATABASE = "history"
# Threads that answer the API. Its Python work holds one GIL, so past two (SQLite and the journal reads run
# beside it) more threads only hand the GIL back and forth: under 20 clients on 2 cores, 4 threads answered
# 0.8x the requests of 2 at 1.2x the CPU each (benchmarks/api_load.py). A query stops at query.QUERY_SECONDS.
WORKER_THREADS = 2
# Threads that build and render session pages, apart from the API's: a slow page never delays a search.
PAGE_THREADS = 2

logger = logging.getLogger("datasette_pi_memory")
_states: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_lock = threading.Lock()


@dataclass(frozen=True)
class Settings:
    """The plugin configuration after defaults are applied."""

    database: str
    locations: Locations
    agent_max_scope: str
    max_scope: str
    background_index: bool
    serves_index: bool = False  # this instance serves the index file (not only some other database)
    login_seconds: int = 24 * 3600  # how long root's login cookie lasts


def _scope_setting(config: dict, key: str, default: str) -> str:
    """A configured cap (pimem_index.search.scope.checked_setting); a wrong one stops Datasette starting."""
    from datasette.utils import StartupError

    try:
        return checked_setting(f"plugins.{PLUGIN}.{key}", config.get(key) or default)
    except UserError as e:
        raise StartupError(str(e)) from None


MAX_LOGIN_SECONDS = 366 * 24 * 3600


def _login_seconds(config: dict) -> int:
    """How long a login lasts (plugins.datasette-pi-memory.login_seconds); a wrong one stops Datasette starting."""
    from datasette.utils import StartupError

    value = config.get("login_seconds", Settings.login_seconds)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_LOGIN_SECONDS:
        raise StartupError(
            f"plugins.{PLUGIN}.login_seconds must be a number of seconds from 1 to {MAX_LOGIN_SECONDS} "
            f"(e.g. login_seconds: 86400 for a day), not {value!r}"
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
        locations = _resolved(db_path, dirs)
        wanted = _real(locations.db_path)
        for candidate, database in datasette.databases.items():
            if database.path and _real(Path(database.path)) == wanted:
                name = candidate
                break
        else:
            name = DEFAULT_DATABASE
    if db_path is None and name in datasette.databases and datasette.databases[name].path:
        db_path = datasette.databases[name].path
    locations = _resolved(db_path, dirs)
    served = (
        name in datasette.databases
        and datasette.databases[name].path is not None
        and same_file(datasette.databases[name].path, locations.db_path)
    )
    return Settings(
        database=name,
        locations=locations,
        agent_max_scope=_scope_setting(config, "agent_max_scope", "project"),
        max_scope=_scope_setting(config, "max_scope", "project"),
        # By default only an instance that serves the index indexes in the background, so
        # installing the plugin never starts an indexer under some other Datasette.
        background_index=bool(config.get("background_index", served)),
        serves_index=served,
        login_seconds=_login_seconds(config),
    )


def _resolved(db_path: str | None, dirs: list[str]) -> Locations:
    """pimem's locations for this instance; unreadable recorded folders stop Datasette starting, in one line."""
    from datasette.utils import StartupError

    try:
        return resolve(db_path, dirs)
    except UserError as e:
        raise StartupError(str(e)) from None


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name the same file once links are resolved."""
    return _real(Path(a)) == _real(Path(b))


def _real(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except OSError:
        return Path(os.path.abspath(path))


class PiMemory:
    """Per-instance state: settings, a small thread pool, one pimem connection per thread."""

    def __init__(self, datasette):
        self.settings = settings_for(datasette)
        self._locations = self.settings.locations
        self.executor = ThreadPoolExecutor(max_workers=WORKER_THREADS, thread_name_prefix="pi-memory")
        self.pages = ThreadPoolExecutor(max_workers=PAGE_THREADS, thread_name_prefix="pi-memory-pages")
        self._local = threading.local()
        self._connections: list = []
        self._conn_lock = threading.Lock()
        self.indexer: Indexer | None = None  # the background indexer supervisor, when running
        self._opened = store.file_id(self.locations.db_path)  # the index file the connections are on
        self._generation = 0  # bumped when that file was deleted or replaced: reopen
        self.memo = IndexMemo()  # what is kept for that index, shared by every thread's connection
        self.tokens = Recent()  # token -> actor, for a few seconds (tokens.IndexSecretTokens)
        self._permissions = Recent()  # actor -> whether it holds pi-memory-read, for a few seconds

    @property
    def locations(self) -> Locations:
        """The settings' locations with the journal folders recorded now (`pimem folders add` while it runs)."""
        self._locations = refreshed(self._locations)
        return self._locations

    def connection(self) -> db.Connection:
        """This thread's connection to the index (created, with its schema, on first use)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.generation != self._generation:
            self._local.conn = None  # forgotten before the reopen, which may fail (not an index) and is retried
            self._drop(conn)  # opened on a deleted or replaced index file
            conn = None
        if conn is None:
            generation, memo = self._generation, self.memo
            conn = store.open_index(self.locations.db_path, memo=memo)
            self._local.conn = conn
            self._local.generation = generation
            with self._conn_lock:
                self._connections.append(conn)
        return conn

    def _drop(self, conn) -> None:
        with self._conn_lock:
            self._connections.remove(conn)
        conn.close()

    def follow_index(self, datasette) -> None:
        """Reopen on an index file deleted or replaced under the server (one stat when it was not):
        this plugin's connections (each thread on its next use) and Datasette's own Database."""
        try:
            now = store.replaced(self.locations.db_path, self._opened)
        except (OSError, db.DatabaseError) as e:
            logger.warning("pi-memory: cannot create the index %s again: %s", self.locations.db_path, e)
            return
        if now is None:
            return
        self._opened = now
        self.memo = IndexMemo()  # nothing kept for the file that was there
        self._generation += 1
        self._reopen_served(datasette)

    def _reopen_served(self, datasette) -> None:
        """Datasette's Database for the index, replaced by a fresh one on the file there now."""
        from datasette.database import Database

        name = self.settings.database
        old = datasette.databases.get(name)
        if old is None or not old.path or not same_file(old.path, self.locations.db_path):
            return
        fresh = Database(datasette, path=old.path, is_mutable=old.is_mutable, mode=old.mode)
        datasette.remove_database(name)
        datasette.add_database(fresh, name=name, route=old.route)

    async def run(self, fn, *args, **kwargs):
        """Run fn(conn, *args, **kwargs) on a worker thread with that thread's connection."""
        return await self._on(self.executor, fn, *args, **kwargs)

    async def run_page(self, fn, *args, **kwargs):
        """Run fn(conn, *args, **kwargs) on a page thread (PAGE_THREADS), never one the API's queries use."""
        return await self._on(self.pages, fn, *args, **kwargs)

    async def _on(self, executor: ThreadPoolExecutor, fn, *args, **kwargs):
        def call():
            return fn(self.connection(), *args, **kwargs)

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(executor, functools.partial(call))

    async def allowed(self, datasette, actor: dict | None) -> bool:
        """Whether the actor holds pi-memory-read, as Datasette decides it (every plugin's rules, a token's
        restrictions: all in the actor), kept a few seconds (kept.SECONDS): it was most of a request's overhead."""
        key = json.dumps(actor, sort_keys=True, default=str)
        found = self._permissions.get(key)
        if found is None:
            found = bool(await datasette.allowed(action=ACTION, actor=actor))
            self._permissions.put(key, found)
        return found

    def max_scope_for(self, actor: dict | None) -> str:
        """The widest scope this actor may ask for: root global, the agent and others as configured."""
        actor_id = (actor or {}).get("id")
        if actor_id == "root":
            return "global"
        if actor_id == AGENT_ID:
            return self.settings.agent_max_scope
        return self.settings.max_scope

    def page_refusal(self, actor: dict | None) -> str | None:
        """Why this actor may not see the pages (or journal text in Datasette's tables), None if it may.

        Pages are for people: the agent reads through the API, and an actor capped to the
        session scope has no current session on a page (the API's journal= names it).
        """
        api = route_list()
        if (actor or {}).get("id") == AGENT_ID:
            return f"The Pi agent's token reads through the API ({api}), not the pages"
        if self.max_scope_for(actor) == "session":
            return (
                "These pages need at least the project scope; this actor may read only its current "
                f"session, through the API with journal= ({api})"
            )
        return None

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.pages.shutdown(wait=False, cancel_futures=True)
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


def existing_state(datasette) -> PiMemory | None:
    """The PiMemory for this Datasette if one was created (shutdown must not create one)."""
    with _lock:
        return _states.get(datasette)


def discard_state(datasette) -> None:
    """Drop this Datasette's PiMemory and close its threads and connections (at shutdown)."""
    with _lock:
        found = _states.pop(datasette, None)
    if found is not None:
        found.close()
