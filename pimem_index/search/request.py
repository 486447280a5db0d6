"""What a search, summaries or read asks for: one request object per query kind, checked once.

A SearchRequest (search and summaries) or a ReadRequest holds every filter of one query,
checked when it is built: `create` from values, `from_options` from the CLI's options,
`from_args` from the API's and the pages' parameters (`query_args`), all without the index.
The query functions (`query.search`, `query.summaries`, `query.read`) take them, so a new
filter touches its request, the query and the docs. The query text is cut into its terms
here, once (`query_terms`): the request carries them and so does the reply, which is what
the CLI and the pages mark. The checks of each field, with their one-line errors, live here
too; the scope is checked against the cap and resolved when the query resolves it
(`scope.request_scope`), where the index knows the sessions and the caller's journal.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from pimem_index import db, journal, store
from pimem_index.errors import Arg, UserError
from pimem_index.search.scope import allowed, checked_cwd, default_scope

DEFAULT_LIMIT = 10
MAX_LIMIT = 100
# The largest offset asked for (hits, sessions, a session page's entries, a read's characters): far past
# any real index or entry, and far below what SQLite binds (2**63 - 1).
MAX_OFFSET = 10**9
# The years a date may name: journals exist from 1970 (epoch milliseconds) and datetime arithmetic on a
# day or a week around the bound stays within Python's years 1 to 9999.
FIRST_YEAR, LAST_YEAR = 1970, 2199
# A search's size. Measured on the benchmark corpus (500 MB, 124,000 entries, 2 cores): the 64
# most common words take 1.6 s globally, 0.8 s in a project; 990 of them took 4.4 s and 1,000
# overflow SQLite's expression depth. A pasted error message of a few dozen words fits.
MAX_TERMS = 64
# The API's and the pages' parameters, each given once (`kind` may be repeated: `query_args`).
PARAMETERS = (
    "q",
    "scope",
    "cwd",
    "session_id",
    "id",
    "since",
    "until",
    "limit",
    "offset",
    "around",
    "like",
    "excerpt",
    "journal",
    "by",
    "model",
    "sort",
)

_TERM = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class SearchRequest:
    """A search or summaries, checked: its terms, the scope asked for and where from, dates as UTC
    ISO, kinds and a limit, under the caller's cap `max_scope`. Build one with `create`,
    `from_options` or `from_args`."""

    query: str | None
    terms: tuple[str, ...]
    scope: str | None = "project"
    cwd: str | None = None
    session_id: str | None = None
    journal_path: str | None = None
    since: str | None = None
    until: str | None = None
    kinds: tuple[str, ...] = ()
    limit: int = DEFAULT_LIMIT
    max_scope: str = "global"
    home: str | None = None
    summaries: bool = False  # compaction and branch summaries only
    offset: int = 0  # hits skipped: the page starts after them
    phrases: tuple[tuple[str, ...], ...] = ()  # quoted phrases of two words or more (`query_phrases`)
    like: str | None = None  # an entry id: only entries of the same text as it (what a hit's `like` counts)
    written: frozenset[str] = frozenset()  # the terms that are parts of an identifier: only as written
    excerpt_chars: int = 300  # how long each hit's excerpt is, at most (about)

    @property
    def action(self) -> str:
        """The reply's `action`."""
        return "summaries" if self.summaries else "search"

    @classmethod
    def create(
        cls,
        query: str | None = None,
        *,
        scope: str | None = "project",
        cwd: str | None = None,
        session_id: str | None = None,
        journal_path: str | None = None,
        since: str | None = None,
        until: str | None = None,
        kinds: Iterable[str] | None = (),
        limit: Any = None,
        max_scope: str = "global",
        home: str | None = None,
        summaries: bool = False,
        offset: Any = None,
        like: str | None = None,
        excerpt: Any = None,
    ) -> SearchRequest:
        """Check every field once (a UserError names the first wrong one); summaries default to
        both summary kinds and refuse any other."""
        wanted = check_summary_kinds(kinds) if summaries else None  # checked first, as always
        terms = check_terms(query_terms(query))
        checked_kinds = check_kinds(wanted or (journal.SUMMARY_KINDS if summaries else kinds))
        return cls(
            query=query,
            terms=tuple(terms),
            scope=scope,
            cwd=cwd,
            session_id=session_id,
            journal_path=journal_path,
            since=parse_bound(since, end=False, name="since"),
            until=parse_bound(until, end=True, name="until"),
            kinds=tuple(checked_kinds),
            limit=check_limit(limit),
            max_scope=max_scope,
            home=home,
            summaries=summaries,
            offset=check_offset(offset, example=20),
            phrases=query_phrases(query),
            written=identifier_parts(query),
            like=like or None,
            excerpt_chars=check_excerpt(excerpt),
        )

    @classmethod
    def from_options(
        cls, query: str | None, *, cwd: str | None, summaries: bool = False, **options: Any
    ) -> SearchRequest:
        """From the CLI's options: `--cwd` (relative to the current folder, which it defaults to) made
        absolute; naming a session (`--session`) without a `--scope` searches that session."""
        if options.get("session_id") and not options.get("scope"):
            options["scope"] = "session"
        return cls.create(query, cwd=os.path.abspath(cwd or os.getcwd()), summaries=summaries, **options)

    @classmethod
    def from_args(
        cls,
        args: Mapping[str, Any],
        *,
        max_scope: str,
        journal_path: str | None = None,
        summaries: bool = False,
    ) -> SearchRequest:
        """From the API's or a page's parameters (`query_args`): the cap's default scope when none
        is asked for, and a project's cwd from the caller, which must be absolute, else from its
        journal (`journal_path`, checked by the caller) when the query resolves it (`scope.checked_cwd`)."""
        scope, cwd = _scope_and_cwd(args, max_scope, journal_path)
        return cls.create(
            args.get("q"),
            scope=scope,
            cwd=cwd,
            session_id=args.get("session_id"),
            journal_path=journal_path,
            since=args.get("since"),
            until=args.get("until"),
            kinds=args.get("kinds"),
            limit=args.get("limit"),
            max_scope=max_scope,
            summaries=summaries,
            offset=args.get("offset"),
            like=args.get("like"),
            excerpt=args.get("excerpt"),
        )


