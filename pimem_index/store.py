"""The index schema: metadata, byte pointers and a contentless FTS5 term index, never journal text.

The whole file is derived from the journals. An index written by another schema version
is deleted and rebuilt rather than read with the wrong meaning. Also the writes several
modules share: meta values, a journal's rows removed (`delete_journal`) or queued for
reindexing (`queue_reindex`); the backfill lease and progress are beside it (`lease`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from pimem_index import db
from pimem_index.errors import UserError
from pimem_index.journal import KINDS
from pimem_index.locations import Locations, make_folder
from pimem_index.memo import IndexMemo

# 7: this release's changes (edits, forks, ids, terms, narrow usage figures); 6: usage figures, tool_calls
SCHEMA_VERSION = 7
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FTS_HASHSIZE = 16 * 1024 * 1024
# The term index's options, shared with the benchmark's floor. detail=none keeps which entries
# hold a term and nothing else: no positions (no query needs them; excerpts come from the
# journal) and no per-column lists, so the index stays a fraction of the journals' size.
# FTS5's bm25() needs positions, so query.py ranks with its own BM25 (query._ranked).
FTS_OPTIONS = "content='', contentless_delete=1, detail=none, tokenize='unicode61 remove_diacritics 2'"

# An entry's `ts` (epoch milliseconds) as the ISO text Pi writes (journal.normalize_timestamp's form).
TS_TEXT = "strftime('%Y-%m-%dT%H:%M:%fZ', ts / 1000.0, 'unixepoch')"
# An ISO timestamp bound as a parameter, in epoch milliseconds (NULL when it is NULL or not a date).
TS_FROM_TEXT = "CAST(round(unixepoch(?, 'subsec') * 1000) AS INTEGER)"
# A stored session id (`sid`, made by `session_key`) as its text: a UUID's 16 bytes in the 8-4-4-4-12 form.
SESSION_TEXT = (
    "CASE WHEN typeof(sid) = 'blob' THEN lower(format('%s-%s-%s-%s-%s', substr(hex(sid), 1, 8), "
    "substr(hex(sid), 9, 4), substr(hex(sid), 13, 4), substr(hex(sid), 17, 4), substr(hex(sid), 21))) ELSE sid END"
)
_ID = re.compile(r"[0-9a-f]{8}")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# An entry's message role from its kind: the role Pi writes for each kind (journal.ROLE_KINDS;
# version 2's `hookMessage` reads as `custom`, as its kind does). Summaries have no role.
KIND_ROLE = (
    "CASE k WHEN 0 THEN 'user' WHEN 1 THEN 'assistant' WHEN 2 THEN 'toolResult' "
    "WHEN 3 THEN 'bashExecution' WHEN 4 THEN 'custom' END"
)
# An entry's kind (entries.k) as its name, and a kind's name bound as a parameter as its number.
KIND_TEXT = "CASE k " + " ".join(f"WHEN {n} THEN '{kind}'" for n, kind in enumerate(KINDS)) + " END"
KIND_FROM_TEXT = "CASE ? " + " ".join(f"WHEN '{kind}' THEN {n}" for n, kind in enumerate(KINDS)) + " END"

# Labels Pi writes from a fixed vocabulary, stored as their place in it (`label_key`: 0 and 1 take no
# byte, the others one, where the text took 4 to 30) and read back as text through `label_text`; any
# other label (a custom tool, a provider Pi added later) is stored as its text. Each tuple is part of
# the schema's statements: an index made with other places is rebuilt (`schema_digest`), never misread.
STOP_REASONS = ("toolUse", "stop", "error", "aborted", "length")  # pi-ai's StopReason
PROVIDERS = (  # pi-ai 0.73's KnownProvider, the two most used first
    "anthropic", "openai", "google", "google-vertex", "amazon-bedrock", "azure-openai-responses", "openai-codex",
    "deepseek", "github-copilot", "xai", "groq", "cerebras", "openrouter", "vercel-ai-gateway", "zai", "mistral",
    "minimax", "minimax-cn", "moonshotai", "moonshotai-cn", "huggingface", "fireworks", "opencode", "opencode-go",
    "kimi-coding", "cloudflare-workers-ai", "cloudflare-ai-gateway", "xiaomi", "xiaomi-token-plan-cn",
    "xiaomi-token-plan-ams", "xiaomi-token-plan-sgp",
)  # fmt: skip
TOOLS = ("read", "bash", "edit", "write", "grep", "find", "ls")  # Pi's built-in tools
# A tool call's id as tool_calls.call_key stores it: Anthropic's ids (all but a few of them) without
# the `toolu_01` they all begin with, as a blob; any other id as its text (CALL_TEXT gives it back).
CALL_PREFIX = "toolu_01"
CALL_TEXT = f"CASE WHEN typeof(call_key) = 'blob' THEN '{CALL_PREFIX}' || CAST(call_key AS TEXT) ELSE call_key END"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT
);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    session_id TEXT,
    cwd TEXT,
    started TEXT,
    parent_session TEXT,
    name TEXT,
    version INTEGER,
    size INTEGER NOT NULL DEFAULT 0,
    mtime REAL,
    inode INTEGER,
    cursor INTEGER NOT NULL DEFAULT 0,
    lines INTEGER NOT NULL DEFAULT 0,
    entry_count INTEGER NOT NULL DEFAULT 0,
    malformed INTEGER NOT NULL DEFAULT 0,
    head_length INTEGER,
    head_fingerprint INTEGER,
    tail_offset INTEGER,
    tail_length INTEGER,
    tail_fingerprint INTEGER,
    last_timestamp TEXT,
    indexed_at TEXT,
    needs_reindex INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS files_cwd ON files(cwd);
CREATE INDEX IF NOT EXISTS files_session_id ON files(session_id);
-- A fork's or a clone's parent journal (Pi's parentSession path): what finds a session's forks.
CREATE INDEX IF NOT EXISTS files_parent_session ON files(parent_session);
CREATE TABLE IF NOT EXISTS entries (
    rowid INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id),
    -- The entry's id and its parent's as stored (`id_key`): Pi's 8 hex digits in 4 bytes, any other id as
    -- its text; `id` and `parent_id` give the text back. Lookups by id go through eid (entries_id).
    eid BLOB NOT NULL,
    id TEXT GENERATED ALWAYS AS ({id_text}) VIRTUAL,
    parent_eid BLOB,
    parent_id TEXT GENERATED ALWAYS AS ({parent_id_text}) VIRTUAL,
    -- The session's id as stored (`session_key`): a UUID's 16 bytes (36 as text), any other id its text.
    -- `session_id` gives the id's text back.
    sid BLOB,
    session_id TEXT GENERATED ALWAYS AS ({session_text}) VIRTUAL,
    -- When the entry was written, in milliseconds since 1970 UTC (6 bytes where the ISO text took 24):
    -- what queries filter and sort on. `timestamp` gives the journal's ISO text back.
    ts INTEGER,
    timestamp TEXT GENERATED ALWAYS AS ({ts_text}) VIRTUAL,
    -- The kind as its place in journal.KINDS (0 to 6: no byte or one where its name took 4 to 14),
    -- `kind` gives the name back, and the message's role follows from it (journal.ROLE_KINDS).
    k INTEGER NOT NULL,
    kind TEXT GENERATED ALWAYS AS ({kind_text}) VIRTUAL,
    role TEXT GENERATED ALWAYS AS ({kind_role}) VIRTUAL,
    -- The tool (a tool result's, or an assistant's calls' joined by commas), the provider and the
    -- stop reason as stored (`label_key`): one of Pi's own as its place in store.TOOLS, PROVIDERS or
    -- STOP_REASONS, any other as its text; `tool`, `provider` and `stop_reason` give the text back.
    tool_key BLOB,
    tool TEXT GENERATED ALWAYS AS ({tool_text}) VIRTUAL,
    chars INTEGER NOT NULL,
    line INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    length INTEGER NOT NULL,
    fingerprint INTEGER NOT NULL,
    tokens_before INTEGER,
    model TEXT,
    provider_key BLOB,
    provider TEXT GENERATED ALWAYS AS ({provider_text}) VIRTUAL,
    stop_key BLOB,
    stop_reason TEXT GENERATED ALWAYS AS ({stop_text}) VIRTUAL,
    input_tokens INTEGER,
    output_tokens INTEGER,
    cache_read_tokens INTEGER,
    cache_write_tokens INTEGER,
    cost REAL,
    is_error INTEGER,
    exit_code INTEGER,
    -- A 64-bit digest of the entry's indexed text (redacted, labels cut, whitespace runs as one space):
    -- hits of the same text fold by it across sessions, and `like=` lists them.
    text_digest INTEGER
);
CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5(text, {fts_options});
-- One row per tool call of an assistant entry; result_rowid is the tool result answering it
-- (paired by call id within the journal), NULL until that result is indexed.
CREATE TABLE IF NOT EXISTS tool_calls (
    entry_rowid INTEGER NOT NULL,
    sid BLOB,  -- as entries.sid: the session's id, a UUID in 16 bytes
    session_id TEXT GENERATED ALWAYS AS ({session_text}) VIRTUAL,
    call_key BLOB,  -- the call's id (`call_key`): Anthropic's in 22 bytes where its text took 30
    call_id TEXT GENERATED ALWAYS AS ({call_text}) VIRTUAL,
    tool_key BLOB,  -- as entries.tool_key
    tool TEXT GENERATED ALWAYS AS ({tool_text}) VIRTUAL,
    path TEXT,
    result_rowid INTEGER,
    is_error INTEGER
);
-- The calls still waiting for their result, by call id: what pairs a result indexed later.
CREATE INDEX IF NOT EXISTS tool_calls_pending ON tool_calls(call_key) WHERE result_rowid IS NULL;
CREATE VIEW IF NOT EXISTS sessions AS
SELECT
    files.session_id,
    files.name,
    files.cwd,
    files.started,
    files.last_timestamp,
    files.entry_count AS entries,
    files.size AS bytes,
    files.parent_session,
    -- the session it was forked or cloned from: Pi records the parent journal's path (older journals its id)
    (SELECT p.session_id FROM files p WHERE (p.path = files.parent_session OR p.session_id = files.parent_session)
        AND p.session_id <> files.session_id LIMIT 1) AS parent_session_id,
    files.path AS journal,
    COALESCE(u.input_tokens, 0) AS input_tokens,
    COALESCE(u.output_tokens, 0) AS output_tokens,
    COALESCE(u.cache_read_tokens, 0) AS cache_read_tokens,
    COALESCE(u.cache_write_tokens, 0) AS cache_write_tokens,
    COALESCE(u.cost, 0.0) AS cost,
    u.models,
    CAST(round((julianday(files.last_timestamp) - julianday(files.started)) * 86400) AS INTEGER) AS duration_s,
    COALESCE(t.tool_calls, 0) AS tool_calls,
    COALESCE(x.errors, 0) AS errors,
    u.messages,
    files.id AS file_id
FROM files
LEFT JOIN (
    SELECT file_id, CAST(total(input_tokens) AS INTEGER) AS input_tokens,
        CAST(total(output_tokens) AS INTEGER) AS output_tokens,
        CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens,
        CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens,
        total(cost) AS cost, group_concat(DISTINCT model) AS models, count(*) AS messages
    FROM entries WHERE kind = 'assistant' GROUP BY file_id
) u ON u.file_id = files.id
LEFT JOIN (
    SELECT e.file_id, count(*) AS tool_calls FROM tool_calls c JOIN entries e ON e.rowid = c.entry_rowid
    GROUP BY e.file_id
) t ON t.file_id = files.id
LEFT JOIN (
    SELECT file_id, count(*) AS errors FROM entries WHERE is_error = 1 OR exit_code <> 0 GROUP BY file_id
) x ON x.file_id = files.id
WHERE files.session_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS forgotten_journals (
    path_key TEXT PRIMARY KEY,
    session_key TEXT NOT NULL,
    inode INTEGER,
    head_length INTEGER NOT NULL,
    head_fingerprint INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS forgotten_journals_session ON forgotten_journals(session_key);
-- Journals a pass could not index, each with a one-line reason (indexer.Failures).
CREATE TABLE IF NOT EXISTS journal_errors (
    path TEXT PRIMARY KEY,
    reason TEXT NOT NULL,
    at TEXT NOT NULL,
    failures INTEGER NOT NULL DEFAULT 1,
    retry_at REAL NOT NULL
);
"""


