"""The agent benchmark: how much text the memory_context tool hands the model for 10 hits, and how often
the entry an agent looks for is among them.

    python -m benchmarks.agent_text CORPUS [--before 0aa4fe1] [--mrr-before REV] [--work DIR]

Fixed agent-like queries (AGENT_QUERIES) run over the corpus in the project scope of its largest
project, through the code of a checkout (the API's reply, `query.search` with the tool's
parameters) and the extension's own formatter (`formatHits` of that checkout's memory_context.ts,
loaded with jiti from the pinned Pi's node_modules). Run for this checkout and for `--before` (a
commit, checked out in a temporary worktree), each with its own index built by its own code; the
characters per reply (median, p90, mean) and the JSON bytes go into docs/performance.md. Known
items (`known_items`): KNOWN_ITEMS queries of two words from a user or assistant message of that
project, each word in another form the project holds half the time (as an agent recalls it), asked
the same way; the message's MRR over the 10 hits, for `--before`, `--mrr-before` (a third
checkout, e.g. the one before a ranking change: known items only) and this checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import docs_figures
from pimem_index.search import wordforms

ROOT = Path(__file__).resolve().parent.parent
EXTENSION = Path("datasette_pi_memory/server/pi_extension/memory_context.ts")
NODE_MODULES = ROOT / "datasette_pi_memory" / "server" / "pi_extension" / "node_modules"
# What an agent asks its history, in the words it uses: errors, commands, files, decisions.
AGENT_QUERIES = (
    "timeout error",
    "failing test",
    "npm run check",
    "migration",
    "connection refused",
    "config file",
    "TypeError undefined",
    "deploy script",
    "login bug",
    "git rebase conflict",
    "pytest fixture",
    "why did we change the schema",
    "permission denied",
    "docker build",
    "api token",
    "import error",
    "database lock",
    "performance regression",
    "how to run the tests",
    "refactor parser",
)
MARKERS = ("<!-- agent benchmark: written by benchmarks/agent_text.py -->", "<!-- end of agent benchmark -->")

# Run with a checkout's own code (PYTHONPATH): build its index of the corpus, answer each query as the
# API answers the tool (project scope from a cwd, limit 10, the tool's excerpt length when it asks one).
ANSWER = r"""
import json, sys, inspect
from pimem_index import store
from pimem_index.index import indexer
from pimem_index.locations import resolve
from pimem_index.search import query
from pimem_index.search.request import SearchRequest
corpus, db, cwd, excerpt = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
locations = resolve(db, [corpus])
conn = store.open_index(locations.db_path)
indexer.index_all(conn, locations)
fields = inspect.signature(SearchRequest.create).parameters
out = []
for q in json.loads(sys.stdin.read()):
    extra = {"excerpt": int(excerpt)} if "excerpt" in fields and int(excerpt) else {}
    out.append(query.search(conn, locations, SearchRequest.create(q, cwd=cwd, limit=10, **extra)))
print(json.dumps(out))
"""

FORMAT = r"""
const { createJiti } = require(process.argv[2]);
const jiti = createJiti(__filename);
const ext = jiti(process.argv[3]);
const replies = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
console.log(JSON.stringify(replies.map((r) => ext.formatHits(r))));
"""


KNOWN_ITEMS = 60
WORD = re.compile(r"[^\W\d_]{5,}")


def messages(corpus: str, cwd: str) -> list[tuple[str, str]]:
    """(entry id, text) of the user and assistant messages' text blocks in the journals of `cwd` and its subfolders."""
    found = []
    for journal in sorted(Path(corpus).glob("*/*.jsonl")):
        with journal.open("rb") as lines:
            header = json.loads(lines.readline())
            if header.get("cwd") != cwd and not str(header.get("cwd", "")).startswith(cwd + "/"):
                continue
            for raw in lines:
                line = json.loads(raw)
                message = line.get("message") or {}
                if line.get("type") != "message" or message.get("role") not in ("user", "assistant"):
                    continue
                content = message.get("content")
                blocks = (
                    [content]
                    if isinstance(content, str)
                    else [b.get("text", "") for b in content or [] if b.get("type") == "text"]
                )
                text = "\n".join(b for b in blocks if b)
                if text and line.get("id"):  # journals before Pi's version 2 have no entry ids
                    found.append((line["id"], text))
    return found


