"""The pimem command as a user runs it: output, JSON shapes, exit codes and one-line errors."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time

import click
import pytest
from support.pijournal import Journal

from pimem_index import db
from pimem_index.cli import cli
from pimem_index.errors import UserError
from pimem_index.locations import resolve, watch_command

SECRET = "sk-" + "ant-" + "api03-" + "Hq7Lm2Xv9Rt4Wz8Kp3Nb6Yc1Df5Gs0Ja"


@pytest.fixture
def populated(new_journal, home, tmp_path):
    """Two projects and an extra journal folder given with --sessions-dir."""
    a = new_journal("Apps/prjct")
    a.user("the migration failed on table widgets")
    a.tool_result("bash", f"ANTHROPIC_API_KEY={SECRET}\nmigration log: widgets table locked")
    a.compaction("## Goal\nfix widgets migration")
    b = new_journal("Apps/other")
    b.user("unrelated widgets chatter")
    from support.pijournal import Journal

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
                "user",
                "assistant",
                "toolResult",
                "bashExecution",
                "custom",
                "hookMessage",
            ):
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
    assert {data["sessions"][r["session_id"]]["cwd"] for r in data["results"]} == {str(home / "Apps/prjct")}
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


def test_summaries_lists_the_projects_compactions_not_its_messages(run, populated, home):
    run("index")
    data = json.loads(run("summaries", "--json", "--cwd", home / "Apps/prjct").output)
    assert data["action"] == "summaries"
    assert [r["kind"] for r in data["results"]] == ["compaction"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["search", "x", "--since", "last week"], "YYYY-MM-DD"),
        (["search", "x", "--kind", "toolresult"], "unknown kind"),
        (["search", "x", "--scope", "world"], "unknown scope"),
        (["search", "x", "--limit", "500"], "limit must be"),
        (["read", "abc", "--offset", "-5"], "offset must be"),
        (["read", "nosuchid"], "no entry nosuchid"),
        (["index", "/nonexistent/file.jsonl"], "no such journal"),
    ],
)
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


def indexed_journals(db_path) -> set[str]:
    """The journal paths an index file holds, read without creating or changing it; none while
    the file exists but its indexer has not yet created the tables."""
    with contextlib.closing(db.connect(str(db_path), readonly=True)) as conn:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'files'").fetchone() is None:
            return set()
        return {path for (path,) in conn.execute("SELECT path FROM files")}


def test_the_watch_command_indexes_the_given_index_and_folders_only(populated, agent_dir, tmp_path):
    unlisted = Journal(tmp_path / "unlisted", str(tmp_path), header=True)
    unlisted.user("a folder nobody passed")
    db_path = tmp_path / "elsewhere.sqlite"
    locations = resolve(str(db_path), [str(populated["extra_dir"])])
    child = subprocess.Popen(watch_command(locations, 0.1), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    wanted = {str(populated[k].path) for k in ("a", "b", "extra")}
    try:
        deadline = time.monotonic() + 30
        while child.poll() is None and time.monotonic() < deadline:
            if db_path.exists() and wanted <= indexed_journals(db_path):
                break
            time.sleep(0.1)
    finally:
        child.terminate()
        child.wait(timeout=10)
    assert indexed_journals(db_path) == wanted
    assert str(unlisted.path) not in indexed_journals(db_path)
    assert not (agent_dir / "pi-memory" / "history.sqlite").exists()


def every_command_path(group: click.Group, ctx: click.Context) -> list[list[str]]:
    """The argument lists naming each command and subcommand of the group, plugins' included."""
    paths = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        paths.append([name])
        if isinstance(command, click.Group):
            paths += [[name, *sub] for sub in every_command_path(command, ctx)]
    return paths


def test_no_help_text_speaks_of_a_contract_the_user_never_saw(run):
    paths = every_command_path(cli, click.Context(cli))
    assert ["pi", "install"] in paths and ["search"] in paths
    for path in paths:
        assert "contract" not in run(*path, "--help").output, path