# The entries table's own indexes, apart from the schema: a cold bulk build creates them once its
# rows are in (one sort each) instead of updating them row by row (create_entry_indexes).
# No index copies the usage figures: usage and the sessions view scan the entries table (one pass,
# about 1.1-1.4x the CPU of a covering index's, for 0.6% of the journals' size less; docs/performance.md).
ENTRY_INDEXES = {
    # A journal's entries (its rowids, in the order they were written): no offset in it, as no query
    # ranges over offsets (a file's entries in offset order are a sort of one journal's rows).
    "entries_file": "CREATE INDEX IF NOT EXISTS entries_file ON entries(file_id)",
    "entries_id": "CREATE INDEX IF NOT EXISTS entries_id ON entries(eid)",
    "entries_timestamp": "CREATE INDEX IF NOT EXISTS entries_timestamp ON entries(ts)",
    "entries_summaries": "CREATE INDEX IF NOT EXISTS entries_summaries ON entries(ts) "
    "WHERE kind IN ('compaction', 'branch_summary')",
    "entries_errors": "CREATE INDEX IF NOT EXISTS entries_errors ON entries(file_id) "
    "WHERE is_error = 1 OR exit_code <> 0",
    "tool_calls_entry": "CREATE INDEX IF NOT EXISTS tool_calls_entry ON tool_calls(entry_rowid)",
    "entries_digest": "CREATE INDEX IF NOT EXISTS entries_digest ON entries(text_digest)",
}


