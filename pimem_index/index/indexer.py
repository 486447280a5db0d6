"""The incremental indexer: journal bytes past a cursor become entry rows and redacted terms.

Each journal has a byte cursor. A pass reads complete lines after it, and every write
transaction moves the cursor together with the rows it adds, so a killed indexer leaves
a consistent index. A journal that shrank, was replaced, or whose first or last indexed
line no longer matches its fingerprint is reindexed from byte 0. This module is the
writing side; `parsing` decides where each journal starts and parses it into batches.

Whatever goes wrong with one journal stays with it: it is skipped, recorded in
journal_errors with a one-line reason (`pimem status`, the overview page) and retried later
(`Failures`); the other journals and the pass go on. Only Ctrl-C, a killed parsing process
(ParserStopped) and errors of the index itself (disk full, read-only, locked) stop a pass.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pimem_index import db, journal, store
from pimem_index.index import forgotten as forgotten_set
from pimem_index.index import lease, parsing, workers
from pimem_index.index.forgotten import Forgotten
from pimem_index.index.settings import IndexSettings, or_default
from pimem_index.index.stream import ItemKind, StreamItem
from pimem_index.index.workers import ParserStopped  # noqa: F401  (raised through index_all)
from pimem_index.locations import Locations, find_journals
from pimem_index.redaction.driver import compiled as redaction_rules
from pimem_index.replies import FailedJournal, IndexReply

# How often a backfill renews its lease and publishes its progress.
PROGRESS_SECONDS = 1.0
# A journal that failed waits this long before a backfill pass tries it again, twice as long
# after each failure in a row, up to RETRY_MAX_SECONDS (Failures).
RETRY_FIRST_SECONDS = 60
RETRY_MAX_SECONDS = 3600


@dataclass
class IndexReport:
    """What a pass did: the contract's `pimem index --json` keys plus a few more."""

    files: int = 0
    entries_added: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    malformed: int = 0
    reindexed: int = 0
    removed: int = 0
    outside: int = 0  # links in the journal folders resolving outside them: skipped, never opened
    failed: int = 0
    lease_holder: str | None = None

    def add(self, other: IndexReport) -> None:
        self.files += other.files
        self.entries_added += other.entries_added
        self.bytes_read += other.bytes_read
        self.malformed += other.malformed
        self.reindexed += other.reindexed
        self.removed += other.removed
        self.failed += other.failed

    def as_json(self) -> IndexReply:
        return {
            "files": self.files,
            "entries_added": self.entries_added,
            "bytes_read": self.bytes_read,
            "seconds": round(self.seconds, 3),
            "malformed_lines": self.malformed,
            "reindexed": self.reindexed,
            "removed": self.removed,
            "outside": self.outside,
            "failed": self.failed,
        }


class _Conflict(Exception):
    """Another indexer moved this journal's cursor since we looked: look again."""


class JournalFailed(Exception):
    """Something other than a malformed line went wrong with one journal: it is skipped and recorded."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def index_error(error: BaseException) -> bool:
    """Whether an error is the index's own (disk full, read-only, locked, corrupt): it stops a pass."""
    return isinstance(error, (db.OperationalError, db.sqlite3.InternalError)) or type(error) is db.DatabaseError


@contextlib.contextmanager
def _journal_trouble(path: str) -> Iterator[None]:
    """Errors writing one journal's rows become JournalFailed, except the index's own and a conflict."""
    try:
        yield
    except (_Conflict, JournalFailed):
        raise
    except Exception as e:
        if index_error(e):
            raise
        raise JournalFailed(path, parsing.failure_reason(e)) from e


def shown_path(path: str) -> str:
    """A path as text SQLite holds: a file name's bytes that are not UTF-8 written as \\xNN."""
    try:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return path.encode("utf-8", "backslashreplace").decode("utf-8")


