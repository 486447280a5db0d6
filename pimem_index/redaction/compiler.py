"""The compiler: the rule table into one regex per scan literal, and the Hyperscan prefilter that tells
which of them can match a text.  ``build()`` runs once, on the first text redacted (about 100 ms), so
importing the package compiles nothing.

How it stays fast (it runs on every indexed entry and every output):

* The text is encoded to UTF-8 once and ASCII-case-folded with ``bytes.lower()``; both run at GB/s.
  Rules work on bytes; a masked span never splits a multi-byte character (spans end at ASCII delimiters).
* Every rule's pattern starts right after a literal, its ``scan`` (``_``, ``-``, ``://``, ``k``...).
  Rules sharing a scan literal are compiled into one regex ``scan(?:(?P<r0>...)|(?P<r1>...))``, so
  ``re`` uses its literal-prefix search and one pass serves many kinds.  Rare literals are first tested
  with ``in``.
* Most texts cannot match most scanners: one Hyperscan pass over the text finds the scanners whose
  needles (see ``needles``) it holds, and only those run; a text with no needle is not even lowered.
  Without Hyperscan (no wheel for the platform) every scanner runs, with the same result.
* No pattern begins with an unanchored ``[...]*``, every repetition is bounded, and scans that look ahead
  along a line stop at the next occurrence of their own literal, so time per megabyte stays flat on
  adversarial input.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pimem_index.redaction import structured, table
from pimem_index.redaction.needles import hs_literal, is_start, needles, pattern_needles
from pimem_index.redaction.rule import Check, Handler, Rule, Span

#: One scanner as the driver runs it: (fold, rare, scan literal, regex search, group name -> (rule, mask
#: groups, check, handler)).
Step = tuple[
    bool, bool, bytes, Callable[..., "re.Match | None"], dict[str, tuple[Rule, list[str], Check | None, Handler | None]]
]


def import_hyperscan() -> Any:
    """The hyperscan module, or None where no wheel exists (every scanner then runs on every text)."""
    try:
        return importlib.import_module("hyperscan")
    except ImportError:
        return None


_GROUP_DEF = re.compile(rb"\(\?P<([A-Za-z_][A-Za-z0-9_]*)>")
_GROUP_REF = re.compile(rb"\(\?P=([A-Za-z_][A-Za-z0-9_]*)\)")


@dataclass
class Scanner:
    """The rules sharing one scan literal, compiled into one regex ``scan(?:alt|alt...)``."""

    fold: bool
    scan: bytes
    rare: bool
    regex: re.Pattern
    rules: dict[str, tuple[Rule, list[str]]]  # group name -> (rule, mask group names)


def _prefixed_groups(pattern: bytes, pfx: bytes) -> bytes:
    """``pattern`` with every group name (and back-reference) prefixed by ``pfx``."""
    pattern = _GROUP_DEF.sub(lambda m: b"(?P<" + pfx + m.group(1) + b">", pattern)
    return _GROUP_REF.sub(lambda m: b"(?P=" + pfx + m.group(1) + b")", pattern)


def compile_rules(rules: list[Rule]) -> list[Scanner]:
    """One Scanner per scan literal: its rules' patterns as the alternatives of one regex."""
    grouped: dict[tuple, list[Rule]] = {}
    for rule in rules:
        grouped.setdefault((rule.fold, rule.scan, rule.rare), []).append(rule)
    scanners = []
    n = 0
    for (fold, scan, rare), members in grouped.items():
        alts = []
        guarded: dict[bytes, list[bytes]] = {}
        table: dict[str, tuple[Rule, list[str]]] = {}
        for rule in members:
            name = f"r{n}"
            n += 1
            pfx = name.encode() + b"_"
            src = _prefixed_groups(rule.pattern, pfx)
            # An empty group closing each alternative names the rule that
            # matched (m.lastgroup) and marks where it ended, without hiding
            # the alternative's leading literal from the engine's fast check.
            alt = src + b"(?P<" + name.encode() + b">)"
            if rule.guard:
                if rule.guard not in guarded:
                    guarded[rule.guard] = []
                    alts.append(rule.guard)  # placeholder, filled below
                guarded[rule.guard].append(alt)
            else:
                alts.append(alt)
            masks = [f"{name}_{g.decode()}" for g in _GROUP_DEF.findall(rule.pattern) if re.fullmatch(rb"s[0-9]*", g)]
            table[name] = (rule, masks)
        # alternatives sharing a guard: guard(?:alt|alt...), so a scan stop
        # that fails the guard costs one lookbehind, not one per alternative
        alts = [a + b"(?:" + b"|".join(guarded[a]) + b")" if a in guarded else a for a in alts]
        regex = re.compile(re.escape(scan) + b"(?:" + b"|".join(alts) + b")")
        scanners.append(Scanner(fold, scan, rare, regex, table))
    return scanners


