"""The `sessions` map of search, summaries and read replies: what belongs to a session, given once per reply
(short id, title, folder, journal, start, parent), and hits that no longer repeat it."""

from __future__ import annotations

from support.real_pi_index import session_id

from pimem_index.index import indexer
from pimem_index.search import query
from pimem_index.search.session_ids import short_ids

SESSION_KEYS = {"short_id", "title", "cwd", "journal", "started", "parent_session_id"}


def test_a_search_reply_describes_each_hits_session_once_in_the_sessions_map(corpus):
    copied, locations, conn = corpus
    reply = query.search(conn, locations, None, scope="global", limit=50)
    hit_sessions = {hit["session_id"] for hit in reply["results"]}
    assert len(hit_sessions) > 3 and set(reply["sessions"]) == hit_sessions
    journals = {session_id(copied, role): copied.journal(role) for role in copied.journals}
    for sid, info in reply["sessions"].items():
        assert set(info) == SESSION_KEYS
        assert info["journal"] == str(journals[sid]) and info["cwd"] in {str(p) for p in copied.projects.values()}
        assert info["short_id"] == short_ids(conn, [sid])[sid] and info["started"].startswith("2026-12-03T")
    for hit in reply["results"]:
        assert "cwd" not in hit and "journal" not in hit, "a hit does not repeat what the map says"


def test_the_title_is_the_session_name_else_its_first_user_message(corpus):
    copied, locations, conn = corpus
    named, plain = session_id(copied, "rich"), session_id(copied, "edit_heavy")
    both = query.search(conn, locations, None, scope="global", limit=100)["sessions"]
    assert both[named]["title"] == "Fixture: the rich session"
    assert both[plain]["title"] == "Add type hints to app.py and mark the division TODO done."
    assert "What did my commands show?" not in str(both[named]), "a named session is titled by its name only"


def test_a_title_is_redacted_and_cut_to_one_line(sessions_dir, locations, conn):
    from support.pijournal import Journal

    secret = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3h2"
    Journal(sessions_dir, "/work/titles").user(f"deploy with\n  token {secret} then " + "check the logs " * 30)
    indexer.index_all(conn, locations)
    [info] = query.search(conn, locations, "deploy", scope="global")["sessions"].values()
    assert info["title"].startswith("deploy with token ") and info["title"].endswith(" …")
    assert secret not in info["title"] and "\n" not in info["title"] and len(info["title"]) <= 125


def test_a_read_reply_describes_the_entrys_session(corpus):
    copied, locations, conn = corpus
    sid = session_id(copied, "all_tools")
    hit = query.search(conn, locations, "division", scope="session", session_id=sid)["results"][0]
    reply = query.read(conn, locations, hit["id"], session_id=sid, scope="session")
    assert reply["status"] == "ok" and set(reply["sessions"]) == {sid}
    assert reply["sessions"][sid]["journal"] == str(copied.journal("all_tools"))
    assert "cwd" not in reply["entry"] and "journal" not in reply["entry"]


def test_a_forks_parent_is_named_only_when_the_callers_cap_reaches_it(corpus):
    copied, locations, conn = corpus
    child, parent = session_id(copied, "fork_child"), session_id(copied, "fork_parent")
    beta = str(copied.projects["beta"])
    wide = query.search(conn, locations, None, scope="session", session_id=child)
    assert wide["sessions"][child]["parent_session_id"] == parent
    in_project = query.search(conn, locations, None, scope="session", session_id=child, cwd=beta, max_scope="project")
    assert in_project["sessions"][child]["parent_session_id"] == parent
    own_session = query.search(
        conn, locations, None, scope="session", journal_path=str(copied.journal("fork_child")), max_scope="session"
    )
    assert own_session["sessions"][child]["parent_session_id"] is None, "a session-capped caller sees no other"
    clone = session_id(copied, "clone_child")
    assert query.search(conn, locations, None, scope="session", session_id=clone)["sessions"][clone][
        "parent_session_id"
    ] == session_id(copied, "clone_parent")
    lone = session_id(copied, "same_minute_a")
    assert (
        query.search(conn, locations, None, scope="session", session_id=lone)["sessions"][lone]["parent_session_id"]
        is None
    )


def test_a_parent_in_another_project_is_not_named_to_a_project_capped_caller(new_journal, home, locations, conn):
    parent = new_journal("Apps/one")
    parent.user("the original plan")
    child = new_journal("Apps/two", parent_session=str(parent.path))
    child.user("the forked plan")
    indexer.index_all(conn, locations)
    wide = query.search(conn, locations, "plan", scope="session", session_id=child.session_id)
    assert wide["sessions"][child.session_id]["parent_session_id"] == parent.session_id
    capped = query.search(conn, locations, "plan", cwd=str(home / "Apps/two"), max_scope="project")
    assert capped["sessions"][child.session_id]["parent_session_id"] is None
    assert parent.session_id not in str(capped), "nothing of the other project reaches a project-capped caller"