class Failures:
    """The journals that failed (journal_errors): each recorded with a one-line reason, cleared once
    it indexes cleanly (or is gone).

    Retry rule: a backfill pass holds a failed journal back until its retry time, RETRY_FIRST_SECONDS
    after its failure and twice as long after each failure in a row (RETRY_MAX_SECONDS at most), so a
    journal that always fails costs one parse an hour, not one per `--watch` pass. Naming a journal
    (`pimem index FILE`, the API's `journal=`, index_journal) tries it at once.
    """

    def __init__(self, conn: db.Connection) -> None:
        self.conn = conn
        self.known = {
            path: (failures, retry_at)
            for path, failures, retry_at in conn.execute("SELECT path, failures, retry_at FROM journal_errors")
        }

    def held_back(self, paths: list[Path]) -> set[Path]:
        """The journals among `paths` still waiting for their retry time."""
        if not self.known:
            return set()
        now = time.time()
        return {p for p in paths if self.known.get(shown_path(str(p)), (0, 0.0))[1] > now}

    def record(self, path: str, reason: str) -> None:
        key = shown_path(path)
        failures = self.known.get(key, (0, 0.0))[0] + 1
        retry_at = time.time() + min(RETRY_MAX_SECONDS, RETRY_FIRST_SECONDS * 2 ** min(failures - 1, 20))
        with db.write(self.conn):
            self.conn.execute(
                "INSERT INTO journal_errors (path, reason, at, failures, retry_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(path) DO UPDATE SET reason = excluded.reason, at = excluded.at, "
                "failures = excluded.failures, retry_at = excluded.retry_at",
                (key, reason, journal.now_iso(), failures, retry_at),
            )
        self.known[key] = (failures, retry_at)

    def clear(self, path: str) -> None:
        """The journal indexed cleanly (or has nothing left to index): it no longer counts as failed."""
        if self.known and (key := shown_path(path)) in self.known:
            self._delete([key])

    def keep_only(self, paths: list[Path]) -> None:
        """Forget the failures of journals no longer found."""
        if self.known:
            present = {shown_path(str(p)) for p in paths}
            self._delete([key for key in self.known if key not in present])

    def _delete(self, keys: list[str]) -> None:
        if keys:
            with db.write(self.conn):
                self.conn.executemany("DELETE FROM journal_errors WHERE path = ?", [(k,) for k in keys])
            for key in keys:
                del self.known[key]


def failed_journals(conn: db.Connection) -> list[FailedJournal]:
    """The journals that could not be indexed, most recent failure first: path, reason and when."""
    return [
        {"path": path, "reason": reason, "at": at}
        for path, reason, at in conn.execute("SELECT path, reason, at FROM journal_errors ORDER BY at DESC, path")
    ]


def index_journal(
    conn: db.Connection, path: str | Path, *, forgotten: Forgotten | None = None, settings: IndexSettings | None = None
) -> IndexReport:
    """Bring one journal's rows up to date with its complete lines, in batches sized by `settings`.

    Entries in `forgotten` (by default, the decisions file in the agent folder) are skipped.
    A journal that fails is recorded (Failures), not raised; only the index's own errors are.
    """
    started = time.perf_counter()
    settings = or_default(settings)
    path = os.path.abspath(os.fspath(path))
    if forgotten is None:
        forgotten = forgotten_set.load()
    report = IndexReport()
    failures = Failures(conn)
    try:
        for _attempt in range(20):
            try:
                work = parsing.prepare(_file_row(conn, path), path, forgotten, forgotten_set.journal_row(conn, path))
                if work is not None:
                    with work:
                        batches = workers.in_thread(
                            work.batches(settings=settings.for_parsing()), settings.ahead_text_bytes
                        )
                        _apply(conn, work, batches, report, after_batch=settings.after_batch)
                break
            except _Conflict:
                continue
        failures.clear(path)
    except Exception as e:
        if index_error(e):
            raise
        failures.record(path, e.reason if isinstance(e, JournalFailed) else parsing.failure_reason(e))
        report.failed += 1
    report.seconds = time.perf_counter() - started
    return report


def _file_row(conn: db.Connection, path: str) -> parsing.FileRow | None:
    """What the index knows of one journal: its id, cursor, size, fingerprints..."""
    row = conn.execute(f"SELECT {parsing.FILE_COLUMNS} FROM files WHERE path = ?", (path,)).fetchone()
    return parsing.FileRow._make(row) if row else None


def _file_rows(conn: db.Connection) -> dict[str, parsing.FileRow]:
    """`_file_row` of every journal at once, for a pass to decide each journal's work from.

    The parsing side gets them as an argument and never opens the index (a parsing process
    may be forked, and a SQLite connection must not cross a fork). Rows only this pass
    changes, and another indexer's change meanwhile shows as a conflict when writing.
    """
    return {
        path: parsing.FileRow(*values)
        for path, *values in conn.execute(f"SELECT path, {parsing.FILE_COLUMNS} FROM files")
    }


