"""Generate a realistic corpus of Pi session journals for the benchmark suite.

    python -m benchmarks.corpus OUTDIR --size 500MB [--seed N]

or, from Python, ``generate(outdir, size_bytes, seed) -> stats``.

The layout and the lines follow ../shared/reference/pi-journal-format.md:
``OUTDIR/--<encoded cwd>--/<ISO timestamp with : and . as ->_<uuid>.jsonl``,
version-3 journals (header + entries with 8-hex ids) and some version-1 ones.
Large tool outputs are windows of real text read from this machine (Python
sources, site-packages, /usr/share/doc), read once into a pool.

Planted, for the benchmark to assert correctness (listed in OUTDIR/manifest.json):
- needles: invented words, each in known entries (session, project, kind, entry id);
- secrets: token-shaped values built at run time (no token literal is in this
  file), with the alphanumeric runs ("probes") that must never become search terms.

Output is deterministic for a given seed, ``--now`` and machine (the text pool
comes from files on the machine; its digest is in the manifest).
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import gzip
import hashlib
import os
import random
import re
import shutil
import string
import sys
import time
import uuid
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import orjson

import pi_lines

#: bump when the output for a given seed changes, so benchmarks/run.py regenerates old corpora
CORPUS_VERSION = 5  # 5: lines shaped by pi_lines (custom entries' own keys first, details before isError)
MB = 1024 * 1024
DAY_MS = 86_400_000

# --------------------------------------------------------------------------- sizes


def parse_size(text: str | int) -> int:
    """'500MB', '1GB', '250M', '50mb', '1048576' -> bytes (binary units)."""
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?b)?\s*", text.lower())
    if not m:
        raise ValueError(f"bad size {text!r}: expected e.g. 500MB or 1GB")
    mult = {"": 1, "k": 1024, "m": MB, "g": 1024 * MB, "t": 1024 * 1024 * MB}[m.group(2)]
    return int(float(m.group(1)) * mult)


def format_size(n: int) -> str:
    if n >= 1024 * MB and n % (1024 * MB) == 0:
        return f"{n // (1024 * MB)}GB"
    if n >= MB:
        return f"{n / MB:g}MB"
    return f"{n}B"


# --------------------------------------------------------------------------- text pool

POOL_ROOTS_CODE = [  # system-managed trees: a pip install elsewhere does not change the corpus
    "/usr/lib/python3.11",
    "/usr/lib/python3/dist-packages",
    "/root/.pyenv/versions/3.11.7/lib/python3.11",
    "/usr/lib/python3",
]
SKIP_DIRS = {"site-packages", "__pycache__", "node_modules", ".git"}
POOL_ROOTS_PROSE = ["/usr/share/doc", "/usr/share/common-licenses"]
CODE_EXT = {".py", ".c", ".h", ".js", ".ts", ".css", ".toml", ".cfg", ".ini", ".sh", ".json", ".yaml", ".yml", ".pyi"}
PROSE_EXT = {".txt", ".md", ".rst", ".html", ".gz", ""}


class TextPool:
    """Real text from the machine: code documents and prose documents, read once."""

    def __init__(self, code_budget: int = 24 * MB, prose_budget: int = 8 * MB):
        t0 = time.perf_counter()

        # The pool does not depend on the corpus seed. Files are taken in the order of a hash
        # of their path, so a file added to the machine shifts the selection only a little.
        def order(paths: list[str]) -> list[str]:
            return sorted(set(paths), key=lambda p: hashlib.blake2b(p.encode(), digest_size=8).digest())

        code_paths = order(self._candidates(POOL_ROOTS_CODE, CODE_EXT))
        # docs from the Python tree are prose too
        prose_paths = order(
            self._candidates(POOL_ROOTS_PROSE, PROSE_EXT) + self._candidates(POOL_ROOTS_CODE, {".txt", ".rst", ".md"})
        )
        self.code = self._load(code_paths, code_budget)
        self.prose = self._load(prose_paths, prose_budget)
        if not self.code or not self.prose:  # a bare machine: fall back to this file
            me = Path(__file__).read_text()
            self.code = self.code or [("src/corpus.py", me)]
            self.prose = self.prose or [("docs/corpus.txt", me)]
        digest = hashlib.sha256()
        for p, t in self.code + self.prose:
            digest.update(p.encode())
            digest.update(str(len(t)).encode())
        self.digest = digest.hexdigest()[:16]
        self.code_bytes = sum(len(t) for _, t in self.code)
        self.prose_bytes = sum(len(t) for _, t in self.prose)
        # prose split into sentences for chat-like text
        sentences: list[str] = []
        for _, text in self.prose[:400]:
            for s in re.split(r"(?<=[.!?])\s+", text):
                s = " ".join(s.split())
                if 30 <= len(s) <= 300 and sum(c.isalpha() for c in s) > len(s) * 0.6:
                    sentences.append(s)
        self.sentences = sentences or ["The quick brown fox jumps over the lazy dog."]
        words = re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", " ".join(self.sentences[:20000]))
        self.words = sorted(set(words)) or ["function", "value"]
        self.seconds = time.perf_counter() - t0
        self._lower_blob: str | None = None

    @staticmethod
    def _candidates(roots: list[str], exts: set[str]) -> list[str]:
        out: list[str] = []
        for root in roots:
            if not os.path.isdir(root):
                continue
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
                for name in sorted(filenames):
                    ext = os.path.splitext(name)[1]
                    if ext not in exts:
                        continue
                    if ext == "" and not (name.startswith(("README", "copyright", "NEWS", "changelog", "AUTHORS"))):
                        continue
                    path = os.path.join(dirpath, name)
                    try:
                        st = os.stat(path)
                    except OSError:
                        continue
                    if 300 <= st.st_size <= 600_000 and os.path.isfile(path):
                        out.append(path)
        return out

    @staticmethod
    def _load(paths: list[str], budget: int) -> list[tuple[str, str]]:
        docs: list[tuple[str, str]] = []
        total = 0
        for path in paths:
            if total >= budget:
                break
            try:
                if path.endswith(".gz"):
                    with gzip.open(path, "rb") as f:
                        raw = f.read(600_000)
                    path = path[:-3]
                else:
                    with open(path, "rb") as f:
                        raw = f.read()
            except (OSError, EOFError, gzip.BadGzipFile):
                continue
            if b"\x00" in raw[:4096]:
                continue
            text = raw.decode("utf-8", errors="replace")
            if text.count("\n") < 5:
                continue
            docs.append((TextPool._project_path(path), text))
            total += len(text)
        return docs

    @staticmethod
    def _project_path(path: str) -> str:
        """Map a machine path to a plausible path inside a project."""
        parts = [p for p in path.split("/") if p]
        for marker in ("site-packages", "dist-packages", "doc"):
            if marker in parts:
                tail = parts[parts.index(marker) + 1 :]
                break
        else:
            tail = parts[-3:]
        tail = [t for t in tail if not t.startswith("python3")] or parts[-1:]
        top = "docs" if path.endswith((".txt", ".md", ".rst", ".html")) or "doc" in parts else "src"
        return "/".join([top] + tail[-4:])

    def lower_blob(self) -> str:
        if self._lower_blob is None:
            self._lower_blob = (
                "\n".join(t for _, t in self.code + self.prose).lower() + "\n".join(self.sentences).lower()
            )
        return self._lower_blob

    # windows of text ----------------------------------------------------------
    @staticmethod
    def window(text: str, rng: random.Random, size: int) -> str:
        """About `size` characters of `text`, starting and ending at line boundaries."""
        n = len(text)
        if n <= size:
            return text
        start = rng.randrange(0, n - size)
        nl = text.find("\n", start)
        start = start if nl < 0 or nl - start > 400 else nl + 1
        end = start + size
        nl = text.rfind("\n", start, end)
        if nl > start + size // 2:
            end = nl
        return text[start:end]

    def code_doc(self, rng: random.Random) -> tuple[str, str]:
        return self.code[rng.randrange(len(self.code))]

    def prose_doc(self, rng: random.Random) -> tuple[str, str]:
        return self.prose[rng.randrange(len(self.prose))]

    def prose_text(self, rng: random.Random, n_sentences: int) -> str:
        i = rng.randrange(len(self.sentences))
        return " ".join(self.sentences[(i + k) % len(self.sentences)] for k in range(n_sentences))


class BytesPool:
    """Random bytes (deterministic for the seed) sliced for signatures and images."""

    def __init__(self, rng: random.Random, size: int = 3 * MB):
        raw = rng.randbytes(size)
        self.b64 = base64.b64encode(raw).decode("ascii")

    def b64_slice(self, rng: random.Random, n: int) -> str:
        n -= n % 4
        if n >= len(self.b64):
            reps = n // len(self.b64) + 1
            return (self.b64 * reps)[:n]
        start = rng.randrange(0, (len(self.b64) - n) // 4) * 4
        return self.b64[start : start + n]


# --------------------------------------------------------------------------- projects

PROJECTS = [  # cwd, weight
    ("/home/u/Apps/prjct", 14),
    ("/home/u/Apps/prjct/prjct-be", 16),
    ("/home/u/Apps/prjct/prjct-fe", 9),
    ("/home/u/Apps/prjct/prjct-be/migrations", 2),
    ("/home/u/Apps/fluenty", 14),
    ("/home/u/Apps/fluenty/api", 6),
    ("/home/u/Apps/my-app", 4),  # encodes like /home/u/Apps/my/app: the folder name is lossy
    ("/home/u/Apps/my/app", 2),
    ("/home/u/src/x/y", 10),
    ("/home/u/src/x/y/crates/core", 5),
    ("/home/u/src/x/z", 4),
    ("/home/u/notes", 5),  # a folder directly under home
    ("/home/u/dotfiles", 3),
    ("/tmp/scratch-4f2a", 2),  # a temporary folder
    ("/srv/www/site_2024", 3),  # '_' in a name: LIKE must escape it
]


def encode_cwd(cwd: str) -> str:
    return "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd)) + "--"


def project_root(cwd: str, cwds_with_sessions: set[str], home: str = "/home/u") -> str:
    """The project root rule of issue 3 applied to the corpus's own cwds (for the manifest)."""
    parts = cwd.rstrip("/").split("/")
    ancestors = ["/".join(parts[:i]) for i in range(2, len(parts) + 1)]  # outermost first
    for a in ancestors:
        if a in (home, "/"):
            continue
        parent = a.rsplit("/", 1)[0] or "/"
        if parent in (home, "/") and a != cwd:
            continue  # a direct child of home or / counts only when it is the cwd itself
        if a in cwds_with_sessions:
            return a
    return cwd


