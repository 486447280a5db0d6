"""Benchmark pimem_index.redaction.redact.

    python -m benchmarks.bench_redact [--quick]

Prints
* MB/s on realistic Pi-like text (code from the standard library's own
  sources, assistant prose, shell and test output, JSON tool results with
  ids, hashes and usage counts; about one entry in 300 holds a secret),
  redacted entry by entry as the indexer does, and as one big text;
* the same bytes through two baselines (``str.lower()`` and a plain ``re``
  scan for a literal that never occurs), and redact's cost relative to them;
* with ``--against REV`` (a git revision, e.g. the main branch before a change), redaction's time per MB
  on the same entries with this checkout's code and with REV's, each in a child process, interleaved, and
  their ratio (the cost of a change, measured in one run on one machine);
* for adversarial inputs (long runs of base64, ``=``, one letter, backslashes,
  many ``password=`` with no value, unterminated PEM headers...), seconds per
  MB at 1, 2, 4, 8 and 16 MB and the ratio of per-MB time at 16 MB to 1 MB,
  which must stay near 1 (no catastrophic backtracking).

No token-shaped literal appears here: secrets are built from random
characters at run time.
"""

from __future__ import annotations

import argparse
import glob
import io
import os
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import time

from benchmarks import docs_figures
from pimem_index.redaction import redact

DOCS_START = "<!-- redaction figures: written by benchmarks/bench_redact.py -->"
DOCS_END = "<!-- end of redaction figures -->"

MB = 1_000_000
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"

PROSE_WORDS = (
    "the a of to and in is for that with on this it be as we file test function "
    "should will can the index search query result session entry journal token tokens "
    "key keys cache config value error warning fix update run build check return "
    "password auth secret credential cookie header request response user model context "
    "I now let me look at read write edit bash output command line pass passes failing "
    "see because then also make sure first next done change code module class method"
).split()


def _rand(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _stdlib_code() -> list[str]:
    root = os.path.dirname(os.__file__)
    texts = []
    total = 0
    for path in sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True)):
        try:
            with open(path, encoding="utf-8") as f:
                texts.append(f.read())
        except (OSError, UnicodeDecodeError):
            continue
        total += len(texts[-1])
        if total > 40 * MB:
            break
    return texts


def _prose(r: random.Random) -> str:
    sentences = []
    for _ in range(r.randint(1, 12)):
        words = [r.choice(PROSE_WORDS) for _ in range(r.randint(6, 24))]
        if r.random() < 0.2:
            words.insert(
                r.randrange(len(words)), "`" + r.choice(["pimem_index/db.py", "tests/", "--json", "git status"]) + "`"
            )
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences)


def _shell(r: random.Random) -> str:
    kind = r.randrange(4)
    lines = []
    if kind == 0:
        for _ in range(r.randint(5, 200)):
            lines.append(
                f"-rw-r--r-- 1 user user {r.randint(10, 99999):6d} Dec  2 16:14 {_rand(r, r.randint(3, 14)).lower()}.py"
            )
    elif kind == 1:
        for _ in range(r.randint(5, 100)):
            lines.append(
                f"commit {_rand(r, 40, HEX)}\nAuthor: Dev <dev@example.com>\n"
                f"Date:   Tue Dec 2 16:14:00 2025\n\n    {_prose(r)[:70]}\n"
            )
    elif kind == 2:
        for _ in range(r.randint(5, 150)):
            lines.append(
                f"tests/test_{_rand(r, 8).lower()}.py::test_{_rand(r, 12).lower()} PASSED [{r.randint(0, 100):3d}%]"
            )
    else:
        for _ in range(r.randint(5, 80)):
            lines.append(
                f'    "node_modules/{_rand(r, 8).lower()}": {{"version": "1.{r.randint(0, 9)}.{r.randint(0, 9)}", '
                f'"resolved": "https://registry.npmjs.org/x/-/x-1.0.0.tgz", '
                f'"integrity": "sha512-{_rand(r, 86, B64)}=="}},'
            )
    return "\n".join(lines)


def _json(r: random.Random) -> str:
    return (
        '{"type":"message","id":"%s","parentId":"%s","timestamp":"2025-12-02T16:14:00.000Z",'  # noqa: UP031 (JSON braces)
        '"message":{"role":"assistant","content":[{"type":"toolCall","id":"toolu_%s","name":"bash",'
        '"arguments":{"command":"ls -la"}}],"usage":{"input":%d,"output":%d,"cacheRead":%d,'
        '"totalTokens":%d},"stopReason":"toolUse"},"session":"%s-%s-%s-%s-%s"}'
        % (
            _rand(r, 8, HEX),
            _rand(r, 8, HEX),
            _rand(r, 24),
            r.randint(1, 9999),
            r.randint(1, 999),
            r.randint(0, 99999),
            r.randint(1, 99999),
            _rand(r, 8, HEX),
            _rand(r, 4, HEX),
            _rand(r, 4, HEX),
            _rand(r, 4, HEX),
            _rand(r, 12, HEX),
        )
    )


