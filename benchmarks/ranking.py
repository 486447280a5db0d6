"""Ranking without positions against FTS5's bm25() with positions, and query words in other forms.

    python -m benchmarks.ranking [CORPUS_DIR] [--queries 200] [--seed 7] [--no-docs]

The index keeps no term positions (store.FTS_OPTIONS, detail=none), so search ranks with
its own BM25 over which terms an entry holds (query._ranked). This builds the index three times
in the same run: as it is, with positions (plain FTS5 bm25()), and with positions and FTS5's porter
stemmer (bm25() over stems: every form of a word is the same term). It runs two query sets, each
ranked by both bm25() baselines, by our ranking with exact words only (as before word forms:
query._ranked) and by our ranking with word forms (query._matches, for 100 hits). Known-item queries:
1-3 words taken from a random entry, global scope, all terms. Word-form queries: the same,
with each word that has one replaced by another form of it (plural or singular, -ing, -ed,
-es: a word of the corpus the stemmer joins to it) that the entry does not hold, as a person
or an agent phrases it. A ranking is better when it puts that entry higher (MRR, found at
rank 1, in the top 10, in the top 100). The table goes into docs/performance.md between the
markers named for the corpus folder (`docs_figures`).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import tempfile
from pathlib import Path

from benchmarks import docs_figures
from benchmarks.floor import positions_fts_options
from pimem_index import store
from pimem_index.index import indexer
from pimem_index.locations import resolve
from pimem_index.search import query, reread, scope, wordforms

ROOT = Path(__file__).resolve().parent


WORD = re.compile(r"[^\W_]+")


def build(corpus: str, db_path: str, fts_options: str):
    """Index the corpus into db_path with the given FTS5 options."""
    saved = store.FTS_OPTIONS
    store.FTS_OPTIONS = fts_options
    try:
        conn = store.open_index(db_path)
        indexer.index_all(conn, resolve(db_path, [corpus]))
    finally:
        store.FTS_OPTIONS = saved
    return conn


def other_forms(word: str) -> list[str]:
    """Other forms a person might type for `word`: plural or singular, -ing, -ed (checked against FTS5 later)."""
    forms = [word + "s", word + "es", word + "ing", word + "ed"]
    if word.endswith("e"):
        forms += [word + "d", word[:-1] + "ing"]
    for suffix in ("es", "s", "ing", "ed", "d"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            forms += [base, base + "e", base + "s", base + "ing", base + "ed"]
    return [f for f in dict.fromkeys(forms) if f != word]


def holding(conn, term: str) -> int:
    """How many entries of the index hold the term."""
    return conn.execute("SELECT count(*) FROM entries_fts WHERE entries_fts MATCH ?", (f'"{term}"',)).fetchone()[0]


def word_form(word: str, held: set[str], conn, rng: random.Random) -> str | None:
    """Another form of `word` that the corpus holds, the entry does not, and the index's stemmer joins to it."""
    stem = wordforms.stem(word)
    forms = [f for f in other_forms(word) if f not in held and holding(conn, f) and wordforms.stem(f) == stem]
    return rng.choice(forms) if forms else None


def ranks_of(conn, terms: list[str], rowid: int, everything, with_forms: bool) -> int | None:
    """The entry's rank among the first 100 for the terms (all of them, global scope), or None."""
    if with_forms:
        mine = [row.rowid for row, _score in query._matches(conn, terms, "AND", everything, "1", [], 100).ranked]
    else:
        mine = [row.rowid for row, _score in query._ranked(conn, terms, "AND", everything, "1", [])]
    mine = mine[:100]
    return mine.index(rowid) + 1 if rowid in mine else None


def bm25_rank(conn, terms: list[str], rowid: int) -> tuple[int | None, list[int]]:
    """The entry's rank among FTS5 bm25()'s first 100 for all the terms, and those 100 rowids."""
    expression = "(" + " AND ".join(f'"{t}"' for t in terms) + ")"
    sql = "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? ORDER BY bm25(entries_fts) LIMIT 100"
    theirs = [r[0] for r in conn.execute(sql, (expression,))]
    return (theirs.index(rowid) + 1 if rowid in theirs else None), theirs


def porter_fts_options() -> str:
    """The positions index's options with FTS5's porter stemmer over the same tokenizer."""
    return positions_fts_options().replace("tokenize='", "tokenize='porter ")


def figures(ranks: list[int | None]) -> tuple[float, float, float, float]:
    """MRR, and the shares found at rank 1, in the top 10 and in the top 100."""
    n = len(ranks)
    return (
        sum(1 / r for r in ranks if r) / n,
        sum(r == 1 for r in ranks) / n,
        sum(r is not None and r <= 10 for r in ranks) / n,
        sum(bool(r) for r in ranks) / n,
    )


def report(title: str, ranks: dict[str, list[int | None]]) -> None:
    print(title)
    for name, found in ranks.items():
        mrr, first, top10, top100 = figures(found)
        print(f"  {name:>28}: MRR {mrr:.3f}, rank 1 {first:.0%}, top 10 {top10:.0%}, top 100 {top100:.0%}")


