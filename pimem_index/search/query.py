"""Search, read and summaries over the index, every text reread from its journal (`reread`) and redacted.

Each takes its checked request (`requests.SearchRequest`, `requests.ReadRequest`). Replies are
plain dicts in the contract's JSON shapes, identical for the CLI and the HTTP API. Also: the
ranking (BM25 without positions, a recency discount), the time budget, and `status`.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Collection
from contextlib import contextmanager
from typing import Any, NamedTuple, cast

from pimem_index import db, store
from pimem_index.errors import Arg, UserError
from pimem_index.locations import Locations, discover
from pimem_index.redaction import redact
from pimem_index.replies import Indexing, Phrases, ReadReply, SearchReply, SessionInfo
from pimem_index.search import exchange, forks, results, session_info, wordforms
from pimem_index.search.request import ReadRequest, SearchRequest, query_terms
from pimem_index.search.reread import (
    ENTRY_COLUMNS,
    EXCERPT_CHARS,
    EntryRow,
    entry_json,
    excerpt,
    redacted_text,
    reread_entry,
    select_entries,
    unavailable_reason,
    unavailable_text,
)
from pimem_index.search.scope import (
    SCOPES,
    Scope,
    allowed,
    project_root,
    request_scope,
    session_of,
    visible_sessions,
)
from pimem_index.search.turn import current_turn

CANDIDATES = 400
PAGE_CHARS = 16_000
RECENCY_DAYS = 30.0
# A search's time (its size: requests.MAX_TERMS). Measured on the benchmark corpus (500 MB,
# 124,000 entries, 2 cores): the 64 most common words take 1.6 s globally, 0.8 s in a project.
QUERY_SECONDS = 3.0
PROGRESS_STEPS = 10_000  # SQLite instructions between two looks at the clock (well under a millisecond)


@contextmanager
def time_budget(conn: db.Connection, seconds: float | None = None):
    """Stop this block's SQL once `seconds` (QUERY_SECONDS) have passed, with a clear error.

    SQLite's progress handler looks at the clock every PROGRESS_STEPS instructions; it is set
    on the (per-thread, shared) connection for this block only and always removed.
    """
    deadline = time.monotonic() + (QUERY_SECONDS if seconds is None else seconds)
    expired = False

    def past_deadline() -> bool:
        nonlocal expired
        expired = expired or time.monotonic() > deadline
        return expired

    conn.set_progress_handler(past_deadline, PROGRESS_STEPS)
    try:
        yield
    except db.OperationalError:
        if not expired:
            raise
        raise UserError(
            f"the search took longer than {QUERY_SECONDS if seconds is None else seconds:g} s "
            "and was stopped: search for fewer or rarer words",
            Arg("q", "widgets migration"),
        ) from None
    finally:
        conn.set_progress_handler(None, 0)


def _within_budget(fn):
    """Run a query function inside time_budget on its connection (its first argument)."""

    @functools.wraps(fn)
    def wrapper(conn, *args, **kwargs):
        with time_budget(conn):
            return fn(conn, *args, **kwargs)

    return wrapper


def match_expression(text: str | None) -> str:
    """Any text as an FTS5 query for every term in it (Datasette's table search box on the index)."""
    terms = query_terms(text)
    return " ".join(f'"{t}"' for t in terms) if terms else '""'


def fts_expression(terms: list[str], op: str, scope: Scope | None = None) -> str:
    """Quoted literal terms joined by AND or OR, within the scope's term."""
    return _in_scope("(" + f" {op} ".join(f'"{t}"' for t in terms) + ")", scope)


def _in_scope(expression: str, scope: Scope | None) -> str:
    """An FTS5 expression narrowed to the scope's term (when it has one)."""
    term = scope.term() if scope else None
    return f'{expression} AND "{term}"' if term else expression


def _filters(scope: Scope, since: str | None, until: str | None, kinds: list[str]) -> tuple[str, list]:
    sql, params = scope.predicate()
    clauses = [sql]
    if since:
        clauses.append("e.ts >= ?")
        params.append(store.epoch_ms(since))
    if until:
        clauses.append("e.ts <= ?")
        params.append(store.epoch_ms(until))
    if kinds:
        clauses.append(f"e.kind IN ({','.join('?' * len(kinds))})")
        params.extend(kinds)
    return " AND ".join(clauses), params


def search(
    conn: db.Connection, locations: Locations, request: SearchRequest | str | None = None, **fields: Any
) -> SearchReply:
    """Entries matching every term (else any term), best first with a recency discount.

    `request` is a SearchRequest; a query text (or None) and keyword fields build one
    (`SearchRequest.create`), as scripts and tests do.
    """
    if not isinstance(request, SearchRequest):
        request = SearchRequest.create(request, **fields)
    return _search(conn, locations, request)


def summaries(
    conn: db.Connection, locations: Locations, request: SearchRequest | str | None = None, **fields: Any
) -> SearchReply:
    """Compaction and branch summaries: newest first, or searched, with the same filters.

    `request` is a summaries SearchRequest; a query text (or None) and keyword fields build one.
    """
    if not isinstance(request, SearchRequest):
        request = SearchRequest.create(request, summaries=True, **fields)
    if not request.summaries:
        raise ValueError("query.summaries takes a summaries request: SearchRequest.create(..., summaries=True)")
    return _search(conn, locations, request)


@_within_budget
def _search(conn: db.Connection, locations: Locations, request: SearchRequest) -> SearchReply:
    """search and summaries (the request says which), within the time budget."""
    terms, limit = list(request.terms), request.limit
    sc = request_scope(conn, request)
    where, params = _filters(sc, request.since, request.until, list(request.kinds))
    own = current_turn(conn, request.journal_path)
    if own:  # the caller's own turn (its memory_context call) is never a hit
        where += f" AND e.rowid NOT IN ({','.join('?' * len(own))})"
        params.extend(own)
    if request.like:  # only the entries of the same text as this one (what a hit's `like` counts)
        where += " AND e.kind = ? AND e.text_digest = ?"
        params.extend(_like_of(conn, request.like, sc))
    reply: dict = {"action": request.action, **sc.as_json(), "terms": list(request.terms)}
    if not terms:
        rows = select_entries(
            conn,
            f"{where} ORDER BY e.ts DESC, e.rowid DESC LIMIT ? OFFSET ?",
            [*params, limit + 1, request.offset],
        )
        reply["match"] = "recent"
        reply["results"] = [
            {**_hit(conn, locations, r, None, [], request.excerpt_chars), "folded": 0} for r in rows[:limit]
        ]
        reply["folded"] = 0  # the newest entries, each shown
        more = len(rows) > limit
    else:
        needed = request.offset + limit + 1  # the page and one more, to say whether more remain
        exact = request.written  # parts of identifiers, found when the request was parsed
        match, found = _candidates(conn, terms, sc, where, params, needed, exact)
        more = _page_of_ranked(conn, locations, request, sc, _ordered(found.ranked, time.time()), reply)
        if not more and len(reply["results"]) < limit and found.forms_cut:
            # Folding left the page short of what the candidates promised: look at more of the other forms.
            match, found = _candidates(conn, terms, sc, where, params, CANDIDATES, exact)
            more = _page_of_ranked(conn, locations, request, sc, _ordered(found.ranked, time.time()), reply)
        reply["match"] = match
        if match == "any":
            reply["hint"] = "no entry has every term; showing entries with any of them"
    reply["offset"] = request.offset
    reply["next_offset"] = request.offset + limit if more else None
    reply["sessions"] = _sessions(conn, locations, request, [hit["session_id"] for hit in reply["results"]])
    if terms and request.offset == 0 and len(reply["results"]) < limit:
        _say_where_else(conn, request, sc, reply)
    reply["indexing"] = indexing_state(conn, locations)
    return cast(SearchReply, reply)


def _sessions(
    conn, locations: Locations, request: SearchRequest | ReadRequest, session_ids: list
) -> dict[str, SessionInfo]:
    """The reply's `sessions` map for the sessions its entries belong to, parents only where the cap allows."""
    return session_info.sessions_map(conn, locations, session_ids, lambda ids: visible_sessions(conn, request, ids))


def _like_of(conn, entry_id: str, sc: Scope) -> tuple[str, int]:
    """The kind and text digest of the entry `like=` names, looked for in the scope (a fork's copy
    shares its original's id and text, so any of them will do)."""
    where, params = sc.predicate()
    found = conn.execute(
        f"SELECT e.kind, e.text_digest FROM entries e JOIN files f ON f.id = e.file_id WHERE e.eid = ? AND {where} "
        "AND e.text_digest IS NOT NULL ORDER BY e.rowid LIMIT 1",
        [store.id_key(entry_id), *params],
    ).fetchone()
    if found is None:
        raise UserError(f"no entry {entry_id} in this scope to list the entries like it", Arg("like", "c3d4e5f6"))
    return found[0], found[1]


def _page_of_ranked(conn, locations: Locations, request: SearchRequest, sc: Scope, scored: list, reply: dict) -> bool:
    """The request's page of the ranked candidates into `reply` (results, folded, phrases), with
    repeats folded outside a session search (a session search shows each); whether more remain."""
    labels: dict[int, tuple[tuple[int, int], ...]] = {}  # the labels of each entry read (its rowid)

    def text_of(row: EntryRow) -> str | None:
        entry = reread_entry(conn, row, locations)
        if entry is None:
            return None
        if entry.labels:
            labels[row.rowid] = entry.labels
        return entry.text

    fold = sc.name != "session" and not request.like
    found = results.page(
        scored,
        text_of,
        redact,
        offset=request.offset,
        limit=request.limit,
        phrases=request.phrases,
        fold=fold,
        copies=forks.copies(conn, [row.rowid for _score, row in scored]) if fold else (),
    )
    terms = list(request.terms)
    reply["results"] = []
    for hit in found.hits:
        text = hit.text if hit.read else text_of(hit.row)
        hit_json = _hit_json(
            locations, hit.row, hit.score, terms, text, labels.get(hit.row.rowid, ()), request.excerpt_chars
        )
        hit_json.update(exchange.call_keys(conn, locations, hit.row))
        if hit.like:
            hit_json["like"] = {"entries": hit.like, "sessions": len(hit.like_sessions)}
        reply["results"].append({**hit_json, "folded": hit.folded})
    reply["folded"] = sum(hit.folded for hit in found.hits)
    if request.phrases:
        reply["phrases"] = _phrases_json(request.phrases, found)
    return found.more


NO_MATCH_HINT = "nothing matched in this scope; try other or fewer terms"
ELSEWHERE_MAX = 1000  # entries counted in a wider scope: the count stops there


def _say_where_else(conn, request: SearchRequest, sc: Scope, reply: dict) -> None:
    """A first page with fewer hits than asked: a hint when there are none, and `elsewhere`, how many
    entries each wider scope the caller may search adds; never a scope past the caller's cap."""
    if not reply["results"]:
        reply["hint"] = NO_MATCH_HINT
    counts = {}
    for name in SCOPES[SCOPES.index(sc.name) + 1 :]:
        wide = _wider_scope(conn, name, sc, request) if allowed(name, request.max_scope) else None
        if wide is not None:
            counts[name] = _count_outside(conn, list(request.terms), wide, sc, request)
    if counts:
        reply["elsewhere"] = counts


def _wider_scope(conn, name: str, sc: Scope, request: SearchRequest) -> Scope | None:
    """The scope `name` around `sc`: global, or the project of a session's folder."""
    if name == "global":
        return Scope("global")
    row = conn.execute("SELECT cwd FROM files WHERE session_id = ? AND cwd IS NOT NULL LIMIT 1", (sc.session_id,))
    cwd = (row.fetchone() or (None,))[0]
    if cwd is None:
        return None
    root, exact = project_root(conn, cwd, request.home)
    return Scope("project", root=root, exact=exact)


def _count_outside(conn, terms: list[str], wide: Scope, sc: Scope, request: SearchRequest) -> int:
    """Entries in `wide` but not in `sc` holding every term (else any term), with the request's
    filters, counted up to ELSEWHERE_MAX (the count stops there, so it stays cheap)."""
    where, params = _filters(wide, request.since, request.until, list(request.kinds))
    inner, inner_params = sc.predicate()
    for op in ("AND", "OR") if len(terms) > 1 else ("AND",):
        count = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM entries_fts JOIN entries e ON e.rowid = entries_fts.rowid "
            f"JOIN files f ON f.id = e.file_id WHERE entries_fts MATCH ? AND {where} AND NOT ({inner}) "
            f"LIMIT {ELSEWHERE_MAX})",
            [fts_expression(terms, op, wide), *params, *inner_params],
        ).fetchone()[0]
        if count:
            return count
    return 0


