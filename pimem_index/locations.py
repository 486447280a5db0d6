"""Where Pi keeps its journals and where pimem keeps its index: one rule for every command and the plugin.

The agent folder and the index path (`resolve`), the journal folders: the agent's own, those recorded in
`<agent folder>/pi-memory/folders.json` (`record_folders`, `forget_folder`: every later command and server uses
them), and those given for one run (`--sessions-dir`, `PIMEM_SESSIONS_DIRS`); which journals there are
(`discover`, `find_journals`: links resolving outside the journal folders are never followed), and which journal
path a caller may name (`checked_journal`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pimem_index.errors import Arg, UserError

FOLDERS_FILE = "folders.json"  # in <agent folder>/pi-memory/: the recorded journal folders
FOLDERS_EXAMPLE = "pimem folders add ~/old-pi/sessions"


def agent_dir() -> Path:
    """`$PI_CODING_AGENT_DIR` (with ~ expanded), else ~/.pi/agent, as Pi itself decides."""
    value = os.environ.get("PI_CODING_AGENT_DIR")
    if value:
        return Path(os.path.expanduser(value))
    return Path.home() / ".pi" / "agent"


def make_folder(folder: Path, mode: int) -> None:
    """Create the folder and its missing parents with exactly `mode`, whatever the umask; a folder another
    process makes at the same moment, and every folder that already existed, keep their modes."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        try:
            os.mkdir(made, mode)
        except FileExistsError:
            continue
        os.chmod(made, mode)


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
class Folder:
    """One journal folder and where it comes from: `default` (the agent's sessions folder), `recorded`
    (folders.json), `given` (--sessions-dir or the plugin's sessions_dirs, this run only) or `environment`
    (PIMEM_SESSIONS_DIRS)."""

    path: Path
    source: str


@dataclass(frozen=True)
class Locations:
    """The agent folder, the journal folders and the index path, resolved once."""

    agent: Path
    sessions_dirs: tuple[Path, ...]
    db_path: Path
    extra_dirs: tuple[Path, ...] = field(default=())  # every journal folder besides the default one
    recorded_dirs: tuple[Path, ...] = field(default=())
    given_dirs: tuple[Path, ...] = field(default=())
    env_dirs: tuple[Path, ...] = field(default=())
    # Folders' real paths as `contains` resolved them: {folder: (when, real path or None)}.
    _real_folders: dict[str, tuple[float, str | None]] = field(
        default_factory=dict, init=False, compare=False, hash=False, repr=False
    )

    @property
    def memory_dir(self) -> Path:
        """Folder for what pimem keeps besides the index (secret, token, forgotten list)."""
        return self.agent / "pi-memory"

    @property
    def default_dir(self) -> Path:
        """The folder Pi writes its journals to."""
        return self.agent / "sessions"

    def folders(self) -> list[Folder]:
        """Every journal folder once, with where it comes from (the first source that names it)."""
        sources = (
            ("default", (self.default_dir,)),
            ("recorded", self.recorded_dirs),
            ("given", self.given_dirs),
            ("environment", self.env_dirs),
        )
        seen: dict[Path, str] = {}
        for source, dirs in sources:
            for d in dirs:
                seen.setdefault(d, source)
        return [Folder(path, source) for path, source in seen.items()]

    def ensure_memory_dir(self) -> Path:
        """Create the pi-memory folder with mode 0700 (missing parents too); an existing one must be this
        user's and never writable by others (refuse_planted), then it is made 0700."""
        path = self.memory_dir
        make_folder(path, 0o700)
        refuse_planted(path, "folder")
        os.chmod(path, 0o700)
        return path

    def contains(self, journal: Path | str) -> bool:
        """True when the path lies inside one of the journal folders (after resolving links).

        Every reread asks, so the real paths of folders (the journal's own, and each journal folder) are
        reused for at most REAL_FOLDER_SECONDS; the journal itself is looked at on every call (one lstat:
        a link is resolved anew), so a journal replaced by a link out of the folders is never read."""
        real = self._real_journal(os.fspath(journal))
        if real is None:
            return False
        for root in self.sessions_dirs:
            folder = self._real_folder(str(root))
            if folder is not None and (real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)):
                return True
        return False

    def _real_journal(self, path: str) -> str | None:
        """The path with its links resolved: its folder's real path (kept a while) and its own name, unless
        the name is a link; None when it cannot be resolved."""
        try:
            folder, name = os.path.split(path)
            if not os.path.isabs(path) or name in ("", ".", ".."):
                return os.path.realpath(path)
            try:
                if stat.S_ISLNK(os.lstat(path).st_mode):
                    return os.path.realpath(path)
            except FileNotFoundError:
                pass  # where it would be, as realpath says
            real_folder = self._real_folder(folder)
            return None if real_folder is None else os.path.join(real_folder, name)
        except (OSError, ValueError):
            return None

    def _real_folder(self, folder: str) -> str | None:
        """The folder's path with its links resolved, kept REAL_FOLDER_SECONDS; None when unresolvable."""
        now = time.monotonic()
        known = self._real_folders.get(folder)
        if known is not None and now - known[0] < REAL_FOLDER_SECONDS:
            return known[1]
        try:
            real: str | None = os.path.realpath(folder)
        except (OSError, ValueError):
            real = None
        if len(self._real_folders) >= REAL_FOLDERS_KEPT:
            self._real_folders.clear()
        self._real_folders[folder] = (now, real)
        return real


#: How long a folder's resolved path is reused: a folder moved or relinked is seen within this.
REAL_FOLDER_SECONDS = 2.0
#: Folders whose real paths are kept at most (journal folders and the project folders of their journals).
REAL_FOLDERS_KEPT = 4096