def _apply(
    conn: db.Connection,
    work: parsing.Work,
    batches: Iterable[parsing.Batch],
    report: IndexReport,
    commit_bytes: int = 0,
    after_batch: Callable[[parsing.Batch], None] | None = None,
) -> None:
    """Write a journal's batches; raises _Conflict when another indexer moved it meanwhile.

    Each batch commits on its own (or joins the caller's transaction); with `commit_bytes`,
    batches share transactions of about that much text, fewer commits for a large journal.
    `after_batch` (IndexSettings) is called with each batch once it is written.
    """
    row = work.row
    if work.missing:
        with _journal_trouble(work.path):
            report.removed += forget_journal(conn, work.path)
        return
    st = work.st
    if st is None:  # deciding its work failed before the journal was opened: its one batch says why
        raise JournalFailed(work.path, work.failure or "the journal could not be opened")
    if work.forget_as is not None:
        with db.write(conn):
            forgotten_set.bury_journal(conn, work.path, work.forget_as[0], st.st_ino, *work.forget_as[1:])
        return
    reset = work.reset
    expected = None if row is None else (row.id, row.cursor)
    touched = False
    with _Transactions(conn, commit_bytes) as transactions:
        for batch in batches:
            if batch.failure is not None:
                raise JournalFailed(work.path, batch.failure)
            with _journal_trouble(work.path):
                file_id = _write_batch(conn, work.path, st, batch, expected, reset)
            transactions.wrote(batch.text_bytes)
            if after_batch is not None:
                after_batch(batch)
            touched = True
            if reset:
                report.reindexed += 1
                reset = False
            report.entries_added += len(batch.rows)
            report.bytes_read += batch.end - batch.start
            report.malformed += batch.malformed
            expected = (file_id, batch.end)
    if reset:
        with _journal_trouble(work.path):
            _write_batch(conn, work.path, st, parsing.Batch(start=0, end=0, lines=0, complete=True), expected, True)
        report.reindexed += 1
        touched = True
    elif row is not None and not touched and (st.st_size != row.size or st.st_mtime != row.mtime):
        with _journal_trouble(work.path):
            _touch(conn, row.id, st, row.cursor)
    if touched:
        report.files += 1


class _Transactions:
    """Write transactions of about `text_bytes` of text each, committed as they fill up
    and at the end, rolled back on an error; with 0, or inside the caller's transaction,
    none of its own."""

    def __init__(self, conn: db.Connection, text_bytes: int) -> None:
        self.conn = conn
        self.text_bytes = text_bytes if not conn.in_transaction else 0
        self.pending = 0

    def __enter__(self) -> _Transactions:
        if self.text_bytes:
            self.conn.execute("BEGIN IMMEDIATE")
        return self

    def wrote(self, text_bytes: int) -> None:
        self.pending += text_bytes
        if self.text_bytes and self.pending >= self.text_bytes:
            self.conn.execute("COMMIT")
            self.conn.execute("BEGIN IMMEDIATE")
            self.pending = 0

    def __exit__(self, kind, *exc) -> None:
        if not self.text_bytes:
            return
        if kind is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:  # some errors end the transaction themselves
            self.conn.execute("ROLLBACK")


def _touch(conn: db.Connection, file_id: int, st: os.stat_result, cursor: int) -> None:
    """Remember size and mtime when only an incomplete line was added, so the next pass can skip."""
    with db.write(conn):
        conn.execute(
            "UPDATE files SET size = ?, mtime = ? WHERE id = ? AND cursor = ?",
            (st.st_size, st.st_mtime, file_id, cursor),
        )


def _from_processes(
    paths: list[Path],
    rows: dict[str, parsing.FileRow],
    forgotten: Forgotten,
    gone: dict[str, forgotten_set.ForgottenJournal],
    settings: IndexSettings,
) -> Generator[StreamItem, None, None]:
    """`parsing.produce`'s items, parsed and redacted in processes beside this one (a bulk pass)."""
    items = workers.in_processes(
        parsing.produce,
        paths,
        (rows, forgotten, gone, settings.for_parsing()),
        processes=settings.processes or workers.process_count(),
        message_bytes=settings.message_text_bytes,
        ahead_bytes=settings.ahead_text_bytes,
        start_method=settings.start_method,
        before_fork=redaction_rules,  # compiled once here, not in each process
    )
    try:
        for item in items:
            if item.kind == ItemKind.BATCH:
                item.payload.parsed_apart = True
            yield item
    finally:
        items.close()