def scope_token(kind: str, value: str) -> str:
    """A search term standing for one folder or session: `p` (the folder or a folder above
    the entry's), `c` (exactly the entry's folder) or `s` (its session), then a hash."""
    return kind + hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def forgotten_key(value: str) -> str:
    """What the index keeps of a forgotten journal's path or session id: a hash, nothing readable.

    The indexer hashes each journal's path (and the session id in its first line) to find
    it among the forgotten ones; the path, id, cwd and name themselves are never stored.
    """
    return hashlib.blake2b(
        value.encode("utf-8", "surrogatepass"), digest_size=16, person=b"pimem-forgotten"
    ).hexdigest()


def scope_terms(cwd: str | None, session_id: str | None) -> str:
    """The scope terms indexed after an entry's text: its folder, every folder above it, its session.

    A scoped search then asks FTS5 for entries holding one of these terms, so ranking only
    ever looks at the scope's matches, however large the rest of the index. A hash cannot
    be mistaken for a word of the text (and a word that matched one would only widen what
    FTS5 returns: the SQL scope predicate still decides).
    """
    terms = []
    if cwd:
        terms.append(scope_token("c", cwd))
        path = cwd
        while True:
            terms.append(scope_token("p", path))
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
    if session_id:
        terms.append(scope_token("s", session_id))
    return " ".join(terms)


