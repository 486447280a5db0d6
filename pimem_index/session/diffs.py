"""Diffs for the session page: the one Pi recorded in an edit's result (`details.diff`), else one computed
from the edit's old and new text at a bounded cost.

Pi's diff is not a unified diff: one line per file line, `-`/`+`/space, the line number right-aligned to
the width of the largest, a space, the text; a gap between changes is a line of spaces and `...`.

A computed diff costs near linear time in the texts: the common first and last lines are trimmed, lines
found once in each side anchor the rest (patience diff), and difflib only compares what lies between
anchors when that is small (`COMPARE_CAP`: difflib is cubic on runs of identical lines, 30 s for 10,000);
a larger stretch without anchors is compared in aligned slices of SLICE_LINES. Past `MAX_LINES` changed lines
there is no line diff at all, only the sizes (`too_large`), and the page folds the texts themselves.
"""

from __future__ import annotations

import bisect
import difflib
from dataclasses import dataclass, field

CONTEXT = 3
# difflib compares two stretches only when the product of their lengths is at most this (about 15 ms at worst).
COMPARE_CAP = 40_000
# Lines in a slice of a stretch without anchors (difflib on at most SLICE_LINES squared: a few ms).
SLICE_LINES = 80
# Lines between the common head and tail beyond which a computed diff gives only the sizes.
MAX_LINES = 5_000
# Lines of a diff a page shows; the rest is counted.
SHOWN_LINES = 2_000
GAP = "…"


@dataclass
class Diff:
    """Lines to show, each {op: " " | "-" | "+" | "…", text, old, new} (old and new: line numbers, None
    when unknown), where it came from (`pi`, `computed` or `too_large`), the counts of removed and added
    lines, and the lines not shown past SHOWN_LINES."""

    source: str
    lines: list[dict] = field(default_factory=list)
    removed: int = 0
    added: int = 0
    hidden: int = 0
    old_lines: int = 0
    new_lines: int = 0
    old_chars: int = 0
    new_chars: int = 0

    def as_dict(self) -> dict:
        return {
            "source": self.source,
            "lines": self.lines,
            "removed": self.removed,
            "added": self.added,
            "hidden": self.hidden,
            "old_lines": self.old_lines,
            "new_lines": self.new_lines,
            "old_chars": self.old_chars,
            "new_chars": self.new_chars,
        }


# ---- Pi's own diff ---------------------------------------------------------------------------------------


def recorded(text: str) -> Diff:
    """Pi's `details.diff` (already redacted) as lines: numbers on removed lines are old ones, on added and
    kept lines new ones (Pi's numbering); a line that does not read as Pi writes them is kept as text."""
    rows = text.split("\n")
    width = _number_width(rows)
    out = Diff("pi")
    for row in rows:
        number, body = _numbered(row, width)
        op = row[:1]
        if number is None:
            if row.strip() == "...":
                out.lines.append({"op": GAP, "text": "", "old": None, "new": None})
            elif row:
                out.lines.append({"op": " ", "text": row, "old": None, "new": None})
            continue
        if op == "-":
            out.removed += 1
            out.lines.append({"op": "-", "text": body, "old": number, "new": None})
        elif op == "+":
            out.added += 1
            out.lines.append({"op": "+", "text": body, "old": None, "new": number})
        else:
            out.lines.append({"op": " ", "text": body, "old": None, "new": number})
    return _capped(out)


def _number_width(rows: list[str]) -> int:
    """The width Pi padded line numbers to: the most digits any `-`/`+`/space line starts with."""
    width = 0
    for row in rows[: SHOWN_LINES * 4]:
        if row[:1] in ("-", "+", " "):
            digits = row[1:].lstrip(" ")
            n = len(digits) - len(digits.lstrip("0123456789"))
            if n and digits[n : n + 1] in (" ", ""):
                width = max(width, len(row) - len(digits) - 1 + n)
    return width


