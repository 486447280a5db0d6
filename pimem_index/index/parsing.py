"""What a pass reads from a journal: where it starts, and its complete lines in batches.

The parsing side of indexing, in a thread or in parsing processes (`workers`): it reads
journals and the rows the writer handed over, parses, redacts, and never opens the index.
A batch holds entry rows and redacted texts, ready for the writer to put in one transaction.
Whatever goes wrong reading one journal (a malformed line is only counted) ends its batches
with a failure batch saying why, so the writer records that journal and goes on with the others.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, NamedTuple

from pimem_index import journal, store
from pimem_index.index.forgotten import Forgotten, ForgottenJournal
from pimem_index.index.settings import IndexSettings, or_default
from pimem_index.index.stream import ItemKind, StreamItem
from pimem_index.redaction import redact, redact_part
from pimem_index.redaction.ids import PI_ID, shown_id
from pimem_index.redaction.parts import redact_without

# Journals are read in chunks of this size (a batch's size: settings.IndexSettings).
CHUNK_BYTES = 4 * 1024 * 1024
# A failure's reason is one line of at most this many characters.
REASON_CHARS = 200
# A longer line is counted malformed and skipped, never held in memory whole: indexing holds at most
# this and a chunk of a line, whatever the journal holds (Pi's largest lines, a message with a few
# base64 screenshots, are a few MB).
MAX_LINE_BYTES = 32 * 1024 * 1024
# A journal modified this recently may have changed again within the clock's granularity.
RACY_SECONDS = 2.0
# A row's missing integer; a missing text is "". The writer's INSERT turns both into NULL
# (indexer.NULLABLE): pysqlite3 adapts every None it binds, at about 2 us each.
NO_INT = -1
# A missing exit code (-1 is an exit code a process may report): outside what journal._exit_code keeps.
NO_EXIT = 1 << 32


class FileRow(NamedTuple):
    """What the index knows of a journal when a pass starts (its files row): where reading stopped,
    the file it was, and the fingerprints of its first and last indexed lines."""

    id: int
    cursor: int
    lines: int
    size: int
    mtime: float | None
    inode: int | None
    head_length: int | None
    head_fingerprint: int | None
    tail_offset: int | None
    tail_length: int | None
    tail_fingerprint: int | None
    needs_reindex: int
    session_id: str | None


FILE_COLUMNS = ", ".join(FileRow._fields)


class EntryValues(NamedTuple):
    """One entry as a batch carries it to the writer: its INSERT's values after rowid, file_id and
    session_id (indexer.INSERT_COLUMNS), a missing text as "" and a missing integer as NO_INT."""

    id: bytearray | str  # stored as entries.eid (store.id_key), the parent's as parent_eid
    parent_id: bytearray | str
    timestamp: str  # stored as entries.ts (epoch milliseconds)
    kind: str  # the role follows from it (entries.role is computed)
    tool: int | str  # stored as entries.tool_key (store.label_key), as are provider and stop_reason
    chars: int
    line: int
    offset: int
    length: int
    fingerprint: int
    tokens_before: int
    model: str
    provider: int | str
    stop_reason: int | str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: float
    is_error: int
    exit_code: int
    text_digest: int


class CallValues(NamedTuple):
    """One tool call as a batch carries it: the index of its assistant entry among the batch's rows,
    its call id as tool_calls stores it (store.call_key), and its tool (store.label_key) and file
    argument redacted ("" when missing)."""

    row: int
    call_id: bytes | str
    tool: int | str
    path: str


class ResultValues(NamedTuple):
    """One tool result's pairing as a batch carries it: its index among the batch's rows, the call
    id it answers (store.call_key) and its outcome (0/1, NO_INT when unreadable)."""

    row: int
    call_id: bytes | str
    is_error: int


@dataclass
class Batch:
    """Lines parsed from one stretch of a journal, ready to write in one transaction."""

    start: int
    end: int
    lines: int
    rows: list[EntryValues] = field(default_factory=list)
    texts: list = field(default_factory=list)
    calls: list[CallValues] = field(default_factory=list)
    results: list[ResultValues] = field(default_factory=list)
    malformed: int = 0
    header: journal.Header | None = None
    name: str | None = None
    head: tuple[int, int] | None = None
    tail: tuple[int, int, int] | None = None
    last_timestamp: str | None = None
    text_bytes: int = 0
    # Every complete line of the journal, as it was opened, is in this batch or an earlier one.
    complete: bool = False
    # Parsed in another process: no thread here wants the GIL, so rows go one per step.
    parsed_apart: bool = False
    # Reading the journal failed here (why, in one line): the writer records it, writes no more of it.
    failure: str | None = None

    def __getstate__(self) -> dict:
        """What a parsing process sends: rows, calls and results as plain tuples (the same values in
        the same order). Pickle calls a named tuple's class once per row on each side, which took
        three times as long as plain tuples for 22 values."""
        state = dict(self.__dict__)
        for name in ("rows", "calls", "results"):
            state[name] = [tuple(values) for values in state[name]]
        return state


def failure_reason(error: BaseException) -> str:
    """An error as one redacted line, its type first, for journal_errors and stderr (a lone
    surrogate, from a file name that is not UTF-8, written as \\udcNN)."""
    text = str(error).strip().splitlines()
    reason = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    reason = reason.encode("utf-8", "backslashreplace").decode("utf-8")
    return redact_part(reason, 0, REASON_CHARS)[:REASON_CHARS]  # redacted as a whole, then cut


def _line_after(fh, cursor: int, size: int, limit: int = 1024 * 1024) -> bool:
    """Whether a complete line follows the cursor (looking at most `limit` bytes ahead).

    An index written before batches said whether they read a journal to its end may hold
    one stopped between two batches with its size and mtime recorded: this finds it.
    """
    if cursor >= size:
        return False
    return b"\n" in _read_at(fh, cursor, min(limit, size - cursor))


def _read_at(fh, offset: int, length: int) -> bytes:
    fh.seek(offset)
    return fh.read(length)


def _needs_reset(row: FileRow, st: os.stat_result, fh) -> bool:
    """A shrunk, replaced or rewritten journal must be read again from byte 0."""
    if row.needs_reindex or st.st_size < row.cursor:
        return True
    if row.inode is not None and row.inode != st.st_ino:
        return True
    if row.head_length is not None and (journal.fingerprint(_read_at(fh, 0, row.head_length)) != row.head_fingerprint):
        return True
    if (
        row.tail_offset is not None
        and row.tail_length is not None
        and (journal.fingerprint(_read_at(fh, row.tail_offset, row.tail_length)) != row.tail_fingerprint)
    ):
        return True
    return False


@dataclass
class Work:
    """One journal's pending work, decided from its file and its row: where reading starts."""

    path: str
    row: FileRow | None
    fh: BinaryIO | None = None
    st: os.stat_result | None = None
    reset: bool = False
    start: int = 0
    start_line: int = 0
    session_id: str | None = None
    forgotten: Forgotten | None = None
    missing: bool = False  # the journal is gone: its rows are removed
    # The journal of a forgotten session: (session key, head length, head fingerprint) for
    # its forgotten_journals row; nothing of it is read beyond its first line.
    forget_as: tuple[str, int, int] | None = None
    failure: str | None = None  # deciding its work failed (why): its one batch says so

    def detached(self) -> Work:
        """What the writer needs (no open file, no forget list): a copy that pickles."""
        return dataclasses.replace(self, fh=None, forgotten=None)

    def batches(self, ramp: bool = False, settings: IndexSettings | None = None) -> Iterator[Batch]:
        """The journal's batches, sized by `settings`; with `ramp`, small ones first whatever its
        size. The last is a failure batch if reading failed."""
        if self.failure is not None:
            return iter((Batch(start=self.start, end=self.start, lines=0, failure=self.failure),))
        if self.missing or self.forget_as is not None:
            return iter(())
        if self.fh is None or self.st is None or self.forgotten is None:
            raise ValueError(f"{self.path}: a detached Work has no file to read (read the one prepare returned)")
        return _failure_last(
            _batches(
                self.fh,
                self.start,
                self.start_line,
                self.st.st_size,
                self.session_id,
                self.forgotten,
                or_default(settings),
                ramp,
            ),
            self.start,
        )

    def __enter__(self) -> Work:
        return self

    def __exit__(self, *exc) -> None:
        if self.fh is not None:
            self.fh.close()