def _write_batch(conn, path: str, st: os.stat_result, batch: parsing.Batch, expected, reset: bool) -> int:
    """One short write transaction: rows, terms and the cursor move together. Returns the file id."""
    with db.write(conn):
        current = conn.execute("SELECT id, cursor FROM files WHERE path = ?", (path,)).fetchone()
        if (current is None) != (expected is None) or (current is not None and tuple(current) != tuple(expected)):
            raise _Conflict()
        if current is None:
            file_id = conn.execute(
                "INSERT INTO files (path, size, mtime, inode) VALUES (?, ?, ?, ?)",
                (path, st.st_size, st.st_mtime, st.st_ino),
            ).lastrowid
            # A path has a files row or a forgotten_journals row, never both (its session came back).
            conn.execute("DELETE FROM forgotten_journals WHERE path_key = ?", (store.forgotten_key(path),))
        else:
            file_id = current[0]
        if reset:
            store.delete_file_rows(conn, file_id)
            conn.execute(
                "UPDATE files SET cursor = 0, lines = 0, entry_count = 0, malformed = 0, "
                "head_length = NULL, head_fingerprint = NULL, tail_offset = NULL, "
                "tail_length = NULL, tail_fingerprint = NULL, last_timestamp = NULL, "
                "session_id = NULL, cwd = NULL, started = NULL, parent_session = NULL, "
                "name = NULL, version = NULL WHERE id = ?",
                (file_id,),
            )
        header = batch.header
        if header is not None:
            conn.execute(
                "UPDATE files SET session_id = COALESCE(?, session_id), cwd = COALESCE(?, cwd), "
                "started = COALESCE(?, started), parent_session = COALESCE(?, parent_session), "
                "version = ? WHERE id = ?",
                (header.session_id, header.cwd, header.timestamp, header.parent_session, header.version, file_id),
            )
        if batch.name is not None:
            conn.execute("UPDATE files SET name = ? WHERE id = ?", (batch.name, file_id))
        if batch.rows:
            first = conn.execute("SELECT COALESCE(MAX(rowid), 0) + 1 FROM entries").fetchone()[0]
            session_id, cwd = conn.execute("SELECT session_id, cwd FROM files WHERE id = ?", (file_id,)).fetchone()
            _insert_rows(conn, first, file_id, session_id, store.scope_terms(cwd, session_id), batch)
            _insert_calls(conn, first, file_id, session_id, batch)
        params = {
            "id": file_id,
            "cursor": batch.end,
            "lines": batch.lines,
            "n": len(batch.rows),
            "malformed": batch.malformed,
            "size": st.st_size,
            # mtime is kept only once the journal was read to its end: a pass stopped between
            # two batches leaves it NULL, so the next pass (and status) sees work left.
            "mtime": st.st_mtime if batch.complete else None,
            "inode": st.st_ino,
            "now": journal.now_iso(),
            "last_ts": batch.last_timestamp,
        }
        sets = [
            "cursor = :cursor",
            "lines = lines + :lines",
            "entry_count = entry_count + :n",
            "malformed = malformed + :malformed",
            "size = :size",
            "mtime = :mtime",
            "inode = :inode",
            "indexed_at = :now",
            "needs_reindex = 0",
            "last_timestamp = COALESCE(:last_ts, last_timestamp)",
        ]
        if batch.head is not None:
            sets += ["head_length = :head_length", "head_fingerprint = :head_fp"]
            params["head_length"], params["head_fp"] = batch.head
        if batch.tail is not None:
            sets += ["tail_offset = :tail_offset", "tail_length = :tail_length", "tail_fingerprint = :tail_fp"]
            params["tail_offset"], params["tail_length"], params["tail_fp"] = batch.tail
        conn.execute(f"UPDATE files SET {', '.join(sets)} WHERE id = :id", params)
        return file_id


