"""The index at scale: one cold index of a large corpus, its size, search and the API under many clients.

    python -m benchmarks.scale CORPUS [--clients 20] [--seconds 20] [--no-docs]

Indexes CORPUS from nothing (`python -m pimem_index index` in a child process, as `versus.py`
does): wall time, CPU seconds of all its processes, the peak RSS of the largest of them (the
writer or a parsing process: `ru_maxrss` of the children), the index's share of the journals'
bytes. Then `run.py`'s project searches in this process (p50/p95, with the planted needles and
secrets checked) and, through `pimem serve`, CLIENTS threads each sending those searches one
after the other for SECONDS: requests per second and p50/p95. The load average is printed with
the figures, since on a shared machine it bounds the wall-clock ones. The figures go into
docs/performance.md between the markers named for the corpus.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks import docs_figures, run, versus

ROOT = Path(__file__).resolve().parent.parent
MB = 1024 * 1024


def api_load(bench: run.Bench, db: Path, clients: int, seconds: float) -> dict:
    """Requests per second and p50/p95 (ms) of CLIENTS threads sending project searches for SECONDS."""
    port = run.free_port()
    token = bench.token(db)
    proc, log = bench.serve(db, port, "scale-serve.log")
    queries = [bench.api_path(q) for q in bench.queries()]
    times: list[float] = []
    errors = 0
    lock = threading.Lock()
    try:
        if not bench.wait_ready(port, token, proc):
            return {"api_error": "pimem serve did not answer"}
        stop_at = time.monotonic() + seconds

        def client(k: int) -> None:
            nonlocal errors
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            mine: list[float] = []
            failed = 0
            i = k
            while time.monotonic() < stop_at:
                started = time.perf_counter()
                status, _body = bench.http_get(conn, queries[i % len(queries)], token)
                mine.append(time.perf_counter() - started)
                failed += status != 200
                i += 1
            conn.close()
            with lock:
                times.extend(mine)
                errors += failed

        began = time.perf_counter()
        threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - began
    finally:
        bench.stop(proc)
        log.close()
    return {
        "api_clients": clients,
        "api_requests": len(times),
        "api_errors": errors,
        "api_req_s": round(len(times) / elapsed, 1),
        "api_p50_ms": run.ms(run.pct(times, 0.5)),
        "api_p95_ms": run.ms(run.pct(times, 0.95)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--no-docs", action="store_true", help="do not write the figures into docs/performance.md")
    args = ap.parse_args(argv)
    corpus = args.corpus.resolve()
    size = sum(p.stat().st_size for p in corpus.rglob("*.jsonl"))
    out = ROOT / "benchmarks" / "out"
    out.mkdir(parents=True, exist_ok=True)  # absent in a fresh clone
    with tempfile.TemporaryDirectory(prefix="pimem-scale-", dir=out) as tmp:
        work = Path(tmp)
        bench = run.Bench(argparse.Namespace(work=str(work), rounds=3, verify_corpus=False))
        bench.corpus = corpus
        manifest = corpus / "manifest.json"
        bench.manifest = json.loads(manifest.read_text()) if manifest.exists() else None
        load_before = os.getloadavg()
        wall, cpu, db_bytes = versus.index_once(ROOT, corpus, work)
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        result: dict = {
            "corpus": corpus.name,
            "journal_mb": round(size / MB, 1),
            "journals": sum(1 for _ in corpus.rglob("*.jsonl")),
            "index_mb_s": round(size / MB / wall, 1),
            "index_cpu_s": round(cpu, 1),
            "index_mb_per_cpu_s": round(size / MB / cpu, 1),
            "index_share": round(db_bytes / size, 4),
            "peak_rss_mb": round(peak_kb / 1024, 1),
            "load_during_index": [round(x, 2) for x in load_before],
        }
        print(json.dumps(result), flush=True)
        db = work / f"{ROOT.name}.sqlite"  # where versus.index_once builds it
        bench.search_bench(db)
        for key in (
            "search_p50_ms",
            "search_p95_ms",
            "needles_found",
            "needles_leaked",
            "secret_terms",
            "secret_in_read",
        ):
            result[key] = bench.metrics.get(key)
        result.update(api_load(bench, db, args.clients, args.seconds))
        result["load_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result))
    if not args.no_docs:
        start = f"<!-- scale figures for {corpus.name}: written by benchmarks/scale.py -->"
        end = f"<!-- end of scale figures for {corpus.name} -->"
        docs_figures.replace_between(start, end, docs_text(result, args))
    return 0


def docs_text(result: dict, args) -> str:
    rows = [
        ("cold index throughput", f"{result['index_mb_s']} MB/s", "the load: other processes share the 2 cores"),
        (
            "cold index CPU",
            f"{result['index_cpu_s']} CPU-s ({result['index_mb_per_cpu_s']} MB per CPU-s)",
            "parsing and redaction (parsing processes) and FTS5 inserts (writer)",
        ),
        ("index size", f"{result['index_share']:.2%} of the journals", "metadata rows and the term index"),
        ("peak RSS (largest process)", f"{result['peak_rss_mb']} MB", "batches and SQLite's cache, not the corpus"),
        (
            "search p50 / p95 (project scope)",
            f"{result['search_p50_ms']} / {result['search_p95_ms']} ms",
            "common words: entries to rank",
        ),
        (
            f"API, {result.get('api_clients')} clients",
            f"{result.get('api_req_s')} req/s, p50 {result.get('api_p50_ms')} / p95 {result.get('api_p95_ms')} ms, "
            f"{result.get('api_errors')} errors",
            "one server process (Python, the GIL) and the load",
        ),
        (
            "needles found / secrets as terms / secrets shown",
            f"{result['needles_found']} / {result['secret_terms']} / {result['secret_in_read']}",
            "",
        ),
    ]
    lines = [
        f"`python -m benchmarks.scale {args.corpus} --clients {args.clients} --seconds {args.seconds:g}`: "
        f"{result['journal_mb']:,} MB, {result['journals']:,} journals; load average when the index began "
        f"{result['load_during_index']}, at the end {result['load_at_end']}.",
        "",
        "| figure | value | bounded by |",
        "|---|---|---|",
    ]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
