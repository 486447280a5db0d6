"""Screenshots of the session page on journals the real Pi wrote (an edit-heavy session, a session with
failures, a forked pair), at a laptop's and a phone's width, through a real Chromium against `pimem serve`.
The PNGs go to test-artifacts/ (gitignored) for a person to look at; the test checks what a reviewer needs
to see on each (the summary, the diffs, the failures) and that nothing is wider than the screen."""

from __future__ import annotations

import pytest
from support.chromium import ARTIFACTS, serve_env
from support.commands import pimem
from support.real_pi import copy_corpus
from support.real_pi_index import session_of
from support.servers import Server, wait_indexed

pytestmark = pytest.mark.slow

WIDTHS = (1280, 390)


@pytest.fixture
def served_corpus(tmp_path, monkeypatch):
    corpus = copy_corpus(tmp_path / "corpus")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    env = serve_env(corpus.agent)
    server = Server(env)
    link = server.wait_ready()
    wait_indexed(server, pimem(env, "token").strip())
    try:
        yield server, link, corpus
    finally:
        server.stop()


def shoot(page, url: str, name: str) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(url)
        assert page.evaluate("document.documentElement.scrollWidth") <= width, (name, width)  # no sideways scroll
        page.screenshot(path=str(ARTIFACTS / f"pi-memory-session-{name}-{width}.png"), full_page=True)


def test_session_pages_of_real_pi_journals_at_laptop_and_phone_widths(browser, served_corpus):
    server, link, corpus = served_corpus
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(link)
    base = f"{server.url}/-/pi-memory/sessions/"

    edits = base + session_of(corpus.journal("edit_heavy"))
    page.goto(edits)
    files = page.locator("details.pi-memory-file")
    assert files.count() == 2 and not files.first.evaluate("d => d.open")
    files.first.locator("summary").click()
    assert files.first.locator(".op-add").first.is_visible()
    assert "oldText" not in page.content() and '"edits"' not in page.content()
    shoot(page, edits, "edit-heavy")

    failures = base + session_of(corpus.journal("with_failures"))
    page.goto(failures)
    assert page.locator("ol.pi-memory-failures li").count() == 6
    page.locator("a.pm-err-link").click()
    page.wait_for_url("**#pi-memory-failures")
    page.locator(".pi-memory-failnav").first.locator("a", has_text="next").click()
    page.wait_for_url("**#entry-*")
    shoot(page, failures, "failures")

    for role in ("fork_parent", "fork_child"):
        url = base + session_of(corpus.journal(role))
        page.goto(url)
        assert page.locator(".pi-memory-entry").count() >= 2
        shoot(page, url, role.replace("_", "-"))
    page.close()
