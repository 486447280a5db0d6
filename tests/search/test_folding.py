"""No noise: hits of the same text fold across sessions (and can be listed), a fork's copies never double a hit."""

from __future__ import annotations

import json

import pytest
from support.real_pi_index import indexed_corpus

from pimem_index.errors import UserError
from pimem_index.index.indexer import index_all
from pimem_index.search import query


def ids(reply) -> list[str]:
    return [r["id"] for r in reply["results"]]


@pytest.fixture
def repeated(conn, locations, new_journal, home):
    """The same grep in four sessions (one with other whitespace), twice in the first, and another command."""
    calls, sessions = [], []
    for n in range(4):
        j = new_journal("Apps/prjct")
        command = "npm run check   | grep error" if n == 3 else "npm run check | grep error"
        calls.append(j.assistant(tool_calls=[("bash", {"command": command})]))
        sessions.append(j.session_id)
        if n == 0:
            calls.append(j.assistant(tool_calls=[("bash", {"command": command})]))
    other = new_journal("Apps/prjct").assistant(tool_calls=[("bash", {"command": "npm run build | grep error"})])
    index_all(conn, locations)
    return {"calls": calls, "other": other, "sessions": sessions, "cwd": str(home / "Apps/prjct")}


def test_hits_of_the_same_text_fold_across_sessions(conn, locations, repeated):
    reply = query.search(conn, locations, "grep error", cwd=repeated["cwd"])
    shown = [h for h in reply["results"] if h["id"] in repeated["calls"]]
    assert len(shown) == 1 and repeated["other"] in ids(reply)
    [best] = shown
    assert best["like"] == {"entries": 4 - (best["session_id"] == repeated["sessions"][0]), "sessions": 3}
    assert best["folded"] + best["like"]["entries"] == 4
    assert "like" not in next(h for h in reply["results"] if h["id"] == repeated["other"])


def test_a_session_search_still_shows_each_hit(conn, locations, repeated):
    reply = query.search(conn, locations, "grep error", scope="session", session_id=repeated["sessions"][0])
    assert set(ids(reply)) == set(repeated["calls"][:2])
    assert all("like" not in h and h["folded"] == 0 for h in reply["results"])


def test_the_hits_folded_into_one_are_listed_with_like(conn, locations, repeated):
    best = query.search(conn, locations, "grep error", cwd=repeated["cwd"])["results"][0]
    listed = query.search(conn, locations, "grep error", cwd=repeated["cwd"], like=best["id"])
    assert set(ids(listed)) == set(repeated["calls"])
    assert repeated["other"] not in ids(listed)
    recent = query.search(conn, locations, None, cwd=repeated["cwd"], like=best["id"])
    assert set(ids(recent)) == set(repeated["calls"])
    with pytest.raises(UserError, match="no entry ffffffff"):
        query.search(conn, locations, None, cwd=repeated["cwd"], like="ffffffff")


def test_the_cli_says_how_many_more_and_lists_them_with_like(run, repeated):
    out = run("search", "grep error", "--cwd", repeated["cwd"]).output
    assert "more like it in 3 other sessions (see them: pimem search --like " in out
    best = json.loads(run("search", "grep error", "--json", "--cwd", repeated["cwd"]).output)["results"][0]
    listed = json.loads(run("search", "--like", best["id"], "--json", "--cwd", repeated["cwd"]).output)
    assert set(ids(listed)) == set(repeated["calls"]) and repeated["other"] not in ids(listed)


@pytest.fixture
def forks(tmp_path, monkeypatch):
    world = indexed_corpus(tmp_path, monkeypatch)
    yield world
    world.conn.close()


def test_a_forks_copied_prefix_never_doubles_a_hit(forks):
    parent = forks.session("fork_parent")
    children = {forks.session("fork_child"), forks.session("clone_child")}
    reply = query.search(forks.conn, forks.locations, "What is this project", scope="global", kinds=["user"])
    first = [h for h in reply["results"] if h["excerpt"].startswith("What is this project?")]
    assert [h["session_id"] for h in first] == [parent]  # the original, once
    assert all("like" not in h for h in first)  # a copy is the same entry, not another like it
    asked = query.search(forks.conn, forks.locations, "What else could I add", scope="global", kinds=["user"])
    assert asked["results"][0]["session_id"] in children  # what the fork added is its own
    child = query.search(
        forks.conn, forks.locations, "What is this project", scope="session", session_id=forks.session("fork_child")
    )
    assert [h["session_id"] for h in child["results"] if h["kind"] == "user"] == [forks.session("fork_child")]