def _phrases_json(phrases, found: results.Page) -> Phrases:
    """The quoted phrases, how many candidates were checked for them, and a note when that stopped early."""
    data: Phrases = {"phrases": [" ".join(p) for p in phrases], "checked": found.phrases_checked, "complete": True}
    if not found.phrases_complete:
        data["complete"] = False
        data["note"] = (
            f"only the best {found.phrases_checked} matches of the words were checked for the phrase; "
            "add rarer words to find more"
        )
    return data


# BM25's constants, as FTS5's bm25() uses them.
BM25_K1 = 1.2
BM25_B = 0.75
STATS_SECONDS = 60.0
STATS_EXACT_BELOW = 20_000
STATS_SAMPLE = 5_000


class CollectionStats:
    """An index's entry count and average characters, when they were taken and at which highest rowid
    (kept in the index's memo: `_collection_stats`)."""

    def __init__(self) -> None:
        self.at = 0.0
        self.high: int | None = None
        self.count = 0
        self.average = 0.0
        self.taken = False


class Matches(NamedTuple):
    """A query's candidates, best first by one score (`_matches`), and whether entries matching only
    through other forms of the words were left out or cut to the page asked for (more may be asked)."""

    ranked: list[tuple[EntryRow, float]]
    forms_cut: bool