def _numbered(row: str, width: int) -> tuple[int | None, str]:
    """(the line number, the text) of one line of Pi's diff, or (None, row) when it has none."""
    if not width or row[:1] not in ("-", "+", " "):
        return None, row
    field_ = row[1 : 1 + width]
    if not field_.strip().isdigit() or row[1 + width : 2 + width] not in (" ", ""):
        return None, row
    return int(field_), row[2 + width :]


# ---- a diff of an edit's old and new text ------------------------------------------------------------------


def compute(old: str, new: str, context: int = CONTEXT) -> Diff:
    """A line diff of two (already redacted) texts, at a cost near linear in their size; numbers are lines
    of the texts themselves (not of the file, which the call does not say)."""
    a, b = old.split("\n"), new.split("\n")
    out = Diff("computed", old_lines=len(a), new_lines=len(b), old_chars=len(old), new_chars=len(new))
    head = _common_head(a, b)
    tail = _common_tail(a, b, head)
    if len(a) - head - tail + len(b) - head - tail > MAX_LINES:
        out.source = "too_large"
        return out
    ops: list[tuple[str, int, int, int, int]] = []
    if head:
        ops.append(("equal", 0, head, 0, head))
    _match(a, b, head, len(a) - tail, head, len(b) - tail, ops)
    if tail:
        ops.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    for group in _groups(_merged(ops), context):
        if out.lines:
            out.lines.append({"op": GAP, "text": "", "old": None, "new": None})
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.lines += [{"op": " ", "text": a[i], "old": i + 1, "new": j1 + i - i1 + 1} for i in range(i1, i2)]
                continue
            out.lines += [{"op": "-", "text": a[i], "old": i + 1, "new": None} for i in range(i1, i2)]
            out.lines += [{"op": "+", "text": b[j], "old": None, "new": j + 1} for j in range(j1, j2)]
            out.removed += i2 - i1
            out.added += j2 - j1
    return _capped(out)


