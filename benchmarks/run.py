"""The benchmark suite in one command.

    python -m benchmarks.run                      # 500 MB corpus, every measurement
    python -m benchmarks.run --quick              # 50 MB corpus, a smoke run
    python -m benchmarks.run --sizes 250MB,500MB,1GB   # linearity: cold index MB/s per size
    python -m benchmarks.run --before TREE        # the headline figures against another checkout (benchmarks/before.py)

Generates (or reuses) a corpus with benchmarks/corpus.py, then measures in one run:
the bare-FTS5 floor (benchmarks/floor.py), the cold index (`pimem index`, in a child
process: throughput, peak RSS, index size), correctness (planted needles found in their
project and not outside it, planted secrets never search terms nor in a read), the time
from appending an entry to it being searchable, in-process search and read latency, and,
API latency over HTTP (`pimem serve`), idle and during a cold backfill.
Prints a table with the targets of issues 3, 4 and 8 and writes the figures as JSON
(comparing with the previous JSON at the same path when there is one).

Figures come from a shared 2-core machine: they are noisy; the ratios matter most. The
floor and the cold index are each measured twice, interleaved, and the best of each is
compared (the same treatment for both); every run is kept in the JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pi_lines
from benchmarks import corpus as corpus_mod
from benchmarks import docs_figures
from benchmarks import floor as floor_mod

if TYPE_CHECKING:
    from pimem_index.replies import ReadReply

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


MB = 1024 * 1024
PY = sys.executable

# name: (comparison, target, source, unit)
TARGETS = {
    "cold_index_mb_s": (">=", 23 * 1.7, "issue 8: >= 1.7 x the reference's 23 MB/s", "MB/s"),
    "cold_vs_floor": (">=", 0.85, "issue 8: >= 0.85 of the bare-FTS5 floor", "x"),
    "floor_mb_s": (None, None, "bare FTS5 inserts of the same text into the index's kind of table (one core)", "MB/s"),
    "floor_positions_mb_s": (
        None,
        None,
        "the same into a table with positions (detail=full, as before schema 3)",
        "MB/s",
    ),
    "cold_vs_positions_floor": (None, None, "cold index / the floor with positions", "x"),
    "floor_tuned_mb_s": (None, None, "the same with FTS5 hashsize=16MB (fewer, larger segments)", "MB/s"),
    "cold_vs_tuned_floor": (None, None, "cold index / tuned floor", "x"),
    "cold_mb_per_cpu_s": (None, None, "cold index, MB of journal per CPU-second of the indexer", "MB/s"),
    "text_share": (None, None, "indexable text / journal bytes in this corpus", "ratio"),
    "parse_mb_s": (None, None, "read + pimem_index.journal.parse_line, one core", "MB/s"),
    "redact_mb_s": (None, None, "pimem_index.redaction.redact on the extracted text, one core", "MB/s"),
    "index_share": ("<=", 0.10, "issue 8: index <= 10% of journal bytes", "ratio"),
    "floor_fts_share": (None, None, "bare FTS5 terms alone, optimized: the least an index can take", "ratio"),
    "peak_rss_mb": ("<=", 300, "issue 8: <= 300 MB whatever the corpus size", "MB"),
    "fresh_ms_p50": ("<=", 50, "issue 8: appended entry searchable within 50 ms", "ms"),
    "fresh_ms_max": ("<=", 50, "issue 8 (worst of the runs, small and large journals)", "ms"),
    "search_p50_ms": ("<=", 10, "issue 3: project search p50 (with excerpts)", "ms"),
    "search_p95_ms": ("<=", 50, "issue 3: project search p95", "ms"),
    "search_needle_p50_ms": (None, None, "rare words (planted needles), project scope", "ms"),
    "search_needle_p95_ms": (None, None, "", "ms"),
    "search_common_p50_ms": (None, None, "common words and phrases, project scope", "ms"),
    "search_common_p95_ms": (None, None, "", "ms"),
    "read_p50_ms": ("<=", 5, "issue 3: read p50", "ms"),
    "usage_ms": (
        "<=",
        200,
        "issue 17: pimem usage (every grouping, global) p50; <= 200 ms here is < 1 s at 2.5 GB",
        "ms",
    ),
    "usage_max_ms": (None, None, "the slowest grouping", "ms"),
    "usage_cli_ms": (
        None,
        None,
        "`pimem usage --by model --no-index --json` as a process (Python start included)",
        "ms",
    ),
    "sessions_ms": (None, None, "`pimem sessions` first page of 20, global, p50", "ms"),
    "api_search_p50_ms": ("<=", 15, "issue 4: HTTP API search p50", "ms"),
    "api_search_p95_ms": ("<=", 60, "issue 4: HTTP API search p95", "ms"),
    "api_backfill_p95_ms": ("<=", 150, "issue 4: API p95 during a cold backfill", "ms"),
    "needles_found": ("==", 1.0, "planted words found in their project", "ratio"),
    "needles_leaked": ("==", 0, "planted words found from another project's scope", "count"),
    "secret_terms": ("==", 0, "planted secrets that are search terms", "count"),
    "secret_in_read": ("==", 0, "planted secrets shown by read/excerpts", "count"),
    "stale_excerpts": ("==", 0, "search hits whose journal line could not be reread", "count"),
    "linearity_spread": ("<=", 0.15, "issue 8: MB/s within 15% across sizes", "ratio"),
    "linearity_spread_cpu": ("<=", 0.15, "the same in MB per CPU-second (less noisy)", "ratio"),
    "floor_linearity_spread": (None, None, "the floor's own spread (FTS5 merges grow with size)", "ratio"),
    "floor_linearity_spread_cpu": (None, None, "", "ratio"),
}

# FTS5 settings that make bulk inserts faster than the defaults (a larger in-memory term hash
# flushed less often): an indexer using them can beat the default floor, so it is measured too.
TUNED_FTS = ["hashsize=16777216"]


# --------------------------------------------------------------------------- helpers


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


def loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*.jsonl") if p.is_file())


def db_files_bytes(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(path) + suffix)
        if p.exists():
            total += p.stat().st_size
    return total


def remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(path) + suffix)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(agent_dir: Path) -> dict:
    """Children see an empty agent folder, so ~/.pi/agent/sessions is never indexed.

    They keep their bytecode (under benchmarks/out/pycache) even where PYTHONDONTWRITEBYTECODE
    is set, as an installed pimem does: otherwise every child compiles pimem's sources
    again (about 45 ms a start) and the figures measure the compiler.
    """
    env = dict(os.environ)
    env["PI_CODING_AGENT_DIR"] = str(agent_dir)
    env.pop("PIMEM_SESSIONS_DIRS", None)
    env.pop("PIMEM_DB", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(HERE / "out" / "pycache")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _tree_rss_kb(pid: int, hwm: dict[int, int]) -> int:
    """RSS of a process and its descendants, in kB (Linux /proc); records each one's VmHWM in `hwm`."""
    total = 0
    stack = [pid]
    seen = set()
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        hwm[p] = max(hwm.get(p, 0), int(line.split()[1]))
                    elif line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue
    return total