def docs_table(corpus: str, queries: int, seed: int, sets: dict[str, dict[str, list[int | None]]]) -> str:
    """The figures as the markdown table docs/performance.md shows."""
    lines = [
        f"`benchmarks/ranking.py` on `{os.path.basename(os.path.normpath(corpus))}`, {queries} queries a set, "
        f"seed {seed}:",
        "",
        "| query set | ranking | MRR | rank 1 | top 10 | top 100 |",
        "|---|---|---|---|---|---|",
    ]
    for set_name, ranks in sets.items():
        for name, found in ranks.items():
            mrr, first, top10, top100 = figures(found)
            lines.append(f"| {set_name} | {name} | {mrr:.3f} | {first:.0%} | {top10:.0%} | {top100:.0%} |")
    return "\n".join(lines)


def docs_markers(corpus: str) -> tuple[str, str]:
    name = os.path.basename(os.path.normpath(corpus))
    start = f"<!-- ranking figures for {name}: written by benchmarks/ranking.py -->"
    return start, f"<!-- end of ranking figures for {name} -->"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="?", default=str(ROOT / "corpus" / "500MB-s1"))
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-docs", action="store_true", help="do not write the figures into docs/performance.md")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="pimem-ranking-", dir=os.environ.get("PIMEM_BENCH_TMP"))
    os.environ["PI_CODING_AGENT_DIR"] = work  # never your own ~/.pi/agent/sessions
    ours = build(args.corpus, os.path.join(work, "ours.sqlite"), store.FTS_OPTIONS)
    positions = build(args.corpus, os.path.join(work, "positions.sqlite"), positions_fts_options())
    porter = build(args.corpus, os.path.join(work, "porter.sqlite"), porter_fts_options())
    locations = resolve(os.path.join(work, "ours.sqlite"), [args.corpus])
    everything = scope.Scope("global")
    rng = random.Random(args.seed)
    rowids = [r[0] for r in ours.execute("SELECT rowid FROM entries WHERE chars BETWEEN 100 AND 50000")]
    before, after = "ours, exact words (before)", "ours, with word forms"
    bm25, stems = "positions (FTS5 bm25)", "positions, porter (FTS5 bm25)"
    known: dict[str, list[int | None]] = {bm25: [], stems: [], before: [], after: []}
    forms: dict[str, list[int | None]] = {bm25: [], stems: [], before: [], after: []}
    overlap = []
    while len(known[after]) < args.queries or len(forms[after]) < args.queries:
        rowid = rng.choice(rowids)
        row = reread.select_entries(ours, "e.rowid = ?", (rowid,))[0]
        text = reread.reread(ours, row, locations) or ""
        held = {w.lower() for w in WORD.findall(text)}
        words = sorted({w.lower() for w in WORD.findall(text[:20_000]) if len(w) > 3 and not w.isdigit()})
        words = [w for w in rng.sample(words, min(12, len(words))) if 3 <= holding(ours, w) <= 5000]
        if len(words) < 2:
            continue
        terms = rng.sample(words, rng.choice([1, 2, 2, 3]) if len(words) >= 3 else 1)
        if len(known[after]) < args.queries:
            rank, theirs = bm25_rank(positions, terms, rowid)
            known[bm25].append(rank)
            known[stems].append(bm25_rank(porter, terms, rowid)[0])
            known[before].append(ranks_of(ours, terms, rowid, everything, False))
            known[after].append(ranks_of(ours, terms, rowid, everything, True))
            mine = [row.rowid for row, _score in query._ranked(ours, terms, "AND", everything, "1", [])][:10]
            if theirs:
                overlap.append(len(set(theirs[:10]) & set(mine)) / min(10, len(theirs)))
        if len(forms[after]) < args.queries:
            varied = [word_form(t, held, ours, rng) or t for t in terms]
            if varied != terms:
                forms[bm25].append(bm25_rank(positions, varied, rowid)[0])
                forms[stems].append(bm25_rank(porter, varied, rowid)[0])
                forms[before].append(ranks_of(ours, varied, rowid, everything, False))
                forms[after].append(ranks_of(ours, varied, rowid, everything, True))
    report(f"{args.queries} known-item queries (1-3 words from a random entry), seed {args.seed}", known)
    print(f"  top-10 lists in common, positions and ours: {sum(overlap) / len(overlap):.0%}")
    report(
        f"{args.queries} word-form queries (the same, each word that has one in another form the entry does not hold)",
        forms,
    )
    if not args.no_docs:
        table = docs_table(args.corpus, args.queries, args.seed, {"known items": known, "word forms": forms})
        if docs_figures.replace_between(*docs_markers(args.corpus), table):
            print("wrote the figures into docs/performance.md")
        else:
            print("docs/performance.md has no markers for this corpus: {} ... {}".format(*docs_markers(args.corpus)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
