"""Where a backfill's journals are parsed and redacted: a thread, or processes beside the writer.

The writer consumes one stream of items (`stream.StreamItem`), in the order of the paths
it asked for; each path's items end with a skip or an end item. Parsing elsewhere lets
the writer spend its time in SQLite. A thread shares the GIL with the writer; processes do
not, so a bulk backfill parses in one or more processes, each given a share of the journals.
"""

from __future__ import annotations

import collections
import gc
import multiprocessing
import os
import pickle
import signal
import threading
import time
import traceback
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from multiprocessing.context import ForkContext, SpawnContext
from pathlib import Path
from typing import Generic, TypeVar

from pimem_index.index.settings import StartMethod
from pimem_index.index.stream import ITEM_ENDS, ItemKind, StreamItem

# How often the writer checks that a parsing process is alive, and a process its parent.
POLL_SECONDS = 1.0
# Pickled messages a process queues while one is being sent, in bytes: memory stays bounded
# however the messages are sized (a large batch goes alone).
QUEUED_BYTES = 8 * 1024 * 1024
# The first message goes as soon as it holds this much text, so the writer starts early.
FIRST_MESSAGE_BYTES = 256 * 1024
# Parsing processes at most: two keep ahead of one writer (parsing costs about what writing does).
MAX_PROCESSES = 2
# Parsing processes run this much nicer than the writer: enough that the writer has a core when the
# three compete (Linux gives nice 3 about half the writer's share, so two parsers take one core
# between them), not so much that other work starves them while the writer waits for them. At 10
# (a tenth of a share each) two busy loops beside a pass left the parsers a few percent of a core.
PARSER_NICENESS = 3
# Garbage collection thresholds while items stream from parsers to the writer (`collecting_rarely`).
RARE_GC_THRESHOLD = (100_000, 50, 100)

Producer = Callable[..., Iterator[StreamItem]]  # produce(paths, *args)
T = TypeVar("T")


class ParserStopped(RuntimeError):
    """A process parsing a backfill's journals ended without finishing (it was killed)."""


