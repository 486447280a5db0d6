"""CPU time of the index's queries (search, read, usage, sessions) in this checkout against another
install, each over its own index of the same corpus, in interleaved rounds of the same run.

    python -m benchmarks.query_cpu CORPUS --before TREE [--rounds 5] [--work DIR] [--no-docs]

TREE is another checkout with its own .venv. Each round runs one child process per install (before,
then this one, then the other way round the next round); a child opens its index, answers the whole
query set once to warm up, then again measuring each query's CPU time (`time.process_time`). Prints
p50 and p95 per family and this checkout's ratio to TREE's (lower is better). CPU time, not wall time:
the machine is shared. The child is this file run by each install's python, so it imports that
install's pimem_index. Writes the table to docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
DOCS_START = "<!-- query cpu figures: written by benchmarks/query_cpu.py -->"
DOCS_END = "<!-- end of query cpu figures -->"
WORDS = [
    "error", "test", "function", "import", "deploy", "config", "database", "timeout", "migration", "token",
    "refactor", "docker", "schema", "async", "cache", "retry", "parser", "build", "login", "queue",
]  # fmt: skip
PAIRS = [("error", "timeout"), ("test", "database"), ("deploy", "config"), ("cache", "retry"), ("import", "schema")]
USAGE_BY = ["day", "week", "model", "project", "session"]


def child(db_path: str, sessions_dir: str) -> None:
    """Answer the query set twice (the first warms up); print each family's CPU seconds per query."""
    from pimem_index import store
    from pimem_index.locations import resolve
    from pimem_index.search import query
    from pimem_index.search.request import ReadRequest, SearchRequest, SessionsRequest, UsageRequest
    from pimem_index.session import activity

    os.environ["PIMEM_SESSIONS_DIRS"] = sessions_dir
    locations = resolve(db=db_path)
    conn = store.open_index(db_path)
    ids = [r[0] for r in conn.execute("SELECT id FROM entries WHERE id NOT LIKE 'L%' ORDER BY id")]
    ids = ids[:: max(1, len(ids) // 20)][:20]
    since = "2000-01-01"
    texts = WORDS + [" ".join(pair) for pair in PAIRS]

    def families() -> dict[str, list]:
        return {
            "search": [
                lambda q=q: query.search(conn, locations, SearchRequest.create(q, scope="global")) for q in texts
            ]
            + [
                lambda: query.search(conn, locations, SearchRequest.create(None, scope="global")),
                lambda: query.search(conn, locations, SearchRequest.create("error", scope="global", since=since)),
            ],
            "read": [lambda i=i: query.read(conn, locations, ReadRequest.create(i, scope="global")) for i in ids],
            "usage": [lambda b=b: activity.usage(conn, UsageRequest.create(b)) for b in USAGE_BY]
            + [lambda: activity.usage(conn, UsageRequest.create("model", since=since))],
            "sessions": [
                lambda: activity.sessions(conn, SessionsRequest.create(), locations),
                lambda: activity.sessions(conn, SessionsRequest.create(offset=50), locations),
                lambda: activity.sessions(conn, SessionsRequest.create(since=since), locations),
            ],
        }

    out: dict[str, list[float]] = {}
    for measured in (False, True):
        for family, calls in families().items():
            for call in calls:
                start = time.process_time()
                call()
                if measured:
                    out.setdefault(family, []).append(time.process_time() - start)
    print(json.dumps(out))


def build(tree: Path, corpus: Path, db: Path) -> None:
    """Index the corpus from nothing with `tree`'s pimem (unless `db` is there already)."""
    if db.exists():
        return
    env = dict(os.environ, PI_CODING_AGENT_DIR=tempfile.mkdtemp(prefix="pimem-qcpu-"))
    command = [str(tree / ".venv" / "bin" / "pimem"), "index", "--db", str(db), "--sessions-dir", str(corpus)]
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)


def run_child(tree: Path, db: Path, corpus: Path) -> dict[str, list[float]]:
    env = dict(os.environ, PI_CODING_AGENT_DIR=tempfile.mkdtemp(prefix="pimem-qcpu-"))
    command = [str(tree / ".venv" / "bin" / "python"), str(Path(__file__).resolve()), "--child", str(db), str(corpus)]
    done = subprocess.run(command, check=True, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    return json.loads(done.stdout)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--before", type=Path, required=True, help="another checkout with its own .venv")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work", type=Path, default=HERE / "benchmarks" / "out" / "query_cpu")
    ap.add_argument("--no-docs", action="store_true", help="print only; leave docs/performance.md as it is")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    trees = {"before": args.before.resolve(), "this": HERE}
    dbs = {name: args.work / f"{name}.sqlite" for name in trees}
    for name, tree in trees.items():
        dbs[name].unlink(missing_ok=True)
        build(tree, args.corpus, dbs[name])
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    for n in range(args.rounds):
        order = list(trees) if n % 2 == 0 else list(reversed(trees))
        for name in order:
            for family, values in run_child(trees[name], dbs[name], args.corpus).items():
                samples[name].setdefault(family, []).extend(values)
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    before = subprocess.run(
        ["git", "-C", str(trees["before"]), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    lines = [
        f"{args.rounds} interleaved rounds over {args.corpus.name}, commit {commit.stdout.strip()} against "
        f"{before.stdout.strip()}: CPU ms per query (`time.process_time`), p50 and p95; ratio this / before.",
        "",
        "| family | before p50 | this p50 | ratio | before p95 | this p95 | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for family in samples["this"]:
        b, a = samples["before"][family], samples["this"][family]
        b50, a50 = statistics.median(b), statistics.median(a)
        b95, a95 = percentile(b, 0.95), percentile(a, 0.95)
        lines.append(
            f"| {family} | {b50 * 1e3:.2f} | {a50 * 1e3:.2f} | {a50 / b50:.2f}x "
            f"| {b95 * 1e3:.2f} | {a95 * 1e3:.2f} | {a95 / b95:.2f}x |"
        )
    text = "\n".join(lines)
    print(text)
    from benchmarks.docs_figures import replace_between  # the parent only: a child imports no benchmark

    if not args.no_docs and not replace_between(DOCS_START, DOCS_END, text):
        print(f"docs/performance.md has no {DOCS_START} markers", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main())
