"""Ranking without positions against FTS5's bm25() with positions, on the same corpus.

    python benchmarks/ranking.py [CORPUS_DIR] [--queries 200] [--seed 7]

The index keeps no term positions (store.FTS_OPTIONS, detail=none), so search ranks with
its own BM25 over which terms an entry holds (query._ranked). This builds the index twice,
once as it is and once with positions (FTS5's bm25() then works), and runs the same
known-item queries on both: 1-3 words taken from a random entry, global scope, all terms.
A ranking is better when it puts that entry higher (MRR, found at rank 1, in the top 10).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from floor import positions_fts_options  # noqa: E402

from pimem_index import indexer, query, reread, scope, store  # noqa: E402
from pimem_index.locations import resolve  # noqa: E402

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="?", default=str(ROOT / "corpus" / "500MB-s1"))
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="pimem-ranking-", dir=os.environ.get("PIMEM_BENCH_TMP"))
    os.environ["PI_CODING_AGENT_DIR"] = work  # never your own ~/.pi/agent/sessions
    ours = build(args.corpus, os.path.join(work, "ours.sqlite"), store.FTS_OPTIONS)
    positions = build(args.corpus, os.path.join(work, "positions.sqlite"), positions_fts_options())
    locations = resolve(os.path.join(work, "ours.sqlite"), [args.corpus])
    everything = scope.Scope("global")
    rng = random.Random(args.seed)
    rowids = [r[0] for r in ours.execute("SELECT rowid FROM entries WHERE chars BETWEEN 100 AND 50000")]

    def holding(term: str) -> int:
        return ours.execute("SELECT count(*) FROM entries_fts WHERE entries_fts MATCH ?", (f'"{term}"',)).fetchone()[0]

    ranks: dict[str, list[int | None]] = {"positions (FTS5 bm25)": [], "no positions (ours)": []}
    overlap = []
    while len(ranks["no positions (ours)"]) < args.queries:
        rowid = rng.choice(rowids)
        row = reread.select_entries(ours, "e.rowid = ?", (rowid,))[0]
        text = reread.reread(ours, row, locations) or ""
        words = sorted({w.lower() for w in WORD.findall(text[:20_000]) if len(w) > 3 and not w.isdigit()})
        words = [w for w in rng.sample(words, min(12, len(words))) if 3 <= holding(w) <= 5000]
        if len(words) < 2:
            continue
        terms = rng.sample(words, rng.choice([1, 2, 2, 3]) if len(words) >= 3 else 1)
        expression = "(" + " AND ".join(f'"{t}"' for t in terms) + ")"
        theirs = [
            r[0]
            for r in positions.execute(
                "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? ORDER BY bm25(entries_fts) LIMIT 100",
                (expression,),
            )
        ]
        mine = [row.rowid for row, _score in query._ranked(ours, terms, "AND", everything, "1", [])][:100]
        for name, ranked in (("positions (FTS5 bm25)", theirs), ("no positions (ours)", mine)):
            ranks[name].append(ranked.index(rowid) + 1 if rowid in ranked else None)
        if theirs:
            overlap.append(len(set(theirs[:10]) & set(mine[:10])) / min(10, len(theirs)))
    print(f"{args.queries} known-item queries (1-3 words from a random entry), seed {args.seed}")
    for name, found in ranks.items():
        n = len(found)
        mrr = sum(1 / r for r in found if r) / n
        print(
            f"  {name:>22}: MRR {mrr:.3f}, rank 1 {sum(r == 1 for r in found) / n:.0%}, "
            f"top 10 {sum(bool(r) and r <= 10 for r in found) / n:.0%}, top 100 {sum(bool(r) for r in found) / n:.0%}"
        )
    print(f"  top-10 lists in common: {sum(overlap) / len(overlap):.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
