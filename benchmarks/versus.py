"""Cold-index two versions of the code on the same corpus, interleaved, and print the ratios.

    python -m benchmarks.versus OLD_TREE CORPUS [--rounds 3] [--busy N] [--no-docs]

OLD_TREE is a checkout of the other version (e.g. `git worktree add /tmp/old main`); this
tree is the new one. Each round indexes the corpus from nothing with the old code, then with
the new, in child processes (`python -m pimem_index index`, with each tree's own `.venv` when it
has one), so load on a shared machine hits both alike; the best wall time of each is compared,
with the CPU seconds of all the processes of each index (the writer and its parsing processes:
the median over the rounds) and the index sizes. `--busy N` runs N busy loops
(`python -c 'while 1: pass'`) beside every round, as other work on the machine would, and
compares the throughput under that load. The figures go into docs/performance.md between its
markers (one pair for each mode).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks import docs_figures

ROOT = Path(__file__).resolve().parent.parent


DOCS_START = "<!-- cold index before and after: written by benchmarks/versus.py -->"
DOCS_END = "<!-- end of cold index before and after -->"
BUSY_START = "<!-- cold index beside busy loops: written by benchmarks/versus.py --busy -->"
BUSY_END = "<!-- end of cold index beside busy loops -->"
MB = 1024 * 1024


def corpus_bytes(corpus: Path) -> int:
    return sum(p.stat().st_size for p in corpus.rglob("*.jsonl"))


def python_of(tree: Path) -> str:
    """The tree's own interpreter (its .venv, with the dependencies that tree declares), else this one."""
    own = tree / ".venv" / "bin" / "python"
    return str(own) if own.exists() else sys.executable


def index_once(tree: Path, corpus: Path, work: Path, env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, index bytes) of one cold `pimem index` of corpus with the code in tree
    (in `env`, default this process's environment). The CPU seconds are the index's and its parsing
    processes' (each waited for by its parent, so counted in RUSAGE_CHILDREN)."""
    db = work / f"{tree.name}.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    env = dict(os.environ if env is None else env, PYTHONPATH=str(tree), PI_CODING_AGENT_DIR=str(work / "agent"))
    cmd = [python_of(tree), "-m", "pimem_index", "index", "--sessions-dir", str(corpus), "--db", str(db), "--json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True, cwd=str(work))
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, sum(Path(f"{db}{s}").stat().st_size for s in ("", "-wal") if Path(f"{db}{s}").exists())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--busy", type=int, default=0, metavar="N", help="run N busy loops beside every round")
    ap.add_argument("--no-docs", action="store_true", help="do not write the figures into docs/performance.md")
    args = ap.parse_args(argv)
    size = corpus_bytes(args.corpus)
    runs: dict[str, list[tuple[float, float, int]]] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory(prefix="pimem-versus-") as tmp, busy_loops(args.busy):
        work = Path(tmp)
        (work / "old").mkdir()
        (work / "new").mkdir()
        for _ in range(args.rounds):
            for label, tree in (("old", args.old.resolve()), ("new", ROOT)):
                runs[label].append(index_once(tree, args.corpus.resolve(), work / label))
                wall, cpu, db = runs[label][-1]
                print(
                    f"{label}: {size / MB / wall:.1f} MB/s, {cpu:.2f} CPU-s ({size / MB / cpu:.1f} MB per CPU-s), "
                    f"index {db / size:.4f} of journal bytes",
                    flush=True,
                )
    result = summary(runs, size, args.busy)
    print(json.dumps(result))
    if not args.no_docs:
        start, end = (BUSY_START, BUSY_END) if args.busy else (DOCS_START, DOCS_END)
        docs_figures.replace_between(start, end, docs_text(result, args, runs, size))
    return 0


def summary(runs: dict[str, list[tuple[float, float, int]]], size: int, busy: int) -> dict:
    """The best wall time and the median CPU seconds of each version, their ratios, the index shares."""
    best = {label: min(w for w, _c, _d in r) for label, r in runs.items()}
    cpu = {label: statistics.median(c for _w, c, _d in r) for label, r in runs.items()}
    share = {label: r[-1][2] / size for label, r in runs.items()}
    return {
        "journal_mb": round(size / MB, 1),
        "busy_loops": busy,
        "old_mb_s": round(size / MB / best["old"], 1),
        "new_mb_s": round(size / MB / best["new"], 1),
        "throughput_ratio": round(best["old"] / best["new"], 3),
        "old_cpu_s": round(cpu["old"], 2),
        "new_cpu_s": round(cpu["new"], 2),
        "cpu_seconds_ratio": round(cpu["new"] / cpu["old"], 3),
        "cpu_ratio": round(cpu["old"] / cpu["new"], 3),
        "old_index_share": round(share["old"], 4),
        "new_index_share": round(share["new"], 4),
        "load_at_end": list(os.getloadavg()),
    }


@contextlib.contextmanager
def busy_loops(n: int) -> Iterator[None]:
    """N processes spinning at the default priority meanwhile (other work on the machine), stopped after."""
    loops = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def revision(tree: Path) -> str:
    """The tree's commit, short, or its folder name when it is not a git checkout."""
    found = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return found.stdout.strip() or tree.name


def docs_text(result: dict, args, runs: dict, size: int) -> str:
    """The result as docs/performance.md shows it: each round, then the best of each and the ratios."""
    busy = f" beside {args.busy} busy loops (`python -c 'while 1: pass'`)" if args.busy else ""
    flag = f" --busy {args.busy}" if args.busy else ""
    lines = [
        f"`python -m benchmarks.versus {args.old} {args.corpus}{flag}`: {result['journal_mb']} MB corpus "
        f"`{args.corpus.name}`, {args.rounds} rounds interleaved{busy}, before = {revision(args.old)}, after = "
        f"{revision(ROOT)}; load at the end {[round(x, 2) for x in result['load_at_end']]}.",
        "",
        "| round | before MB/s | after MB/s | before CPU-s | after CPU-s |",
        "|---|---|---|---|---|",
    ]
    for i, (old, new) in enumerate(zip(runs["old"], runs["new"], strict=True), 1):
        figures = (size / MB / old[0], size / MB / new[0], old[1], new[1])
        lines.append(f"| {i} | " + " | ".join(f"{x:.1f}" for x in figures) + " |")
    lines += [
        "",
        f"Best of each: {result['old_mb_s']} against {result['new_mb_s']} MB/s, after / before "
        f"**{result['throughput_ratio']}** in throughput; CPU seconds of all processes (median) "
        f"{result['old_cpu_s']} against {result['new_cpu_s']}, after / before **{result['cpu_seconds_ratio']}x**; "
        f"index {result['old_index_share']:.1%} against {result['new_index_share']:.1%} of journal bytes.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