def run_measured(cmd: list[str], env: dict, timeout: float) -> dict:
    """Run a child; wall time, its peak RSS (wait4) and the peak RSS of its process tree (/proc)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT))
    peak_tree = [0]
    hwm: dict[int, int] = {}  # VmHWM per process: exact peaks (reset at exec, unlike ru_maxrss)
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak_tree[0] = max(peak_tree[0], _tree_rss_kb(proc.pid, hwm))
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []
    readers = [
        threading.Thread(target=lambda s=s, c=c: c.append(s.read()), daemon=True)
        for s, c in ((proc.stdout, out_chunks), (proc.stderr, err_chunks))
    ]
    for r in readers:
        r.start()
    deadline = time.monotonic() + timeout
    rusage = None
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            rusage = ru
            proc.returncode = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, ru = os.wait4(proc.pid, 0)
            rusage = ru
            proc.returncode = -9
            break
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    done.set()
    for r in readers:
        r.join(5)
    return {
        "returncode": proc.returncode,
        "seconds": wall,
        # ru_maxrss of a forked child starts at the parent's RSS: only VmHWM/VmRSS samples are used
        "peak_rss_mb": round(max(hwm.values(), default=0) / 1024, 1),
        "peak_tree_rss_mb": round(peak_tree[0] / 1024, 1),
        "ru_maxrss_mb": round(rusage.ru_maxrss / 1024, 1) if rusage else None,
        "user_s": round(rusage.ru_utime, 2) if rusage else None,
        "sys_s": round(rusage.ru_stime, 2) if rusage else None,
        "stdout": b"".join(out_chunks).decode("utf-8", "replace"),
        "stderr": b"".join(err_chunks).decode("utf-8", "replace"),
    }


# --------------------------------------------------------------------------- stages


# Common words and phrases every project holds: the queries that find many entries (search_results.py uses them too).
COMMON_QUERIES = (
    "return",
    "error",
    "import os",
    "def test",
    "self value",
    "config file",
    "TODO",
    "connection reset",
    "parse json error",
    "the function returns None",
    "license",
    "install",
    "README",
    "class",
    "string",
    "buffer size",
    "permission denied",
    "timeout",
    "http request",
    "unicode",
)


class Bench:
    def __init__(self, args):
        self.args = args
        self.metrics: dict[str, Any] = {}
        self.notes: dict[str, str] = {}
        self.details: dict[str, Any] = {}
        self.work = Path(args.work or (HERE / "out" / "work")).resolve()
        self.work.mkdir(parents=True, exist_ok=True)
        self.agent = self.work / "agent"
        self.agent.mkdir(exist_ok=True)
        self.env = child_env(self.agent)
        self.manifest: dict | None = None
        self.corpus: Path | None = None
        self.journal_bytes = 0
        self.code_start = code_digest()
        self.db_cwds: list[str] = []  # without a manifest, queries run from the index's own folders

    def log(self, msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)

    def unavailable(self, keys: list[str], why: str) -> None:
        for k in keys:
            self.metrics.setdefault(k, None)
            self.notes[k] = why

    # corpus ------------------------------------------------------------------
    def ensure_corpus(self, size: int, seed: int, where: str | None) -> Path:
        path = Path(where) if where else HERE / "corpus" / f"{corpus_mod.format_size(size)}-s{seed}"
        man = path / "manifest.json"
        if man.exists():
            m = json.loads(man.read_text())
            if where or (
                m.get("size_requested") == size
                and m.get("seed") == seed
                and m.get("corpus_version") == corpus_mod.CORPUS_VERSION
            ):
                problems = corpus_mod.verify(path) if self.args.verify_corpus else []
                if not problems:
                    self.log(f"reusing corpus {path} ({m['bytes'] / MB:.0f} MB, {m['files_count']} journals)")
                    self.manifest = m
                    return path
                self.log(f"corpus {path} does not match its manifest ({problems[0]}); regenerating")
        elif where and path.exists() and any(path.rglob("*.jsonl")):
            self.log(f"using journals in {path} without a manifest: correctness checks are skipped")
            self.manifest = None
            return path
        self.log(f"generating a {corpus_mod.format_size(size)} corpus in {path} (seed {seed})")
        t = time.perf_counter()
        # in a child process: the text pool must not stay in this process's memory
        subprocess.run(
            [PY, "-m", "benchmarks.corpus", str(path), "--size", str(size), "--seed", str(seed)],
            check=True,
            cwd=str(ROOT),
            stdout=subprocess.DEVNULL,
        )
        self.manifest = json.loads((path / "manifest.json").read_text())
        self.log(
            f"  {self.manifest['files_count']} journals, {self.manifest['bytes'] / MB:.1f} MB "
            f"in {time.perf_counter() - t:.1f} s"
        )
        self.details["corpus_generate_seconds"] = round(time.perf_counter() - t, 2)
        return path

    # floor -------------------------------------------------------------------
    def floor(
        self, corpus: Path, label: str = "floor", config: Sequence[str] = (), fts_options: str | None = None
    ) -> dict | None:
        env = dict(self.env, PIMEM_BENCH_TMP=str(self.work))
        extra = [a for c in config for a in ("--config", c)]
        if fts_options:
            extra += ["--fts-options", fts_options]
        r = run_measured([PY, "-m", "benchmarks.floor", str(corpus), "--json", *extra], env, timeout=3600)
        if r["returncode"] != 0:
            self.log(f"  floor failed: {r['stderr'].strip().splitlines()[-1:]}")
            return None
        data = json.loads(r["stdout"])
        self.log(
            f"  {label}: {data['floor_mb_per_s']} MB/s of journal ({data['text_mb_per_s']} MB/s of text, "
            f"text is {data['text_share']:.0%} of journal bytes; {data['insert_seconds']} s of inserts)"
        )
        return data

    # cold index --------------------------------------------------------------
    def cold_index(self, corpus: Path, db_path: Path) -> dict | None:
        remove_db(db_path)
        cmd = [PY, "-m", "pimem_index", "index", "--sessions-dir", str(corpus), "--db", str(db_path), "--json"]
        how = "pimem index --json (child process)"
        load = loadavg()
        r = run_measured(cmd, self.env, timeout=7200)
        if r["returncode"] != 0:
            self.log(f"  cold index failed ({how}): {r['stderr'].strip()[-600:]}")
            return None
        try:
            report = json.loads(r["stdout"][r["stdout"].index("{") :])
        except ValueError:
            report = {}
        jb = self.journal_bytes or dir_bytes(corpus)
        res = {
            "how": how,
            "wall_seconds": round(r["seconds"], 3),
            "report": report,
            "mb_s_wall": round(jb / MB / r["seconds"], 2),
            "mb_s_report": round(jb / MB / report["seconds"], 2) if report.get("seconds") else None,
            "peak_rss_mb": r["peak_rss_mb"],
            "peak_tree_rss_mb": r["peak_tree_rss_mb"],
            "user_s": r["user_s"],
            "sys_s": r["sys_s"],
            "cpu_per_wall": round((r["user_s"] + r["sys_s"]) / r["seconds"], 2),
            "mb_per_cpu_s": round(jb / MB / (r["user_s"] + r["sys_s"]), 2),
            "loadavg_before": load,
        }
        res["db_bytes_files"] = db_files_bytes(db_path)
        res.update(self.db_stats(db_path))
        self.log(
            f"  cold index: {res['wall_seconds']:.1f} s wall = {res['mb_s_wall']} MB/s; "
            f"peak RSS {res['peak_rss_mb']} MB (tree {res['peak_tree_rss_mb']} MB); CPU {res['cpu_per_wall']} cores; "
            f"index {res['db_bytes_files'] / MB:.1f} MB on disk"
        )
        return res

    def db_stats(self, db_path: Path) -> dict:
        try:
            from pimem_index import db as pdb

            conn = pdb.connect(str(db_path))
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                page = conn.execute("PRAGMA page_size").fetchone()[0]
                pages = conn.execute("PRAGMA page_count").fetchone()[0]
                free = conn.execute("PRAGMA freelist_count").fetchone()[0]
                out = {"db_bytes": db_files_bytes(db_path), "db_used_bytes": page * (pages - free)}
                with contextlib.suppress(Exception):
                    out["entries"] = conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
                    out["files"] = conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
                with contextlib.suppress(Exception):  # the FTS5 term index (no dbstat in pysqlite3-binary)
                    out["fts_data_bytes"] = conn.execute("SELECT SUM(length(block)) FROM entries_fts_data").fetchone()[
                        0
                    ]
                    out["fts_segments"] = conn.execute("SELECT COUNT(*) FROM entries_fts_data").fetchone()[0]
                return out
            finally:
                conn.close()
        except Exception as e:  # noqa: BLE001
            return {"db_stats_error": repr(e)}

    # in-process queries ------------------------------------------------------
    def open_lib(self, db_path: Path, extra_dirs: list[Path]):
        from pimem_index import locations, store

        conn = store.open_index(str(db_path))
        loc = locations.resolve(db=str(db_path), sessions_dirs=[str(self.corpus)] + [str(d) for d in extra_dirs])
        return conn, loc

    def queries(self) -> list[dict]:
        """Project-scoped queries: needle words (from their own cwd) and common words."""
        rng = random.Random(7)
        qs: list[dict] = []
        m = self.manifest
        cwds = sorted(m["projects"]) if m else self.db_cwds
        if m:  # as many needle queries as common ones, so neither dominates the percentiles
            for rec in rng.sample(m["needles"], min(20, len(m["needles"]))):
                p = rec["placements"][0]
                qs.append({"group": "needle", "q": rec["word"], "cwd": p["cwd"]})
        for i, q in enumerate(COMMON_QUERIES):
            cwd = cwds[i % len(cwds)] if cwds else os.getcwd()
            qs.append({"group": "common", "q": q, "cwd": cwd})
        qs.append({"group": "recent", "q": "", "cwd": cwds[0] if cwds else os.getcwd()})
        rng.shuffle(qs)
        return qs

    def search_bench(self, db_path: Path) -> None:
        from pimem_index.search import query

        conn, loc = self.open_lib(db_path, [])
        with contextlib.suppress(Exception):
            self.db_cwds = [
                r[0]
                for r in conn.execute(
                    "SELECT cwd FROM files WHERE cwd IS NOT NULL GROUP BY cwd ORDER BY COUNT(*) DESC LIMIT 12"
                )
            ]
        home = "/home/u"  # the corpus's home: makes project roots match the manifest's

        def search(q, **kw):
            return query.search(conn, loc, q or None, home=home, **kw)

        # correctness ---------------------------------------------------------
        m = self.manifest
        if m:
            found = total = leaked = 0
            misses = []
            for rec in m["needles"]:
                for p in rec["placements"]:
                    total += 1
                    res = search(rec["word"], scope="project", cwd=p["cwd"], limit=100)
                    ids = {(h.get("session_id"), h.get("id")) for h in res.get("results", [])}
                    if (p["session_id"], p["entry_id"]) in ids:
                        found += 1
                    else:
                        misses.append(f"{rec['word']} ({p['field']}, {p['entry_id']}, v{p['version']})")
                    others = [o for o in rec["placements"] if o["project"] != p["project"]]
                    for o in others:
                        if (o["session_id"], o["entry_id"]) in ids:
                            leaked += 1
            self.metrics["needles_found"] = round(found / total, 4) if total else None
            self.metrics["needles_leaked"] = leaked
            self.details["needle_misses"] = misses[:20]
            self.log(
                f"  needles: {found}/{total} found in their project, {leaked} leaked across projects"
                + (f"; missing e.g. {misses[:3]}" if misses else "")
            )
            terms = shown = 0
            secret_hits = []
            for s in m["secrets"]:
                for probe in s["probes"]:
                    res = search(probe, scope="global", limit=5)
                    if res.get("match") == "all" and res.get("results"):
                        terms += 1
                        secret_hits.append(f"{s['secret_kind']}: {probe[:6]}… is a term")
                        break

                def read_page(s: dict = s, offset: int = 0) -> ReadReply:
                    return query.read(
                        conn,
                        loc,
                        s["entry_id"],
                        session_id=s["session_id"],
                        cwd=s["cwd"],
                        scope="global",
                        offset=offset,
                        home=home,
                    )

                r = read_page()
                text = r.get("text") or ""
                pages = 0
                while r.get("next_offset") and s["value"] not in text and pages < 50:
                    pages += 1
                    r = read_page(offset=r.get("next_offset") or 0)
                    text = r.get("text") or ""
                if s["value"] in text or any(p in text for p in s["probes"]):
                    shown += 1
                    secret_hits.append(f"{s['secret_kind']}: shown by read")
            self.metrics["secret_terms"] = terms
            self.metrics["secret_in_read"] = shown
            self.details["secret_problems"] = secret_hits
            self.log(
                f"  secrets: {terms}/{len(m['secrets'])} searchable, {shown} shown by read"
                + (f" ({secret_hits[:4]})" if secret_hits else "")
            )
        # latency -----------------------------------------------------------------
        qs = self.queries()
        for q in qs:  # warm-up
            search(q["q"], scope="project", cwd=q["cwd"], limit=10)
        times: dict[str, list[float]] = {"needle": [], "common": [], "recent": []}
        hits_for_read: list[dict] = []
        stale = 0
        for _round in range(self.args.rounds):
            for q in qs:
                t = time.perf_counter()
                res = search(q["q"], scope="project", cwd=q["cwd"], limit=10)
                times[q["group"]].append(time.perf_counter() - t)
                if _round == 0:
                    stale += sum(1 for h in res.get("results", []) if h.get("stale"))
                    for h in res.get("results", [])[:3]:
                        hits_for_read.append(
                            {"id": h["id"], "session_id": h["session_id"], "cwd": q["cwd"], "chars": h.get("chars")}
                        )
        self.metrics["stale_excerpts"] = stale
        allt = [x for v in times.values() for x in v]
        self.metrics["search_p50_ms"] = ms(pct(allt, 0.5))
        self.metrics["search_p95_ms"] = ms(pct(allt, 0.95))
        for g in ("needle", "common"):
            if times[g]:
                self.metrics[f"search_{g}_p50_ms"] = ms(pct(times[g], 0.5))
                self.metrics[f"search_{g}_p95_ms"] = ms(pct(times[g], 0.95))
        self.details["search_ms_by_group"] = {
            g: {"n": len(v), "p50": ms(pct(v, 0.5)), "p95": ms(pct(v, 0.95)), "max": ms(max(v))}
            for g, v in times.items()
            if v
        }
        self.log(
            f"  search (project scope, {len(allt)} calls): p50 {self.metrics['search_p50_ms']} ms, "
            f"p95 {self.metrics['search_p95_ms']} ms; by group {self.details['search_ms_by_group']}"
        )
        # slowest queries, for the report
        per_query = []
        for q in qs:
            t = time.perf_counter()
            search(q["q"], scope="project", cwd=q["cwd"], limit=10)
            per_query.append((ms(time.perf_counter() - t), q["q"], q["cwd"]))
        self.details["slowest_searches"] = sorted(per_query, reverse=True)[:6]
        # reads -------------------------------------------------------------------
        rtimes = []
        for _round in range(self.args.rounds):
            for h in hits_for_read:
                t = time.perf_counter()
                r = query.read(conn, loc, h["id"], session_id=h["session_id"], cwd=h["cwd"], scope="project", home=home)
                rtimes.append(time.perf_counter() - t)
                if _round == 0 and r.get("status") != "ok":
                    self.details.setdefault("read_not_ok", []).append([h["id"], r.get("status")])
        if rtimes:
            self.metrics["read_p50_ms"] = ms(pct(rtimes, 0.5))
            self.details["read_p95_ms"] = ms(pct(rtimes, 0.95))
            self.log(
                f"  read ({len(rtimes)} calls): p50 {self.metrics['read_p50_ms']} ms, "
                f"p95 {self.details['read_p95_ms']} ms"
            )
        conn.close()

    # usage -------------------------------------------------------------------
    def usage_bench(self, db_path: Path) -> None:
        """activity.usage for every grouping and activity.sessions' first page over the whole index
        (warm, rounds), and `pimem usage` as a process, as a user runs it."""
        from pimem_index.search.request import USAGE_BY, SessionsRequest, UsageRequest
        from pimem_index.session import activity

        conn, _loc = self.open_lib(db_path, [])
        by_grouping: dict[str, list[float]] = {by: [] for by in USAGE_BY}
        sessions: list[float] = []
        for _round in range(self.args.rounds + 1):  # the first round warms the cache
            for by in USAGE_BY:
                t = time.perf_counter()
                activity.usage(conn, UsageRequest.create(by, home="/home/u"))
                if _round:
                    by_grouping[by].append(time.perf_counter() - t)
            t = time.perf_counter()
            activity.sessions(conn, SessionsRequest.create(home="/home/u"))
            if _round:
                sessions.append(time.perf_counter() - t)
        conn.close()
        every = [x for v in by_grouping.values() for x in v]
        self.metrics["usage_ms"] = ms(pct(every, 0.5))
        self.metrics["usage_max_ms"] = ms(max(every))
        self.metrics["sessions_ms"] = ms(pct(sessions, 0.5))
        self.details["usage_ms_by_grouping"] = {by: ms(pct(v, 0.5)) for by, v in by_grouping.items()}
        cli = [PY, "-m", "pimem_index", "usage", "--by", "model", "--no-index", "--json", "--db", str(db_path)]
        walls = []
        for _ in range(3):
            t = time.perf_counter()
            subprocess.run(cli, env=self.env, check=True, capture_output=True, timeout=120)
            walls.append(time.perf_counter() - t)
        self.metrics["usage_cli_ms"] = ms(min(walls))
        self.log(
            f"  usage p50 {self.metrics['usage_ms']} ms (max {self.metrics['usage_max_ms']} ms; by grouping "
            f"{self.details['usage_ms_by_grouping']}); sessions {self.metrics['sessions_ms']} ms; "
            f"pimem usage as a process {self.metrics['usage_cli_ms']} ms"
        )

    # freshness ---------------------------------------------------------------
    def freshness(self, db_path: Path) -> None:
        if not self.manifest:
            self.unavailable(["fresh_ms_p50", "fresh_ms_max"], "needs a generated corpus")
            return
        from pimem_index.index import indexer
        from pimem_index.search import query

        fresh_dir = self.work / "fresh"
        shutil.rmtree(fresh_dir, ignore_errors=True)
        files = [f for f in self.manifest["files"] if f["version"] == 3]
        small = min(files, key=lambda f: abs(f["bytes"] - 300_000))
        large = max(files, key=lambda f: f["bytes"])
        conn, loc = self.open_lib(db_path, [fresh_dir])
        out = {}
        all_times = []
        rng = random.Random(11)
        for label, f in (("small", small), ("large", large)):
            src = self.corpus / f["journal"]
            sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            dst = fresh_dir / src.parent.name / src.name.replace(f["session_id"], sid)
            dst.parent.mkdir(parents=True, exist_ok=True)
            with open(src, "rb") as fi, open(dst, "wb") as fo:
                head = json.loads(fi.readline())
                head["id"] = sid
                fo.write(json.dumps(head, separators=(",", ":")).encode() + b"\n")
                shutil.copyfileobj(fi, fo, 4 * MB)
            t = time.perf_counter()
            indexer.index_journal(conn, dst)
            first = time.perf_counter() - t
            last_id = f"{rng.getrandbits(32):08x}"
            times = []
            misses = 0
            for _run in range(self.args.fresh_runs):
                word = "frsh" + "".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(4))
                eid = f"{rng.getrandbits(32):08x}"
                now = time.time()
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"
                text = [{"type": "text", "text": f"remember {word} for later"}]
                line = pi_lines.message(pi_lines.At(eid, last_id, stamp), pi_lines.user(text, int(now * 1000)))
                last_id = eid
                with open(dst, "ab") as fo:
                    fo.write(pi_lines.dumps(line))
                t = time.perf_counter()
                indexer.index_journal(conn, dst)
                res = query.search(conn, loc, word, scope="project", cwd=f["cwd"], limit=10, home="/home/u")
                dt_ = time.perf_counter() - t
                if not any(h.get("id") == eid for h in res.get("results", [])):
                    misses += 1
                times.append(dt_)
                time.sleep(0.01)
            all_times += times
            out[label] = {
                "journal_mb": round(f["bytes"] / MB, 1),
                "first_index_ms": ms(first),
                "p50_ms": ms(pct(times, 0.5)),
                "max_ms": ms(max(times)),
                "misses": misses,
            }
            self.log(
                f"  fresh ({label} journal, {f['bytes'] / MB:.1f} MB): "
                f"append -> searchable p50 {out[label]['p50_ms']} ms, max {out[label]['max_ms']} ms, "
                f"misses {misses}/{len(times)}"
            )
        conn.close()
        self.metrics["fresh_ms_p50"] = ms(pct(all_times, 0.5))
        self.metrics["fresh_ms_max"] = ms(max(all_times))
        self.details["fresh"] = out
        # the CLI as a user runs it (includes interpreter start-up): information only
        dst_large = next(fresh_dir.rglob("*.jsonl"))
        r = run_measured(
            [
                PY,
                "-m",
                "pimem_index",
                "index",
                str(dst_large),
                "--sessions-dir",
                str(self.corpus),
                "--sessions-dir",
                str(fresh_dir),
                "--db",
                str(db_path),
                "--json",
            ],
            self.env,
            120,
        )
        self.details["fresh_cli_wall_ms"] = ms(r["seconds"])
        shutil.rmtree(fresh_dir, ignore_errors=True)

    # HTTP --------------------------------------------------------------------
    def serve(self, db_path: Path, port: int, log_name: str):
        log = open(self.work / log_name, "wb")
        cmd = [
            PY,
            "-m",
            "pimem_index",
            "serve",
            "--db",
            str(db_path),
            "--sessions-dir",
            str(self.corpus),
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
        ]
        proc = subprocess.Popen(
            cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT, cwd=str(ROOT), start_new_session=True
        )
        return proc, log

    def token(self, db_path: Path) -> str | None:
        r = subprocess.run(
            [PY, "-m", "pimem_index", "token", "--db", str(db_path), "--sessions-dir", str(self.corpus)],
            env=self.env,
            capture_output=True,
            text=True,
            cwd=str(ROOT),
            timeout=60,
        )
        if r.returncode != 0:
            r = subprocess.run(
                [PY, "-m", "pimem_index", "token"],
                env=self.env,
                capture_output=True,
                text=True,
                cwd=str(ROOT),
                timeout=60,
            )
        tok = r.stdout.strip().splitlines()[-1:] if r.returncode == 0 else []
        return tok[0].strip() if tok else None

    @staticmethod
    def stop(proc) -> None:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 15)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 9)
                proc.wait(5)

    def http_get(self, conn: http.client.HTTPConnection, path: str, token: str | None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, body

    def wait_ready(self, port: int, token: str | None, proc, timeout: float = 120) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                status, _ = self.http_get(c, "/-/pi-memory/api/status", token)
                c.close()
                if status < 500:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def api_path(self, q: dict) -> str:
        params = [("scope", "project"), ("cwd", q["cwd"]), ("limit", "10")]
        if q["q"]:
            params.insert(0, ("q", q["q"]))
        return "/-/pi-memory/api/search?" + urllib.parse.urlencode(params)

    def api_bench(self, db_path: Path) -> None:
        keys = ["api_search_p50_ms", "api_search_p95_ms", "api_backfill_p95_ms"]
        token = self.token(db_path)
        qs = self.queries()
        # 1. idle server on the built index
        port = free_port()
        proc, log = self.serve(db_path, port, "serve.log")
        try:
            if not self.wait_ready(port, token, proc):
                self.unavailable(keys[:2], "pimem serve did not answer (see benchmarks/out/work/serve.log)")
                self.log("  pimem serve did not answer")
            else:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                st, body = self.http_get(c, self.api_path(qs[0]), token)
                if st != 200:
                    self.unavailable(keys[:2], f"API search answered {st}: {body[:200]!r}")
                    self.log(f"  API search answered {st}: {body[:200]!r}")
                else:
                    self.wait_indexed(c, token, timeout=600)
                    found = total = 0
                    for rec in (self.manifest or {}).get("needles", [])[:20]:  # correctness through the API
                        p = rec["placements"][0]
                        st, body = self.http_get(c, self.api_path({"q": rec["word"], "cwd": p["cwd"]}), token)
                        total += 1
                        with contextlib.suppress(ValueError):
                            found += any(h.get("id") == p["entry_id"] for h in json.loads(body).get("results", []))
                    if total:
                        self.details["api_needles_found"] = f"{found}/{total}"
                        self.log(f"  API: {found}/{total} needles found")
                    for q in qs:
                        self.http_get(c, self.api_path(q), token)
                    times = []
                    for _ in range(self.args.rounds):
                        for q in qs:
                            t = time.perf_counter()
                            st, _ = self.http_get(c, self.api_path(q), token)
                            times.append(time.perf_counter() - t)
                    self.metrics["api_search_p50_ms"] = ms(pct(times, 0.5))
                    self.metrics["api_search_p95_ms"] = ms(pct(times, 0.95))
                    self.log(
                        f"  API search ({len(times)} calls): p50 {self.metrics['api_search_p50_ms']} ms, "
                        f"p95 {self.metrics['api_search_p95_ms']} ms"
                    )
                c.close()
        finally:
            self.stop(proc)
            log.close()
        # 2. a cold backfill: a new index, queries while it builds
        bdb = self.work / "backfill.sqlite"
        remove_db(bdb)
        port = free_port()
        t0 = time.perf_counter()
        proc, log = self.serve(bdb, port, "serve-backfill.log")
        try:
            if not self.wait_ready(port, token, proc):
                self.unavailable(keys[2:], "pimem serve (backfill) did not answer")
                return
            self.details["serve_ready_seconds"] = round(time.perf_counter() - t0, 2)
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            times = []
            statuses: dict[int, int] = {}
            complete_at = None
            i = 0
            deadline = time.monotonic() + self.args.backfill_timeout
            while time.monotonic() < deadline:
                q = qs[i % len(qs)]
                i += 1
                t = time.perf_counter()
                st, body = self.http_get(c, self.api_path(q), token)
                times.append(time.perf_counter() - t)
                statuses[st] = statuses.get(st, 0) + 1
                if st == 200 and i % 10 == 0:
                    try:
                        ind = json.loads(body).get("indexing", {})
                    except ValueError:
                        ind = {}
                    if ind.get("complete"):
                        complete_at = time.perf_counter() - t0
                        break
                time.sleep(0.02)
            c.close()
            self.metrics["api_backfill_p95_ms"] = ms(pct(times, 0.95))
            self.details["api_backfill"] = {
                "requests": len(times),
                "p50_ms": ms(pct(times, 0.5)),
                "max_ms": ms(max(times)),
                "statuses": statuses,
                "backfill_seconds": round(complete_at, 1) if complete_at else None,
                "backfill_mb_s": round(self.journal_bytes / MB / complete_at, 2) if complete_at else None,
            }
            self.log(
                f"  API during cold backfill ({len(times)} calls): p95 {self.metrics['api_backfill_p95_ms']} ms, "
                f"max {self.details['api_backfill']['max_ms']} ms; backfill took "
                f"{self.details['api_backfill']['backfill_seconds']} s"
            )
        finally:
            self.stop(proc)
            log.close()
            remove_db(bdb)

    def wait_indexed(self, c, token, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st, body = self.http_get(c, "/-/pi-memory/api/status", token)
            try:
                data = json.loads(body)
            except ValueError:
                return
            if st != 200 or not data.get("journals_pending"):
                return
            time.sleep(0.5)

    # the whole run -----------------------------------------------------------
    def run(self) -> dict:
        a = self.args
        size = corpus_mod.parse_size(a.size)
        self.log(f"machine: {os.cpu_count()} cores, load {loadavg()}; python {platform.python_version()}")
        self.corpus = self.ensure_corpus(size, a.seed, a.corpus)
        self.journal_bytes = dir_bytes(self.corpus)
        db_path = self.work / "history.sqlite"
        self.log("floor (bare FTS5 inserts)")
        floors = [f for f in (self.floor(self.corpus, "floor #1"),) if f]
        self.log("cold index")
        colds = [c for c in (self.cold_index(self.corpus, db_path),) if c]
        if not a.no_second_floor:  # both measured twice, interleaved, the best of each kept
            f2 = self.floor(self.corpus, "floor #2")
            if f2:
                floors.append(f2)
            c2 = self.cold_index(self.corpus, db_path)
            if c2:
                colds.append(c2)
        floor = max(floors, key=lambda f: f["floor_mb_per_s"]) if floors else None
        cold = max(colds, key=lambda c: c["mb_s_wall"]) if colds else None
        if cold:
            self.details["cold_runs_mb_s"] = [c["mb_s_wall"] for c in colds]
            cold = dict(
                cold,
                peak_tree_rss_mb=max(c["peak_tree_rss_mb"] or 0 for c in colds),
                peak_rss_mb=max(c["peak_rss_mb"] or 0 for c in colds),
            )
        if not a.no_tuned_floor:
            tuned = self.floor(self.corpus, "tuned floor (hashsize=16MB)", TUNED_FTS)
            if tuned:
                self.details["floor_tuned"] = tuned
                self.metrics["floor_tuned_mb_s"] = tuned["floor_mb_per_s"]
                if cold:
                    self.metrics["cold_vs_tuned_floor"] = round(cold["mb_s_wall"] / tuned["floor_mb_per_s"], 3)
        if not a.no_positions_floor:  # the term index as it was before schema 3: a reference
            positions = self.floor(
                self.corpus, "floor with positions (detail=full)", fts_options=floor_mod.positions_fts_options()
            )
            if positions:
                self.details["floor_positions"] = positions
                self.metrics["floor_positions_mb_s"] = positions["floor_mb_per_s"]
                if cold:
                    self.metrics["cold_vs_positions_floor"] = round(cold["mb_s_wall"] / positions["floor_mb_per_s"], 3)
        if floor:
            self.metrics["floor_mb_s"] = floor["floor_mb_per_s"]
            self.details["floor"] = floor
            self.details["floor_runs_mb_s"] = [f["floor_mb_per_s"] for f in floors]
            self.metrics["text_share"] = floor["text_share"]
            self.metrics["parse_mb_s"] = floor.get("extract_mb_per_s")
            self.metrics["redact_mb_s"] = floor.get("redact_mb_per_s")
            self.metrics["floor_fts_share"] = floor["fts_share"]
        if cold:
            self.details["cold_index"] = cold
            self.metrics["cold_index_mb_s"] = cold["mb_s_wall"]
            self.metrics["cold_mb_per_cpu_s"] = cold["mb_per_cpu_s"]
            self.metrics["peak_rss_mb"] = max(cold["peak_rss_mb"] or 0, cold["peak_tree_rss_mb"] or 0)
            self.metrics["index_share"] = round(cold["db_bytes_files"] / self.journal_bytes, 4)
            if floor:
                self.metrics["cold_vs_floor"] = round(cold["mb_s_wall"] / floor["floor_mb_per_s"], 3)
            if self.manifest and "entries" in cold:
                expected = sum(self.manifest["entries_by_kind"].values())
                self.details["entries_indexed_vs_manifest"] = [cold["entries"], expected]
                if cold["entries"] != expected:
                    self.log(f"  note: {cold['entries']} entries indexed, the manifest lists {expected}")
        else:
            self.unavailable(
                ["cold_index_mb_s", "cold_vs_floor", "peak_rss_mb", "index_share"], "the cold index failed"
            )
        if cold:
            self.log("search and read (in-process)")
            try:
                self.search_bench(db_path)
            except Exception:  # noqa: BLE001
                self.record_failure(["search_p50_ms", "search_p95_ms", "read_p50_ms"])
            self.log("usage and sessions (in-process and pimem usage)")
            try:
                self.usage_bench(db_path)
            except Exception:  # noqa: BLE001
                self.record_failure(["usage_ms", "usage_max_ms", "usage_cli_ms", "sessions_ms"])
            self.log("append -> searchable")
            try:
                self.freshness(db_path)
            except Exception:  # noqa: BLE001
                self.record_failure(["fresh_ms_p50", "fresh_ms_max"])
            if not a.no_api:
                self.log("HTTP API")
                try:
                    self.api_bench(db_path)
                except Exception:  # noqa: BLE001
                    self.record_failure(["api_search_p50_ms", "api_search_p95_ms", "api_backfill_p95_ms"])
        else:
            self.unavailable(
                [
                    "search_p50_ms",
                    "search_p95_ms",
                    "read_p50_ms",
                    "fresh_ms_p50",
                    "fresh_ms_max",
                    "api_search_p50_ms",
                    "api_search_p95_ms",
                    "api_backfill_p95_ms",
                ],
                "needs the cold index (it failed)",
            )
        return self.result()

    def record_failure(self, keys: list[str]) -> None:
        tb = traceback.format_exc()
        self.log("  failed: " + tb.strip().splitlines()[-1])
        self.details.setdefault("errors", []).append(tb[-2000:])
        for k in keys:
            if self.metrics.get(k) is None:
                self.unavailable([k], "failed: " + tb.strip().splitlines()[-1][:160])

    def run_linearity(self, sizes: list[int]) -> dict:
        a = self.args
        rows = []
        for size in sizes:
            self.log(f"== {corpus_mod.format_size(size)}")
            path = self.ensure_corpus(size, a.seed, None)
            self.corpus = path
            self.journal_bytes = dir_bytes(path)
            fl = self.floor(path)
            cold = self.cold_index(path, self.work / f"lin-{corpus_mod.format_size(size)}.sqlite")
            row: dict[str, Any] = {
                "size": corpus_mod.format_size(size),
                "journal_mb": round(self.journal_bytes / MB, 1),
                "floor_mb_s": fl["floor_mb_per_s"] if fl else None,
                "cold_mb_s": cold["mb_s_wall"] if cold else None,
                "floor_mb_per_cpu_s": fl.get("floor_mb_per_cpu_s") if fl else None,
                "cold_mb_per_cpu_s": cold["mb_per_cpu_s"] if cold else None,
                "cold_cpu_per_wall": cold["cpu_per_wall"] if cold else None,
                "loadavg": loadavg(),
                "peak_rss_mb": max(cold["peak_rss_mb"] or 0, cold["peak_tree_rss_mb"] or 0) if cold else None,
                "index_share": round(cold["db_bytes_files"] / self.journal_bytes, 4) if cold else None,
            }
            if cold:
                remove_db(self.work / f"lin-{corpus_mod.format_size(size)}.sqlite")
            rows.append(row)
        self.details["linearity"] = rows
        for key, metric in (
            ("cold_mb_s", "linearity_spread"),
            ("floor_mb_s", "floor_linearity_spread"),
            ("cold_mb_per_cpu_s", "linearity_spread_cpu"),
            ("floor_mb_per_cpu_s", "floor_linearity_spread_cpu"),
        ):
            vals = [r[key] for r in rows if r[key]]
            if len(vals) >= 2:
                self.metrics[metric] = round((max(vals) - min(vals)) / max(vals), 3)
        if not any(r["cold_mb_s"] for r in rows):
            self.unavailable(["linearity_spread"], "every cold index failed")
        return self.result()

    def result(self) -> dict:
        m = self.manifest or {}
        return {
            "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "machine": {
                "cpus": os.cpu_count(),
                "cpu": _cpu_model(),
                "platform": platform.platform(),
                "python": platform.python_version(),
                "sqlite": _sqlite_version(),
                "loadavg_end": loadavg(),
                "git": _git_head(),
                "code_digest_start": self.code_start,
                "code_digest_end": code_digest(),
            },
            "corpus": {
                "path": str(self.corpus),
                "bytes": self.journal_bytes,
                "journals": m.get("files_count")
                or (sum(1 for _ in self.corpus.rglob("*.jsonl")) if self.corpus else None),
                "seed": m.get("seed"),
                "entries_by_kind": m.get("entries_by_kind"),
                "text_pool": m.get("text_pool"),
            },
            "metrics": self.metrics,
            "notes": self.notes,
            "details": self.details,
        }


def _cpu_model() -> str | None:
    with contextlib.suppress(OSError):
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return None


def _sqlite_version() -> str | None:
    with contextlib.suppress(Exception):
        from pimem_index import db

        return db.sqlite3.sqlite_version
    return None


def code_digest() -> str:
    """A digest of the code under test (the working tree, committed or not)."""
    import hashlib

    h = hashlib.sha256()
    for pkg in ("pimem_index", "datasette_pi_memory"):
        for p in sorted((ROOT / pkg).rglob("*")):
            if p.is_file() and p.suffix in (".py", ".yaml", ".html", ".json", ".ts"):
                h.update(str(p.relative_to(ROOT)).encode())
                h.update(p.read_bytes())
    return h.hexdigest()[:12]


def _git_head() -> str | None:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=str(ROOT))
    return r.stdout.strip() or None


# --------------------------------------------------------------------------- report


def verdict(name: str, value) -> str:
    t = TARGETS.get(name)
    if value is None or not t or t[0] is None:
        return ""
    op, target = t[0], t[1]
    ok = {"<=": value <= target, ">=": value >= target, "==": value == target}[op]
    return "ok" if ok else "MISS"


def fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


def print_table(result: dict, previous: dict | None) -> None:
    metrics = result["metrics"]
    prev = (previous or {}).get("metrics", {})
    order = [k for k in TARGETS if k in metrics] + [k for k in metrics if k not in TARGETS]
    rows = [("figure", "value", "target", "", "previous", "change", "what")]
    for k in order:
        v = metrics[k]
        t = TARGETS.get(k, (None, None, "", ""))
        target = f"{t[0]} {fmt(t[1])}" if t[0] else ""
        pv = prev.get(k)
        change = ""
        if isinstance(v, (int, float)) and isinstance(pv, (int, float)) and pv:
            change = f"{(v - pv) / abs(pv):+.0%}"
        what = result["notes"].get(k) or t[2]
        rows.append((k, fmt(v), target, verdict(k, v), fmt(pv) if previous else "", change, what))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    print()
    for i, r in enumerate(rows):
        print("  ".join(r[j].ljust(widths[j]) for j in range(6)) + "  " + r[6])
        if i == 0:
            print("  ".join("-" * w for w in widths) + "  " + "-" * 20)
    c = result["corpus"]
    mach = result["machine"]
    if mach.get("code_digest_start") != mach.get("code_digest_end"):
        print("\nWARNING: pimem_index or datasette_pi_memory changed during this run: the figures mix code versions")
    print(
        f"\ncorpus {c['bytes'] / MB:.1f} MB, {c['journals']} journals; machine {result['machine']['cpus']} cores "
        f"({result['machine']['cpu']}), load at end {result['machine']['loadavg_end']}; "
        f"SQLite {result['machine']['sqlite']}"
    )


DOCS = ROOT / "docs" / "performance.md"
FIGURES_START = "<!-- figures: written by benchmarks/run.py -->"
FIGURES_END = "<!-- end of figures -->"


def figures_markdown(result: dict) -> str:
    """The run's figures as a Markdown table, with the corpus and the machine they come from."""
    metrics = result["metrics"]
    order = [k for k in TARGETS if k in metrics] + [k for k in metrics if k not in TARGETS]
    c, mach = result["corpus"], result["machine"]
    lines = [
        f"Run {result['when']} at commit {mach.get('git') or '?'}: corpus {c['bytes'] / MB:,.1f} MB, "
        f"{c['journals']} journals; {mach['cpus']} cores ({mach['cpu']}), {mach['platform']}, "
        f"Python {mach['python']}, SQLite {mach['sqlite']}, load at the end {mach['loadavg_end']}.",
        "",
        "| figure | value | target | | what |",
        "|---|---|---|---|---|",
    ]
    for k in order:
        t = TARGETS.get(k, (None, None, "", ""))
        unit = f" {t[3]}" if t[3] and metrics[k] is not None else ""
        target = f"{t[0]} {fmt(t[1])}" if t[0] else ""
        what = (result["notes"].get(k) or t[2]).replace("|", "\\|")
        lines.append(f"| `{k}` | {fmt(metrics[k])}{unit} | {target} | {verdict(k, metrics[k])} | {what} |")
    return "\n".join(lines) + "\n"