# The entries columns a batch's values go to, in EntryValues' order: its ids are stored as eid and
# parent_eid, its timestamp as ts, its kind as k, its labels by their keys (entries.id, parent_id,
# timestamp, kind, tool, provider and stop_reason are computed).
STORED = {
    "id": "eid",
    "parent_id": "parent_eid",
    "timestamp": "ts",
    "kind": "k",
    "tool": "tool_key",
    "provider": "provider_key",
    "stop_reason": "stop_key",
}
INSERT_COLUMNS = (
    "rowid",
    "file_id",
    "sid",
    *(STORED.get(name, name) for name in parsing.EntryValues._fields),
)
# Rows carry "" and parsing.NO_INT for a missing value, turned into NULL here: binding None
# costs pysqlite3 about 2 us a value (a quarter of the entries' insert time).
NULLABLE = {
    "sid": "NULLIF(?, '')",
    "parent_eid": "NULLIF(?, '')",
    "ts": store.TS_FROM_TEXT.replace("?", "NULLIF(?, '')"),
    "k": store.KIND_FROM_TEXT,
    "tool_key": "NULLIF(?, '')",
    "tokens_before": f"NULLIF(?, {parsing.NO_INT})",
    "model": "NULLIF(?, '')",
    "provider_key": "NULLIF(?, '')",
    "stop_key": "NULLIF(?, '')",
    "input_tokens": f"NULLIF(?, {parsing.NO_INT})",
    "output_tokens": f"NULLIF(?, {parsing.NO_INT})",
    "cache_read_tokens": f"NULLIF(?, {parsing.NO_INT})",
    "cache_write_tokens": f"NULLIF(?, {parsing.NO_INT})",
    "cost": f"NULLIF(?, {parsing.NO_INT})",
    "is_error": f"NULLIF(?, {parsing.NO_INT})",
    "exit_code": f"NULLIF(?, {parsing.NO_EXIT})",
}
# Rows per multi-row INSERT: few statements (SQLite releases the GIL for each one, so the
# parsing thread runs meanwhile; executemany would hand the GIL back and forth per row),
# in a few fixed sizes so each statement is prepared once and then reused from the cache.
INSERT_SIZES = (512, 64, 8, 1)


@functools.lru_cache(maxsize=8)
def _insert_sql(table: str, columns: tuple[str, ...], rows: int) -> str:
    one = "(" + ",".join(NULLABLE.get(column, "?") for column in columns) + ")"
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES " + ",".join([one] * rows)


def _chunks(total: int) -> Iterator[tuple[int, int]]:
    """(start, size) pieces of `total` rows, each size one of INSERT_SIZES."""
    start = 0
    for size in INSERT_SIZES:
        while total - start >= size:
            yield start, size
            start += size


def _insert_rows(
    conn: db.Connection, first: int, file_id: int, session_id: str | None, scope: str, batch: parsing.Batch
) -> None:
    """Insert a batch's entries and their terms.

    Beside a parsing thread, many rows go in each statement (SQLite releases the GIL once per
    statement, not once per row). A batch parsed in another process goes row by row with
    executemany, which is cheaper with nobody to hand the GIL to (7.9 s against 9.0 s for a
    cold index of the 514 MB benchmark corpus).
    """
    sid = store.session_key(session_id) or ""  # NULLABLE: no None is bound (and a bytearray, no bytes)
    if batch.parsed_apart:
        conn.executemany(
            _insert_sql("entries", INSERT_COLUMNS, 1),
            [(first + k, file_id, sid, *row) for k, row in enumerate(batch.rows)],
        )
        conn.executemany(
            _insert_sql("entries_fts", ("rowid", "text"), 1),
            [(first + k, store.fts_text(text, scope)) for k, text in enumerate(batch.texts)],
        )
        return
    for i, n in _chunks(len(batch.rows)):
        rows = batch.rows[i : i + n]
        texts = batch.texts[i : i + n]
        rowid = first + i
        params: list = []
        for k, row in enumerate(rows):
            params += (rowid + k, file_id, sid)
            params += row
        conn.execute(_insert_sql("entries", INSERT_COLUMNS, len(rows)), params)
        terms: list = []
        for k, text in enumerate(texts):
            terms += (rowid + k, store.fts_text(text, scope))
        conn.execute(_insert_sql("entries_fts", ("rowid", "text"), len(texts)), terms)


def _insert_calls(conn: db.Connection, first: int, file_id: int, session_id: str | None, batch: parsing.Batch) -> None:
    """Insert a batch's tool calls, each paired with its result by call id: a result in the same
    batch directly, one answering a call of an earlier batch of this journal by updating that call."""
    # Positions, not names: a batch from a parsing process carries plain tuples (parsing.Batch.__getstate__).
    # No None and no bytes are bound (each costs pysqlite3 an adapter lookup: store.bindable): "" and
    # NO_INT stand for NULL, as in the entries' INSERT.
    calls: list[list] = []
    sid = store.session_key(session_id) or ""
    waiting: dict[bytes | str, list] = {}
    no_int = parsing.NO_INT
    for row, call_id, tool, path in batch.calls:
        calls.append([first + row, sid, store.bindable(call_id), tool, path, no_int, no_int])
        if call_id:
            waiting.setdefault(call_id, calls[-1])
    earlier: list[tuple] = []
    for row, call_id, outcome in batch.results:
        paired = waiting.pop(call_id, None)
        if paired is None:
            earlier.append((first + row, outcome, store.bindable(call_id), file_id))
        else:
            paired[5], paired[6] = first + row, outcome
    if calls:
        conn.executemany(
            "INSERT INTO tool_calls (entry_rowid, sid, call_key, tool_key, path, result_rowid, is_error) "
            f"VALUES (?, NULLIF(?, ''), NULLIF(?, ''), NULLIF(?, ''), NULLIF(?, ''), NULLIF(?, {no_int}), "
            f"NULLIF(?, {no_int}))",
            calls,
        )
    if earlier:
        conn.executemany(
            f"UPDATE tool_calls SET result_rowid = ?, is_error = NULLIF(?, {no_int}) WHERE rowid = (SELECT c.rowid "
            "FROM tool_calls c JOIN entries e ON e.rowid = c.entry_rowid WHERE c.call_key = ? "
            "AND c.result_rowid IS NULL AND e.file_id = ? ORDER BY c.rowid LIMIT 1)",
            earlier,
        )


