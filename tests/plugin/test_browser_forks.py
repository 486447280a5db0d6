"""A real headless Chromium against `pimem serve` on the real-Pi corpus: a forked pair and the sessions list, at
laptop and phone widths; screenshots go to test-artifacts/."""

from __future__ import annotations

import pytest
from support.chromium import ARTIFACTS, serve_env
from support.commands import pimem
from support.real_pi import copy_corpus
from support.servers import Server, wait_indexed

pytestmark = pytest.mark.slow


def test_a_forked_pair_links_both_ways_wide_and_narrow(browser, tmp_path):
    corpus = copy_corpus(tmp_path / "corpus")
    env = serve_env(corpus.agent)
    env["HOME"] = str(tmp_path / "home")
    server = Server(env)
    try:
        link = server.wait_ready()
        wait_indexed(server, pimem(env, "token").strip())
        parent = corpus.journal("fork_parent").stem.split("_", 1)[1]
        fork = corpus.journal("fork_child").stem.split("_", 1)[1]
        ARTIFACTS.mkdir(exist_ok=True)
        page = browser.new_page()
        page.goto(link)  # a login link works once: one page, two widths
        for width, height in ((1280, 900), (390, 844)):
            page.set_viewport_size({"width": width, "height": height})
            page.goto(f"{server.url}/-/pi-memory/sessions/{fork}")
            forked_from = page.locator(".pi-memory-forks a").first
            assert "What is this project?" in forked_from.inner_text()
            page.screenshot(path=str(ARTIFACTS / f"pi-memory-fork-child-{width}.png"), full_page=False)
            forked_from.click()
            page.wait_for_url(f"**/-/pi-memory/sessions/{parent}")
            forks = page.locator(".pi-memory-fork-list li")
            assert forks.count() == 2 and page.locator("text=Forked into 2 sessions").is_visible()
            box = page.locator(".pi-memory-forks").bounding_box()
            assert box and box["x"] + box["width"] <= width, "the fork list stays inside the page"
            page.screenshot(path=str(ARTIFACTS / f"pi-memory-fork-parent-{width}.png"), full_page=False)
            page.goto(f"{server.url}/-/pi-memory/sessions")
            assert page.locator("tr.pm-forked").count() == 2
            page.screenshot(path=str(ARTIFACTS / f"pi-memory-sessions-forks-{width}.png"), full_page=True)
            scroll = page.evaluate("document.documentElement.scrollWidth")
            assert scroll <= width + 1, f"the sessions list scrolls sideways at {width} px ({scroll})"
        page.close()
    finally:
        server.stop()
