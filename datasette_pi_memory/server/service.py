"""`pimem serve --install` / `--uninstall`: a systemd user unit that runs `pimem serve` from login on (Linux).

The unit runs this pimem (by its absolute path) in the foreground on the same index, port and
journal folders; systemd restarts it if it fails. `--install` writes the unit and, where
`systemctl --user` is available, enables and starts it (stopping a `--background` server first,
so the two do not contend for the port); `--uninstall` disables it and removes the file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from datasette_pi_memory.server import files
from datasette_pi_memory.server.daemon import url_host
from datasette_pi_memory.server.pi_tool import pimem_command
from pimem_index import Locations, UserError, location_args

UNIT = "pimem.service"
ENABLE = f"systemctl --user enable --now {UNIT}"


def unit_path() -> Path:
    """`$XDG_CONFIG_HOME/systemd/user/pimem.service` (~/.config when unset)."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user" / UNIT


def _checked(value: str) -> str:
    """A value that can go into a unit: no newline or other control character (it would end the line)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise UserError(
            f"{value!r} holds a newline or another control character, which a systemd unit cannot hold; "
            "use a path without one (e.g. --db ~/.pi/agent/pi-memory/history.sqlite)"
        )
    return value


def _specifiers_escaped(value: str) -> str:
    """`%` is the start of a systemd specifier (%h, %u...) in every value: `%%` is a percent sign."""
    return _checked(value).replace("%", "%%")


def _quoted(value: str) -> str:
    """A value in double quotes as systemd reads it: backslash and double quote escaped, specifiers escaped."""
    return '"' + _specifiers_escaped(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _exec_word(word: str) -> str:
    """One ExecStart word: quoted, and `$$` for a dollar sign (systemd expands $NAME and ${NAME} there)."""
    return _quoted(word).replace("$", "$$")


def unit_text(locations: Locations, host: str, port: int, background_index: bool) -> str:
    """The unit: this pimem serving these locations on host:port, restarted on failure."""
    command = [*pimem_command(), "serve", "--host", host, "--port", str(port), *location_args(locations)]
    if not background_index:
        command.append("--no-index")
    return "\n".join(
        [
            "# Written by pimem serve --install; remove it with pimem serve --uninstall.",
            "[Unit]",
            f"Description=Pi memory (pimem serve on {_specifiers_escaped(host)}:{port})",
            "",
            "[Service]",
            "ExecStart=" + " ".join(_exec_word(word) for word in command),
            "Environment=" + _quoted(f"PI_CODING_AGENT_DIR={locations.agent}"),  # no $ expansion here
            "Restart=on-failure",
            "RestartSec=5",
            "",
            "[Install]",
            "WantedBy=default.target",
            "",
        ]
    )


def _check_linux() -> None:
    if not sys.platform.startswith("linux"):
        raise UserError("--install writes a systemd user unit (Linux); here start it with: pimem serve --background")


def _systemctl(*args: str) -> str | None:
    """Run `systemctl --user ARGS`; None when it worked, else its last line of error."""
    done = subprocess.run(["systemctl", "--user", *args], capture_output=True, text=True, timeout=60)
    if done.returncode == 0:
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


def install(locations: Locations, host: str, port: int, background_index: bool, stop_running) -> list[str]:
    """Write the unit and enable it where systemctl is; the lines to print."""
    _check_linux()
    path = unit_path()
    files.write_shared(path, unit_text(locations, host, port, background_index))  # systemd runs what it says
    said = [f"Wrote {path}"]
    if shutil.which("systemctl") is None:
        return [*said, f"systemctl is not available here; where systemd runs, start it at login with: {ENABLE}"]
    stopped = stop_running()
    if stopped is not None:
        said.append(f"Stopped the background server (pid {stopped['pid']}); the service runs it now.")
    problem = _systemctl("daemon-reload") or _systemctl("enable", "--now", UNIT)
    if problem is not None:
        raise UserError(f"wrote {path} but systemctl --user could not enable it ({problem}); run: {ENABLE}")
    return [*said, f"Enabled {UNIT}: pimem serve runs at http://{url_host(host)}:{port} from login on."]


def uninstall() -> list[str]:
    """Disable and remove the unit; the lines to print."""
    _check_linux()
    path = unit_path()
    if not path.exists():
        return [f"No pimem service was installed ({path} does not exist)."]
    if shutil.which("systemctl") is not None:
        _systemctl("disable", "--now", UNIT)  # not enabled, or no user session: removing the file is enough
    path.unlink()
    if shutil.which("systemctl") is not None:
        _systemctl("daemon-reload")
    return [f"Removed {path}"]
