"""Word forms: which words of a text a query word matches, one rule for search, excerpts and highlights.

The term index keeps words as written (store.FTS_OPTIONS, unicode61), so an exact word or an
identifier is found exactly as before. A query word also matches its other forms ("timeout":
"timeouts"; "migrate": "migrating", "migration"): words made of it or its stem and a common
English ending that FTS5's `porter` stemmer over the index's tokenizer joins to it (`of`).
Python has no stemmer that is FTS5's, so the candidates go once into an in-memory FTS5 table
with that tokenizer and FTS5 says which match. The answer depends on the word alone, so it is
kept (an LRU of words). Search ranks a word the same in any form, an entry holding every word
as written a little higher (query._matches), asks the index for other forms only when they could
reach the page, and keeps which forms the index holds per index generation (`in_index`, `kept`).
The parts of an identifier (a request's `written`: `request.identifier_parts`) match only as
written. Excerpts and highlights mark the whole words `matches` finds, so a page marks what
search matched.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

from pimem_index import db

T = TypeVar("T")

# The index's tokenizer (store.FTS_OPTIONS) with FTS5's Porter stemmer over it.
STEMMER = "porter unicode61 remove_diacritics 2"
# Other forms of a query word that search asks the index for, at most: the shortest it holds
# (0: words match only as written, as before word forms).
MAX_FORMS = 24
# Endings tried on the word, on its stem and on their usual respellings; the stemmer keeps those that join it.
ENDINGS = (
    *("", "e", "s", "es", "ed", "d", "ing", "er", "ers", "y", "ies", "ied", "ly", "al", "ally", "ic", "ical"),
    *("ion", "ions", "ation", "ations", "ate", "ates", "ated", "ating", "ator", "ators", "ive", "ively"),
    *("able", "ible", "ment", "ments", "ity", "ities", "ize", "izes", "ized", "izing", "ization", "ness"),
    *("ance", "ence", "ant", "ent", "ful", "ism"),
)
# Shorter words (FTS5's porter leaves them alone), and words with digits or letters outside ASCII, match as written.
MIN_LETTERS = 3


def of(term: str) -> tuple[str, ...]:
    """The term and its other forms (lowercase words, shortest first), the term first."""
    return (term, *_forms(term)) if MAX_FORMS > 0 else (term,)


@functools.lru_cache(maxsize=4096)
def _forms(term: str) -> tuple[str, ...]:
    """The other forms of a lowercase query word the stemmer joins to it, shortest first."""
    if len(term) < MIN_LETTERS or not (term.isascii() and term.isalpha()):
        return ()
    candidates = sorted(_candidates(term, stem(term)) - {term}, key=lambda w: (len(w), w))
    joined = _joined(candidates, term)
    return tuple(w for w in candidates if w in joined)


def _candidates(term: str, stem: str) -> set[str]:
    """Words made of the term, its stem or their usual respellings and each of ENDINGS."""
    bases = {term, stem, term[:-1] if term.endswith("e") else term, stem + stem[-1]}
    if stem.endswith("i"):
        bases.add(stem[:-1] + "y")
    return {base + ending for base in bases for ending in ENDINGS if base}


def matches(text: str, terms: list[str] | tuple[str, ...]) -> Iterator[re.Match]:
    """The whole words of `text` that the query words match in any form (`of`), in order, any case."""
    rule = _rule(tuple(terms), MAX_FORMS)
    if rule is None:
        return
    near, words = rule
    for m in near.finditer(text):
        if m.group().lower() in words:
            yield m


@functools.lru_cache(maxsize=256)
def _rule(terms: tuple[str, ...], _max_forms: int) -> tuple[re.Pattern, frozenset[str]] | None:
    """The words the query words match, and a pattern of the whole words sharing the start of each
    word's forms (cheap to compile, unlike one of every form), kept per query words and MAX_FORMS."""
    forms = [of(t.lower()) for t in terms if t]
    if not forms:
        return None
    starts = sorted({os.path.commonprefix(list(f)) for f in forms}, key=lambda w: (-len(w), w))
    near = re.compile(r"(?<![^\W_])(?:" + "|".join(map(re.escape, starts)) + r")[^\W_]*", re.IGNORECASE)
    return near, frozenset(w for f in forms for w in f)


