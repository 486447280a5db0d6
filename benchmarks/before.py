"""This tree against an earlier one, figure by figure, in the same run: `python -m benchmarks.run --before TREE`.

TREE is a checkout with its own `.venv` (e.g. the previous release). Each tree is driven only through what every
release has: its own interpreter running `python -m pimem_index index` (cold, from nothing: versus.py's
index_once), its own library's search and read in a child process of its own, and its own `pimem serve` over
HTTP. The two trees take turns (which goes first alternates), so load on a shared machine hits both alike.
The ratio is this tree / TREE for every figure; whether lower or higher is better is said beside it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, NamedTuple

from benchmarks import docs_figures, run, versus
from pimem_index import db

MARKERS = (
    "<!-- against an earlier tree: written by benchmarks/run.py --before -->",
    "<!-- end of against an earlier tree -->",
)

# A child in a tree's own interpreter: the tree's search and read, timed in its process (as run.py times this
# tree's). Reads the job as JSON on stdin, prints the seconds of each call. The import covers both layouts.
PROBE = """
import json, sys, time
try:
    from pimem_index.search import query
except ImportError:  # a release from before the search package
    from pimem_index import query
from pimem_index import locations, store

job = json.load(sys.stdin)
conn = store.open_index(job["db"])
loc = locations.resolve(db=job["db"], sessions_dirs=[job["corpus"]])


def search(q, cwd):
    return query.search(conn, loc, q or None, scope="project", cwd=cwd, limit=10, home=job["home"])


for q in job["queries"]:
    search(q["q"], q["cwd"])  # warm-up: the page cache and the tree's own caches
searches, hits = [], []
for q in job["queries"]:
    t = time.perf_counter()
    res = search(q["q"], q["cwd"])
    searches.append(time.perf_counter() - t)
    hits += [(h["id"], h["session_id"], q["cwd"]) for h in res.get("results", [])[:3]]
reads = []
for entry, session, cwd in hits:
    t = time.perf_counter()
    query.read(conn, loc, entry, session_id=session, cwd=cwd, scope="project", home=job["home"])
    reads.append(time.perf_counter() - t)
print(json.dumps({"search": searches, "read": reads}))
"""

# name: (what, which way is better)
FIGURES = {
    "cold_index_cpu_s": ("cold `pimem index`, CPU-seconds of all its processes (best of the rounds)", "lower"),
    "cold_index_mb_s": ("cold index throughput, MB of journal per wall second (best of the rounds)", "higher"),
    "index_share": ("index file / journal bytes", "lower"),
    "search_p50_ms": ("project search in the tree's own process (excerpts included), p50", "lower"),
    "search_p95_ms": ("the same, p95", "lower"),
    "read_p50_ms": ("read of the top hits, p50", "lower"),
    "read_p95_ms": ("the same, p95", "lower"),
    "api_search_p50_ms": ("`pimem serve` API search over HTTP, one client, p50", "lower"),
    "api_search_p95_ms": ("the same, p95", "lower"),
}


class Tree(NamedTuple):
    """One side of the comparison: its checkout, its interpreter, its scratch folder and index."""

    label: str
    root: Path
    work: Path

    @property
    def python(self) -> str:
        return versus.python_of(self.root)

    @property
    def db(self) -> Path:
        return self.work / f"{self.root.name}.sqlite"  # where versus.index_once builds it

    def env(self) -> dict[str, str]:
        """Its children see an empty agent folder and keep their bytecode under work, never in the tree."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIMEM_DB", "PIMEM_SESSIONS_DIRS")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PI_CODING_AGENT_DIR"] = str(self.work / "agent")
        env["PYTHONPYCACHEPREFIX"] = str(self.work / "pycache")
        return env


def turns(i: int, before: Tree, after: Tree) -> tuple[Tree, Tree]:
    """Which tree goes first in round `i`: they alternate."""
    return (before, after) if i % 2 == 0 else (after, before)


def cold_index(bench: run.Bench, trees: tuple[Tree, Tree], rounds: int) -> dict[str, list[tuple[float, float, int]]]:
    corpus = bench.corpus
    assert corpus is not None
    runs: dict[str, list[tuple[float, float, int]]] = {t.label: [] for t in trees}
    for i in range(rounds):
        for tree in turns(i, *trees):
            wall, cpu, size = versus.index_once(tree.root, corpus.resolve(), tree.work, env=tree.env())
            runs[tree.label].append((wall, cpu, size))
            bench.log(
                f"  {tree.label} cold index: {bench.journal_bytes / run.MB / wall:.1f} MB/s, CPU {cpu:.1f} s, "
                f"index {size / bench.journal_bytes:.4f} of the journals"
            )
    return runs


