"""Strings a rule's regex matches, generated from the regex itself (re's parser), so a test can try every
rule of a family without a hand-written example per rule. Random characters only: nothing token-shaped is
committed."""

from __future__ import annotations

import importlib
import random
from typing import Any

_sre: Any = importlib.import_module("re._constants")
_sre_parse: Any = importlib.import_module("re._parser")

_MAX_EXTRA = 12  # repetitions past the minimum, at most
_ALL = [c for c in range(0x21, 0x7F)]


def _class_chars(items: list) -> list[int]:
    negate = any(op is _sre.NEGATE for op, _ in items)
    chars: set[int] = set()
    for op, av in items:
        if op is _sre.LITERAL:
            chars.add(av)
        elif op is _sre.RANGE:
            chars.update(range(av[0], av[1] + 1))
        elif op is _sre.CATEGORY:
            if av is _sre.CATEGORY_DIGIT:
                chars.update(range(0x30, 0x3A))
            elif av is _sre.CATEGORY_WORD:
                chars.update(c for c in _ALL if chr(c).isalnum() or c == 0x5F)
            elif av is _sre.CATEGORY_SPACE:
                chars.update(b" \t\n")
    if negate:
        return [c for c in _ALL if c not in chars and c not in b"\\\"'`"]
    return sorted(chars)


def _gen(items: list, rng: random.Random, out: bytearray) -> None:
    for op, av in items:
        if op is _sre.LITERAL:
            out.append(av)
        elif op is _sre.NOT_LITERAL:
            out.append(rng.choice([c for c in _ALL if c != av and c not in b"\\\"'`"]))
        elif op is _sre.ANY:
            out.append(rng.choice(b"abcxyz"))
        elif op is _sre.IN:
            out.append(rng.choice(_class_chars(av)))
        elif op is _sre.SUBPATTERN:
            _gen(av[3], rng, out)
        elif op is _sre.ATOMIC_GROUP:
            _gen(av, rng, out)
        elif op is _sre.BRANCH:
            _gen(rng.choice(av[1]), rng, out)
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            hi = lo + _MAX_EXTRA if hi is _sre.MAXREPEAT else min(hi, lo + _MAX_EXTRA)
            for _ in range(rng.randint(lo, hi)):
                _gen(sub, rng, out)
        elif op is _sre.ASSERT and av[0] < 0:
            # a lookbehind holds text before this point (gh[pousr]_ before the scanned _): write it, keeping
            # what was already written when it ends that way
            behind = bytearray()
            _gen(av[1], rng, behind)
            for n in range(min(len(out), len(behind)), -1, -1):
                if out[len(out) - n :] == behind[len(behind) - n :]:
                    out[len(out) - n :] = behind
                    break
        # lookaheads, negative lookarounds, anchors: zero width, nothing to write


def sample(scan: bytes, pattern: bytes, rng: random.Random) -> str:
    """A string that starts with ``scan`` and continues as ``pattern`` describes (lookbehinds written out)."""
    out = bytearray(scan)
    _gen(_sre_parse.parse(pattern.decode("latin-1")).data, rng, out)
    return out.decode("latin-1")


def mixed_case(text: str, rng: random.Random) -> str:
    return "".join(c.upper() if rng.random() < 0.5 else c for c in text)