def process_count() -> int:
    """Parsing processes for a bulk pass: one per core this process may use, up to MAX_PROCESSES."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_PROCESSES, cores))


def _start_method() -> StartMethod:
    """Fork when this process runs one thread (ready in about 20 ms, with nothing to import
    again); spawn otherwise (about 230 ms), since forking a process with threads can copy a lock
    some other thread holds. A forked child must not use SQLite at all (a connection must not
    cross a fork, and the writer's is open): producers get what they need as arguments."""
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


def text_bytes(item: StreamItem) -> int:
    """Bytes of text an item carries to the term index (0 for items that are not batches)."""
    return getattr(item.payload, "text_bytes", 0)


def in_thread(items: Iterator[T], ahead_bytes: int) -> Generator[T, None, None]:
    """Run `items` (parsing and redacting) in a thread, up to `ahead_bytes` of text ahead.

    SQLite releases the GIL while it writes, so parsing overlaps the FTS5 inserts. The
    budget is in bytes of text, so many small journals queue up while a few large batches
    still bound memory.
    """

    def size(item) -> int:  # an item of a pass, or a batch of one journal (1 at least: never free)
        return getattr(item.payload if isinstance(item, StreamItem) else item, "text_bytes", 0) + 1

    buffer: _BoundedQueue[T | _Done | BaseException] = _BoundedQueue(ahead_bytes, size)

    def produce():
        try:
            for item in items:
                if not buffer.put(item):
                    return
            buffer.put(_Done())
        except BaseException as e:  # handed to the consumer, raised there
            buffer.put(e)

    worker = threading.Thread(target=produce, daemon=True, name="pimem-parse")
    worker.start()
    try:
        while not isinstance(item := buffer.get(), _Done):
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        buffer.stop()
        worker.join()


class _Done:
    """The end of a thread's items, queued after the last one."""


def in_processes(
    produce: Producer,
    paths: list[Path],
    args: tuple,
    *,
    processes: int,
    message_bytes: int,
    ahead_bytes: int,
    start_method: StartMethod | None = None,
    before_fork: Callable[[], object] | None = None,
) -> Generator[StreamItem, None, None]:
    """`produce(paths, *args)`'s items in path order, parsed in up to `processes` processes.

    The journals are shared out by size, each process parses its share in order, and items
    are taken from the process that owns the next path. A process sends pickled lists of
    items, about `message_bytes` of text each. Processes are started by `start_method`, by
    default forked, or spawned when the caller has threads (`_start_method`); they exit when
    this process dies, and are stopped when this generator is closed (the pass ended, Ctrl-C,
    an error). Their errors are raised here as they are; a death raises ParserStopped, unless
    a process died before it was ready: then the journals are parsed in a thread here instead
    (`in_thread`). `before_fork` runs here once before forking: what every process would
    otherwise do on its own (compiling the redaction rules), done once and inherited.
    """
    processes = max(1, min(processes, len(paths)))
    start_method = start_method or _start_method()
    if before_fork is not None and start_method == "fork":
        before_fork()
    owners = _share_out(paths, processes)
    shares = [[p for p, o in zip(paths, owners, strict=True) if o == k] for k in range(processes)]
    streams: list[_Stream] = []
    try:
        for share in shares:  # one by one, so those started are stopped if the next cannot be
            streams.append(_Stream(produce, share, args, message_bytes, start_method))
        started = all(stream.ready() for stream in streams)
        if started:
            for owner in owners:
                stream = streams[owner]
                while True:
                    item = stream.next()
                    yield item
                    if item.kind in ITEM_ENDS:
                        break
            return
    finally:
        for stream in streams:
            stream.close()
    fallback = in_thread(produce(paths, *args), ahead_bytes)
    try:
        yield from fallback
    finally:
        fallback.close()


def _share_out(paths: list[Path], processes: int) -> list[int]:
    """The process each path goes to: the least loaded so far, by bytes, so all keep pace."""
    loads = [0] * processes
    owners = []
    for path in paths:
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        owner = loads.index(min(loads))
        loads[owner] += size + 1
        owners.append(owner)
    return owners


class _Stream:
    """One parsing process and the items it has sent that the writer has not taken yet."""

    def __init__(
        self, produce: Producer, paths: list[Path], args: tuple, message_bytes: int, start_method: StartMethod
    ) -> None:
        ctx = _context(start_method)
        self.receiver, sender = ctx.Pipe(duplex=False)
        try:  # fewer, larger reads than the default 64 KiB pipe allows (Linux only)
            import fcntl

            fcntl.fcntl(self.receiver.fileno(), fcntl.F_SETPIPE_SZ, 1024 * 1024)
        except (ImportError, AttributeError, OSError):
            pass
        self.items: collections.deque[StreamItem] = collections.deque()
        self.process = ctx.Process(
            target=_child_main,
            name="pimem-parse",
            daemon=True,
            args=(sender, produce, paths, args, os.getpid(), message_bytes),
        )
        try:
            self.process.start()
        finally:
            sender.close()  # only the child writes: its end closing is how its death shows here

    def ready(self) -> bool:
        """Whether the process started (its first message); False if it could not."""
        try:
            self.items.extend(self._receive())
        except ParserStopped:
            return False
        return bool(self.items) and self.items.popleft().kind == ItemKind.READY

    def next(self) -> StreamItem:
        """The process's next item; its error raised, ParserStopped if it died."""
        while not self.items:
            self.items.extend(self._receive())
        item = self.items.popleft()
        if item.kind == ItemKind.ERROR:
            raise item.payload
        return item

    def _receive(self) -> list[StreamItem]:
        """The next message; ParserStopped if the process died, never a wait on a dead one."""
        while not self.receiver.poll(POLL_SECONDS):
            if not self.process.is_alive() and not self.receiver.poll(0):
                break
        try:
            data = self.receiver.recv_bytes()
        except (EOFError, OSError):
            self.process.join(1)
            code = self.process.exitcode
            how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
            raise ParserStopped(
                f"the process parsing journals (pid {self.process.pid}) stopped unexpectedly ({how}); "
                "everything written so far is kept: run the command again to go on"
            ) from None
        return pickle.loads(data)

    def close(self) -> None:
        self.receiver.close()
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.process.close()


def _context(start_method: StartMethod) -> ForkContext | SpawnContext:
    """multiprocessing's context for `start_method` (typeshed's get_context(str) gives one without Process)."""
    return multiprocessing.get_context("fork") if start_method == "fork" else multiprocessing.get_context("spawn")


def _child_main(sender, produce: Producer, paths: list[Path], args: tuple, parent: int, message_bytes: int) -> None:
    """A parsing process: says it is ready, runs `produce`, sends its items in messages (a small first one).

    A thread sends them, so parsing goes on while the writer is busy: up to QUEUED_BYTES
    wait in a queue, besides the one being sent and the one being built.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the writer's to handle; it stops us
    _return_large_blocks()
    _yield_to_the_writer()
    threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True).start()
    outbox: _BoundedQueue[bytes | None] = _BoundedQueue(QUEUED_BYTES, lambda data: len(data or b"") + 1)

    def send() -> None:
        try:
            while (data := outbox.get()) is not None:
                sender.send_bytes(data)
        except OSError:  # the writer is gone or stopped reading: nobody wants the rest
            os._exit(0)

    sending = threading.Thread(target=send, daemon=True)
    sending.start()
    outbox.put(pickle.dumps([StreamItem(ItemKind.READY)]))
    pending: list[StreamItem] = []
    pending_bytes = 0
    limit = min(FIRST_MESSAGE_BYTES, message_bytes)
    for item in _errors_as_items(produce(paths, *args)):
        pending.append(item)
        pending_bytes += text_bytes(item)
        # Sent at once, not when the next item is parsed; a journal's last batch waits for
        # its end item (next, with no parsing between), which the writer needs to go on.
        if pending_bytes >= limit and not getattr(item.payload, "complete", False):
            outbox.put(pickle.dumps(pending, pickle.HIGHEST_PROTOCOL))
            pending, pending_bytes, limit = [], 0, message_bytes
    pending.append(StreamItem(ItemKind.DONE))
    outbox.put(pickle.dumps(pending, pickle.HIGHEST_PROTOCOL))
    outbox.put(None)
    sending.join()
    sender.close()


class _BoundedQueue(Generic[T]):
    """A queue between two threads bounded in bytes (`size` of each item): `put` waits while
    it holds `limit` or more, so one item of any size always fits; `stop` releases a waiting
    `put`, which then returns False."""

    def __init__(self, limit: int, size: Callable[[T], int]) -> None:
        self.limit = limit
        self.size = size
        self.queued: collections.deque[T] = collections.deque()
        self.bytes = 0
        self.stopped = False
        self.changed = threading.Condition()

    def put(self, item: T) -> bool:
        with self.changed:
            while self.bytes >= self.limit and not self.stopped:
                self.changed.wait()
            if self.stopped:
                return False
            self.queued.append(item)
            self.bytes += self.size(item)
            self.changed.notify_all()
            return True

    def get(self) -> T:
        with self.changed:
            while not self.queued:
                self.changed.wait()
            item = self.queued.popleft()
            self.bytes -= self.size(item)
            self.changed.notify_all()
            return item

    def stop(self) -> None:
        with self.changed:
            self.stopped = True
            self.changed.notify_all()


def _errors_as_items(items: Iterator[StreamItem]) -> Iterator[StreamItem]:
    """The items, then an error item carrying the exception if producing them failed, for the writer to raise."""
    try:
        yield from items
    except Exception as e:
        e.add_note("(in the process parsing journals)\n" + "".join(traceback.format_exc()))
        try:
            pickle.loads(pickle.dumps(e))
        except Exception:
            e = RuntimeError(f"{type(e).__name__}: {e}")
        yield StreamItem(ItemKind.ERROR, None, e)


def _yield_to_the_writer() -> None:
    """In a parsing process: run at a lower priority and collect garbage rarely.

    Two parsers and the writer share two cores; at equal priority the writer got two thirds
    of one while both parsers ran, and waited for its own work (PARSER_NICENESS says how much nicer).
    """
    nice = getattr(os, "nice", None)
    if nice is not None:
        try:
            nice(PARSER_NICENESS)
        except OSError:
            pass
    gc.freeze()  # what the fork copied is never scanned (nor its pages touched)
    gc.set_threshold(*RARE_GC_THRESHOLD)


@contextmanager
def collecting_rarely() -> Iterator[None]:
    """Collect garbage rarely meanwhile: parsed items are many short-lived tuples and dicts with
    no cycles worth collecting, and each collection they trigger walks everything alive."""
    before = gc.get_threshold()
    gc.set_threshold(*RARE_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _return_large_blocks() -> None:
    """In a parsing process: give every freed block of 1 MiB or more back to the system (glibc).

    Messages and chunks are a few MiB each; glibc's default raises its threshold to their
    size and then keeps them in a heap that never shrinks, which costs tens of MiB of RSS.
    """
    try:
        import ctypes

        ctypes.CDLL(None).mallopt(-3, 1024 * 1024)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


def _exit_when_orphaned(parent: int) -> None:
    """In a parsing process: exit at once when the writer died (SIGKILL runs none of its cleanup)."""
    while os.getppid() == parent:
        time.sleep(POLL_SECONDS)
    os._exit(1)
