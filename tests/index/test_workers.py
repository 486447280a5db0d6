"""Parsing beside the writer: items come back in path order, whichever process parsed them."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import types
from pathlib import Path

import pytest

from pimem_index.index import workers
from pimem_index.index.stream import ItemKind, StreamItem


def numbered(paths: list[Path], *args) -> object:
    """A producer standing in for the indexer's: three items per journal, the last one "end"."""
    for path in paths:
        if path.name == "broken":
            raise ValueError(f"cannot parse {path.name}")
        yield StreamItem(ItemKind.WORK, path, None)
        yield StreamItem(ItemKind.BATCH, path, None)
        yield StreamItem(ItemKind.END, path, None)


def batches_of_text(paths: list[Path], *args) -> object:
    """A producer of journals of ten 100 KB batches each (only their size matters here)."""
    for path in paths:
        yield StreamItem(ItemKind.WORK, path, None)
        for _ in range(10):
            yield StreamItem(ItemKind.BATCH, path, types.SimpleNamespace(text_bytes=100_000))
        yield StreamItem(ItemKind.END, path, None)


def journals(tmp_path: Path, sizes: list[int]) -> list[Path]:
    paths = []
    for n, size in enumerate(sizes):
        path = tmp_path / f"j{n}"
        path.write_bytes(b"x" * size)
        paths.append(path)
    return paths


def parsed_by(paths: list[Path], *args) -> object:
    """A producer reporting which process parsed each journal (its pid)."""
    for path in paths:
        yield StreamItem(ItemKind.WORK, path, os.getpid())
        yield StreamItem(ItemKind.END, path, None)


def parsers(paths: list[Path], processes: int) -> list[list[Path]]:
    """The journals each parsing process parsed, in the order the processes took their first one."""
    shares: dict[int, list[Path]] = {}
    for kind, path, pid in workers.in_processes(
        parsed_by, paths, (), processes=processes, message_bytes=1, ahead_bytes=1
    ):
        if kind == "work":
            shares.setdefault(pid, []).append(path)
    assert os.getpid() not in shares  # parsed beside the writer, not in it
    return list(shares.values())


def test_journals_are_shared_out_by_size_so_each_process_keeps_pace(tmp_path):
    paths = journals(tmp_path, [1000, 10, 10, 10, 1000, 10])
    assert parsers(paths, 2) == [[paths[0], paths[5]], [paths[1], paths[2], paths[3], paths[4]]]
    assert parsers(paths, 1) == [paths]


@pytest.mark.parametrize("processes", [1, 2, 3])
def test_items_come_back_in_path_order_however_many_processes_parse(tmp_path, processes):
    paths = journals(tmp_path, [500, 20, 20, 300, 20, 20, 20])
    items = list(workers.in_processes(numbered, paths, (), processes=processes, message_bytes=1, ahead_bytes=1))
    assert [(kind, path) for kind, path, _ in items] == [
        (kind, path) for path in paths for kind in ("work", "batch", "end")
    ]
    assert not [kind for kind, _, _ in items if kind in ("ready", "done")]


def test_an_error_in_a_parsing_process_is_raised_in_the_writer_after_the_journals_before_it(tmp_path):
    paths = journals(tmp_path, [50, 50, 50])
    broken = tmp_path / "broken"
    broken.write_bytes(b"x")
    seen = []
    with pytest.raises(ValueError, match="cannot parse broken") as raised:
        for _kind, path, _ in workers.in_processes(
            numbered, [*paths, broken], (), processes=2, message_bytes=1, ahead_bytes=1
        ):
            seen.append(path)
    assert set(seen) == set(paths) and broken not in seen
    assert "(in the process parsing journals)" in "".join(raised.value.__notes__)


def test_more_processes_than_journals_starts_one_per_journal(tmp_path):
    paths = journals(tmp_path, [10, 10])
    assert parsers(paths, 4) == [[paths[0]], [paths[1]]]


WRITER_STATE = {"changed after import": False}


def inherited(paths: list[Path], *args) -> object:
    """A producer reporting whether it sees the writer's memory as it was when it started the
    parsers (forked: a copy of it) or a fresh import of this module (spawned)."""
    for path in paths:
        yield StreamItem(ItemKind.WORK, path, WRITER_STATE["changed after import"])
        yield StreamItem(ItemKind.END, path, None)


