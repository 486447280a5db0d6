"""Where Pi keeps its journals and where pimem keeps its index: one rule for every command and the plugin.

The agent folder and the index path (`resolve`), which journals there are (`discover`,
`find_journals`: links resolving outside the journal folders are never followed), and which
journal path a caller may name (`checked_journal`).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pimem_index.errors import Arg, UserError


def agent_dir() -> Path:
    """`$PI_CODING_AGENT_DIR` (with ~ expanded), else ~/.pi/agent, as Pi itself decides."""
    value = os.environ.get("PI_CODING_AGENT_DIR")
    if value:
        return Path(os.path.expanduser(value))
    return Path.home() / ".pi" / "agent"


def refuse_planted(path: Path, what: str) -> None:
    """A one-line error unless `path` is this user's and nobody else may write it (a file: nor is it a link).

    pimem's folder and secret decide who may read every journal: one that another user made, or could
    have written, may hold a secret of theirs.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if what != "folder" and stat.S_ISLNK(st.st_mode):
        raise UserError(f"{path} is a symbolic link; pimem keeps its {what} only in a file of its own: remove it")
    if what == "folder" and stat.S_ISLNK(st.st_mode):
        st = os.stat(path)
    if st.st_uid != os.geteuid():
        raise UserError(
            f"{path} belongs to another user (uid {st.st_uid}), so pimem does not trust its {what}: remove it "
            "or use an agent folder of your own (e.g. PI_CODING_AGENT_DIR=~/.pi/agent)"
        )
    if st.st_mode & 0o022:
        raise UserError(
            f"{path} is writable by others (mode {st.st_mode & 0o777:o}), so its {what} may have been planted: "
            f"check it, remove what you did not make, then make it yours alone (e.g. chmod go-w {path})"
        )


@dataclass(frozen=True)
class Locations:
    """The agent folder, the journal folders and the index path, resolved once."""

    agent: Path
    sessions_dirs: tuple[Path, ...]
    db_path: Path
    extra_dirs: tuple[Path, ...] = field(default=())

    @property
    def memory_dir(self) -> Path:
        """Folder for what pimem keeps besides the index (secret, token, forgotten list)."""
        return self.agent / "pi-memory"

    def ensure_memory_dir(self) -> Path:
        """Create the pi-memory folder with mode 0700 (missing parents too); an existing one must be this
        user's and never writable by others (refuse_planted), then it is made 0700."""
        path = self.memory_dir
        missing = []
        folder = path
        while not folder.exists() and folder != folder.parent:
            missing.append(folder)
            folder = folder.parent
        for made in reversed(missing):
            try:
                os.mkdir(made, 0o700)
                os.chmod(made, 0o700)  # the umask may have taken less
            except FileExistsError:
                pass  # made at the same moment by another process: checked below like any existing folder
        refuse_planted(path, "folder")
        os.chmod(path, 0o700)
        return path

    def contains(self, journal: Path) -> bool:
        """True when the path lies inside one of the journal folders (after resolving links)."""
        try:
            real = journal.resolve()
        except OSError:
            return False
        for root in self.sessions_dirs:
            try:
                real.relative_to(root.resolve())
                return True
            except (ValueError, OSError):
                continue
        return False


def resolve(db: str | None = None, sessions_dirs: tuple[str, ...] | list[str] = ()) -> Locations:
    """Apply the contract: --db / PIMEM_DB, --sessions-dir / PIMEM_SESSIONS_DIRS, the agent folder."""
    agent = agent_dir()
    extra: list[Path] = [Path(os.path.expanduser(d)) for d in sessions_dirs]
    env_dirs = os.environ.get("PIMEM_SESSIONS_DIRS", "")
    extra += [Path(os.path.expanduser(d)) for d in env_dirs.split(os.pathsep) if d]
    extra = list(dict.fromkeys(extra))  # a folder given both ways counts once
    dirs: list[Path] = [agent / "sessions"]
    for d in extra:
        if d not in dirs:
            dirs.append(d)
    db_value = db or os.environ.get("PIMEM_DB")
    db_path = Path(os.path.expanduser(db_value)) if db_value else agent / "pi-memory" / "history.sqlite"
    return Locations(agent=agent, sessions_dirs=tuple(dirs), db_path=db_path, extra_dirs=tuple(extra))