def in_index(conn: db.Connection, term: str, generation: object) -> tuple[str, ...]:
    """The term and the first MAX_FORMS of its other forms (`of`) that the index holds, kept per `generation`.

    `generation` is anything that changes when the index's words may have (query passes its
    entry count, refreshed at most a minute late): a form first written since then is missed
    until it changes.
    """

    def held() -> tuple[str, ...]:
        return (term, *[w for w in of(term)[1:] if _holds(conn, w)][:MAX_FORMS])

    return kept(conn, ("forms", MAX_FORMS, term), generation, held)


def holding(conn: db.Connection, group: tuple[str, ...], generation: object) -> int:
    """How many entries hold any of a word's forms (`in_index`), kept per `generation` like them."""
    sql = "SELECT count(*) FROM entries_fts WHERE entries_fts MATCH ?"
    return kept(conn, ("holding", group), generation, lambda: conn.execute(sql, (any_form(group),)).fetchone()[0])


def kept(conn: db.Connection, what: tuple, generation: object, compute: Callable[[], T]) -> T:
    """compute(), kept in the index's memo per generation (`memo.IndexMemo.answer`: the oldest dropped first)."""
    return db.memo_of(conn).answer(("wordforms", generation, *what), compute)


def forget_kept(conn: db.Connection) -> None:
    """Drop every answer kept for the index and every form (benchmarks measure the first query of a word with it)."""
    db.memo_of(conn).forget_answers()
    _forms.cache_clear()
    _rule.cache_clear()


def _holds(conn: db.Connection, word: str) -> bool:
    """Whether any entry of the index holds the word (FTS5 stops at the first)."""
    sql = "SELECT EXISTS (SELECT 1 FROM entries_fts WHERE entries_fts MATCH ?)"
    return bool(conn.execute(sql, (f'"{word}"',)).fetchone()[0])


def any_form(group: tuple[str, ...]) -> str:
    """One query word's forms (`in_index`, the word first) as an FTS5 expression matching any of them."""
    quoted = [f'"{w}"' for w in group]
    return quoted[0] if len(quoted) == 1 else "(" + " OR ".join(quoted) + ")"


def others_only(groups: list[tuple[str, ...]], op: str) -> str | None:
    """FTS5 expression for the entries that match the words (AND or OR) only through other forms,
    or None when no word has another form. `groups` are the words' `in_index` forms."""
    if all(len(g) == 1 for g in groups):
        return None
    forms = f" {op} ".join(any_form(g) for g in groups)
    exact = f" {op} ".join(f'"{g[0]}"' for g in groups)
    return f"(({forms}) NOT ({exact}))"


def stem(term: str) -> str:
    """FTS5's porter stem of a one-token word (read back from the probe table's vocabulary)."""
    with _probe() as probe:
        probe.execute("INSERT INTO w(word) VALUES (?)", (term,))
        row = probe.execute("SELECT term FROM v LIMIT 1").fetchone()
    return row[0] if row else term


def _joined(words: list[str], term: str) -> set[str]:
    """Which of `words` the stemming tokenizer joins to `term`, asked of FTS5."""
    if not words:
        return set()
    with _probe() as probe:
        probe.executemany("INSERT INTO w(rowid, word) VALUES (?, ?)", enumerate(words))
        return {words[r[0]] for r in probe.execute("SELECT rowid FROM w WHERE w MATCH ?", (f'"{term}"',))}


_local = threading.local()


@contextlib.contextmanager
def _probe():
    """This thread's in-memory FTS5 table with the stemming tokenizer, empty, in a transaction rolled
    back afterwards (made once per thread; a rollback empties it for free)."""
    probe = getattr(_local, "probe", None)
    if probe is None:
        probe = db.sqlite3.connect(":memory:", isolation_level=None)
        probe.execute(f"CREATE VIRTUAL TABLE w USING fts5(word, content='', detail=none, tokenize='{STEMMER}')")
        probe.execute("CREATE VIRTUAL TABLE v USING fts5vocab(w, row)")
        _local.probe = probe
    probe.execute("BEGIN")
    try:
        yield probe
    finally:
        probe.execute("ROLLBACK")