def epoch_ms(iso: str) -> int:
    """A UTC ISO timestamp (journal.iso_utc's form, or any ISO form with an offset) in epoch milliseconds,
    as entries.ts holds it."""
    moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - EPOCH) // timedelta(milliseconds=1)


def key_text(column: str) -> str:
    """SQL for an id stored by `id_key` in `column` as its text."""
    return f"CASE WHEN typeof({column}) = 'blob' THEN lower(hex({column})) ELSE {column} END"


# The stored keys' bytes are made bytearrays, not bytes: pysqlite3 binds a bytearray (as it binds an
# int or a str) in about 0.1 us, but a bytes value (as it does None) only after looking for an adapter,
# about 0.9 us; with three of them in every entry's row that was 0.3 s of a cold index's writer on the
# 500 MB benchmark corpus (benchmarks/writer_cpu.py). SQLite stores either as the same blob.


def id_key(entry_id: str) -> bytearray | str:
    """An entry id as entries.eid (and a parent's as parent_eid) stores it: Pi's 8 lowercase hex digits
    as their 4 bytes, any other id (`L12`, a redacted id) as it is (`key_text` gives the text back)."""
    return bytearray.fromhex(entry_id) if len(entry_id) == 8 and _ID.fullmatch(entry_id) else entry_id


