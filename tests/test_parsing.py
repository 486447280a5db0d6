"""Parsing beside the writer: items come back in path order, whichever process parsed them."""

from __future__ import annotations

import multiprocessing
import os
import threading
import types
from pathlib import Path

import pytest

from pimem_index import parsing


def numbered(paths: list[Path], *args) -> object:
    """A producer standing in for the indexer's: three items per journal, the last one "end"."""
    for path in paths:
        if path.name == "broken":
            raise ValueError(f"cannot parse {path.name}")
        yield ("work", path, None)
        yield ("batch", path, None)
        yield ("end", path, None)


def batches_of_text(paths: list[Path], *args) -> object:
    """A producer of journals of ten 100 KB batches each (only their size matters here)."""
    for path in paths:
        yield ("work", path, None)
        for _ in range(10):
            yield ("batch", path, types.SimpleNamespace(text_bytes=100_000))
        yield ("end", path, None)


def journals(tmp_path: Path, sizes: list[int]) -> list[Path]:
    paths = []
    for n, size in enumerate(sizes):
        path = tmp_path / f"j{n}"
        path.write_bytes(b"x" * size)
        paths.append(path)
    return paths


def test_journals_are_shared_out_by_size_so_each_process_keeps_pace(tmp_path):
    paths = journals(tmp_path, [1000, 10, 10, 10, 1000, 10])
    assert parsing._share_out(paths, 2) == [0, 1, 1, 1, 1, 0]
    assert parsing._share_out(paths, 1) == [0] * 6


@pytest.mark.parametrize("processes", [1, 2, 3])
def test_items_come_back_in_path_order_however_many_processes_parse(tmp_path, processes):
    paths = journals(tmp_path, [500, 20, 20, 300, 20, 20, 20])
    items = list(parsing.in_processes(numbered, paths, (), processes=processes,
                                      message_bytes=1, ahead_bytes=1))
    assert [(kind, path) for kind, path, _ in items] == [
        (kind, path) for path in paths for kind in ("work", "batch", "end")]
    assert not [kind for kind, _, _ in items if kind in ("ready", "done")]


def test_an_error_in_a_parsing_process_is_raised_in_the_writer_after_the_journals_before_it(tmp_path):
    paths = journals(tmp_path, [50, 50, 50])
    broken = tmp_path / "broken"
    broken.write_bytes(b"x")
    seen = []
    with pytest.raises(ValueError, match="cannot parse broken") as raised:
        for _kind, path, _ in parsing.in_processes(numbered, [*paths, broken], (),
                                                   processes=2, message_bytes=1, ahead_bytes=1):
            seen.append(path)
    assert set(seen) == set(paths) and broken not in seen
    assert "(in the process parsing journals)" in "".join(raised.value.__notes__)


def test_more_processes_than_journals_starts_one_per_journal(tmp_path, parsing_processes):
    paths = journals(tmp_path, [10, 10])
    items = list(parsing.in_processes(numbered, paths, (), processes=4,
                                      message_bytes=1, ahead_bytes=1))
    assert len(items) == 6
    assert parsing_processes == [[paths[0]], [paths[1]]]


def test_a_process_with_one_thread_forks_its_parsers_and_one_with_threads_spawns_them(tmp_path):
    assert parsing._start_method() == "fork"
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert parsing._start_method() == "spawn"
        paths = journals(tmp_path, [30, 30, 30])
        items = list(parsing.in_processes(numbered, paths, (), processes=2,
                                          message_bytes=1, ahead_bytes=1))
        assert [path for kind, path, _ in items if kind == "end"] == paths
    finally:
        stop.set()
        other.join()


def test_the_first_message_is_small_so_writing_starts_early_and_the_rest_are_full(tmp_path, monkeypatch):
    sent = []
    receive = parsing._Stream._receive

    def recorded(self) -> list:
        message = receive(self)
        sent.append(sum(parsing.text_bytes(item) for item in message))
        return message

    monkeypatch.setattr(parsing._Stream, "_receive", recorded)
    paths = journals(tmp_path, [10, 10, 10])
    items = list(parsing.in_processes(batches_of_text, paths, (), processes=1,
                                      message_bytes=1_000_000, ahead_bytes=1))
    assert len(items) == 3 * 12
    assert sent[0] == 0  # "ready"
    # Each message goes as soon as it holds its share (one batch more at most), not when
    # the next batch has been parsed: the first one once it holds FIRST_MESSAGE_BYTES.
    assert parsing.FIRST_MESSAGE_BYTES <= sent[1] < parsing.FIRST_MESSAGE_BYTES + 100_000
    assert all(1_000_000 <= n < 1_100_000 for n in sent[2:-1])  # not cut as small as the first
    assert sum(sent) == 3 * 10 * 100_000