def forget_journal(conn: db.Connection, path: str) -> int:
    """Remove a journal's file row, entries and terms (it was deleted). Returns 1 if it was known."""
    with db.write(conn):
        return store.delete_journal(conn, path)


def index_all(
    conn: db.Connection,
    locations: Locations,
    journals: Iterable[str | Path] | None = None,
    progress: Callable[[int, int, Path], None] | None = None,
    owner: str | None = None,
    settings: IndexSettings | None = None,
) -> IndexReport:
    """Index the given journals, or backfill every journal newest first under the lease
    (sizes, processes and a hook for each written batch from `settings`)."""
    started = time.perf_counter()
    settings = or_default(settings)
    report = IndexReport()
    forgotten = forgotten_set.load(locations.memory_dir)
    forgotten_set.settle(conn, forgotten)
    if journals is not None:
        journals = list(journals)
        for done, path in enumerate(journals, 1):
            report.add(index_journal(conn, path, forgotten=forgotten, settings=settings))
            if progress:
                progress(done, len(journals), Path(path))
        report.seconds = time.perf_counter() - started
        return report
    owner = owner or lease.default_owner()
    holder = lease.take_lease(conn, owner)
    if holder is not None:
        report.lease_holder = holder
        report.seconds = time.perf_counter() - started
        return report
    cache = conn.execute("PRAGMA cache_size").fetchone()[0]
    try:
        paths, outside = find_journals(locations)
        report.outside = len(outside)
        report.removed += remove_missing(conn)
        report.removed += remove_outside(conn, locations, paths)
        total = len(paths)
        failures = Failures(conn)
        failures.keep_only(paths)
        held = failures.held_back(paths)  # counted as done: nothing to do for them until their retry time
        if held:
            paths = [p for p in paths if p not in held]
        rows = _file_rows(conn)
        gone = forgotten_set.journal_rows(conn)
        bulk = _pending_bytes(rows, paths, gone) >= settings.bulk_bytes
        _merge_settings(conn, bulk=bulk)
        if bulk:  # pages are mostly appended: a small cache does, and the parsers get the memory
            conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
        if bulk and conn.execute("SELECT 1 FROM entries LIMIT 1").fetchone() is None:
            with db.write(conn):  # a cold build: the indexes are sorted once its rows are in (below)
                store.drop_entry_indexes(conn)
        last_write = time.monotonic()
        for done, path in enumerate(
            _pipelined(conn, paths, rows, forgotten, gone, report, failures, settings, bulk=bulk), len(held) + 1
        ):
            if progress:
                progress(done, total, path)
            if time.monotonic() - last_write >= PROGRESS_SECONDS and report.files:
                # Renew the lease and publish progress now and then, not after every journal:
                # a steady pass over unchanged journals writes nothing.
                if lease.take_lease(conn, owner) is not None:
                    break
                lease.record_backfill(conn, total, done, complete=False)
                last_write = time.monotonic()
        else:
            lease.record_backfill(conn, total, total, complete=True)
            if report.bytes_read >= settings.bulk_bytes:
                compact(conn)
            _merge_settings(conn, bulk=False)
    finally:
        conn.execute(f"PRAGMA cache_size = {cache}")
        try:
            # However the pass ended, and whatever an earlier one left (a SIGKILLed cold build).
            store.create_entry_indexes(conn)
        except db.OperationalError:
            pass  # the index is busy: the next pass creates them
        finally:
            lease.release_lease(conn, owner)
    report.seconds = time.perf_counter() - started
    return report


# FTS5 merge settings: (automerge, crisismerge). A bulk build defers merging to one
# compaction at the end; otherwise FTS5's defaults keep the segment count low as lines trickle in.
BULK_MERGE = (0, 64)
STEADY_MERGE = (4, 16)
# The writer's page cache during a bulk pass, in KiB (db.CACHE_KIB otherwise).
BULK_CACHE_KIB = 16_384


