"""What word forms cost at query time: search with and without them, interleaved in one run.

    python -m benchmarks.wordforms_cost DB [--corpus DIR] [--before TREE] [--rounds 5]

DB is an index of the corpus (e.g. `pimem index --db DB --sessions-dir DIR`). Uses
benchmarks/run.py's query set (project scope, limit 10, needles and common words). In process,
each query runs with word forms (wordforms.MAX_FORMS as shipped) and without (0), alternately,
so both see the same load; then again with nothing kept between queries (each word's forms
and counts asked anew: the first query of a word). With --before (a checkout without word forms, e.g. made by
`git worktree add /tmp/before main`), two `pimem serve` answer the API, that code and this,
and each request goes to both in turn. The machine is shared: the ratios matter most.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import docs_figures, run
from pimem_index import locations, store
from pimem_index.search import query, wordforms

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


HOME = "/home/u"  # the corpus's home


def figures(times: list[float]) -> dict:
    return {"n": len(times), "p50": run.ms(run.pct(times, 0.5)), "p95": run.ms(run.pct(times, 0.95))}


def report(title: str, before: list[float], after: list[float]) -> dict:
    b, a = figures(before), figures(after)
    ratio = {k: round(a[k] / b[k], 2) for k in ("p50", "p95") if b[k]}
    print(f"{title}: before p50 {b['p50']} ms p95 {b['p95']} ms; after p50 {a['p50']} ms p95 {a['p95']} ms; {ratio}")
    return {"before": b, "after": a, "ratio": ratio}


def in_process(bench: run.Bench, db: Path, corpus: Path, rounds: int, cold: bool) -> dict:
    """Each query with word forms and without, alternately (which goes first alternates too);
    `cold`: nothing kept between queries (wordforms.forget_kept), as for words never asked before."""
    conn = store.open_index(str(db))
    loc = locations.resolve(db=str(db), sessions_dirs=[str(corpus)])
    shipped = wordforms.MAX_FORMS
    times: dict[str, dict[str, list[float]]] = {}

    def timed(q: dict, forms: int) -> float:
        wordforms.MAX_FORMS = forms
        if cold:
            wordforms.forget_kept(conn)
        t = time.perf_counter()
        query.search(conn, loc, q["q"] or None, scope="project", cwd=q["cwd"], limit=10, home=HOME)
        return time.perf_counter() - t

    qs = bench.queries()
    for q in qs:  # warm-up, both ways
        timed(q, 0), timed(q, shipped)
    for r in range(rounds):
        for i, q in enumerate(qs):
            order = (0, shipped) if (i + r) % 2 else (shipped, 0)
            for forms in order:
                group = times.setdefault(q["group"], {"before": [], "after": []})
                group["after" if forms else "before"].append(timed(q, forms))
    wordforms.MAX_FORMS = shipped
    out = {
        "all": report(
            "search" + (" (nothing kept)" if cold else ""),
            *[[t for g in times.values() for t in g[k]] for k in ("before", "after")],
        )
    }
    for name, g in times.items():
        out[name] = report(f"  {name}", g["before"], g["after"])
    conn.close()
    return out


def serve(bench: run.Bench, tree: Path, db: Path, port: int, name: str):
    env = dict(bench.env, PYTHONPATH=str(tree))
    log = open(bench.work / name, "wb")
    cmd = [run.PY, "-m", "pimem_index", "serve", "--db", str(db), "--sessions-dir", str(bench.corpus)]
    cmd += ["--port", str(port), "--host", "127.0.0.1"]
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(tree), start_new_session=True)
    return proc, log


def api(bench: run.Bench, db: Path, before_tree: Path, rounds: int) -> dict:
    """The same requests to a server of each code, in turn (which goes first alternates)."""
    token = bench.token(db)
    servers = {}
    try:
        for name, tree in (("before", before_tree), ("after", ROOT)):
            port = run.free_port()
            proc, log = serve(bench, tree, db, port, f"wordforms-{name}.log")
            servers[name] = (proc, log, port)
            if not bench.wait_ready(port, token, proc):
                raise SystemExit(f"pimem serve ({name}) did not answer: see {bench.work}/wordforms-{name}.log")
        conns = {n: http.client.HTTPConnection("127.0.0.1", s[2], timeout=60) for n, s in servers.items()}
        bench.wait_indexed(conns["after"], token, timeout=600)
        qs = bench.queries()
        for q in qs:
            for c in conns.values():
                bench.http_get(c, bench.api_path(q), token)
        times: dict[str, list[float]] = {"before": [], "after": []}
        for r in range(rounds):
            for i, q in enumerate(qs):
                for name in ("before", "after") if (i + r) % 2 else ("after", "before"):
                    t = time.perf_counter()
                    bench.http_get(conns[name], bench.api_path(q), token)
                    times[name].append(time.perf_counter() - t)
        return report("API search", times["before"], times["after"])
    finally:
        for proc, log, _port in servers.values():
            bench.stop(proc)
            log.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--corpus", default=str(HERE / "corpus" / "500MB-s1"))
    ap.add_argument("--before", default=None, help="a checkout without word forms: compare the API with it")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work", default=None)
    ap.add_argument("--no-docs", action="store_true", help="do not write the figures into docs/performance.md")
    args = ap.parse_args()
    bench = run.Bench(argparse.Namespace(work=args.work, rounds=args.rounds))
    bench.corpus = Path(args.corpus).resolve()
    with contextlib.suppress(FileNotFoundError):
        bench.manifest = json.loads((bench.corpus / "manifest.json").read_text())
    print(f"load {os.getloadavg()}; {Path(args.db).stat().st_size / run.MB:.0f} MB index; corpus {bench.corpus}")
    result = {
        "in_process": in_process(bench, Path(args.db), bench.corpus, args.rounds, cold=False),
        "in_process_nothing_kept": in_process(bench, Path(args.db), bench.corpus, args.rounds, cold=True),
    }
    if args.before:
        result["api"] = api(bench, Path(args.db), Path(args.before).resolve(), args.rounds)
    print(json.dumps(result))
    if not args.no_docs:
        docs_figures.replace_between(DOCS_START, DOCS_END, docs_table(result, args.rounds))
    return 0


DOCS_START = "<!-- word-form cost: written by benchmarks/wordforms_cost.py -->"
DOCS_END = "<!-- end of word-form cost -->"
ROWS: tuple[tuple[str, str | None, str], ...] = (
    ("in_process", "needle", "search, rare words (needles)"),
    ("in_process", "common", "search, common words"),
    ("in_process_nothing_kept", "needle", "search, nothing kept: rare words"),
    ("in_process_nothing_kept", "common", "search, nothing kept: common words"),
    ("api", None, "HTTP API search, against the code before word forms"),
)


def docs_table(result: dict, rounds: int) -> str:
    """The comparison as docs/performance.md shows it: p50 / p95 without and with word forms, and the ratios."""
    lines = [
        f"`benchmarks/wordforms_cost.py`, {rounds} rounds interleaved, load at the end "
        f"{[round(x, 2) for x in os.getloadavg()]}:",
        "",
        "| measured | without forms p50 / p95 | with forms p50 / p95 | ratio p50 / p95 |",
        "|---|---|---|---|",
    ]
    for part, group, title in ROWS:
        found = result.get(part, {})
        found = found.get(group) if group else found
        if found:
            b, a, r = found["before"], found["after"], found["ratio"]
            lines.append(
                f"| {title} | {b['p50']} / {b['p95']} ms | {a['p50']} / {a['p95']} ms | "
                f"{r.get('p50', '-')} / {r.get('p95', '-')} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
