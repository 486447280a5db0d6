"""Datasette's own table pages over a big index: each page as `pimem serve` configures it against `_nofacet=1`.

    python -m benchmarks.datasette_pages [CORPUS] [--rounds 5] [--no-docs]

CORPUS defaults to benchmarks/corpus/500MB-s1 (generated when absent). The corpus is indexed cold into
benchmarks/out/datasette_pages/history.sqlite (a child `pimem index`), then a Datasette with exactly the
configuration and metadata `pimem serve` passes (`serve.metadata_and_config`) answers each page in this process
(`datasette.client`, root's actor): the page as a reviewer opens it, then the same page with `_nofacet=1`,
interleaved, the best of the rounds counting. The same pages under a plain `datasette serve` (Datasette's default
settings: facet suggestions on) are measured too, for comparison. The figures go into docs/performance.md between
its markers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import docs_figures

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "benchmarks"


DOCS_START = "<!-- datasette pages: written by benchmarks/datasette_pages.py -->"
DOCS_END = "<!-- end of datasette pages -->"
TARGET_RATIO = 3.0  # issue 24: within 3x of the same page with _nofacet=1
MB = 1024 * 1024


def ensure_corpus(path: Path) -> Path:
    """The corpus at path, generated (500 MB, seed 1) in a child process when it has no manifest."""
    if not (path / "manifest.json").exists():
        print(f"generating a 500 MB corpus in {path}", flush=True)
        subprocess.run([sys.executable, "-m", "benchmarks.corpus", str(path), "--size", "500MB"], check=True, cwd=ROOT)
    return path


def index_cold(corpus: Path, work: Path) -> Path:
    """A fresh index of the corpus (`pimem index` in a child, an empty agent folder): its path."""
    db = work / "history.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    (work / "agent" / "sessions").mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PI_CODING_AGENT_DIR=str(work / "agent"))
    cmd = [sys.executable, "-m", "pimem_index", "index", "--db", str(db), "--sessions-dir", str(corpus), "--json"]
    report = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout)
    print(f"indexed {report['files']} journals ({report['bytes_read'] / MB:.0f} MB) in {report['seconds']:.1f}s")
    return db


async def measure(db: Path, corpus: Path, rounds: int) -> dict:
    """{page: {"default", "nofacet", "plain", "plain_nofacet"}} best seconds, and the pages' row counts."""
    from datasette.app import Datasette

    from datasette_pi_memory.server.serve import ensure_secret, metadata_and_config
    from pimem_index import resolve

    locations = resolve(str(db), [str(corpus)])
    metadata, config = metadata_and_config(locations, "history", background_index=False)
    served = Datasette([str(db)], secret=ensure_secret(locations), config=config, metadata=metadata)
    plain_config = {key: value for key, value in config.items() if key != "settings"}
    plain = Datasette([str(db)], secret=ensure_secret(locations), config=plain_config, metadata=metadata)
    for ds in (served, plain):
        ds.root_enabled = True
        await ds.invoke_startup()
    index = served.get_database("history")
    session = (
        await index.execute(
            "SELECT session_id FROM entries WHERE is_error = 1 GROUP BY session_id ORDER BY count(*) DESC LIMIT 1"
        )
    ).first()[0]
    pages = {
        "sessions": "/history/sessions",
        "entries of a session with is_error=1": f"/history/entries?session_id={session}&is_error=1",
        "entries": "/history/entries",
        "files": "/history/files",
        "tool_calls": "/history/tool_calls",
    }
    root = {"id": "root"}
    best: dict[str, dict[str, float]] = {name: {} for name in pages}
    timed_out: set[str] = set()
    for _ in range(rounds):
        for name, path in pages.items():
            joiner = "&" if "?" in path else "?"
            for label, ds, url in (
                ("default", served, path),
                ("nofacet", served, f"{path}{joiner}_nofacet=1"),
                ("plain", plain, path),
                ("plain_nofacet", plain, f"{path}{joiner}_nofacet=1"),
            ):
                started = time.perf_counter()
                response = await ds.client.get(url, actor=root)
                seconds = time.perf_counter() - started
                assert response.status_code == 200, (url, response.status_code)
                if "timed out" in response.text:
                    timed_out.add(f"{label} {name}")
                best[name][label] = min(seconds, best[name].get(label, seconds))
    counts = {
        "sessions": (await index.execute("SELECT count(*) FROM files")).first()[0],
        "entries": (await index.execute("SELECT count(*) FROM entries")).first()[0],
    }
    return {"pages": best, "counts": counts, "timed_out": sorted(timed_out)}


def table(result: dict) -> str:
    """The figures as a markdown table: each page, as pimem serve serves it and with _nofacet=1, and the ratio."""
    lines = [
        "| page | pimem serve | `_nofacet=1` | ratio | plain `datasette serve` | its `_nofacet=1` |",
        "|---|---|---|---|---|---|",
    ]
    for name, times in result["pages"].items():
        ratio = times["default"] / times["nofacet"]
        mark = "" if ratio <= TARGET_RATIO else " (over 3x)"
        lines.append(
            f"| {name} | {times['default'] * 1000:.0f} ms | {times['nofacet'] * 1000:.0f} ms | "
            f"**{ratio:.2f}x**{mark} | {times['plain'] * 1000:.0f} ms | {times['plain_nofacet'] * 1000:.0f} ms |"
        )
    return "\n".join(lines)


def docs_text(result: dict, corpus: Path, rounds: int) -> str:
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    head = (
        f"`benchmarks/datasette_pages.py` at commit {commit.stdout.strip() or '?'}: corpus `{corpus.name}` "
        f"({result['journal_mb']} MB, {result['counts']['sessions']} sessions, {result['counts']['entries']:,} "
        f"entries), best of {rounds} rounds interleaved, in-process `datasette.client` as root; load at the end "
        f"{result['load_at_end']}. Target: every page within {TARGET_RATIO:g}x of `_nofacet=1`."
    )
    notes = "Facets that timed out: " + (", ".join(result["timed_out"]) or "none") + "."
    return "\n\n".join([head, table(result), notes])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="?", type=Path, default=HERE / "corpus" / "500MB-s1")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-docs", action="store_true", help="do not write the figures into docs/performance.md")
    args = ap.parse_args(argv)
    corpus = ensure_corpus(args.corpus.resolve())
    work = HERE / "out" / "datasette_pages"
    work.mkdir(parents=True, exist_ok=True)
    os.environ["PI_CODING_AGENT_DIR"] = str(work / "agent")  # the secret and settings of this run, not yours
    db = index_cold(corpus, work)
    result = asyncio.run(measure(db, corpus, args.rounds))
    result["journal_mb"] = round(sum(p.stat().st_size for p in corpus.rglob("*.jsonl")) / MB, 1)
    result["load_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(table(result))
    worst = max(t["default"] / t["nofacet"] for t in result["pages"].values())
    print(f"worst ratio {worst:.2f}x (target <= {TARGET_RATIO:g}x); timed out: {result['timed_out'] or 'none'}")
    if not args.no_docs:
        docs_figures.replace_between(DOCS_START, DOCS_END, docs_text(result, corpus, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
