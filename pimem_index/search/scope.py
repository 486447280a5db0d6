"""Scopes: which entries a caller may see, and every rule about them in one place.

The scopes, narrowest first, are session, project and global. A caller is capped at a widest
scope (`max_scope`: the agent's token at agent_max_scope, project by default); a request for
a wider one is refused, never narrowed. Without a scope a caller gets project when allowed
(`default_scope`). A project is the outermost folder above the caller's cwd that has sessions
of its own (`project_root`, never home or above); the API takes the cwd from the caller or
its journal (`checked_cwd` when the request is parsed, `project_cwd` when it is resolved).
`resolve_scope` turns a request into a Scope, whose SQL predicate is the one rule that keeps
other scopes' entries out.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NoReturn, Protocol

from pimem_index import db, store
from pimem_index.errors import Arg, UserError
from pimem_index.replies import ScopeName
from pimem_index.search import session_ids

SCOPES: tuple[str, ...] = tuple(s.value for s in ScopeName)  # narrowest first; plain strings for JSON keys
EXAMPLE_CWD = "/home/u/Apps/prjct"  # examples in messages
EXAMPLE_SESSION = "0b6e6f2c-..."


def allowed(scope: str | None, max_scope: str) -> bool:
    """Whether `scope` is a scope at most as wide as the cap `max_scope`."""
    return scope in SCOPES and SCOPES.index(scope) <= SCOPES.index(max_scope)


def offered(max_scope: str) -> list[str]:
    """The scopes a caller capped at `max_scope` may choose from, narrowest first (a page's choices)."""
    return [scope for scope in SCOPES if allowed(scope, max_scope)]


def wider(scope: str, max_scope: str) -> str | None:
    """The widest scope the cap allows when it is wider than `scope` (what to try after finding
    nothing), else None: never the scope already searched."""
    return max_scope if scope in SCOPES and SCOPES.index(max_scope) > SCOPES.index(scope) else None


def default_scope(max_scope: str) -> str:
    """project when allowed, else the widest allowed (a default, never a narrowed request)."""
    return "project" if allowed("project", max_scope) else max_scope


def page_default_scope(max_scope: str) -> str:
    """A page's scope when none is asked for: global for a reviewer who may see it, else `default_scope`."""
    return "global" if max_scope == "global" else default_scope(max_scope)


def figures_scope(cwd: str | None, max_scope: str, recent: str | None) -> tuple[str, str | None]:
    """The scope and cwd of a figures page (sessions, usage, the overview's headline): the project
    chosen (`cwd`), else every project when the cap allows it, else the most recent project (`recent`)."""
    if cwd:
        return "project", cwd
    if allowed("global", max_scope):
        return "global", None
    return "project", recent


def checked_setting(name: str, value: object) -> str:
    """A configured cap (e.g. agent_max_scope), or a UserError naming the setting `name`."""
    if value not in SCOPES:
        key = name.rpartition(".")[2]
        raise UserError(f"{name} must be session, project or global (e.g. {key}: project), got {value!r}")
    return str(value)


def journal_cwd(conn: db.Connection, path: str) -> str | None:
    """The project folder recorded in an indexed journal's header."""
    row = conn.execute("SELECT cwd FROM files WHERE path = ?", (os.path.abspath(path),)).fetchone()
    return row[0] if row else None


def checked_cwd(cwd: str | None, journal: str | None) -> str | None:
    """An API call's project folder as asked, without the index: cwd, which must be absolute, else None
    when its journal will say (`project_cwd`); neither is a UserError."""
    if cwd is not None and not os.path.isabs(cwd):
        raise UserError(f"cwd must be an absolute folder, got {cwd!r}", Arg("cwd", EXAMPLE_CWD))
    if cwd is None and journal is None:
        _needs_cwd()
    return cwd


def project_cwd(conn: db.Connection, cwd: str | None, journal: str | None) -> str:
    """The folder whose project an API call searches: cwd, else its journal's header cwd; must be absolute."""
    if cwd is None and journal is not None:
        cwd = journal_cwd(conn, journal)
    checked = checked_cwd(cwd, None)
    assert checked is not None  # checked_cwd raised otherwise
    return checked


def _needs_cwd() -> NoReturn:
    raise UserError(
        "scope 'project' needs cwd or journal",
        Arg("cwd", EXAMPLE_CWD),
        (Arg("scope", "session"), Arg("session_id", EXAMPLE_SESSION)),
    )


@dataclass(frozen=True)
class Scope:
    """Which entries a request may see: one session, one project root, or everything."""

    name: str
    root: str | None = None
    session_id: str | None = None
    exact: bool = False

    def __post_init__(self) -> None:
        """A session scope names its session and a project scope its root: the rule compares them."""
        if self.name == "session" and not self.session_id:
            raise ValueError("a session scope needs its session_id, e.g. Scope('session', session_id='0b6e6f2c-...')")
        if self.name == "project" and not self.root:
            raise ValueError("a project scope needs its root, e.g. Scope('project', root='/home/u/Apps/prjct')")

    def predicate(self) -> tuple[str, list]:
        """SQL over `files f` (and `e`) that keeps this scope's entries: the one scope rule.

        A project is its root and every folder below it, compared byte for byte (case-sensitive, no
        wildcard): the paths from `root/` up to `root0` (`0` follows `/`), never `LIKE`, which folds
        ASCII case and reads `_` and `%` as wildcards."""
        if self.name == "session":
            return "e.file_id IN (SELECT id FROM files WHERE session_id = ?)", [self.session_id]
        if self.name == "project":
            assert self.root is not None  # __post_init__
            if self.exact:
                return "e.file_id IN (SELECT id FROM files WHERE cwd = ?)", [self.root]
            return (
                "e.file_id IN (SELECT id FROM files WHERE cwd = ? OR (cwd >= ? || '/' AND cwd < ? || '0'))",
                [self.root, *[self.root.rstrip("/")] * 2],
            )
        return "1", []

    def term(self) -> str | None:
        """The same rule as a term of the index (store.scope_terms), or None for global.

        It narrows what FTS5 ranks to this scope's matches; the SQL predicate stays the rule.
        """
        if self.name == "session":
            assert self.session_id is not None  # __post_init__
            return store.scope_token("s", self.session_id)
        if self.name == "project":
            assert self.root is not None  # __post_init__
            return store.scope_token("c" if self.exact else "p", self.root.rstrip("/") or "/")
        return None

    def as_json(self) -> dict:
        return {"scope": self.name, "root": self.root if self.name == "project" else None}


def project_root(conn: db.Connection, cwd: str, home: str | None = None) -> tuple[str, bool]:
    """The outermost ancestor of cwd that has sessions of its own.

    A direct child of home or of `/` counts only when it is the cwd itself, and home, its
    ancestors and `/` never make a project of everything below them. Returns (root, exact).
    """
    cwd = os.path.normpath(cwd)
    home = os.path.normpath(home or os.path.expanduser("~"))
    if _home_or_above(cwd, home):
        return cwd, True
    chain = []
    path = cwd
    while True:
        chain.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    candidates = []
    for p in reversed(chain):
        if _home_or_above(p, home):
            continue
        parent = os.path.dirname(p)
        if parent in ("/", home) and p != cwd:
            continue
        candidates.append(p)
    if not candidates:
        return cwd, False
    marks = ",".join("?" * len(candidates))
    have = {r[0] for r in conn.execute(f"SELECT DISTINCT cwd FROM files WHERE cwd IN ({marks})", candidates)}
    for p in candidates:
        if p in have:
            return p, False
    return cwd, False


def _home_or_above(path: str, home: str) -> bool:
    """Whether path is home, one of its ancestors or `/`: never a project root above the cwd."""
    return path == "/" or path == home or home.startswith(path.rstrip("/") + "/")


class Cap(Protocol):
    """Who asks, as far as what it may see goes: its cap and where it stands (a request, or a page's viewer)."""

    @property
    def cwd(self) -> str | None: ...
    @property
    def journal_path(self) -> str | None: ...
    @property
    def max_scope(self) -> str: ...
    @property
    def home(self) -> str | None: ...


class ScopedRequest(Cap, Protocol):
    """What a request object (request.py) says about where it looks: a cap, and the scope and session asked for."""

    @property
    def scope(self) -> str | None: ...
    @property
    def session_id(self) -> str | None: ...


def request_scope(conn: db.Connection, request: ScopedRequest) -> Scope:
    """A request's scope, checked against its cap and resolved against the index (`resolve_scope`)."""
    return resolve_scope(
        conn,
        request.scope,
        cwd=request.cwd,
        session_id=request.session_id,
        journal_path=request.journal_path,
        max_scope=request.max_scope,
        home=request.home,
    )


def resolve_scope(
    conn: db.Connection,
    scope: str | None,
    *,
    cwd: str | None = None,
    session_id: str | None = None,
    journal_path: str | None = None,
    max_scope: str = "global",
    home: str | None = None,
) -> Scope:
    """Check a requested scope against the widest allowed and turn it into a Scope."""
    scope = scope or "project"
    if scope not in SCOPES:
        raise UserError(f"unknown scope {scope!r}: use session, project or global", Arg("scope", "project"))
    if not allowed(scope, max_scope):
        raise UserError(
            f"scope {scope!r} is wider than allowed here: the widest is {max_scope!r}", Arg("scope", max_scope)
        )
    if scope == "session":
        current = session_of(conn, journal_path)
        if session_id:
            session_id = known_session(conn, session_id)
        sid = session_id or current
        if not sid:
            raise UserError("scope 'session' needs a session id or a journal", Arg("session_id", EXAMPLE_SESSION))
        if session_id and session_id != current and max_scope != "global":
            _check_session_within(conn, session_id, current, cwd, max_scope, home)
        return Scope("session", session_id=sid)
    if scope == "project":
        # The caller's folder, else its journal's (an API call that named no cwd), else the current one.
        folder = cwd or (project_cwd(conn, None, journal_path) if journal_path else os.getcwd())
        root, exact = project_root(conn, folder, home)
        return Scope("project", root=root, exact=exact)
    return Scope("global")


def known_session(conn: db.Connection, session_id: str) -> str:
    """The full id of a session the index holds, named by its id, its short id or a unique prefix
    (`session_ids.resolve`); an unknown or ambiguous one is a UserError."""
    return session_ids.resolve(conn, session_id)


def _check_session_within(
    conn: db.Connection, session_id: str, current: str | None, cwd: str | None, max_scope: str, home: str | None
) -> None:
    """Under a cap, naming another session must not reach past the caller's own project."""
    if max_scope == "session":
        raise UserError(
            f"session {session_id} is not the current session, and the widest scope "
            "here is 'session' (e.g. omit the session id)"
        )
    if not cwd:
        raise UserError(
            "naming a session needs the current folder to check it belongs to this project", Arg("cwd", EXAMPLE_CWD)
        )
    root, exact = project_root(conn, cwd, home)
    where, params = Scope("project", root=root, exact=exact).predicate()
    where = where.replace("e.file_id IN", "id IN", 1)
    inside = conn.execute(
        f"SELECT 1 FROM files WHERE session_id = ? AND {where} LIMIT 1", [session_id, *params]
    ).fetchone()
    if not inside:
        raise UserError(
            f"session {session_id} is not in this project ({root}), and the widest scope here is {max_scope!r}",
            Arg("scope", "project"),
        )


def session_of(conn: db.Connection, journal_path: str | None) -> str | None:
    """The session of an indexed journal (the caller's current session), or None."""
    if not journal_path:
        return None
    row = conn.execute("SELECT session_id FROM files WHERE path = ?", (os.path.abspath(journal_path),)).fetchone()
    return row[0] if row else None


def visible_sessions(conn: db.Connection, request: Cap, session_ids: Iterable[str]) -> set[str]:
    """Which of these sessions the caller may see under its cap (a fork's parent or children are named
    only then): every one under global; under project, those of the caller's project (its cwd, else its
    journal's); under session, only the caller's current session."""
    ids = {s for s in session_ids if s}
    if not ids or request.max_scope == "global":
        return ids
    current = session_of(conn, request.journal_path)
    if request.max_scope == "session":
        return ids & {current} if current else set()
    cwd = request.cwd or (journal_cwd(conn, request.journal_path) if request.journal_path else None)
    if not cwd:
        return ids & {current} if current else set()
    root, exact = project_root(conn, cwd, request.home)
    where, params = Scope("project", root=root, exact=exact).predicate()
    where = where.replace("e.file_id IN", "id IN", 1)
    wanted = sorted(ids)
    rows = conn.execute(
        f"SELECT DISTINCT session_id FROM files WHERE session_id IN ({','.join('?' * len(wanted))}) AND {where}",
        [*wanted, *params],
    )
    return {row[0] for row in rows}