def _pending_bytes(
    rows: dict[str, parsing.FileRow], paths: list[Path], gone: dict[str, forgotten_set.ForgottenJournal]
) -> int:
    """Roughly how much journal a pass has ahead of it (a forgotten journal is never read)."""
    pending = 0
    for path in paths:
        row = rows.get(str(path))
        try:
            st = path.stat()
            if row is None and forgotten_set.unchanged(gone, str(path), st):
                continue
            pending += max(0, st.st_size - (row.cursor if row else 0))
        except (OSError, TypeError):  # TypeError: a row edited by hand; the journal fails on its own
            continue
    return pending


def _merge_settings(conn: db.Connection, bulk: bool) -> None:
    """Switch FTS5 between bulk and steady merging; a no-op when already set.

    The choice is made again at every backfill, so a build killed in bulk mode heals.
    """
    wanted = BULK_MERGE if bulk else STEADY_MERGE
    current = dict(
        conn.execute("SELECT k, v FROM entries_fts_config WHERE k IN ('automerge', 'crisismerge')").fetchall()
    )
    if (current.get("automerge", 4), current.get("crisismerge", 16)) == wanted:
        return
    with db.write(conn):
        for key, value in zip(("automerge", "crisismerge"), wanted, strict=True):
            conn.execute("INSERT INTO entries_fts (entries_fts, rank) VALUES (?, ?)", (key, value))


def _pipelined(
    conn: db.Connection,
    paths: list[Path],
    rows: dict[str, parsing.FileRow],
    forgotten: Forgotten,
    gone: dict[str, forgotten_set.ForgottenJournal],
    report: IndexReport,
    failures: Failures,
    settings: IndexSettings,
    bulk: bool = False,
) -> Iterator[Path]:
    """Index journals in order, parsing the next ones while this one is written.

    Parsing runs in a thread, or for a bulk pass in other processes, so that this process
    keeps a single Python thread and SQLite never waits for the GIL. A journal another
    indexer changed meanwhile is done again on its own. Yields each path once it is done.
    """
    if bulk:
        items = _from_processes(paths, rows, forgotten, gone, settings)
    else:
        items = workers.in_thread(
            parsing.produce(paths, rows, forgotten, gone, settings.for_parsing()), settings.ahead_text_bytes
        )
    try:
        with workers.collecting_rarely() if bulk else contextlib.nullcontext():
            yield from _write_all(conn, items, forgotten, report, failures, settings)
    finally:
        items.close()  # stops the thread or the processes at once, however this pass ends


def _write_all(
    conn: db.Connection,
    items: Iterator[StreamItem],
    forgotten: Forgotten,
    report: IndexReport,
    failures: Failures,
    settings: IndexSettings,
) -> Iterator[Path]:
    """The writing side of `_pipelined`: small journals grouped, large ones batch by batch.

    A journal that fails is recorded and skipped; a group it was in is written again without it.
    """
    group: list[tuple[Path, parsing.Work | None, list[parsing.Batch]]] = []
    group_bytes = 0

    def flush() -> Iterator[Path]:
        """Write the small journals gathered so far in one transaction (fewer FTS5 flushes)."""
        nonlocal group, group_bytes
        _write_group(
            conn,
            [(work, batches) for _p, work, batches in group if work is not None],
            forgotten,
            report,
            failures,
            settings,
        )
        for path, work, _batches in group:
            if work is None:  # nothing left to index
                failures.clear(os.path.abspath(path))
        done = [path for path, _w, _b in group]
        group, group_bytes = [], 0
        yield from done

    for kind, path, work in items:
        assert path is not None  # a journal's items name it (only a parsing process's own messages do not)
        if kind == ItemKind.SKIP:
            group.append((path, None, []))
            continue
        batches = list(_first_batches(items, 2))
        if len(batches) < 2:
            group.append((path, work, batches))
            group_bytes += sum(b.text_bytes for b in batches)
            if group_bytes >= settings.group_text_bytes:
                yield from flush()
            continue
        yield from flush()
        part = IndexReport()
        rest = _until_end(items)
        try:
            _apply(
                conn, work, itertools.chain(batches, rest), part, settings.transaction_text_bytes, settings.after_batch
            )
            report.add(part)
            failures.clear(work.path)
        except _Conflict:
            for _ in rest:
                pass
            report.add(index_journal(conn, path, forgotten=forgotten, settings=settings))
        except JournalFailed as e:
            for _ in rest:
                pass
            _failed(failures, e, report)
        yield path
    yield from flush()


