"""The trusted read path: an entry's text reread from its journal line, checked, and redacted.

Every text any reply or page shows comes through `reread`: it opens only journals inside
the journal folders, and the line must carry the entry's id and stored fingerprint, or the
text is unavailable (and the journal queued for reindexing), never another entry's. What is
shown of it is redacted here too (`excerpt`, `redacted_head`), and `entry_json` gives an
entry's keys from its ENTRY_COLUMNS row.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import db, journal, store
from .locations import Locations
from .redact import redact

EXCERPT_CHARS = 300
WHOLE_REDACT_CHARS = 200_000
EXCERPT_WINDOW = 20_000
UNAVAILABLE = "[journal line unavailable]"

ENTRY_COLUMNS = (
    "e.rowid, e.id, e.session_id, e.timestamp, e.kind, e.role, e.tool, f.cwd, f.path, "
    "e.offset, e.length, e.fingerprint, e.line, e.file_id, e.chars, e.tokens_before"
)


def entry_json(row) -> dict:
    """The contract's entry keys (and a few more) from an ENTRY_COLUMNS row."""
    data = {
        "id": row[1], "session_id": row[2], "timestamp": row[3], "kind": row[4],
        "role": row[5], "tool": row[6], "cwd": row[7], "journal": row[8], "chars": row[14],
    }
    if row[4] == "compaction":
        data["tokens_before"] = row[15]
    return data


def reread(conn, row, locations: Locations) -> str | None:
    """The entry's unredacted text from its journal line, or None when the line is not the entry.

    Nothing outside the journal folders is ever opened. The line must carry the requested id
    and the stored fingerprint; otherwise the journal is queued for reindexing and the text
    is unavailable, never another entry's.
    """
    entry_id, path, offset, length, fp, line_no, file_id = row[1], row[8], row[9], row[10], row[11], row[12], row[13]
    if not locations.contains(Path(path)):
        return None
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read(length)
    except OSError:
        return None
    item = None
    if len(data) == length and journal.fingerprint(data) == fp:
        try:
            item = journal.parse_line(data, line_no)
        except journal.Malformed:
            item = None
    if not isinstance(item, journal.Entry) or item.id != entry_id:
        _queue_reindex(conn, file_id)
        return None
    return item.text


def _queue_reindex(conn, file_id: int) -> None:
    try:
        store.queue_reindex(conn, file_id)
    except db.OperationalError:
        pass  # read-only or busy: the next pass's fingerprint checks find the change anyway


def excerpt(text: str, terms: list[str], width: int = EXCERPT_CHARS) -> str:
    """Redacted text around the first matching term, on one line, at most about `width` characters."""
    if len(text) > WHOLE_REDACT_CHARS:
        pos = _first_term(text, terms)
        start = max(0, pos - EXCERPT_WINDOW // 2)
        begin = text.rfind("-----BEGIN", 0, start)
        if begin >= 0 and text.find("-----END", begin, start) < 0:
            start = begin
        start = text.rfind("\n", 0, start) + 1
        end = text.find("\n", pos + EXCERPT_WINDOW // 2)
        text = text[start:] if end < 0 else text[start:end]
    clean = redact(text)
    pos = _first_term(clean, terms) if terms else 0
    lead = width // 3 if terms else 0
    start = max(0, pos - lead)
    if start:
        space = clean.rfind(" ", max(0, start - 20), start)
        start = space + 1 if space >= 0 else start
    piece = clean[start:start + width]
    if start + width < len(clean):
        cut = piece.rfind(" ", width - 40)
        piece = (piece[:cut] if cut > 0 else piece) + " …"
    if start:
        piece = "… " + piece
    return " ".join(piece.split())


# A secret that starts in the part of a text that is shown ends within this many characters.
REDACT_MARGIN = 65_536


def redacted_head(text: str, chars: int) -> str:
    """The first `chars` characters of redact(text), without redacting all of a huge text.

    The prefix redacted runs a margin past what is shown (to a line end), so a secret that
    starts in the shown part is masked whole; a key block cut off there is masked too.
    """
    if len(text) <= chars + REDACT_MARGIN:
        return redact(text)[:chars]
    cut = text.find("\n", chars + REDACT_MARGIN)
    return redact(text if cut < 0 else text[:cut])[:chars]


def _first_term(text: str, terms: list[str]) -> int:
    lowered = text.lower()
    best = -1
    for t in terms:
        m = re.search(r"(?<![^\W_])" + re.escape(t), lowered)
        if m and (best < 0 or m.start() < best):
            best = m.start()
    return max(best, 0)