class Word(NamedTuple):
    """A query word for ranking: its forms in the index (the word first, `wordforms.in_index`) and its weight."""

    forms: tuple[str, ...]
    weight: float


def _words(conn, terms: list[str], count: int, exact: Collection[str]) -> list[Word]:
    """The query words' forms and weights: a word with other forms weighs the IDF of its forms together
    (every form is the word, as FTS5's porter has it); one without (an identifier's part, in `exact`,
    or a word the index holds in one form only) its own IDF."""
    words = []
    for t in terms:
        forms = (t,) if t in exact else wordforms.in_index(conn, t, count)
        held = wordforms.holding(conn, forms, count) if len(forms) > 1 else None
        words.append(Word(forms, _idf(conn, t, count) if held is None else _idf_of(held, count)))
    return words


def _matches(
    conn, terms: list[str], op: str, scope: Scope, where: str, params: list, needed: int, exact: Collection[str] = ()
) -> Matches:
    """Up to CANDIDATES matches, best first by one BM25 score: the words as written (`_ranked`) and,
    merged by score, entries matching only through other forms of them (`_ranked_forms`). A word
    counts the same in any form (`_words`); an entry holding every word as written scores
    WRITTEN_BONUS more (a weight, not a tier: a much shorter entry holding the words in other forms
    can pass a long one holding them as written). The words in `exact` (parts of identifiers) match
    only as written. Other forms are not asked for when no entry holding them could score above the
    `needed`th match of the words as written, and then only their best few pages (`_ranked_forms`)."""
    count, _average = _collection_stats(conn)
    words = _words(conn, terms, count, exact)
    written = _ranked(conn, terms, op, scope, where, params, [w.weight for w in words])
    if all(len(w.forms) == 1 for w in words):
        return Matches(written, False)
    if op == "AND":
        written = [(row, score * (1 + WRITTEN_BONUS)) for row, score in written]
    reach = min(needed, CANDIDATES)
    if len(written) >= reach and written[reach - 1][1] >= _forms_best(words, op):
        return Matches(written, True)
    wanted = min(reach * FORMS_HEADROOM, CANDIDATES)
    others = _ranked_forms(conn, words, op, scope, where, params, wanted)
    merged = sorted(written + others, key=lambda m: (-m[1], -m[0].rowid))
    return Matches(merged[:CANDIDATES], wanted < CANDIDATES and len(others) == wanted)


