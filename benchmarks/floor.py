"""The floor: the bare cost of the FTS5 inserts a one-core indexer cannot avoid.

    python -m benchmarks.floor CORPUS_DIR [--db PATH] [--json]

Extracts the indexable text of every journal entry (with the project's own parser,
``pimem_index.journal``) and inserts it into
a bare ``fts5(text, <the index's own options>)`` table (``pimem_index.store.FTS_OPTIONS``:
contentless, the same tokenizer and detail) in large transactions.
Only the inserts (and their commits) are timed; parsing is timed separately. The floor
is reported as MB of journal per second of insert time: no indexer writing the same
terms on one core can be faster than that.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from pimem_index import db, journal, store
from pimem_index.redaction import redact as redact_text

MB = 1024 * 1024
BATCH_CHARS = 16 * MB  # texts handed to one executemany
COMMIT_CHARS = 128 * MB  # texts per transaction


# --------------------------------------------------------------------------- extraction


def get_extractor() -> tuple[str, Callable[[bytes, int], str | None]]:
    """(name, extract(line_bytes, lineno) -> text or None): the project's own parser."""

    def extract(line: bytes, lineno: int) -> str | None:
        try:
            e = journal.parse_line(line, lineno)
        except journal.Malformed:
            return None
        return e.text if isinstance(e, journal.Entry) else None

    return "pimem_index.journal.parse_line", extract


def positions_fts_options() -> str:
    """The index's options as they were before schema 3: positions kept (FTS5's bm25() works)."""
    return store.FTS_OPTIONS.replace("detail=none, ", "")


def journals(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.rglob("*.jsonl") if p.is_file())


# --------------------------------------------------------------------------- the floor


def measure(
    corpus: str | os.PathLike,
    db_path: str | None = None,
    optimize: bool = True,
    keep: bool = False,
    config: dict | None = None,
    time_redaction: bool = True,
    fts_options: str | None = None,
) -> dict:
    corpus = Path(corpus)
    files = journals(corpus)
    name, extract = get_extractor()
    redact = redact_text if time_redaction else None
    redact_s = 0.0  # timed apart, for the report: the floor itself inserts unredacted text
    tmpdir = None
    if db_path is None:
        tmpdir = tempfile.mkdtemp(prefix="pimem-floor-", dir=os.environ.get("PIMEM_BENCH_TMP"))
        db_path = os.path.join(tmpdir, "floor.sqlite")
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(db_path + suffix)
        except FileNotFoundError:
            pass
    conn = db.connect(db_path)
    options = fts_options or store.FTS_OPTIONS
    conn.execute(f"CREATE VIRTUAL TABLE fts USING fts5(text, {options})")
    for key, value in (config or {}).items():  # e.g. automerge=8, crisismerge=32, pgsz=8000
        conn.execute("INSERT INTO fts(fts, rank) VALUES (?, ?)", (key, int(value)))

    journal_bytes = 0
    text_bytes = 0
    text_chars = 0
    entries = 0
    extract_s = 0.0
    insert_s = 0.0
    insert_cpu = 0.0  # CPU time of the inserts: less sensitive to other work on a shared machine
    rowid = 0
    batch: list[tuple[int, str]] = []
    batch_chars = 0
    txn_chars = 0
    in_txn = False
    sql = "INSERT INTO fts(rowid, text) VALUES (?, ?)"

    def flush(commit: bool) -> None:
        nonlocal insert_s, insert_cpu, batch, batch_chars, txn_chars, in_txn
        t = time.perf_counter()
        c = time.process_time()
        if batch:
            if not in_txn:
                conn.execute("BEGIN")
                in_txn = True
            conn.executemany(sql, batch)
        if commit and in_txn:
            conn.execute("COMMIT")
            in_txn = False
        insert_s += time.perf_counter() - t
        insert_cpu += time.process_time() - c
        txn_chars += batch_chars
        batch = []
        batch_chars = 0

    for path in files:
        t = time.perf_counter()
        with open(path, "rb") as fh:
            data = fh.read()
        journal_bytes += len(data)
        lineno = 0
        rows_before = len(batch)
        for line in data.split(b"\n"):
            lineno += 1
            if not line:
                continue
            text = extract(line, lineno)
            if text is None:
                continue
            rowid += 1
            entries += 1
            batch.append((rowid, text))
            batch_chars += len(text)
        new_rows = len(batch) - rows_before
        del data
        extract_s += time.perf_counter() - t
        if redact is not None:
            t = time.perf_counter()
            for i in range(len(batch) - new_rows, len(batch)):
                redact(batch[i][1])
            redact_s += time.perf_counter() - t
        if batch_chars >= BATCH_CHARS:
            text_chars += batch_chars
            text_bytes += sum(len(x.encode()) for _, x in batch)
            commit = txn_chars + batch_chars >= COMMIT_CHARS
            flush(commit)
            if commit:
                txn_chars = 0
    text_chars += batch_chars
    text_bytes += sum(len(x.encode()) for _, x in batch)
    flush(True)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size_before = _used_bytes(conn)
    optimize_s = None
    size_after = None
    file_bytes = _db_bytes(db_path)
    if optimize:
        t = time.perf_counter()
        conn.execute("INSERT INTO fts(fts) VALUES ('optimize')")
        optimize_s = time.perf_counter() - t
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size_after = _used_bytes(conn)
    file_bytes = _db_bytes(db_path)
    conn.close()
    if not keep:
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(db_path + suffix)
            except FileNotFoundError:
                pass
        if tmpdir:
            os.rmdir(tmpdir)
    jmb = journal_bytes / MB
    return {
        "extractor": name,
        "fts_options": options,
        "fts_config": config or {},
        "journals": len(files),
        "journal_bytes": journal_bytes,
        "entries": entries,
        "text_bytes": text_bytes,
        "text_chars": text_chars,
        "text_share": round(text_bytes / journal_bytes, 4) if journal_bytes else None,
        "extract_seconds": round(extract_s, 3),
        "extract_mb_per_s": round(jmb / extract_s, 2) if extract_s else None,
        "redact_seconds": round(redact_s, 3) if redact is not None else None,
        "redact_mb_per_s": round(jmb / redact_s, 2) if redact is not None and redact_s else None,
        "parse_redact_mb_per_s": round(jmb / (extract_s + redact_s), 2) if redact is not None else None,
        "insert_seconds": round(insert_s, 3),
        "floor_mb_per_s": round(jmb / insert_s, 2) if insert_s else None,
        "text_mb_per_s": round(text_bytes / MB / insert_s, 2) if insert_s else None,
        "insert_cpu_seconds": round(insert_cpu, 3),
        "floor_mb_per_cpu_s": round(jmb / insert_cpu, 2) if insert_cpu else None,
        "optimize_seconds": round(optimize_s, 3) if optimize_s is not None else None,
        "floor_with_optimize_mb_per_s": round(jmb / (insert_s + optimize_s), 2) if optimize_s else None,
        "fts_bytes": size_before,
        "fts_bytes_optimized": size_after,
        "fts_file_bytes": file_bytes,
        "fts_share": round((size_after or size_before) / journal_bytes, 4) if journal_bytes else None,
        "peak_rss_mb": _peak_rss_mb(),
        "sqlite_version": db.sqlite3.sqlite_version,
    }


