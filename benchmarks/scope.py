"""Scoped ranking: a project search for a common word, with and without the scope term.

    .venv/bin/python -m benchmarks.scope benchmarks/corpus/500MB-s1

Indexes the corpus once into benchmarks/out/scope-<name>.sqlite (reused afterwards), then
ranks ten very common words in the eight largest projects both ways in the same run: with the
FTS5 scope term (what pimem does) and with only the SQL scope predicate (the baseline).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

from pimem_index import store
from pimem_index.index import indexer
from pimem_index.locations import resolve
from pimem_index.search import query, scope

ROOT = Path(__file__).resolve().parent

WORDS = ["return", "self", "import", "the", "error", "file", "def", "value", "test", "data"]


def main(corpus: str) -> None:
    os.environ.setdefault("PI_CODING_AGENT_DIR", str(ROOT / "out" / "work" / "agent"))  # never the user's sessions
    db_path = ROOT / "out" / f"scope-{Path(corpus).name}.sqlite"
    db_path.parent.mkdir(parents=True, exist_ok=True)
    locations = resolve(str(db_path), [corpus])
    conn = store.open_index(db_path)
    indexer.index_all(conn, locations)
    cwds = [r[0] for r in conn.execute("SELECT cwd FROM files GROUP BY cwd ORDER BY COUNT(*) DESC")]
    entries = conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    print(f"{corpus}: {entries:,} entries in {len(cwds)} project folders")
    results = {}
    for label, use_scope in (("scope term", True), ("SQL predicate only", False)):
        times = []
        for cwd in cwds[:8]:
            sc = scope.resolve_scope(conn, "project", cwd=cwd)
            where, params = sc.predicate()
            for word in WORDS:
                started = time.perf_counter()
                query._ranked(conn, [word], "AND", sc if use_scope else scope.Scope("global"), where, params)
                times.append((time.perf_counter() - started) * 1000)
        times.sort()
        results[label] = statistics.median(times)
        print(f"{label:>20}: p50 {results[label]:.2f} ms, p95 {times[int(len(times) * 0.95)]:.2f} ms")
    print(f"ratio (scope term / baseline, p50): {results['scope term'] / results['SQL predicate only']:.2f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "corpus" / "500MB-s1"))