def _secret_line(r: random.Random) -> str:
    return r.choice(
        [
            "export GITHUB_TOKEN=" + "gh" + "p_" + _rand(r, 36),
            "DATABASE_URL=postgres://app:" + _rand(r, 16) + "@db.internal:5432/app",
            'api_key = "' + _rand(r, 32) + '"',
            "Authorization: Bearer " + _rand(r, 40),
            "AWS_SECRET_ACCESS_KEY=" + _rand(r, 40, B64),
        ]
    )


def realistic_entries(target: int, seed: int = 7) -> list[str]:
    """Pi-like entries totalling about ``target`` characters."""
    r = random.Random(seed)
    code = _stdlib_code()
    entries = []
    total = 0
    while total < target:
        roll = r.random()
        if roll < 0.40:  # a file read or an edit: a slice of real source code
            src = r.choice(code)
            size = min(len(src), int(r.expovariate(1 / 6000)) + 200)
            start = r.randrange(max(1, len(src) - size))
            text = src[start : start + size]
        elif roll < 0.70:
            text = _prose(r)
        elif roll < 0.88:
            text = _shell(r)
        else:
            text = "\n".join(_json(r) for _ in range(r.randint(1, 20)))
        if r.random() < 1 / 300:
            text += "\n" + _secret_line(r) + "\n"
        entries.append(text)
        total += len(text)
    return entries