# --------------------------------------------------------------------------- secrets


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
UPPER_NUM = string.ascii_uppercase + "234567"


def make_secret(rng: random.Random, kind: str) -> tuple[str, str]:
    """(text containing the secret, the secret value itself). Prefixes are assembled here."""
    a = _rand(rng, ALNUM, 36)
    if kind == "github_token":
        value = "gh" + "p_" + a
        return f"export GITHUB_TOKEN={value}", value
    if kind == "github_pat":
        value = "github" + "_pat_" + _rand(rng, ALNUM, 22) + "_" + _rand(rng, ALNUM, 59)
        return f"git remote set-url origin https://x-access-token:{value}@github.com/u/prjct.git", value
    if kind == "anthropic_key":
        value = "sk" + "-ant-" + "api03-" + _rand(rng, ALNUM, 93) + "AA"
        return f"ANTHROPIC_API_KEY={value}", value
    if kind == "openai_key":
        value = "sk" + "-proj-" + _rand(rng, ALNUM, 48)
        return f'OPENAI_API_KEY="{value}"', value
    if kind == "aws_key_id":
        value = "AK" + "IA" + _rand(rng, UPPER_NUM, 16)
        secret = _rand(rng, ALNUM + "/+", 40)
        return f"[default]\naws_access_key_id = {value}\naws_secret_access_key = {secret}\nregion = eu-west-1", value
    if kind == "password_kv":
        value = _rand(rng, ALNUM, 20)
        return f"DB_HOST=localhost\nDB_USER=app\npassword={value}\nDB_NAME=prod", value
    if kind == "api_key_json":
        value = _rand(rng, ALNUM, 32)
        return f'{{"service": "mailer", "api_key": "{value}", "timeout": 30}}', value
    if kind == "bearer":
        value = _rand(rng, ALNUM, 40)
        return f"curl -H 'Authorization: Bearer {value}' https://api.example.com/v1/me", value
    if kind == "jwt":

        def seg(obj: dict) -> str:
            return base64.urlsafe_b64encode(orjson.dumps(obj)).decode().rstrip("=")

        value = ".".join(
            [
                seg({"alg": "HS256", "typ": "JWT"}),
                seg({"sub": _rand(rng, string.digits, 10), "name": "u", "iat": 1760000000, "n": _rand(rng, ALNUM, 12)}),
                base64.urlsafe_b64encode(rng.randbytes(32)).decode().rstrip("="),
            ]
        )
        return f"session cookie: token={value}; Path=/; HttpOnly", value
    if kind == "pem":
        body = base64.b64encode(rng.randbytes(600)).decode()
        lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
        label = "RSA " + "PRIVATE" + " KEY"
        value = f"-----BEGIN {label}-----\n{lines}\n-----END {label}-----"
        return value, value
    if kind == "url_userinfo":
        value = _rand(rng, ALNUM, 18)
        return f"DATABASE_URL=postgres://deploy:{value}@db.internal:5432/app", value
    if kind == "curl_u":
        value = _rand(rng, ALNUM, 16)
        return f"curl -u admin:{value} https://ci.example.com/api/json", value
    if kind == "slack_token":
        value = (
            "xo"
            + "xb-"
            + _rand(rng, string.digits, 12)
            + "-"
            + _rand(rng, string.digits, 12)
            + "-"
            + _rand(rng, ALNUM, 24)
        )
        return f"SLACK_BOT_TOKEN={value}", value
    raise ValueError(kind)


