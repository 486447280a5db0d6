"""Redacted text with parts left out: an entry's text without its labels (its structure).

An entry's labels (a tool call's argument names) are neither terms nor shown in excerpts, but a
secret rule may need them (`password: hunter2`), so the whole text is what is redacted and the
labels are cut from it afterwards: each piece kept is a `redact_part` of the whole text.
"""

from __future__ import annotations

from collections.abc import Sequence

from pimem_index.redaction.driver import context_of, redact, redact_part


def redact_without(text: str, cuts: Sequence[tuple[int, int]], start: int = 0, end: int | None = None) -> str:
    """Characters `start` to `end` of `redact(text)` without the (start, end) spans `cuts` (in order,
    not overlapping): each piece between them as `redact(text)` shows it."""
    end = len(text) if end is None else min(end, len(text))
    pieces, pos = [], start
    for cut_start, cut_end in cuts:
        if cut_end <= pos:
            continue
        if cut_start >= end:
            break
        if cut_start > pos:
            pieces.append((pos, cut_start))
        pos = cut_end
    if pos < end:
        pieces.append((pos, end))
    if start == 0 and end == len(text):
        clean = redact(text)
        if clean == text:  # nothing masked (the usual case): cut the text itself
            return "".join(text[a:z] for a, z in pieces)
        if not cuts:
            return clean
    context = context_of(text)
    return "".join(redact_part(text, a, z, context) for a, z in pieces)
