"""What folding, phrases and the elsewhere count cost per search, on an indexed corpus.

    python -m benchmarks.search_results DB CORPUS [--rounds 5]

DB is an index of CORPUS (e.g. `pimem index --db /tmp/h.sqlite --sessions-dir benchmarks/corpus/500MB-s1`).
Times, in one process, the project searches of benchmarks/run.py (words as they are, limit 10), the same
words as quoted phrases, and project searches that find nothing in their project (so the elsewhere count
runs); prints p50 and p95 of each with how many hits were folded and phrase candidates checked.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from benchmarks import run
from pimem_index import locations, store
from pimem_index.replies import SearchReply
from pimem_index.search import query, results

ROOT = Path(__file__).resolve().parent.parent


HOME = "/home/u"  # the corpus's home
WORDS = run.COMMON_QUERIES
PHRASES = [f'"{w}"' for w in WORDS if " " in w]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def search(conn, loc, call: dict) -> SearchReply:
    """One project search of the call's `query` and other fields."""
    fields = dict(call)
    return query.search(conn, loc, fields.pop("query"), home=HOME, **fields)


def timed(conn, loc, rounds: int, calls: list[dict]) -> tuple[list[float], list[SearchReply]]:
    """Every call `rounds` times after one warm-up; the times in ms and the last replies."""
    replies = [search(conn, loc, c) for c in calls]
    times = []
    for _ in range(rounds):
        for c in calls:
            t = time.perf_counter()
            search(conn, loc, c)
            times.append((time.perf_counter() - t) * 1000)
    return times, replies


def report(name: str, times: list[float], replies: list[SearchReply]) -> None:
    folded = sum(r.get("folded", 0) for r in replies)
    checked = [r["phrases"]["checked"] for r in replies if "phrases" in r]
    stopped = sum(1 for r in replies if "phrases" in r and not r["phrases"]["complete"])
    extra = f", phrase candidates checked max {max(checked)}, stopped early {stopped}" if checked else ""
    print(
        f"{name:<28} {len(times):>4} calls  p50 {statistics.median(times):7.2f} ms  p95 {pct(times, 0.95):7.2f} ms"
        f"  max {max(times):7.2f} ms  (hits folded: {folded}{extra})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("corpus")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    conn = store.open_index(args.db)
    loc = locations.resolve(db=args.db, sessions_dirs=[args.corpus])
    cwds = [r[0] for r in conn.execute("SELECT cwd FROM files GROUP BY cwd ORDER BY count(*) DESC LIMIT 12")]
    words = [{"query": w, "scope": "project", "cwd": cwds[i % len(cwds)], "limit": 10} for i, w in enumerate(WORDS)]
    phrases = [{"query": p, "scope": "project", "cwd": cwds[i % len(cwds)], "limit": 10} for i, p in enumerate(PHRASES)]
    nothing = [{"query": w, "scope": "project", "cwd": c, "limit": 10} for w, c in needles_elsewhere(args.corpus)]
    for name, calls in (("words, project", words), ("quoted phrases, project", phrases), ("nothing here", nothing)):
        times, replies = timed(conn, loc, args.rounds, calls)
        report(name, times, replies)
        if name == "nothing here":
            shown = [r.get("elsewhere") for r in replies[:4]]
            print(f"{'':<28} elsewhere counts, e.g. {shown}")
    count_bound(conn, cwds[0], args.rounds)
    for bound in (50, 100, 200, 400):
        results.PHRASE_REREADS = bound
        times, replies = timed(conn, loc, args.rounds, phrases)
        report(f"phrases, at most {bound} reread", times, replies)


def needles_elsewhere(corpus: str) -> list[tuple[str, str]]:
    """Planted words (the corpus manifest's needles) with a project folder none of them is in."""
    manifest = json.loads((Path(corpus) / "manifest.json").read_text())
    out = []
    for rec in manifest["needles"][:20]:
        placed = {p["project"] for p in rec["placements"]}
        absent = [p for p in sorted(manifest["projects"]) if p not in placed]
        if absent:
            out.append((rec["word"], absent[0]))
    return out


def count_bound(conn, cwd: str, rounds: int) -> None:
    """The elsewhere count alone for common words (the most it costs: it stops at ELSEWHERE_MAX)."""
    from pimem_index.search.request import SearchRequest
    from pimem_index.search.scope import resolve_scope

    times = []
    for w in WORDS:
        request = SearchRequest.create(w, cwd=cwd, home=HOME)
        sc = resolve_scope(conn, "project", cwd=cwd, home=HOME)
        for _ in range(rounds):
            t = time.perf_counter()
            query._count_outside(conn, list(request.terms), query.Scope("global"), sc, request)
            times.append((time.perf_counter() - t) * 1000)
    print(
        f"{'elsewhere count, common':<28} {len(times):>4} calls  p50 {statistics.median(times):7.2f} ms  "
        f"p95 {pct(times, 0.95):7.2f} ms  max {max(times):7.2f} ms"
    )


if __name__ == "__main__":
    main()
