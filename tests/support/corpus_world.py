"""The real-Pi corpus copied and made the agent folder every command and the plugin use, and indexed."""

from __future__ import annotations

from pathlib import Path

from pimem_index import store
from pimem_index.index import indexer
from pimem_index.locations import Locations, resolve
from support.real_pi import RealPiCorpus, copy_corpus


def use_corpus(tmp_path: Path, monkeypatch) -> RealPiCorpus:
    """Copy the corpus under `tmp_path` and point PI_CODING_AGENT_DIR (and HOME) at it; nothing indexed yet."""
    copied = copy_corpus(tmp_path / "corpus")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(copied.agent))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PIMEM_DB", raising=False)
    monkeypatch.delenv("PIMEM_SESSIONS_DIRS", raising=False)
    return copied


def indexed(corpus: RealPiCorpus) -> tuple[Locations, object]:
    """The corpus's locations and an open connection to its index, every journal indexed."""
    locations = resolve()
    conn = store.open_index(locations.db_path)
    indexer.index_all(conn, locations)
    return locations, conn


def session_id(corpus: RealPiCorpus, role: str) -> str:
    """The session id of the journal with `role` (its file name ends with the id)."""
    return corpus.journal(role).stem.split("_", 1)[1]