@dataclass(frozen=True)
class ReadRequest:
    """A read of one entry, checked: its id, the session preferred, the scope asked for and where
    from, and the page's character offset, under the caller's cap `max_scope`. Build one with
    `create`, `from_options` or `from_args`."""

    id: str
    session_id: str | None = None
    cwd: str | None = None
    scope: str | None = "project"
    journal_path: str | None = None
    offset: int = 0
    max_scope: str = "global"
    home: str | None = None
    around: int = 0  # entries before and after it on its branch (exchange.around)
    terms: tuple[str, ...] = ()  # the words of a query to mark in the text (`q`, cut by `query_terms`)

    @classmethod
    def create(
        cls,
        entry_id: str | None,
        *,
        session_id: str | None = None,
        cwd: str | None = None,
        scope: str | None = "project",
        journal_path: str | None = None,
        offset: Any = 0,
        max_scope: str = "global",
        home: str | None = None,
        around: Any = None,
        query: str | None = None,
    ) -> ReadRequest:
        """Check every field once (a UserError names the first wrong one); `query`'s terms are what a
        page marks in the text (the search it was opened from)."""
        checked_offset = check_offset(offset)
        checked_around = check_around(around)
        if not entry_id:
            raise UserError("read needs an entry id", Arg("id", "c3d4e5f6"))
        return cls(
            id=entry_id,
            session_id=session_id,
            cwd=cwd,
            scope=scope,
            journal_path=journal_path,
            offset=checked_offset,
            max_scope=max_scope,
            home=home,
            around=checked_around,
            terms=tuple(query_terms(query)),
        )

    @classmethod
    def from_options(cls, entry_id: str, *, cwd: str | None, **options: Any) -> ReadRequest:
        """From the CLI's options: `--cwd` (relative to the current folder, which it defaults to) made absolute;
        naming a session (`--session`) without a `--scope` reads that session's entry, from any folder."""
        if not options.get("scope"):
            options["scope"] = "session" if options.get("session_id") else "project"
        return cls.create(entry_id, cwd=os.path.abspath(cwd or os.getcwd()), **options)

    @classmethod
    def from_args(cls, args: Mapping[str, Any], *, max_scope: str, journal_path: str | None = None) -> ReadRequest:
        """From the API's or the read page's parameters (`query_args`), with the same scope and cwd rules as
        a search; `q` names the words to mark."""
        scope, cwd = _scope_and_cwd(args, max_scope, journal_path)
        return cls.create(
            args.get("id") or "",
            session_id=args.get("session_id"),
            cwd=cwd,
            scope=scope,
            journal_path=journal_path,
            offset=args.get("offset"),
            max_scope=max_scope,
            around=args.get("around"),
            query=args.get("q"),
        )