@pytest.mark.parametrize("command", ["search", "summaries", "read"])
def test_json_option_help_says_the_json_is_the_http_api_shape(run, command):
    out = run(command, "--help").output
    assert "Print JSON (the same shape as the HTTP API)" in out


def test_pi_install_writes_extension_and_private_settings_then_uninstall_removes_them(run, agent_dir):
    result = run("pi", "install", "--url", "http://127.0.0.1:8123/", "--no-start")  # issue 19: it starts one else
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


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp / "a-folder", "is a folder"),
        (lambda tmp: tmp / "a-file" / "below-a-file.sqlite", "cannot create the index"),
    ],
)
def test_unusable_index_path_is_a_one_line_error(run, tmp_path, make, message):
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_text("not a folder")
    result = run("index", "--db", make(tmp_path))  # status creates nothing, so index shows the error
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
def test_index_refuses_a_file_that_is_not_a_journal_in_the_journal_folders(
    run, populated, locations, tmp_path, sessions_dir, name
):
    outside = populated["extra"].path  # a real journal, but its folder was not given
    (sessions_dir / "notes.txt").write_text("not a journal")
    (sessions_dir / "link.jsonl").symlink_to(outside)
    readme = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "README.md")
    target = {
        "outside-jsonl": outside,
        "readme": readme,
        "link-inside-to-outside": sessions_dir / "link.jsonl",
        "text-inside": sessions_dir / "notes.txt",
    }[name]
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


# ---- one line per kind of trouble with the index (issue 14 item 7) ------------------------------------


def assert_one_line(result, exit_code: int = 1) -> str:
    assert result.exit_code == exit_code, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    return result.output


@pytest.mark.parametrize("command", [["status"], ["index"], ["search", "widgets"]])
def test_a_read_only_index_and_folder_say_they_cannot_be_written(run, populated, locations, immutable, command):
    run("index")
    immutable(locations.db_path, locations.db_path.parent)
    out = assert_one_line(run(*command))
    assert f"cannot write {locations.db_path}; check its permissions" in out
    assert "not a pimem index" not in out and "delete" not in out and "rebuild" not in out


def test_a_read_only_index_file_says_it_cannot_be_written_when_indexing(run, populated, locations, immutable):
    run("index")
    populated["a"].user("a new line to index")
    immutable(locations.db_path)
    out = assert_one_line(run("index"))
    assert f"cannot write {locations.db_path}; check its permissions" in out
    assert "not a pimem index" not in out and "rebuild" not in out


def provoke(kind: str, tmp_path):
    """A real SQLite error of one kind."""
    path = tmp_path / f"{kind}.sqlite"
    if kind == "notadb":
        path.write_text("my notes, not a database " * 200)
        return db.connect(str(path)).execute("SELECT * FROM sqlite_master").fetchall
    conn = db.connect(str(path))
    conn.execute("CREATE TABLE t (x)")
    if kind == "readonly":
        return lambda: db.connect(str(path), readonly=True).execute("INSERT INTO t VALUES (1)")
    if kind == "full":
        conn.execute("PRAGMA max_page_count = 8")
        return lambda: conn.execute("INSERT INTO t SELECT zeroblob(100000)")
    if kind == "busy":
        conn.execute("BEGIN IMMEDIATE")
        other = db.connect(str(path))
        other.execute("PRAGMA busy_timeout = 0")
        return lambda: (conn, other.execute("BEGIN IMMEDIATE"))  # conn holds the lock meanwhile
    if kind == "corrupt":
        conn.executemany("INSERT INTO t VALUES (?)", [("x" * 500,)] * 200)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        with open(path, "r+b") as fh:
            fh.seek(4096 * 2)
            fh.write(b"\xff" * 4096 * 3)
        return lambda: db.connect(str(path)).execute("SELECT count(*), max(length(x)) FROM t").fetchall()
    if kind == "cantopen":
        return lambda: db.connect(str(tmp_path / "no-such-folder" / "x.sqlite"))
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind, says, never",
    [
        ("readonly", "cannot write {path}; check its permissions", ("delete", "rebuild", "not a pimem index")),
        ("full", "the disk holding {path} is full; free some space", ("delete", "rebuild")),
        ("busy", "{path} is locked by another process; try again", ("delete", "rebuild")),
        ("notadb", "{path} is not a pimem index (not a SQLite database); point --db elsewhere", ("rebuild",)),
        ("corrupt", "{path} is damaged", ("permissions",)),
        ("cantopen", "cannot open {path}; check that its folder exists", ("delete", "rebuild")),
    ],
)
def test_each_kind_of_sqlite_error_is_worded_for_what_fixes_it(tmp_path, kind, says, never):
    with pytest.raises(db.DatabaseError) as caught:
        provoke(kind, tmp_path)()
    path = tmp_path / "history.sqlite"
    message = db.describe_error(caught.value, path)
    assert says.format(path=path) in message
    assert not any(word in message for word in never), message
    assert "\n" not in message


