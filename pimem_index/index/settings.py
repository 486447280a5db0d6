"""How an indexing pass sizes its work: batch, group and transaction sizes, when a pass is a
bulk pass, its parsing processes, and a hook called after each written batch.

The defaults are the tuning measured with benchmarks/run.py; tests pass smaller values (a
journal of 60 entries in batches of 20) and a hook that stops a pass after N batches, instead of
patching the modules. A pass hands its settings to the parsing processes, so they pickle once
`for_parsing` has dropped the hook (it runs in the writer only). This module imports nothing
of the package: reading, parsing and the indexer all take settings from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

StartMethod = Literal["fork", "spawn"]  # how parsing processes start (multiprocessing's names)

# A full batch holds this much text or these entries.
BATCH_TEXT_BYTES = 8 * 1024 * 1024
BATCH_ENTRIES = 5000
# A large journal's first batch is this fraction of a full one, and each next one twice the
# last: the writer starts on it as soon as a little is parsed, and parsing (about twice as
# fast as writing) stays ahead while the batches grow. Smaller journals are one batch, so
# a backfill still writes many of them in one transaction.
FIRST_BATCH_SHARE = 16
RAMP_JOURNAL_BYTES = 2 * BATCH_TEXT_BYTES
# Small journals are written together until this much text is pending: fewer commits.
GROUP_TEXT_BYTES = 8 * 1024 * 1024
# A large journal's batches share write transactions of about this much text.
TRANSACTION_TEXT_BYTES = GROUP_TEXT_BYTES
# A backfill with this much journal ahead of it is a bulk pass (parsing processes, deferred
# merges); one that read this much merges the term index's segments afterwards.
BULK_BYTES = 32 * 1024 * 1024
# A bulk backfill parses in other processes, which send parsed journals in messages of
# about this much text (a larger batch goes alone).
MESSAGE_TEXT_BYTES = 1024 * 1024
# A parsing thread runs up to this much text ahead of the writer.
AHEAD_TEXT_BYTES = 3 * BATCH_TEXT_BYTES


@dataclass(frozen=True)
class IndexSettings:
    """The sizes a pass works in, and `after_batch(batch)`, called once each batch is written: an
    exception raised there stops the pass as Ctrl-C would (what was committed stays)."""

    batch_text_bytes: int = BATCH_TEXT_BYTES
    batch_entries: int = BATCH_ENTRIES
    first_batch_share: int = FIRST_BATCH_SHARE
    ramp_journal_bytes: int = RAMP_JOURNAL_BYTES
    group_text_bytes: int = GROUP_TEXT_BYTES
    transaction_text_bytes: int = TRANSACTION_TEXT_BYTES
    bulk_bytes: int = BULK_BYTES
    message_text_bytes: int = MESSAGE_TEXT_BYTES
    ahead_text_bytes: int = AHEAD_TEXT_BYTES
    processes: int | None = None  # parsing processes of a bulk pass; None: one per core, up to two
    start_method: StartMethod | None = None  # None: fork unless this process has threads
    after_batch: Callable[[Any], None] | None = None

    def for_parsing(self) -> IndexSettings:
        """These settings without the writer's hook: what the parsing side gets (it pickles)."""
        return self if self.after_batch is None else dataclasses.replace(self, after_batch=None)


DEFAULT = IndexSettings()


def or_default(settings: IndexSettings | None) -> IndexSettings:
    """The settings given, else DEFAULT (looked up at each call, so a test can set it for a command)."""
    return DEFAULT if settings is None else settings