def test_a_process_with_one_thread_forks_its_parsers_and_one_with_threads_spawns_them(tmp_path, monkeypatch):
    monkeypatch.setitem(WRITER_STATE, "changed after import", True)
    paths = journals(tmp_path, [30, 30, 30])

    def copies_of_the_writer() -> list[bool]:
        items = workers.in_processes(inherited, paths, (), processes=2, message_bytes=1, ahead_bytes=1)
        return [seen for kind, _path, seen in items if kind == "work"]

    assert threading.active_count() == 1
    assert copies_of_the_writer() == [True] * 3  # forked
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert copies_of_the_writer() == [False] * 3  # spawned: nothing copied, no lock of the other thread
    finally:
        stop.set()
        other.join()


def writer_took(taken, items: int, seconds: float = 10) -> bool:
    """In a parsing process: wait until the writer has taken `items` items; False after `seconds`."""
    deadline = time.monotonic() + seconds
    while taken.value < items:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def taken_by_the_writer(produce, paths: list[Path], args: tuple = (), *, message_bytes: int) -> list[tuple]:
    """Run `produce(paths, taken, *args)` in a forked parsing process, counting in `taken` the items
    the writer took."""
    taken = multiprocessing.get_context("fork").Value("i", 0)
    items = []
    for item in workers.in_processes(
        produce, paths, (taken, *args), processes=1, message_bytes=message_bytes, ahead_bytes=1, start_method="fork"
    ):
        items.append(item)
        taken.value += 1
    return items


def a_long_journal(paths: list[Path], taken, first: int) -> object:
    """A journal of 100 KB batches after a "work" item, `first` of them filling the first message,
    ten of them each full one after it. Batch `first + 1` says whether the writer had the first
    message by then (waiting up to 10 s); the batch ending the second message, whether the writer
    had anything of it before it was parsed (waiting half a second)."""
    path = paths[0]
    yield StreamItem(ItemKind.WORK, path, None)
    for n in range(1, first + 21):
        took = None
        if n == first + 1:
            took = writer_took(taken, first + 1)
        elif n == first + 10:
            took = writer_took(taken, first + 2, seconds=0.5)
        yield StreamItem(
            ItemKind.BATCH, path, types.SimpleNamespace(text_bytes=100_000, complete=n == first + 20, n=n, took=took)
        )
    yield StreamItem(ItemKind.END, path, None)


