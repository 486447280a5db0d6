"""The committed corpus of journals written by the real Pi (tests/fixtures/real_pi), for tests.

    corpus = copy_corpus(tmp_path)
    corpus.sessions            # tmp_path/agent/sessions, Pi's layout
    corpus.journal("fork_child")

The journals hold absolute paths (cwd, parentSession, paths in tool arguments and
outputs) under the root the generator ran in; ``copy_corpus`` moves that root to the
destination in every line, and re-encodes the per-cwd folder names the way Pi does (in the
layout and inside `parentSession` paths, where the old root also appears encoded).
Regenerate the corpus with ``cd tests && python -m support.real_pi_corpus --out fixtures/real_pi``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "real_pi"


def encode_cwd(cwd: str) -> str:
    """Pi's folder name for a cwd under sessions/ (lossy: take the real cwd from the header)."""
    return "--" + cwd.lstrip("/\\").replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


@dataclass
class RealPiCorpus:
    root: Path  # what the generator's root became
    agent: Path  # the agent folder (PI_CODING_AGENT_DIR)
    sessions: Path  # agent/sessions
    projects: dict[str, Path]  # "alpha", "beta" -> the project cwd (created, empty)
    journals: dict[str, Path]  # role -> journal; several roles may name one journal
    covers: dict[Path, list[str]] = field(default_factory=dict)  # journal -> what it covers
    manifest: dict = field(default_factory=dict)  # corpus.json as committed

    def journal(self, role: str) -> Path:
        try:
            return self.journals[role]
        except KeyError:
            raise KeyError(f"no journal with role {role!r}; roles: {sorted(self.journals)}") from None

    def all_journals(self) -> list[Path]:
        return sorted(set(self.journals.values()))


def load_manifest(corpus_dir: Path = CORPUS_DIR) -> dict:
    return json.loads((corpus_dir / "corpus.json").read_text())


def _escaped(s: str) -> str:
    """`s` as it appears inside a JSON string written by JSON.stringify."""
    return json.dumps(s, ensure_ascii=False)[1:-1]


def rewrite_line(line: str, moves: list[tuple[str, str]]) -> str:
    """One journal line with each (old, new) string replaced; stays valid JSON (checked)."""
    out = line
    for old, new in moves:
        out = out.replace(_escaped(old), _escaped(new))
    if out != line and line.strip():
        json.loads(out)  # a rewrite must never break a line
    return out


def copy_corpus(dest: Path, corpus_dir: Path = CORPUS_DIR) -> RealPiCorpus:
    """Copy the corpus into `dest` (becoming the generator's root) and return what is where."""
    manifest = load_manifest(corpus_dir)
    old_root = manifest["root"].rstrip("/")
    dest = Path(dest).resolve()
    new_root = str(dest)

    def moved(path: str) -> Path:
        if path != old_root and not path.startswith(old_root + "/"):
            raise ValueError(f"{path} is not under the corpus root {old_root}")
        return Path(new_root + path[len(old_root) :])

    agent = moved(manifest["agent_dir"])
    projects = {name: moved(cwd) for name, cwd in manifest["projects"].items()}
    for cwd in projects.values():
        cwd.mkdir(parents=True, exist_ok=True)
    # the root, and the per-cwd folder names (in parentSession paths), which encode it
    moves = [
        (f"/{encode_cwd(old)}/", f"/{encode_cwd(str(projects[name]))}/") for name, old in manifest["projects"].items()
    ]
    moves.append((old_root, new_root))
    journals: dict[str, Path] = {}
    covers: dict[Path, list[str]] = {}
    for entry in manifest["journals"]:
        src = corpus_dir / entry["file"]
        target = agent / "sessions" / encode_cwd(str(projects[entry["project"]])) / src.name
        target.parent.mkdir(parents=True, exist_ok=True)
        # keep the line structure byte for byte, except for the root; split on "\n" only
        # (str.splitlines would also split on U+2028, which JSON.stringify leaves raw in strings)
        lines = src.read_text(encoding="utf-8").split("\n")
        out = "\n".join(rewrite_line(line, moves) for line in lines)
        target.write_text(out, encoding="utf-8", newline="")
        for role in entry["roles"]:
            if role in journals:
                raise ValueError(f"role {role!r} names two journals in corpus.json")
            journals[role] = target
        covers[target] = list(entry.get("covers", []))
    return RealPiCorpus(
        root=dest,
        agent=agent,
        sessions=agent / "sessions",
        projects=projects,
        journals=journals,
        covers=covers,
        manifest=manifest,
    )