def folder_path(value: str | Path) -> Path:
    """A folder as pimem keeps it: ~ expanded, absolute (from the current folder), normalised."""
    return Path(os.path.abspath(os.path.expanduser(str(value))))


def resolve(db: str | None = None, sessions_dirs: tuple[str, ...] | list[str] = ()) -> Locations:
    """Apply the contract: --db / PIMEM_DB, the agent folder, its recorded journal folders (folders.json),
    and for this run --sessions-dir (`sessions_dirs`) and PIMEM_SESSIONS_DIRS."""
    agent = agent_dir()
    given = tuple(folder_path(d) for d in sessions_dirs)
    env = tuple(folder_path(d) for d in os.environ.get("PIMEM_SESSIONS_DIRS", "").split(os.pathsep) if d)
    db_value = db or os.environ.get("PIMEM_DB")
    db_path = Path(os.path.expanduser(db_value)) if db_value else agent / "pi-memory" / "history.sqlite"
    return _located(agent, db_path, read_folders(agent), given, env)


def _located(agent: Path, db_path: Path, recorded: tuple[Path, ...], given, env) -> Locations:
    """Locations with the journal folders in order (default, recorded, given, environment), each once."""
    default = agent / "sessions"
    extra = tuple(d for d in dict.fromkeys((*recorded, *given, *env)) if d != default)
    return Locations(
        agent=agent,
        sessions_dirs=(default, *extra),
        db_path=db_path,
        extra_dirs=extra,
        recorded_dirs=recorded,
        given_dirs=given,
        env_dirs=env,
    )


def refreshed(locations: Locations) -> Locations:
    """These locations with the folders recorded now (a long-running indexer or server picks up
    `pimem folders add` and `remove` this way); the same object when folders.json did not change, or
    cannot be read (the last good folders stay)."""
    try:
        recorded = read_folders(locations.agent)
    except UserError:
        return locations
    if recorded == locations.recorded_dirs:
        return locations
    return _located(locations.agent, locations.db_path, recorded, locations.given_dirs, locations.env_dirs)


def folders_path(agent: Path) -> Path:
    return agent / "pi-memory" / FOLDERS_FILE


_read_cache: dict[Path, tuple[tuple[int, int, int], tuple[Path, ...]]] = {}


def read_folders(agent: Path) -> tuple[Path, ...]:
    """The recorded journal folders (none when folders.json is absent); a one-line error when it is not
    a list of folders. Read again only when the file changed (one stat otherwise)."""
    path = folders_path(agent)
    try:
        st = path.stat()
    except FileNotFoundError:
        return ()
    except OSError as e:
        raise UserError(f"cannot read the recorded journal folders {path}: {e.strerror}") from None
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    cached = _read_cache.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    problem = "it is not JSON"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        folders = data.get("folders") if isinstance(data, dict) else None
        if not isinstance(folders, list) or not all(isinstance(d, str) and os.path.isabs(d) for d in folders):
            problem = 'expected {"folders": ["/absolute/path", ...]}'
            raise ValueError(problem)
    except (OSError, ValueError, UnicodeDecodeError):
        raise UserError(
            f"{path} does not hold the journal folders ({problem}); delete it and record them again",
            FOLDERS_EXAMPLE,
        ) from None
    found = tuple(dict.fromkeys(Path(d) for d in folders))
    _read_cache[path] = (key, found)
    return found


def record_folders(agent: Path, dirs: Iterable[str | Path]) -> list[Path]:
    """Record journal folders in folders.json (0600, its folder 0700, written atomically) for every later
    command and server; returns the folders that were not recorded yet (the default folder never is)."""
    wanted = [folder_path(d) for d in dirs]
    wanted = [d for d in dict.fromkeys(wanted) if d != agent / "sessions"]
    if not wanted:
        return []
    with _folders_lock(agent):
        recorded = read_folders(agent)
        added = [d for d in wanted if d not in recorded]
        if added:
            _write_folders(agent, (*recorded, *added))
    return added


def forget_folder(agent: Path, folder: str | Path) -> Path:
    """Take a folder out of folders.json; the folder as it was recorded. A one-line error for the default
    folder and for a folder that is not recorded."""
    path = folder_path(folder)
    default = agent / "sessions"
    if path == folder_path(default):
        raise UserError(
            f"{path} is the agent's own journal folder (where Pi writes); it is always read",
            "pimem folders remove ~/old-pi/sessions",
        )
    with _folders_lock(agent):
        recorded = read_folders(agent)
        if path not in recorded:
            listed = ", ".join(str(d) for d in recorded) or "none"
            raise UserError(
                f"{path} is not a recorded journal folder (recorded: {listed}; see pimem folders list)",
                "pimem folders remove ~/old-pi/sessions",
            )
        _write_folders(agent, tuple(d for d in recorded if d != path))
    return path


@contextlib.contextmanager
def _folders_lock(agent: Path) -> Iterator[None]:
    """One writer of folders.json at a time (read, change, write), across processes."""
    folder = agent / "pi-memory"
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    fd = os.open(folder / f".{FOLDERS_FILE}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write_folders(agent: Path, folders: tuple[Path, ...]) -> None:
    """folders.json replaced atomically, mode 0600 from its first byte."""
    path = folders_path(agent)
    fd, tmp = tempfile.mkstemp(prefix=f".{FOLDERS_FILE}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"folders": [str(d) for d in folders]}, indent=2) + "\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


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
    """The --db and --sessions-dir arguments that give another pimem process these locations: the folders
    given for this run and by PIMEM_SESSIONS_DIRS (a service manager passes no environment); never the
    recorded ones, which it reads itself as they are then (a folder removed since is not read again)."""
    args = ["--db", str(locations.db_path)]
    for folder in locations.extra_dirs:
        if folder not in locations.recorded_dirs:
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
