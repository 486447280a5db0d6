"""Journal folders as a setting: recorded once in <agent folder>/pi-memory/folders.json, read by every later
resolve (every command, server and plain Datasette), removed with their journals' rows, never the agent's own."""

from __future__ import annotations

import json
import os
import stat

import pytest
from support.real_pi import copy_corpus

from pimem_index import store
from pimem_index.errors import UserError
from pimem_index.index import indexer
from pimem_index.locations import (
    folders_path,
    location_args,
    read_folders,
    record_folders,
    refreshed,
    resolve,
    watch_command,
)
from pimem_index.manage import folders


@pytest.fixture
def elsewhere(agent_dir, tmp_path):
    """Journals the real Pi wrote, in a folder outside the agent folder (another machine's sessions)."""
    return copy_corpus(tmp_path / "old-pi").sessions


def test_a_recorded_folder_is_a_journal_folder_of_every_later_resolve(agent_dir, elsewhere, tmp_path):
    once = tmp_path / "once"
    once.mkdir()
    given = resolve(None, [str(once)])
    assert once in given.sessions_dirs
    record_folders(agent_dir, [str(elsewhere)])
    later = resolve()
    assert later.sessions_dirs == (agent_dir / "sessions", elsewhere)
    assert [(f.path, f.source) for f in later.folders()] == [
        (agent_dir / "sessions", "default"),
        (elsewhere, "recorded"),
    ]
    assert once not in later.sessions_dirs  # a folder given for one run is not kept


def test_folders_json_is_private_and_replaced_atomically(agent_dir, elsewhere, tmp_path):
    os.chmod(agent_dir, 0o755)
    record_folders(agent_dir, [str(elsewhere), str(elsewhere)])
    other = tmp_path / "more"
    other.mkdir()
    added = record_folders(agent_dir, [str(other), str(elsewhere)])
    path = folders_path(agent_dir)
    assert added == [other]
    assert json.loads(path.read_text()) == {"folders": [str(elsewhere), str(other)]}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".folders.json.")) == [
        ".folders.json.lock"
    ]  # no temporary file left behind
    assert record_folders(agent_dir, [str(agent_dir / "sessions")]) == []  # the default folder is never recorded
    assert str(agent_dir / "sessions") not in path.read_text()


def test_a_folder_is_recorded_absolute_from_where_it_was_given(agent_dir, elsewhere, monkeypatch):
    monkeypatch.chdir(elsewhere.parent)
    record_folders(agent_dir, ["sessions"])
    assert read_folders(agent_dir) == (elsewhere,)
    assert not any(not os.path.isabs(d) for d in json.loads(folders_path(agent_dir).read_text())["folders"])


def test_a_long_running_process_picks_up_a_folder_recorded_later(agent_dir, elsewhere):
    running = resolve()
    assert refreshed(running) is running  # nothing changed: the same locations, one stat
    record_folders(agent_dir, [str(elsewhere)])
    now = refreshed(running)
    assert elsewhere in now.sessions_dirs and elsewhere not in running.sessions_dirs
    folders.remove(now, str(elsewhere))
    assert elsewhere not in refreshed(now).sessions_dirs


def test_other_processes_get_given_folders_as_flags_and_read_recorded_ones_themselves(agent_dir, elsewhere, tmp_path):
    once = tmp_path / "once"
    record_folders(agent_dir, [str(elsewhere)])
    locations = resolve(None, [str(once), str(elsewhere)])
    args = location_args(locations)
    assert args.count(str(once)) == 1 and str(elsewhere) not in args
    assert str(elsewhere) not in watch_command(locations, 1.0)


def test_removing_a_folder_takes_its_journals_out_of_the_index_and_keeps_the_agents_own(
    agent_dir, elsewhere, new_journal
):
    own = new_journal()
    own.user("a question in the agent's own folder")
    record_folders(agent_dir, [str(elsewhere)])
    locations = resolve()
    conn = store.open_index(locations.db_path)
    indexer.index_all(conn, locations)
    paths = [p for (p,) in conn.execute("SELECT path FROM files")]
    assert any(p.startswith(str(elsewhere)) for p in paths) and str(own.path) in paths
    removed, dropped = folders.remove(locations, str(elsewhere))
    paths = [p for (p,) in conn.execute("SELECT path FROM files")]
    assert removed == elsewhere and dropped == len(list(elsewhere.rglob("*.jsonl")))
    assert not any(p.startswith(str(elsewhere)) for p in paths) and paths == [str(own.path)]
    assert elsewhere.is_dir() and list(elsewhere.rglob("*.jsonl"))  # the journals stay on disk
    conn.close()


def test_the_default_folder_cannot_be_removed_and_an_unknown_folder_is_a_one_line_error(agent_dir, elsewhere):
    locations = resolve()
    with pytest.raises(UserError) as default:
        folders.remove(locations, str(agent_dir / "sessions"))
    assert "agent's own journal folder" in str(default.value) and "\n" not in str(default.value)
    with pytest.raises(UserError) as unknown:
        folders.remove(locations, str(elsewhere))
    assert "is not a recorded journal folder" in str(unknown.value) and "pimem folders remove" in str(unknown.value)
    assert not folders_path(agent_dir).exists()  # a refused removal writes nothing


def test_adding_a_folder_that_does_not_exist_is_refused(agent_dir, tmp_path):
    with pytest.raises(UserError) as missing:
        folders.add(resolve(), (str(tmp_path / "typo"),))
    assert "does not exist" in str(missing.value) and "pimem folders add" in str(missing.value)
    assert read_folders(agent_dir) == ()


def test_a_malformed_folders_file_is_a_one_line_error_naming_it(agent_dir):
    path = folders_path(agent_dir)
    path.parent.mkdir(parents=True)
    path.write_text('["not", "the shape"]')
    with pytest.raises(UserError) as bad:
        resolve()
    assert str(path) in str(bad.value) and "delete it" in str(bad.value) and "\n" not in str(bad.value)
    path.write_text(json.dumps({"folders": ["/tmp/journals"]}))
    assert resolve().recorded_dirs[0].as_posix() == "/tmp/journals"