def niceness(paths: list[Path], *args) -> object:
    """A producer reporting the niceness it runs at."""
    for path in paths:
        yield ("work", path, os.nice(0))
        yield ("end", path, None)


def test_parsing_processes_run_nicer_than_the_writer(tmp_path):
    writer = os.nice(0)
    paths = journals(tmp_path, [10, 10])
    items = list(parsing.in_processes(niceness, paths, (), processes=2, message_bytes=1, ahead_bytes=1))
    seen = [payload for kind, _path, payload in items if kind == "work"]
    assert seen == [min(19, writer + parsing.PARSER_NICENESS)] * 2
    assert os.nice(0) == writer  # the writer itself is left as it was


def a_batch_then_a_wait(paths: list[Path], writer_has_it) -> object:
    """A journal of two batches; the second is parsed only once the writer has the first (or 10 s)."""
    path = paths[0]
    yield ("work", path, None)
    yield ("batch", path, types.SimpleNamespace(text_bytes=2_000_000, complete=False))
    yield ("batch", path, types.SimpleNamespace(text_bytes=0, complete=True, sent=writer_has_it.wait(10)))
    yield ("end", path, None)


def test_a_full_message_goes_at_once_not_when_the_next_item_is_parsed(tmp_path):
    writer_has_it = multiprocessing.get_context(parsing._start_method()).Event()
    paths = journals(tmp_path, [10])
    batches = []
    for kind, _path, batch in parsing.in_processes(a_batch_then_a_wait, paths, (writer_has_it,), processes=1,
                                                   message_bytes=1_000_000, ahead_bytes=1):
        if kind == "batch":
            batches.append(batch)
            writer_has_it.set()
    assert len(batches) == 2
    assert batches[1].sent is True


def journals_of_two_batches(paths: list[Path], *args) -> object:
    """Journals of two batches each, the second marked as reading its journal to the end."""
    for path in paths:
        yield ("work", path, None)
        yield ("batch", path, types.SimpleNamespace(text_bytes=10, complete=False))
        yield ("batch", path, types.SimpleNamespace(text_bytes=10, complete=True))
        yield ("end", path, None)


def test_a_journals_last_batch_travels_with_its_end_item(tmp_path, monkeypatch):
    messages = []
    receive = parsing._Stream._receive

    def recorded(self) -> list:
        message = receive(self)
        messages.append([(kind, getattr(payload, "complete", None)) for kind, _path, payload in message])
        return message

    monkeypatch.setattr(parsing._Stream, "_receive", recorded)
    paths = journals(tmp_path, [10, 10, 10])
    items = list(parsing.in_processes(journals_of_two_batches, paths, (), processes=1,
                                      message_bytes=1, ahead_bytes=1))  # every batch fills a message
    assert len(items) == 3 * 4
    one_journal = [[("work", None), ("batch", False)], [("batch", True), ("end", None)]]
    assert messages[1:7] == one_journal * 3  # each batch goes at once, the last with its end
    assert not [m for m in messages if m[-1] == ("batch", True)]


def test_a_bounded_queue_takes_one_item_of_any_size_then_waits_until_it_is_taken():
    queue = parsing._BoundedQueue(10, len)
    assert queue.put(b"x" * 50)  # over the limit, but the queue was empty
    results = []
    waiting = threading.Thread(target=lambda: results.append(queue.put(b"y")))
    waiting.start()
    waiting.join(0.2)
    assert waiting.is_alive() and results == []  # full: the second put waits
    assert queue.get() == b"x" * 50
    waiting.join(5)
    assert results == [True] and queue.get() == b"y"


def test_a_stopped_bounded_queue_releases_a_waiting_put_which_adds_nothing():
    queue = parsing._BoundedQueue(10, len)
    queue.put(b"x" * 10)
    results = []
    waiting = threading.Thread(target=lambda: results.append(queue.put(b"y")))
    waiting.start()
    waiting.join(0.2)
    queue.stop()
    waiting.join(5)
    assert results == [False] and list(queue.queued) == [b"x" * 10]
