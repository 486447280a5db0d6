"""Where Pi keeps its journals and where pimem keeps its index: one rule for every command and the plugin."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def agent_dir() -> Path:
    """`$PI_CODING_AGENT_DIR` (with ~ expanded), else ~/.pi/agent, as Pi itself decides."""
    value = os.environ.get("PI_CODING_AGENT_DIR")
    if value:
        return Path(os.path.expanduser(value))
    return Path.home() / ".pi" / "agent"


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
        """Create the pi-memory folder with mode 0700."""
        path = self.memory_dir
        path.mkdir(parents=True, exist_ok=True)
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
    dirs: list[Path] = [agent / "sessions"]
    for d in extra:
        if d not in dirs:
            dirs.append(d)
    db_value = db or os.environ.get("PIMEM_DB")
    db_path = Path(os.path.expanduser(db_value)) if db_value else agent / "pi-memory" / "history.sqlite"
    return Locations(agent=agent, sessions_dirs=tuple(dirs), db_path=db_path, extra_dirs=tuple(extra))
