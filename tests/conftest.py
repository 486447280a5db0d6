"""Fixtures: a temporary Pi agent folder, journals written line by line, a real index."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import pytest_asyncio
from click.testing import CliRunner
from support.pijournal import Journal
from support.plugin_world import FLUENT, HERON

from pimem_index import store
from pimem_index.cli import cli
from pimem_index.index import indexer
from pimem_index.locations import resolve


@pytest.fixture
def agent_dir(tmp_path, monkeypatch) -> Path:
    """A fresh Pi agent folder; HOME is set to a fake /home/u-like folder too."""
    home = tmp_path / "home" / "u"
    home.mkdir(parents=True)
    agent = home / ".pi" / "agent"
    (agent / "sessions").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.delenv("PIMEM_DB", raising=False)
    monkeypatch.delenv("PIMEM_SESSIONS_DIRS", raising=False)
    return agent


@pytest.fixture
def home(agent_dir) -> Path:
    return Path(os.environ["HOME"])


@pytest.fixture
def sessions_dir(agent_dir) -> Path:
    return agent_dir / "sessions"


@pytest.fixture
def locations(agent_dir):
    return resolve()


@pytest.fixture
def conn(locations):
    connection = store.open_index(locations.db_path)
    yield connection
    connection.close()


@pytest.fixture
def new_journal(sessions_dir, home):
    """Start a journal for a project folder under the fake home (e.g. "Apps/prjct")."""

    def make(project: str = "Apps/prjct", **kwargs) -> Journal:
        cwd = project if project.startswith("/") else str(home / project)
        return Journal(sessions_dir, cwd, **kwargs)

    return make


@pytest.fixture
def immutable():
    """Make paths unwritable even for root (chattr +i; chmod a-w for other users), undone afterwards."""
    made: list = []

    def freeze(*paths):
        for path in paths:
            if os.geteuid() == 0:
                if (
                    shutil.which("chattr") is None
                    or subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0
                ):
                    pytest.skip("running as root without chattr +i: cannot make a path read-only")
                made.append(("chattr", path))
            else:
                made.append(("chmod", path, os.stat(path).st_mode))
                os.chmod(path, os.stat(path).st_mode & ~0o222)

    yield freeze
    for undo in reversed(made):
        if undo[0] == "chattr":
            subprocess.run(["chattr", "-i", str(undo[1])], check=True)
        else:
            os.chmod(undo[1], undo[2])


@pytest.fixture
def forgotten_session(agent_dir, locations, new_journal, home):
    """Two named sessions in two projects, indexed; then `pimem forget --session` on the first."""
    gone = new_journal("Apps/hushproj")
    gone.session_info("Plan the quokka surprise")
    gone.user("quokka details nobody may see")
    gone.compaction("quokka summary")
    kept = new_journal("Apps/keptproj")
    kept.session_info("Ordinary wombat work")
    kept.user("wombat and quokka notes")
    runner = CliRunner()
    assert runner.invoke(cli, ["index"]).exit_code == 0
    result = runner.invoke(cli, ["forget", "--session", gone.session_id])
    assert result.exit_code == 0, result.output
    return {
        "gone": gone,
        "kept": kept,
        # what nothing may show once the session is forgotten: its id, name, folder and path
        "secrets": (gone.session_id, "Plan the quokka surprise", "hushproj", str(gone.path)),
        "kept_marks": (kept.session_id, "Ordinary wombat work", str(home / "Apps/keptproj"), str(kept.path)),
    }


@pytest.fixture
def world(conn, locations, new_journal, home):
    """Two projects with a full conversation each, indexed."""
    a = new_journal("Apps/prjct")
    ids = {"user": a.user(f"please look at the {HERON}")}
    ids["assistant"] = a.assistant("Running the tests now", tool_calls=[("bash", {"command": "pytest -q"})])
    ids["tool_result"] = a.tool_result("bash", "heron ok\n" + "\n".join(f"line {i} of output" for i in range(400)))
    ids["bash"] = a.bash("ls -la", "total 0")
    ids["compaction"] = a.compaction("Summary: the heron pipeline was fixed", tokens_before=123456)
    ids["branch_summary"] = a.branch_summary("Branch explored the heron rollback")
    ids["script"] = a.user("show <script>alert('x')</script> heron markup")
    b = new_journal("Apps/fluenty")
    other = b.user(FLUENT)
    indexer.index_all(conn, locations)
    return {
        "a": a,
        "b": b,
        "ids": ids,
        "other": other,
        "cwd_a": str(home / "Apps/prjct"),
        "cwd_b": str(home / "Apps/fluenty"),
    }


@pytest.fixture
def token(locations) -> str:
    """A token for the agent, as `pimem token` makes it."""
    from datasette_pi_memory.server.serve import make_token

    return make_token(locations)


@pytest.fixture
def run(agent_dir):
    """`pimem ARGS...` in this agent folder through click's runner, optionally from the folder `cwd`."""
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
def corpus(tmp_path, monkeypatch):
    """The real-Pi corpus copied, made the agent folder (HOME beside it) and indexed: (corpus, locations, conn)."""
    from support.real_pi_index import indexed, use_corpus

    copied = use_corpus(tmp_path, monkeypatch)
    locations, conn = indexed(copied)
    yield copied, locations, conn
    conn.close()


@pytest.fixture
def browser():
    """A headless Debian Chromium through Playwright (the test is skipped, saying why, where there is none)."""
    from support.chromium import chromium

    with chromium() as b:
        yield b


@pytest.fixture
def real_pi(tmp_path, monkeypatch):
    """The real-Pi corpus copied, made the agent folder and indexed (support.real_pi_index.IndexedCorpus)."""
    from support.real_pi_index import indexed_corpus

    indexed = indexed_corpus(tmp_path, monkeypatch)
    yield indexed
    indexed.conn.close()


@pytest_asyncio.fixture
async def real_pi_ds(real_pi):
    """A Datasette with the plugin over the indexed real-Pi corpus."""
    from support.plugin_world import make_datasette, running

    async with running(make_datasette(real_pi.locations)) as datasette:
        yield datasette
