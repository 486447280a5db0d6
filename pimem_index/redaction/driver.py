"""The driver: ``redact`` runs the compiled rules over a text and masks what they find; ``redact_part``
redacts a part of a large text as the whole would be; ``context_of`` decides once per entry what depends
on all of it.  The rules are compiled on the first text redacted, not at import.

One answer for one text, wherever it is shown: a part of an entry (a search excerpt's window, a page's
first characters, a slice) is redacted by ``redact_part`` as the whole text would be.  Rules look at
most ``SLICE_OVERLAP`` bytes around what they mask, and the part is scanned with that much either side;
what depends on the whole entry (the context words: a Discord or Telegram bot token is a secret in an
entry that mentions the service anywhere) is decided once per entry by ``context_of``.  Text over
``SLICE_CHARS`` characters is redacted in slices cut at line ends, each scanned with ``SLICE_OVERLAP``
bytes either side, so a PEM block crossing the cut is still masked whole.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pimem_index.redaction.compiler import Compiled

__all__ = ["MASK", "SLICE_CHARS", "SLICE_OVERLAP", "Context", "compiled", "context_of", "redact", "redact_part"]

MASK = "[REDACTED]"
_MASK_B = MASK.encode()

#: Text longer than this many characters is redacted in slices cut at line ends.
SLICE_CHARS = 1 << 20
#: Bytes of the following slice scanned together with each slice.
SLICE_OVERLAP = 64 * 1024

Span = tuple[int, int]

_COMPILED: Compiled | None = None
_COMPILING = threading.Lock()


def compiled() -> Compiled:
    """The rule table compiled, on the first call (once, whatever the threads)."""
    global _COMPILED
    with _COMPILING:
        if _COMPILED is None:
            from pimem_index.redaction import compiler  # the rules, their regexes, Hyperscan: on first use

            _COMPILED = compiler.build()
        return _COMPILED


@dataclass(frozen=True)
class Context:
    """What rules may know of an entry beyond the part of its text being redacted: the
    context words its whole text mentions (decided once per entry by ``context_of``)."""

    words: frozenset[bytes] = frozenset()


def context_of(text: str) -> Context:
    """The Context of an entry from its whole text: one caseless pass for the context words
    (GB/s with Hyperscan), so every part of the entry is redacted as the whole would be."""
    return _context_of_bytes(text.encode("utf-8", "surrogatepass"))


def _context_of_bytes(b: bytes) -> Context:
    return Context((_COMPILED or compiled()).context_words(b))


def _spans(b: bytes, context: Context | None = None) -> list[Span]:
    """What to mask in ``b``: the whole text of an entry, or a part of one whose ``context`` is given."""
    c = _COMPILED or compiled()
    plan = c.plan_for(b)
    searches = [c.context_searches[w] for w in context.words if w in c.context_searches] if context else []
    if not plan and not searches:
        return []  # most texts: no scanner can match, not even lower() runs
    bl = b.lower()
    spans: list[Span] = []
    ctx: dict = {"context": context}
    for fold, rare, scan, search, rules in plan:
        hay = bl if fold else b
        if rare and scan not in hay:
            continue
        m = search(hay)  # usually None: one C call, no iterator
        while m is not None:
            name: str = m.lastgroup  # type: ignore[assignment]  # every alternative ends with a named group
            rule, masks, check, handler = rules[name]
            g = name + "_"
            if check is None or check(m, g, b, bl):
                if handler is not None:
                    spans.extend(handler(rule, m, g, b, bl, ctx))
                else:
                    for mg in masks:
                        s, e = m.span(mg)
                        if e > s:
                            spans.append((s, e))
            m = search(hay, m.end())  # lookbehinds still see bytes before pos
    for tokens in searches:  # the entry mentions the word, maybe outside this part
        spans.extend(tokens(b, ctx))
    return spans


def _whole_chars(b: bytes, s: int, e: int) -> Span:
    """A span widened to whole UTF-8 characters: a rule's length cap can end one inside a
    character, and masking half of it would leave bytes that do not decode."""
    while s > 0 and (b[s] & 0xC0) == 0x80:
        s -= 1
    n = len(b)
    while e < n and (b[e] & 0xC0) == 0x80:
        e += 1
    return s, e


def _apply(b: bytes, spans: list[Span]) -> bytes:
    spans = sorted(_whole_chars(b, s, e) for s, e in spans)
    out: list[bytes] = []
    pos = 0
    cur_s, cur_e = spans[0]
    for s, e in spans[1:]:
        if s <= cur_e:
            if e > cur_e:
                cur_e = e
            continue
        out.append(b[pos:cur_s])
        out.append(_MASK_B)
        pos = cur_e
        cur_s, cur_e = s, e
    out.append(b[pos:cur_s])
    out.append(_MASK_B)
    out.append(b[cur_e:])
    return b"".join(out)


def redact(text: str, context: Context | None = None) -> str:
    """Return ``text`` with secrets replaced by ``[REDACTED]`` (key names and
    token prefixes stay visible).  ``text`` is an entry's whole text, or a part
    of one whose ``context_of`` is given (better: ``redact_part``)."""
    if not text:
        return text
    if len(text) > SLICE_CHARS:
        return redact_part(text, 0, len(text), context)
    b = text.encode("utf-8", "surrogatepass")
    spans = _spans(b, context)
    if not spans:
        return text
    return _apply(b, spans).decode("utf-8", "surrogatepass")


def redact_part(text: str, start: int, end: int, context: Context | None = None) -> str:
    """Characters ``start`` to ``end`` of ``text`` as ``redact(text)`` shows them (a secret
    crossing an end is masked), without redacting all of a large text: the part is scanned
    with SLICE_OVERLAP bytes either side, which holds any rule's reach, and the entry's
    ``context`` (computed here from all of ``text`` when not given)."""
    start, end = max(0, start), min(len(text), end)
    if start >= end:
        return ""
    a = max(0, start - SLICE_OVERLAP)  # characters: at least as many bytes
    z = min(len(text), end + SLICE_OVERLAP)
    b = text[a:z].encode("utf-8", "surrogatepass")
    if context is None:
        context = _context_of_bytes(b) if a == 0 and z == len(text) else context_of(text)
    lo = len(text[a:start].encode("utf-8", "surrogatepass"))
    hi = len(b) - len(text[end:z].encode("utf-8", "surrogatepass"))
    out: list[bytes] = []
    pos = lo
    for s, e in _masked(b, lo, hi, context):
        out.append(b[pos:s])
        out.append(_MASK_B)
        pos = e
    if pos == lo:
        return text[start:end]
    out.append(b[pos:hi])
    return b"".join(out).decode("utf-8", "surrogatepass")


def _masked(b: bytes, lo: int, hi: int, context: Context) -> Iterator[Span]:
    """The masked spans of ``b`` that meet bytes ``lo`` to ``hi``, merged, in order, cut to
    that range.  It goes in slices of about SLICE_CHARS bytes, each scanned with SLICE_OVERLAP
    bytes either side; a span belongs to the slice it starts in (or meets the first), and
    merging as slices come keeps memory per slice, not per text."""
    n = len(b)
    cur_s = cur_e = -1  # the mask being extended
    for s0, e0 in _slice_bounds(b, lo, hi, SLICE_CHARS):
        a, z = max(0, s0 - SLICE_OVERLAP), min(n, e0 + SLICE_OVERLAP)
        piece = b if a == 0 and z == n else b[a:z]
        first = s0 == lo
        found = sorted(
            _whole_chars(b, s + a, e + a)
            for s, e in _spans(piece, context)
            if s + a < e0 and e + a > s0 and (first or s + a >= s0)
        )
        for s, e in found:
            s, e = max(s, lo), min(e, hi)
            if s <= cur_e:
                if e > cur_e:
                    cur_e = e
                continue
            if cur_e >= 0:
                yield cur_s, cur_e
            cur_s, cur_e = s, e
    if cur_e >= 0:
        yield cur_s, cur_e


def _slice_bounds(b: bytes, lo: int, hi: int, size: int) -> Iterator[tuple[int, int]]:
    """(start, end) byte offsets of consecutive slices of bytes ``lo`` to ``hi`` of about
    ``size`` bytes, each ending at a line end when there is one nearby."""
    start = lo
    while start < hi:
        target = start + size
        if target >= hi:
            yield start, hi
            return
        nl = b.find(b"\n", target, min(hi, target + SLICE_OVERLAP // 2))
        if nl < 0:
            nl = b.rfind(b"\n", start + size // 2, target)
        end = nl + 1 if nl >= 0 else target
        while end < hi and (b[end] & 0xC0) == 0x80:  # never inside a UTF-8 sequence
            end += 1
        yield start, end
        start = end
