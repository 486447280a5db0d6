"""Session ids people can use: short ids unique in the index (the random end of Pi's UUIDv7 ids), and a session
named by its full id, its short id or a unique prefix, everywhere a session is taken."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner
from support.real_pi_index import session_id

from pimem_index import UserError, store
from pimem_index.cli import cli
from pimem_index.index import indexer
from pimem_index.search import session_ids
from pimem_index.search.session_ids import Ids, from_the_end, resolve, short_ids


def uuid7(ms: int, rng: random.Random, tail: str | None = None) -> str:
    """A UUIDv7 as Pi writes it: 48 bits of milliseconds, the version, random bits (or the given last hex digits)."""
    rand_a = rng.getrandbits(12)
    rand_b = rng.getrandbits(62) | (0b10 << 62)
    text = f"{ms:012x}7{rand_a:03x}{rand_b:016x}"
    if tail:
        text = text[: 32 - len(tail)] + tail
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def all_sessions(conn) -> list[str]:
    return [row[0] for row in conn.execute("SELECT DISTINCT session_id FROM files")]


def test_a_real_pi_session_shows_the_random_end_of_its_id_unique_in_the_index(corpus):
    _copied, _locations, conn = corpus
    sessions = all_sessions(conn)
    assert len(sessions) == 10 and len({s[:8] for s in sessions}) == 2, "the corpus's ids share their first 8 chars"
    shown = short_ids(conn, sessions)
    for sid, short in shown.items():
        assert from_the_end(sid) and sid.endswith(short) and len(short) >= 8
    assert len(set(shown.values())) == len(sessions), "no two sessions share a shown short id"
    assert not {s[:8] for s in sessions} & set(shown.values()), "never the timestamp that sessions share"


def test_many_same_millisecond_ids_never_share_a_short_id(sessions_dir, locations, conn):
    rng = random.Random(24)
    ms = 0x01A23DCCED41
    ids = [uuid7(ms, rng) for _ in range(300)]
    # ids whose random ends agree on their last 8, 10 and 12 characters, and one whose end starts another id
    ids += [uuid7(ms, rng, tail="deadbeef"), uuid7(ms, rng, tail="deadbeef"), uuid7(ms, rng, tail="00deadbeef")]
    ids += [uuid7(ms, rng, tail="0cafe0cafe00"), uuid7(ms, rng, tail="1cafe0cafe00")]
    ids += [uuid7(ms, rng, tail=f"{ms:012x}"[:8])]
    from support.pijournal import Journal

    for sid in ids:
        Journal(sessions_dir, "/work/same-minute", session_id=sid).user("a quick question")
    indexer.index_all(conn, locations)
    shown = short_ids(conn, ids)
    assert len(shown) == len(ids) and len(set(shown.values())) == len(ids), "no two sessions share a shown short id"
    for sid, short in shown.items():
        assert sid.endswith(short) and len(short) >= 8
        assert resolve(conn, short) == sid, "a shown short id names its session"
    assert len(shown[ids[300]]) > 8 and len(shown[ids[303]]) == 12, "colliding ends are lengthened until unique"
    with pytest.raises(UserError) as e:
        resolve(conn, ids[0][:8])
    assert "names several sessions" in str(e.value), "the shared timestamp names no session by itself"


def test_an_id_that_is_not_a_uuid7_is_shortened_from_its_start():
    ids = Ids(["0b6e6f2c-8d2b-4a43-9b3b-1f1f2c6a7d01", "0b6e6f2c-aaaa-4a43-9b3b-1f1f2c6a7d02", "c0ffee00-1111"])
    assert ids.short("c0ffee00-1111") == "c0ffee00"
    assert ids.short("0b6e6f2c-8d2b-4a43-9b3b-1f1f2c6a7d01") == "0b6e6f2c-8"
    assert ids.short("0b6e6f2c-aaaa-4a43-9b3b-1f1f2c6a7d02") != "0b6e6f2c", "a start two ids share is not a short id"


def test_a_session_is_named_by_its_full_id_its_short_id_or_a_unique_prefix(corpus):
    copied, _locations, conn = corpus
    sid = session_id(copied, "rich")
    short = short_ids(conn, [sid])[sid]
    assert resolve(conn, sid) == resolve(conn, short) == resolve(conn, sid[:13]) == sid
    for refused in (sid[:7], short[1:], "ffffffff", sid + "0"):
        with pytest.raises(UserError, match="no session"):
            resolve(conn, refused)


def test_an_ambiguous_name_is_one_line_listing_the_candidates_by_short_id(corpus):
    copied, _locations, conn = corpus
    shared = session_id(copied, "same_minute_a")[:8]
    with pytest.raises(UserError) as e:
        resolve(conn, shared)
    message = str(e.value)
    assert "\n" not in message and "names several sessions" in message and "e.g. session_id=" in message
    shown = short_ids(conn, all_sessions(conn))
    named = [short for sid, short in shown.items() if sid.startswith(shared)]
    assert sum(short in message for short in named) == min(len(named), session_ids.CANDIDATES_SHOWN)


def test_the_cli_takes_a_short_id_wherever_it_takes_a_session(corpus):
    copied, _locations, conn = corpus
    sid = session_id(copied, "rich")
    short = short_ids(conn, [sid])[sid]
    run = CliRunner().invoke
    found = json.loads(run(cli, ["search", "--session", short, "--json", "--no-index"]).output)
    assert found["scope"] == "session" and {hit["session_id"] for hit in found["results"]} == {sid}
    assert found["sessions"][sid]["short_id"] == short
    entry = found["results"][0]["id"]
    read = run(cli, ["read", entry, "--session", short, "--scope", "session", "--json", "--no-index"])
    assert json.loads(read.output)["entry"]["session_id"] == sid
    refused = run(cli, ["search", "--session", sid[:8], "--no-index"])
    assert refused.exit_code == 1 and "names several sessions" in refused.output
    assert len(refused.output.strip().splitlines()) == 1 and "Traceback" not in refused.output


def test_forget_and_unforget_take_a_short_id(corpus):
    copied, _locations, conn = corpus
    sid = session_id(copied, "edit_heavy")
    short = short_ids(conn, [sid])[sid]
    run = CliRunner().invoke
    forgot = run(cli, ["forget", "--session", short])
    assert forgot.exit_code == 0 and f"Forgot session {sid}" in forgot.output
    assert conn.execute("SELECT count(*) FROM files WHERE session_id = ?", (sid,)).fetchone()[0] == 0
    back = run(cli, ["unforget", "--session", short])
    assert back.exit_code == 0 and sid in back.output, back.output
    ambiguous = run(cli, ["forget", "--session", sid[:8]])
    assert ambiguous.exit_code == 1 and "names several sessions" in ambiguous.output


def test_short_ids_of_ten_thousand_sessions_take_milliseconds(tmp_path):
    """The map's short ids are computed against every session of the index on each reply: cheap enough."""
    import time

    rng = random.Random(7)
    ids = [uuid7(0x01A23DCC0000 + i // 50, rng) for i in range(10_000)]
    conn = store.open_index(tmp_path / "index.sqlite")
    with conn:
        conn.executemany("INSERT INTO files (path, session_id) VALUES (?, ?)", [(f"/j/{s}.jsonl", s) for s in ids])
    started = time.perf_counter()
    shown = short_ids(conn, ids[:20])
    elapsed = time.perf_counter() - started
    print(f"short ids of 20 sessions among 10,000: {elapsed * 1000:.1f} ms")
    assert len(set(shown.values())) == 20 and elapsed < 1.0, elapsed


@pytest.mark.asyncio
async def test_the_api_takes_a_short_id_wherever_it_takes_a_session(corpus):
    from support.plugin_world import ROOT, make_datasette, running

    copied, locations, conn = corpus
    sid = session_id(copied, "rich")
    short = short_ids(conn, [sid])[sid]
    async with running(make_datasette(locations)) as ds:

        async def get(action: str, name: str, **params):
            query = "&".join(f"{k}={v}" for k, v in {"session_id": name, "scope": "session", **params}.items())
            return await ds.client.get(f"/-/pi-memory/api/{action}?{query}", actor=ROOT)

        search = (await get("search", short)).json()
        usage = (await get("usage", short, by="session")).json()
        listed = (await get("sessions", sid[:13])).json()
        shared = await get("search", sid[:8])
    assert {hit["session_id"] for hit in search["results"]} == {sid} and search["sessions"][sid]["short_id"] == short
    assert [row["key"] for row in usage["rows"]] == [sid]
    assert [s["session_id"] for s in listed["sessions"]] == [sid] and listed["sessions"][0]["short_id"] == short
    assert shared.status_code == 400 and "names several sessions" in shared.json()["error"]
    assert "\n" not in shared.json()["error"]
