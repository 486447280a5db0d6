"""The JSON replies of the CLI's `--json` and the HTTP API, as types: one TypedDict per reply and per part.

The same shapes leave both surfaces (/work/shared/CONTRACT.md names their keys). Each key's note is its
documentation: docs/api.md's key tables are generated from these types (cog), and the suite checks every reply
the CLI and the API print against them (`conforms`), so the types, the docs and the replies cannot drift.
"""

import types
from enum import StrEnum
from typing import Annotated, Any, Literal, NotRequired, TypedDict, Union, get_args, get_origin, get_type_hints


class ScopeName(StrEnum):
    """Where a query looks, narrowest first."""

    SESSION = "session"
    PROJECT = "project"
    GLOBAL = "global"


class Action(StrEnum):
    """What a reply answers (its `action` key)."""

    SEARCH = "search"
    SUMMARIES = "summaries"
    READ = "read"


class ReadStatus(StrEnum):
    """How a read ended."""

    OK = "ok"
    AMBIGUOUS = "ambiguous"
    UNAVAILABLE = "unavailable"
    NOT_FOUND = "not_found"


class Match(StrEnum):
    """How a search's hits relate to its terms."""

    ALL = "all"
    ANY = "any"
    RECENT = "recent"


Scope = Literal["session", "project", "global"]
Kind = Literal["user", "assistant", "tool_result", "bash", "custom", "compaction", "branch_summary"]


class Indexing(TypedDict):
    complete: Annotated[bool, "whether every journal has been indexed"]
    journals_indexed: Annotated[int, "journals indexed so far"]
    journals_total: Annotated[int, "journals found in the journal folders"]
    note: NotRequired[Annotated[str, "only while incomplete: results may be incomplete"]]


class Entry(TypedDict):
    id: Annotated[str, "the entry's id in its journal (`L<n>` in version-1 journals)"]
    session_id: Annotated[str, "the session's id"]
    timestamp: Annotated[str | None, "when the entry was written, UTC ISO with milliseconds"]
    kind: Annotated[Kind, "the entry's kind"]
    role: Annotated[str | None, "Pi's message role (`user`, `assistant`, `toolResult`, `bashExecution`, ...)"]
    tool: Annotated[str | None, "the tool a tool result answers or an assistant message called"]
    chars: Annotated[int, "the length of the entry's text, in characters"]
    tokens_before: NotRequired[Annotated[int | None, "compactions only: the context size before compacting"]]
    outcome: NotRequired[Annotated[str, "a tool call's (or a bash run's) outcome: `ok`, `error` or `exit N`"]]
    result: NotRequired[Annotated[str, "a tool call's result, its first line, redacted"]]
    call: NotRequired[Annotated[str, "a tool result's call: the tool and its main argument"]]


class Like(TypedDict):
    entries: Annotated[int, "hits of the same text in other sessions"]
    sessions: Annotated[int, "how many other sessions they are in"]


class Hit(Entry):
    excerpt: Annotated[str, "redacted text around the terms, on one line, at most about 300 characters"]
    score: Annotated[
        float | None, "BM25 with the recency discount (null without a query): only its order means anything"
    ]
    folded: Annotated[int, "lower-ranked hits of the same session with the same text, not shown"]
    like: NotRequired[
        Annotated[Like, "lower-ranked hits of the same text in other sessions, not shown (list them: `like=<id>`)"]
    ]
    reason: NotRequired[Annotated[str, "with `stale`: why the text cannot be read"]]
    stale: NotRequired[Annotated[bool, "the hit's journal line cannot be read (see `reason`)"]]


class SessionInfo(TypedDict):
    short_id: Annotated[str, "a short form of the id (its random end for Pi's UUIDv7 ids), unique in the index"]
    title: Annotated[str | None, "the session name, else its first user message, redacted and cut"]
    cwd: Annotated[str | None, "the session's folder"]
    journal: Annotated[str, "the journal file's path"]
    started: Annotated[str | None, "when the session started (UTC ISO)"]
    parent_session_id: Annotated[
        str | None, "the session it was forked or cloned from (null when not indexed or not visible to the caller)"
    ]


class Phrases(TypedDict):
    phrases: Annotated[list[str], "the quoted phrases of the query"]
    checked: Annotated[int, "ranked matches whose text was checked for the phrases"]
    complete: Annotated[bool, "false when the check stopped at its bound before the page was full"]
    note: NotRequired[Annotated[str, "when incomplete: what to do"]]