def prepare(row: FileRow | None, path: str, forgotten: Forgotten, gone: ForgottenJournal | None = None) -> Work | None:
    """Decide what a journal needs from its file and its row; None when it is unchanged.

    `gone` is the journal's forgotten_journals row (`forgotten.journal_rows`), if any: while the
    file is that one and its session still forgotten, nothing is read past the first line.
    """
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return Work(path, row, missing=True) if row is not None else None
    except OSError:
        return None  # unreadable now (permissions, a vanished mount): kept as it is, tried next pass
    st = os.fstat(fh.fileno())
    if gone is not None and _still_forgotten(fh, st, gone, forgotten):
        fh.close()
        return None
    work = Work(path, row, fh=fh, st=st, forgotten=forgotten)
    if row is not None:
        unchanged = st.st_size == row.size and st.st_mtime == row.mtime and row.inode == st.st_ino
        if (
            unchanged
            and not row.needs_reindex
            and time.time() - st.st_mtime > RACY_SECONDS
            and not _line_after(fh, row.cursor, st.st_size)
        ):
            fh.close()
            return None
        work.reset = _needs_reset(row, st, fh)
        if not work.reset:
            work.start, work.start_line, work.session_id = row.cursor, row.lines, row.session_id
    if row is None or work.reset:
        work.forget_as = forgotten_head(fh, forgotten)
    return work


