"""Nothing outside the journal folders is opened: links resolving outside are skipped and reported."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner
from support.indexed import vocab
from support.pijournal import Journal

from pimem_index import store
from pimem_index.cli import cli
from pimem_index.index.indexer import index_all
from pimem_index.locations import resolve
from pimem_index.manage.status import status as index_status
from pimem_index.search import query

WORD = "xylophonequartz"


@pytest.fixture
def outside_journal(tmp_path, home):
    """A valid-looking journal outside the journal folders, holding a unique word: a failure
    to keep it out shows as a search hit."""
    j = Journal(tmp_path / "elsewhere", str(home / "Apps/outproj"))
    j.user(f"the {WORD} must never be indexed")
    return j


@pytest.fixture
def beside(new_journal):
    """A normal journal in the same project folder as the links."""
    j = new_journal("Apps/prjct")
    j.user("an ordinary pelican note")
    return j


def indexed_paths(conn) -> set[str]:
    return {r[0] for r in conn.execute("SELECT path FROM files")}


def hits(conn, locations, word) -> list:
    """The hits, each with its session's journal and folder (from the reply's `sessions` map)."""
    reply = query.search(conn, locations, word, scope="global")
    return [{**hit, **reply["sessions"][hit["session_id"]]} for hit in reply["results"]]


def test_a_symlinked_journal_pointing_outside_is_never_indexed_and_is_reported(
    conn, locations, outside_journal, beside
):
    link = beside.path.parent / "outside.jsonl"
    link.symlink_to(outside_journal.path)
    report = index_all(conn, locations)
    assert indexed_paths(conn) == {str(beside.path)}
    assert report.bytes_read == beside.path.stat().st_size and report.outside == 1
    assert hits(conn, locations, WORD) == [] and WORD not in vocab(conn)
    assert [h["id"] for h in hits(conn, locations, "pelican")]
    assert index_status(conn, locations)["journals_outside"] == [str(link)]


def test_a_symlinked_folder_pointing_outside_is_never_walked_and_is_reported(
    conn, locations, sessions_dir, outside_journal, beside
):
    link = sessions_dir / "--linked-folder--"
    link.symlink_to(outside_journal.path.parent, target_is_directory=True)
    report = index_all(conn, locations)
    assert indexed_paths(conn) == {str(beside.path)} and report.outside == 1
    assert hits(conn, locations, WORD) == [] and WORD not in vocab(conn)
    assert index_status(conn, locations)["journals_outside"] == [str(link)]


def test_rows_of_a_journal_replaced_by_a_link_outside_are_removed(
    conn, locations, outside_journal, beside, new_journal
):
    replaced = new_journal("Apps/prjct")
    replaced.user("a heron that was here first")
    index_all(conn, locations)
    assert str(replaced.path) in indexed_paths(conn)
    replaced.path.unlink()
    replaced.path.symlink_to(outside_journal.path)
    report = index_all(conn, locations)
    assert indexed_paths(conn) == {str(beside.path)} and report.removed == 1
    assert hits(conn, locations, WORD) == [] and hits(conn, locations, "heron") == []
    assert [h["id"] for h in hits(conn, locations, "pelican")]


def test_a_symlink_inside_the_journal_folders_is_indexed_once(conn, locations, beside):
    alias = beside.path.parent.parent / "alias.jsonl"
    alias.symlink_to(beside.path)
    report = index_all(conn, locations)
    assert indexed_paths(conn) == {str(beside.path)} and report.outside == 0
    assert len(hits(conn, locations, "pelican")) == 1
    assert index_status(conn, locations)["journals_outside"] == []


def test_a_journal_folder_that_is_itself_a_link_is_indexed(tmp_path, agent_dir, home):
    real = tmp_path / "real-sessions"
    j = Journal(real, str(home / "Apps/prjct"))
    j.user("a linked folder's puffin")
    linked = tmp_path / "linked-sessions"
    linked.symlink_to(real, target_is_directory=True)
    locations = resolve(sessions_dirs=[str(linked)])
    conn = store.open_index(locations.db_path)
    report = index_all(conn, locations)
    assert report.files == 1 and report.outside == 0
    assert [h["journal"] for h in hits(conn, locations, "puffin")] == [str(linked / j.path.relative_to(real))]


def test_pimem_status_lists_each_link_outside_on_its_own_line(locations, outside_journal, beside):
    link = beside.path.parent / "outside.jsonl"
    link.symlink_to(outside_journal.path)
    runner = CliRunner()
    report = json.loads(runner.invoke(cli, ["index", "--json"]).output)
    assert report["outside"] == 1 and report["files"] == 1
    status = json.loads(runner.invoke(cli, ["status", "--json"]).output)
    assert status["journals_outside"] == [str(link)] and status["journals_pending"] == 0
    text = runner.invoke(cli, ["status"]).output.splitlines()
    assert [line for line in text if str(link) in line] == [
        f"Outside:   {link} (a link resolving outside the journal folders: not read)"
    ]
    assert not any(str(beside.path) in line for line in text)
    assert os.path.islink(link)


def test_a_journal_relinked_outside_is_refused_at_once_though_the_folders_real_paths_are_reused(
    locations, beside, outside_journal
):
    path = str(beside.path)  # rereads ask with the indexed path as it is stored: a str
    assert locations.contains(path) and locations.contains(path)  # the second asks the folders' cache
    os.replace(path, path + ".moved")
    os.symlink(outside_journal.path, path)
    assert not locations.contains(path)
    assert not locations.contains(beside.path)