def query_args(args: Any) -> dict[str, Any]:
    """The API's and the pages' parameters from request args (anything with `get` and `getlist`, as
    Datasette's request.args): each as given, an empty one as absent; every `kind` as `kinds`."""
    values: dict[str, Any] = {name: args.get(name) or None for name in PARAMETERS}
    values["kinds"] = [kind for kind in args.getlist("kind") if kind]
    return values


def _scope_and_cwd(args: Mapping[str, Any], max_scope: str, journal_path: str | None) -> tuple[str, str | None]:
    """The scope asked for (else the cap's default) and, for an allowed project scope, its cwd checked
    (`scope.checked_cwd`: None when the journal's will be taken).

    An unknown or too wide scope is left for `scope.resolve_scope` to refuse with its message.
    """
    scope = args.get("scope") or default_scope(max_scope)
    cwd = args.get("cwd")
    if scope == "project" and allowed(scope, max_scope):
        cwd = checked_cwd(cwd, journal_path)
    return scope, cwd


def check_summary_kinds(kinds: Iterable[str] | None) -> list[str]:
    """Summaries hold only compaction and branch_summary entries."""
    kinds = check_kinds(kinds)
    wrong = [k for k in kinds if k not in journal.SUMMARY_KINDS]
    if wrong:
        raise UserError(
            f"summaries holds only compaction and branch_summary entries, not {wrong[0]!r}", Arg("kind", "compaction")
        )
    return kinds


def parse_bound(value: str | None, *, end: bool, name: str) -> str | None:
    """A YYYY-MM-DD local day (its first or last millisecond) or an ISO date-time, as UTC ISO."""
    if value is None or value == "":
        return None
    text = value.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            day = date.fromisoformat(text)
            clock = (23, 59, 59, 999_000) if end else (0, 0, 0, 0)
            dt = datetime(day.year, day.month, day.day, *clock).astimezone()
        else:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
            if dt.tzinfo is None:
                dt = dt.astimezone()
    except ValueError:
        raise UserError(
            f"{name}: cannot read {value!r} as a date: use YYYY-MM-DD or an ISO date-time",
            Arg(name, "2026-03-15"),
            Arg(name, "2026-03-15T22:40:00Z"),
        ) from None
    except OverflowError:  # a day at the edge of Python's years, moved to UTC
        dt = None
    if dt is None or not FIRST_YEAR <= dt.year <= LAST_YEAR or not FIRST_YEAR <= dt.astimezone(UTC).year <= LAST_YEAR:
        raise UserError(
            f"{name}: {value!r} must fall between {FIRST_YEAR} and {LAST_YEAR}",
            Arg(name, "2026-03-15"),
            Arg(name, "2026-03-15T22:40:00Z"),
        )
    return journal.iso_utc(dt)


def check_kinds(kinds: Iterable[str] | None) -> list[str]:
    """Each kind one of journal.KINDS (empty ones dropped)."""
    kinds = [k for k in (kinds or ()) if k]
    for k in kinds:
        if k not in journal.KINDS:
            raise UserError(f"unknown kind {k!r}: use one of {', '.join(journal.KINDS)}", Arg("kind", "tool_result"))
    return kinds