def _peak_rss_mb() -> float:
    """VmHWM (reset at exec; ru_maxrss would include the parent's RSS at fork)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _used_bytes(conn) -> int:
    """Bytes of pages in use (a file does not shrink when optimize frees pages)."""
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    count = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    return page * (count - free)


def _db_bytes(path: str) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += os.path.getsize(path + suffix)
        except FileNotFoundError:
            pass
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--db", default=None, help="where to build the bare FTS5 table (default: a temporary file)")
    ap.add_argument("--no-optimize", action="store_true")
    ap.add_argument(
        "--fts-options",
        default=None,
        help="FTS5 options after the column (default: the index's, pimem_index.store.FTS_OPTIONS)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the floor database")
    ap.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=N",
        help="FTS5 configuration before the inserts, e.g. automerge=8 (repeatable; default: FTS5's defaults)",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    config = dict(c.split("=", 1) for c in args.config)
    r = measure(
        args.corpus, args.db, optimize=not args.no_optimize, keep=args.keep, config=config, fts_options=args.fts_options
    )
    if args.json:
        print(orjson.dumps(r).decode())
    else:
        print(
            f"{r['journals']} journals, {r['journal_bytes'] / MB:.1f} MB; {r['entries']} entries; "
            f"text {r['text_bytes'] / MB:.1f} MB ({r['text_share']:.0%} of journal bytes) via {r['extractor']}"
        )
        print(f"extract: {r['extract_seconds']:.2f} s = {r['extract_mb_per_s']} MB/s of journal")
        if r["redact_seconds"] is not None:
            print(
                f"redact (pimem_index.redaction, timed apart): {r['redact_seconds']:.2f} s = "
                f"{r['redact_mb_per_s']} MB/s of journal; read+parse+redact {r['parse_redact_mb_per_s']} MB/s"
            )
        print(
            f"FTS5 inserts: {r['insert_seconds']:.2f} s = {r['floor_mb_per_s']} MB/s of journal "
            f"({r['text_mb_per_s']} MB/s of text; {r['floor_mb_per_cpu_s']} MB per CPU-second)  <- the floor"
        )
        if r["optimize_seconds"] is not None:
            print(
                f"optimize: {r['optimize_seconds']:.2f} s; with it {r['floor_with_optimize_mb_per_s']} MB/s; "
                f"FTS {r['fts_bytes'] / MB:.1f} MB -> {r['fts_bytes_optimized'] / MB:.1f} MB "
                f"({r['fts_share']:.1%} of journal)"
            )
        print(f"peak RSS {r['peak_rss_mb']} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
