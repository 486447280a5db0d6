"""The real-Pi corpus copied and indexed, for tests of what the pages and queries make of it.

world = indexed_corpus(tmp_path, monkeypatch)
world.session("edit_heavy")   # the session id of the journal with that role
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pimem_index import db, store
from pimem_index.index import indexer
from pimem_index.locations import Locations, resolve
from support.real_pi import RealPiCorpus, copy_corpus


@dataclass
class IndexedCorpus:
    corpus: RealPiCorpus
    locations: Locations
    conn: db.Connection

    def session(self, role: str) -> str:
        """The session id in the header of the journal with `role`."""
        return session_of(self.corpus.journal(role))

    def sessions(self) -> list[str]:
        return [session_of(path) for path in self.corpus.all_journals()]


def session_of(journal: Path) -> str:
    with journal.open("rb") as f:
        return json.loads(f.readline())["id"]


def use_corpus(tmp_path: Path, monkeypatch) -> RealPiCorpus:
    """Copy the corpus under `tmp_path` and point PI_CODING_AGENT_DIR (and HOME) at it; nothing indexed yet."""
    copied = _pointed_at(copy_corpus(tmp_path / "corpus"), monkeypatch)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return copied


def indexed(corpus: RealPiCorpus) -> tuple[Locations, db.Connection]:
    """The corpus's locations and an open connection to its index, every journal indexed."""
    locations = resolve()
    conn = store.open_index(locations.db_path)
    indexer.index_all(conn, locations)
    return locations, conn


def session_id(corpus: RealPiCorpus, role: str) -> str:
    """The session id of the journal with `role`."""
    return session_of(corpus.journal(role))


def indexed_corpus(tmp_path: Path, monkeypatch) -> IndexedCorpus:
    """Copy the corpus under tmp_path, make its agent folder the one every location resolves to, index it."""
    corpus = _pointed_at(copy_corpus(tmp_path / "corpus"), monkeypatch)
    return IndexedCorpus(corpus, *indexed(corpus))


def _pointed_at(corpus: RealPiCorpus, monkeypatch) -> RealPiCorpus:
    """Make the corpus's agent folder the one every location resolves to (no PIMEM_DB, no extra folders)."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(corpus.agent))
    monkeypatch.delenv("PIMEM_DB", raising=False)
    monkeypatch.delenv("PIMEM_SESSIONS_DIRS", raising=False)
    return corpus
