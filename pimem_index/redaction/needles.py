"""Needles: literals one of which every match of a regex holds or sees, read off the compiled regex with
re's own parser, so they cannot drift from the rules.  One Hyperscan pass over a text finds the scanners
with a needle in it; the others cannot match and are skipped (Hyperscan is only this prefilter: the
regexes and checks still decide)."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# re's own parser (3.11+, like possessive repeats); private modules, so typed Any
_sre: Any = importlib.import_module("re._constants")
_sre_parse: Any = importlib.import_module("re._parser")

_NEEDLE_CAP = 64  # strings in one set at most; past that the set is given up
_EMPTY = frozenset([b""])  # the empty string: as needles, found in every text


@dataclass(frozen=True)
class _Lits:
    """What is known of the matches of a parsed regex item: ``exact`` holds
    every string it matches (None: too many), each match starts with one of
    ``pre``, the text up to its end ends with one of ``suf``, and one of
    ``req`` occurs in every text it matches in."""

    exact: frozenset | None
    pre: frozenset
    suf: frozenset
    req: frozenset


_UNKNOWN = _Lits(None, _EMPTY, _EMPTY, _EMPTY)


def _cross(a: frozenset | None, b: frozenset | None) -> frozenset | None:
    """Each string of ``a`` followed by each of ``b`` (None past the cap)."""
    if a is None or b is None or len(a) * len(b) > _NEEDLE_CAP:
        return None
    return frozenset(x + y for x in a for y in b)


def _union(sets: list) -> frozenset | None:
    if any(s is None for s in sets) or sum(map(len, sets)) > _NEEDLE_CAP:
        return None
    return frozenset().union(*sets)


def _shortest(s: frozenset | None, implied: Callable[[bytes, bytes], bool]) -> frozenset | None:
    """``s`` without the strings that ``implied(x, other)`` says another one covers
    (starting with ``ab`` implies starting with ``a``): fewer, shorter strings
    join better with what comes next."""
    if s is None:
        return None
    return frozenset(x for x in s if not any(o != x and implied(x, o) for o in s))


def _selectivity(s: frozenset) -> tuple:
    """Longer needles are rarer, up to 4 bytes; past that, fewer is better."""
    n = min(map(len, s))
    return min(n, 4), -len(s), n


def _best(*sets: frozenset | None) -> frozenset:
    return max((s for s in sets if s is not None), key=_selectivity, default=_EMPTY)


def _class_bytes(items: list) -> frozenset | None:
    """The bytes of a small character class (``[pousr]``, ``[0-9a-f]``), else None."""
    out: set[int] = set()
    for op, av in items:
        if op is _sre.LITERAL:
            out.add(av)
        elif op is _sre.RANGE and av[1] - av[0] < 16:
            out.update(range(av[0], av[1] + 1))
        else:
            return None  # negated, a category such as \s, a wide range
    return frozenset(bytes([c]) for c in out) if len(out) <= 16 else None


def _fixed(strings: frozenset, left: frozenset) -> _Lits:
    """An item matching one of ``strings``, after text ending with one of ``left``."""
    after = _cross(left, strings) or strings
    return _Lits(strings, strings, after, after)


def _item(op, av, left: frozenset) -> _Lits:
    """_Lits of one parsed item; the text before it ends with one of ``left``.
    Anything not understood here is _UNKNOWN, which is always true."""
    if op is _sre.LITERAL:
        return _fixed(frozenset([bytes([av])]), left)
    if op is _sre.IN:
        chars = _class_bytes(av)
        return _UNKNOWN if chars is None else _fixed(chars, left)
    if op is _sre.SUBPATTERN:
        return _UNKNOWN if av[1] & _sre.SRE_FLAG_IGNORECASE else _seq(av[3], left)
    if op is _sre.ATOMIC_GROUP:
        return _seq(av, left)
    if op is _sre.BRANCH:
        alts = [_seq(alt, left) for alt in av[1]]
        return _Lits(
            _union([a.exact for a in alts]),
            _shortest(_union([a.pre for a in alts]), bytes.startswith) or _EMPTY,
            _shortest(_union([a.suf for a in alts]), bytes.endswith) or _EMPTY,
            _union([a.req for a in alts]) or _EMPTY,
        )
    if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT):
        lo, hi, sub = av
        return _repeat(lo, hi, sub, left)
    if op is _sre.ASSERT:
        direction, sub = av
        if direction < 0:  # a lookbehind: its match ends here
            inner = _seq(sub, _EMPTY)
            return _Lits(_EMPTY, _EMPTY, _best(left, inner.suf), inner.req)
        return _Lits(_EMPTY, _EMPTY, left, _seq(sub, left).req)
    if op is _sre.ASSERT_NOT or op is _sre.AT:
        return _Lits(_EMPTY, _EMPTY, left, _EMPTY)
    return _UNKNOWN


def _power(strings: frozenset | None, n: int) -> frozenset | None:
    """Every string made of ``n`` strings of ``strings`` (None past the cap)."""
    out: frozenset | None = _EMPTY
    for _ in range(n):
        out = _cross(out, strings)
        if out is None:
            break
    return out


def _repeat(lo: int, hi: int, sub: list, left: frozenset) -> _Lits:
    if lo == 0:
        return _UNKNOWN
    first = _seq(sub, left)
    exact = _power(first.exact, lo) if lo == hi else None
    if exact is not None:
        fixed = _fixed(exact, left)
        return _Lits(exact, exact, fixed.suf, _best(first.req, fixed.req))
    # one repetition at least: starts like the first, ends like the last
    last = first if left is _EMPTY else _seq(sub, _EMPTY)
    return _Lits(None, first.pre, last.suf, first.req)


def _seq(items: list, left: frozenset) -> _Lits:
    """_Lits of items matched one after the other (zero-width ones add nothing)."""
    exact: frozenset | None = _EMPTY
    pre = None
    suf, req = left, _EMPTY
    for op, av in items:
        it = _item(op, av, suf)
        joined = _cross(exact, it.exact)
        if joined is None and pre is None and exact is not None:
            pre = _cross(exact, it.pre) or exact  # the exact run ends here
        exact = joined
        suf = it.suf
        req = _best(req, it.req)
    return _Lits(exact, pre or exact or _EMPTY, suf, req)


def needles(regex: re.Pattern) -> frozenset:
    """Literals one of which occurs in every text ``regex`` matches in (lookarounds
    included); ``{b""}`` when none is known."""
    if regex.flags & re.IGNORECASE:
        return _EMPTY
    return pattern_needles(regex.pattern, regex.flags)


def pattern_needles(pattern: bytes, flags: int = 0) -> frozenset:
    """``needles`` of a pattern not compiled (a rule's own, inside its scanner's regex)."""
    req = _seq(_sre_parse.parse(pattern, flags).data, _EMPTY).req
    return _shortest(req, bytes.__contains__) or _EMPTY  # a needle holding another adds nothing


def is_start(start: bytes, pattern: bytes) -> bool:
    """Whether ``start`` is the first whole items of ``pattern`` (as re parses both), so every
    match of ``pattern`` begins with a match of ``start``: not a cut inside a group, before a
    repeat of the last item, or before a ``|`` of the whole."""
    if not pattern.startswith(start):
        return False
    whole, first = _tree(_sre_parse.parse(pattern).data), _tree(_sre_parse.parse(start).data)
    return len(first) <= len(whole) and whole[: len(first)] == first


def _tree(items) -> tuple:
    """Parsed items as nested tuples (re's SubPattern compares by identity)."""
    return tuple((op, _value(av)) for op, av in items)


def _value(av):
    if isinstance(av, _sre_parse.SubPattern):
        return _tree(av.data)
    if isinstance(av, (list, tuple)):
        return tuple(_value(x) for x in av)
    return av


def hs_literal(needle: bytes) -> bytes:
    """A needle as a Hyperscan expression: every byte escaped, none a metacharacter."""
    return b"".join(b"\\x%02x" % c for c in needle)