def session_key(session_id: str | None) -> bytearray | str | None:
    """A session id as entries.sid and tool_calls.sid store it: a lowercase UUID's 16 bytes, any other id
    as it is (SESSION_TEXT gives the text back either way)."""
    if session_id is not None and _UUID.fullmatch(session_id):
        return bytearray.fromhex(session_id.replace("-", ""))
    return session_id


def label_text(column: str, vocabulary: tuple[str, ...]) -> str:
    """SQL for a label stored by `label_key` in `column` as its text."""
    places = " ".join(f"WHEN {n} THEN '{label}'" for n, label in enumerate(vocabulary))
    return f"CASE {column} {places} ELSE {column} END"


def label_keys(vocabulary: tuple[str, ...]) -> dict[str, int]:
    """Each label of a vocabulary (STOP_REASONS, PROVIDERS, TOOLS) with its place: what `label_key` stores."""
    return {label: n for n, label in enumerate(vocabulary)}


def label_key(label: str, keys: dict[str, int]) -> int | str:
    """A label as entries and tool_calls store it: its place in the vocabulary of `keys` (`label_keys`),
    else the text itself ("" stays "": the writer stores it as NULL)."""
    return keys.get(label, label)


def call_key(call_id: str) -> bytes | str:
    """A tool call's id as tool_calls.call_key stores it: an Anthropic id without its `toolu_01` as a
    blob, any other id as it is (CALL_TEXT gives the text back). Bytes, so the writer can pair calls
    by it in a dict; it binds them as a bytearray (`bindable`)."""
    if call_id.startswith(CALL_PREFIX) and len(call_id) > len(CALL_PREFIX) and call_id.isascii():
        return call_id[len(CALL_PREFIX) :].encode("ascii")
    return call_id


def bindable(key: bytes | bytearray | str) -> bytearray | str:
    """A stored key as the writer binds it: bytes as a bytearray (bound 8x faster, the same blob)."""
    return bytearray(key) if isinstance(key, bytes) else key


def ts_text(ms: int) -> str:
    """Epoch milliseconds (entries.ts) as the ISO text entries.timestamp gives (TS_TEXT, in Python)."""
    moment = EPOCH + timedelta(milliseconds=ms)
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


def open_index(path: str | Path, memo: IndexMemo | None = None) -> db.Connection:
    """Open the index, creating it (and its folder) or rebuilding it when its schema differs.

    What it creates is private: folders 0700, the file 0600 (SQLite gives -wal and -shm the
    database's mode), whatever the umask. Existing folders and files keep their modes. The
    connection keeps its answers in `memo` (`db.connect`): pass the one of the index's other
    connections to share them.
    """
    path = Path(path)
    make_private_file(path)
    conn = db.connect(str(path), memo=memo)
    version = schema_version(conn)
    if version == SCHEMA_VERSION and get_meta(conn, SCHEMA_DIGEST_KEY) == schema_digest():
        return conn  # opening a current index writes nothing, so it never waits for a writer
    if version is not None:
        foreign = not _has_meta(conn)
        conn.close()
        if foreign:
            raise UserError(
                f"{path} is a SQLite database but not a pimem index, so pimem leaves it alone; "
                "point --db elsewhere (e.g. --db ~/.pi/agent/pi-memory/history.sqlite)"
            )
        delete_index_files(path)
        if memo is not None:
            memo.forget()  # answers about the index deleted here
        make_private_file(path)
        conn = db.connect(str(path), memo=memo)
    ensure_schema(conn)
    return conn


