"""The journal collector: preview junk journals, then delete exactly the previewed ones.

Journals are Pi's only copy of a session, so a confirm deletes only files that the last
preview listed and that have not changed since (same size and modification time).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson

from pimem_index import db
from pimem_index.errors import UserError
from pimem_index.index import indexer
from pimem_index.locations import Locations, discover

PREVIEW_FILE = "gc-preview.json"
QUIET_SECONDS = 24 * 3600
PREVIEW_MAX_AGE = 3600
MAX_REPLIES = 2


@dataclass
class Candidate:
    """A journal the collector would delete, and why."""

    path: str
    session_id: str | None
    cwd: str | None
    started: str | None
    size: int
    mtime: float
    entries: int
    reason: str


def temp_roots() -> list[str]:
    """Folders whose sessions are throwaway: `PIMEM_TEMP_DIRS` if set, else the system temp folders."""
    configured = os.environ.get("PIMEM_TEMP_DIRS")
    if configured:
        roots = {os.path.expanduser(d) for d in configured.split(os.pathsep) if d}
    else:
        roots = {
            "/tmp",
            "/var/tmp",
            "/private/tmp",
            "/private/var/folders",
            "/dev/shm",
            os.path.realpath(tempfile.gettempdir()),
        }
    return sorted(r.rstrip("/") or "/" for r in roots)


def _under(path: str | None, roots: list[str]) -> bool:
    if not path:
        return False
    return any(path == r or path.startswith(r + "/") for r in roots)


def junk_reason(cwd: str | None, compactions: int, messages_in: int, replies: int) -> str | None:
    """Why a journal is junk, or None: never compacted and temporary, unaddressed or nearly empty."""
    if compactions:
        return None
    if _under(cwd, temp_roots()):
        return "ran under a temporary folder"
    if messages_in == 0:
        return "received no user, team or extension message"
    if replies <= MAX_REPLIES:
        return f"got {replies} repl{'y' if replies == 1 else 'ies'}"
    return None


def find_junk(
    conn: db.Connection, locations: Locations, current: str | None = None, now: float | None = None
) -> list[Candidate]:
    """Journals that are junk, quiet for a day and not the caller's current journal."""
    now = time.time() if now is None else now
    current_real = os.path.realpath(current) if current else None
    rows = conn.execute(
        "SELECT f.path, f.session_id, f.cwd, f.started, f.entry_count, "
        "SUM(e.kind = 'compaction'), SUM(e.kind IN ('user', 'custom')), SUM(e.kind = 'assistant') "
        "FROM files f LEFT JOIN entries e ON e.file_id = f.id GROUP BY f.id ORDER BY f.started"
    ).fetchall()
    found = []
    for path, sid, cwd, started, count, compactions, messages_in, replies in rows:
        if not locations.contains(Path(path)) or os.path.islink(path):
            continue
        if current_real and os.path.realpath(path) == current_real:
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        if now - st.st_mtime < QUIET_SECONDS:
            continue
        reason = junk_reason(cwd, compactions or 0, messages_in or 0, replies or 0)
        if reason:
            found.append(Candidate(path, sid, cwd, started, st.st_size, st.st_mtime, count, reason))
    return found


def _preview_path(locations: Locations) -> Path:
    return locations.memory_dir / PREVIEW_FILE


def preview(conn: db.Connection, locations: Locations, current: str | None = None) -> dict:
    """Index, list the candidates with totals, and store the list for a later confirm."""
    indexer.index_all(conn, locations, journals=discover(locations))
    candidates = find_junk(conn, locations, current)
    data = {
        "action": "gc-preview",
        "created": time.time(),
        "candidates": [asdict(c) for c in candidates],
        "total_files": len(candidates),
        "total_bytes": sum(c.size for c in candidates),
        "total_entries": sum(c.entries for c in candidates),
    }
    folder = locations.ensure_memory_dir()
    tmp = folder / f".{PREVIEW_FILE}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(orjson.dumps(data))
    os.replace(tmp, _preview_path(locations))
    return data


def confirm(conn: db.Connection, locations: Locations, now: float | None = None) -> dict:
    """Delete the last preview's journals that are unchanged; report what was skipped and why."""
    now = time.time() if now is None else now
    path = _preview_path(locations)
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise UserError("no preview to confirm: run pimem gc first, then pimem gc --confirm") from None
    except orjson.JSONDecodeError:
        raise UserError("the stored preview is unreadable: run pimem gc again, then pimem gc --confirm") from None
    age = now - data.get("created", 0)
    if age > PREVIEW_MAX_AGE:
        raise UserError(
            f"the preview is {age / 60:.0f} minutes old (at most 60): run pimem gc again, then pimem gc --confirm"
        )
    deleted, skipped = [], []
    for c in data["candidates"]:
        p = c["path"]
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            skipped.append({**c, "skipped": "already gone"})
            continue
        if not locations.contains(Path(p)) or os.path.islink(p):
            skipped.append({**c, "skipped": "not a journal in the journal folders"})
            continue
        if st.st_size != c["size"] or st.st_mtime != c["mtime"]:
            skipped.append({**c, "skipped": "changed since the preview"})
            continue
        how = _remove(p)
        indexer.forget_journal(conn, os.path.abspath(p))
        deleted.append({**c, "removed": how})
    path.unlink(missing_ok=True)
    return {
        "action": "gc-confirm",
        "deleted": deleted,
        "skipped": skipped,
        "deleted_bytes": sum(d["size"] for d in deleted),
    }


def _remove(path: str) -> str:
    """Move to the system trash where a `trash` command exists (as Pi does), else delete."""
    trash = shutil.which("trash")
    if trash:
        result = subprocess.run([trash, path], capture_output=True)
        if result.returncode == 0 and not os.path.exists(path):
            return "trash"
    os.remove(path)
    return "deleted"
