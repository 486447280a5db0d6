"""What word forms cost at query time: search with and without them, interleaved in one run.

    python -m benchmarks.wordforms_cost DB [--corpus DIR] [--against TREE] [--before TREE] [--rounds 5]

DB is an index of the corpus (e.g. `pimem index --db DB --sessions-dir DIR`). Uses
benchmarks/run.py's query set (project scope, limit 10, needles and common words) and rare
forms: words that 1-5 entries hold whose other form many entries hold (issue 28), each searched
in the project of an entry holding it. In process, each query runs with word forms
(wordforms.MAX_FORMS as shipped) and without (0: its exact search), alternately, so both see
the same load, timed in CPU seconds; then again with nothing kept between queries (each word's
forms and counts asked anew: the first query of a word). With --against (another checkout
reading the same index, e.g. `git worktree add --detach /tmp/base main`), a process of that
code and one of this code get each query in turn, each timing its own CPU. With --before
(a checkout without word forms), two `pimem serve` answer the API, that code and this, and
each request goes to both in turn. The machine is shared: the ratios matter most.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
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


def report(
    title: str, before: list[float], after: list[float], hits: tuple[list[int], list[int]] | None = None
) -> dict:
    """p50 and p95 of each side and their ratio (after / before); `hits`: each side's results per query."""
    b, a = figures(before), figures(after)
    ratio = {k: round(a[k] / b[k], 2) for k in ("p50", "p95") if b[k]}
    out = {"before": b, "after": a, "ratio": ratio}
    said = ""
    if hits is not None:
        out["hits"] = {"before": mean_hits(hits[0]), "after": mean_hits(hits[1])}
        said = f"; hits per query {out['hits']['before']} / {out['hits']['after']}"
    print(
        f"{title}: before p50 {b['p50']} ms p95 {b['p95']} ms; after p50 {a['p50']} ms p95 {a['p95']} ms; {ratio}{said}"
    )
    return out


def mean_hits(counts: list[int]) -> float | None:
    return round(sum(counts) / len(counts), 1) if counts else None


def in_process(bench: run.Bench, db: Path, corpus: Path, rounds: int, cold: bool) -> dict:
    """Each query with word forms and without, alternately (which goes first alternates too);
    `cold`: nothing kept between queries (wordforms.forget_kept), as for words never asked before."""
    conn = store.open_index(str(db))
    loc = locations.resolve(db=str(db), sessions_dirs=[str(corpus)])
    shipped = wordforms.MAX_FORMS
    times: dict[str, dict[str, list[float]]] = {}
    hits: dict[str, dict[str, list[int]]] = {}

    def timed(q: dict, forms: int) -> float:
        wordforms.MAX_FORMS = forms
        if cold:
            wordforms.forget_kept(conn)
        t = time.process_time()
        reply = query.search(conn, loc, q["q"] or None, scope="project", cwd=q["cwd"], limit=10, home=HOME)
        spent = time.process_time() - t
        hits.setdefault(q["group"], {"before": [], "after": []})["after" if forms else "before"].append(
            len(reply["results"])
        )
        return spent

    qs = bench.queries() + rare_forms(conn)
    for q in qs:  # warm-up, both ways
        timed(q, 0), timed(q, shipped)
    hits.clear()
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
            [t for g in times.values() for t in g["before"]],
            [t for g in times.values() for t in g["after"]],
        )
    }
    for name, g in times.items():
        out[name] = report(f"  {name}", g["before"], g["after"], (hits[name]["before"], hits[name]["after"]))
    if "rare_form" in times:  # the rare word with its forms against its common form as written
        out["rare_vs_common"] = report(
            "  rare_form with forms vs its common form without",
            times["common_form"]["before"],
            times["rare_form"]["after"],
            (hits["common_form"]["before"], hits["rare_form"]["after"]),
        )
    conn.close()
    return out


RARE_HELD = (1, 5)  # entries holding a rare form as written
COMMON_OTHER = 1000  # entries holding its most common other form, at least


