"""The API under load: N concurrent agent clients against this tree and a baseline, interleaved.

    python -m benchmarks.api_load [--before /work/base-905b5e5 --before /work/base-c4ed829] [--corpus DIR]
                                  [--clients 20] [--seconds 6] [--rounds 4] [--extra 20MB] [--profile] [--no-docs]

Each tree (this one, and each BEFORE: a checkout with its own `.venv`; by default 905b5e5, main when
issue 28 was filed, and c4ed829, the release it compares against) gets its own copy of a cold index
of CORPUS (built once with that tree's `pimem index`, kept under --work), its own agent folder,
secret and `pimem token`, and its own `pimem serve` on 127.0.0.1 over CORPUS plus an empty folder
of its own for the background pass. Every server runs throughout; the load goes to one at a time,
the order rotating round by round, so all see the same machine. Ratios are this tree's against each.

The load: N clients (asyncio, one keep-alive connection each) repeat the agent's mix as the Pi
tool sends it (memory_context.ts: `scope=project`, `cwd`, `journal` = a journal of that project,
search with `limit=10&excerpt=90`): for each query of run.py's set (planted needles and common
words), a search, a read of its first hit, a read of its second hit with `around=2`. Each
phase lasts --seconds; requests per second are those completed in it, latencies are per request
(from sending to the last byte). The server's own CPU time (its process, not the indexer child)
per request is given too: the least noisy figure on a shared machine.

"While a background pass indexes 20 MB more": a fresh corpus of --extra bytes (corpus.py, one seed
per round, the same for both trees) is copied into the server's extra folder as the phase starts;
the phase lasts until the server's status shows it all indexed (its watcher picks it up within a
second; at least PASS_SECONDS), so its requests are those answered while the pass ran.

--profile: afterwards, this tree's server again under yappi (CPU clock, every thread) for one
phase, and the functions where its CPU time goes (benchmarks.profiled_serve).
Figures go into docs/performance.md between the markers below.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import corpus as corpus_mod
from benchmarks import docs_figures, run

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

DOCS_START = "<!-- api load: written by benchmarks/api_load.py -->"
DOCS_END = "<!-- end of api load -->"
DEFAULT_BEFORE = (Path("/work/base-905b5e5"), Path("/work/base-c4ed829"))
THIS = "this"
DEFAULT_CORPUS = Path("/work/corpus/500MB-s1")
SEARCH_LIMIT = 10  # as memory_context.ts asks
EXCERPT_CHARS = 90
AROUND = 2
CLK_TCK = os.sysconf("SC_CLK_TCK")
PASS_SECONDS = 1.0  # an indexing phase lasts at least this long


@dataclass
class Tree:
    """One install under test: its checkout, its Python, its index copy, its agent folder and server."""

    label: str
    root: Path
    python: str
    work: Path
    db: Path = field(init=False)
    agent: Path = field(init=False)
    extra: Path = field(init=False)
    port: int = 0
    token: str = ""
    proc: subprocess.Popen | None = None

    def __post_init__(self) -> None:
        self.db = self.work / f"{self.label}.sqlite"
        self.agent = self.work / f"{self.label}-agent"
        self.extra = self.work / f"{self.label}-extra"

    def env(self) -> dict:
        env = run.child_env(self.agent)
        env["PYTHONPATH"] = str(self.root)
        env["PYTHONPYCACHEPREFIX"] = str(self.work / f"{self.label}-pycache")
        return env

    def pimem(self, *args: str) -> list[str]:
        return [self.python, "-m", "pimem_index", *args]


def tree_python(root: Path) -> str:
    venv = root / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def prepare(tree: Path | str, label: str, work: Path, corpus: Path, reindex: bool) -> Tree:
    """A tree with a fresh copy of its cold index of the corpus (built once) and an empty extra folder."""
    t = Tree(label, Path(tree).resolve(), tree_python(Path(tree).resolve()), work)
    t.agent.mkdir(parents=True, exist_ok=True)
    cold = work / f"{label}-cold.sqlite"
    if reindex or not cold.exists():
        remove_db(cold)
        print(f"[{label}] cold index of {corpus} ...", flush=True)
        started = time.perf_counter()
        cmd = t.pimem("index", "--db", str(cold), "--sessions-dir", str(corpus), "--json")
        subprocess.run(cmd, env=t.env(), cwd=str(t.root), check=True, capture_output=True)
        print(f"[{label}] indexed in {time.perf_counter() - started:.1f} s", flush=True)
    remove_db(t.db)
    checkpoint(t, cold)
    shutil.copyfile(cold, t.db)
    shutil.rmtree(t.extra, ignore_errors=True)
    t.extra.mkdir(parents=True)
    return t


def checkpoint(t: Tree, db: Path) -> None:
    """Fold the cold index's WAL into it, so one file copy is the whole index."""
    code = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()"
    subprocess.run([t.python, "-c", code, str(db)], check=True)


