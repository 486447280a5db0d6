"""The pi-memory folder and its secret are trusted only when they are this user's and nobody else could write them
(issue 25 item 14): a planted secret would sign tokens and login links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimem_index.cli import cli

NOBODY = 65534


def planted(agent_dir: Path, folder_mode: int = 0o700, folder_owner: int | None = None, secret_mode: int = 0o600,
            secret_owner: int | None = None) -> Path:  # fmt: skip
    """A pi-memory folder with a secret in it, made as another user could have made it."""
    folder = agent_dir / "pi-memory"
    folder.mkdir()
    secret = folder / "secret"
    secret.write_text("planted-by-someone-else\n")
    os.chmod(secret, secret_mode)
    os.chmod(folder, folder_mode)
    if secret_owner is not None:
        os.chown(secret, secret_owner, secret_owner)
    if folder_owner is not None:
        os.chown(folder, folder_owner, folder_owner)
    return secret


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")


@pytest.mark.parametrize(
    "how",
    [
        pytest.param({"folder_owner": NOBODY}, marks=needs_root, id="folder of another user"),
        pytest.param({"secret_owner": NOBODY}, marks=needs_root, id="secret of another user"),
        pytest.param({"folder_mode": 0o777}, id="folder writable by others"),
        pytest.param({"folder_mode": 0o770}, id="folder writable by its group"),
        pytest.param({"secret_mode": 0o666}, id="secret writable by others"),
    ],
)
def test_a_pi_memory_folder_or_secret_someone_else_could_have_planted_is_refused_in_one_line(run, agent_dir, how):
    secret = planted(agent_dir, **how)
    modes = (secret.parent.stat().st_mode, secret.stat().st_mode)
    for args in (("token",), ("login", "--url", "http://127.0.0.1:8001")):
        done = CliRunner().invoke(cli, args)  # stderr apart: the error is one line
        assert done.exit_code == 1, (args, done.output)
        message = done.stderr.strip()
        assert message.startswith("Error: ") and "\n" not in message and str(secret.parent) in message
        assert "dstok_" not in done.stdout and "login?token=" not in done.stdout
    assert (secret.parent.stat().st_mode, secret.stat().st_mode) == modes  # refused, not quietly repaired
    assert secret.read_text() == "planted-by-someone-else\n"


def test_a_pi_memory_folder_and_secret_of_ones_own_are_used_and_kept_private(run, agent_dir):
    secret = planted(agent_dir, folder_mode=0o755, secret_mode=0o644)  # readable, never writable, by others
    done = run("token")
    assert done.exit_code == 0 and done.output.startswith("dstok_"), done.output
    assert secret.read_text() == "planted-by-someone-else\n"  # this user's own secret signs
    assert (secret.parent.stat().st_mode & 0o777, secret.stat().st_mode & 0o777) == (0o700, 0o600)


@pytest.mark.asyncio
async def test_a_plain_datasette_takes_no_token_signed_with_a_secret_others_could_write(locations, world, token):
    from datasette_test import Datasette
    from support.plugin_world import bearer, running

    from datasette_pi_memory.state import PLUGIN

    secret = locations.memory_dir / "secret"
    datasette = Datasette([str(locations.db_path)], plugin_config={PLUGIN: {"background_index": False}})
    async with running(datasette) as ds:
        assert (await ds.client.get("/-/pi-memory/api/status", **bearer(token))).status_code == 200
        os.chmod(secret, 0o666)
        refused = await ds.client.get("/-/pi-memory/api/status", **bearer(token))
        assert refused.status_code == 401 and "journals" not in refused.text
