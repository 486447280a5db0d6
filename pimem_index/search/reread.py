"""The trusted read path: an entry's text reread from its journal line, checked, and redacted.

Every text any reply or page shows comes through `reread` (or `reread_shape`, the same
line with its structure, for the session page; `nodes_between` reads the settings and labels
between entries): it opens only journals inside
the journal folders, and the line must carry the entry's id and stored fingerprint, or the
text is unavailable (and the journal queued for reindexing), never another entry's. What is
shown of it is redacted here too (`excerpt`, `redacted_head`). An entry comes as an EntryRow
(`select_entries`), and `entry_json` gives its keys in replies.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from pimem_index import db, journal, store
from pimem_index.locations import Locations
from pimem_index.redaction import redact, redact_part
from pimem_index.redaction.ids import shown_id
from pimem_index.redaction.parts import redact_without
from pimem_index.search import wordforms

EXCERPT_CHARS = 300
WHOLE_REDACT_CHARS = 200_000
EXCERPT_WINDOW = 20_000
UNAVAILABLE = "[journal line unavailable]"
# The whole redacted texts of the entries read last (`redacted_text`), so paging through a huge entry
# costs about a page a page: only entries of KEEP_FROM_CHARS or more (smaller ones are cheap to redo),
# at most KEPT_CHARS of text in all, the least recently read dropped first.
KEEP_FROM_CHARS = 64 * 1024
KEPT_CHARS = 64 * 1024 * 1024


class EntryRow(NamedTuple):
    """An entry and its pointer into its journal: the entries row joined with its journal's files row."""

    rowid: int
    id: str
    session_id: str | None
    ts: int | None  # when it was written, epoch milliseconds (`timestamp` is the ISO text)
    kind: str
    role: str | None
    tool: str | None
    cwd: str | None  # from files
    path: str  # from files: the journal
    offset: int
    length: int
    fingerprint: int
    line: int
    file_id: int
    chars: int
    tokens_before: int | None
    text_digest: int | None  # the indexed text's digest (index.parsing.text_digest): same text, same digest

    @property
    def timestamp(self) -> str | None:
        """When the entry was written, as the journal's UTC ISO text (entries.timestamp's value)."""
        return None if self.ts is None else store.ts_text(self.ts)


# EntryRow's columns over `entries e JOIN files f` (ENTRY_FROM).
# The session id is the journal's (files.session_id, as entries.session_id computes it from its sid).
ENTRY_COLUMNS = ", ".join(("f." if name in ("cwd", "path", "session_id") else "e.") + name for name in EntryRow._fields)
ENTRY_FROM = "FROM entries e JOIN files f ON f.id = e.file_id"


def select_entries(conn: db.Connection, where: str, params: Sequence = ()) -> list[EntryRow]:
    """The entries (with their journals) matching `where`: SQL after WHERE, ORDER BY and LIMIT included."""
    return [EntryRow._make(row) for row in conn.execute(f"SELECT {ENTRY_COLUMNS} {ENTRY_FROM} WHERE {where}", params)]


def entry_json(row: EntryRow) -> dict:
    """The contract's entry keys (and a few more) from an entry's row; what belongs to its session (cwd,
    journal) is in the reply's `sessions` map (`session_info`)."""
    data = {
        "id": row.id,
        "session_id": row.session_id,
        "timestamp": row.timestamp,
        "kind": row.kind,
        "role": row.role,
        "tool": row.tool,
        "chars": row.chars,
    }
    if row.kind == "compaction":
        data["tokens_before"] = row.tokens_before
    return data


def reread(conn: db.Connection, row: EntryRow, locations: Locations) -> str | None:
    """The entry's unredacted text from its journal line, or None when the line is not the entry.

    Nothing outside the journal folders is ever opened. The line must carry the requested id
    and the stored fingerprint; otherwise the journal is queued for reindexing and the text
    is unavailable, never another entry's.
    """
    checked = _checked_line(conn, row, locations)
    return checked[1].text if checked else None


class KeptTexts:
    """Redacted texts keyed by their journal line (path, offset, length, fingerprint, entry id), at most
    KEPT_CHARS of them, kept in the index's memo (`kept_texts`)."""

    def __init__(self) -> None:
        self.texts: OrderedDict[tuple, str] = OrderedDict()
        self.chars = 0
        self.lock = threading.Lock()

    def get(self, key: tuple) -> str | None:
        with self.lock:
            text = self.texts.get(key)
            if text is not None:
                self.texts.move_to_end(key)
            return text

    def put(self, key: tuple, text: str) -> None:
        if not KEEP_FROM_CHARS <= len(text) <= KEPT_CHARS:
            return
        with self.lock:
            if key in self.texts:
                return
            self.texts[key] = text
            self.chars += len(text)
            while self.chars > KEPT_CHARS:
                _old, dropped = self.texts.popitem(last=False)
                self.chars -= len(dropped)