def _common_head(a: list[str], b: list[str]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _common_tail(a: list[str], b: list[str], head: int) -> int:
    n = min(len(a), len(b)) - head
    i = 0
    while i < n and a[-1 - i] == b[-1 - i]:
        i += 1
    return i


def _match(a, b, alo: int, ahi: int, blo: int, bhi: int, ops: list, depth: int = 0) -> None:
    """Opcodes (difflib's) for a[alo:ahi] against b[blo:bhi], appended to `ops`: trimmed, anchored on lines
    found once in each, compared by difflib when small, else anchored or in slices."""
    while alo < ahi and blo < bhi and a[alo] == b[blo]:
        ops.append(("equal", alo, alo + 1, blo, blo + 1))
        alo, blo = alo + 1, blo + 1
    tail = 0
    while alo < ahi - tail and blo < bhi - tail and a[ahi - 1 - tail] == b[bhi - 1 - tail]:
        tail += 1
    ahi, bhi = ahi - tail, bhi - tail
    if alo < ahi or blo < bhi:
        if alo == ahi or blo == bhi or (ahi - alo) * (bhi - blo) <= COMPARE_CAP:
            matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            ops += [(t, i1 + alo, i2 + alo, j1 + blo, j2 + blo) for t, i1, i2, j1, j2 in matcher.get_opcodes()]
        else:
            anchors = _anchors(a, b, alo, ahi, blo, bhi) if depth < 64 else []
            if not anchors:
                _in_slices(a, b, alo, ahi, blo, bhi, ops)
            else:
                i, j = alo, blo
                for ai, bj in anchors:
                    _match(a, b, i, ai, j, bj, ops, depth + 1)
                    ops.append(("equal", ai, ai + 1, bj, bj + 1))
                    i, j = ai + 1, bj + 1
                _match(a, b, i, ahi, j, bhi, ops, depth + 1)
    if tail:
        ops.append(("equal", ahi, ahi + tail, bhi, bhi + tail))


def _in_slices(a, b, alo: int, ahi: int, blo: int, bhi: int, ops: list) -> None:
    """Two stretches without a line found once in each (runs of the same lines): compared slice by slice
    (the k-th of a's against the k-th of b's), each small enough for difflib, or line by line when both
    have as many lines; true, if not always minimal."""
    na, nb = ahi - alo, bhi - blo
    if na == nb:  # lines replaced in place (the usual shape of a near-identical edit): line by line
        for i in range(na):
            same = a[alo + i] == b[blo + i]
            ops.append(("equal" if same else "replace", alo + i, alo + i + 1, blo + i, blo + i + 1))
        return
    k = -(-max(na, nb) // SLICE_LINES)
    for n in range(k):
        i1, i2 = alo + na * n // k, alo + na * (n + 1) // k
        j1, j2 = blo + nb * n // k, blo + nb * (n + 1) // k
        matcher = difflib.SequenceMatcher(None, a[i1:i2], b[j1:j2], autojunk=False)
        ops += [(t, x1 + i1, x2 + i1, y1 + j1, y2 + j1) for t, x1, x2, y1, y2 in matcher.get_opcodes()]


def _anchors(a, b, alo: int, ahi: int, blo: int, bhi: int) -> list[tuple[int, int]]:
    """Pairs (i, j) of lines found exactly once in a[alo:ahi] and once in b[blo:bhi], the longest run of
    them in the same order in both (patience diff's anchors), found in O(n log n)."""
    once_a: dict[str, int | None] = {}
    for i in range(alo, ahi):
        once_a[a[i]] = None if a[i] in once_a else i
    once_b: dict[str, int | None] = {}
    for j in range(blo, bhi):
        once_b[b[j]] = None if b[j] in once_b else j
    pairs: list[tuple[int, int]] = []
    for line, at_a in once_a.items():
        at_b = once_b.get(line)
        if at_a is not None and at_b is not None:
            pairs.append((at_a, at_b))
    pairs.sort()
    # the longest increasing run of b positions (patience sorting), with back links to rebuild it
    tops: list[int] = []
    top_at: list[int] = []
    back: list[int] = []
    for k, (_i, bj) in enumerate(pairs):
        at = bisect.bisect_left(tops, bj)
        if at == len(tops):
            tops.append(bj)
            top_at.append(k)
        else:
            tops[at] = bj
            top_at[at] = k
        back.append(top_at[at - 1] if at else -1)
    run: list[tuple[int, int]] = []
    k = top_at[-1] if top_at else -1
    while k >= 0:
        run.append(pairs[k])
        k = back[k]
    return run[::-1]


def _merged(ops: list[tuple[str, int, int, int, int]]) -> list[tuple[str, int, int, int, int]]:
    """Adjacent opcodes of one kind joined, and a removal next to an addition made one replacement."""
    out: list[list] = []
    for tag, i1, i2, j1, j2 in ops:
        if i1 == i2 and j1 == j2:
            continue
        kind = "equal" if tag == "equal" else "change"
        if out and out[-1][0] == kind:
            out[-1][2], out[-1][4] = i2, j2
        else:
            out.append([kind, i1, i2, j1, j2])
    return [(t if t == "equal" else "replace", i1, i2, j1, j2) for t, i1, i2, j1, j2 in out]


def _groups(ops: list[tuple[str, int, int, int, int]], context: int):
    """The changes with `context` kept lines around each, split where more lines than that lie between
    (difflib's get_grouped_opcodes, over our opcodes)."""
    if not any(t != "equal" for t, *_ in ops):
        return
    group: list[tuple[str, int, int, int, int]] = []
    for n, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag != "equal":
            group.append((tag, i1, i2, j1, j2))
            continue
        first, last = n == 0, n == len(ops) - 1
        if first:
            group.append((tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2))
        elif last:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
        elif i2 - i1 > 2 * context:
            group.append((tag, i1, i1 + context, j1, j1 + context))
            yield group
            group = [(tag, i2 - context, i2, j2 - context, j2)]
        else:
            group.append((tag, i1, i2, j1, j2))
    if any(t != "equal" for t, *_ in group):
        yield group


def _capped(diff: Diff) -> Diff:
    """At most SHOWN_LINES lines; the rest counted in `hidden`."""
    if len(diff.lines) > SHOWN_LINES:
        diff.hidden = len(diff.lines) - SHOWN_LINES
        del diff.lines[SHOWN_LINES:]
    return diff