# What an entry holding every query word as written scores more than one holding some in other forms.
# Chosen with benchmarks/ranking.py (30 MB, seeds 7-10): the word-form set at or above FTS5's porter
# and the known items at or above plain bm25, in the same run (0.25 let the known items fall below bm25
# on one seed, 1.0 the word forms below porter).
WRITTEN_BONUS = 0.4
# BM25's length factor at its largest (an entry of no characters): what bounds a form match's score.
_LENGTH_FACTOR_MAX = (BM25_K1 + 1) / (1 + BM25_K1 * (1 - BM25_B))


def _forms_best(words: list[Word], op: str) -> float:
    """The highest score an entry matching only through other forms can have (`_ranked_forms`): every
    word's weight under AND, those of the words with other forms under OR (it holds none as written)."""
    return sum(w.weight for w in words if op == "AND" or len(w.forms) > 1) * _LENGTH_FACTOR_MAX


def _candidates(
    conn, terms: list[str], sc: Scope, where: str, params: list, needed: int, exact: Collection[str] = ()
) -> tuple[str, Matches]:
    """The match kind ("all", else "any" when no entry holds every term in some form) and its candidates."""
    found = _matches(conn, terms, "AND", sc, where, params, needed, exact)
    if found.ranked or len(terms) < 2:
        return "all", found
    return "any", _matches(conn, terms, "OR", sc, where, params, needed, exact)


