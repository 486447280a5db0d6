"""`pimem` as a real process: run to its end (`pimem`), or started and left running (`start_pimem`)."""

from __future__ import annotations

import os
import subprocess
import sys


def pimem(env: dict, *args: str) -> str:
    """Run `pimem ARGS` with this environment; its stdout (it must succeed)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pimem_index", *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def start_pimem(args, db_path, **kw) -> subprocess.Popen:
    """Start `pimem ARGS` on the index at `db_path` (PIMEM_DB), its output piped."""
    env = dict(os.environ, PIMEM_DB=str(db_path))
    return subprocess.Popen(
        [sys.executable, "-m", "pimem_index", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw
    )
