"""Files that other programs run or obey (the Pi extension, the systemd unit) and their folders.

Whatever the umask, they are written readable by all and writable by their owner only (0644, folders
0755): anyone else who could write them could make Pi or systemd run their code as this user.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from pimem_index import UserError, make_folder

FILE_MODE = 0o644
FOLDER_MODE = 0o755


def make_folders(folder: Path) -> None:
    """Create the folder and its missing parents 0755; an existing folder loses write access for others."""
    make_folder(folder, FOLDER_MODE)
    mode = folder.stat().st_mode & 0o777
    if mode & 0o022:
        try:
            os.chmod(folder, mode & ~0o022)
        except PermissionError:
            raise UserError(
                f"{folder} is writable by others and is not yours to change; fix it first (e.g. chmod go-w {folder})"
            ) from None


def write_shared(path: Path, text: str) -> None:
    """Write atomically with mode 0644 from the first byte, whatever the umask (its folder: make_folders)."""
    make_folders(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