def _still_forgotten(fh, st: os.stat_result, gone: ForgottenJournal, forgotten: Forgotten) -> bool:
    """Whether the file is the forgotten journal recorded at its path (same inode, same first
    line) and its session is still forgotten."""
    if gone.session_key not in forgotten.session_keys or gone.inode != st.st_ino:
        return False
    head = _read_at(fh, 0, gone.head_length + 1)
    return head[-1:] == b"\n" and journal.fingerprint(head[:-1]) == gone.head_fingerprint


def forgotten_head(fh, forgotten: Forgotten) -> tuple[str, int, int] | None:
    """(session key, length, fingerprint) of the first line when it is the header of a
    forgotten session; reads that line only, and only when some session is forgotten."""
    if not forgotten.sessions:
        return None
    fh.seek(0)
    line = fh.readline(MAX_LINE_BYTES + 1)
    if not line.endswith(b"\n"):
        return None  # no complete first line yet: nothing of the journal is indexed either
    line = line[:-1]
    try:
        item = journal.parse_line(line, 1)
    except journal.Malformed:
        return None
    session_id = shown_id(item.session_id) if isinstance(item, journal.Header) else None
    if session_id is None or session_id not in forgotten.sessions:
        return None
    return store.forgotten_key(session_id), len(line), journal.fingerprint(line)


def _failure_last(batches: Iterator[Batch], start: int) -> Iterator[Batch]:
    """The batches, then, if reading them raised, a failure batch saying why instead of the error."""
    try:
        yield from batches
    except Exception as e:
        yield Batch(start=start, end=start, lines=0, failure=failure_reason(e))


