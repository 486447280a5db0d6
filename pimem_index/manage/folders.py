"""`pimem folders list|add|remove`: the journal folders every command and server reads (locations.py keeps them).

Adding a folder records it; removing one takes it out of the record and its journals' rows out of the index (a
journal still inside another folder stays), so no search finds what no page can read any more.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import cast

from pimem_index import store
from pimem_index.errors import UserError
from pimem_index.index import indexer
from pimem_index.locations import FOLDERS_EXAMPLE, Locations, forget_folder, record_folders, refreshed
from pimem_index.replies import FolderSource, JournalFolder


def listing(locations: Locations) -> list[JournalFolder]:
    """Each journal folder with where it comes from and whether it exists (the `folders` reply key)."""
    return [
        {"path": str(folder.path), "source": cast(FolderSource, folder.source), "exists": folder.path.is_dir()}
        for folder in locations.folders()
    ]


def add(locations: Locations, dirs: tuple[str, ...]) -> list[Path]:
    """Record existing folders for every later command and server; the ones newly recorded."""
    for d in dirs:
        path = Path(os.path.abspath(os.path.expanduser(d)))
        if not path.is_dir():
            what = "is not a folder" if path.exists() else "does not exist"
            raise UserError(f"{path} {what}: give a folder of Pi journals", FOLDERS_EXAMPLE)
    return record_folders(locations.agent, dirs)


def remove(locations: Locations, folder: str) -> tuple[Path, int]:
    """Take a recorded folder out (never the default one) and its journals out of the index; the folder
    as recorded and how many journals left the index."""
    path = forget_folder(locations.agent, folder)
    if not locations.db_path.exists():
        return path, 0
    now = refreshed(locations)
    conn = store.open_located(now, create=False)
    try:
        prefix = os.path.join(str(path), "")
        dropped = 0
        for (journal,) in conn.execute("SELECT path FROM files").fetchall():
            if journal.startswith(prefix) and not now.contains(Path(journal)):
                dropped += indexer.forget_journal(conn, journal)
        return path, dropped
    finally:
        conn.close()
