"""Where a cold `index_all` spends its time: SQL statements on the writing thread vs the rest.

    python -m benchmarks.split CORPUS_DIR [--db PATH]

A diagnostic beside run.py: the connection handed to `pimem_index.index.indexer.index_all` is
wrapped so every execute/executemany is timed by statement; the remainder of the wall
time is Python on the writing thread or waiting for the parsing thread. Timings add a
little overhead (a few microseconds per statement).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from typing import cast


class TimedConnection:
    """Forwards to a sqlite3 connection, timing statements by their first words."""

    def __init__(self, conn):
        self._conn = conn
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self.calls: dict[str, int] = collections.defaultdict(int)

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def _timed(self, fn, sql, *args):
        t = time.perf_counter()
        try:
            return fn(sql, *args)
        finally:
            key = " ".join(sql.split()[:4])[:48]
            self.seconds[key] += time.perf_counter() - t
            self.calls[key] += 1

    def execute(self, sql, *args):
        return self._timed(self._conn.execute, sql, *args)

    def executemany(self, sql, *args):
        return self._timed(self._conn.executemany, sql, *args)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--db", default=None)
    ap.add_argument(
        "--switch-interval",
        type=float,
        default=None,
        help="sys.setswitchinterval(S) before indexing (Python's default is 0.005 s)",
    )
    args = ap.parse_args(argv)
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    tmp = tempfile.mkdtemp(prefix="pimem-split-")
    os.environ["PI_CODING_AGENT_DIR"] = os.path.join(tmp, "agent")  # never the user's own journals
    os.environ.pop("PIMEM_SESSIONS_DIRS", None)
    from pimem_index import db, locations, store
    from pimem_index.index import indexer

    db_path = args.db or os.path.join(tmp, "split.sqlite")
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(db_path + suffix)
        except FileNotFoundError:
            pass
    timed = TimedConnection(store.open_index(db_path))
    conn = cast(db.Connection, timed)  # forwards every call: the indexer sees a connection
    loc = locations.resolve(db=db_path, sessions_dirs=[args.corpus])
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    report = indexer.index_all(conn, loc)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    sql = sum(timed.seconds.values())
    mb = report.bytes_read / 1024 / 1024
    print(f"{mb:.1f} MB in {wall:.2f} s wall ({mb / wall:.1f} MB/s), {cpu:.2f} s CPU ({cpu / wall:.2f} cores)")
    print(f"SQL on the writing thread: {sql:.2f} s ({sql / wall:.0%} of wall); the rest: {wall - sql:.2f} s")
    for key, sec in sorted(timed.seconds.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {sec:7.2f} s  {timed.calls[key]:7d} calls  {key}")
    timed._conn.close()
    if not args.db:
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(db_path + suffix)
            except FileNotFoundError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