def checked_journal(locations: Locations, path: str | None) -> str | None:
    """The absolute path of a caller's journal, or a UserError; never opens the file.

    It must be an absolute path ending in .jsonl that lies inside the journal folders
    (after resolving links) and is a regular file.
    """
    if path is None or path == "":
        return None
    example = Arg("journal", "/home/u/.pi/agent/sessions/--home-u-app--/2026-03-15T22-40-18-123Z_0b6e.jsonl")
    if "\0" in path:
        raise UserError("journal must be a path without NUL characters", example)
    if not os.path.isabs(path):
        raise UserError("journal must be an absolute path", example)
    if not path.endswith(".jsonl"):
        raise UserError("journal must be a .jsonl session journal", example)
    candidate = Path(path)
    if not locations.contains(candidate):
        raise UserError(
            f"journal {path} is not inside the journal folders ({', '.join(str(d) for d in locations.sessions_dirs)})",
            example,
        )
    try:
        real = candidate.resolve()
        usable = real.name.endswith(".jsonl") and real.is_file()
    except (OSError, ValueError) as e:  # e.g. a name too long for the file system
        raise UserError(f"journal {path} cannot be used ({getattr(e, 'strerror', None) or e})", example) from None
    if not usable:
        raise UserError(f"journal {path} is not a journal file", example)
    return os.path.abspath(path)


def discover(locations: Locations) -> list[Path]:
    """Every journal in the journal folders, newest (by modification time) first."""
    return find_journals(locations)[0]


def find_journals(locations: Locations) -> tuple[list[Path], list[str]]:
    """Every journal in the journal folders, newest first, each once however many links name
    it; and the links there that resolve outside the journal folders, which are never opened
    (a link to /etc/passwd named passwd.jsonl, a linked folder elsewhere)."""
    roots = tuple(os.path.realpath(root) for root in locations.sessions_dirs)
    found: dict[tuple[int, int], tuple[str, float, bool]] = {}
    outside: set[str] = set()
    for root in locations.sessions_dirs:
        for path, st, linked in _walk_jsonl(str(root), roots, outside):
            kept = found.get((st.st_dev, st.st_ino))
            if kept is None or (kept[2] and not linked):  # a name without links wins
                found[(st.st_dev, st.st_ino)] = (path, st.st_mtime, linked)
    journals = sorted(found.values(), key=lambda v: v[1], reverse=True)
    return [Path(path) for path, _mtime, _linked in journals], sorted(outside)


def _inside(real: str, roots: tuple[str, ...]) -> bool:
    """Whether a resolved path lies in one of the (resolved) journal folders."""
    return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _walk_jsonl(root: str, roots: tuple[str, ...], outside: set[str]) -> Iterable[tuple[str, os.stat_result, bool]]:
    """(path, stat, reached through a link) of each .jsonl under root; a link resolving outside
    `roots` goes to `outside` unfollowed."""
    stack = [(root, False)]
    seen: set[tuple[int, int]] = set()
    while stack:
        folder, folder_linked = stack.pop()
        try:
            st = os.stat(folder)
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            seen.add(key)
            with os.scandir(folder) as it:
                for de in it:
                    try:
                        linked = de.is_symlink()
                        if linked and not _inside(os.path.realpath(de.path), roots):
                            if de.name.endswith(".jsonl") or de.is_dir():
                                outside.add(os.path.abspath(de.path))
                            continue
                        if de.is_dir():
                            stack.append((de.path, folder_linked or linked))
                        elif de.name.endswith(".jsonl") and de.is_file():
                            yield os.path.abspath(de.path), de.stat(), folder_linked or linked
                    except OSError:
                        continue
        except OSError:
            continue


def location_args(locations: Locations) -> list[str]:
    """The --db and --sessions-dir arguments that give another pimem process these locations."""
    args = ["--db", str(locations.db_path)]
    for folder in locations.extra_dirs:
        args += ["--sessions-dir", str(folder)]
    return args


def watch_command(locations: Locations, interval: float) -> list[str]:
    """The command line of a `pimem index --watch` process on these locations (what pimem serve
    supervises), run with this interpreter."""
    return [
        sys.executable,
        "-m",
        "pimem_index",
        "index",
        "--watch",
        "--interval",
        str(interval),
        *location_args(locations),
    ]