def _ordered(ranked: list[tuple[EntryRow, float]], now: float) -> list[tuple[float, EntryRow]]:
    """(reranked score, row), best first by `_rerank`."""
    return sorted(((_rerank(row, score, now), row) for row, score in ranked), key=lambda t: (-t[0], -t[1].rowid))


def _ranked(
    conn, terms: list[str], op: str, scope: Scope, where: str, params: list, weights: list[float] | None = None
) -> list[tuple[EntryRow, float]]:
    """Up to CANDIDATES matches with their scores, best first by BM25 over which terms an entry holds.

    The index keeps no positions (store.FTS_OPTIONS), so a term counts once per entry: the
    score is the sum of the held terms' IDF, times BM25's length factor on the entry's
    characters. For `AND` every match holds every term, so the length factor decides.
    `weights`: each term's instead of its IDF (`_matches`).
    """
    count, average = _collection_stats(conn)
    weights = weights or [_idf(conn, t, count) for t in terms]
    held_params: list[object]
    if op == "AND":
        held, held_params = "?", [sum(weights)]
    else:
        held = " + ".join(
            "(CASE WHEN e.rowid IN (SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?) THEN ? ELSE 0 END)"
            for _ in terms
        )
        held_params = [p for t, w in zip(terms, weights, strict=True) for p in (f'"{t}"', w)]
    score = f"({held}) * {BM25_K1 + 1} / (1 + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * e.chars / ?))"
    rows = conn.execute(
        f"SELECT {ENTRY_COLUMNS}, {score} AS score FROM entries_fts "
        "JOIN entries e ON e.rowid = entries_fts.rowid JOIN files f ON f.id = e.file_id "
        f"WHERE entries_fts MATCH ? AND {where} ORDER BY score DESC, e.rowid DESC LIMIT {CANDIDATES}",
        [*held_params, max(average, 1.0), fts_expression(terms, op, scope), *params],
    )
    return [(EntryRow._make(row[:-1]), row[-1]) for row in rows]


# Entries matching only through other forms that are scored, at most: the newest (FTS5 reads them in
# rowid order and stops). benchmarks/ranking.py on 500 MB gives the same MRR from 400 to every entry.
FORMS_SCANNED = 500
# Entries matching only through other forms taken per entry the page needs: room for repeats folded away.
FORMS_HEADROOM = 4
_HOLDS = "e.rowid IN (SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?)"