def check_limit(limit: Any) -> int:
    """A result count from 1 to MAX_LIMIT; DEFAULT_LIMIT when none is given."""
    if limit is None or limit == "":
        return DEFAULT_LIMIT
    try:
        value = int(limit)
    except (TypeError, ValueError):
        raise UserError(f"limit must be a whole number from 1 to {MAX_LIMIT}", Arg("limit", 20)) from None
    if not 1 <= value <= MAX_LIMIT:
        raise UserError(f"limit must be a whole number from 1 to {MAX_LIMIT}", Arg("limit", 20))
    return value


# A hit's excerpt, in characters: the shortest and the longest (the default) one may ask for.
EXCERPT_RANGE = (60, 300)


def check_excerpt(excerpt: Any) -> int:
    """How long each hit's excerpt is: 60 to 300 characters; 300 when none is given."""
    if excerpt is None or excerpt == "":
        return EXCERPT_RANGE[1]
    try:
        value = int(excerpt)
    except (TypeError, ValueError):
        value = -1
    if not EXCERPT_RANGE[0] <= value <= EXCERPT_RANGE[1]:
        raise UserError("excerpt must be a whole number of characters from 60 to 300", Arg("excerpt", 120))
    return value


# Entries a read shows around its entry, at most, on each side.
MAX_AROUND = 20


def check_around(around: Any) -> int:
    """How many entries before and after a read's entry to show: 0 to MAX_AROUND; 0 when none is given."""
    if around is None or around == "":
        return 0
    try:
        value = int(around)
    except (TypeError, ValueError):
        value = -1
    if not 0 <= value <= MAX_AROUND:
        raise UserError(f"around must be a whole number from 0 to {MAX_AROUND}", Arg("around", 3))
    return value


def check_offset(offset: Any, example: int = 16000) -> int:
    """An offset (characters of a read, hits of a search, sessions, a session page's entries) from 0 to
    MAX_OFFSET; 0 when none is given."""
    if offset is None or offset == "":
        return 0
    try:
        value = int(offset)
    except (TypeError, ValueError):
        if not (isinstance(offset, str) and offset.strip().isdigit()):  # else too many digits for int()
            raise UserError("offset must be a whole number, 0 or more", Arg("offset", example)) from None
        value = MAX_OFFSET + 1
    if value < 0:
        raise UserError("offset must be a whole number, 0 or more", Arg("offset", example))
    if value > MAX_OFFSET:
        raise UserError(f"offset must be a whole number from 0 to {MAX_OFFSET:,}", Arg("offset", example))
    return value


def query_terms(query: str | None) -> list[str]:
    """Every run of letters or digits: FTS5 syntax in a query is only text.

    A run is cut where FTS5's tokenizer would cut it, so each term is one token (the index
    keeps no positions, so FTS5 refuses a quoted term of two tokens).
    """
    seen: list[str] = []
    for run in _TERM.findall(query or ""):
        for term in _split_at_separators(run):
            t = term.lower()
            if t and t not in seen:
                seen.append(t)
    return seen


# A query's identifier: a word holding a digit, an inner `_` or `.`, or a lower letter then a capital
# (`parse_args`, `request.py`, `utf8`, `getUser`). It names one thing, so its parts have no other forms.
_IDENTIFIER = re.compile(r"\d|\w[_.]\w|[a-z][A-Z]")


def identifier_parts(query: str | None) -> frozenset[str]:
    """The query terms (as `query_terms` cuts them) that are parts of an identifier: they match as written."""
    words = (w.strip("\"'`()[]{}<>,.;:!?") for w in (query or "").split())
    return frozenset(t for w in words if _IDENTIFIER.search(w) for t in query_terms(w))


_QUOTED = re.compile(r'"([^"]*)"')


