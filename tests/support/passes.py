"""Indexing passes as the tests run them: settings that make every backfill a bulk pass or cut a
journal into small batches, and hooks (IndexSettings.after_batch) that watch a pass or stop it."""

from __future__ import annotations

from pimem_index.index import settings as pass_settings
from pimem_index.index.settings import IndexSettings


def bulk_settings(processes: int = 2, **more) -> IndexSettings:
    """Every backfill counts as a bulk pass, so it parses in `processes` parsing processes."""
    return IndexSettings(bulk_bytes=1, processes=processes, **more)


def threaded_or_bulk(bulk: bool, **more) -> IndexSettings:
    """A bulk pass in two parsing processes, or a pass parsing in a thread beside the writer."""
    return bulk_settings(**more) if bulk else IndexSettings(**more)


def use_by_default(monkeypatch, settings: IndexSettings) -> None:
    """Make `settings` what every pass of this test runs with, `pimem` commands included."""
    monkeypatch.setattr(pass_settings, "DEFAULT", settings)


def small_batches(entries: int, **more) -> IndexSettings:
    """Batches of `entries` entries from a journal's first one, each batch committed on its own."""
    sizes = {"batch_entries": entries, "first_batch_share": 1, "group_text_bytes": 1, "transaction_text_bytes": 1}
    return IndexSettings(**{**sizes, **more})


class Watch:
    """A hook recording each batch a pass writes: its entries (`journals`: one list per journal,
    in the order written), its text bytes, and whether it was parsed in a parsing process (True)
    or in a thread beside the writer (False)."""

    def __init__(self) -> None:
        self.journals: list[list[int]] = []
        self.text_bytes: list[int] = []
        self.parsed_apart: list[bool] = []
        self.journal_ended = True

    def __call__(self, batch) -> None:
        if self.journal_ended:
            self.journals.append([])
        self.journals[-1].append(len(batch.rows))
        self.journal_ended = batch.complete
        self.text_bytes.append(batch.text_bytes)
        self.parsed_apart.append(batch.parsed_apart)


class StopAfter:
    """A hook that stops a pass as Ctrl-C would once it has written `batches` batches."""

    def __init__(self, batches: int) -> None:
        self.batches = batches
        self.written = 0

    def __call__(self, batch) -> None:
        self.written += 1
        if self.written >= self.batches:
            raise KeyboardInterrupt