def _ranked_forms(
    conn, words: list[Word], op: str, scope: Scope, where: str, params: list, limit: int
) -> list[tuple[EntryRow, float]]:
    """Up to `limit` entries matching the words only through other forms, best first: scored as
    `_ranked`, over the words an entry holds in any form (`_words`), among the newest FORMS_SCANNED
    of them in the scope (a rare word's common other form costs a bounded read, not every entry
    holding it: issue 28)."""
    _count, average = _collection_stats(conn)
    groups = [w.forms for w in words]
    expression = wordforms.others_only(groups, op)
    if expression is None:
        return []
    several = sum(len(g) > 1 for g in groups) > 1  # else which words a match holds is known from the expression
    held_sql, held_params = [], []
    for word in words:
        sql, values = _held_form(word, op, scope if several else None)
        held_sql.append(sql)
        held_params.extend(values)
    score = f"({' + '.join(held_sql)}) * {BM25_K1 + 1} / (1 + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * e.chars / ?))"
    # The scanned entries are scored by rowid alone; only the `limit` best are read as EntryRows (their
    # computed columns: ids as text, kinds as names), not every one scanned.
    best = (
        f"SELECT rowid, score FROM (SELECT e.rowid AS rowid, {score} AS score FROM entries_fts "
        "JOIN entries e ON e.rowid = entries_fts.rowid JOIN files f ON f.id = e.file_id "
        f"WHERE entries_fts MATCH ? AND {where} ORDER BY entries_fts.rowid DESC LIMIT {FORMS_SCANNED}) "
        f"ORDER BY score DESC, rowid DESC LIMIT {int(limit)}"
    )
    rows = conn.execute(
        f"SELECT {ENTRY_COLUMNS}, best.score FROM ({best}) best JOIN entries e ON e.rowid = best.rowid "
        "JOIN files f ON f.id = e.file_id ORDER BY best.score DESC, e.rowid DESC",
        [*held_params, max(average, 1.0), _in_scope(expression, scope), *params],
    )
    return [(EntryRow._make(row[:-1]), row[-1]) for row in rows]


def _held_form(word: Word, op: str, scope: Scope | None) -> tuple[str, list]:
    """One word's part of a form match's score, as SQL and parameters (`_ranked_forms`).

    Under AND a match holds every word in some form: its weight. Under OR it holds no word as
    written, so a word without other forms counts nothing and one with them its weight if the
    entry holds one: asked within the scope when several words have other forms (`scope` given).
    """
    if op == "AND" or (len(word.forms) > 1 and scope is None):
        return "?", [word.weight]
    if len(word.forms) == 1:
        return "0", []
    return f"(CASE WHEN {_HOLDS} THEN ? ELSE 0 END)", [_in_scope(wordforms.any_form(word.forms), scope), word.weight]


def _idf(conn, term: str, count: int) -> float:
    """BM25's inverse document frequency, from how many entries hold the term (FTS5's formula), kept
    while the entry count is the same (wordforms.kept: a common word's count takes a millisecond)."""
    sql = "SELECT count(*) FROM entries_fts WHERE entries_fts MATCH ?"
    holding = wordforms.kept(conn, ("holding", term), count, lambda: conn.execute(sql, (f'"{term}"',)).fetchone()[0])
    return _idf_of(holding, count)


def _idf_of(holding: int, count: int) -> float:
    """BM25's IDF of something `holding` entries of `count` hold."""
    count = max(count, holding)  # the count may be a minute old while a backfill adds entries
    return max(1e-6, math.log((count - holding + 0.5) / (holding + 0.5)))


def _collection_stats(conn) -> tuple[int, float]:
    """(entries, average characters), kept a minute in the index's memo unless the index is small.

    A large index's average comes from its latest entries: it only sets the scale of the
    length factor, and summing every entry's size would cost tens of milliseconds.
    """
    stats = collection_stats(conn)
    high = conn.execute("SELECT max(rowid) FROM entries").fetchone()[0]  # one lookup (min and max together scan)
    now = time.monotonic()
    if stats.taken and (stats.high == high or (stats.count >= STATS_EXACT_BELOW and now - stats.at < STATS_SECONDS)):
        return stats.count, stats.average
    count = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
    if count < STATS_EXACT_BELOW:
        average = conn.execute("SELECT avg(chars) FROM entries").fetchone()[0]
    else:
        average = conn.execute(
            "SELECT avg(chars) FROM (SELECT chars FROM entries ORDER BY rowid DESC LIMIT ?)", (STATS_SAMPLE,)
        ).fetchone()[0]
    stats.at, stats.high, stats.count, stats.average, stats.taken = now, high, count, average or 0.0, True
    return count, stats.average


def collection_stats(conn: db.Connection) -> CollectionStats:
    """The collection statistics kept for the connection's index (`_collection_stats` fills them)."""
    return db.memo_of(conn).slot("query.collection_stats", CollectionStats)


def _rerank(row: EntryRow, score: float, now: float) -> float:
    """score / (1 + age / 30 days): a month-old entry counts half an equally relevant new one."""
    age_days = max(0.0, (now - row.ts / 1000) / 86400.0) if row.ts is not None else 365.0
    return score / (1.0 + age_days / RECENCY_DAYS)