SECRET_KINDS = [
    "github_token",
    "github_pat",
    "anthropic_key",
    "openai_key",
    "aws_key_id",
    "password_kv",
    "api_key_json",
    "bearer",
    "jwt",
    "pem",
    "url_userinfo",
    "curl_u",
    "slack_token",
]


def secret_probes(value: str) -> list[str]:
    """Alphanumeric runs of a secret that are random enough to be distinctive (>= 10 chars)."""
    runs = re.findall(r"[A-Za-z0-9]+", value)
    out = []
    for r in runs:
        if len(r) >= 10 and not r.isalpha() and r not in ("BEGIN", "PRIVATE"):
            out.append(r)
        elif len(r) >= 14:
            out.append(r)
    return sorted(set(out), key=lambda s: (-len(s), s))[:4]


# --------------------------------------------------------------------------- needles

_SYL_C = "bdfgklmnprstvz"
_SYL_V = "aeiou"


def make_needle(rng: random.Random, blob: str, used: set[str]) -> str:
    while True:
        w = "".join(rng.choice(_SYL_C) + rng.choice(_SYL_V) for _ in range(4)) + rng.choice("qxjw")
        if w not in used and w not in blob:
            used.add(w)
            return w


# --------------------------------------------------------------------------- sessions

MODELS = [
    ("anthropic", "anthropic-messages", "claude-sonnet-4-5"),
    ("anthropic", "anthropic-messages", "claude-opus-4-5"),
    ("openai", "openai-responses", "gpt-5"),
]
# Dollars per million tokens: input, output, cache read, cache write (the providers' list prices).
PRICES = {
    "claude-sonnet-4-5": (3.0, 15.0, 0.30, 3.75),
    "claude-opus-4-5": (5.0, 25.0, 0.50, 6.25),
    "gpt-5": (1.25, 10.0, 0.125, 0.0),
}
USER_ASKS = [
    "fix the failing test in {p}",
    "why does {p} raise on empty input?",
    "refactor {p} so it streams",
    "add a --json flag to the CLI",
    "the login bug is back, look at {p}",
    "write tests for {p}",
    "explain what {p} does",
    "make the build pass",
    "rename the helper in {p} and update callers",
    "can you check the logs and tell me what went wrong",
    "review my last commit",
    "speed up {p}",
    "the migration fails on postgres, see {p}",
    "update the README for the new flags",
]
BASH_CMDS = [
    "ls -la {d}",
    "git status",
    "git log --oneline -20",
    "git diff {p}",
    "python -m pytest -x -q",
    "python -m pytest {p} -q",
    'grep -rn "{w}" {d}',
    "rg -n {w} {d}",
    "cat {p}",
    "wc -l {p}",
    "npm test",
    "npm run build 2>&1 | tail -50",
    "make lint",
    "head -100 {p}",
    "find {d} -name '*.py' | head -40",
    "cargo build 2>&1 | tail -40",
    "docker compose logs --tail 200 api",
    "sed -n '1,120p' {p}",
]


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


KIND_OF_ROLE = {
    "user": "user",
    "assistant": "assistant",
    "toolResult": "tool_result",
    "bashExecution": "bash",
    "custom": "custom",
}


class PendingResult(NamedTuple):
    """A tool call's result, written once the assistant message holding the call is: what it says, and the
    plants placed in it."""

    call_id: str
    name: str
    content: list[dict]
    is_error: bool
    details: dict | None
    placements: list[dict]


