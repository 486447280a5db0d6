"""The pimem command as a user runs it: output, JSON shapes, exit codes and one-line errors."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from pimem_index import db
from pimem_index.cli import cli
from pimem_index.errors import UserError

SECRET = "sk-" + "ant-" + "api03-" + "Hq7Lm2Xv9Rt4Wz8Kp3Nb6Yc1Df5Gs0Ja"


@pytest.fixture
def run(agent_dir):
    runner = CliRunner()

    def invoke(*args, cwd=None):
        old = os.getcwd()
        if cwd:
            os.chdir(cwd)
        try:
            return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)
        finally:
            os.chdir(old)

    return invoke


@pytest.fixture
def populated(new_journal, home, tmp_path):
    """Two projects and an extra journal folder given with --sessions-dir."""
    a = new_journal("Apps/prjct")
    a.user("the migration failed on table widgets")
    a.tool_result("bash", f"ANTHROPIC_API_KEY={SECRET}\nmigration log: widgets table locked")
    a.compaction("## Goal\nfix widgets migration")
    b = new_journal("Apps/other")
    b.user("unrelated widgets chatter")
    from pijournal import Journal

    extra = Journal(tmp_path / "extra", str(home / "Apps/prjct"), header=True)
    extra.user("from the extra folder about widgets")
    return {"a": a, "b": b, "extra": extra, "extra_dir": tmp_path / "extra"}


def count_entries_independently(paths) -> int:
    """Count conversation lines straight from the journal files, without pimem_index."""
    total = 0
    for path in paths:
        for raw in open(path, "rb"):
            obj = json.loads(raw)
            if obj.get("type") in ("compaction", "branch_summary", "custom_message"):
                total += 1
            elif obj.get("type") == "message" and obj["message"].get("role") in (
                    "user", "assistant", "toolResult", "bashExecution", "custom", "hookMessage"):
                total += 1
    return total


def test_index_json_reports_what_it_indexed(run, populated):
    result = run("index", "--sessions-dir", populated["extra_dir"], "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert {"files", "entries_added", "bytes_read", "seconds"} <= set(report)
    assert report["files"] == 3 and report["entries_added"] == 5
    assert report["bytes_read"] == sum(populated[k].path.stat().st_size for k in ("a", "b", "extra"))
    again = json.loads(run("index", "--sessions-dir", populated["extra_dir"], "--json").output)
    assert again["entries_added"] == 0 and again["files"] == 0


def test_status_agrees_with_an_independent_count(run, populated):
    run("index", "--sessions-dir", populated["extra_dir"])
    status = json.loads(run("status", "--sessions-dir", populated["extra_dir"], "--json").output)
    paths = [populated[k].path for k in ("a", "b", "extra")]
    assert status["entries"] == count_entries_independently(paths) == 5
    assert status["sessions"] == 3 and status["summaries"] == 1
    assert status["journals_total"] == 3 and status["journals_pending"] == 0
    assert status["indexed_bytes"] == sum(p.stat().st_size for p in paths)
    assert status["schema_version"] >= 1 and status["db_bytes"] > 0
    populated["a"].user("one more")
    pending = json.loads(run("status", "--sessions-dir", populated["extra_dir"], "--json").output)
    assert pending["journals_pending"] == 1


def test_status_without_extra_folder_does_not_count_it(run, populated):
    run("index")
    status = json.loads(run("status", "--json").output)
    assert status["journals_total"] == 2


def test_sessions_dirs_from_the_environment(run, populated, monkeypatch):
    monkeypatch.setenv("PIMEM_SESSIONS_DIRS", str(populated["extra_dir"]))
    run("index")
    assert json.loads(run("status", "--json").output)["journals_total"] == 3


def test_db_option_and_environment_choose_the_index(run, populated, tmp_path, monkeypatch):
    target = tmp_path / "elsewhere" / "idx.sqlite"
    run("index", "--db", target)
    assert target.exists()
    monkeypatch.setenv("PIMEM_DB", str(target))
    assert json.loads(run("status", "--json").output)["db"] == str(target)


def test_search_json_is_the_contract_shape(run, populated, home):
    run("index")
    (home / "Apps/prjct").mkdir(parents=True)
    result = run("search", "widgets", "--json", cwd=home / "Apps/prjct")
    data = json.loads(result.output)
    assert data["action"] == "search" and data["scope"] == "project"
    assert data["root"] == str(home / "Apps/prjct")
    assert data["match"] == "all" and data["indexing"]["complete"] is True
    assert {r["cwd"] for r in data["results"]} == {str(home / "Apps/prjct")}
    assert SECRET not in result.output


def test_search_readable_output_has_one_block_per_result(run, populated, home):
    run("index")
    result = run("search", "migration", "--cwd", home / "Apps/prjct")
    assert result.exit_code == 0
    assert "match: all" in result.output
    assert result.output.count("  id ") == 3
    assert SECRET not in result.output and "[REDACTED]" in result.output


def test_read_prints_the_redacted_text(run, populated, home):
    run("index")
    hit = json.loads(run("search", "locked", "--json", "--cwd", home / "Apps/prjct").output)["results"][0]
    result = run("read", hit["id"], "--cwd", home / "Apps/prjct")
    assert result.exit_code == 0
    assert "widgets table locked" in result.output
    assert SECRET not in result.output
    data = json.loads(run("read", hit["id"], "--json", "--cwd", home / "Apps/prjct").output)
    assert data["status"] == "ok" and data["next_offset"] is None


def test_summaries_command(run, populated, home):
    run("index")
    data = json.loads(run("summaries", "--json", "--cwd", home / "Apps/prjct").output)
    assert data["action"] == "summaries"
    assert [r["kind"] for r in data["results"]] == ["compaction"]


@pytest.mark.parametrize("args, message", [
    (["search", "x", "--since", "last week"], "YYYY-MM-DD"),
    (["search", "x", "--kind", "toolresult"], "unknown kind"),
    (["search", "x", "--scope", "world"], "unknown scope"),
    (["search", "x", "--limit", "500"], "limit must be"),
    (["read", "abc", "--offset", "-5"], "offset must be"),
    (["read", "nosuchid"], "no entry nosuchid"),
    (["index", "/nonexistent/file.jsonl"], "no such journal"),
])
def test_user_errors_are_one_line_and_exit_1(run, populated, args, message):
    run("index")
    result = run(*args)
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_usage_errors_exit_2(run):
    assert run("search", "--limit").exit_code == 2
    assert run("frobnicate").exit_code == 2


def test_not_an_index_is_a_clear_error(run, tmp_path):
    bogus = tmp_path / "notes.txt"
    bogus.write_text("these are my notes, not a database " * 100)
    result = run("status", "--db", bogus)
    assert result.exit_code == 1
    assert "is not a pimem index" in result.output
    assert bogus.read_text().startswith("these are my notes")


def test_rebuild_deletes_and_builds_again(run, populated, locations):
    run("index")
    wal = f"{locations.db_path}-wal"
    result = run("rebuild", "--json")
    assert result.exit_code == 0
    assert json.loads(result.output)["entries_added"] == 4
    assert json.loads(run("status", "--json").output)["entries"] == 4
    assert os.path.exists(locations.db_path)
    assert not os.path.exists(wal) or os.path.getsize(wal) >= 0


def test_too_old_sqlite_names_the_fix():
    with pytest.raises(UserError, match="pip install pysqlite3-binary"):
        db.check_sqlite_version((3, 40, 1))
    db.check_sqlite_version((3, 43, 0))


def test_help_lists_every_command(run):
    out = run("--help").output
    for command in ("index", "status", "search", "read", "summaries", "rebuild", "serve", "token"):
        assert f"  {command}" in out


def test_pi_install_writes_extension_and_private_settings_then_uninstall_removes_them(run, agent_dir):
    result = run("pi", "install", "--url", "http://127.0.0.1:8123/")
    assert result.exit_code == 0, result.output
    settings = agent_dir / "pi-memory" / "pi-tool.json"
    config = json.loads(settings.read_text())
    assert config["url"] == "http://127.0.0.1:8123" and config["token"].startswith("dstok_")
    assert oct(settings.stat().st_mode & 0o777) == "0o600"
    extensions = list((agent_dir / "extensions").rglob("*.ts"))
    assert len(extensions) == 1 and "memory_context" in extensions[0].read_text()
    removed = run("pi", "uninstall")
    assert removed.exit_code == 0
    assert not settings.exists() and not list((agent_dir / "extensions").rglob("*.ts"))
    assert "was not installed" in run("pi", "uninstall").output


def test_pi_install_refuses_a_url_without_a_scheme(run, agent_dir):
    result = run("pi", "install", "--url", "127.0.0.1:8001")
    assert result.exit_code == 1 and "e.g. --url http://127.0.0.1:8001" in result.output
    assert not (agent_dir / "pi-memory" / "pi-tool.json").exists()


def test_search_indexes_new_lines_first_unless_told_not_to(run, populated, home):
    run("index")
    populated["a"].user("a brand new line about quasars")
    stale = json.loads(run("search", "quasars", "--json", "--no-index", "--cwd", home / "Apps/prjct").output)
    assert stale["results"] == []
    fresh = json.loads(run("search", "quasars", "--json", "--cwd", home / "Apps/prjct").output)
    assert [r["kind"] for r in fresh["results"]] == ["user"]


@pytest.mark.parametrize("make, message", [
    (lambda tmp: tmp / "a-folder", "is a folder"),
    (lambda tmp: tmp / "a-file" / "below-a-file.sqlite", "cannot create the index"),
])
def test_unusable_index_path_is_a_one_line_error(run, tmp_path, make, message):
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_text("not a folder")
    result = run("status", "--db", make(tmp_path))
    assert result.exit_code == 1 and message in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def indexed_paths(locations) -> set[str]:
    if not locations.db_path.exists():
        return set()
    conn = db.connect(str(locations.db_path), readonly=True)
    try:
        return {r[0] for r in conn.execute("SELECT path FROM files")}
    finally:
        conn.close()


@pytest.mark.parametrize("name", ["outside-jsonl", "readme", "link-inside-to-outside", "text-inside"])
def test_index_refuses_a_file_that_is_not_a_journal_in_the_journal_folders(run, populated, locations,
                                                                            tmp_path, sessions_dir, name):
    outside = populated["extra"].path  # a real journal, but its folder was not given
    (sessions_dir / "notes.txt").write_text("not a journal")
    (sessions_dir / "link.jsonl").symlink_to(outside)
    readme = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
    target = {"outside-jsonl": outside, "readme": readme, "link-inside-to-outside": sessions_dir / "link.jsonl",
              "text-inside": sessions_dir / "notes.txt"}[name]
    result = run("index", target)
    assert result.exit_code == 1
    assert "not a .jsonl journal inside the journal folders" in result.output and "e.g. pimem index" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    assert indexed_paths(locations) == set()
    inside = run("index", populated["a"].path)
    assert inside.exit_code == 0, inside.output
    assert indexed_paths(locations) == {str(populated["a"].path)}


def test_index_takes_a_journal_outside_once_its_folder_is_given(run, populated, locations):
    result = run("index", "--sessions-dir", populated["extra_dir"], populated["extra"].path)
    assert result.exit_code == 0, result.output
    assert indexed_paths(locations) == {str(populated["extra"].path)}


def test_index_still_takes_a_deleted_journal_it_knows_so_its_rows_go(run, populated, locations):
    run("index")
    populated["b"].path.unlink()
    result = run("index", populated["b"].path)
    assert result.exit_code == 0, result.output
    assert indexed_paths(locations) == {str(populated["a"].path)}