ADVERSARIAL = {
    "base64 run": lambda r, n: _rand(r, 4096, B64) * (n // 4096 + 1),
    "'=' run": lambda r, n: "=" * n,
    "one letter": lambda r, n: "a" * n,
    "backslashes": lambda r, n: "\\" * n,
    "password= no value": lambda r, n: "password=" * (n // 9 + 1),
    "password:space run": lambda r, n: ("password:" + " " * 200) * (n // 209 + 1),
    "token\\n repeats": lambda r, n: "token\\n" * (n // 7 + 1),
    "PEM headers, no END": lambda r, n: ("-----BEGIN RSA PRIVATE KEY-----" + _rand(r, 64, B64)) * (n // 95 + 1),
    "'://' + user no @": lambda r, n: ("http://" + "u" * 300 + ":" + "p" * 300 + " ") * (n // 608 + 1),
    "curl, long line": lambda r, n: ("curl " + "x" * 5000 + "\n") * (n // 5006 + 1),
    "mysql, long line": lambda r, n: ("mysql " + "-" * 2000 + "\n") * (n // 2007 + 1),
    "AKIA + base64": lambda r, n: ("AKIA" + "A" * 16 + " " + _rand(r, 500, B64)) * (n // 521 + 1),
    "eyJ, no dots": lambda r, n: ("eyJ" + _rand(r, 2000, ALNUM)) * (n // 2003 + 1),
    "eyJ.ey no 3rd dot": lambda r, n: ("eyJ" + "a" * 100 + ".ey" + "b" * 100 + " ") * (n // 206 + 1),
    "cookie: a=a;a=a": lambda r, n: ("Cookie: " + "a=a;" * 2000 + "\n") * (n // 8009 + 1),
    "digits (telegram)": lambda r, n: "telegram " + "1" * n,
    "twilio hex": lambda r, n: "twilio " + HEX * (n // 16),
    "quotes after key": lambda r, n: ('password="' + "a" * 3000 + "\n") * (n // 3011 + 1),
    "key=value words": lambda r, n: ("monkey=" + _rand(r, 30) + " ") * (n // 38 + 1),
    "authorization:": lambda r, n: ("Authorization: " + "," * 100) * (n // 115 + 1),
    "sk- dashes": lambda r, n: ("sk-" + "-" * 500 + " ") * (n // 504 + 1),
    "upper-case A run": lambda r, n: "A" * n,
    "value: after names": lambda r, n: '{"name": "api_key", "value": ' * (n // 30 + 1),
    "docker login, long": lambda r, n: ("docker login " + "-p " * 1000 + "\n") * (n // 3014 + 1),
    "digits|digits": lambda r, n: "1234567890123456|" * (n // 17 + 1),
    "hex-us hex-us": lambda r, n: (HEX * 2 + "-us") * (n // 35 + 1),
    "session=": lambda r, n: ("_session=" + "a1" * 20 + " ") * (n // 50 + 1),
    "%5f%5f%5fkey=": lambda r, n: ("%5f" * 20 + "key=" + "v" * 20 + " ") * (n // 85 + 1),
    "&quot; runs": lambda r, n: ("password=&quot;" + "a" * 100 + " ") * (n // 116 + 1),
    # issue 27's forms
    "base64 of digits, no dot": lambda r, n: "MTIzNDU2Nzg5MDEy" * (n // 16 + 1),
    "value ; & ) runs": lambda r, n: "password=" + "a;b&c)d" * (n // 7 + 1),
    "set -gx / ENV lines": lambda r, n: "set -gx API_TOKEN \nENV API_KEY \n" * (n // 32 + 1),
    "http -a, no pair": lambda r, n: ("http -a " + "x" * 50 + "\n") * (n // 59 + 1),
    "setter calls, no value": lambda r, n: 'os.Setenv("API_KEY", ' * (n // 21 + 1),
    "encoded ://, no @": lambda r, n: ("https%3A%2F%2Fuser%3A" + "a" * 40 + " ") * (n // 62 + 1),
}


def _time(fn, *args, repeat: int = 1) -> float:
    """CPU seconds of the fastest of ``repeat`` calls: on a shared machine wall time swings with the load."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn(*args)
        best = min(best, time.process_time() - t0)
    return best


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_seconds(size: int) -> float:
    """CPU seconds to redact the realistic entries of ``size`` bytes one by one, best of two, with the
    pimem_index this process imported (the tree a parent ran it in: see ``_child_seconds``)."""
    import pimem_index.redaction

    entries = realistic_entries(size)
    redact_entry = pimem_index.redaction.redact
    redact_entry(entries[0])  # the rules compile on first use (on import, in older trees)
    return _time(lambda: [redact_entry(e) for e in entries], repeat=2)


def _tree_of(rev: str, into: str) -> str:
    """The pimem_index package of git revision ``rev``, extracted under ``into``."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "pimem_index"], capture_output=True, check=True)
    path = os.path.join(into, "tree")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(path, filter="data")
    return path


def _child_seconds(tree: str, size: int) -> float:
    """``child_seconds`` in a child process that imports ``tree``'s pimem_index: `-m` puts its working
    folder (``tree``) first on sys.path, and PYTHONPATH finds this package's benchmarks behind it."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_redact", "--child-seconds", str(size)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
        env=env,
    )
    where, seconds = out.stdout.split()[-2:]
    assert where.startswith(os.path.join(tree, "")), f"{where} is not under {tree}"
    return float(seconds)


def against(rev: str, size: int, rounds: int) -> tuple[float, float]:
    """(seconds with this checkout, seconds with ``rev``): the best of ``rounds`` child runs each, interleaved."""
    with tempfile.TemporaryDirectory() as tmp:
        old_tree = _tree_of(rev, tmp)
        new: list[float] = []
        old: list[float] = []
        for i in range(rounds):
            pair = [(ROOT, new), (old_tree, old)]
            for tree, times in pair if i % 2 == 0 else pair[::-1]:
                times.append(_child_seconds(tree, size))
    return min(new), min(old)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller inputs (for a smoke run)")
    ap.add_argument("--size", type=float, default=48, help="MB of realistic text (default 48)")
    ap.add_argument("--no-docs", action="store_true", help="do not write the figures into docs/performance.md")
    ap.add_argument("--against", metavar="REV", help="also time REV's redaction on the same entries (git revision)")
    ap.add_argument("--rounds", type=int, default=5, help="child runs per side with --against (default 5)")
    ap.add_argument("--child-seconds", type=int, metavar="BYTES", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_seconds:
        import pimem_index.redaction

        seconds = child_seconds(args.child_seconds)
        print(pimem_index.redaction.__file__, seconds)
        return 0
    size = int((8 if args.quick else args.size) * MB)
    sizes = [1, 2, 4] if args.quick else [1, 2, 4, 8, 16]

    entries = realistic_entries(size)
    nbytes = sum(len(e.encode("utf-8", "surrogatepass")) for e in entries)
    mb = nbytes / MB
    print(f"realistic text: {len(entries)} entries, {mb:.1f} MB")

    def per_entry():
        for e in entries:
            redact(e)

    def lower_baseline():
        for e in entries:
            e.lower()

    literal = re.compile("zq" + "xj" + "vk")

    def re_baseline():
        for e in entries:
            literal.search(e)

    t_red = _time(per_entry, repeat=2)
    t_low = _time(lower_baseline, repeat=2)
    t_re = _time(re_baseline, repeat=2)
    big = "\n".join(entries[: max(1, len(entries) // 4)])
    big_mb = len(big.encode("utf-8", "surrogatepass")) / MB
    t_big = _time(redact, big)
    print(f"  redact, entry by entry      {mb / t_red:8.1f} MB/s")
    print(f"  redact, one {big_mb:5.1f} MB text    {big_mb / t_big:8.1f} MB/s (sliced at line ends)")
    print(f"  baseline str.lower()        {mb / t_low:8.1f} MB/s   redact costs {t_red / t_low:5.1f}x lower()")
    print(f"  baseline re literal scan    {mb / t_re:8.1f} MB/s   redact costs {t_red / t_re:5.1f}x one re scan")
    # Share of cold indexing (field notes): ~37% of journal bytes are text
    # that gets redacted; parsing runs ~180 MB/s of journal and the FTS5
    # writer ~48 MB/s of journal, the bottleneck.
    per_mb_journal = 0.37 / (mb / t_red)
    cold = 1 / 180 + 1 / 48
    print(
        f"  per MB of journal: redaction {1000 * per_mb_journal:.1f} ms; cold indexing (parse + FTS) "
        f"{1000 * cold:.1f} ms -> redaction adds {100 * per_mb_journal / cold:.0f}% "
        f"({100 * per_mb_journal * 180:.0f}% of parsing alone)"
    )

    compared = None
    if args.against:
        t_new, t_old = against(args.against, size, args.rounds)
        compared = (t_new / t_old, mb / t_new, mb / t_old)
        print(
            f"  against {args.against}: {mb / t_new:.1f} MB/s here, {mb / t_old:.1f} MB/s there "
            f"(CPU time, best of {args.rounds} interleaved child runs each): time per MB x{t_new / t_old:.3f}"
        )

    print("\nadversarial input: seconds per MB at " + ", ".join(f"{s} MB" for s in sizes) + "; ratio largest/1 MB")
    r = random.Random(3)
    worst = worst2 = 0.0
    for name, make in ADVERSARIAL.items():
        per_mb = []
        for s in sizes:
            text = make(r, s * MB)[: s * MB]
            per_mb.append(_time(redact, text) / s)
        ratio = per_mb[-1] / per_mb[0] if per_mb[0] > 0 else float("nan")
        ratio2 = per_mb[-1] / per_mb[1] if len(per_mb) > 1 and per_mb[1] > 0 else float("nan")
        worst = max(worst, ratio)
        worst2 = max(worst2, ratio2)
        cells = " ".join(f"{t * 1000:7.1f}" for t in per_mb)
        print(
            f"  {name:22s} ms/MB {cells}   ratio {ratio:4.2f} (vs 2 MB {ratio2:4.2f})"
            f"   ({1 / max(per_mb):6.0f} MB/s worst)"
        )
    print(f"\nworst per-MB ratio largest/1 MB: {worst:.2f}; largest/2 MB: {worst2:.2f}")
    print("(texts over 1 MB are redacted in slices with a 64 KB overlap: a constant step between 1 and 2 MB)")
    if not (args.quick or args.no_docs):
        figures = "\n".join(
            [
                f"Run {time.strftime('%Y-%m-%d %H:%M %z')}: {mb:.1f} MB of realistic text, {len(entries)} entries; "
                "CPU time (one core).",
                "",
                "| figure | value |",
                "|---|---|",
                f"| redact, entry by entry (as the indexer does) | {mb / t_red:.1f} MB/s |",
                f"| redact, one {big_mb:.1f} MB text (sliced at line ends) | {big_mb / t_big:.1f} MB/s |",
                f"| redact's cost against `str.lower()` on the same text | {t_red / t_low:.1f}x |",
                f"| adversarial inputs, worst per-MB time at {sizes[-1]} MB / 1 MB (linear: near 1) | {worst:.2f} |",
                f"| the same, {sizes[-1]} MB / 2 MB (past the slicing step) | {worst2:.2f} |",
            ]
        )
        if compared is not None:
            figures += (
                f"\n| redaction's time per MB against `{args.against}`, same entries, interleaved "
                f"({compared[1]:.1f} vs {compared[2]:.1f} MB/s) | x{compared[0]:.3f} |"
            )
        if docs_figures.replace_between(DOCS_START, DOCS_END, figures):
            print("wrote the figures into docs/performance.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
