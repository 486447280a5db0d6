"""The rule type: one kind of secret as a scan literal and a pattern for what follows it, and the small
pieces (lookbehinds, checks, handlers) that rules of every family are built from."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

Span = tuple[int, int]
# check(match, group_prefix, original_bytes, folded_bytes) -> keep?
Check = Callable[[re.Match, str, bytes, bytes], bool]
# handler(rule, match, group_prefix, original_bytes, folded_bytes) -> spans
Handler = Callable[["Rule", re.Match, str, bytes, bytes, dict], Iterable[Span]]


@dataclass(frozen=True)
class Rule:
    """One kind of secret.

    ``pattern`` is matched right after the literal ``scan`` (in the ASCII
    lower-cased text when ``fold`` is true; offsets are the same as in the
    original).  Named groups ``s``, ``s2``... mark what to mask; ``check`` may
    veto a match; a ``handler`` replaces the default group masking.  ``rare``
    makes the driver test ``scan in text`` before running the regex (worth it
    for literals that seldom occur); ``shape``, the start of ``pattern``, is what
    the prefilter looks for when the literal alone is a common word.  ``handler(rule, m, g, b, bl, ctx)``
    gets ``ctx``, a dict shared by all matches in one text.
    """

    kind: str
    description: str
    scan: bytes
    pattern: bytes
    fold: bool = False
    rare: bool = False
    check: Check | None = None
    handler: Handler | None = None
    guard: bytes = b""  # shared lookbehind tried once before alternatives that start with a lookbehind
    back: int = 0  # secret_assignment: keyword bytes before the scan literal
    family: str = ""  # secret_assignment: password, secret, token, auth, cred, key
    # The start of ``pattern`` (whole items of it) that the prefilter looks for instead of the needles,
    # for a rule whose literal is an ordinary word (``pat``, ``value``, ``key``): its text must look
    # like the secret's start, not merely hold the word (compiler._prefilter).
    shape: bytes = b""


def not_after_word(lit: bytes, chars: bytes = rb"A-Za-z0-9_") -> bytes:
    """Lookbehind, placed after the literal ``lit``: ``lit`` is not glued to
    a preceding word character, except that a JSON escape (``\\n``...) or a
    %-escape right before it counts as a boundary (``\\b`` fails after
    ``\\n`` because ``n`` is a word character)."""
    return not_after(re.escape(lit), chars)


def not_after(before: bytes, chars: bytes = rb"A-Za-z0-9_") -> bytes:
    """``not_after_word`` for text matching ``before``, a fixed-width regex (``[0-9a-f]{32}-us``)."""
    return (
        rb"(?:(?<!["
        + chars
        + rb"]"
        + before
        + rb")|(?<=\\[nrtbf]"
        + before
        + rb")|(?<=%[0-9A-Fa-f]{2}"
        + before
        + rb"))"
    )


#: Not followed by a word character.
END_ALNUM = rb"(?![A-Za-z0-9_])"


def whole_match(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterable[Span]:
    """Mask the scan literal too (e.g. the ``AA`` opening a Telegram token)."""
    return [(m.start(), m.end())]


B64U = rb"[a-z0-9_-]"  # base64url on folded text (same offsets as the original)


def orig_at(offset: int, literal: bytes, group: str = "") -> Check:
    """Check: the original bytes hold ``literal`` at ``offset`` from the match
    start (or from the start of ``group``)."""

    def check(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
        pos = (m.start(g + group) if group else m.start()) + offset
        return b[pos : pos + len(literal)] == literal

    return check


def all_of(*checks: Check) -> Check:
    def check(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
        return all(c(m, g, b, bl) for c in checks)

    return check


def has_non_hex(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
    """The masked body holds a character a hex digest never does (so a
    ``4b1d...`` hash is not taken for a ClickHouse key)."""
    s, e = m.span(g + "s")
    return re.search(rb"[g-zA-Z]", b[s:e]) is not None


def mask_before(n: int) -> Handler:
    """Handler: mask the ``n`` bytes before the match (a token known by its suffix)."""

    def handler(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterable[Span]:
        return [(max(0, m.start() - n), m.start())]

    return handler
