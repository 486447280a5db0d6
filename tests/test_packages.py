"""One-way packages, as they run: the library's `pimem` never imports Datasette or the plugin; the
plugin adds `serve`, `token` and `pi` through the `pimem_index.commands` entry point, and a command
plugin that fails to load costs its own commands only."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import click
import pytest

from datasette_pi_memory.server import commands

DATASETTE_MODULES = "sorted(m for m in sys.modules if m.split('.')[0] in ('datasette', 'datasette_pi_memory'))"


def python(*code_or_args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """This interpreter, run as a user would run it, with its output captured."""
    return subprocess.run([sys.executable, *code_or_args], capture_output=True, text=True, timeout=120, env=env)


def pimem(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return python("-m", "pimem_index", *args, env=env)


def with_command_plugin(tmp_path: Path, name: str, target: str, module_source: str | None = None) -> dict:
    """An environment in which one more distribution registers `target` as a pimem command plugin:
    a real .dist-info folder (and module, when given) on PYTHONPATH, as pip would install it."""
    site = tmp_path / "site"
    info = site / f"pimem_test_{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: pimem-test-{name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[pimem_index.commands]\n{name} = {target}\n")
    if module_source is not None:
        (site / f"{target.split(':')[0]}.py").write_text(module_source)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}


def test_importing_the_library_cli_imports_no_datasette(agent_dir):
    done = python("-c", f"import sys; import pimem_index.cli; print({DATASETTE_MODULES})")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_running_a_library_command_loads_no_datasette_nor_plugin(agent_dir):
    code = (
        "import sys; from pimem_index.cli import cli; "
        "cli(['index', '--help'], prog_name='pimem', standalone_mode=False); "
        f"print({DATASETTE_MODULES})"
    )
    done = python("-c", code)
    assert done.returncode == 0, done.stderr
    assert "Index new journal lines" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_pimem_help_lists_the_plugin_commands_beside_the_library_commands(agent_dir):
    done = pimem("--help")
    assert done.returncode == 0 and done.stderr == ""
    listed = {line.split()[0] for line in done.stdout.split("Commands:")[1].splitlines() if line.strip()}
    assert {"serve", "token", "pi"} <= listed
    assert {"index", "status", "search", "read", "summaries", "rebuild", "gc", "forget", "unforget"} <= listed


def test_the_plugin_registers_its_commands_through_the_pimem_entry_point():
    registered = {ep.name: ep.value for ep in entry_points(group="pimem_index.commands")}
    assert registered.get("pi_memory") == "datasette_pi_memory.server.commands:register"
    group = click.Group()
    commands.register(group)
    assert sorted(group.commands) == ["login", "pi", "serve", "token"]  # issue 19 adds login
    assert sorted(group.commands["pi"].commands) == ["install", "uninstall"]
    assert sorted(group.commands["serve"].commands) == ["status", "stop"]


def test_pimem_serve_help_is_the_plugins_command(agent_dir):
    done = pimem("serve", "--help")
    assert done.returncode == 0, done.stderr
    assert "Run Datasette with the pi-memory plugin" in done.stdout and "--no-index" in done.stdout
    unknown = pimem("no-such-command")
    assert unknown.returncode == 2 and "No such command" in unknown.stderr


def test_a_missing_command_plugin_costs_one_line_on_stderr_and_nothing_else(agent_dir, tmp_path):
    env = with_command_plugin(tmp_path, "ghost", "pimem_test_no_such_module:register")
    done = pimem("--help", env=env)
    assert done.returncode == 0, done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert "ghost" in done.stderr and "pimem_test_no_such_module" in done.stderr
    assert "Traceback" not in done.stderr
    assert "  index" in done.stdout and "  serve" in done.stdout


def test_a_broken_command_plugin_never_stops_the_library_commands(agent_dir, tmp_path):
    env = with_command_plugin(
        tmp_path,
        "broken",
        "pimem_test_broken:register",
        "def register(cli):\n    raise RuntimeError('this plugin is broken')\n",
    )
    indexed = pimem("index", "--json", env=env)
    assert indexed.returncode == 0, indexed.stderr
    assert indexed.stderr == ""  # a library command never loads command plugins
    unknown = pimem("serv", env=env)
    assert unknown.returncode == 2
    assert "this plugin is broken" in unknown.stderr and "Traceback" not in unknown.stderr


def test_a_command_plugin_gets_the_library_error_handling(agent_dir, tmp_path):
    source = (
        "import click\n"
        "from pimem_index.errors import UserError\n"
        "@click.command()\n"
        "def hello():\n"
        "    '''Say hello, then fail as a user error.'''\n"
        "    click.echo('hello')\n"
        "    raise UserError('no second hello (e.g. pimem hello)')\n"
        "def register(cli):\n"
        "    cli.add_command(hello)\n"
    )
    env = with_command_plugin(tmp_path, "hello", "pimem_test_hello:register", source)
    assert "  hello" in pimem("--help", env=env).stdout
    done = pimem("hello", env=env)
    assert done.stdout == "hello\n"
    assert done.returncode == 1 and done.stderr == "Error: no second hello (e.g. pimem hello)\n"
    assert "  hello" not in pimem("--help").stdout


@pytest.mark.parametrize("args", [["pi", "install", "--help"], ["pi", "uninstall", "--help"], ["token", "--help"]])
def test_every_plugin_command_answers_help(agent_dir, args):
    done = pimem(*args)
    assert done.returncode == 0 and done.stderr == ""
    assert "--db PATH" in done.stdout and "--sessions-dir DIR" in done.stdout