def file_id(path: str | Path) -> tuple[int, int] | None:
    """(st_dev, st_ino) of the file at path, or None when there is none: which file a connection opened."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def replaced(path: str | Path, opened: tuple[int, int] | None) -> tuple[int, int] | None:
    """None while the index at path is still the file `opened` names (one stat); else the file there
    now, created first (as open_index does) when the index was deleted. Connections opened on the
    old file must then be reopened: they still read the deleted or replaced one.

    While a connection holds the old file open its inode cannot be reused, so a new file
    always has another identity.
    """
    now = file_id(path)
    if now == opened:  # the same file, or none then and none now (nothing to create)
        return None
    if now is None:
        open_index(path).close()
        now = file_id(path)
    return now


def _has_meta(conn: db.Connection) -> bool:
    """Whether the database has pimem's meta table (an index of any schema version)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is not None


def make_private_folder(folder: Path) -> None:
    """Create the folder and any missing parent with mode 0700; existing ones keep their modes."""
    make_folder(folder, 0o700)


def make_private_file(path: Path) -> None:
    """Create path empty with mode 0600 (and missing folders with 0700) unless it exists."""
    make_private_folder(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def release_free_pages(conn: db.Connection) -> None:
    """Shrink the file by the pages merges and deletes freed (auto_vacuum = INCREMENTAL)."""
    conn.execute("PRAGMA incremental_vacuum").fetchall()


def schema_version(conn: db.Connection) -> int | None:
    """The index's schema version, or None for a new (empty) file."""
    has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    if not has_meta:
        has_any = conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone()
        return 0 if has_any else None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    try:
        return int(row[0]) if row else 0
    except (TypeError, ValueError):
        return 0


def ensure_schema(conn: db.Connection) -> None:
    """Create the tables if missing and record the schema version."""
    with db.write(conn):
        for statement in _statements(SCHEMA):
            conn.execute(statement)
        for statement in ENTRY_INDEXES.values():
            conn.execute(statement)
        conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (SCHEMA_DIGEST_KEY, schema_digest()))
        # FTS5 flushes its in-memory term buffer to a new segment when it outgrows this;
        # 16 MB instead of 1 MB makes bulk inserts about a quarter faster (stored in the index).
        conn.execute("INSERT INTO entries_fts (entries_fts, rank) VALUES ('hashsize', ?)", (FTS_HASHSIZE,))


# In meta: the digest of the schema the index was created with (`schema_digest`).
SCHEMA_DIGEST_KEY = "schema_digest"


@functools.cache
def schema_digest() -> str:
    """A digest of the schema's statements without their comments, vocabularies included: an index
    created under the same SCHEMA_VERSION with other statements (an unreleased version's, or other
    label places) is rebuilt like one of another version rather than misread or written wrongly."""
    statements = [*_statements(SCHEMA), *ENTRY_INDEXES.values()]
    text = "\n".join(re.sub(r"--[^\n]*", "", statement) for statement in statements)
    return hashlib.blake2b(" ".join(text.split()).encode(), digest_size=8).hexdigest()


def missing_entry_indexes(conn: db.Connection) -> list[str]:
    """The entries table's indexes that are not there (a cold build went without them)."""
    present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    return [name for name in ENTRY_INDEXES if name not in present]


def drop_entry_indexes(conn: db.Connection) -> None:
    """Drop the entries table's indexes; the caller owns the transaction."""
    for name in ENTRY_INDEXES:
        conn.execute(f"DROP INDEX IF EXISTS {name}")


def create_entry_indexes(conn: db.Connection) -> int:
    """Create the entries table's missing indexes, one transaction each; returns how many."""
    missing = missing_entry_indexes(conn)
    for name in missing:
        with db.write(conn):
            conn.execute(ENTRY_INDEXES[name])
    return len(missing)


def fts_text(text: str, scope: str) -> str:
    """What the term index gets for one entry: its redacted text, then its scope terms."""
    return f"{text}\n{scope}" if scope else text


def _statements(script: str) -> list[str]:
    for name, sql in (
        ("{fts_options}", FTS_OPTIONS),
        ("{ts_text}", TS_TEXT),
        ("{kind_role}", KIND_ROLE),
        ("{kind_text}", KIND_TEXT),
        ("{session_text}", SESSION_TEXT),
        ("{id_text}", key_text("eid")),
        ("{parent_id_text}", key_text("parent_eid")),
        ("{tool_text}", label_text("tool_key", TOOLS)),
        ("{provider_text}", label_text("provider_key", PROVIDERS)),
        ("{stop_text}", label_text("stop_key", STOP_REASONS)),
        ("{call_text}", CALL_TEXT),
    ):
        script = script.replace(name, sql)
    return [s.strip() for s in script.split(";\n") if s.strip()]