def kept_texts(conn: db.Connection) -> KeptTexts:
    """The redacted texts kept for the connection's index."""
    return db.memo_of(conn).slot("reread.texts", KeptTexts)


def redacted_text(conn: db.Connection, row: EntryRow, locations: Locations) -> str | None:
    """The entry's whole text as a read shows it (`reread_read`), redacted, or None as `reread` says.

    The line is read and its fingerprint checked on every call; only when it is still the line
    read before (the same bytes at the same place) does its redacted text come from memory
    instead of being parsed and redacted again.
    """
    key = (row.path, row.offset, row.length, row.fingerprint, row.id)
    texts = kept_texts(conn)
    data = _line_bytes(row, locations)
    if data is not None and len(data) == row.length and journal.fingerprint(data) == row.fingerprint:
        kept = texts.get(key)
        if kept is not None:
            return kept
    text = reread_read(conn, row, locations)
    if text is None:
        return None
    clean = redact(text)
    texts.put(key, clean)
    return clean


def reread_read(conn: db.Connection, row: EntryRow, locations: Locations) -> str | None:
    """What a read shows of an entry (unredacted): its text, and for an assistant turn that was aborted or
    failed, how it ended (`[aborted: Request was aborted.]`, as the session page says it); None as `reread`."""
    if row.kind != "assistant":
        return reread(conn, row, locations)
    shaped = reread_shape(conn, row, locations)
    if shaped is None:
        return None
    if shaped.stop_reason not in ("aborted", "error"):
        return shaped.text
    ending = f"[{shaped.stop_reason}: {shaped.error_message or 'no reason given'}]"
    return f"{shaped.text}\n\n{ending}" if shaped.text else ending


def reread_line(conn: db.Connection, row: EntryRow, locations: Locations) -> tuple[dict, journal.Entry] | None:
    """The entry's journal line as `reread` reads it: parsed, and as the journal module reads it (unredacted)."""
    return _checked_line(conn, row, locations)


def reread_entry(conn: db.Connection, row: EntryRow, locations: Locations) -> journal.Entry | None:
    """The entry `reread` reads, as the journal module reads it (its text and labels, unredacted)."""
    checked = _checked_line(conn, row, locations)
    return checked[1] if checked else None


def reread_shape(conn: db.Connection, row: EntryRow, locations: Locations) -> journal.Shape | None:
    """The entry's line read as `reread` reads it, with its structure (blocks, tool call ids, exit
    status: journal.shape); unredacted, None when the line is not the entry."""
    checked = _checked_line(conn, row, locations)
    return _shown_call_ids(journal.shape(*checked)) if checked else None


def _shown_call_ids(shape: journal.Shape) -> journal.Shape:
    """A shape's tool call ids as the index keeps them (`shown_id`), so results pair with calls and a
    page shows no id a secret rule would mask."""
    if shape.call_id is not None:
        shape.call_id = shown_id(shape.call_id)
    for block in shape.blocks:
        if block.call is not None and block.call.call_id is not None:
            block.call.call_id = shown_id(block.call.call_id)
    return shape


def _checked_line(conn: db.Connection, row: EntryRow, locations: Locations) -> tuple[dict, journal.Entry] | None:
    """The entry's journal line (parsed, and read as an entry) when it is the one the row points to."""
    data = _line_bytes(row, locations)
    if data is None:
        return None
    obj = item = None
    if len(data) == row.length and journal.fingerprint(data) == row.fingerprint:
        try:
            obj = journal.loads(data)
            item = journal.interpret(obj, row.line)
        except journal.Malformed:
            item = None
    if obj is None or not isinstance(item, journal.Entry) or shown_id(item.id) != row.id:
        _queue_reindex(conn, row.file_id)
        return None
    if item.id != row.id or shown_id(item.parent_id) != item.parent_id:  # ids as the index keeps them
        item = dataclasses.replace(item, id=row.id, parent_id=shown_id(item.parent_id))
    return obj, item


def _line_bytes(row: EntryRow, locations: Locations) -> bytes | None:
    """The bytes at the entry's pointer, or None when its journal is outside the folders or unreadable."""
    if not locations.contains(row.path):  # a str: no Path built per reread
        return None
    try:
        with open(row.path, "rb") as fh:
            fh.seek(row.offset)
            return fh.read(row.length)
    except OSError:
        return None


def unavailable_reason(row: EntryRow, locations: Locations) -> str:
    """Why `reread` gives no text for this entry, in words a person can act on (never its text)."""
    path = Path(row.path)
    if not path.exists():
        return f"the journal {row.path} no longer exists"
    if not locations.contains(path):
        folders = ", ".join(str(d) for d in locations.sessions_dirs)
        return (
            f"the journal {row.path} is outside the journal folders ({folders}), so it is not read; "
            "add its folder for every command with: pimem folders add DIR"
        )
    if not os.access(path, os.R_OK):
        return f"the journal {row.path} cannot be read (permission denied)"
    return "the journal line changed since it was indexed; the journal is queued for reindexing"