def test_the_first_message_is_small_so_writing_starts_early_and_the_rest_are_full(tmp_path):
    first = -(-workers.FIRST_MESSAGE_BYTES // 100_000)  # batches of 100 KB filling the first message
    items = taken_by_the_writer(a_long_journal, journals(tmp_path, [10]), (first,), message_bytes=1_000_000)
    took = {batch.n: batch.took for kind, _path, batch in items if kind == "batch"}
    assert took[first + 1] is True, "the writer had the first batches while the next one was parsed"
    assert took[first + 10] is False, "later batches wait until a full message (ten of them) is parsed"
    assert len(items) == first + 22


def niceness(paths: list[Path], *args) -> object:
    """A producer reporting the niceness it runs at."""
    for path in paths:
        yield StreamItem(ItemKind.WORK, path, os.nice(0))
        yield StreamItem(ItemKind.END, path, None)


def test_parsing_processes_run_nicer_than_the_writer(tmp_path):
    writer = os.nice(0)
    if writer >= 19:
        pytest.skip("the tests run at the lowest priority already: nothing can be nicer")
    paths = journals(tmp_path, [10, 10])
    items = list(workers.in_processes(niceness, paths, (), processes=2, message_bytes=1, ahead_bytes=1))
    seen = [payload for kind, _path, payload in items if kind == "work"]
    assert len(seen) == 2 and all(nice > writer for nice in seen)
    assert os.nice(0) == writer  # the writer itself is left as it was


def cfs_weight(nice: int) -> float:
    """The share of a CPU Linux gives a process at this niceness, against 1024 at nice 0 (each step 1.25x)."""
    return 1024 / 1.25 ** max(-20, min(19, nice))


def test_parsing_processes_keep_half_the_writers_share_beside_other_work(tmp_path):
    writer = os.nice(0)
    if writer >= 19:
        pytest.skip("the tests run at the lowest priority already: nothing can be nicer")
    paths = journals(tmp_path, [10, 10])
    items = list(workers.in_processes(niceness, paths, (), processes=2, message_bytes=1, ahead_bytes=1))
    seen = [payload for kind, _path, payload in items if kind == "work"]
    # Two parsers together get about the writer's one share, whatever else runs at the writer's priority.
    assert all(cfs_weight(nice) >= cfs_weight(writer) * 0.45 for nice in seen)
    # ... and never the writer's whole share each (it would wait for its own work).
    assert all(cfs_weight(nice) <= cfs_weight(writer) * 0.8 for nice in seen)


def a_batch_then_a_wait(paths: list[Path], writer_has_it) -> object:
    """A journal of two batches; the second is parsed only once the writer has the first (or 10 s)."""
    path = paths[0]
    yield StreamItem(ItemKind.WORK, path, None)
    yield StreamItem(ItemKind.BATCH, path, types.SimpleNamespace(text_bytes=2_000_000, complete=False))
    yield StreamItem(
        ItemKind.BATCH, path, types.SimpleNamespace(text_bytes=0, complete=True, sent=writer_has_it.wait(10))
    )
    yield StreamItem(ItemKind.END, path, None)


def test_a_full_message_goes_at_once_not_when_the_next_item_is_parsed(tmp_path):
    writer_has_it = multiprocessing.get_context("fork").Event()
    paths = journals(tmp_path, [10])
    batches = []
    for kind, _path, batch in workers.in_processes(
        a_batch_then_a_wait,
        paths,
        (writer_has_it,),
        processes=1,
        message_bytes=1_000_000,
        ahead_bytes=1,
        start_method="fork",
    ):
        if kind == "batch":
            batches.append(batch)
            writer_has_it.set()
    assert len(batches) == 2
    assert batches[1].sent is True


def journals_with_checks(paths: list[Path], taken) -> object:
    """Journals of two batches each (the second reads its journal to the end); each item after a
    journal's first says whether the writer had taken everything before it by then (waiting up
    to 10 s): it had, if every message went as soon as it could."""
    before = 0
    for path in paths:
        yield StreamItem(ItemKind.WORK, path, writer_took(taken, before) if before else True)
        yield StreamItem(ItemKind.BATCH, path, types.SimpleNamespace(text_bytes=10, complete=False, took=None))
        yield StreamItem(
            ItemKind.BATCH,
            path,
            types.SimpleNamespace(text_bytes=10, complete=True, took=writer_took(taken, before + 2)),
        )
        yield StreamItem(ItemKind.END, path, None)
        before += 4


def test_a_journals_last_batch_travels_with_its_end_item(tmp_path):
    paths = journals(tmp_path, [10, 10, 10])
    items = taken_by_the_writer(journals_with_checks, paths, message_bytes=1)  # every batch fills a message
    assert len(items) == 3 * 4
    # A journal's first batch went at once (the writer had it before its last batch was parsed),
    # and its last batch went with its end (the writer had both before the next journal began).
    assert [batch.took for kind, _path, batch in items if kind == "batch" and batch.complete] == [True] * 3
    assert [took for kind, _path, took in items if kind == "work"] == [True] * 3


def test_a_bounded_queue_takes_one_item_of_any_size_then_waits_until_it_is_taken():
    queue = workers._BoundedQueue(10, len)
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
    queue = workers._BoundedQueue(10, len)
    queue.put(b"x" * 10)
    results = []
    waiting = threading.Thread(target=lambda: results.append(queue.put(b"y")))
    waiting.start()
    waiting.join(0.2)
    queue.stop()
    waiting.join(5)
    assert results == [False] and list(queue.queued) == [b"x" * 10]


def rules_at_start(paths: list[Path], *args) -> object:
    """A producer reporting whether the redaction rules were compiled in its process when it began."""
    from pimem_index.redaction import driver

    compiled = driver._COMPILED is not None
    for path in paths:
        yield StreamItem(ItemKind.WORK, path, compiled)
        yield StreamItem(ItemKind.END, path, None)


def test_what_every_parser_would_compile_is_compiled_once_before_forking_and_not_when_spawning(tmp_path, monkeypatch):
    from pimem_index.redaction import driver

    paths = journals(tmp_path, [10, 10])
    calls = []

    def compile_rules() -> object:
        calls.append(os.getpid())
        return driver.compiled()

    monkeypatch.setattr(driver, "_COMPILED", None)
    forked = workers.in_processes(
        rules_at_start, paths, (), processes=2, message_bytes=1, ahead_bytes=1, before_fork=compile_rules
    )
    # inherited, not compiled again
    assert [item.payload for item in forked if item.kind is ItemKind.WORK] == [True, True]
    assert calls == [os.getpid()]
    monkeypatch.setattr(driver, "_COMPILED", None)
    spawned = workers.in_processes(
        rules_at_start,
        paths,
        (),
        processes=2,
        message_bytes=1,
        ahead_bytes=1,
        start_method="spawn",
        before_fork=compile_rules,
    )
    assert [item.payload for item in spawned if item.kind is ItemKind.WORK] == [False, False]
    assert calls == [os.getpid()]  # a spawned process compiles what it needs itself: nothing to share