def rare_forms(conn, n: int = 20, seed: int = 7) -> list[dict]:
    """Up to `n` words that RARE_HELD entries hold whose other form (wordforms.of) COMMON_OTHER or more
    hold, each with the folder of an entry holding it (its project scope), chosen by `seed`; and
    that common form, searched in the same folder (group `common_form`)."""
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.wordforms_vocab USING fts5vocab(main, entries_fts, row)")
    held = dict(conn.execute("SELECT term, doc FROM temp.wordforms_vocab"))
    words = sorted(w for w, n_ in held.items() if RARE_HELD[0] <= n_ <= RARE_HELD[1] and w.isalpha() and len(w) > 4)
    random.Random(seed).shuffle(words)
    found: list[dict] = []
    for word in words:
        common = max(wordforms.of(word)[1:], key=lambda f: held.get(f, 0), default=None)
        if common is None or held.get(common, 0) < COMMON_OTHER:
            continue
        cwd = conn.execute(
            "SELECT f.cwd FROM entries_fts JOIN entries e ON e.rowid = entries_fts.rowid "
            "JOIN files f ON f.id = e.file_id WHERE entries_fts MATCH ? AND f.cwd IS NOT NULL LIMIT 1",
            (f'"{word}"',),
        ).fetchone()
        if cwd:
            found.append({"group": "rare_form", "q": word, "cwd": cwd[0]})
            found.append({"group": "common_form", "q": common, "cwd": cwd[0]})
        if len(found) == 2 * n:
            break
    return found


# One process of a checkout's code searching the index: a query (JSON) a line in, its CPU seconds a line out.
WORKER = """
import json, sys, time
from pimem_index import locations, store
from pimem_index.search import query
db, corpus, home = sys.argv[1:4]
conn = store.open_index(db)
loc = locations.resolve(db=db, sessions_dirs=[corpus])
for line in sys.stdin:
    q = json.loads(line)
    t = time.process_time()
    reply = query.search(conn, loc, q["q"] or None, scope="project", cwd=q["cwd"], limit=10, home=home)
    print(json.dumps({"cpu": time.process_time() - t, "hits": len(reply["results"])}), flush=True)
"""