def unavailable_text(reason: str) -> str:
    """What stands in for an entry's text when it cannot be shown: the placeholder and its reason."""
    return f"{UNAVAILABLE[:-1]}: {reason}]"


def _queue_reindex(conn, file_id: int) -> None:
    try:
        store.queue_reindex(conn, file_id)
    except db.OperationalError:
        pass  # read-only or busy: the next pass's fingerprint checks find the change anyway


def excerpt(text: str, terms: list[str], width: int = EXCERPT_CHARS, labels: Sequence[tuple[int, int]] = ()) -> str:
    """Redacted text around the first matching term, on one line, at most about `width` characters;
    the entry's `labels` (journal.Entry.labels: argument names) are left out, as from its terms."""
    if len(text) > WHOLE_REDACT_CHARS:
        pos = _first_term(text, terms)
        start = text.rfind("\n", 0, max(0, pos - EXCERPT_WINDOW // 2)) + 1
        end = text.find("\n", pos + EXCERPT_WINDOW // 2)
        end = len(text) if end < 0 else end
        clean = redact_without(text, labels, start, end) if labels else redact_part(text, start, end)
    else:
        clean = redact_without(text, labels) if labels else redact(text)
    pos = _first_term(clean, terms) if terms else 0
    lead = width // 3 if terms else 0
    start = max(0, pos - lead)
    if start:
        space = clean.rfind(" ", max(0, start - 20), start)
        start = space + 1 if space >= 0 else start
    piece = clean[start : start + width]
    if start + width < len(clean):
        cut = piece.rfind(" ", width - 40)
        piece = (piece[:cut] if cut > 0 else piece) + " …"
    if start:
        piece = "… " + piece
    return " ".join(piece.split())


# Characters redacted past what a head shows, so masks shorter than their secrets still leave enough.
REDACT_MARGIN = 65_536


def redacted_head(text: str, chars: int) -> str:
    """The first `chars` characters of redact(text), without redacting all of a huge text
    (redact_part: the same masks as the whole text, decided with the whole entry's context)."""
    if len(text) <= chars + REDACT_MARGIN:
        return redact(text)[:chars]
    return redact_part(text, 0, chars + REDACT_MARGIN)[:chars]


def _first_term(text: str, terms: list[str]) -> int:
    """Where the first whole word the terms match (any form: wordforms.matches) starts, else 0."""
    m = next(wordforms.matches(text, terms), None)
    return m.start() if m else 0


# A line between entries longer than this is skipped unread (settings and labels are short lines).
GAP_LINE_BYTES = 1 << 20


class JournalHead(NamedTuple):
    """A journal as the index knows it, to read the lines between its entries: its path, its indexed
    bytes (the cursor) and its first line's length and fingerprint."""

    path: str
    cursor: int
    head_length: int | None
    head_fingerprint: int | None


JOURNAL_HEAD_COLUMNS = ", ".join(JournalHead._fields)


def nodes_between(
    locations: Locations, jf: JournalHead, gaps: list[tuple[int, int, int]]
) -> Iterator[tuple[int, journal.Node]]:
    """(key, node) for each line that is not an entry (a setting, a label, extension state) in each
    (key, start, end) byte range of a journal, unredacted. Nothing outside the journal folders or past
    the indexed bytes is read, and nothing at all once the journal's first line is not the indexed one."""
    if not locations.contains(jf.path):
        return
    try:
        with open(jf.path, "rb") as fh:
            if jf.head_length is not None and journal.fingerprint(fh.read(jf.head_length)) != jf.head_fingerprint:
                return
            for key, start, end in gaps:
                for line in _lines(fh, start, min(end, jf.cursor)):
                    node = _node(line)
                    if node is not None:
                        yield key, node
    except OSError:
        return


def _lines(fh, start: int, end: int):
    """The complete lines from byte `start` to `end`, skipping any longer than GAP_LINE_BYTES."""
    fh.seek(start)
    pos = start
    while pos < end:
        line = fh.readline(min(GAP_LINE_BYTES + 1, end - pos))
        if not line:
            return
        pos += len(line)
        if line.endswith(b"\n"):
            yield line[:-1]
            continue
        while pos < end and not line.endswith(b"\n"):  # too long, or cut at `end`: skip to its end
            line = fh.readline(min(GAP_LINE_BYTES, end - pos))
            if not line:
                return
            pos += len(line)


def _node(line: bytes) -> journal.Node | None:
    """The tree node a line stands for; None for a blank, unreadable or header line."""
    try:
        node = journal.node(journal.loads(line)) if line.strip() else None
    except journal.Malformed:
        return None
    if node is not None:  # ids as the index keeps them, so the tree links through this line
        node.id, node.parent_id, node.target_id = shown_id(node.id), shown_id(node.parent_id), shown_id(node.target_id)
    return node
