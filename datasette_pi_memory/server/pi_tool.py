"""Install and remove the `memory_context` Pi extension and the 0600 file it reads (URL, token).

Pi auto-discovers `<agent folder>/extensions/*.ts` and `<agent folder>/extensions/*/index.ts`;
the tool is installed as the single file `extensions/memory_context.ts`. Its config lives in
`<agent folder>/pi-memory/pi-tool.json` (folder 0700, file 0600) and is read on every call:
the URL, the token, and the absolute `pimem` with the arguments that start the server.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import urllib.parse
from importlib import resources
from pathlib import Path

from datasette_pi_memory.server import files
from pimem_index import UserError

EXTENSION_SOURCE = "memory_context.ts"
EXTENSION_NAME = "memory_context.ts"
LEGACY_DIR_NAME = "pi-memory"  # extensions/pi-memory/index.ts: the subfolder layout Pi also loads
CONFIG_NAME = "pi-tool.json"


def extension_source() -> str:
    """The extension's TypeScript source, shipped as package data."""
    return (
        resources.files("datasette_pi_memory.server")
        .joinpath("pi_extension", EXTENSION_SOURCE)
        .read_text(encoding="utf-8")
    )


def extension_path(agent_dir: Path) -> Path:
    return Path(agent_dir) / "extensions" / EXTENSION_NAME


def config_path(agent_dir: Path) -> Path:
    return Path(agent_dir) / "pi-memory" / CONFIG_NAME


def _write_private(path: Path, data: str) -> None:
    """Write atomically with mode 0600 from the first byte (never world-readable, not even briefly)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    os.chmod(path, 0o600)


def recorded_url(agent_dir: Path) -> str | None:
    """The server URL `pimem pi install` recorded for the tool, else None."""
    try:
        url = json.loads(config_path(agent_dir).read_text(encoding="utf-8")).get("url")
    except (OSError, ValueError, AttributeError):
        return None
    return url if isinstance(url, str) and url.startswith(("http://", "https://")) else None


def recorded_port(agent_dir: Path) -> int | None:
    """The port of the local URL `pimem pi install` recorded (the one every later start uses), else None."""
    url = recorded_url(agent_dir)
    if url is None:
        return None
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return None
    try:
        return parts.port or 80
    except ValueError:
        return None


def pimem_command() -> list[str]:
    """This pimem as an absolute command: the script that runs now, else the one beside this interpreter,
    else this interpreter with -m pimem_index (never whatever `pimem` PATH finds later)."""
    for script in (Path(sys.argv[0]), Path(sys.executable).with_name("pimem")):
        if script.name == "pimem" and script.is_file() and os.access(script, os.X_OK):
            return [os.path.abspath(script)]
    return [os.path.abspath(sys.executable), "-m", "pimem_index"]


def install(agent_dir: Path, url: str, token: str, start: list[str] | None = None) -> list[Path]:
    """Copy the extension into the agent folder and write its config; returns the paths written.

    `start` is the command that starts the server in the background (`pimem serve --background ...`,
    absolute executable first): the tool runs it when it cannot reach the server.
    """
    if not url or not url.startswith(("http://", "https://")):
        raise UserError(f"url must start with http:// or https://, e.g. http://127.0.0.1:8001 (got {url!r})")
    if not token:
        raise UserError("token is empty: get one with `pimem token`")
    agent_dir = Path(agent_dir)
    ext = extension_path(agent_dir)
    files.write_shared(ext, extension_source())  # code Pi runs: never writable by others
    _remove_subfolder_layout(agent_dir)  # two copies would register the tool twice

    cfg = config_path(agent_dir)
    cfg.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(cfg.parent, 0o700)
    payload: dict = {"url": url.rstrip("/"), "token": token}
    if start:
        payload.update(pimem=start[0], serve_args=start[1:])
    _write_private(cfg, json.dumps(payload, indent=2) + "\n")
    return [ext, cfg]


def uninstall(agent_dir: Path) -> list[Path]:
    """Remove the extension (either layout) and its config; returns the paths removed."""
    agent_dir = Path(agent_dir)
    removed: list[Path] = []
    for path in (extension_path(agent_dir), config_path(agent_dir)):
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        removed.append(path)
    removed[1:1] = _remove_subfolder_layout(agent_dir)
    return removed


def _remove_subfolder_layout(agent_dir: Path) -> list[Path]:
    """Remove extensions/pi-memory/index.ts (and the folder when that leaves it empty)."""
    folder = Path(agent_dir) / "extensions" / LEGACY_DIR_NAME
    index = folder / "index.ts"
    try:
        index.unlink()
    except FileNotFoundError:
        return []
    try:
        folder.rmdir()  # only when empty: never remove what a user put there
    except OSError:
        pass
    return [index]