class SearchReply(TypedDict):
    action: Annotated[Literal["search", "summaries"], "`search`, or `summaries` for compaction and branch summaries"]
    scope: Annotated[Scope, "the scope the query ran in"]
    root: Annotated[str | None, "the project root (null unless the scope is `project`)"]
    match: Annotated[Literal["all", "any", "recent"], "`all` hits hold every term, `any` some, `recent` no query"]
    terms: Annotated[list[str], "the query's words as searched (lowercase, each once): what excerpts mark"]
    results: Annotated[list[Hit], "at most `limit` hits, best first"]
    offset: Annotated[int, "the reply's first hit"]
    next_offset: Annotated[int | None, "where the next page starts, null when no hit remains"]
    folded: Annotated[int, "the sum of the hits' `folded`"]
    indexing: Annotated[Indexing, "how far indexing has come"]
    hint: NotRequired[Annotated[str, "why few or no hits, and what to try"]]
    elsewhere: NotRequired[Annotated[dict[str, int], "entries each wider scope the caller may search would add"]]
    phrases: NotRequired[Annotated[Phrases, "only with quoted phrases: how far they were checked"]]
    sessions: Annotated[dict[str, SessionInfo], "what belongs to each hit's session (its folder, journal, ...), by id"]


class Candidate(TypedDict):
    session_id: Annotated[str, "a session holding an entry with the id"]
    timestamp: Annotated[str | None, "when that entry was written"]
    kind: Annotated[Kind, "its kind"]
    cwd: Annotated[str | None, "its session's folder"]
    journal: Annotated[str, "its journal file's path"]


class AroundEntry(Entry):
    text: Annotated[str, "the entry's redacted text without argument names, cut to 600 characters"]
    side: Annotated[Literal["before", "after"], "whether it comes before or after the entry read"]


class ReadReply(TypedDict):
    action: Annotated[Literal["read"], "always `read`"]
    status: Annotated[Literal["ok", "ambiguous", "unavailable", "not_found"], "how the read ended"]
    scope: Annotated[Scope, "the scope the read looked in"]
    root: Annotated[str | None, "the project root (null unless the scope is `project`)"]
    entry: NotRequired[Annotated[Entry, "ok: the entry"]]
    text: NotRequired[Annotated[str, "ok: a page of its redacted text"]]
    terms: NotRequired[Annotated[list[str], "ok: the words of `q` (the search it was opened from) to mark in the text"]]
    offset: NotRequired[Annotated[int, "ok: the page's first character"]]
    next_offset: NotRequired[Annotated[int | None, "ok: where the next page starts, null on the last"]]
    total_chars: NotRequired[Annotated[int, "ok: the length of the whole redacted text"]]
    candidates: NotRequired[Annotated[list[Candidate], "ambiguous: the entries sharing the id"]]
    reason: NotRequired[Annotated[str, "unavailable: why the text cannot be read"]]
    around: NotRequired[Annotated[list[AroundEntry], "with `around=N`: N entries before and after on the branch"]]
    sessions: NotRequired[Annotated[dict[str, SessionInfo], "ok: what belongs to the entry's session, by its id"]]


class FailedJournal(TypedDict):
    path: Annotated[str, "the journal"]
    reason: Annotated[str, "why it could not be indexed"]
    at: Annotated[str, "when it last failed"]


FolderSource = Literal["default", "recorded", "given", "environment"]


class JournalFolder(TypedDict):
    path: Annotated[str, "the folder"]
    source: Annotated[
        FolderSource,
        "`default` the agent's own, `recorded` in pi-memory/folders.json (every command), `given` by --sessions-dir "
        "for this command only, `environment` from PIMEM_SESSIONS_DIRS",
    ]
    exists: Annotated[bool, "whether the folder exists now"]


class FoldersReply(TypedDict):
    folders: Annotated[list[JournalFolder], "the journal folders, the agent's own first"]


