"""`pimem folders list|add|remove`, and every later command reading the recorded folders: `pimem status` counts
and lists them, `pimem read` reads their entries; `--sessions-dir` on another command is for that command only."""

from __future__ import annotations

import json

import pytest
from support.real_pi import copy_corpus

from pimem_index.locations import folders_path
from pimem_index.replies import FoldersReply, conforms


@pytest.fixture
def elsewhere(agent_dir, tmp_path):
    """Journals the real Pi wrote, in a folder outside the agent folder."""
    return copy_corpus(tmp_path / "old-pi")


def status_json(run, *args) -> dict:
    result = run("status", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_folder_added_once_is_counted_and_listed_by_every_later_status(run, elsewhere):
    journals = len(elsewhere.all_journals())
    assert run("index").exit_code == 0
    before = status_json(run)
    assert before["journals_total"] == 0 and str(elsewhere.sessions) not in before["sessions_dirs"]
    added = run("folders", "add", elsewhere.sessions)
    assert added.exit_code == 0 and f"Recorded {elsewhere.sessions}" in added.output
    assert run("index").exit_code == 0
    after = status_json(run)
    assert after["journals_total"] == journals and after["journals_pending"] == 0 and after["sessions"] == journals
    assert {"path": str(elsewhere.sessions), "source": "recorded", "exists": True} in after["folders"]
    text = run("status").output
    assert f"Folder:    {elsewhere.sessions} (recorded)" in text and "Journals:  0 found" not in text


def test_an_entry_of_a_recorded_folder_reads_from_any_later_command(run, elsewhere):
    run("folders", "add", elsewhere.sessions)
    alpha = elsewhere.projects["alpha"]
    hits = json.loads(run("search", "--json", cwd=alpha).output)["results"]
    assert hits
    read = run("read", hits[0]["id"], "--session", hits[0]["session_id"], "--json", cwd=alpha)
    reply = json.loads(read.output)
    assert reply["status"] == "ok" and reply["text"]
    assert "outside the journal folders" not in read.output


def test_a_folder_given_to_another_command_is_for_that_command_only(run, agent_dir, elsewhere):
    assert run("index").exit_code == 0
    once = status_json(run, "--sessions-dir", elsewhere.sessions)
    assert {"path": str(elsewhere.sessions), "source": "given", "exists": True} in once["folders"]
    assert once["journals_total"] == len(elsewhere.all_journals())
    assert str(elsewhere.sessions) not in status_json(run)["sessions_dirs"]
    assert not folders_path(agent_dir).exists()


def test_folders_list_says_where_each_folder_comes_from(run, agent_dir, elsewhere, tmp_path, monkeypatch):
    env_folder = tmp_path / "from-env"
    monkeypatch.setenv("PIMEM_SESSIONS_DIRS", str(env_folder))
    run("folders", "add", elsewhere.sessions)
    listed = run("folders", "list").output.splitlines()
    assert listed == [
        f"{agent_dir / 'sessions'} (the agent's own)",
        f"{elsewhere.sessions} (recorded)",
        f"{env_folder} (PIMEM_SESSIONS_DIRS, missing)",
    ]
    reply = json.loads(run("folders", "list", "--json").output)
    assert conforms(reply, FoldersReply) == []
    assert [f["source"] for f in reply["folders"]] == ["default", "recorded", "environment"]
    assert json.loads(folders_path(agent_dir).read_text()) == {"folders": [str(elsewhere.sessions)]}  # env: not kept


def test_folders_remove_takes_the_folder_and_its_journals_out(run, elsewhere):
    run("folders", "add", elsewhere.sessions)
    run("index")
    removed = run("folders", "remove", elsewhere.sessions)
    count = len(elsewhere.all_journals())
    assert removed.exit_code == 0
    assert f"Removed {elsewhere.sessions} from the journal folders; {count} journals left the index." in removed.output
    after = status_json(run)
    assert after["sessions"] == 0 and str(elsewhere.sessions) not in after["sessions_dirs"]


def test_folders_remove_refuses_the_default_folder_and_names_an_unknown_one_in_one_line(run, agent_dir, tmp_path):
    default = run("folders", "remove", agent_dir / "sessions")
    assert default.exit_code == 1 and "agent's own journal folder" in default.output
    unknown = run("folders", "remove", tmp_path / "never-added")
    assert unknown.exit_code == 1 and "is not a recorded journal folder" in unknown.output
    for result in (default, unknown):
        assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    missing = run("folders", "add", tmp_path / "typo")
    assert missing.exit_code == 1 and "does not exist" in missing.output and "e.g. pimem folders add" in missing.output