def _batches(
    fh,
    start: int,
    start_line: int,
    size: int,
    session_id: str | None,
    forgotten: Forgotten,
    settings: IndexSettings,
    ramp: bool = False,
) -> Iterator[Batch]:
    """Parse complete lines from `start` up to `size` in batches; an incomplete last line waits.

    A large journal's batches (or any journal's, with `ramp`) start small and grow.
    """
    batch_entries, batch_text_bytes = settings.batch_entries, settings.batch_text_bytes  # locals: read per line
    state = _LineState(session_id, forgotten)
    fh.seek(start)
    offset = start
    lineno = start_line
    buffer = b""
    buffer_offset = start
    skipping = False
    batch = Batch(start=start, end=start, lines=0)
    yielded = False
    share = settings.first_batch_share if ramp or size - start > settings.ramp_journal_bytes else 1
    remaining = size - start
    while remaining > 0:
        chunk = fh.read(min(CHUNK_BYTES, remaining))
        if not chunk:
            break
        remaining -= len(chunk)
        data = buffer + chunk if buffer else chunk
        base = buffer_offset
        pos = 0
        while True:
            nl = data.find(b"\n", pos)
            if nl < 0:
                break
            line = data[pos:nl]
            line_offset = base + pos
            pos = nl + 1
            lineno += 1
            offset = base + pos
            if skipping:
                skipping = False
                batch.malformed += 1
            else:
                batch.text_bytes += _take_line(batch, line, line_offset, lineno, state)
            batch.end = offset
            batch.lines += 1
            if len(batch.rows) * share >= batch_entries or batch.text_bytes * share >= batch_text_bytes:
                yield batch
                yielded = True
                share = max(1, share // 2)
                batch = Batch(start=offset, end=offset, lines=0)
        buffer = data[pos:]
        buffer_offset = base + pos
        if len(buffer) > MAX_LINE_BYTES:
            skipping = True
            buffer = b""
            buffer_offset = base + len(data)
    if batch.lines or yielded:  # the last batch says the journal was read to its end, even empty
        batch.complete = True
        yield batch


@dataclass
class _LineState:
    """What a line's meaning depends on beyond itself: the session it belongs to."""

    session_id: str | None
    forgotten: Forgotten


def _take_line(batch: Batch, line: bytes, offset: int, lineno: int, state: _LineState) -> int:
    """Add one line to the batch; returns the bytes of text it adds to the term index."""
    if lineno == 1:
        batch.head = (len(line), journal.fingerprint(line))
    fp = journal.fingerprint(line)
    batch.tail = (offset, len(line), fp)
    if not line.strip():
        return 0
    try:
        item = journal.parse_line(line, lineno)
    except journal.Malformed:
        batch.malformed += 1
        return 0
    if isinstance(item, journal.Entry):
        item = _shown_ids(item)
        if state.forgotten and state.forgotten.hides(state.session_id, item):
            return 0
        text = item.text
        usage = item.usage
        if usage.calls or usage.call_id:
            _take_calls(batch, usage)
        # The terms: the redacted text without its labels (a tool call's argument names are not terms).
        redacted = (redact_without(text, item.labels) if item.labels else redact(text)) if text else ""
        batch.rows.append(
            _entry_values(  # as EntryValues(...), without its 22-argument __new__ for every line
                (
                    store.id_key(item.id),
                    store.id_key(item.parent_id) if item.parent_id else "",
                    item.timestamp or "",
                    item.kind,
                    _tool_key(item.tool),
                    len(text),
                    lineno,
                    offset,
                    len(line),
                    fp,
                    NO_INT if item.tokens_before is None else item.tokens_before,
                )
                + _usage_values(usage)
                + (text_digest(redacted),),
            )
        )
        batch.texts.append(redacted)
        if item.timestamp:
            batch.last_timestamp = item.timestamp
        return len(redacted)
    if isinstance(item, journal.Header):
        # parentSession is a path the journal names (shown, linked, in Datasette's tables): redacted
        item = dataclasses.replace(
            item, session_id=shown_id(item.session_id), parent_session=redacted_field(item.parent_session) or None
        )
        if batch.header is None or item.session_id:
            batch.header = item
        if item.session_id:
            state.session_id = item.session_id
    elif isinstance(item, journal.SessionName):
        batch.name = redacted_field(item.name) or None
    return 0


def text_digest(terms_text: str) -> int:
    """A signed 64-bit digest of an entry's indexed text with each run of (ASCII) whitespace as one
    space: entries of the same text share it (results fold by it), whatever their session."""
    return int.from_bytes(hashlib.blake2b(normal_spaces(terms_text), digest_size=8).digest(), "big", signed=True)


# bytes.split()'s whitespace (the six ASCII bytes), each as a space: runs of them are then runs of spaces.
_AS_SPACE = bytes.maketrans(b"\t\n\x0b\x0c\r", b"     ")
# Two spaces, then any more: sre scans for a two-byte prefix, so the single spaces between words
# cost no match attempt (`  +` tried one at each of them: 10% slower over the whole digest).
_SPACES = re.compile(b"   *")


def normal_spaces(text: str) -> bytes:
    """The text in UTF-8 with each run of ASCII whitespace as one space and none at either end, as
    `b" ".join(text.encode().split())` gives it: a translate, then a regex over the runs alone
    (split() made a bytes object per word: most of the digest's time)."""
    b = text.encode("utf-8", "surrogatepass").translate(_AS_SPACE)
    if b"  " in b:
        b = _SPACES.sub(b" ", b)
    return b.strip(b" ")


_pi_id = PI_ID.fullmatch


def _shown_ids(item: journal.Entry) -> journal.Entry:
    """The entry with its ids as the index keeps them (`shown_id`: one a secret rule would mask stands
    in as its digest); the same entry when they are Pi's own, as they almost always are."""
    entry_id, parent_id, usage = item.id, item.parent_id, item.usage
    calls, call_id = usage.calls, usage.call_id
    if (
        _pi_id(entry_id)
        and (parent_id is None or _pi_id(parent_id))
        and (call_id is None or _pi_id(call_id))
        and (not calls or all(call.call_id is None or _pi_id(call.call_id) for call in calls))
    ):
        return item  # Pi's own ids and the usual call ids (most lines): a regex match each, no more
    if (
        shown_id(entry_id) == entry_id
        and shown_id(parent_id) == parent_id
        and shown_id(usage.call_id) == usage.call_id
        and all(shown_id(call.call_id) == call.call_id for call in calls)
    ):
        return item
    usage = usage._replace(
        call_id=shown_id(usage.call_id), calls=tuple(call._replace(call_id=shown_id(call.call_id)) for call in calls)
    )
    return dataclasses.replace(item, id=shown_id(entry_id) or entry_id, parent_id=shown_id(parent_id), usage=usage)


def _entry_values(values: tuple) -> EntryValues:
    """An EntryValues from a tuple of its values in field order."""
    return tuple.__new__(EntryValues, values)


_NO_USAGE_VALUES = ("", "", "", NO_INT, NO_INT, NO_INT, NO_INT, NO_INT, NO_INT, NO_EXIT)


def _usage_values(usage: journal.Usage) -> tuple:
    """An entry's figures as EntryValues holds them (model, provider and stop reason redacted)."""
    if usage is journal.NO_USAGE:
        return _NO_USAGE_VALUES
    model, provider, stop_reason, inp, out, cache_read, cache_write, cost, is_error, exit_code = usage[:10]
    labels = _redacted_labels(model, provider, stop_reason) if model or provider or stop_reason else _NO_LABELS
    return labels + (  # a tool result's or a bash entry's figures have no strings: nothing to redact
        NO_INT if inp is None else inp,
        NO_INT if out is None else out,
        NO_INT if cache_read is None else cache_read,
        NO_INT if cache_write is None else cache_write,
        NO_INT if cost is None else cost,
        NO_INT if is_error is None else is_error,
        NO_EXIT if exit_code is None else exit_code,
    )


_NO_LABELS = ("", "", "")


@functools.lru_cache(maxsize=4096)
def _redacted_labels(
    model: str | None, provider: str | None, stop_reason: str | None
) -> tuple[str, int | str, int | str]:
    """`redacted_field` of an assistant's model, provider and stop reason, the last two as stored
    (store.label_key), asked once per triple (a handful of triples come on every assistant line)."""
    return (
        redacted_field(model),
        store.label_key(redacted_field(provider), _PROVIDER_KEYS),
        store.label_key(redacted_field(stop_reason), _STOP_KEYS),
    )


_PROVIDER_KEYS = store.label_keys(store.PROVIDERS)
_STOP_KEYS = store.label_keys(store.STOP_REASONS)
_TOOL_KEYS = store.label_keys(store.TOOLS)


@functools.lru_cache(maxsize=4096)
def _tool_key(tool: str | None) -> int | str:
    """An entry's tool redacted, as entries.tool_key stores it (store.label_key)."""
    return store.label_key(redacted_field(tool), _TOOL_KEYS)


def _take_calls(batch: Batch, usage: journal.Usage) -> None:
    """The tool calls of the entry about to be added (its row index), and the call it answers."""
    row = len(batch.rows)
    for call in usage.calls:
        batch.calls.append(CallValues(row, store.call_key(call.call_id or ""), *_redacted_call(call.tool, call.path)))
    if usage.call_id:
        outcome = NO_INT if usage.is_error is None else usage.is_error
        batch.results.append(ResultValues(row, store.call_key(usage.call_id), outcome))


@functools.lru_cache(maxsize=4096)
def _redacted_call(tool: str | None, path: str | None) -> tuple[int | str, str]:
    """`redacted_field` of a tool call's tool (as tool_calls.tool_key stores it) and file argument,
    asked once per pair."""
    return store.label_key(redacted_field(tool), _TOOL_KEYS), redacted_field(path)


def redacted_field(value: str | None) -> str:
    """A journal string the index stores beside the text (a session name, tool names, a
    customType), redacted as the text is, since pages, the API and Datasette's tables show it;
    "" when absent."""
    if not value:
        return ""
    return _redacted_name(value) if len(value) <= 256 else redact(value)


@functools.lru_cache(maxsize=4096)
def _redacted_name(value: str) -> str:
    """redact() of a short field, cached: the same tool names come on every other line."""
    return redact(value)


def produce(
    paths: list[Path],
    rows: dict[str, FileRow],
    forgotten: Forgotten,
    gone: dict[str, ForgottenJournal] | None = None,
    settings: IndexSettings | None = None,
) -> Iterator[StreamItem]:
    """The parsing side of a backfill: its stream items (`stream`: skip, or work, batches and end) per journal.

    Decides each journal's work from the rows the pass started with (`_file_rows`), so
    parsing runs ahead across journals, not only within one, without opening the index
    (`gone`: the forgotten journals, `forgotten.journal_rows`, keyed by their path's hash).
    Runs in a thread or in parsing processes (`workers`); everything it yields pickles.
    The first journal with work comes in small batches first, so writing starts early.
    A journal that fails comes as its work and a failure batch; the others go on. Batches are
    sized by `settings`.
    """
    first = True
    for path in paths:
        path_str = os.path.abspath(path)
        try:
            work = prepare(
                rows.get(path_str), path_str, forgotten, gone.get(store.forgotten_key(path_str)) if gone else None
            )
        except Exception as e:
            work = Work(path_str, rows.get(path_str), failure=failure_reason(e))
        if work is None:
            yield StreamItem(ItemKind.SKIP, path)
            continue
        with work:
            yield StreamItem(ItemKind.WORK, path, work.detached())
            for batch in work.batches(ramp=first, settings=settings):
                yield StreamItem(ItemKind.BATCH, path, batch)
        first = False
        yield StreamItem(ItemKind.END, path)