def against(bench: run.Bench, db: Path, corpus: Path, tree: Path, rounds: int) -> dict:
    """The same queries in a process of `tree`'s code (before) and one of this code (after), in turn
    (which goes first alternates); each times its search in CPU seconds."""
    workers = {}
    for name, code in (("before", tree), ("after", ROOT)):
        workers[name] = subprocess.Popen(
            [run.PY, "-c", WORKER, str(db), str(corpus), HOME],
            cwd=str(code),
            env=dict(os.environ, PYTHONPATH=str(code), PI_CODING_AGENT_DIR=str(bench.work)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def timed(name: str, q: dict) -> float:
        proc = workers[name]
        assert proc.stdin and proc.stdout
        proc.stdin.write(json.dumps(q) + "\n")
        proc.stdin.flush()
        return float(json.loads(proc.stdout.readline())["cpu"])

    conn = store.open_index(str(db))
    qs = bench.queries() + rare_forms(conn)
    conn.close()
    times: dict[str, dict[str, list[float]]] = {}
    try:
        for q in qs:  # warm-up
            timed("before", q), timed("after", q)
        for r in range(rounds):
            for i, q in enumerate(qs):
                group = times.setdefault(q["group"], {"before": [], "after": []})
                for name in ("before", "after") if (i + r) % 2 else ("after", "before"):
                    group[name].append(timed(name, q))
    finally:
        for proc in workers.values():
            assert proc.stdin
            proc.stdin.close()
            proc.wait(timeout=60)
    print(f"against {tree}:")
    return {name: report(f"  {name}", g["before"], g["after"]) for name, g in times.items()}


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


# `pimem serve` of this code with word forms at a given MAX_FORMS (0: every word as written, the exact search).
SERVE_WITH_FORMS = """
import sys
from pimem_index.search import wordforms
wordforms.MAX_FORMS = int(sys.argv[1])
from pimem_index.cli import cli
cli(args=sys.argv[2:], prog_name="pimem")
"""


def process_cpu(pid: int) -> float:
    """CPU seconds of a process, all its threads, to the nanosecond (Linux's clock of another process)."""
    return time.clock_gettime(((~pid) << 3) | 2)


def api_forms(bench: run.Bench, db: Path, rounds: int) -> dict:
    """The rare words whose other form is common (`rare_forms`) through the HTTP API: two `pimem serve` of
    this code on the same index, one searching as written only (MAX_FORMS 0: the exact search, "before")
    and one with word forms as shipped ("after"); each request goes to both in turn (which goes first
    alternates), timed as the server's CPU (all its threads) and as wall time; hits counted from the replies."""
    conn = store.open_index(str(db))
    qs = [q for q in rare_forms(conn) if q["group"] == "rare_form"]
    conn.close()
    servers = {}
    tokens: dict[str, str | None] = {}
    try:
        for name, forms in (("before", 0), ("after", wordforms.MAX_FORMS)):
            # One agent folder each: a folder has one `pimem serve`, and its secret signs that server's tokens.
            env = run.child_env(bench.work / f"agent-wordforms-{name}")
            Path(env["PI_CODING_AGENT_DIR"]).mkdir(parents=True, exist_ok=True)
            tokens[name] = subprocess.run(
                [run.PY, "-m", "pimem_index", "token", "--db", str(db), "--sessions-dir", str(bench.corpus)],
                env=env,
                capture_output=True,
                text=True,
                cwd=str(ROOT),
                check=True,
                timeout=60,
            ).stdout.split()[-1]
            port = run.free_port()
            log = open(bench.work / f"wordforms-api-{name}.log", "wb")
            cmd = [run.PY, "-c", SERVE_WITH_FORMS, str(forms), "serve", "--db", str(db)]
            cmd += ["--sessions-dir", str(bench.corpus), "--port", str(port), "--host", "127.0.0.1"]
            proc = subprocess.Popen(
                cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(ROOT), start_new_session=True
            )
            servers[name] = (proc, log, port)
            if not bench.wait_ready(port, tokens[name], proc):
                raise SystemExit(f"pimem serve ({name}) did not answer: see {bench.work}/wordforms-api-{name}.log")
        conns = {n: http.client.HTTPConnection("127.0.0.1", s[2], timeout=60) for n, s in servers.items()}
        for name, link in conns.items():
            bench.wait_indexed(link, tokens[name], timeout=600)
        cpu: dict[str, list[float]] = {"before": [], "after": []}
        wall: dict[str, list[float]] = {"before": [], "after": []}
        hits: dict[str, list[int]] = {"before": [], "after": []}

        def timed(name: str, q: dict) -> tuple[float, float, int]:
            pid = servers[name][0].pid
            c0, t0 = process_cpu(pid), time.perf_counter()
            status, body = bench.http_get(conns[name], bench.api_path(q), tokens[name])
            t1, c1 = time.perf_counter(), process_cpu(pid)
            if status != 200:
                raise SystemExit(f"API search {q['q']!r} ({name}): HTTP {status} {body[:200]!r}")
            return c1 - c0, t1 - t0, len(json.loads(body)["results"])

        for q in qs:  # warm-up: each word's forms and counts kept, as for a word asked before
            timed("before", q), timed("after", q)
        for r in range(rounds):
            for i, q in enumerate(qs):
                for name in ("before", "after") if (i + r) % 2 else ("after", "before"):
                    spent, took, found = timed(name, q)
                    cpu[name].append(spent)
                    wall[name].append(took)
                    hits[name].append(found)
        print("API, a rare word whose other form is common: as written only (before) and with word forms (after)")
        return {
            "cpu": report("  server CPU per request", cpu["before"], cpu["after"], (hits["before"], hits["after"])),
            "wall": report("  wall time per request", wall["before"], wall["after"], (hits["before"], hits["after"])),
        }
    finally:
        for proc, log, _port in servers.values():
            bench.stop(proc)
            log.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--corpus", default=str(HERE / "corpus" / "500MB-s1"))
    ap.add_argument("--before", default=None, help="a checkout without word forms: compare the API with it")
    ap.add_argument("--against", default=None, help="another checkout reading the same index: compare search CPU")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work", default=None)
    ap.add_argument("--no-docs", action="store_true", help="do not write the figures into docs/performance.md")
    ap.add_argument("--no-api", action="store_true", help="skip the rare words' API comparison (two servers)")
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
    if args.against:
        result["against"] = against(bench, Path(args.db), bench.corpus, Path(args.against).resolve(), args.rounds)
        result["against"]["tree"] = git_describe(Path(args.against))
    if not args.no_api:
        result["api_forms"] = api_forms(bench, Path(args.db), args.rounds)
    if args.before:
        result["api"] = api(bench, Path(args.db), Path(args.before).resolve(), args.rounds)
    print(json.dumps(result))
    if not args.no_docs:
        docs_figures.replace_between(DOCS_START, DOCS_END, docs_table(result, args.rounds))
    return 0


DOCS_START = "<!-- word-form cost: written by benchmarks/wordforms_cost.py -->"
DOCS_END = "<!-- end of word-form cost -->"
# Issue 28's figure: the same rare words (a word 1-5 entries hold whose other form many hold) searched as
# written only (the exact search) and with word forms; target: at most 1.5x.
HEADLINE: tuple[tuple[str, str, str], ...] = (
    ("in_process", "rare_form", "in process, CPU per search"),
    ("in_process_nothing_kept", "rare_form", "in process, CPU per search, nothing kept (a word never asked before)"),
    ("api_forms", "cpu", "HTTP API, the server's CPU per request"),
    ("api_forms", "wall", "HTTP API, wall time per request"),
)
ROWS: tuple[tuple[str, str | None, str], ...] = (
    ("in_process", "needle", "search, rare words (needles)"),
    ("in_process", "common", "search, common words"),
    ("in_process", "rare_form", "search, a rare word whose other form is common"),
    ("in_process", "rare_vs_common", 'the same, against its common form as written ("without": that search)'),
    ("in_process_nothing_kept", "needle", "search, nothing kept: rare words"),
    ("in_process_nothing_kept", "common", "search, nothing kept: common words"),
    ("in_process_nothing_kept", "rare_form", "search, nothing kept: a rare word whose other form is common"),
    ("api", None, "HTTP API search, wall time, against the code before word forms (`--before`)"),
)
AGAINST_ROWS: tuple[tuple[str, str], ...] = (
    ("needle", "rare words (needles)"),
    ("common", "common words"),
    ("rare_form", "a rare word whose other form is common"),
)


def git_describe(tree: Path) -> str:
    """The checkout's short commit id (or its path when it is not a git checkout)."""
    out = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or str(tree)


def _row(title: str, found: dict, per_hit: bool = False) -> str:
    """A table row: p50 / p95 of each side, the ratios, the hits per query, and (`per_hit`) p50 per hit."""
    b, a, r = found["before"], found["after"], found["ratio"]
    hits = found.get("hits")
    said = f" {hits['before']} / {hits['after']} |" if hits else " - |"
    if per_hit:
        each = [
            round(side["p50"] / n, 2) if hits and n else "-"
            for side, n in ((b, hits and hits["before"]), (a, hits and hits["after"]))
        ]
        said += f" {each[0]} / {each[1]} ms |"
    return (
        f"| {title} | {b['p50']} / {b['p95']} ms | {a['p50']} / {a['p95']} ms | "
        f"{r.get('p50', '-')} / {r.get('p95', '-')} |{said}"
    )


def docs_table(result: dict, rounds: int) -> str:
    """The comparison as docs/performance.md shows it: issue 28's rare words as written and with word
    forms first, then every query group without and with word forms; p50 / p95, ratios and hits."""
    lines = [
        f"`benchmarks/wordforms_cost.py`, {rounds} rounds interleaved, load at the end "
        f"{[round(x, 2) for x in os.getloadavg()]}.",
        "",
        "A rare word whose other form is common, searched as written only (the exact search) and with word forms:",
        "",
        "| measured | as written p50 / p95 | with word forms p50 / p95 | ratio p50 / p95 | hits (written / forms) "
        "| p50 per hit (written / forms) |",
        "|---|---|---|---|---|---|",
    ]
    for part, name, title in HEADLINE:
        found = result.get(part, {}).get(name)
        if found:
            lines.append(_row(title, found, per_hit=True))
    lines += [
        "",
        "Every query group, without and with word forms (CPU in process unless said):",
        "",
        "| measured | without forms p50 / p95 | with forms p50 / p95 | ratio p50 / p95 | hits (without / with) |",
        "|---|---|---|---|---|",
    ]
    for part, group, title in ROWS:
        found = result.get(part, {})
        if group:
            found = found.get(group)
        if found:
            lines.append(_row(title, found))
    found = result.get("against")
    if found:
        lines += [
            "",
            f"Against `{found['tree']}` (its code and this, one process each, the same index, CPU per search):",
            "",
            f"| search, project scope | {found['tree']} p50 / p95 | this p50 / p95 | ratio p50 / p95 |",
            "|---|---|---|---|",
        ]
        for group, title in AGAINST_ROWS:
            if group in found:
                b, a, r = found[group]["before"], found[group]["after"], found[group]["ratio"]
                lines.append(
                    f"| {title} | {b['p50']} / {b['p95']} ms | {a['p50']} / {a['p95']} ms | "
                    f"{r.get('p50', '-')} / {r.get('p95', '-')} |"
                )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