def known_items(corpus: str, cwd: str, n: int = KNOWN_ITEMS, seed: int = 7) -> list[tuple[str, str]]:
    """`n` (query, entry id): two words of a message (100-5,000 characters) that 2 to 5% of the project's
    messages hold, each replaced half the time by another form of it (the same porter stem) that the
    project holds and the message does not; chosen by `seed`, never the same entry twice."""
    texts = messages(corpus, cwd)
    words_of = [{w.lower() for w in WORD.findall(text)} for _id, text in texts]
    held: dict[str, int] = {}
    for words in words_of:
        for w in words:
            held[w] = held.get(w, 0) + 1
    by_stem: dict[str, list[str]] = {}
    rng = random.Random(seed)
    chosen: list[tuple[str, str]] = []
    order = [i for i, (_id, text) in enumerate(texts) if 100 <= len(text) <= 5000]
    rng.shuffle(order)
    seen: set[str] = set()
    for i in order:
        entry_id, words = texts[i][0], words_of[i]
        fitting = sorted(w for w in words if 2 <= held[w] <= max(2, len(texts) // 20))
        if len(fitting) < 2 or entry_id in seen:
            continue
        query = []
        for word in rng.sample(fitting, 2):
            stem = wordforms.stem(word)
            if stem not in by_stem:
                by_stem[stem] = sorted(w for w in held if w.startswith(stem[:4]) and wordforms.stem(w) == stem)
            others = [w for w in by_stem[stem] if w not in words]
            query.append(rng.choice(others) if others and rng.random() < 0.5 else word)
        seen.add(entry_id)
        chosen.append((" ".join(query), entry_id))
        if len(chosen) == n:
            break
    return chosen


def mrr(replies: list[dict], targets: list[str]) -> tuple[float, float]:
    """The targets' mean reciprocal rank among each reply's hits, and the share found at all."""
    ranks = []
    for reply, target in zip(replies, targets, strict=True):
        ids = [hit["id"] for hit in reply["results"]]
        ranks.append(ids.index(target) + 1 if target in ids else None)
    return sum(1 / r for r in ranks if r) / len(ranks), sum(bool(r) for r in ranks) / len(ranks)


def excerpt_chars(checkout: Path) -> int:
    """The excerpt length the checkout's tool asks for (0: it asks none, the API's default)."""
    source = (checkout / EXTENSION).read_text()
    for line in source.splitlines():
        if line.startswith("const EXCERPT_CHARS"):
            return int(line.split("=")[1].strip(" ;_").replace("_", ""))
    return 0


def answers(checkout: Path, corpus: str, db: str, cwd: str, queries: list[str]) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=str(checkout), PI_CODING_AGENT_DIR=str(Path(db).parent / "agent"))
    proc = subprocess.run(
        [sys.executable, "-c", ANSWER, corpus, db, cwd, str(excerpt_chars(checkout))],
        input=json.dumps(queries),
        capture_output=True,
        text=True,
        env=env,
        cwd=str(checkout),  # `python -c` puts the current folder first on sys.path: the checkout's code, not ours
        check=True,
    )
    return json.loads(proc.stdout)


def tool_texts(checkout: Path, replies: list[dict], work: Path) -> list[str]:
    """formatHits of the checkout's extension over each reply: its source copied beside this checkout's
    node_modules (where its imports resolve), loaded with jiti, then removed."""
    script = work / "format.cjs"
    script.write_text(FORMAT)
    copy = NODE_MODULES.parent / f".agent-text-{os.getpid()}.ts"
    copy.write_text((checkout / EXTENSION).read_text())
    try:
        proc = subprocess.run(
            ["node", str(script), str(NODE_MODULES / "jiti"), str(copy)],
            input=json.dumps(replies),
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        copy.unlink()
    return json.loads(proc.stdout)


def largest_project(corpus: str) -> str:
    """The cwd of the corpus's folder with the most journal bytes (its sessions' header cwd)."""
    folders = [p for p in Path(corpus).iterdir() if p.is_dir()]
    best = max(folders, key=lambda p: sum(f.stat().st_size for f in p.glob("*.jsonl")))
    first = next(iter(sorted(best.glob("*.jsonl"))))
    return json.loads(first.open("rb").readline())["cwd"]


def measure(checkout: Path, corpus: str, work: Path, cwd: str, known: list[tuple[str, str]], text: bool = True) -> dict:
    db = str(work / "history.sqlite")
    (work / "agent").mkdir(parents=True, exist_ok=True)
    replies = answers(checkout, corpus, db, cwd, [*(AGENT_QUERIES if text else ()), *(q for q, _id in known)])
    found, share = mrr(replies[len(replies) - len(known) :], [entry_id for _q, entry_id in known])
    if not text:
        return {"mrr": found, "found": share}
    replies = replies[: len(AGENT_QUERIES)]
    texts = tool_texts(checkout, replies, work)
    chars = sorted(len(t) for t in texts)
    hits = [len(r["results"]) for r in replies]
    return {
        "median": statistics.median(chars),
        "p90": chars[int(0.9 * (len(chars) - 1))],
        "mean": statistics.mean(chars),
        "json": statistics.median(len(json.dumps(r)) for r in replies),
        "hits": statistics.mean(hits),
        "texts": texts,
        "mrr": found,
        "found": share,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus")
    ap.add_argument("--before", default="0aa4fe1", help="the commit to compare with")
    ap.add_argument(
        "--mrr-before", default=None, help="another commit whose known-item MRR to show (e.g. before a ranking change)"
    )
    ap.add_argument("--work", default=None, help="where the indexes go (default: a temporary folder)")
    ap.add_argument("--show", action="store_true", help="print the tool's text for the first query")
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="agent-text-"))
    cwd = largest_project(args.corpus)
    known = known_items(args.corpus, cwd)
    trees = {"before": (work / "before-checkout", args.before)}
    if args.mrr_before:
        trees["mrr_before"] = (work / "mrr-before-checkout", args.mrr_before)
    for tree, rev in trees.values():
        if not tree.exists():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev], check=True)
    try:
        before = measure(trees["before"][0], args.corpus, work / "before", cwd, known)
        mrr_before = (
            measure(trees["mrr_before"][0], args.corpus, work / "mrr-before", cwd, known, text=False)
            if args.mrr_before
            else None
        )
        after = measure(ROOT, args.corpus, work / "after", cwd, known)
    finally:
        for tree, _rev in trees.values():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    if args.show:
        print(before["texts"][0], "\n----\n", after["texts"][0])
    rows = [
        "| | before (" + args.before + ") | after | after / before |",
        "|---|---|---|---|",
    ]
    for key, label in (
        ("median", "tool text per reply, median (characters)"),
        ("p90", "tool text per reply, p90 (characters)"),
        ("mean", "tool text per reply, mean (characters)"),
        ("json", "API reply, median (JSON bytes)"),
        ("hits", "hits per reply, mean"),
    ):
        b, a = before[key], after[key]
        rows.append(f"| {label} | {b:,.0f} | {a:,.0f} | {a / b:.2f} |" if b else f"| {label} | {b} | {a} | |")
    known_rows = ["| checkout | known-item MRR | found in the 10 hits |", "|---|---|---|"]
    for name, found in ((args.before, before), (args.mrr_before, mrr_before), ("this", after)):
        if found is not None:
            known_rows.append(f"| {name} | {found['mrr']:.3f} | {found['found']:.0%} |")
    table = (
        f"`benchmarks/agent_text.py` on `{os.path.basename(os.path.normpath(args.corpus))}`: "
        f"{len(AGENT_QUERIES)} agent-like queries (`AGENT_QUERIES`), project scope of `{cwd}`, 10 hits a reply, "
        "each through that checkout's API code and its extension's `formatHits`, each checkout with its own index.\n\n"
        + "\n".join(rows)
        + f"\n\nKnown items: {len(known)} queries of two words from one message of the project, each word in another "
        "form half the time (`known_items`), the same way:\n\n" + "\n".join(known_rows)
    )
    print(table)
    if not docs_figures.replace_between(*MARKERS, table):
        print("docs/performance.md has no markers: " + " ... ".join(MARKERS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
