"""One page of a ranked search: quoted phrases checked, repeats folded, a slice with what comes next.

A search ranks up to query.CANDIDATES entries; this module walks them best first and decides
what a page shows, after ranking and without touching it:

- phrases (`"connection refused"` in the query): an entry stays only when its reread,
  redacted text holds each phrase (its words in order, only spaces or punctuation between,
  as an FTS5 phrase). The index keeps no positions, so this needs the journal: at most
  PHRASE_REREADS candidates are checked, and the page says when that stopped it early.
- folding: a hit whose text is the same as a better one's is not shown; the better one counts
  it (`folded` from its own session, `like` from others), so one repeated line cannot fill the
  page. The index keeps a digest of each entry's text (whitespace runs as one space), so the
  candidate rows say which are the same; rows without one (none in a current index) are
  compared by session, kind, tool and length, then reread, up to FOLD_CONFIRM_BYTES of
  journal lines a query. A fork's copy of an entry among the candidates is never shown.
- paging: the hits in order, from `offset`, `limit` of them, and whether any remain.

Folding and phrases depend only on candidates ranked before, so every page of a query sees the
same hits in the same order: none is shown twice across pages, none is lost.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from pimem_index.search.reread import EntryRow

# Candidates whose text a phrase query rereads. Measured on the benchmark corpus (500 MB, 2 cores):
# see docs/design.md, "Phrases".
PHRASE_REREADS = 100
# Journal bytes a query rereads to confirm that two hits have the same text (docs/design.md).
FOLD_CONFIRM_BYTES = 4_000_000


@dataclass
class Hit:
    """A hit on the page: its ranked row and score, its reread text when it was read, and how many
    later hits of the same text from its session it stands for."""

    row: EntryRow
    score: float
    text: str | None = None
    read: bool = False
    folded: int = 0
    digest: bytes | None = field(default=None, repr=False)
    like: int = 0  # hits of the same text in other sessions, not shown
    like_sessions: set = field(default_factory=set)  # ... and their sessions


@dataclass
class Page:
    """The hits from `offset`, at most `limit`, whether more remain, and how far phrases were checked."""

    hits: list[Hit]
    more: bool
    phrases_checked: int = 0
    phrases_complete: bool = True


def phrase_pattern(words: Sequence[str]) -> re.Pattern:
    """A phrase's words in order with only non-word characters between, as whole words, any case."""
    body = r"[\W_]+".join(re.escape(w) for w in words)
    return re.compile(r"(?<![^\W_])" + body + r"(?![^\W_])", re.IGNORECASE)


def holds_phrases(text: str, patterns: Sequence[re.Pattern], redacted: Callable[[str], str]) -> bool:
    """Whether the shown (redacted) text holds every phrase; the raw text is tried first, as
    redacting a long text costs more than searching it."""
    if not all(p.search(text) for p in patterns):
        return False
    clean = redacted(text)
    return all(p.search(clean) for p in patterns)


def fold_key(row: EntryRow) -> tuple:
    """What two entries of the same text share in the index: their kind and text digest, whatever
    their session; without a digest, session, kind, tool and length (the texts are then compared)."""
    if row.text_digest is not None:
        return (row.kind, row.text_digest)
    return (row.session_id, row.kind, row.tool, row.chars)


def page(
    scored: Sequence[tuple[float, EntryRow]],
    reread: Callable[[EntryRow], str | None],
    redacted: Callable[[str], str],
    *,
    offset: int,
    limit: int,
    phrases: Sequence[Sequence[str]] = (),
    fold: bool = True,
    copies: Collection[int] = (),
) -> Page:
    """The page `offset`..`offset + limit` of the ranked candidates `scored` (best first), after
    phrases and folding; `reread` gives an entry's text (None when unavailable). `copies` are the
    rowids of entries a fork copied from an original among the candidates: never shown."""
    walk = _Walk(reread, redacted, [phrase_pattern(p) for p in phrases])
    end = offset + limit
    shown: list[Hit] = []
    more = False
    for score, row in scored:
        if row.rowid in copies:
            continue
        if fold and walk.fold_into(row):  # the same text as a shown hit, so it holds the phrases too
            continue
        if more:
            continue  # the page is full and more remain: later hits only matter when they fold
        if walk.patterns and not walk.phrase_ok(row):
            if walk.stopped:
                break
            continue
        if len(shown) >= end:
            more = True
            if not fold:  # nothing later can change the page
                break
            continue
        hit = Hit(row, score)
        walk.remember(hit)
        shown.append(hit)
    return Page(shown[offset:end], more, walk.checked, not walk.stopped)


class _Walk:
    """The state of one walk over the candidates: texts read, groups by fold key, budgets spent."""

    def __init__(self, reread, redacted, patterns: list[re.Pattern]):
        self.reread, self.redacted, self.patterns = reread, redacted, patterns
        self.texts: dict[int, str | None] = {}
        self.groups: dict[tuple, list[Hit]] = {}
        self.checked = 0
        self.stopped = False
        self.confirm_bytes = 0

    def text(self, row: EntryRow) -> str | None:
        if row.rowid not in self.texts:
            self.texts[row.rowid] = self.reread(row)
        return self.texts[row.rowid]

    def phrase_ok(self, row: EntryRow) -> bool:
        """Whether the candidate holds every phrase; sets `stopped` once PHRASE_REREADS are checked."""
        if self.checked >= PHRASE_REREADS:
            self.stopped = True
            return False
        self.checked += 1
        text = self.text(row)
        return text is not None and holds_phrases(text, self.patterns, self.redacted)

    def remember(self, hit: Hit) -> None:
        """A shown hit: later hits of its fold key are compared with it."""
        if hit.row.rowid in self.texts:
            hit.text, hit.read = self.texts[hit.row.rowid], True
        self.groups.setdefault(fold_key(hit.row), []).append(hit)

    def fold_into(self, row: EntryRow) -> bool:
        """Count the row on a shown hit of the same text (from its session: `folded`; from another
        session: `like`), if there is one."""
        for hit in self.groups.get(fold_key(row), ()):
            if row.text_digest is not None or self.same_text(hit, row):
                if row.session_id == hit.row.session_id:
                    hit.folded += 1
                else:
                    hit.like += 1
                    hit.like_sessions.add(row.session_id)
                self.texts.pop(row.rowid, None)
                return True
        return False

    def same_text(self, hit: Hit, row: EntryRow) -> bool:
        """Texts compared by digest while the reread budget lasts; past it, the fold key decides."""
        if self.confirm_bytes + row.length + (0 if hit.digest else hit.row.length) > FOLD_CONFIRM_BYTES:
            return True
        if hit.digest is None:
            self.confirm_bytes += hit.row.length
            hit.digest = _digest(self.lead_text(hit)) or b"unavailable"
        self.confirm_bytes += row.length
        text = self.texts.get(row.rowid) if row.rowid in self.texts else self.reread(row)
        return text is not None and hit.digest == _digest(text)

    def lead_text(self, hit: Hit) -> str | None:
        if not hit.read:
            hit.text, hit.read = self.text(hit.row), True
        return hit.text


def _digest(text: str | None) -> bytes | None:
    return None if text is None else hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