@pytest.fixture
def tiny_disk(tmp_path):
    """A 1 MB tmpfs (root with mount only), unmounted afterwards."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("cannot mount a small tmpfs here")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def test_a_full_disk_says_so_and_never_suggests_a_rebuild(agent_dir, new_journal, tiny_disk):
    j = new_journal()
    for n in range(200):
        j.tool_result("bash", " ".join(f"word{n}x{k}" for k in range(4000)))
    done = subprocess.run(
        [sys.executable, "-m", "pimem_index", "index", "--db", str(tiny_disk / "history.sqlite")],
        capture_output=True,
        text=True,
        timeout=120,
    )  # its own process: nothing stays open
    assert done.returncode == 1 and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    out = done.stderr
    assert f"the disk holding {tiny_disk / 'history.sqlite'} is full" in out
    assert "rebuild" not in out and "delete" not in out


def test_a_sqlite_database_of_another_program_is_left_alone(run, tmp_path):
    theirs = tmp_path / "theirs.sqlite"
    other = db.connect(str(theirs))
    other.execute("CREATE TABLE accounts (name)")
    other.execute("INSERT INTO accounts VALUES ('kept')")
    other.close()
    out = assert_one_line(run("index", "--db", theirs))
    assert "is a SQLite database but not a pimem index" in out
    assert db.connect(str(theirs)).execute("SELECT name FROM accounts").fetchall() == [("kept",)]


def test_a_query_of_a_thousand_words_is_a_one_line_error_not_a_rebuild_hint(run, populated, home):
    run("index")
    words = " ".join(f"word{n}" for n in range(1000))
    out = assert_one_line(run("search", words, "--cwd", home / "Apps/prjct"))
    assert "1000 distinct words; at most" in out and "e.g." in out
    assert "rebuild" not in out and "Expression tree" not in out


# ---- read-only commands create nothing ------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["status"],
        ["search", "widgets", "--no-index"],
        ["summaries", "--no-index"],
        ["read", "c3d4e5f6", "--no-index"],
        ["gc"],
    ],
)
def test_a_read_only_command_without_an_index_creates_nothing(run, tmp_path, command):
    target = tmp_path / "nonexistent" / "dir" / "x.sqlite"
    out = assert_one_line(run(*command, "--db", target))
    assert f"there is no index at {target} yet; make one with: pimem index --db {target}" in out
    assert not (tmp_path / "nonexistent").exists()


def test_status_without_an_index_leaves_the_agent_folder_alone(run, agent_dir):
    out = assert_one_line(run("status"))
    assert "no index at" in out and "make one with: pimem index\n" in out
    assert not (agent_dir / "pi-memory").exists()


@pytest.mark.parametrize("command", [["index"], ["search", "widgets"], ["read", "c3d4e5f6"], ["rebuild"]])
def test_commands_that_index_create_the_index(run, populated, tmp_path, command):
    target = tmp_path / "new" / "dir" / "x.sqlite"
    run(*command, "--db", target)
    assert target.exists()


# ---- --cwd is taken from the current folder ----------------------------------------------------------------


@pytest.mark.parametrize("relative, where", [(".", "Apps/prjct"), ("prjct", "Apps")])
def test_a_relative_cwd_is_taken_from_the_current_folder(run, populated, home, relative, where):
    run("index")
    (home / "Apps/prjct").mkdir(parents=True)
    data = json.loads(run("search", "widgets", "--json", "--cwd", relative, cwd=home / where).output)
    assert data["root"] == str(home / "Apps/prjct")
    folders = {data["sessions"][r["session_id"]]["cwd"] for r in data["results"]}
    assert folders == {str(home / "Apps/prjct")}
    assert str(home / "Apps/other") not in folders


def test_summaries_and_read_take_a_relative_cwd_from_the_current_folder(run, populated, home):
    run("index")
    (home / "Apps/prjct").mkdir(parents=True)
    summary = json.loads(run("summaries", "--json", "--cwd", "prjct", cwd=home / "Apps").output)
    assert summary["root"] == str(home / "Apps/prjct") and len(summary["results"]) == 1
    other = json.loads(run("search", "chatter", "--json", "--cwd", home / "Apps/other").output)["results"][0]
    page = json.loads(run("read", other["id"], "--json", "--cwd", ".", cwd=home / "Apps/prjct").output)
    assert page["status"] == "not_found" and page["root"] == str(home / "Apps/prjct")
    mine = json.loads(run("read", other["id"], "--json", "--cwd", "other", cwd=home / "Apps").output)
    assert mine["status"] == "ok"


# ---- private files from the first command (issue 14 item 8) ----------------------------------------------


@pytest.fixture(params=[0o022, 0o000], ids=["umask022", "umask000"])
def permissive_umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def index_files(db_path) -> dict:
    """Every file of the index (opened once more, so its -wal and -shm exist) with its mode."""
    from pimem_index import store

    conn = store.open_index(db_path)
    conn.execute("SELECT count(*) FROM entries").fetchone()
    files = {p.name: p.stat().st_mode & 0o777 for p in db_path.parent.iterdir() if p.name.startswith(db_path.name)}
    conn.close()
    return files


def test_the_first_index_is_private(run, populated, agent_dir, permissive_umask):
    assert run("index").exit_code == 0
    db_path = agent_dir / "pi-memory" / "history.sqlite"
    assert (agent_dir / "pi-memory").stat().st_mode & 0o777 == 0o700
    files = index_files(db_path)
    assert {"history.sqlite", "history.sqlite-wal", "history.sqlite-shm"} <= set(files)
    assert all(mode == 0o600 for mode in files.values()), {k: oct(v) for k, v in files.items()}
    assert not any(mode & 0o077 for mode in files.values())


def test_an_existing_pi_memory_folder_becomes_private(run, populated, agent_dir, permissive_umask):
    (agent_dir / "pi-memory").mkdir(mode=0o755)
    os.chmod(agent_dir / "pi-memory", 0o755)
    assert run("index").exit_code == 0
    assert (agent_dir / "pi-memory").stat().st_mode & 0o777 == 0o700


def test_a_rebuilt_index_is_private(run, populated, agent_dir, permissive_umask):
    assert run("rebuild").exit_code == 0
    assert (agent_dir / "pi-memory").stat().st_mode & 0o777 == 0o700
    files = index_files(agent_dir / "pi-memory" / "history.sqlite")
    assert files and not any(mode & 0o077 for mode in files.values()), {k: oct(v) for k, v in files.items()}


def test_an_index_elsewhere_is_private_and_a_users_folder_is_left_alone(run, populated, tmp_path, permissive_umask):
    mine = tmp_path / "mine"
    mine.mkdir()
    os.chmod(mine, 0o755)
    target = mine / "made" / "by" / "pimem" / "x.sqlite"
    assert run("index", "--db", target).exit_code == 0
    for folder in (mine / "made", mine / "made/by", mine / "made/by/pimem"):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    assert mine.stat().st_mode & 0o777 == 0o755
    files = index_files(target)
    assert files and all(mode == 0o600 for mode in files.values()), {k: oct(v) for k, v in files.items()}


@pytest.mark.parametrize("command", ["search", "summaries"])
def test_search_help_states_the_query_limits(run, command):
    from pimem_index.search import query
    from pimem_index.search.request import MAX_TERMS

    out = " ".join(run(command, "--help").output.split())
    assert f"at most {MAX_TERMS} distinct words" in out and f"longer than {query.QUERY_SECONDS:g} s" in out
    assert "distinct words" not in " ".join(run("read", "--help").output.split())


def test_a_folder_given_by_option_and_environment_is_passed_to_the_watcher_once(tmp_path, monkeypatch, agent_dir):
    extra = tmp_path / "more-journals"
    other = tmp_path / "other-journals"
    monkeypatch.setenv("PIMEM_SESSIONS_DIRS", os.pathsep.join([str(extra), str(other)]))
    locations = resolve(None, [str(extra)])
    command = watch_command(locations, 1.0)
    assert command.count(str(extra)) == 1
    assert command.count(str(other)) == 1  # the environment's other folder is not lost
    assert list(locations.sessions_dirs).count(extra) == 1


def test_the_result_header_says_where_it_searched_in_words(run, populated, home):
    project = run("search", "widgets", "--cwd", str(home / "Apps/prjct")).output.splitlines()[0]
    everywhere = run("search", "widgets", "--scope", "global").output.splitlines()[0]
    assert project.startswith("3 results in project ") and str(home / "Apps/prjct") in project
    assert everywhere.startswith("4 results in every project")
    assert "global: global" not in everywhere and "project: " not in project


def test_one_journal_is_said_in_the_singular(run, new_journal):
    new_journal("Apps/solo").user("a single journal")
    out = run("index").output
    assert "from 1 journal " in out
    assert "1 journals" not in out


def test_forgetting_a_session_names_it_once(run, populated):
    run("index")
    out = run("forget", "--session", populated["b"].session_id).output
    sid = populated["b"].session_id
    assert out.startswith(f"Forgot session {sid} (undo: pimem unforget --session {sid})")
    assert "in session" not in out


def test_summaries_help_offers_only_the_summary_kinds(run):
    kind_help = " ".join(run("summaries", "--help").output.split()).split("--kind KIND")[1].split("--limit")[0]
    assert "compaction" in kind_help and "branch_summary" in kind_help
    assert "tool_result" not in kind_help


def test_naming_a_session_searches_that_session(run, populated, home):
    run("index")
    sid = populated["a"].session_id
    data = json.loads(run("search", "widgets", "--session", sid, "--json", "--cwd", str(home / "Apps/other")).output)
    assert data["scope"] == "session" and data["results"]
    assert {hit["session_id"] for hit in data["results"]} == {sid}  # not the other project's widgets


def test_a_session_is_named_by_its_first_eight_characters_and_no_fewer(run, populated):
    run("index")
    sid = populated["a"].session_id
    found = json.loads(run("search", "widgets", "--scope", "session", "--session", sid[:8], "--json").output)
    assert {hit["session_id"] for hit in found["results"]} == {sid}
    short = run("search", "widgets", "--scope", "session", "--session", sid[:4])
    assert short.exit_code == 1 and "no session" in short.output and "first 8 characters" in short.output


def test_an_unknown_session_is_a_one_line_error(run, populated):
    run("index")
    result = run("search", "widgets", "--scope", "session", "--session", "nope")
    assert result.exit_code == 1
    assert "no session 'nope' in the index" in result.output and len(result.output.strip().splitlines()) == 1
