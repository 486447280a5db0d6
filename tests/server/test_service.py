"""`pimem serve --install`'s systemd user unit: values quoted as systemd reads them, never writable by others
(issue 25 items 9 and 10). systemd's own parser (`systemd-analyze verify`) checks each unit written."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from datasette_pi_memory.server import pi_tool


@pytest.fixture
def unit_env(tmp_path, monkeypatch) -> Path:
    """No systemctl on PATH and a private XDG_CONFIG_HOME; the path the unit is written to."""
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "systemd" / "user" / "pimem.service"


def unspecified(value: str) -> str:
    """A unit value with its specifiers resolved: only `%%` (a percent sign) may occur."""
    assert not re.search(r"%[^%]", value.replace("%%", "")), f"a specifier systemd would expand: {value}"
    return value.replace("%%", "%")


def c_unescaped(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def exec_words(line: str) -> list[str]:
    """ExecStart's words as systemd reads them: double-quoted, C escapes, `$$` a dollar; any other `$` expands."""
    words = re.findall(r'"((?:[^"\\]|\\.)*)"(?: |$)', line)
    assert " ".join(f'"{w}"' for w in words) == line, f"not all words are quoted: {line}"
    found = []
    for word in words:
        word = unspecified(word)
        assert not re.search(r"\$[^$]", word.replace("$$", "")), f"a variable systemd would expand: {word}"
        found.append(c_unescaped(word.replace("$$", "$")))
    return found


def environment(line: str) -> str:
    """Environment="NAME=value" as systemd reads it (specifiers, C escapes; `$` means nothing there)."""
    m = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', line)
    assert m, f"not one quoted assignment: {line}"
    return c_unescaped(unspecified(m.group(1)))


def verified(unit: Path) -> None:
    """systemd's own parser accepts the unit, without a warning."""
    if shutil.which("systemd-analyze", path="/usr/bin:/bin") is None:
        return
    done = subprocess.run(["/usr/bin/systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and str(unit) not in done.stderr, done.stderr


HOSTILE = 'we$HOME ${USER} %h %% "q" \\b;x'


def test_a_unit_for_hostile_paths_runs_exactly_those_paths_with_nothing_expanded(run, unit_env, tmp_path, monkeypatch):
    agent = tmp_path / HOSTILE / "agent"
    (agent / "sessions").mkdir(parents=True)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    db = tmp_path / f"index {HOSTILE}" / "history.sqlite"
    monkeypatch.setenv("PIMEM_SESSIONS_DIRS", str(tmp_path / HOSTILE))  # a folder for the unit's command line
    done = run("serve", "--install", "--port", "8123", "--db", db)
    assert done.exit_code == 0, done.output
    lines = unit_env.read_text().splitlines()
    [exec_start] = [line.removeprefix("ExecStart=") for line in lines if line.startswith("ExecStart")]
    words = exec_words(exec_start)
    assert words[: len(pi_tool.pimem_command())] == pi_tool.pimem_command()
    assert words[words.index("--db") + 1] == str(db)
    assert words[words.index("--sessions-dir") + 1] == str(tmp_path / HOSTILE)
    [env] = [line.removeprefix("Environment=") for line in lines if line.startswith("Environment=")]
    assert environment(env) == f"PI_CODING_AGENT_DIR={agent}"
    assert [line.split("=")[0] for line in lines if "=" in line] == [
        "Description", "ExecStart", "Environment", "Restart", "RestartSec", "WantedBy"
    ]  # fmt: skip
    verified(unit_env)


@pytest.mark.parametrize("where", ["db", "agent", "sessions", "host"])
def test_a_newline_or_control_character_in_a_unit_value_is_refused_and_no_unit_is_written(
    run, unit_env, tmp_path, monkeypatch, where
):
    injected = "x\nExecStartPre=/bin/touch /tmp/pwned"
    args = ["serve", "--install", "--port", "8123"]
    if where == "db":
        args += ["--db", tmp_path / injected / "history.sqlite"]
    elif where == "sessions":
        monkeypatch.setenv("PIMEM_SESSIONS_DIRS", str(tmp_path / f"s\t{injected}"))
    elif where == "host":
        args += ["--host", f"127.0.0.1\n{injected}"]
    else:
        monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / injected))
    done = run(*args)
    assert done.exit_code == 1, done.output
    message = done.output.strip()
    assert "\n" not in message and message.startswith("Error: ") and "e.g." in message
    assert "Traceback" not in done.output
    assert not unit_env.exists()


def test_the_unit_and_its_folders_are_never_writable_by_others_whatever_the_umask(run, unit_env):
    unit_env.parent.parent.parent.mkdir()  # XDG_CONFIG_HOME exists; systemd/user is created
    old = os.umask(0)
    try:
        done = run("serve", "--install", "--port", "8123")
    finally:
        os.umask(old)
    assert done.exit_code == 0, done.output
    assert stat.S_IMODE(unit_env.stat().st_mode) == 0o644
    for folder in (unit_env.parent, unit_env.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o755, folder


def test_reinstalling_over_a_unit_writable_by_others_leaves_it_writable_by_its_owner_only(run, unit_env):
    unit_env.parent.mkdir(parents=True)
    unit_env.write_text("[Service]\nExecStart=/bin/false\n")
    os.chmod(unit_env, 0o666)
    done = run("serve", "--install", "--port", "8123")
    assert done.exit_code == 0, done.output
    assert stat.S_IMODE(unit_env.stat().st_mode) == 0o644
    assert "/bin/false" not in unit_env.read_text()