def delete_index_files(path: Path) -> None:
    """Remove the index and its -wal and -shm companions."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(f"{path}{suffix}")
        except FileNotFoundError:
            pass


def get_meta(conn: db.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn: db.Connection, key: str, value: str | None) -> None:
    """Write a meta value; the caller owns the transaction."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def queue_reindex(conn: db.Connection, file_id: int) -> None:
    """Mark a journal whose line no longer matches its pointer, so the next pass reads it again."""
    with db.write(conn):
        conn.execute("UPDATE files SET needs_reindex = 1 WHERE id = ?", (file_id,))


def delete_journal(conn: db.Connection, path: str) -> int:
    """Remove a journal's files row, entries and terms; returns 1 if it had a row. The caller owns
    the transaction."""
    row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
    if row is None:
        return 0
    delete_file_rows(conn, row[0])
    conn.execute("DELETE FROM files WHERE id = ?", (row[0],))
    return 1


def delete_file_rows(conn: db.Connection, file_id: int) -> int:
    """Remove a journal's entries, their terms and their tool calls; the caller owns the transaction."""
    conn.execute(
        "DELETE FROM entries_fts WHERE rowid IN (SELECT rowid FROM entries WHERE file_id = ?)",
        (file_id,),
    )
    conn.execute(
        "DELETE FROM tool_calls WHERE entry_rowid IN (SELECT rowid FROM entries WHERE file_id = ?)",
        (file_id,),
    )
    cur = conn.execute("DELETE FROM entries WHERE file_id = ?", (file_id,))
    return cur.rowcount


def delete_entries(conn: db.Connection, rowids: list[int]) -> None:
    """Remove some entries (forgotten ones) with their terms and tool calls; a call they answered
    waits for its result again. The caller owns the transaction."""
    params = [(r,) for r in rowids]
    conn.executemany("DELETE FROM entries_fts WHERE rowid = ?", params)
    conn.executemany("DELETE FROM tool_calls WHERE entry_rowid = ?", params)
    conn.executemany("UPDATE tool_calls SET result_rowid = NULL, is_error = NULL WHERE result_rowid = ?", params)
    conn.executemany("DELETE FROM entries WHERE rowid = ?", params)


BACKFILL_KEY = "backfill"  # in meta: the progress the backfill lease's holder publishes (index.lease)


def backfill_progress(conn: db.Connection) -> dict | None:
    """The last progress a backfill published (`lease.record_backfill`), or None before the first."""
    raw = get_meta(conn, BACKFILL_KEY)
    return orjson.loads(raw) if raw else None


def open_located(locations: Locations, *, create: bool = True) -> db.Connection:
    """The index, or a one-line error saying what is wrong with its path.

    Commands that only read pass create=False: they make no folder and no file, and say
    how to make the index instead.
    """
    path = locations.db_path
    if path.is_dir():
        raise UserError(f"{path} is a folder; --db takes the index file (e.g. --db {path / 'history.sqlite'})")
    if not create and not path.exists():
        raise UserError(
            f"there is no index at {path} yet; make one with: pimem index"
            + ("" if path == locations.memory_dir / "history.sqlite" else f" --db {path}")
        )
    try:
        if create:
            _private_memory_dir(locations)
        return open_index(path)
    except (OSError, db.DatabaseError) as e:
        raise UserError(db.describe_error(e, path)) from None


def _private_memory_dir(locations: Locations) -> None:
    """pimem's own folder, when it holds the index, is 0700 from the first command on (older
    versions left it 0755 until serve, token, gc or pi install ran)."""
    folder = locations.memory_dir
    if locations.db_path.parent == folder and (not folder.exists() or folder.stat().st_mode & 0o077):
        locations.ensure_memory_dir()
