"""Fixtures: a temporary Pi agent folder, journals written line by line, a real index."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pimem_index import parsing, store
from pimem_index.locations import resolve

from pijournal import Journal


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
def parsing_processes(monkeypatch) -> list:
    """The journals each parsing process was given, one list per process started."""
    started: list = []
    original = parsing._Stream

    class Counted(original):
        def __init__(self, produce, paths, *rest):
            started.append(list(paths))
            super().__init__(produce, paths, *rest)

    monkeypatch.setattr(parsing, "_Stream", Counted)
    return started