def probe(tree: Tree, corpus: Path, queries: list[dict]) -> dict[str, list[float]]:
    job = {"db": str(tree.db), "corpus": str(corpus), "home": "/home/u", "queries": queries}
    done = subprocess.run(
        [tree.python, "-c", PROBE],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        env=tree.env(),
        cwd=str(tree.root),
        check=True,
        timeout=1800,
    )
    return json.loads(done.stdout.splitlines()[-1])


def searches(bench: run.Bench, trees: tuple[Tree, Tree], rounds: int) -> dict[str, dict[str, list[float]]]:
    corpus = bench.corpus
    assert corpus is not None
    queries = [{"q": q["q"], "cwd": q["cwd"]} for q in bench.queries()]
    times: dict[str, dict[str, list[float]]] = {t.label: {"search": [], "read": []} for t in trees}
    for i in range(rounds):
        for tree in turns(i, *trees):
            got = probe(tree, corpus, queries)
            for kind in ("search", "read"):
                times[tree.label][kind] += got[kind]
    for tree in trees:
        t = times[tree.label]
        bench.log(
            f"  {tree.label}: search p50 {run.ms(run.pct(t['search'], 0.5))} ms, "
            f"p95 {run.ms(run.pct(t['search'], 0.95))} ms; read p50 {run.ms(run.pct(t['read'], 0.5))} ms"
        )
    return times


def token(tree: Tree, corpus: Path) -> str | None:
    cmd = [tree.python, "-m", "pimem_index", "token", "--db", str(tree.db), "--sessions-dir", str(corpus)]
    done = subprocess.run(cmd, env=tree.env(), capture_output=True, text=True, cwd=str(tree.root), timeout=120)
    lines = done.stdout.strip().splitlines()
    return lines[-1].strip() if done.returncode == 0 and lines else None


def serve(tree: Tree, corpus: Path, port: int) -> subprocess.Popen:
    cmd = [tree.python, "-m", "pimem_index", "serve", "--db", str(tree.db), "--sessions-dir", str(corpus)]
    cmd += ["--port", str(port), "--host", "127.0.0.1", "--no-index"]
    log = open(tree.work / "serve.log", "wb")  # the child holds it; closed when this process ends
    return subprocess.Popen(
        cmd, env=tree.env(), stdout=log, stderr=subprocess.STDOUT, cwd=str(tree.root), start_new_session=True
    )


def api(bench: run.Bench, trees: tuple[Tree, Tree], rounds: int) -> dict[str, list[float]]:
    """The same search requests to each tree's server, request by request, the first alternating."""
    corpus = bench.corpus
    assert corpus is not None
    queries = bench.queries()
    servers: dict[str, tuple[subprocess.Popen, int, str | None]] = {}
    conns: dict[str, http.client.HTTPConnection] = {}
    times: dict[str, list[float]] = {t.label: [] for t in trees}
    try:
        for tree in trees:
            tok = token(tree, corpus)
            port = run.free_port()
            proc = serve(tree, corpus, port)
            servers[tree.label] = (proc, port, tok)
            if not bench.wait_ready(port, tok, proc):
                raise RuntimeError(f"{tree.label}'s pimem serve did not answer (see {tree.work / 'serve.log'})")
        # connected once both answer: an idle keep-alive connection is closed by the server after a few seconds
        for tree in trees:
            _, port, tok = servers[tree.label]
            conns[tree.label] = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            status, body = bench.http_get(conns[tree.label], bench.api_path(queries[0]), tok)
            if status != 200:
                raise RuntimeError(f"{tree.label}'s API search answered {status}: {body[:200]!r}")
        for q in queries:  # warm-up
            for tree in trees:
                bench.http_get(conns[tree.label], bench.api_path(q), servers[tree.label][2])
        i = 0
        for _ in range(rounds):
            for q in queries:
                for tree in turns(i, *trees):
                    t = time.perf_counter()
                    bench.http_get(conns[tree.label], bench.api_path(q), servers[tree.label][2])
                    times[tree.label].append(time.perf_counter() - t)
                i += 1
    finally:
        for conn in conns.values():
            conn.close()
        for proc, _port, _tok in servers.values():
            bench.stop(proc)
    for tree in trees:
        took = times[tree.label]
        bench.log(f"  {tree.label} API: p50 {run.ms(run.pct(took, 0.5))} ms, p95 {run.ms(run.pct(took, 0.95))} ms")
    return times