class StatusReply(TypedDict):
    sessions: Annotated[int, "sessions indexed"]
    entries: Annotated[int, "entries indexed"]
    summaries: Annotated[int, "compaction and branch summaries among them"]
    indexed_bytes: Annotated[int, "journal bytes indexed"]
    journals_total: Annotated[int, "journals in the journal folders"]
    journals_pending: Annotated[int, "journals with lines not yet indexed"]
    db_bytes: Annotated[int, "the index's size on disk, its write-ahead log included"]
    schema_version: Annotated[int, "the index's schema version (another is rebuilt)"]
    db: Annotated[str, "the index file"]
    sessions_dirs: Annotated[list[str], "the journal folders"]
    folders: Annotated[list[JournalFolder], "the journal folders with where each comes from"]
    journals_outside: Annotated[list[str], "links in the journal folders that lead outside them (never read)"]
    journals_failed: Annotated[list[FailedJournal], "journals that could not be indexed, most recent first"]


class ServeStatusReply(TypedDict):
    running: Annotated[bool, "whether a pimem serve runs (the command exits 1 when not)"]
    url: NotRequired[Annotated[str, "where it answers"]]
    pid: NotRequired[Annotated[int, "its process"]]
    uptime_s: NotRequired[Annotated[float, "seconds since it started"]]
    db: NotRequired[Annotated[str | None, "its index file"]]
    log: NotRequired[Annotated[str, "its log (a --background server's output)"]]
    answering: NotRequired[Annotated[bool, "whether it answered the status request"]]
    indexing: NotRequired[Annotated[Indexing | None, "how far its indexing is (null when it does not answer)"]]
    folders: Annotated[
        list[JournalFolder], "the journal folders it reads (as it reports them; when it does not answer, as recorded)"
    ]


class IndexReply(TypedDict):
    files: Annotated[int, "journals that had new lines"]
    entries_added: Annotated[int, "entries indexed by this pass"]
    bytes_read: Annotated[int, "journal bytes read"]
    seconds: Annotated[float, "how long the pass took"]
    malformed_lines: Annotated[int, "lines that were not entries Pi could have written (skipped)"]
    reindexed: Annotated[int, "journals indexed again from their start (rewritten or replaced)"]
    removed: Annotated[int, "journals gone from disk whose rows were removed"]
    outside: Annotated[int, "links leading outside the journal folders (never read)"]
    failed: Annotated[int, "journals that could not be indexed"]


class Figures(TypedDict):
    input_tokens: Annotated[int, "input tokens (without cache)"]
    output_tokens: Annotated[int, "output tokens"]
    cache_read_tokens: Annotated[int, "tokens read from the provider's cache"]
    cache_write_tokens: Annotated[int, "tokens written to the provider's cache"]
    total_tokens: Annotated[int, "the four above together"]
    cost: Annotated[float, "dollars, as the journals record them"]
    messages: Annotated[int, "assistant messages"]
    sessions: Annotated[int, "sessions"]


class UsageRow(Figures):
    key: Annotated[str, "the day, week, month, model id, project root or session id"]
    split: NotRequired[Annotated[dict[str, Figures], "with a split: the figures per the second grouping"]]


class UsageReply(TypedDict):
    by: Annotated[str, "what is counted per: day, week, month, model, project or session"]
    scope: Annotated[Scope, "the scope counted"]
    root: Annotated[str | None, "the project root (null unless the scope is `project`)"]
    rows: Annotated[list[UsageRow], "one row per key"]
    total: Annotated[Figures, "every row together"]
    split: NotRequired[Annotated[str, "the second grouping, when asked"]]


class SessionRow(TypedDict):
    session_id: Annotated[str, "the session's id"]
    name: Annotated[str | None, "the name the user gave it"]
    cwd: Annotated[str | None, "its folder"]
    started: Annotated[str | None, "when it started"]
    last_activity: Annotated[str | None, "its last entry's time"]
    duration_s: Annotated[int | None, "seconds from start to last activity"]
    entries: Annotated[int, "entries"]
    input_tokens: Annotated[int, "input tokens (without cache)"]
    output_tokens: Annotated[int, "output tokens"]
    cache_read_tokens: Annotated[int, "tokens read from the provider's cache"]
    cache_write_tokens: Annotated[int, "tokens written to the provider's cache"]
    cost: Annotated[float, "dollars"]
    models: Annotated[list[str], "the models that answered, most used first"]
    tool_calls: Annotated[int, "tool calls"]
    errors: Annotated[int, "failed tool results and non-zero exits"]
    short_id: Annotated[str, "a short form of the id (its random end for Pi's UUIDv7 ids), unique in the index"]
    title: Annotated[str | None, "the session name, else its first user message, redacted and cut"]
    parent_session_id: Annotated[
        str | None, "the session it was forked or cloned from (null when not indexed or not visible to the caller)"
    ]
    forks: Annotated[list[str], "the sessions forked or cloned from it that the caller may see, oldest first"]


