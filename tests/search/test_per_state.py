"""What every reply asks of the index (the short-id table, an untitled session's first message) is kept for
the index as it is, shared by its connections, and never outlives a change: a real index, journals written
line by line, connections opened as the plugin opens them."""

from __future__ import annotations

from pimem_index import store
from pimem_index.index.indexer import index_all
from pimem_index.search import query


def sessions_of(conn, locations, home, q: str = "heron") -> dict:
    return query.search(conn, locations, q, cwd=str(home / "Apps/prjct"))["sessions"]


def test_a_kept_sessions_map_equals_the_one_computed_anew(conn, locations, new_journal, home):
    for n in range(3):
        j = new_journal()
        j.user(f"heron question {n}: where does the pipeline log?")
        j.assistant(f"heron answer {n}")
    index_all(conn, locations)
    first = sessions_of(conn, locations, home)
    kept = sessions_of(conn, locations, home)
    fresh = store.open_index(locations.db_path)  # another memo: nothing kept
    try:
        anew = sessions_of(fresh, locations, home)
    finally:
        fresh.close()
    assert kept == first == anew
    assert {s["title"] for s in kept.values()} == {
        f"heron question {n}: where does the pipeline log?" for n in range(3)
    }


def test_a_session_indexed_after_a_reply_lengthens_the_short_ids_of_the_next_reply(conn, locations, new_journal, home):
    first = new_journal(session_id="0b6e6f2c-aaaa-4aaa-8aaa-aaaaaaaaaaaa")
    first.user("heron deploy notes")
    index_all(conn, locations)
    [before] = sessions_of(conn, locations, home).values()
    assert before["short_id"] == "0b6e6f2c"
    second = new_journal(session_id="0b6e6f2c-bbbb-4bbb-8bbb-bbbbbbbbbbbb")  # the same first eight characters
    second.user("heron rollback notes")
    index_all(conn, locations)
    after = sessions_of(conn, locations, home)
    assert after[first.session_id]["short_id"] == "0b6e6f2c-a"
    assert after[second.session_id]["short_id"] == "0b6e6f2c-b"
    assert "0b6e6f2c" not in {s["short_id"] for s in after.values()}


def test_another_connection_s_change_is_seen_by_the_next_reply(conn, locations, new_journal, home):
    j = new_journal(session_id="7c1d2e3f-aaaa-4aaa-8aaa-aaaaaaaaaaaa")
    j.user("heron first words")
    index_all(conn, locations)
    [before] = sessions_of(conn, locations, home).values()
    assert before["title"] == "heron first words" and before["short_id"] == "7c1d2e3f"
    other = store.open_index(locations.db_path, memo=conn.memo)  # another thread's connection, as the plugin's
    try:
        k = new_journal(session_id="7c1d2e3f-bbbb-4bbb-8bbb-bbbbbbbbbbbb")
        k.user("heron second session")
        index_all(other, locations)  # the plugin's indexer, or another thread
    finally:
        other.close()
    after = sessions_of(conn, locations, home)
    assert sorted(s["title"] for s in after.values()) == ["heron first words", "heron second session"]
    assert after[j.session_id]["short_id"] == "7c1d2e3f-a" != before["short_id"]
