"""The port `pimem pi install` chose is the default of every later start: `pimem serve` without `--port`, and
`pimem pi install` again without `--url` (a new token or a new pimem keeps the port the tool knows)."""

from __future__ import annotations

import json

from datasette_pi_memory.server.commands import DEFAULT_PORT, default_port
from pimem_index.locations import resolve


def tool_config(agent_dir) -> dict:
    return json.loads((agent_dir / "pi-memory" / "pi-tool.json").read_text())


def test_installing_again_without_a_url_keeps_the_installed_port(run, agent_dir):
    first = run("pi", "install", "--url", "http://127.0.0.1:8765", "--no-start")
    assert first.exit_code == 0, first.output
    again = run("pi", "install", "--no-start")
    assert again.exit_code == 0, again.output
    config = tool_config(agent_dir)
    assert config["url"] == "http://127.0.0.1:8765" and "8765" in config["serve_args"]
    assert "8001" not in json.dumps(config)


def test_later_starts_default_to_the_installed_port_else_8001(run, agent_dir):
    assert default_port(resolve()) == DEFAULT_PORT == 8001
    run("pi", "install", "--url", "http://localhost:9123", "--no-start")
    assert default_port(resolve()) == 9123
    run("pi", "install", "--url", "https://memory.example.com", "--no-start")
    assert default_port(resolve()) == DEFAULT_PORT  # a remote server is not one pimem starts