def _prefilter(scanners: list[Scanner], hyperscan: Any) -> tuple[Any, list[int]]:
    """(a Hyperscan database reporting, as its id, the index of each scanner that may
    match a text; indexes of the scanners that always run).  A scanner is looked for by
    its needles, or, when one of its rules has a ``shape``, by each rule's shape
    (in Hyperscan's prefilter mode, which may report more matches, never fewer) or
    needles.  Folded scanners are matched ASCII-caseless in the original bytes, which
    finds all that an exact search of ``bytes.lower()`` would."""
    every = list(range(len(scanners)))
    if hyperscan is None:
        return None, every
    for shaped in (True, False):  # without shapes if Hyperscan cannot compile them
        always, ids, exprs, flags = [], [], [], []
        for i, sc in enumerate(scanners):
            found = _expressions(sc, shaped)
            if found is None:
                always.append(i)
                continue
            caseless = hyperscan.HS_FLAG_CASELESS if sc.fold else 0
            for expr, prefilter in found:
                ids.append(i)
                exprs.append(expr)
                flags.append(
                    hyperscan.HS_FLAG_SINGLEMATCH | caseless | (hyperscan.HS_FLAG_PREFILTER if prefilter else 0)
                )
        if not ids:
            return None, every
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        try:
            db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=flags)
        except hyperscan.error:  # a CPU Hyperscan does not support: scan as without it
            continue
        return db, always
    return None, every


def _expressions(sc: Scanner, shaped: bool) -> list[tuple[bytes, bool]] | None:
    """What the prefilter looks for to run ``sc``: (Hyperscan expression, in prefilter mode?)
    pairs, one of which every text it can match holds; None when nothing is known."""
    rules = [rule for rule, _masks in sc.rules.values()]
    if not (shaped and any(rule.shape for rule in rules)):
        found = needles(sc.regex)
        return None if b"" in found else [(_literals(found), False)]
    out = []
    scan = re.escape(sc.scan)
    for rule in rules:
        if rule.shape:
            if not is_start(rule.shape, rule.pattern):
                raise ValueError(f"the shape of a {rule.kind} rule is not the start of its pattern")
            out.append((scan + b"(?:" + rule.shape + b")", True))
            continue
        found = pattern_needles(scan + b"(?:" + rule.pattern + b")")
        if b"" in found:
            return None
        out.append((_literals(found), False))
    return out


def _literals(found: frozenset) -> bytes:
    """Needles as one Hyperscan expression (any of them)."""
    return b"|".join(hs_literal(n) for n in sorted(found))


def _on_needle(index: int, start: int, end: int, flags: int, found: list) -> None:
    """Hyperscan's match handler: needle (or word) number ``index`` is in the text."""
    found.append(index)


def _context_db(hyperscan: Any) -> Any:
    """A Hyperscan database reporting, as its id, the index of each CONTEXT_WORDS word in a text."""
    if hyperscan is None:
        return None
    words = structured.CONTEXT_WORDS
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    flags = [hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_SINGLEMATCH] * len(words)
    try:
        db.compile(
            expressions=[hs_literal(w) for w in words], ids=list(range(len(words))), elements=len(words), flags=flags
        )
    except hyperscan.error:
        return None
    return db


@dataclass
class Compiled:
    """The rule table compiled: scanners, their plan, the prefilter and the context words' database."""

    scanners: list[Scanner]
    plan: list[Step]
    hyperscan: Any
    needle_db: Any
    always: list[int]  # indexes of the scanners that run on every text (no needle known)
    context_db: Any
    context_searches: dict[bytes, Callable[[bytes, dict], list[Span]]]
    _thread: threading.local = field(default_factory=threading.local)  # Hyperscan scratch: one per thread

    def plan_for(self, b: bytes) -> list[Step]:
        """The plan's steps, in order, of the scanners that can match ``b``."""
        if self.needle_db is None:
            return self.plan
        try:
            scratch = self._thread.scratch
        except AttributeError:  # a scan writes to its scratch: one per thread
            scratch = self._thread.scratch = self.hyperscan.Scratch(self.needle_db)
        found = list(self.always)
        self.needle_db.scan(b, _on_needle, 0, found, scratch)  # positional: keywords cost more
        if not found:
            return []
        found.sort()
        return [self.plan[i] for i in found]

    def context_words(self, b: bytes) -> frozenset[bytes]:
        """The CONTEXT_WORDS that ``b`` mentions, in any case."""
        words = structured.CONTEXT_WORDS
        if self.context_db is None:
            bl = b.lower()
            return frozenset(w for w in words if w in bl)
        try:
            scratch = self._thread.context_scratch
        except AttributeError:
            scratch = self._thread.context_scratch = self.hyperscan.Scratch(self.context_db)
        found: list[int] = []
        self.context_db.scan(b, _on_needle, 0, found, scratch)
        return frozenset(words[i] for i in found)


def build(use_hyperscan: bool = True) -> Compiled:
    """Compile the rule table, with Hyperscan's prefilter when it is installed and ``use_hyperscan``."""
    hyperscan = import_hyperscan() if use_hyperscan else None
    scanners = compile_rules(table.RULES)
    plan: list[Step] = [
        (
            sc.fold,
            sc.rare,
            sc.scan,
            sc.regex.search,
            {name: (rule, masks, rule.check, rule.handler) for name, (rule, masks) in sc.rules.items()},
        )
        for sc in scanners
    ]
    needle_db, always = _prefilter(scanners, hyperscan)
    return Compiled(
        scanners, plan, hyperscan, needle_db, always, _context_db(hyperscan), dict(structured.CONTEXT_SEARCHES)
    )
