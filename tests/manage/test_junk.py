"""The collector deletes exactly what it previewed, and never a changed, recent or current journal."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from support.indexed import vocab

from pimem_index.errors import UserError
from pimem_index.index.indexer import index_all
from pimem_index.manage import junk

OLD = datetime.now(UTC) - timedelta(days=3)


def session(new_journal, project, *, users=1, replies=3, compact=False, word="filler", old=True, **kw):
    j = new_journal(project, start=OLD if old else None, **kw)
    for k in range(max(users, replies)):
        if k < users:
            j.user(f"{word} question {k}")
        if k < replies:
            j.assistant(f"{word} answer {k}")
    if compact:
        j.compaction(f"{word} summary")
    if old:
        j.set_mtime(OLD)
    return j


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """The test's own temporary folder (the fake home itself lies under the system's /tmp)."""
    folder = tmp_path / "scratch"
    monkeypatch.setenv("PIMEM_TEMP_DIRS", str(folder))
    return folder


@pytest.fixture
def journals(new_journal, scratch):
    return {
        "few_replies": session(new_journal, "Apps/a", replies=1, word="junkone"),
        "temporary": session(new_journal, str(scratch / "project"), replies=5, word="junktwo"),
        "no_user": session(new_journal, "Apps/b", users=0, replies=4, word="junkthree"),
        "compacted": session(new_journal, "Apps/c", replies=1, compact=True, word="keepone"),
        "real_work": session(new_journal, "Apps/d", replies=3, word="keeptwo"),
        "recent": session(new_journal, "Apps/e", replies=1, old=False, word="keepthree"),
        "current": session(new_journal, "Apps/f", replies=1, word="keepfour"),
    }


def paths(items) -> set[str]:
    return {c["path"] for c in items}


def test_preview_lists_junk_with_reasons_and_never_recent_or_current(conn, locations, journals):
    data = junk.preview(conn, locations, current=str(journals["current"].path))
    listed = {c["path"]: c["reason"] for c in data["candidates"]}
    assert set(listed) == {str(journals[k].path) for k in ("few_replies", "temporary", "no_user")}
    assert listed[str(journals["few_replies"].path)] == "got 1 reply"
    assert listed[str(journals["temporary"].path)] == "ran under a temporary folder"
    assert listed[str(journals["no_user"].path)] == "received no user, team or extension message"
    for keep in ("compacted", "real_work", "recent", "current"):
        assert str(journals[keep].path) not in listed
    assert data["total_files"] == 3
    assert data["total_bytes"] == sum(journals[k].path.stat().st_size for k in ("few_replies", "temporary", "no_user"))
    for c in data["candidates"]:
        assert {"path", "cwd", "started", "size", "entries", "reason"} <= set(c)


def test_current_journal_is_a_candidate_only_when_not_named(conn, locations, journals):
    assert str(journals["current"].path) in paths(junk.preview(conn, locations)["candidates"])


def test_confirm_deletes_exactly_the_unchanged_previewed_journals(conn, locations, journals, new_journal):
    junk.preview(conn, locations, current=str(journals["current"].path))
    grown = journals["few_replies"]
    grown.user("I came back to this session")
    unpreviewed = session(new_journal, "Apps/g", replies=0, word="junkfour")
    result = junk.confirm(conn, locations)
    assert paths(result["deleted"]) == {str(journals["temporary"].path), str(journals["no_user"].path)}
    assert {s["path"]: s["skipped"] for s in result["skipped"]} == {str(grown.path): "changed since the preview"}
    assert not journals["temporary"].path.exists() and not journals["no_user"].path.exists()
    assert grown.path.exists() and unpreviewed.path.exists()
    for keep in ("compacted", "real_work", "recent", "current"):
        assert journals[keep].path.exists()
    terms = vocab(conn)
    assert "junktwo" not in terms and "junkthree" not in terms
    assert "junkone" in terms and "keeptwo" in terms
    indexed = {r[0] for r in conn.execute("SELECT path FROM files")}
    assert str(journals["temporary"].path) not in indexed


def test_confirm_without_a_preview_deletes_nothing(conn, locations, journals):
    index_all(conn, locations)
    with pytest.raises(UserError, match="run pimem gc first"):
        junk.confirm(conn, locations)
    assert all(j.path.exists() for j in journals.values())


def test_a_preview_is_used_once(conn, locations, journals):
    junk.preview(conn, locations)
    junk.confirm(conn, locations)
    with pytest.raises(UserError, match="no preview"):
        junk.confirm(conn, locations)


def test_stale_preview_deletes_nothing(conn, locations, journals):
    junk.preview(conn, locations)
    with pytest.raises(UserError, match="minutes old"):
        junk.confirm(conn, locations, now=time.time() + 2 * 3600)
    assert all(j.path.exists() for j in journals.values())


def test_preview_file_is_private(conn, locations, journals):
    junk.preview(conn, locations)
    path = locations.memory_dir / junk.PREVIEW_FILE
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(locations.memory_dir.stat().st_mode & 0o777) == "0o700"


def test_cli_gc_preview_and_confirm_json(agent_dir, journals):
    from click.testing import CliRunner

    from pimem_index.cli import cli

    runner = CliRunner()
    runner.invoke(cli, ["index"])  # gc creates no index (issue 14 item 7): it previews an existing one
    preview = json.loads(runner.invoke(cli, ["gc", "--json", "--current", str(journals["current"].path)]).output)
    assert preview["total_files"] == 3
    readable = runner.invoke(cli, ["gc", "--current", str(journals["current"].path)])
    assert "pimem gc --confirm" in readable.output and "got 1 reply" in readable.output
    confirmed = runner.invoke(cli, ["gc", "--confirm", "--json"])
    assert confirmed.exit_code == 0
    assert len(json.loads(confirmed.output)["deleted"]) == 3
    again = runner.invoke(cli, ["gc", "--confirm"])
    assert again.exit_code == 1 and "no preview" in again.output