def _hit(
    conn, locations: Locations, row: EntryRow, score: float | None, terms: list[str], width: int = EXCERPT_CHARS
) -> dict:
    entry = reread_entry(conn, row, locations)
    text, labels = (entry.text, entry.labels) if entry else (None, ())
    hit = _hit_json(locations, row, score, terms, text, labels, width)
    return {**hit, **exchange.call_keys(conn, locations, row)}


def _hit_json(
    locations: Locations,
    row: EntryRow,
    score: float | None,
    terms: list[str],
    text: str | None,
    labels: tuple[tuple[int, int], ...] = (),
    width: int = EXCERPT_CHARS,
) -> dict:
    """A hit's keys: the entry's, its excerpt from its reread `text` (None: unavailable) without its
    `labels`, and its score."""
    hit = entry_json(row)
    if text is None:
        hit["reason"] = unavailable_reason(row, locations)
        hit["excerpt"] = unavailable_text(hit["reason"])
        hit["stale"] = True
    else:
        hit["excerpt"] = excerpt(text, terms, width, labels=labels)
    hit["score"] = float(f"{score:.6g}") if score is not None else None
    return hit


def read(
    conn: db.Connection, locations: Locations, request: ReadRequest | str | None = None, **fields: Any
) -> ReadReply:
    """One entry's redacted text, 16,000 characters a page, reread and checked against its pointer.

    `request` is a ReadRequest; an entry id and keyword fields build one (`ReadRequest.create`).
    """
    if not isinstance(request, ReadRequest):
        request = ReadRequest.create(request, **fields)
    offset = request.offset
    sc = request_scope(conn, request)
    where, params = sc.predicate()
    wanted = [store.id_key(request.id), *params]
    rows = select_entries(conn, f"e.eid = ? AND {where} ORDER BY e.ts DESC LIMIT 50", wanted)
    current = request.session_id or session_of(conn, request.journal_path)
    preferred = [r for r in rows if current and r.session_id == current]
    if len(preferred) == 1:
        rows = preferred
    if not rows:
        return cast(ReadReply, {"action": "read", "status": "not_found", **sc.as_json()})
    if len(rows) > 1:
        return cast(
            ReadReply,
            {
                "action": "read",
                "status": "ambiguous",
                **sc.as_json(),
                "candidates": [
                    {
                        "session_id": r.session_id,
                        "timestamp": r.timestamp,
                        "kind": r.kind,
                        "cwd": r.cwd,
                        "journal": r.path,
                    }
                    for r in rows
                ],
            },
        )
    row = rows[0]
    clean = redacted_text(conn, row, locations)  # a huge entry's pages after the first come from memory
    if clean is None:
        reason = unavailable_reason(row, locations)
        return cast(ReadReply, {"action": "read", "status": "unavailable", **sc.as_json(), "reason": reason})
    total = len(clean)
    if offset > total:
        raise UserError(f"offset {offset} is past the end of this entry ({total} characters)", Arg("offset", 0))
    end = offset + PAGE_CHARS
    return cast(
        ReadReply,
        {
            "action": "read",
            "status": "ok",
            **sc.as_json(),
            "terms": list(request.terms),
            "entry": {**entry_json(row), **exchange.call_keys(conn, locations, row)},
            "text": clean[offset:end],
            "offset": offset,
            "next_offset": end if end < total else None,
            "total_chars": total,
            **({"around": exchange.around(conn, locations, row, request.around)} if request.around else {}),
            "sessions": _sessions(conn, locations, request, [row.session_id]),
        },
    )


def indexing_state(conn: db.Connection, locations: Locations) -> Indexing:
    """How far backfill has come; when incomplete, a note that results may be incomplete."""
    state = store.backfill_progress(conn)
    if state is None:
        total = len(discover(locations))
        done = conn.execute(
            "SELECT (SELECT COUNT(*) FROM files) + (SELECT COUNT(*) FROM forgotten_journals)"
        ).fetchone()[0]
        complete = total == 0
    else:
        total, done, complete = state["journals_total"], state["journals_done"], state["complete"]
    reply: Indexing = {
        "complete": bool(complete),
        "journals_indexed": min(done, total) if total else done,
        "journals_total": total,
    }
    if not complete:
        reply["note"] = (
            f"indexing is not complete ({reply['journals_indexed']} of {total} journals); results may be incomplete"
        )
    return reply