class Session:
    """Writes one journal, line by line, and records its entries for the manifest."""

    def __init__(self, g: Generator, index: int, cwd: str, start_ms: int, target: int, version: int):
        self.g = g
        self.rng = random.Random(g.seed * 1_000_003 + index)
        self.cwd = cwd
        self.ms = start_ms
        self.target = target
        self.version = version
        self.session_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        stamp = iso(start_ms).replace(":", "-").replace(".", "-")
        self.rel = f"{encode_cwd(cwd)}/{stamp}_{self.session_id}.jsonl"
        self.buf: list[bytes] = []
        self.size = 0
        self.lines = 0
        self.ids: set[str] = set()
        self.leaf: str | None = None
        self.user_ids: list[str] = []
        self.all_ids: list[str] = []
        self.kinds: dict[str, int] = {}
        self.types: dict[str, int] = {}
        self.indexable = 0
        self.since_compaction = 0
        self.read_files: list[str] = []
        self.modified_files: list[str] = []
        self.model = MODELS[self.rng.randrange(len(MODELS))]
        self.pending_plants: list[tuple[str, Any, int]] = []  # (kind preference, plant, after this many bytes)
        self.last_placements: list[dict] = []

    # low level ---------------------------------------------------------------
    def new_id(self) -> str:
        while True:
            i = f"{self.rng.getrandbits(32):08x}"
            if i not in self.ids:
                self.ids.add(i)
                return i

    def tick(self, lo: int = 100, hi: int = 20_000) -> int:
        self.ms += self.rng.randint(lo, hi)
        return self.ms

    def emit(self, obj: dict, kind: str | None = None, indexable: int = 0) -> str:
        """Append a line; returns the entry id (or L<n> for version 1)."""
        line = pi_lines.dumps(obj)
        self.buf.append(line)
        self.size += len(line)
        self.since_compaction += len(line)
        self.lines += 1
        t = obj["type"]
        self.types[t] = self.types.get(t, 0) + 1
        if kind:
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
            self.indexable += indexable
        if len(self.buf) >= 256:
            self.flush()
        eid = obj.get("id") or f"L{self.lines}"
        for p in self.last_placements:  # plants inserted into this entry's text
            p["entry_id"] = eid
            p["line"] = self.lines
            p["kind"] = kind or p["kind"]
        self.last_placements.clear()
        return eid

    def flush(self) -> None:
        if self.buf:
            self.g.write(self.rel, b"".join(self.buf))
            self.buf.clear()

    def at(self, parent: str | None | bool = True) -> pi_lines.At:
        """The next entry's id (a version-1 journal has none), its parent (the leaf unless given) and time."""
        if self.version < 3:
            return pi_lines.At(None, None, iso(self.tick()))
        eid = self.new_id()
        at = pi_lines.At(eid, self.leaf if parent is True else parent or None, iso(self.tick()))
        self.leaf = eid
        self.all_ids.append(eid)
        return at

    def entry(self, type_: str, parent: str | None | bool = True, **fields) -> dict:
        return pi_lines.entry(type_, self.at(parent), **fields)

    def plant(self, kind: str, text: str) -> str:
        """Add any pending needle/secret meant for this kind of entry to `text`."""
        rest = []
        for want, item, after in self.pending_plants:
            if self.size >= after and (
                want == kind or (want == "any" and kind in ("user", "assistant", "tool_result"))
            ):
                text = self.g.insert_plant(self, item, text, kind)
            else:
                rest.append((want, item, after))
        self.pending_plants = rest
        return text

    # entries -----------------------------------------------------------------
    def header(self) -> None:
        extra: dict = {}
        parent = None
        if self.version == 1:
            extra = {
                "provider": self.model[0],
                "modelId": self.model[2],
                "thinkingLevel": self.rng.choice(["off", "low", "medium", "high"]),
            }
        elif self.rng.random() < 0.04:
            older = uuid.UUID(int=self.rng.getrandbits(128))
            parent = f"/home/u/.pi/agent/sessions/{encode_cwd(self.cwd)}/older_{older}.jsonl"
        self.emit(
            pi_lines.header(
                self.session_id, iso(self.ms), self.cwd, version=self.version, parent_session=parent, **extra
            )
        )

    def user(self) -> None:
        rng = self.rng
        path = self.g.pool.code_doc(rng)[0]
        ask = rng.choice(USER_ASKS).format(p=path)
        if rng.random() < 0.5:
            ask += "\n\n" + self.g.pool.prose_text(rng, rng.randint(1, 6))
        if rng.random() < 0.1:
            ask += "\n\n```\n" + TextPool.window(self.g.pool.code_doc(rng)[1], rng, rng.randint(300, 4000)) + "\n```"
        ask = self.plant("user", ask)
        self.tick(5_000, 600_000)  # the user takes longer than the agent
        msg_ms = self.ms
        if rng.random() < 0.25:
            content: object = ask
        else:
            content = [{"type": "text", "text": ask}]
            if rng.random() < self.g.image_rate:
                content.append(
                    {
                        "type": "image",
                        "data": self.g.bytes.b64_slice(rng, rng.randint(20_000, 400_000)),
                        "mimeType": "image/png",
                    }
                )
                self.g.images += 1
        obj = self.entry("message", message=pi_lines.user(content, msg_ms))
        eid = self.emit(obj, "user", len(ask))
        self.user_ids.append(eid)

    def usage(self, out_tokens: int) -> dict:
        rng = self.rng
        inp = rng.randint(800, 60_000)
        cr = rng.randint(0, 150_000)
        cw = rng.randint(0, 8000)
        parts = [n * price / 1e6 for n, price in zip((inp, out_tokens, cr, cw), PRICES[self.model[2]], strict=True)]
        cost = dict(zip(("input", "output", "cacheRead", "cacheWrite"), (round(p, 6) for p in parts), strict=True))
        cost["total"] = round(sum(parts), 6)
        return pi_lines.usage(inp, out_tokens, cr, cw, cost, total=self.version >= 3)

    def assistant(self, tool_calls: list[dict]) -> None:
        rng = self.rng
        content: list[dict] = []
        n_text = 0
        if self.model[0] in ("anthropic", "openai") and rng.random() < 0.7:
            if rng.random() < 0.03:
                content.append(
                    {
                        "type": "thinking",
                        "thinking": "[Reasoning redacted]",
                        "thinkingSignature": self.g.bytes.b64_slice(rng, rng.randint(2000, 12000)),
                        "redacted": True,
                    }
                )
            else:
                th = self.plant("thinking", self.g.pool.prose_text(rng, rng.randint(1, 10)))
                content.append(
                    {
                        "type": "thinking",
                        "thinking": th,
                        "thinkingSignature": self.g.bytes.b64_slice(rng, rng.randint(1200, 9000)),
                    }
                )
                n_text += len(th)
        if not tool_calls or rng.random() < 0.6:
            tx = self.g.pool.prose_text(rng, rng.randint(1, 8))
            if not tool_calls and rng.random() < 0.3:
                tx += (
                    "\n\n```python\n"
                    + TextPool.window(self.g.pool.code_doc(rng)[1], rng, rng.randint(200, 3000))
                    + "\n```"
                )
            tx = self.plant("assistant", tx)
            content.append({"type": "text", "text": tx})
            n_text += len(tx)
        for tc in tool_calls:
            content.append(tc)
            n_text += len(orjson.dumps(tc["arguments"]))
        usage = self.usage(rng.randint(20, 4000))
        failed = not tool_calls and rng.random() < 0.01
        msg = pi_lines.assistant(
            content,
            api=self.model[1],
            provider=self.model[0],
            model=self.model[2],
            usage=usage,
            stop_reason="error" if failed else "toolUse" if tool_calls else "stop",
            timestamp_ms=self.ms,
            error_message="overloaded_error: Overloaded" if failed else None,
        )
        self.emit(self.entry("message", message=msg), "assistant", n_text)

    def tool_call(self) -> tuple[dict, PendingResult]:
        """A toolCall block and its result message."""
        rng = self.rng
        pool = self.g.pool
        call_id = "toolu_01" + _rand(rng, ALNUM, 22)
        r = rng.random()
        details = None
        is_error = False
        images: list[dict] = []
        if r < 0.42:
            path, doc = pool.code_doc(rng) if rng.random() < 0.8 else pool.prose_doc(rng)
            if rng.random() < self.g.image_rate * 0.5:
                path = path.rsplit(".", 1)[0] + ".png"
                args: dict[str, Any] = {"path": path}
                text = "Read image file [image/png]"
                images = [
                    {
                        "type": "image",
                        "data": self.g.bytes.b64_slice(rng, rng.randint(30_000, 500_000)),
                        "mimeType": "image/png",
                    }
                ]
                self.g.images += 1
            else:
                size = min(int(rng.lognormvariate(7.95, 1.1)), 50_000)
                text = TextPool.window(doc, rng, size)
                args = {"path": path}
                if rng.random() < 0.3:
                    args["offset"] = rng.randint(1, 400)
                    args["limit"] = 2000
                if len(doc) > len(text) and rng.random() < 0.5:
                    n = text.count("\n") + 1
                    text += f"\n\n[Showing lines 1-{n} of {doc.count(chr(10)) + 1}. Use offset={n + 1} to continue]"
            self.read_files.append(path)
            name = "read"
        elif r < 0.78:
            path, doc = pool.code_doc(rng)
            d = path.rsplit("/", 1)[0]
            w = rng.choice(pool.words)
            cmd = rng.choice(BASH_CMDS).format(p=path, d=d, w=w)
            args = {"command": cmd}
            if rng.random() < 0.2:
                args["timeout"] = rng.choice([30, 60, 120, 600])
            size = min(int(rng.lognormvariate(6.95, 1.5)), 50_000)
            if cmd.startswith(("grep", "rg")):
                lines = TextPool.window(doc, rng, size).split("\n")
                text = "\n".join(f"{path}:{i + 1}:{ln}" for i, ln in enumerate(lines) if ln.strip())
            else:
                text = TextPool.window(doc, rng, size)
            if rng.random() < 0.08:
                is_error = True
                text += f"\n\nCommand exited with code {rng.choice([1, 2, 127])}"
            elif size >= 49_000:
                text += "\n\n[Output truncated: showing last 2000 lines]"
            name = "bash"
        elif r < 0.93:
            path, doc = pool.code_doc(rng)
            old = TextPool.window(doc, rng, rng.randint(80, 2500))
            new = old.replace("return", "return  # checked", 1) if "return" in old else old + "\n# TODO: handle None"
            args = {"path": path, "oldText": old, "newText": new}
            text = f"Successfully replaced text in {path}."
            if rng.random() < 0.8:
                details = {
                    "diff": "\n".join("-" + ln for ln in old.split("\n")[:40])
                    + "\n"
                    + "\n".join("+" + ln for ln in new.split("\n")[:40])
                }
            self.modified_files.append(path)
            name = "edit"
            if rng.random() < 0.05:
                is_error = True
                text = (
                    f"Could not find the exact text in {path}. "
                    "The old text must match exactly including all whitespace and newlines."
                )
        else:
            path, doc = pool.code_doc(rng)
            content = TextPool.window(doc, rng, min(int(rng.lognormvariate(8.3, 1.0)), 40_000))
            args = {"path": path, "content": content}
            text = f"Successfully wrote {len(content.encode())} bytes to {path}"
            self.modified_files.append(path)
            name = "write"
        if name == "bash":
            args["command"] = self.plant("tool_call", args["command"])
        outer, self.last_placements = self.last_placements, []
        text = self.plant("tool_result", text)  # its placements belong to the result entry
        deferred, self.last_placements = self.last_placements, outer
        call = pi_lines.tool_call(call_id, name, args)
        result = PendingResult(call_id, name, [{"type": "text", "text": text}] + images, is_error, details, deferred)
        return call, result

    def tool_result(self, result: PendingResult) -> None:
        self.last_placements.extend(result.placements)
        msg = pi_lines.tool_result(
            result.call_id, result.name, result.content, result.is_error, self.tick(20, 30_000), result.details or None
        )
        n = sum(len(b.get("text", "")) for b in result.content)
        self.emit(self.entry("message", message=msg), "tool_result", n)

    def bash_execution(self) -> None:
        rng = self.rng
        path, doc = self.g.pool.code_doc(rng)
        cmd = rng.choice(BASH_CMDS).format(p=path, d=path.rsplit("/", 1)[0], w=rng.choice(self.g.pool.words))
        out = TextPool.window(doc, rng, min(int(rng.lognormvariate(7.0, 1.4)), 50_000))
        out = self.plant("bash", out)
        exit_code = rng.choice([0, 0, 0, 0, 1])
        truncated = len(out) >= 49_000
        full = f"/tmp/pi-bash-{_rand(rng, string.hexdigits.lower(), 8)}.log" if truncated else None
        msg = pi_lines.bash_execution(
            cmd,
            out,
            exit_code,
            self.ms,
            truncated=truncated,
            full_output_path=full,
            exclude_from_context=True if rng.random() < 0.1 else None,
        )
        self.emit(self.entry("message", message=msg), "bash", len(cmd) + len(out))

    def custom_message(self) -> None:
        rng = self.rng
        text = self.plant("custom", "Reminder from extension: " + self.g.pool.prose_text(rng, rng.randint(1, 4)))
        if self.version == 1:
            return
        content: object = text if rng.random() < 0.6 else [{"type": "text", "text": text}]
        custom_type = rng.choice(["reminder", "plan-mode", "todo"])
        display = rng.random() < 0.8
        at = self.at()
        own = {"customType": custom_type, "content": content, "display": display}
        if rng.random() < 0.3:
            own["details"] = {"source": "extension", "count": rng.randint(1, 9)}
        self.emit(pi_lines.entry("custom_message", at, **own), "custom", len(text))

    def custom_role_message(self) -> None:
        """role `custom`: journals migrated from version 2 (`hookMessage`)."""
        text = self.plant("custom", "Hook note: " + self.g.pool.prose_text(self.rng, 2))
        msg = pi_lines.custom_role("hook", text, True, self.ms)
        self.emit(self.entry("message", message=msg), "custom", len(text))

    def compaction(self) -> None:
        rng = self.rng
        pool = self.g.pool
        sections = [
            "## Goal\n" + pool.prose_text(rng, 2),
            "## Constraints & Preferences\n- " + "\n- ".join(pool.prose_text(rng, 1) for _ in range(rng.randint(1, 4))),
            "## Progress\n### Done\n- [x] "
            + "\n- [x] ".join(pool.prose_text(rng, 1) for _ in range(rng.randint(2, 8))),
            "### In Progress\n- [ ] " + pool.prose_text(rng, 1),
            "## Key Decisions\n- **" + rng.choice(pool.words) + "**: " + pool.prose_text(rng, 2),
            "## Next Steps\n1. " + "\n2. ".join(pool.prose_text(rng, 1) for _ in range(rng.randint(1, 4))),
            "## Critical Context\n" + pool.prose_text(rng, rng.randint(1, 5)),
        ]
        summary = self.plant("compaction", "\n\n".join(sections))
        fields: dict = {"summary": summary}
        if self.version >= 3:
            back = (
                self.all_ids[-rng.randint(2, min(40, len(self.all_ids))) :] if len(self.all_ids) > 2 else self.all_ids
            )
            fields["firstKeptEntryId"] = back[0] if back else None
        else:
            fields["firstKeptEntryIndex"] = max(1, self.lines - rng.randint(2, 40))
        fields["tokensBefore"] = rng.randint(100_000, 195_000)
        if self.version >= 3 and rng.random() < 0.8:
            fields["details"] = {
                "readFiles": sorted(set(self.read_files[-30:])),
                "modifiedFiles": sorted(set(self.modified_files[-20:])),
            }
            fields["fromHook"] = False
        self.emit(self.entry("compaction", **fields), "compaction", len(summary))
        self.since_compaction = 0

    def branch_summary(self) -> None:
        rng = self.rng
        if len(self.user_ids) < 3 or self.version < 3:
            return
        from_id = self.leaf
        branch_point = self.user_ids[rng.randrange(len(self.user_ids) - 1)]
        summary = self.plant(
            "branch_summary",
            "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"
            + self.g.pool.prose_text(rng, rng.randint(2, 10)),
        )
        obj = self.entry("branch_summary", parent=branch_point, fromId=from_id, summary=summary)
        if rng.random() < 0.5:
            obj["details"] = {"readFiles": sorted(set(self.read_files[-5:])), "modifiedFiles": []}
        self.emit(obj, "branch_summary", len(summary))

    def settings_noise(self) -> None:
        rng = self.rng
        r = rng.random()
        if r < 0.3:
            m = MODELS[rng.randrange(len(MODELS))]
            self.model = m
            self.emit(self.entry("model_change", provider=m[0], modelId=m[2]))
        elif r < 0.5:
            self.emit(
                self.entry(
                    "thinking_level_change", thinkingLevel=rng.choice(["off", "minimal", "low", "medium", "high"])
                )
            )
        elif self.version >= 3 and r < 0.65 and self.all_ids:
            obj = self.entry("label", targetId=rng.choice(self.all_ids[-50:]))
            if rng.random() < 0.85:
                obj["label"] = rng.choice(["checkpoint", "good state", "before refactor", "bug repro"])
            self.emit(obj)
        elif self.version >= 3 and r < 0.8:
            self.emit(
                self.entry(
                    "session_info",
                    name=rng.choice(["fix login", "refactor db layer", "release prep", "perf work", "docs"]),
                )
            )
        elif self.version >= 3:
            self.emit(
                self.entry(
                    "custom",
                    customType=rng.choice(["todo-state", "plan-mode", "git-checkpoint"]),
                    data={
                        "items": [rng.choice(self.g.pool.words) for _ in range(rng.randint(0, 6))],
                        "n": rng.randint(0, 99),
                    },
                )
            )

    # the whole session -------------------------------------------------------
    def build(self) -> None:
        rng = self.rng
        self.header()
        if self.g.second_header_next and self.version >= 3:
            self.g.second_header_next = False
            self.g.quirks.append({"quirk": "second_header", "journal": self.rel})
            self.header()
        if self.version >= 3:
            self.emit(self.entry("model_change", provider=self.model[0], modelId=self.model[2]))
            self.emit(self.entry("thinking_level_change", thinkingLevel=rng.choice(["off", "medium", "high"])))
        compact_every = rng.randint(700_000, 2_500_000)
        while self.size < self.target or self.pending_plants:
            self.user()
            for _ in range(min(int(rng.expovariate(1 / 4.0)), 25)):
                calls = [self.tool_call() for _ in range(1 if rng.random() < 0.8 else rng.randint(2, 4))]
                self.assistant([c for c, _ in calls])
                for _, res in calls:
                    self.tool_result(res)
            self.assistant([])
            r = rng.random()
            if r < 0.08:
                self.bash_execution()
            elif r < 0.11:
                self.custom_message()
            elif r < 0.12 and self.version >= 3:
                self.custom_role_message()
            if rng.random() < 0.08:
                self.settings_noise()
            if self.version >= 3 and rng.random() < 0.04:
                self.branch_summary()
            if self.since_compaction > compact_every:
                self.compaction()
            if self.pending_plants and self.size >= self.target:
                self.force_plants()
        self.flush()

    def force_plants(self) -> None:
        """The session is full: put the remaining plants in entries of their kind now."""
        for want, _, _ in list(self.pending_plants):
            if want in ("user", "any"):
                self.user()
            elif want == "assistant" or want == "thinking":
                self.assistant([])
            elif want in ("tool_result", "tool_call"):
                call, res = self.tool_call()
                self.assistant([call])
                self.tool_result(res)
            elif want == "bash":
                self.bash_execution()
            elif want == "custom":
                if self.version >= 3:
                    self.custom_message()
                else:
                    self.pending_plants = [(w, i, a) for w, i, a in self.pending_plants if w != "custom"]
            elif want == "compaction":
                self.compaction()
            elif want == "branch_summary":
                if len(self.user_ids) < 3:
                    self.user()
                    self.assistant([])
                    self.user()
                    self.assistant([])
                    self.user()
                self.branch_summary()