def _write_group(
    conn: db.Connection,
    group: list[tuple[parsing.Work, list[parsing.Batch]]],
    forgotten: Forgotten,
    report: IndexReport,
    failures: Failures,
    settings: IndexSettings,
) -> None:
    """Write small journals in one transaction. One that fails is recorded and the others are
    written again without it, as parsed; after a conflict each is done again on its own."""
    while group:
        part = IndexReport()
        try:
            with db.write(conn):
                for work, batches in group:
                    _apply(conn, work, batches, part, after_batch=settings.after_batch)
        except _Conflict:
            for work, _batches in group:
                report.add(index_journal(conn, work.path, forgotten=forgotten, settings=settings))
            return
        except JournalFailed as e:  # the transaction was rolled back
            _failed(failures, e, report)
            group = [(work, batches) for work, batches in group if work.path != e.path]
            continue
        report.add(part)
        for work, _batches in group:
            failures.clear(work.path)
        return


def _failed(failures: Failures, error: JournalFailed, report: IndexReport) -> None:
    """Record a journal that failed (what it wrote before its failure is kept)."""
    failures.record(error.path, error.reason)
    report.failed += 1


def _first_batches(items: Iterator[StreamItem], n: int) -> Iterator[parsing.Batch]:
    """Up to n batches of the current journal; stops early at its end marker (consumed)."""
    for _ in range(n):
        kind, _path, batch = next(items)
        if kind == ItemKind.END:
            return
        yield batch


def _until_end(items: Iterator[StreamItem]) -> Iterator[parsing.Batch]:
    """The batches of the current journal, up to its end marker."""
    for kind, _path, batch in items:
        if kind == ItemKind.END:
            return
        yield batch


def remove_missing(conn: db.Connection) -> int:
    """Drop the rows and terms of journals that no longer exist."""
    removed = 0
    for (path,) in conn.execute("SELECT path FROM files").fetchall():
        if not os.path.exists(path):
            removed += forget_journal(conn, path)
    return removed


def remove_outside(conn: db.Connection, locations: Locations, listed: list[Path]) -> int:
    """Drop the rows of journals named inside a journal folder that now resolve outside them
    (replaced by a link elsewhere); only rows the pass did not list are looked at."""
    names = {str(p) for p in listed}
    folders = tuple(os.path.join(os.path.abspath(d), "") for d in locations.sessions_dirs)
    removed = 0
    for (path,) in conn.execute("SELECT path FROM files").fetchall():
        if path not in names and path.startswith(folders) and not locations.contains(Path(path)):
            removed += forget_journal(conn, path)
    return removed


def compact(conn: db.Connection, pages: int = 2000) -> int:
    """Merge every segment into one, a few thousand pages per short write transaction.

    The same result as FTS5's `optimize`, without holding the write lock for the whole merge.
    Returns the number of transactions it took.
    """
    steps = 0
    while True:
        with db.write(conn):
            before = conn.total_changes
            conn.execute("INSERT INTO entries_fts (entries_fts, rank) VALUES ('merge', ?)", (-pages,))
            worked = conn.total_changes - before >= 2
        steps += 1
        if not worked:
            store.release_free_pages(conn)
            return steps


def rebuild(
    locations: Locations,
    progress: Callable[[int, int, Path], None] | None = None,
    settings: IndexSettings | None = None,
) -> IndexReport:
    """Build a new index beside the live one, then copy it in as one transaction.

    SQLite's backup API replaces the live index's pages atomically, so a server reading it
    sees the old index or the new one, never an empty or half-built one; a rebuild killed
    midway leaves the old index as it was.
    """
    live = Path(locations.db_path)
    store.make_private_folder(live.parent)
    for leftover in live.parent.glob(f"{live.name}.rebuild-*"):
        leftover.unlink(missing_ok=True)
    tmp = live.parent / f"{live.name}.rebuild-{os.getpid()}"
    new = store.open_index(tmp)
    try:
        report = index_all(new, locations, progress=progress, settings=settings)
        compact(new)
        if live.exists():
            target = store.open_index(live)
            try:
                new.backup(target)
            finally:
                target.close()
        else:
            for suffix in ("-wal", "-shm"):
                Path(f"{live}{suffix}").unlink(missing_ok=True)
            new.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            new.close()
            os.replace(tmp, live)
    finally:
        try:
            new.close()
        except db.ProgrammingError:
            pass
        store.delete_index_files(tmp)
    return report
