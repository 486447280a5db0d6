"""A session page over odd tree shapes: time and size of each page, whatever the tree's shape.

    python -m benchmarks.tree_shapes [--scale 1.0]

Writes four journals as Pi would write them (compact JSON lines) into a temporary agent folder, indexes
them, and asks a Datasette with the plugin (root's actor) for the session page of each: two labels that
are each other's parent with an entry under them (`?leaf=`), 50,000 forks of one entry, and a 20,000-deep
chain with a side branch at every level (first page and `?leaf=` its end). Prints seconds and bytes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

import pi_lines


def line(obj: dict) -> str:
    return pi_lines.dumps(obj).decode()


def ts(i: int) -> str:
    return f"2026-03-15T{10 + i // 3_600_000 % 10:02d}:{i // 60_000 % 60:02d}:{i // 1000 % 60:02d}.{i % 1000:03d}Z"


def header(sid: str, cwd: str) -> str:
    return line(pi_lines.header(sid, ts(0), cwd))


NO_USAGE = pi_lines.usage(0, 0, 0, 0, {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0})


def message(eid: str, parent: str | None, i: int, role: str, text: str) -> str:
    """A user message, or an assistant's answer (as Pi writes one, without usage worth counting)."""
    content = [{"type": "text", "text": text}]
    ms = 1773568800000 + i  # ts(i) in milliseconds
    if role == "user":
        body = pi_lines.user(content, ms)
    else:
        body = pi_lines.assistant(
            content,
            api="anthropic-messages",
            provider="anthropic",
            model="claude-sonnet-4-5",
            usage=NO_USAGE,
            stop_reason="stop",
            timestamp_ms=ms,
        )
    return line(pi_lines.message(pi_lines.At(eid, parent, ts(i)), body))


def write(folder: Path, name: str, lines: list[str]) -> Path:
    path = folder / f"2026-03-15T10-00-00-000Z_{name}.jsonl"
    path.write_text("".join(lines))
    return path


def journals(sessions: Path, scale: float) -> dict[str, tuple[str, str]]:
    """Each shape's session id and the page path to ask for."""
    folder = sessions / "--tmp-shapes--"
    folder.mkdir(parents=True)
    cwd = "/tmp/shapes"
    pages = {}
    # two labels that are each other's parent, and an entry under them
    sid = "00000000-0000-7000-8000-00000000000a"
    write(
        folder,
        sid,
        [
            header(sid, cwd),
            message("u0000001", None, 1, "user", "the first question"),
            line(pi_lines.entry("label", pi_lines.At("lab00001", "lab00002", ts(2)), targetId="u0000001", label="one")),
            line(pi_lines.entry("label", pi_lines.At("lab00002", "lab00001", ts(3)), targetId="u0000001", label="two")),
            message("u0000002", "lab00001", 4, "user", "an entry under the label cycle"),
            message("a0000002", "u0000002", 5, "assistant", "an answer"),
        ],
    )
    pages["label cycle, ?leaf="] = (sid, "?leaf=a0000002")
    # 50,000 forks of one entry
    sid = "00000000-0000-7000-8000-00000000000b"
    n = int(50_000 * scale)
    out = [header(sid, cwd), message("root0001", None, 1, "user", "the question every fork answers")]
    out += [message(f"f{i:07d}", "root0001", i + 2, "assistant", f"fork {i} answers") for i in range(n)]
    write(folder, sid, out)
    pages[f"{n:,} forks of one entry"] = (sid, "")
    # a deep chain with a side branch at every level
    sid = "00000000-0000-7000-8000-00000000000c"
    n = int(20_000 * scale)
    out = [header(sid, cwd)]
    parent = None
    for i in range(n):
        out.append(message(f"c{i:07d}", parent, 2 * i + 1, "user", f"chain step {i}"))
        if parent is not None:
            out.append(message(f"s{i:07d}", parent, 2 * i + 2, "assistant", f"side branch {i}"))
        parent = f"c{i:07d}"
    write(folder, sid, out)
    pages[f"{n:,}-deep chain with side branches"] = (sid, "")
    pages[f"{n:,}-deep chain with side branches, ?leaf= its end"] = (sid, f"?leaf={parent}")
    return pages


async def measure(db_path: Path, pages: dict[str, tuple[str, str]]) -> None:
    from datasette.app import Datasette

    from datasette_pi_memory.server.serve import ensure_secret
    from pimem_index import resolve

    ds = Datasette(
        [str(db_path)],
        secret=ensure_secret(resolve()),
        config={"plugins": {"datasette-pi-memory": {"background_index": False}}},
    )
    ds.root_enabled = True
    await ds.invoke_startup()
    for label, (sid, query) in pages.items():
        start = time.perf_counter()
        res = await ds.client.get(f"/-/pi-memory/sessions/{sid}{query}", actor={"id": "root"})
        seconds = time.perf_counter() - start
        print(f"{label:55} {res.status_code} {seconds:6.2f} s {len(res.content) / 1e6:6.2f} MB", flush=True)
    await ds.invoke_shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the issue's sizes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        agent = Path(tmp) / "agent"
        os.environ["PI_CODING_AGENT_DIR"] = str(agent)
        pages = journals(agent / "sessions", args.scale)
        from pimem_index import resolve, store
        from pimem_index.index.indexer import index_all

        locations = resolve()
        conn = store.open_index(locations.db_path)
        start = time.perf_counter()
        index_all(conn, locations)
        conn.close()
        print(f"indexed in {time.perf_counter() - start:.1f} s", flush=True)
        asyncio.run(measure(locations.db_path, pages))


if __name__ == "__main__":
    main()