def figures_of(
    label: str, journal_bytes: int, cold: dict, found: dict, http_times: dict | None
) -> dict[str, float | None]:
    walls = [w for w, _c, _s in cold[label]]
    cpus = [c for _w, c, _s in cold[label]]
    out: dict[str, float | None] = {
        "cold_index_cpu_s": round(min(cpus), 2),
        "cold_index_mb_s": round(journal_bytes / run.MB / min(walls), 2),
        "index_share": round(cold[label][-1][2] / journal_bytes, 4),
        "search_p50_ms": run.ms(run.pct(found[label]["search"], 0.5)),
        "search_p95_ms": run.ms(run.pct(found[label]["search"], 0.95)),
        "read_p50_ms": run.ms(run.pct(found[label]["read"], 0.5)),
        "read_p95_ms": run.ms(run.pct(found[label]["read"], 0.95)),
    }
    if http_times:
        out["api_search_p50_ms"] = run.ms(run.pct(http_times[label], 0.5))
        out["api_search_p95_ms"] = run.ms(run.pct(http_times[label], 0.95))
    return out


def compare(bench: run.Bench, before_root: Path, index_rounds: int, rounds: int, with_api: bool) -> dict[str, Any]:
    """Every figure of FIGURES for both trees, interleaved; the result as run.py writes it (JSON)."""
    assert bench.corpus is not None
    work = bench.work / "before"
    shutil.rmtree(work, ignore_errors=True)
    trees = (Tree("before", before_root.resolve(), work / "before"), Tree("this tree", run.ROOT, work / "this"))
    for tree in trees:
        (tree.work / "agent").mkdir(parents=True)
    bench.log(f"cold index, {index_rounds} rounds each, interleaved")
    cold = cold_index(bench, trees, index_rounds)
    if not bench.manifest:
        with contextlib.closing(db.connect(str(trees[1].db))) as conn:
            bench.db_cwds = [r[0] for r in conn.execute("SELECT cwd FROM files GROUP BY cwd ORDER BY COUNT(*) DESC")]
    bench.log(f"search and read in each tree's own process, {rounds} rounds each, interleaved")
    found = searches(bench, trees, rounds)
    http_times = None
    if with_api:
        bench.log(f"API search through each tree's pimem serve, {rounds} rounds, request by request")
        http_times = api(bench, trees, rounds)
    before, after = (figures_of(t.label, bench.journal_bytes, cold, found, http_times) for t in trees)
    figures = {
        name: {
            "before": before.get(name),
            "after": after.get(name),
            "ratio": round(a / b, 3) if (b := before.get(name)) and (a := after.get(name)) is not None else None,
        }
        for name in FIGURES
        if name in after
    }
    result = bench.result()
    result["before"] = {"tree": str(trees[0].root), "commit": versus.revision(trees[0].root)}
    result["figures"] = figures
    result["runs"] = {"cold_index": cold}
    return result


def markdown(result: dict[str, Any]) -> str:
    c, mach = result["corpus"], result["machine"]
    lines = [
        f"Run {result['when']}: this tree at {mach.get('git') or '?'} against {result['before']['commit']} "
        f"(`{result['before']['tree']}`), corpus {c['bytes'] / run.MB:,.1f} MB, {c['journals']} journals; "
        f"{mach['cpus']} cores, load at the end {mach['loadavg_end']}.",
        "",
        f"| figure | {result['before']['commit']} | this tree | this / before | what |",
        "|---|---|---|---|---|",
    ]
    for name, f in result["figures"].items():
        what, better = FIGURES[name]
        ratio = f"{f['ratio']:.2f}x" if f["ratio"] is not None else "-"
        lines.append(
            f"| `{name}` | {run.fmt(f['before'])} | {run.fmt(f['after'])} | {ratio} | {what} ({better} is better) |"
        )
    return "\n".join(lines) + "\n"


def print_table(result: dict[str, Any]) -> None:
    print()
    print(markdown(result))


def write_docs(result: dict[str, Any]) -> bool:
    return docs_figures.replace_between(*MARKERS, markdown(result))
