"""The backfill's stream: named messages (`stream.StreamItem`, `stream.ItemKind`), from a process as from a thread."""

from __future__ import annotations

from pathlib import Path

from pimem_index.index import parsing, workers
from pimem_index.index.forgotten import Forgotten
from pimem_index.index.stream import ItemKind, StreamItem


def test_a_pass_streams_named_messages_per_journal_whether_parsed_here_or_in_a_process(new_journal, tmp_path):
    j = new_journal()
    j.user("deploy notes")
    j.assistant("on it")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    paths = [Path(j.path), empty]
    here = list(parsing.produce(paths, {}, Forgotten()))
    apart = list(
        workers.in_processes(parsing.produce, paths, ({}, Forgotten()), processes=1, message_bytes=1, ahead_bytes=1)
    )
    for items in (here, apart):
        assert all(type(item) is StreamItem and type(item.kind) is ItemKind for item in items)
        assert [(item.kind, item.path) for item in items] == [
            (ItemKind.WORK, paths[0]),
            (ItemKind.BATCH, paths[0]),
            (ItemKind.END, paths[0]),
            (ItemKind.WORK, empty),
            (ItemKind.END, empty),
        ]
        assert isinstance(items[0].payload, parsing.Work) and isinstance(items[1].payload, parsing.Batch)
        assert not [item for item in items if item.kind in (ItemKind.READY, ItemKind.DONE, ItemKind.ERROR)]
        assert [item.payload for item in items if item.kind == ItemKind.END] == [None, None]
    assert [item.payload.rows for item in apart if item.kind == ItemKind.BATCH] == [
        item.payload.rows for item in here if item.kind == ItemKind.BATCH
    ]
