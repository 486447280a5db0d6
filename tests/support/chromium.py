"""Debian's Chromium through Playwright's Python package (never a downloaded browser), and the environment
`pimem serve` runs in for browser tests. Screenshots go to test-artifacts/ (gitignored)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("PIMEM_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM_ARGS = [  # without the background-networking flags, the closed network refuses its many connections
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextlib.contextmanager
def chromium() -> Iterator:
    """A headless Chromium, or the test skipped naming what is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser test skipped: the playwright Python package is not installed (pip install playwright)")
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)) and not shutil.which(CHROMIUM):
        pytest.skip(f"browser test skipped: no chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def serve_env(agent_dir: Path) -> dict:
    """The environment `pimem serve` runs in: this agent folder, no inherited index or journal folders."""
    env = dict(os.environ)
    for key in ("PIMEM_DB", "PIMEM_SESSIONS_DIRS", "DATASETTE_SECRET"):
        env.pop(key, None)
    env["PI_CODING_AGENT_DIR"] = str(agent_dir)
    env["PYTHONUNBUFFERED"] = "1"
    return env