def start_server(t: Tree, corpus: Path, profile_to: Path | None = None) -> None:
    t.token = subprocess.run(
        t.pimem("token", "--db", str(t.db), "--sessions-dir", str(corpus), "--sessions-dir", str(t.extra)),
        env=t.env(),
        cwd=str(t.root),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[-1]
    t.port = run.free_port()
    args = ["serve", "--db", str(t.db), "--sessions-dir", str(corpus), "--sessions-dir", str(t.extra)]
    args += ["--host", "127.0.0.1", "--port", str(t.port)]
    cmd = t.pimem(*args)
    if profile_to is not None:
        cmd = [t.python, "-m", "benchmarks.profiled_serve", str(profile_to), *args]
    log = open(t.work / f"{t.label}-serve.log", "wb")
    t.proc = subprocess.Popen(
        cmd, env=t.env(), cwd=str(t.root), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    log.close()


def get(t: Tree, path: str) -> tuple[int, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", t.port, timeout=60)
    try:
        c.request("GET", path, headers={"Authorization": f"Bearer {t.token}"})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def status(t: Tree) -> dict:
    st, body = get(t, "/-/pi-memory/api/status")
    return json.loads(body) if st == 200 else {}


def wait_indexed(t: Tree, journals: int, timeout: float = 600) -> float:
    """Wait until the server answers and has indexed at least `journals` journals with none pending."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        assert t.proc is not None
        if t.proc.poll() is not None:
            raise SystemExit(f"[{t.label}] pimem serve stopped: see {t.work}/{t.label}-serve.log")
        with contextlib.suppress(OSError, ValueError):
            s = status(t)
            if s.get("journals_total", 0) >= journals and s.get("journals_pending") == 0:
                return time.monotonic() - started
        time.sleep(0.1)
    raise SystemExit(f"[{t.label}] not indexed after {timeout} s")


def stop_server(t: Tree) -> None:
    if t.proc is not None:
        run.Bench.stop(t.proc)
        t.proc = None


def server_cpu(t: Tree) -> float:
    """CPU seconds of the server process (all its threads; not its indexer child)."""
    assert t.proc is not None
    with open(f"/proc/{t.proc.pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


# ---------------------------------------------------------------- the requests


def plan(corpus: Path, t: Tree) -> list[str]:
    """The agent's requests, in order: per query a search, a read of its first hit, a read of its second
    hit with around. Ids come from this tree's answers (the corpus and so the ids are the same for both)."""
    manifest = json.loads((corpus / "manifest.json").read_text())
    journals: dict[str, str] = {}
    for f in manifest["files"]:
        journals.setdefault(f["cwd"], str(corpus / f["journal"]))
    cwds = sorted(manifest["projects"])
    queries = [(rec["word"], rec["placements"][0]["cwd"]) for rec in manifest["needles"][:20]]
    queries += [(q, cwds[i % len(cwds)]) for i, q in enumerate(run.COMMON_QUERIES)]
    paths: list[str] = []
    for q, cwd in queries:
        where = [("scope", "project"), ("cwd", cwd)]
        if cwd in journals:
            where.append(("journal", journals[cwd]))
        search = [("q", q), *where, ("limit", str(SEARCH_LIMIT)), ("excerpt", str(EXCERPT_CHARS))]
        path = "/-/pi-memory/api/search?" + urllib.parse.urlencode(search)
        paths.append(path)
        st, body = get(t, path)
        if st != 200:
            raise SystemExit(f"[{t.label}] {path} answered {st}: {body[:300]!r}")
        hits = json.loads(body)["results"]
        for n, hit in enumerate(hits[:2]):
            read = [("id", hit["id"]), ("session_id", hit["session_id"]), *where]
            if n:
                read.append(("around", str(AROUND)))
            paths.append("/-/pi-memory/api/read?" + urllib.parse.urlencode(read))
    return paths


def journals_of(corpus: Path) -> int:
    return len(list(corpus.rglob("*.jsonl")))


# ---------------------------------------------------------------- the load


async def _request(reader, writer, head: bytes) -> int:
    writer.write(head)
    await writer.drain()
    line = await reader.readline()
    code = int(line.split()[1])
    length = None
    chunked = False
    while True:
        h = await reader.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        name, _, value = h.decode("latin-1").partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    if chunked:
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    elif length is not None:
        await reader.readexactly(length)
    return code


async def _client(n: int, t: Tree, paths: list[str], stop_at: list[float], out: dict) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", t.port)
    auth = f"Authorization: Bearer {t.token}\r\n"
    i = (n * 7) % len(paths)  # each client starts elsewhere in the mix
    try:
        while time.perf_counter() < stop_at[0]:
            head = f"GET {paths[i]} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}\r\n".encode()
            started = time.perf_counter()
            code = await _request(reader, writer, head)
            ended = time.perf_counter()
            if ended <= stop_at[0]:
                out["latencies"].append(ended - started)
                out["kinds"].setdefault(kind_of(paths[i]), []).append(ended - started)
                out["statuses"][code] = out["statuses"].get(code, 0) + 1
            i = (i + 1) % len(paths)
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def _load(t: Tree, paths: list[str], clients: int, seconds: float, until=None) -> dict:
    out: dict = {"latencies": [], "statuses": {}, "kinds": {}}
    started = time.perf_counter()
    stop_at = [started + 3600 if until else started + seconds]
    cpu0 = server_cpu(t)
    tasks = [asyncio.create_task(_client(n, t, paths, stop_at, out)) for n in range(clients)]
    if until is not None:
        await until(started + seconds, stop_at)
    await asyncio.gather(*tasks)
    elapsed = stop_at[0] - started
    cpu = server_cpu(t) - cpu0
    lat = out["latencies"]
    return {
        "requests": len(lat),
        "seconds": round(elapsed, 2),
        "rps": round(len(lat) / elapsed, 1),
        "p50_ms": run.ms(run.pct(lat, 0.5) or 0),
        "p95_ms": run.ms(run.pct(lat, 0.95) or 0),
        "cpu_ms_per_request": round(cpu * 1000 / max(1, len(lat)), 2),
        "statuses": {str(k): v for k, v in sorted(out["statuses"].items())},
        "latencies": lat,
        "kinds": out["kinds"],
    }


def load(t: Tree, paths: list[str], clients: int, seconds: float) -> dict:
    return asyncio.run(_load(t, paths, clients, seconds))


def load_while_indexing(t: Tree, paths: list[str], clients: int, extra: Path, tag: str) -> dict:
    """Load while a background pass indexes the `extra` corpus, copied into the server's folder now."""
    before = status(t).get("journals_total", 0)
    count = journals_of(extra)

    async def until(at_least: float, stop_at: list[float]) -> None:
        await asyncio.to_thread(shutil.copytree, extra, t.extra / tag)
        while True:
            await asyncio.sleep(0.2)
            s = await asyncio.to_thread(status, t)
            done = s.get("journals_total", 0) >= before + count and s.get("journals_pending") == 0
            if done and time.perf_counter() >= at_least:
                stop_at[0] = time.perf_counter()
                return

    return asyncio.run(_load(t, paths, clients, PASS_SECONDS, until))


# ---------------------------------------------------------------- the report


def kind_of(path: str) -> str:
    """search, read or around: the request's kind in the mix."""
    if "/api/search?" in path:
        return "search"
    return "around" if "around=" in path else "read"


def summary(phases: list[dict]) -> dict:
    lat = [x for p in phases for x in p["latencies"]]
    requests = sum(p["requests"] for p in phases)
    seconds = sum(p["seconds"] for p in phases)
    statuses: dict[str, int] = {}
    for p in phases:
        for k, v in p["statuses"].items():
            statuses[k] = statuses.get(k, 0) + v
    rps = sorted(p["rps"] for p in phases)
    return {
        "rps": round(requests / seconds, 1),
        "rps_rounds": rps,
        "seconds_rounds": [p["seconds"] for p in phases],
        "p50_ms": run.ms(run.pct(lat, 0.5) or 0),
        "p95_ms": run.ms(run.pct(lat, 0.95) or 0),
        "cpu_ms_per_request": round(sum(p["cpu_ms_per_request"] * p["requests"] for p in phases) / max(1, requests), 2),
        "requests": requests,
        "statuses": statuses,
        "p95_ms_by_kind": {
            kind: run.ms(run.pct([x for p in phases for x in p["kinds"].get(kind, [])], 0.95) or 0)
            for kind in ("search", "read", "around")
        },
    }


def markdown(result: dict) -> str:
    labels = result["labels"]
    lines = [
        f"`python -m benchmarks.api_load` ({result['clients']} clients, {result['rounds']} interleaved rounds of "
        f"{result['seconds']} s, corpus {result['corpus']} ({result['corpus_mb']} MB), {result['when']}, "
        f"load before {result['load']}): this tree ({result['this']}) against {', '.join(result['before'])}.",
        "",
        "| phase | install | req/s (total; per round) | p50 ms | p95 ms | p95 ms: search, read, around | "
        "server CPU ms/request | statuses |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for phase, title in (("idle", "idle"), ("indexing", f"while {result['extra']} more is indexed")):
        for label in labels:
            s = result[phase][label]
            passes = f" (passes of {', '.join(str(x) for x in s['seconds_rounds'])} s)" if phase == "indexing" else ""
            rounds = ", ".join(str(x) for x in s["rps_rounds"])
            lines.append(
                f"| {title}{passes} | {label} | {s['rps']} ({rounds}) | {s['p50_ms']} | "
                f"{s['p95_ms']} | {', '.join(str(v) for v in s['p95_ms_by_kind'].values())} | "
                f"{s['cpu_ms_per_request']} | {s['statuses']} |"
            )
    lines += [
        "",
        "| this tree against | phase | req/s ratio (target >= 1.5) | p95 ratio (target <= 0.5) | CPU/request ratio |",
        "|---|---|---|---|---|",
    ]
    for label in labels:
        for phase in ("idle", "indexing") if label != THIS else ():
            r = result["ratios"][label][phase]
            lines.append(f"| {label} | {phase} | {r['rps']} | {r['p95']} | {r['cpu']} |")
    return "\n".join(lines)


def ratios(before: dict, after: dict) -> dict:
    return {
        "rps": round(after["rps"] / before["rps"], 2) if before["rps"] else None,
        "p95": round(after["p95_ms"] / before["p95_ms"], 2) if before["p95_ms"] else None,
        "cpu": round(after["cpu_ms_per_request"] / before["cpu_ms_per_request"], 2)
        if before["cpu_ms_per_request"]
        else None,
    }


def extra_corpus(work: Path, size: int, seed: int) -> Path:
    """A small corpus for one background pass (made once per seed, then reused)."""
    out = work / f"extra-{corpus_mod.format_size(size)}-s{seed}"
    if not (out / "manifest.json").exists():
        shutil.rmtree(out, ignore_errors=True)
        cmd = [sys.executable, "-m", "benchmarks.corpus", str(out), "--size", corpus_mod.format_size(size)]
        subprocess.run([*cmd, "--seed", str(seed)], check=True, capture_output=True, cwd=str(ROOT))
    return out


def profile(t: Tree, corpus: Path, paths: list[str], clients: int, seconds: float, work: Path) -> None:
    """This tree's server under yappi for one phase; the top functions by CPU time."""
    stats = work / "profile.txt"
    stats.unlink(missing_ok=True)
    start_server(t, corpus, profile_to=stats)
    try:
        wait_indexed(t, journals_of(corpus))
        load(t, paths, clients, 2)  # warm-up, then forgotten
        assert t.proc is not None
        os.kill(t.proc.pid, signal.SIGUSR1)
        phase = load(t, paths, clients, seconds)
        print(f"[{t.label} under yappi] {phase['rps']} req/s, p95 {phase['p95_ms']} ms", flush=True)
    finally:
        assert t.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(t.proc.pid, signal.SIGINT)  # SIGINT: the wrapper writes its figures as the server stops
        with contextlib.suppress(subprocess.TimeoutExpired):
            t.proc.wait(60)
        stop_server(t)
    print(stats.read_text() if stats.exists() else f"no profile written (see {t.work}/{t.label}-serve.log)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--before",
        type=Path,
        action="append",
        help="a baseline checkout (with its .venv); repeat for several (default: 905b5e5 and c4ed829)",
    )
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=6.0, help="length of each idle phase")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--extra", default="20MB", help="what a background pass indexes during the load")
    ap.add_argument("--no-indexing", action="store_true", help="skip the phases with a background pass")
    ap.add_argument("--reindex", action="store_true", help="build the cold indexes again")
    ap.add_argument("--profile", action="store_true", help="also profile this tree's server (yappi)")
    ap.add_argument("--work", type=Path, default=HERE / "out" / "api_load")
    ap.add_argument("--no-docs", action="store_true", help="do not write the figures into docs/performance.md")
    args = ap.parse_args(argv)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    corpus = args.corpus.resolve()
    befores = {baseline_label(tree): tree for tree in (args.before or DEFAULT_BEFORE)}
    labels = (*befores, THIS)
    trees = {label: prepare(tree, label, work, corpus, args.reindex) for label, tree in befores.items()}
    trees[THIS] = prepare(ROOT, THIS, work, corpus, args.reindex)
    load_before = os.getloadavg()
    extra_size = corpus_mod.parse_size(args.extra)
    extras = [] if args.no_indexing else [extra_corpus(work, extra_size, 100 + r) for r in range(args.rounds)]
    phases: dict[str, dict[str, list[dict]]] = {"idle": {k: [] for k in labels}, "indexing": {k: [] for k in labels}}
    try:
        for t in trees.values():
            start_server(t, corpus)
        for t in trees.values():
            took = wait_indexed(t, journals_of(corpus))
            print(f"[{t.label}] serving on {t.port} ({took:.1f} s to ready)", flush=True)
        paths = plan(corpus, trees[THIS])
        (work / "plan.json").write_text(json.dumps(paths, indent=0))
        print(f"{len(paths)} requests in the mix (listed in {work / 'plan.json'}); {args.clients} clients", flush=True)
        for t in trees.values():  # warm-up: both servers have answered every request once
            load(t, paths, args.clients, 2)
        for r in range(args.rounds):
            order = labels[r % len(labels) :] + labels[: r % len(labels)]  # each takes the load first in turn
            for label in order:
                phase = load(trees[label], paths, args.clients, args.seconds)
                phases["idle"][label].append(phase)
                print(
                    f"round {r + 1} idle {label:8}: {phase['rps']:7} req/s  p50 {phase['p50_ms']:7} ms  "
                    f"p95 {phase['p95_ms']:7} ms  cpu {phase['cpu_ms_per_request']} ms/req  {phase['statuses']}",
                    flush=True,
                )
            if extras:
                for label in order:
                    phase = load_while_indexing(trees[label], paths, args.clients, extras[r], f"round{r + 1}")
                    phases["indexing"][label].append(phase)
                    print(
                        f"round {r + 1} indexing {label:8}: {phase['rps']:7} req/s  p50 {phase['p50_ms']:7} ms  "
                        f"p95 {phase['p95_ms']:7} ms  cpu {phase['cpu_ms_per_request']} ms/req  "
                        f"{phase['statuses']} ({phase['seconds']} s)",
                        flush=True,
                    )
    finally:
        for t in trees.values():
            stop_server(t)
    result: dict = {
        "clients": args.clients,
        "rounds": args.rounds,
        "seconds": args.seconds,
        "corpus": corpus.name,
        "corpus_mb": round(sum(p.stat().st_size for p in corpus.rglob("*.jsonl")) / run.MB),
        "extra": args.extra,
        "before": [f"{tree} ({git_head(tree)})" for tree in befores.values()],
        "this": git_head(ROOT),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load": [round(x, 1) for x in load_before],
        "labels": labels,
    }
    for name in ("idle", "indexing"):
        if all(phases[name][k] for k in labels):
            result[name] = {k: summary(phases[name][k]) for k in labels}
            for label in befores:
                result.setdefault("ratios", {}).setdefault(label, {})[name] = ratios(
                    result[name][label], result[name][THIS]
                )
    print(json.dumps(result))
    if args.profile:
        profile(trees[THIS], corpus, paths, args.clients, args.seconds, work)
    if not args.no_docs and "indexing" in result:
        if not docs_figures.replace_between(DOCS_START, DOCS_END, markdown(result)):
            print(f"docs/performance.md has no markers {DOCS_START!r}: figures not written")
    return 0


def baseline_label(tree: Path) -> str:
    """A baseline's name in the figures: its commit (its folder's name when it is not a checkout)."""
    head = git_head(tree)
    return head if head != "?" else tree.name


def git_head(tree: Path) -> str:
    r = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "?"


if __name__ == "__main__":
    raise SystemExit(main())