def write_docs(result: dict, path: Path = DOCS) -> bool:
    """Replace the figures between the markers of docs/performance.md with this run's; False without markers."""
    return docs_figures.replace_between(FIGURES_START, FIGURES_END, figures_markdown(result), path)


def against(args: argparse.Namespace) -> int:
    """--before TREE: the figures of benchmarks/before.py for TREE and this tree, then their ratios."""
    from benchmarks import before  # it builds on this module's Bench

    if not (args.before / ".venv" / "bin" / "python").exists():
        print(
            f"{args.before} has no .venv/bin/python: give a checkout with its own venv, e.g. --before /work/old",
            file=sys.stderr,
        )
        return 1
    bench = Bench(args)
    size = corpus_mod.parse_size("50MB" if args.quick else args.size)
    bench.corpus = bench.ensure_corpus(size, args.seed, args.corpus)
    bench.journal_bytes = dir_bytes(bench.corpus)
    result = before.compare(bench, args.before, args.index_rounds, args.rounds, with_api=not args.no_api)
    before.print_table(result)
    out = Path(args.out).with_name("before.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str))
    print(f"wrote {out}")
    if not (args.no_docs or args.quick) and before.write_docs(result):
        print(f"wrote the figures into {DOCS.relative_to(ROOT)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="500MB", help="corpus size (default 500MB)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--corpus", default=None, help="use this corpus folder (generated if it has no manifest and no journals)"
    )
    ap.add_argument("--out", default=str(HERE / "out" / "latest.json"), help="where to write the figures (JSON)")
    ap.add_argument("--quick", action="store_true", help="a 50 MB corpus: a smoke run")
    ap.add_argument("--sizes", default=None, help="linearity mode: comma-separated sizes, e.g. 250MB,500MB,1GB")
    ap.add_argument("--work", default=None, help="scratch folder for the indexes (default benchmarks/out/work)")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds over the query set")
    ap.add_argument("--fresh-runs", type=int, default=15)
    ap.add_argument("--backfill-timeout", type=float, default=900)
    ap.add_argument("--no-api", action="store_true", help="skip the HTTP measurements")
    ap.add_argument(
        "--no-second-floor",
        action="store_true",
        help="measure the floor and the cold index once each, not twice interleaved (best kept)",
    )
    ap.add_argument("--no-tuned-floor", action="store_true", help="skip the floor with tuned FTS5 settings")
    ap.add_argument("--no-positions-floor", action="store_true", help="skip the floor of a table with positions")
    ap.add_argument("--verify-corpus", action="store_true", help="check a reused corpus against its manifest")
    ap.add_argument(
        "--no-docs",
        action="store_true",
        help="do not write the figures into docs/performance.md (--quick and --sizes never do)",
    )
    ap.add_argument(
        "--before",
        metavar="TREE",
        type=Path,
        help="measure the headline figures for TREE (a checkout with its own .venv) and this tree, interleaved",
    )
    ap.add_argument("--index-rounds", type=int, default=2, help="cold indexes per tree with --before (default 2)")
    args = ap.parse_args(argv)
    if args.before:
        return against(args)
    if args.quick:
        args.size = "50MB"
        if args.out == str(HERE / "out" / "latest.json"):
            args.out = str(HERE / "out" / "quick.json")
    bench = Bench(args)
    out = Path(args.out)
    previous = None
    if out.exists():
        with contextlib.suppress(ValueError):
            previous = json.loads(out.read_text())
    if args.sizes:
        result = bench.run_linearity([corpus_mod.parse_size(s) for s in args.sizes.split(",")])
        for row in result["details"]["linearity"]:
            print(
                f"  {row['size']:>6}: {row['journal_mb']:8.1f} MB  floor {fmt(row['floor_mb_s']):>6} MB/s "
                f"({fmt(row['floor_mb_per_cpu_s'])} per CPU-s)  cold index {fmt(row['cold_mb_s']):>6} MB/s "
                f"({fmt(row['cold_mb_per_cpu_s'])} per CPU-s, {fmt(row['cold_cpu_per_wall'])} cores)  "
                f"peak RSS {fmt(row['peak_rss_mb'])} MB  index {fmt(row['index_share'])}  load {row['loadavg']}"
            )
    else:
        result = bench.run()
    print_table(result, previous)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str))
    print(f"\nwrote {out}" + (f" (previous run {previous.get('when')})" if previous else ""))
    if not (args.no_docs or args.sizes or args.quick) and write_docs(result):
        print(f"wrote the figures into {DOCS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
