"""How many texts reach redaction's full rule pass, and which scanner sends them.

    python -m benchmarks.prefilter CORPUS [--mb 60] [--no-docs]

Reads the entries' texts of CORPUS's journals (`journal.parse_line`, as the indexer does) up to
`--mb` megabytes of text, asks redaction's prefilter which scanners may match each text
(`Compiled.plan_for`: Hyperscan's pass over the needles and shapes) and counts the texts that
reach the full pass (one scanner at least), per scanner the texts it runs on and those it alone
sends, and the texts with something masked; then redacts them all (CPU seconds, best of 3).
The figures go into docs/performance.md between its markers.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

from benchmarks import docs_figures
from pimem_index import journal
from pimem_index.redaction import driver

DOCS_START = "<!-- redaction prefilter: written by benchmarks/prefilter.py -->"
DOCS_END = "<!-- end of redaction prefilter -->"
MB = 1024 * 1024


def corpus_texts(corpus: Path, limit: int) -> list[str]:
    """The entries' texts of the corpus's journals, in path order, up to `limit` characters."""
    texts: list[str] = []
    total = 0
    for path in sorted(corpus.rglob("*.jsonl")):
        with path.open("rb") as fh:
            for lineno, line in enumerate(fh, 1):
                try:
                    item = journal.parse_line(line.rstrip(b"\n"), lineno)
                except journal.Malformed:
                    continue
                if isinstance(item, journal.Entry) and item.text:
                    texts.append(item.text)
                    total += len(item.text)
        if total >= limit:
            break
    return texts


def count(texts: list[str]) -> dict:
    """Texts reaching the full pass, per scanner (its scan literal), and the CPU seconds of redacting them."""
    rules = driver.compiled()
    reach = masked = 0
    runs: collections.Counter[str] = collections.Counter()
    alone: collections.Counter[str] = collections.Counter()
    for text in texts:
        b = text.encode("utf-8", "surrogatepass")
        plan = rules.plan_for(b)
        if not plan:
            continue
        reach += 1
        for step in plan:
            runs[step[2].decode("latin-1")] += 1
        if len(plan) == 1:
            alone[plan[0][2].decode("latin-1")] += 1
        masked += bool(driver._spans(b))
    seconds = []
    for _ in range(3):
        started = time.process_time()
        for text in texts:
            driver.redact(text)
        seconds.append(time.process_time() - started)
    n = len(texts)
    return {
        "texts": n,
        "text_mb": round(sum(map(len, texts)) / MB, 1),
        "full_pass_share": round(reach / n, 4),
        "masked_share": round(masked / n, 4),
        "redact_cpu_s": round(min(seconds), 3),
        "scanners": {s: [round(k / n, 4), round(alone[s] / n, 4)] for s, k in runs.most_common(12)},
    }


def docs_text(result: dict, corpus: Path, mb: int) -> str:
    lines = [
        f"`python -m benchmarks.prefilter {corpus} --mb {mb}`: {result['texts']:,} texts ({result['text_mb']} MB); "
        f"**{result['full_pass_share']:.1%}** reach the full rule pass, {result['masked_share']:.2%} have "
        f"something masked; redacting them all takes {result['redact_cpu_s']} CPU-s (best of 3).",
        "",
        "| scanner (scan literal) | texts it runs on | texts only it sends to the full pass |",
        "|---|---|---|",
    ]
    for scan, (runs, alone) in result["scanners"].items():
        lines.append(f"| `{scan}` | {runs:.1%} | {alone:.1%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--mb", type=int, default=60, help="megabytes of text to read (default 60)")
    ap.add_argument("--no-docs", action="store_true", help="do not write the figures into docs/performance.md")
    args = ap.parse_args(argv)
    result = count(corpus_texts(args.corpus, args.mb * MB))
    print(json.dumps(result))
    if not args.no_docs:
        docs_figures.replace_between(DOCS_START, DOCS_END, docs_text(result, args.corpus, args.mb))
    return 0


if __name__ == "__main__":
    sys.exit(main())
