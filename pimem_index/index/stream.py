"""The messages of a backfill's stream, from the parsing side (`parsing.produce`, `workers`) to the writer.

Each is a `StreamItem`: its kind, the journal it is about and what it carries. A journal's items are
its `WORK` (a `parsing.Work`) then its `BATCH`es, ending with `END`; or only `SKIP` when it has nothing
to index. A parsing process also says `READY` first and `DONE` last, and hands an exception over as
`ERROR`. Everything here pickles: the items cross from parsing processes to the writer.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple


class ItemKind(StrEnum):
    """What a stream item says (a str: it compares equal to its value)."""

    SKIP = "skip"  # the journal has nothing to index
    WORK = "work"  # the journal's pending work (payload: parsing.Work), its batches follow
    BATCH = "batch"  # parsed, redacted rows (payload: parsing.Batch)
    END = "end"  # the journal's last item after its work
    READY = "ready"  # a parsing process started (its first message)
    ERROR = "error"  # producing failed (payload: the exception, raised by the writer)
    DONE = "done"  # a parsing process produced everything


# The kinds that end a journal's items.
ITEM_ENDS = (ItemKind.SKIP, ItemKind.END)


class StreamItem(NamedTuple):
    """One message of the stream: its kind, its journal (None for a process's own messages) and payload."""

    kind: ItemKind
    path: Path | None = None
    payload: Any = None