def query_phrases(query: str | None) -> tuple[tuple[str, ...], ...]:
    """The query's double-quoted phrases of two words or more, each as its words in order (cut as
    `query_terms` cuts them); a quoted single word is only a term, and an unclosed quote is text."""
    phrases: list[tuple[str, ...]] = []
    for quoted in _QUOTED.findall(query or ""):
        words = tuple(t.lower() for run in _TERM.findall(quoted) for t in _split_at_separators(run) if t)
        if len(words) > 1 and words not in phrases:
            phrases.append(words)
    return tuple(phrases)


def _split_at_separators(run: str) -> list[str]:
    if run.isascii():
        return [run]
    parts = [""]
    for char in run:
        if _fts_separator(char):
            parts.append("")
        else:
            parts[-1] += char
    return parts


@functools.lru_cache(maxsize=4096)
def _fts_separator(char: str) -> bool:
    """Whether FTS5's unicode61 tokenizer treats a letter or digit Python accepts as a separator
    (a few letters newer than its Unicode tables): asked of FTS5 itself, once per character."""
    if char.isascii():
        return False
    probe = db.connect(":memory:")
    try:
        probe.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, {store.FTS_OPTIONS})")
        probe.execute("SELECT count(*) FROM t WHERE t MATCH ?", (f'"a{char}b"',)).fetchone()
        return False
    except db.OperationalError:
        return True
    finally:
        probe.close()


def check_terms(terms: list[str]) -> list[str]:
    """At most MAX_TERMS distinct words: a longer query would hold a worker thread for seconds."""
    if len(terms) > MAX_TERMS:
        raise UserError(
            f"the query has {len(terms)} distinct words; at most {MAX_TERMS} are searched: keep the distinctive ones",
            Arg("q", "widgets migration table locked"),
        )
    return terms


# What `usage` counts per: a local day, an ISO week, a month, a model id, a project root, a session id.
USAGE_BY = ("day", "week", "month", "model", "project", "session")
SESSIONS_LIMIT = 20  # sessions a page shows when no limit is asked for
# How sessions may be ordered, each largest (or newest) first: the newest activity, the cost, the
# tokens (input, output and cache) and the size (entries).
SESSION_SORTS = ("date", "cost", "tokens", "size")


@dataclass(frozen=True)
class UsageRequest:
    """Tokens and cost per key, checked: what to count per (`by`), the scope and where from, dates as
    UTC ISO, under the caller's cap `max_scope`. Build one with `create`, `from_options` or `from_args`."""

    by: str = "day"
    scope: str = "global"
    cwd: str | None = None
    session_id: str | None = None
    journal_path: str | None = None
    since: str | None = None
    until: str | None = None
    max_scope: str = "global"
    home: str | None = None

    @classmethod
    def create(
        cls,
        by: str | None = None,
        *,
        scope: str | None = None,
        cwd: str | None = None,
        since: str | None = None,
        until: str | None = None,
        **fields: Any,
    ) -> UsageRequest:
        """Check every field once; without a scope, all projects unless a cwd narrows it (`activity_scope`)."""
        return cls(by=check_by(by), **_activity_where(scope, cwd, since, until, fields))

    @classmethod
    def from_options(cls, *, cwd: str | None, **options: Any) -> UsageRequest:
        """From the CLI's options: a `--cwd` made absolute (from the current folder)."""
        return cls.create(cwd=os.path.abspath(cwd) if cwd else None, **options)

    @classmethod
    def from_args(cls, args: Mapping[str, Any], *, max_scope: str, journal_path: str | None = None) -> UsageRequest:
        """From the API's or a page's parameters (`query_args` plus `by`), scoped as `activity_args` says."""
        return cls.create(args.get("by"), **activity_args(args, max_scope, journal_path))