class SessionsReply(TypedDict):
    scope: Annotated[Scope, "the scope listed"]
    root: Annotated[str | None, "the project root (null unless the scope is `project`)"]
    sessions: Annotated[list[SessionRow], "a page of sessions, newest first (or by `sort`)"]
    offset: Annotated[int, "the page's first session"]
    next_offset: Annotated[int | None, "where the next page starts, null on the last"]


# What the API's routes answer with (`/-/pi-memory/api/<action>`), by action.
ApiReply = SearchReply | ReadReply | StatusReply | UsageReply | SessionsReply


class IdentityReply(TypedDict):
    server: Annotated[Literal["pi-memory"], "what answers: this project's server"]
    proof: Annotated[
        str, "HMAC-SHA256, hex, keyed by the token's signature, of `pi-memory identity:` and the challenge"
    ]


class ErrorReply(TypedDict):
    error: Annotated[str, "one line: what is wrong and an example of the right form"]


# ---------------------------------------------------------------------------------------------------------------


def conforms(value: Any, shape: Any, where: str = "reply") -> list[str]:
    """What in `value` does not fit `shape` (a TypedDict, list, dict, union, Literal or plain type); [] when it fits.

    Used by the suite on every reply the CLI and the API print: unknown keys, missing keys and wrong types are named.
    """
    origin, args = get_origin(shape), get_args(shape)
    if origin is Annotated:
        return conforms(value, args[0], where)
    if origin in (Union, types.UnionType):
        found = [conforms(value, option, where) for option in args]
        return [] if any(not f for f in found) else min(found, key=len)
    if origin is Literal:
        return [] if value in args else [f"{where}: {value!r} is not one of {args}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {type(value).__name__}"]
        return [problem for i, item in enumerate(value) for problem in conforms(item, args[0], f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        return [problem for k, item in value.items() for problem in conforms(item, args[1], f"{where}.{k}")]
    if isinstance(shape, type) and issubclass(shape, dict) and hasattr(shape, "__required_keys__"):
        return _conforms_typeddict(value, shape, where)
    if shape is type(None):
        return [] if value is None else [f"{where}: expected null, got {value!r}"]
    if shape is float:
        return [] if isinstance(value, int | float) and not isinstance(value, bool) else [f"{where}: not a number"]
    if shape is int and isinstance(value, bool):
        return [f"{where}: expected a whole number, got {value!r}"]
    return [] if isinstance(value, shape) else [f"{where}: expected {shape.__name__}, got {type(value).__name__}"]


def _conforms_typeddict(value: Any, shape: Any, where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: expected an object, got {type(value).__name__}"]
    hints = get_type_hints(shape, include_extras=True)
    problems = [f"{where}: unknown key {k!r}" for k in value if k not in hints]
    problems += [f"{where}: missing key {k!r}" for k in sorted(shape.__required_keys__) if k not in value]
    for key, hint in hints.items():
        if key in value:
            problems += conforms(value[key], _unwrap_not_required(hint), f"{where}.{key}")
    return problems


def _unwrap_not_required(hint: Any) -> Any:
    return get_args(hint)[0] if get_origin(hint) is NotRequired else hint


def key_table(shape: Any) -> str:
    """A markdown table of a TypedDict's keys: key, JSON type, note (docs/api.md's tables, through cog)."""
    hints = get_type_hints(shape, include_extras=True)
    lines = ["| key | type | note |", "|---|---|---|"]
    for key, hint in hints.items():
        hint = _unwrap_not_required(hint)
        note = ""
        if get_origin(hint) is Annotated:
            hint, note = get_args(hint)[0], get_args(hint)[1]
        optional = "" if key in shape.__required_keys__ else " (only when it applies)"
        lines.append(f"| `{key}` | {_json_type(hint)} | {note}{optional} |")
    return "\n".join(lines)


def _json_type(hint: Any) -> str:
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        return _json_type(args[0])
    if origin in (Union, types.UnionType):
        return " or ".join(_json_type(a) for a in args)
    if origin is Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin is list:
        return f"list of {_json_type(args[0])}"
    if origin is dict:
        return f"object of {_json_type(args[1])}"
    names = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
    if hint in names:
        return names[hint]
    return f"[{hint.__name__}](#{hint.__name__.lower()})"
