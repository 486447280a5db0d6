"""Search, read and summaries: what is found, what must not be, and what is never returned."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from pimem_index.errors import UserError
from pimem_index.index.indexer import index_all, index_journal
from pimem_index.search import query, reread, scope
from pimem_index.search.request import MAX_TERMS, SessionsRequest, UsageRequest, parse_bound, query_terms
from pimem_index.session import activity

SECRET = "gh" + "p_" + "Rk3mW8qZ2xT5vB9nC4yH7jL1pD6sF0gA2eU8"
ENTRY_KEYS = {"id", "session_id", "timestamp", "kind", "role", "tool"}
SESSION_KEYS = {"short_id", "title", "cwd", "journal", "started", "parent_session_id"}


def ids(reply) -> list[str]:
    return [r["id"] for r in reply["results"]]


@pytest.fixture
def projects(conn, locations, new_journal):
    """Sessions in nested projects under a fake home, plus one directly under home."""
    made = {}
    for name in ("Apps/prjct", "Apps/prjct/prjct-be", "Apps/prjct/prjct-fe", "Apps/fluenty", "Apps"):
        j = new_journal(name)
        made[name] = (j, j.user(f"deploy pipeline notes for {name.replace('/', ' ')}"))
    index_all(conn, locations)
    return made


def test_project_scope_returns_exactly_its_project(conn, locations, home, projects):
    reply = query.search(conn, locations, "deploy pipeline", cwd=str(home / "Apps/prjct/prjct-be"))
    assert reply["scope"] == "project" and reply["root"] == str(home / "Apps/prjct")
    expected = {projects[n][1] for n in ("Apps/prjct", "Apps/prjct/prjct-be", "Apps/prjct/prjct-fe")}
    assert set(ids(reply)) == expected
    assert projects["Apps/fluenty"][1] not in ids(reply)
    assert projects["Apps"][1] not in ids(reply)


def test_global_scope_returns_every_project(conn, locations, home, projects):
    reply = query.search(conn, locations, "deploy pipeline", scope="global", cwd=str(home / "Apps/fluenty"))
    assert set(ids(reply)) == {e for _, e in projects.values()}
    assert reply["scope"] == "global" and reply["root"] is None


def test_direct_child_of_home_is_a_project_only_when_it_is_the_cwd(conn, locations, home, projects):
    reply = query.search(conn, locations, "deploy", cwd=str(home / "Apps"))
    assert reply["root"] == str(home / "Apps")
    assert len(ids(reply)) == 5
    inner = query.search(conn, locations, "deploy", cwd=str(home / "Apps/fluenty"))
    assert ids(inner) == [projects["Apps/fluenty"][1]]


def test_home_itself_never_makes_a_project_of_everything(conn, locations, home, new_journal, projects):
    j = new_journal(str(home))
    at_home = j.user("deploy from home")
    index_all(conn, locations)
    reply = query.search(conn, locations, "deploy", cwd=str(home))
    assert ids(reply) == [at_home]


def test_a_session_above_home_never_joins_the_projects_under_home(conn, locations, home, new_journal):
    above = new_journal(str(home.parent)).user("deploy from above home")
    a = new_journal("Apps/a").user("deploy from a")
    b = new_journal("Apps/b").user("deploy from b")
    index_all(conn, locations)
    reply = query.search(conn, locations, "deploy", cwd=str(home / "Apps/a"))
    assert reply["root"] == str(home / "Apps/a")
    assert ids(reply) == [a]
    assert b not in ids(reply) and above not in ids(reply)


def test_a_folder_above_home_is_its_own_exact_project(conn, locations, home, new_journal):
    above = new_journal(str(home.parent)).user("deploy from above home")
    below = new_journal("Apps/a").user("deploy from a")
    index_all(conn, locations)
    reply = query.search(conn, locations, "deploy", cwd=str(home.parent))
    assert ids(reply) == [above]
    assert below not in ids(reply)


def test_like_wildcards_in_the_root_are_escaped(conn, locations, home, new_journal):
    mine = new_journal("Apps/my_proj")
    mine_id = mine.user("shared term kestrel")
    other = new_journal("Apps/myXproj/sub")
    other_id = other.user("shared term kestrel")
    index_all(conn, locations)
    reply = query.search(conn, locations, "kestrel", cwd=str(home / "Apps/my_proj"))
    assert ids(reply) == [mine_id]
    assert other_id not in ids(reply)


def test_session_scope_by_id_and_by_journal(conn, locations, home, projects):
    j, entry = projects["Apps/fluenty"]
    by_id = query.search(conn, locations, "deploy", scope="session", session_id=j.session_id)
    by_journal = query.search(conn, locations, "deploy", scope="session", journal_path=str(j.path))
    assert ids(by_id) == ids(by_journal) == [entry]


def test_scope_wider_than_allowed_is_refused_not_narrowed(conn, locations, home, projects):
    with pytest.raises(UserError, match="wider than allowed"):
        query.search(conn, locations, "deploy", scope="global", cwd=str(home / "Apps/prjct"), max_scope="project")
    with pytest.raises(UserError, match="wider than allowed"):
        query.read(conn, locations, projects["Apps/fluenty"][1], scope="global", max_scope="project")
    allowed = query.search(
        conn, locations, "deploy", scope="project", cwd=str(home / "Apps/prjct"), max_scope="project"
    )
    assert allowed["results"]


def test_a_scope_missing_what_its_rule_compares_is_refused_when_built():
    with pytest.raises(ValueError, match="needs its root"):
        scope.Scope("project")
    with pytest.raises(ValueError, match="needs its session_id"):
        scope.Scope("session")
    assert scope.Scope("project", root="/home/u/Apps/prjct").predicate()[1][0] == "/home/u/Apps/prjct"
    assert scope.Scope("session", session_id="0b6e6f2c").term() is not None
    assert scope.Scope("global").predicate() == ("1", [])


def test_unknown_scope_is_an_error_with_an_example(conn, locations):
    with pytest.raises(UserError, match="e.g. scope=project"):
        query.search(conn, locations, "x", scope="everything")


def test_read_respects_the_project_scope(conn, locations, home, projects):
    other = projects["Apps/fluenty"][1]
    blocked = query.read(conn, locations, other, cwd=str(home / "Apps/prjct"))
    assert blocked["status"] == "not_found"
    allowed = query.read(conn, locations, other, cwd=str(home / "Apps/fluenty"))
    assert allowed["status"] == "ok" and "fluenty" in allowed["text"]


def test_hits_carry_the_contract_keys(conn, locations, home, projects):
    reply = query.search(conn, locations, "deploy", scope="global")
    assert reply["action"] == "search" and reply["match"] == "all"
    for hit in reply["results"]:
        assert ENTRY_KEYS <= set(hit) and "excerpt" in hit and isinstance(hit["score"], float)
        assert not {"cwd", "journal"} & set(hit), "what belongs to the session is in the sessions map, once"
        assert set(reply["sessions"][hit["session_id"]]) == SESSION_KEYS
    assert set(reply["sessions"]) == {hit["session_id"] for hit in reply["results"]}
    assert reply["indexing"]["complete"] is True


def test_secret_is_not_a_search_term_and_not_in_the_read(conn, locations, new_journal, home):
    j = new_journal()
    e = j.tool_result("bash", f"export GITHUB_TOKEN={SECRET}\nconfigured the heron service")
    index_all(conn, locations)
    cwd = str(home / "Apps/prjct")
    assert query.search(conn, locations, SECRET.split("_", 1)[1], cwd=cwd)["results"] == []
    whole = query.search(conn, locations, SECRET, cwd=cwd)
    assert whole["match"] == "any", "only the visible prefix may match, never the secret itself"
    found = query.search(conn, locations, "heron", cwd=cwd)
    assert ids(found) == [e] and SECRET not in found["results"][0]["excerpt"]
    page = query.read(conn, locations, e, cwd=cwd)
    assert "heron service" in page["text"]
    assert SECRET not in page["text"] and SECRET[4:] not in page["text"]


def test_shrunk_journal_leaves_none_of_its_old_terms_searchable(conn, locations, new_journal, home):
    j = new_journal()
    j.user("stays: ibis")
    size = j.path.stat().st_size
    j.user("goes: flamingo")
    index_all(conn, locations)
    with open(j.path, "r+b") as fh:
        fh.truncate(size)
    index_all(conn, locations)
    cwd = str(home / "Apps/prjct")
    assert query.search(conn, locations, "flamingo", scope="global")["results"] == []
    assert len(query.search(conn, locations, "ibis", cwd=cwd)["results"]) == 1


def test_deleted_journal_leaves_no_search_terms(conn, locations, new_journal):
    j = new_journal()
    j.user("vanishing pelican")
    index_all(conn, locations)
    assert query.search(conn, locations, "pelican", scope="global")["results"]
    j.path.unlink()
    index_all(conn, locations)
    assert query.search(conn, locations, "pelican", scope="global")["results"] == []


def test_line_rewritten_in_place_reads_as_unavailable_never_as_other_text(conn, locations, new_journal, home):
    j = new_journal()
    first = j.user("the original answer is cormorant")
    j.user("second entry")
    index_all(conn, locations)
    lines = j.path.read_bytes().splitlines(keepends=True)
    rewritten = lines[1].replace(b"cormorant", b"albatross")
    moved = lines[2].replace(b'"second entry"', b'"the original answer is cormorant"')
    j.path.write_bytes(lines[0] + rewritten + moved)
    cwd = str(home / "Apps/prjct")
    page = query.read(conn, locations, first, cwd=cwd)
    assert page["status"] == "unavailable"
    assert "text" not in page
    hit = query.search(conn, locations, "cormorant", cwd=cwd)["results"][0]
    assert hit["excerpt"].startswith(reread.UNAVAILABLE[:-1]) and hit["stale"] is True
    assert "albatross" not in json.dumps(hit)
    assert conn.execute("SELECT needs_reindex FROM files").fetchone()[0] == 1
    index_all(conn, locations)
    assert query.read(conn, locations, first, cwd=cwd)["status"] == "ok"
    assert "albatross" in query.read(conn, locations, first, cwd=cwd)["text"]


def test_migrated_journal_rewritten_longer_reads_unavailable_before_reindex(conn, locations, new_journal, home):
    j = new_journal(version=1)
    j.user("version one words")
    j.user("more version one words")
    index_all(conn, locations)
    lines = j.path.read_bytes().splitlines()
    header = json.loads(lines[0]) | {"version": 3}
    migrated = [json.dumps(header).encode()]
    parent = None
    for k, raw in enumerate(lines[1:]):
        obj = json.loads(raw) | {"id": f"{k:08x}", "parentId": parent}
        parent = obj["id"]
        migrated.append(json.dumps(obj).encode())
    j.path.write_bytes(b"\n".join(migrated) + b"\n")
    assert query.read(conn, locations, "L3", cwd=str(home / "Apps/prjct"))["status"] == "unavailable"


def test_missing_journal_reads_as_unavailable(conn, locations, new_journal, home):
    j = new_journal()
    e = j.user("soon gone")
    index_all(conn, locations)
    j.path.unlink()
    page = query.read(conn, locations, e, cwd=str(home / "Apps/prjct"))
    assert page["status"] == "unavailable" and "no longer exists" in page["reason"]


@pytest.mark.parametrize(
    "text",
    ['"unbalanced quote', "cat OR dog", "NEAR(a b)", "pre*", "-minus", "col:value", "AND", "(((", "^start", "'single'"],
)
def test_fts_syntax_in_a_query_is_only_text(conn, locations, new_journal, text):
    j = new_journal()
    j.user(f"literal {text} inside")
    index_all(conn, locations)
    reply = query.search(conn, locations, text, scope="global")
    assert reply["results"], text


def test_a_query_over_the_word_limit_is_refused_with_an_example(conn, locations, new_journal):
    j = new_journal()
    j.user("kestrel sighting")
    index_all(conn, locations)
    words = ["kestrel"] + [f"w{n}x" for n in range(MAX_TERMS)]
    with pytest.raises(UserError, match=f"{MAX_TERMS + 1} distinct words; at most {MAX_TERMS}.*e.g."):
        query.search(conn, locations, " ".join(words), scope="global")
    within = query.search(conn, locations, " ".join(words[:MAX_TERMS]), scope="global")
    assert within["match"] == "any" and len(within["results"]) == 1


def test_repeated_words_count_once_toward_the_word_limit(conn, locations, new_journal):
    j = new_journal()
    e = j.user("kestrel sighting")
    index_all(conn, locations)
    reply = query.search(conn, locations, "kestrel " * (10 * MAX_TERMS), scope="global")
    assert ids(reply) == [e]


def test_a_pasted_error_message_is_within_the_word_limit(conn, locations, new_journal):
    paste = (
        'Traceback (most recent call last): File "/home/u/Apps/prjct/app/main.py", line 42, in <module> '
        'from app.db import connect File "/home/u/Apps/prjct/app/db.py", line 7, in connect '
        'raise RuntimeError("database is locked") RuntimeError: database is locked'
    )
    j = new_journal()
    e = j.tool_result("bash", paste)
    index_all(conn, locations)
    assert ids(query.search(conn, locations, paste, scope="global")) == [e]


SLOW_SQL = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c {}) SELECT count(*) FROM c"


def test_sql_past_the_time_budget_stops_with_a_clear_error(conn):
    started = time.monotonic()
    with pytest.raises(UserError, match="took longer than 0.05 s and was stopped.*e.g."):
        with query.time_budget(conn, 0.05):
            conn.execute(SLOW_SQL.format("")).fetchone()  # never ends by itself
    assert time.monotonic() - started < 10


def test_the_time_budget_is_removed_from_the_connection_after_its_block(conn):
    with query.time_budget(conn, 0.0):
        pass
    # The deadline has passed: a handler left behind would stop this query after 10,000 steps.
    assert conn.execute(SLOW_SQL.format("LIMIT 200000")).fetchone()[0] == 200000


def test_a_search_runs_within_the_time_budget(conn, locations, new_journal, monkeypatch):
    j = new_journal()
    words = [f"w{n}x" for n in range(40)]
    for n in range(200):
        j.user(" ".join(words[n % 40 :] + words[: n % 7]))
    index_all(conn, locations)
    monkeypatch.setattr(query, "QUERY_SECONDS", 0.0)
    with pytest.raises(UserError, match="took longer than 0 s"):
        query.search(conn, locations, " ".join(words) + " absent", scope="global")
    monkeypatch.setattr(query, "QUERY_SECONDS", 60.0)
    assert query.search(conn, locations, " ".join(words) + " absent", scope="global")["match"] == "any"


def test_query_without_letters_or_digits_lists_recent(conn, locations, new_journal):
    j = new_journal()
    j.user("something")
    index_all(conn, locations)
    reply = query.search(conn, locations, '"* - :', scope="global")
    assert reply["match"] == "recent" and len(reply["results"]) == 1


def test_all_terms_first_then_any_with_a_hint(conn, locations, new_journal):
    j = new_journal()
    both = j.user("puffin and gannet together")
    only = j.user("just a puffin")
    index_all(conn, locations)
    reply = query.search(conn, locations, "puffin gannet", scope="global")
    assert reply["match"] == "all" and ids(reply) == [both] and "hint" not in reply
    fallback = query.search(conn, locations, "gannet skua", scope="global")
    assert fallback["match"] == "any" and "any" in fallback["hint"]
    assert ids(fallback) == [both]
    assert only not in ids(fallback)


def test_recency_orders_equally_relevant_entries(conn, locations, new_journal):
    filler = new_journal("Apps/c")
    for k in range(20):
        filler.user(f"unrelated filler {k}")
    old = new_journal("Apps/a", start=datetime.now(UTC) - timedelta(days=60))
    old_id = old.user("identical words about lemurs.")  # the same words, not the same text (which would fold)
    new = new_journal("Apps/b", start=datetime.now(UTC) - timedelta(days=1))
    new_id = new.user("identical words about lemurs!")
    index_all(conn, locations)
    reply = query.search(conn, locations, "lemurs", scope="global")
    assert ids(reply) == [new_id, old_id]
    assert reply["results"][0]["score"] > reply["results"][1]["score"] * 2


def test_a_short_entry_holding_every_term_ranks_above_a_long_one(conn, locations, new_journal):
    j = new_journal()
    long_id = j.tool_result("bash", "ocelot margay " + " ".join(f"line{k}" for k in range(3000)))
    short_id = j.user("ocelot and margay in one sentence")
    neither = j.user("an unrelated note")
    index_all(conn, locations)
    reply = query.search(conn, locations, "ocelot margay", scope="global")
    assert ids(reply) == [short_id, long_id]
    assert neither not in ids(reply)
    assert reply["results"][0]["score"] > reply["results"][1]["score"] > 0


def test_any_match_ranks_an_entry_holding_the_rarer_term_first(conn, locations, new_journal):
    j = new_journal()
    for k in range(30):
        j.user(f"common heron sighting {k}")
    rare_id = j.user("a bittern sighting")
    index_all(conn, locations)
    reply = query.search(conn, locations, "heron bittern egret", scope="global", limit=50)
    assert reply["match"] == "any"
    assert ids(reply)[0] == rare_id
    assert len(ids(reply)) == 31


def test_a_letter_fts5_treats_as_a_separator_splits_the_query_term(conn, locations, new_journal):
    j = new_journal()
    joined = "quoll\u19b0numbat"
    entry = j.user(f"marsupials {joined} here")
    other = j.user("marsupials elsewhere")
    index_all(conn, locations)
    assert query_terms(joined) == ["quoll", "numbat"]
    reply = query.search(conn, locations, joined, scope="global")
    assert reply["match"] == "all" and ids(reply) == [entry]
    assert other not in ids(reply)


def test_entry_statistics_older_than_the_index_never_break_a_search(conn, locations, new_journal):
    j = new_journal()
    for k in range(5):
        j.user(f"capybara note {k}")
    index_all(conn, locations)
    assert query._idf(conn, "capybara", 0) == 1e-6  # a count taken before these entries existed
    stats = query.collection_stats(conn)
    stats.at, stats.high, stats.count, stats.average, stats.taken = time.monotonic(), -1, 20_000, 0.0, True
    reply = query.search(conn, locations, "capybara", scope="global")
    assert len(reply["results"]) == 5
    assert all(r["score"] > 0 for r in reply["results"])


def test_entry_statistics_follow_a_small_index_and_sample_a_large_ones_latest(
    conn, locations, new_journal, monkeypatch
):
    j = new_journal()
    j.user("a" * 100)
    index_all(conn, locations)
    assert query._collection_stats(conn) == (1, 100.0)
    j.user("b" * 300)
    index_all(conn, locations)
    assert query._collection_stats(conn) == (2, 200.0), "a small index is counted again when it grows"
    monkeypatch.setattr(query, "STATS_EXACT_BELOW", 1)
    monkeypatch.setattr(query, "STATS_SAMPLE", 1)
    j.user("c" * 50)
    index_all(conn, locations)
    assert query._collection_stats(conn) == (2, 200.0), "a large index is not counted again within the minute"
    monkeypatch.setattr(query, "STATS_SECONDS", 0.0)
    assert query._collection_stats(conn) == (3, 50.0), "then counted, its average from its latest entries"


def test_the_term_index_keeps_no_positions(conn, locations, new_journal):
    j = new_journal()
    j.user("alpha beta gamma")
    index_all(conn, locations)
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'entries_fts'").fetchone()[0]
    assert "detail=none" in sql
    with pytest.raises(Exception, match="phrase"):
        conn.execute("SELECT rowid FROM entries_fts WHERE entries_fts MATCH '\"alpha beta\"'").fetchall()


def test_no_query_lists_newest_first(conn, locations, new_journal):
    j = new_journal()
    a = j.user("first")
    b = j.user("second")
    index_all(conn, locations)
    reply = query.search(conn, locations, None, scope="global")
    assert reply["match"] == "recent" and ids(reply) == [b, a]
    assert reply["results"][0]["excerpt"] == "second"


@pytest.fixture
def new_york(monkeypatch):
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_day_bounds_are_the_users_local_midnight(conn, locations, new_journal, new_york):
    j = new_journal(start=datetime(2026, 3, 15, 3, 59, 0, tzinfo=UTC))
    before = j.user("local march 14 evening")
    j.now = datetime(2026, 3, 15, 4, 0, 0, tzinfo=UTC) - timedelta(seconds=1)
    after = j.user("local march 15 just after midnight")
    index_all(conn, locations)
    day15 = query.search(conn, locations, "local", scope="global", since="2026-03-15", until="2026-03-15")
    assert ids(day15) == [after]
    day14 = query.search(conn, locations, "local", scope="global", until="2026-03-14")
    assert ids(day14) == [before]
    assert parse_bound("2026-03-15", end=True, name="until") == "2026-03-16T03:59:59.999Z"


def test_since_takes_a_full_iso_datetime_not_only_a_day(conn, locations, new_journal):
    j = new_journal(start=datetime(2026, 3, 15, 12, 0, 0, tzinfo=UTC))
    a = j.user(
        "stamp one",
    )
    j.now += timedelta(hours=2)
    b = j.user("stamp two")
    index_all(conn, locations)
    reply = query.search(conn, locations, "stamp", scope="global", since="2026-03-15T13:00:00Z")
    assert ids(reply) == [b] and a not in ids(reply)


@pytest.mark.parametrize("bad", ["yesterday", "2026-13-01", "15/03/2026", "2026-03-15T25:00"])
def test_bad_date_is_an_error_with_an_example(conn, locations, bad):
    with pytest.raises(UserError, match=r"use YYYY-MM-DD or an ISO date-time \(e.g. since=2026-03-15, or "):
        query.search(conn, locations, "x", scope="global", since=bad)


def test_kind_filter_and_unknown_kind(conn, locations, new_journal):
    j = new_journal()
    j.user("grebe question")
    tr = j.tool_result("bash", "grebe output")
    index_all(conn, locations)
    reply = query.search(conn, locations, "grebe", scope="global", kinds=["tool_result"])
    assert ids(reply) == [tr]
    with pytest.raises(UserError, match="unknown kind 'tool'"):
        query.search(conn, locations, "grebe", scope="global", kinds=["tool"])


@pytest.mark.parametrize("bad", [0, 101, "ten", -1])
def test_bad_limit_is_an_error(conn, locations, bad):
    with pytest.raises(UserError, match="limit must be"):
        query.search(conn, locations, "x", scope="global", limit=bad)


def test_limit_caps_the_results(conn, locations, new_journal):
    j = new_journal()
    for k in range(15):
        j.user(f"repeated term swift {k}")
    index_all(conn, locations)
    assert len(query.search(conn, locations, "swift", scope="global")["results"]) == 10
    assert len(query.search(conn, locations, "swift", scope="global", limit=12)["results"]) == 12


def test_excerpt_is_around_the_first_term_and_short(conn, locations, new_journal):
    j = new_journal()
    filler = "padding words here " * 200
    j.tool_result("read", filler + " the toucan appears here " + filler)
    index_all(conn, locations)
    hit = query.search(conn, locations, "toucan", scope="global")["results"][0]
    assert "toucan" in hit["excerpt"]
    assert len(hit["excerpt"]) <= 310


def test_reading_pages_across_16000_character_boundaries(conn, locations, new_journal, home):
    j = new_journal()
    body = "".join(f"{k:06d}\n" for k in range(6000))
    e = j.tool_result("read", body)
    index_all(conn, locations)
    cwd = str(home / "Apps/prjct")
    first = query.read(conn, locations, e, cwd=cwd)
    assert first["total_chars"] == len(body) == 42000
    assert first["offset"] == 0 and first["next_offset"] == 16000 and len(first["text"]) == 16000
    second = query.read(conn, locations, e, cwd=cwd, offset=first["next_offset"])
    third = query.read(conn, locations, e, cwd=cwd, offset=second["next_offset"])
    assert third["next_offset"] is None and len(third["text"]) == 10000
    assert first["text"] + second["text"] + third["text"] == body
    with pytest.raises(UserError, match="offset must be"):
        query.read(conn, locations, e, cwd=cwd, offset=-1)
    with pytest.raises(UserError, match="past the end"):
        query.read(conn, locations, e, cwd=cwd, offset=50000)


def test_ambiguous_id_across_sessions_lists_candidates(conn, locations, new_journal, home):
    a = new_journal("Apps/prjct")
    b = new_journal("Apps/prjct/prjct-be")
    for j in (a, b):
        j.version = 1
        j.user(f"version one session {j.session_id}")
    index_all(conn, locations)
    cwd = str(home / "Apps/prjct")
    reply = query.read(conn, locations, "L2", cwd=cwd)
    assert reply["status"] == "ambiguous"
    assert {c["session_id"] for c in reply["candidates"]} == {a.session_id, b.session_id}
    assert all({"session_id", "timestamp", "kind", "cwd"} <= set(c) for c in reply["candidates"])
    chosen = query.read(conn, locations, "L2", cwd=cwd, session_id=b.session_id)
    assert chosen["status"] == "ok" and b.session_id in chosen["text"]
    assert a.session_id not in chosen["text"]


def test_version_1_ids_are_readable(conn, locations, new_journal, home):
    j = new_journal(version=1)
    j.user("first v1 line")
    j.assistant("second v1 line")
    index_all(conn, locations)
    page = query.read(conn, locations, "L3", cwd=str(home / "Apps/prjct"))
    assert page["status"] == "ok" and page["text"] == "second v1 line"
    assert page["entry"]["id"] == "L3"


def test_unknown_id_is_not_found(conn, locations, projects, home):
    assert query.read(conn, locations, "ffffffff", scope="global")["status"] == "not_found"


def test_summaries_are_compactions_and_branch_summaries(conn, locations, new_journal):
    j = new_journal()
    j.user("talk about osprey")
    c = j.compaction("## Goal\nosprey migration")
    b = j.branch_summary("abandoned osprey branch")
    index_all(conn, locations)
    recent = query.summaries(conn, locations, None, scope="global")
    assert recent["action"] == "summaries" and ids(recent) == [b, c]
    assert recent["results"][1]["tokens_before"] == 175004
    searched = query.summaries(conn, locations, "migration", scope="global")
    assert ids(searched) == [c]
    with pytest.raises(UserError, match="summaries holds only"):
        query.summaries(conn, locations, None, scope="global", kinds=["user"])


def test_incomplete_index_says_so(conn, locations, new_journal):
    done = new_journal("Apps/a")
    done.user("indexed heron")
    index_journal(conn, done.path)
    waiting = new_journal("Apps/b")
    waiting.user("not yet indexed heron")
    reply = query.search(conn, locations, "heron", scope="global")
    assert reply["indexing"]["complete"] is False
    assert reply["indexing"]["journals_total"] == 2
    assert "may be incomplete" in reply["indexing"]["note"]
    index_all(conn, locations)
    reply = query.search(conn, locations, "heron", scope="global")
    assert reply["indexing"]["complete"] is True and "note" not in reply["indexing"]
    assert reply["indexing"]["journals_indexed"] == reply["indexing"]["journals_total"] == 2


def test_capped_caller_cannot_reach_another_projects_session_by_id(conn, locations, home, projects):
    other = projects["Apps/fluenty"][0]
    own = projects["Apps/prjct/prjct-be"][0]
    cwd = str(home / "Apps/prjct/prjct-be")
    with pytest.raises(UserError, match="not in this project"):
        query.search(
            conn, locations, "deploy", scope="session", session_id=other.session_id, cwd=cwd, max_scope="project"
        )
    allowed = query.search(
        conn, locations, "deploy", scope="session", session_id=own.session_id, cwd=cwd, max_scope="project"
    )
    assert ids(allowed) == [projects["Apps/prjct/prjct-be"][1]]
    anywhere = query.search(conn, locations, "deploy", scope="session", session_id=other.session_id, cwd=cwd)
    assert ids(anywhere) == [projects["Apps/fluenty"][1]]


def test_session_cap_allows_only_the_current_session(conn, locations, home, projects):
    own = projects["Apps/prjct"][0]
    other = projects["Apps/prjct/prjct-be"][0]
    current = query.search(conn, locations, "deploy", scope="session", journal_path=str(own.path), max_scope="session")
    assert ids(current) == [projects["Apps/prjct"][1]]
    with pytest.raises(UserError, match="not the current session"):
        query.search(
            conn,
            locations,
            "deploy",
            scope="session",
            session_id=other.session_id,
            journal_path=str(own.path),
            max_scope="session",
        )


def test_nothing_outside_the_journal_folders_is_read(conn, locations, new_journal, tmp_path, home):
    j = new_journal()
    e = j.user("inside the folders: wombat")
    index_all(conn, locations)
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(j.path.read_bytes())
    conn.execute("UPDATE files SET path = ?", (str(outside),))
    page = query.read(conn, locations, e, cwd=str(home / "Apps/prjct"))
    assert page["status"] == "unavailable" and "outside the journal folders" in page["reason"]
    hit = query.search(conn, locations, "wombat", scope="global")["results"][0]
    assert hit["excerpt"].startswith(reread.UNAVAILABLE[:-1]) and "wombat" not in hit["excerpt"]


def test_scoped_ranking_only_looks_at_the_scopes_entries(conn, locations, home, new_journal):
    mine = new_journal("Apps/mine")
    mine_id = mine.user("common words with a rare marker")
    other = new_journal("Apps/other")
    for k in range(30):
        other.user(f"common words again {k}")
    index_all(conn, locations)
    sc = scope.resolve_scope(conn, "project", cwd=str(home / "Apps/mine"))
    expression = query.fts_expression(["common", "words"], "AND", sc)
    ranked = conn.execute("SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?", (expression,)).fetchall()
    assert len(ranked) == 1
    assert ids(query.search(conn, locations, "common words", cwd=str(home / "Apps/mine"))) == [mine_id]
    everywhere = conn.execute(
        "SELECT COUNT(*) FROM entries_fts WHERE entries_fts MATCH ?",
        (query.fts_expression(["common", "words"], "AND"),),
    ).fetchone()[0]
    assert everywhere == 31


def test_redacted_head_masks_a_secret_that_starts_in_the_shown_part():
    token = "gh" + "p_" + "Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3Hi6"
    text = "x" * 979 + " " + token + "\n" + ("filler line\n" * 20_000)
    head = reread.redacted_head(text, 1000)
    assert len(head) == 1000 and token[:4] in head
    assert token[4:12] not in head
    cut_naively = query.redact(text[:1000])
    assert token[4:12] in cut_naively, "the margin is what masks a secret cut at the edge"
    assert reread.redacted_head("short " + token, 1000) == query.redact("short " + token)


def test_the_project_rule_is_exact_and_case_sensitive_on_every_query(conn, locations, home, new_journal):
    made = {}
    for name in ("Apps/projA", "Apps/projA/sub", "Apps/PROJA/sub", "Apps/projA_x", "Apps/projAB"):
        j = new_journal(name)
        made[name] = (j, j.user(f"deploy pipeline notes for {name.replace('/', ' ')}"))
        j.assistant("noted", usage={"input": 10, "output": 1, "cost": {"total": 0.5}})
    index_all(conn, locations)
    cwd = str(home / "Apps/projA")
    inside = {made[n][0].session_id for n in ("Apps/projA", "Apps/projA/sub")}
    searched = query.search(conn, locations, "deploy pipeline", cwd=cwd)
    assert {r["session_id"] for r in searched["results"]} == inside
    listed = activity.sessions(conn, SessionsRequest.create(cwd=cwd))
    assert {s["session_id"] for s in listed["sessions"]} == inside
    per_session = activity.usage(conn, UsageRequest.create("session", cwd=cwd))
    assert {row["key"] for row in per_session["rows"]} == inside
    for name in ("Apps/PROJA/sub", "Apps/projA_x", "Apps/projAB"):  # other spellings, LIKE's wildcard, a prefix
        assert query.read(conn, locations, made[name][1], cwd=cwd)["status"] == "not_found", name
        assert query.read(conn, locations, made[name][1], cwd=str(home / name))["status"] == "ok", name
    assert query.read(conn, locations, made["Apps/projA/sub"][1], cwd=cwd)["status"] == "ok"


def test_paging_through_a_huge_entry_redacts_it_once_and_a_changed_line_is_never_served(
    conn, locations, new_journal, monkeypatch
):
    j = new_journal("Apps/prjct")
    entry = j.tool_result("bash", "the platypus log line\n" * 60_000 + f"token {SECRET}\n")
    index_all(conn, locations)
    redactions: list[int] = []
    real = reread.redact
    monkeypatch.setattr(reread, "redact", lambda text: redactions.append(len(text)) or real(text))
    first = query.read(conn, locations, entry, cwd=j.cwd)
    total = first["total_chars"]
    pages = [query.read(conn, locations, entry, cwd=j.cwd, offset=offset) for offset in (16_000, 32_000, total - 50)]
    assert [p["status"] for p in pages] == ["ok"] * 3 and "platypus log line" in pages[0]["text"]
    assert "token ghp_[REDACTED]" in pages[-1]["text"] and SECRET not in pages[-1]["text"]
    assert len(redactions) == 1  # one whole redaction for four pages
    j.path.write_bytes(j.path.read_bytes().replace(b"platypus", b"platybus"))  # the same length, other bytes
    changed = query.read(conn, locations, entry, cwd=j.cwd, offset=16_000)
    assert changed["status"] == "unavailable" and "text" not in changed  # the kept text is not served
