"""The index's size per table and index (SQLite's dbstat), as a share of the journals' bytes, against
another install indexing the same corpus in the same run; writes the table to docs/performance.md.

    python -m benchmarks.index_size CORPUS [--before TREE] [--no-docs]

TREE is another checkout with its own .venv (e.g. `git worktree add /tmp/base <commit>`). Sizes in
bytes do not depend on the machine's load, unlike times; the CPU-seconds of each `pimem index` (all its
processes) are given as a ratio, the other figure that holds on a busy machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.docs_figures import replace_between

HERE = Path(__file__).resolve().parent.parent
DOCS_START = "<!-- index size figures: written by benchmarks/index_size.py -->"
DOCS_END = "<!-- end of index size figures -->"


def journal_bytes(corpus: Path) -> int:
    return sum(p.stat().st_size for p in corpus.rglob("*.jsonl"))


def build(tree: Path, corpus: Path, db: Path) -> tuple[dict[str, int], int, float]:
    """Index `corpus` from nothing with `tree`'s pimem: (bytes per table and index, file bytes, CPU-seconds)."""
    db.unlink(missing_ok=True)
    env = dict(os.environ, PI_CODING_AGENT_DIR=tempfile.mkdtemp(prefix="pimem-size-"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = [str(tree / ".venv" / "bin" / "pimem"), "index", "--db", str(db), "--sessions-dir", str(corpus), "--json"]
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    with sqlite3.connect(db) as conn:
        sizes = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
    return sizes, db.stat().st_size, cpu


def table(corpus: Path, after: tuple, before: tuple | None) -> str:
    total = journal_bytes(corpus)
    both = {**(before[0] if before else {}), **after[0]}
    names = sorted(both, key=lambda n: -max(after[0].get(n, 0), before[0].get(n, 0) if before else 0))
    head = (
        "| table or index | this tree | before |\n|---|---|---|" if before else "| table or index | share |\n|---|---|"
    )
    lines = [head]

    def share(n: int) -> str:
        return f"{n / total * 100:.3f}%" if n else "-"

    lines.append(f"| **the index file** | **{share(after[1])}** |" + (f" **{share(before[1])}** |" if before else ""))
    for name in names:
        a = after[0].get(name, 0)
        b = before[0].get(name, 0) if before else 0
        if max(a, b) < total / 10_000:
            continue  # below 0.01%: files, meta, the small partial indexes
        lines.append(f"| `{name}` | {share(a)} |" + (f" {share(b)} |" if before else ""))
    cpu = f"; `pimem index` CPU {after[2]:.1f} s" + (
        f" against {before[2]:.1f} s ({after[2] / before[2]:.2f}x)" if before else ""
    )
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    intro = (
        f"Run {stamp} at commit {commit.stdout.strip()}: {total / 1e6:.1f} MB of journals ({corpus.name}){cpu}. "
        "Shares of the journals' bytes (SQLite's `dbstat`, pages in use)."
    )
    return intro + "\n\n" + "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--before", type=Path, help="another checkout with its own .venv, measured in the same run")
    ap.add_argument("--no-docs", action="store_true", help="print only; leave docs/performance.md as it is")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pimem-size-") as tmp:
        before = build(args.before, args.corpus, Path(tmp) / "before.sqlite") if args.before else None
        after = build(HERE, args.corpus, Path(tmp) / "after.sqlite")
    text = table(args.corpus, after, before)
    print(text)
    if not args.no_docs and not replace_between(DOCS_START, DOCS_END, text):
        print(f"docs/performance.md has no {DOCS_START} markers", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