@dataclass(frozen=True)
class SessionsRequest:
    """A page of sessions, checked: the scope and where from, dates as UTC ISO, a model, a limit and an
    offset, under the caller's cap `max_scope`. Build one with `create`, `from_options` or `from_args`."""

    scope: str = "global"
    cwd: str | None = None
    session_id: str | None = None
    journal_path: str | None = None
    since: str | None = None
    until: str | None = None
    model: str | None = None
    limit: int = SESSIONS_LIMIT
    offset: int = 0
    max_scope: str = "global"
    home: str | None = None
    sort: str = "date"

    @classmethod
    def create(
        cls,
        *,
        scope: str | None = None,
        cwd: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: Any = None,
        offset: Any = None,
        model: str | None = None,
        sort: str | None = None,
        **fields: Any,
    ) -> SessionsRequest:
        """Check every field once; without a scope, all projects unless a cwd narrows it (`activity_scope`)."""
        return cls(
            **_activity_where(scope, cwd, since, until, fields),
            limit=SESSIONS_LIMIT if limit is None or limit == "" else check_limit(limit),
            offset=check_offset(offset, example=20),
            model=model or None,
            sort=check_sort(sort),
        )

    @classmethod
    def from_options(cls, *, cwd: str | None, **options: Any) -> SessionsRequest:
        """From the CLI's options: a `--cwd` made absolute (from the current folder)."""
        return cls.create(cwd=os.path.abspath(cwd) if cwd else None, **options)

    @classmethod
    def from_args(cls, args: Mapping[str, Any], *, max_scope: str, journal_path: str | None = None) -> SessionsRequest:
        """From the API's or a page's parameters (`query_args` plus `model`), scoped as `activity_args` says."""
        return cls.create(
            limit=args.get("limit"),
            offset=args.get("offset"),
            model=args.get("model"),
            sort=args.get("sort"),
            **activity_args(args, max_scope, journal_path),
        )


def _activity_where(
    scope: str | None, cwd: str | None, since: str | None, until: str | None, fields: dict[str, Any]
) -> dict[str, Any]:
    """What usage and sessions requests check alike: the scope (`activity_scope`), the cwd, the dates
    as UTC ISO, and the request's other fields as given."""
    return {
        "scope": activity_scope(scope, cwd, fields.get("session_id")),
        "cwd": cwd,
        "since": parse_bound(since, end=False, name="since"),
        "until": parse_bound(until, end=True, name="until"),
        **fields,
    }


def activity_scope(scope: str | None, cwd: str | None, session_id: str | None = None) -> str:
    """Usage and sessions cover every project unless narrowed: the scope asked for, else session when
    one is named, project when a cwd is given, global otherwise (the cap is checked on resolving)."""
    if scope:
        return scope
    if session_id:
        return "session"
    return "project" if cwd else "global"


def activity_args(args: Mapping[str, Any], max_scope: str, journal_path: str | None) -> dict[str, Any]:
    """The scope fields of a usage or sessions request from API parameters: under a cap narrower than
    global the default is the cap's (`default_scope`), a project's cwd from the caller or its journal
    (`scope.checked_cwd`)."""
    scope = args.get("scope") or (None if allowed("global", max_scope) else default_scope(max_scope))
    cwd = args.get("cwd")
    if activity_scope(scope, cwd, args.get("session_id")) == "project" and allowed("project", max_scope):
        cwd = checked_cwd(cwd, journal_path)
    return {
        "scope": scope,
        "cwd": cwd,
        "session_id": args.get("session_id"),
        "journal_path": journal_path,
        "since": args.get("since"),
        "until": args.get("until"),
        "max_scope": max_scope,
    }


def check_by(by: str | None) -> str:
    """What usage counts per: one of USAGE_BY, day when none is given."""
    if by is None or by == "":
        return "day"
    if by not in USAGE_BY:
        raise UserError(f"unknown grouping {by!r}: use one of {', '.join(USAGE_BY)}", Arg("by", "model"))
    return by


def check_sort(sort: str | None) -> str:
    """How sessions are ordered: one of SESSION_SORTS, date (newest first) when none is given."""
    if sort is None or sort == "":
        return "date"
    if sort not in SESSION_SORTS:
        raise UserError(f"unknown sort {sort!r}: use one of {', '.join(SESSION_SORTS)}", Arg("sort", "cost"))
    return sort
