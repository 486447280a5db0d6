"""The writer's CPU apart from its parsing processes', in a cold index of a corpus, this tree against
another, interleaved round by round.

    python -m benchmarks.writer_cpu CORPUS --before TREE [--rounds 3]

TREE is another checkout (its own .venv if it has one, else this one's interpreter with TREE first on
the path). Each round indexes CORPUS from nothing with each tree in a child process, which reports
its own CPU-seconds (the writer: the process that runs `pimem index`, threads included) and its
children's (the parsing processes, each waited for); the median of each over the rounds is printed
with the ratio this / before. CPU time holds on a busy machine where wall time does not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in the child: `pimem index` in this process, then its own and its children's CPU-seconds.
CHILD = """
import json, resource, runpy, sys
out = sys.argv.pop(1)
sys.argv[0] = "pimem"
try:
    runpy.run_module("pimem_index", run_name="__main__")
except SystemExit as e:
    if e.code:
        raise
own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as f:
    json.dump({"writer": own.ru_utime + own.ru_stime, "parsers": children.ru_utime + children.ru_stime}, f)
"""


def python_of(tree: Path) -> str:
    own = tree / ".venv" / "bin" / "python"
    return str(own) if own.exists() else sys.executable


def index_once(tree: Path, corpus: Path, work: Path) -> dict[str, float]:
    """The writer's and the parsers' CPU-seconds of one cold `pimem index` of corpus with tree's code."""
    db = work / f"{tree.name}.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    out = work / "cpu.json"
    env = dict(os.environ, PYTHONPATH=str(tree), PI_CODING_AGENT_DIR=str(work / "agent"))
    env.pop("PIMEM_SESSIONS_DIRS", None)
    command = [python_of(tree), "-c", CHILD, str(out), "index", "--sessions-dir", str(corpus), "--db", str(db)]
    subprocess.run([*command, "--json"], env=env, check=True, stdout=subprocess.DEVNULL, cwd=str(work))
    return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--before", type=Path, required=True, help="another checkout, measured in the same run")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    runs: dict[str, list[dict[str, float]]] = {"before": [], "this": []}
    with tempfile.TemporaryDirectory(prefix="pimem-writer-") as tmp:
        for n in range(args.rounds):
            order = [("before", args.before.resolve()), ("this", ROOT)]
            for label, tree in order if n % 2 == 0 else order[::-1]:  # which goes first alternates
                (Path(tmp) / label).mkdir(exist_ok=True)
                runs[label].append(index_once(tree, args.corpus.resolve(), Path(tmp) / label))
                print(f"round {n + 1} {label}: {runs[label][-1]}", flush=True)
    print(f"\nCPU-seconds, median of {args.rounds} rounds (cold index of {args.corpus.name}):")
    print("| process | before | this | this / before |\n|---|---|---|---|")
    for part in ("writer", "parsers"):
        before = statistics.median(r[part] for r in runs["before"])
        this = statistics.median(r[part] for r in runs["this"])
        print(f"| {part} | {before:.2f} | {this:.2f} | {this / before:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