# --------------------------------------------------------------------------- generator

NEEDLE_KINDS = [
    "user",
    "assistant",
    "thinking",
    "tool_result",
    "tool_call",
    "bash",
    "custom",
    "compaction",
    "branch_summary",
]


class Generator:
    def __init__(self, outdir: Path, size_bytes: int, seed: int, now_ms: int, pool: TextPool | None = None):
        self.outdir = outdir
        self.size = size_bytes
        self.seed = seed
        self.now_ms = now_ms
        self.rng = random.Random(seed)
        self.pool = pool or TextPool()
        self.bytes = BytesPool(random.Random(seed ^ 0x5EED))
        self.files: dict[str, object] = {}
        self.image_rate = 0.025
        self.images = 0
        self.quirks: list[dict] = []
        self.second_header_next = False
        self.needles: dict[str, dict] = {}
        self.secrets: list[dict] = []
        self._handles: dict[str, BinaryIO] = {}

    def write(self, rel: str, data: bytes) -> None:
        f = self._handles.get(rel)
        if f is None:
            p = self.outdir / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            f = open(p, "wb")
            self._handles[rel] = f
        f.write(data)

    def close(self, rel: str) -> None:
        f = self._handles.pop(rel, None)
        if f is not None:
            f.close()

    def session_sizes(self) -> list[int]:
        """~3 MB on average: many small, some 20-50 MB (capped at 1/6 of the corpus)."""
        rng = self.rng
        cap = max(200_000, self.size // 6)
        sizes: list[int] = []
        total = 0
        while total < self.size:
            r = rng.random()
            if r < 0.62:
                s = int(rng.uniform(20_000, 1_500_000))
            elif r < 0.955:
                s = int(rng.uniform(1_500_000, 6_500_000))
            else:
                s = int(rng.uniform(20 * MB, 50 * MB))
            s = min(s, cap, self.size - total) if self.size - total > 40_000 else self.size - total
            s = max(s, 20_000)
            sizes.append(s)
            total += s
        return sizes

    def insert_plant(self, session: Session, item: Any, text: str, kind: str) -> str:
        """Put a needle word or a secret into `text` and record where it went."""
        rng = session.rng
        placement: dict[str, Any] = {
            "session_id": session.session_id,
            "journal": session.rel,
            "cwd": session.cwd,
            "kind": kind if kind not in ("thinking", "tool_call") else "assistant",
            "field": kind,
            "version": session.version,
            # the entry id is the id of the entry about to be emitted
            "entry_id": None,
            "line": session.lines + 1 if kind not in ("tool_result",) else None,
        }
        if isinstance(item, dict) and item.get("_secret"):
            snippet = item["text"]
            item["placement"] = placement
        elif isinstance(item, tuple):  # two needles in one entry
            snippet = f"the {item[0]} service talks to {item[1]} over a socket"
            for w in item:
                p = dict(placement, word=w)
                self.needles[w]["placements"].append(p)
                session.last_placements.append(p)
        else:
            word = item  # a needle
            placement["word"] = word
            snippet = rng.choice(
                [
                    f"the {word} flag is what broke it",
                    f"we should call it {word} from now on",
                    f"{word}",
                    f"ERROR {word}: connection reset",
                    f"see {word}() in the handler",
                ]
            )
            self.needles[word]["placements"].append(placement)
        if kind == "tool_call" or len(text) < 200 or rng.random() < 0.3:
            pos = len(text)
        else:  # somewhere in the middle, at a line boundary (deep into large outputs too)
            pos = text.find("\n", rng.randrange(len(text)))
            pos = len(text) if pos < 0 else pos
        sep = " " if kind == "tool_call" else "\n"
        if not isinstance(item, tuple):  # a pair's two placements are recorded above
            session.last_placements.append(placement)
        return text[:pos] + sep + snippet + sep + text[pos:]

    def generate(self) -> dict:
        t0 = time.perf_counter()
        rng = self.rng
        sizes = self.session_sizes()
        n = len(sizes)
        weights = [w for _, w in PROJECTS]
        cwds = rng.choices([c for c, _ in PROJECTS], weights=weights, k=n)
        # every project gets at least one session when there are enough
        for i, (c, _) in enumerate(PROJECTS):
            if i < n and c not in cwds:
                cwds[rng.randrange(n)] = c
        versions = [1 if rng.random() < 0.1 else 3 for _ in range(n)]
        starts = sorted(self.now_ms - int(rng.random() ** 1.3 * 182 * DAY_MS) for _ in range(n))
        # a session must end before `now`: at most about 12 s of journal time per kB written
        starts = [min(st, self.now_ms - sizes[i] // 1000 * 12_000 - 3_600_000) for i, st in enumerate(starts)]
        # plants ----------------------------------------------------------------
        blob = self.pool.lower_blob()
        used: set[str] = set()
        plan: list[list[tuple[str, Any]]] = [[] for _ in range(n)]
        n_needles = max(24, min(80, n // 2))
        for k in range(n_needles):
            word = make_needle(rng, blob, used)
            kind = NEEDLE_KINDS[k % len(NEEDLE_KINDS)]
            self.needles[word] = {"word": word, "kind": kind, "placements": []}
            copies = 1 if k % 5 else 2  # every fifth needle sits in two sessions (often other projects)
            for _ in range(copies):
                s = rng.randrange(n)
                if kind == "custom" and versions[s] == 1:
                    kind_here = "user"
                elif kind == "branch_summary" and versions[s] == 1:
                    kind_here = "compaction"
                else:
                    kind_here = kind
                plan[s].append((kind_here, word))
        # two needles in one entry (multi-term query with match=all)
        pair = [make_needle(rng, blob, used) for _ in range(2)]
        s = rng.randrange(n)
        for w in pair:
            self.needles[w] = {"word": w, "kind": "user", "placements": [], "pair": pair}
        plan[s].append(("user", tuple(pair)))
        n_secrets = max(13, min(40, n // 3))
        for k in range(n_secrets):
            skind = SECRET_KINDS[k % len(SECRET_KINDS)]
            text, value = make_secret(rng, skind)
            where = ["tool_result", "bash", "user", "tool_call", "assistant"][k % 5]
            s = rng.randrange(n)
            item = {"_secret": True, "secret_kind": skind, "text": text, "value": value, "probes": secret_probes(value)}
            self.secrets.append(item)
            plan[s].append((where, item))
        # a file with a second header line
        quirk_at = rng.randrange(n)
        # sessions ----------------------------------------------------------------
        kinds_total: dict[str, int] = {}
        types_total: dict[str, int] = {}
        files: list[dict[str, Any]] = []
        indexable = 0
        total_bytes = 0
        for i in range(n):
            if i == quirk_at:
                self.second_header_next = True
            sess = Session(self, i, cwds[i], starts[i], sizes[i], versions[i])
            # each plant goes at a random point of its session
            sess.pending_plants = [(want, item, int(rng.random() * 0.9 * sizes[i])) for want, item in plan[i]]
            sess.build()
            self.close(sess.rel)
            files.append(
                {
                    "journal": sess.rel,
                    "session_id": sess.session_id,
                    "cwd": sess.cwd,
                    "version": sess.version,
                    "bytes": sess.size,
                    "lines": sess.lines,
                    "start": iso(starts[i]),
                    "end": iso(sess.ms),
                    "entries": sess.kinds,
                }
            )
            for name, v in sess.kinds.items():
                kinds_total[name] = kinds_total.get(name, 0) + v
            for name, v in sess.types.items():
                types_total[name] = types_total.get(name, 0) + v
            indexable += sess.indexable
            total_bytes += sess.size
        cwd_set = {f["cwd"] for f in files}
        roots = {c: project_root(c, cwd_set) for c in sorted(cwd_set)}
        for rec in self.needles.values():
            for p in rec["placements"]:
                p["project"] = roots[p["cwd"]]
        secrets = []
        for secret in self.secrets:
            placed = secret.get("placement") or {}
            secrets.append(
                {
                    "secret_kind": secret["secret_kind"],
                    "value": secret["value"],
                    "probes": secret["probes"],
                    **{
                        k: placed.get(k)
                        for k in ("session_id", "journal", "cwd", "entry_id", "kind", "field", "line", "version")
                    },
                }
            )
        seconds = time.perf_counter() - t0
        manifest = {
            "generator": "benchmarks/corpus.py",
            "corpus_version": CORPUS_VERSION,
            "seed": self.seed,
            "size_requested": self.size,
            "now": iso(self.now_ms),
            "bytes": total_bytes,
            "files_count": len(files),
            "seconds": round(seconds, 2),
            "text_pool": {
                "digest": self.pool.digest,
                "code_bytes": self.pool.code_bytes,
                "prose_bytes": self.pool.prose_bytes,
                "code_docs": len(self.pool.code),
                "prose_docs": len(self.pool.prose),
                "seconds": round(self.pool.seconds, 2),
            },
            "entries_by_kind": kinds_total,
            "lines_by_type": types_total,
            "indexable_chars_estimate": indexable,
            "images": self.images,
            "projects": roots,
            "quirks": self.quirks,
            "needles": list(self.needles.values()),
            "secrets": secrets,
            "files": files,
        }
        (self.outdir / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
        return manifest


def verify(outdir: str | os.PathLike) -> list[str]:
    """Check the manifest against the files: every needle and secret is on the line it names."""
    out = Path(outdir)
    m = orjson.loads((out / "manifest.json").read_bytes())
    problems: list[str] = []
    cache: dict[str, list[bytes]] = {}

    def line(journal: str, n: int) -> bytes:
        if journal not in cache:
            cache[journal] = (out / journal).read_bytes().split(b"\n")
        return cache[journal][n - 1]

    for rec in m["needles"]:
        for p in rec["placements"]:
            raw = line(p["journal"], p["line"])
            eid = orjson.loads(raw).get("id") or f"L{p['line']}"
            if rec["word"].encode() not in raw or eid != p["entry_id"]:
                problems.append(f"needle {rec['word']} not at {p['journal']}:{p['line']}")
    for s in m["secrets"]:
        if orjson.dumps(s["value"])[1:-1] not in line(s["journal"], s["line"]):
            problems.append(f"secret {s['secret_kind']} not at {s['journal']}:{s['line']}")
    for f in m["files"]:
        if (out / f["journal"]).stat().st_size != f["bytes"]:
            problems.append(f"size of {f['journal']} differs from the manifest")
    return problems


def today_ms() -> int:
    d = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return int(d.timestamp() * 1000)


def generate(
    outdir: str | os.PathLike, size_bytes: int | str, seed: int = 1, now: str | None = None, clean: bool = True
) -> dict:
    """Write a corpus of about `size_bytes` of journals to `outdir`; returns the manifest."""
    out = Path(outdir)
    if clean and out.exists():
        for child in out.iterdir():
            if child.is_dir() and child.name.startswith("--"):
                shutil.rmtree(child)
            elif child.name == "manifest.json":
                child.unlink()
    out.mkdir(parents=True, exist_ok=True)
    now_ms = (
        today_ms()
        if now is None
        else int(dt.datetime.fromisoformat(now.replace("Z", "+00:00")).replace(tzinfo=dt.UTC).timestamp() * 1000)
    )
    return Generator(out, parse_size(size_bytes), seed, now_ms).generate()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--size", default="500MB", help="total journal bytes, e.g. 50MB, 500MB, 1GB (default 500MB)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--now", default=None, help="end of the 6-month time span (ISO date; default: today, UTC)")
    ap.add_argument("--verify", action="store_true", help="only check an existing corpus against its manifest")
    args = ap.parse_args(argv)
    if args.verify:
        problems = verify(args.outdir)
        print("\n".join(problems) or "ok")
        return 1 if problems else 0
    m = generate(args.outdir, args.size, args.seed, args.now)
    pool = m["text_pool"]
    print(
        f"{m['files_count']} journals, {m['bytes'] / MB:.1f} MB in {m['seconds']:.1f} s "
        f"({m['bytes'] / MB / max(m['seconds'], 1e-9):.1f} MB/s); "
        f"text pool {pool['code_docs'] + pool['prose_docs']} docs in {pool['seconds']:.1f} s; "
        f"entries {m['entries_by_kind']}; needles {len(m['needles'])}, secrets {len(m['secrets'])}; "
        f"indexable ~{m['indexable_chars_estimate'] / max(m['bytes'], 1):.0%} of bytes"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
