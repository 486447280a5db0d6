"""A real headless Chromium against `pimem serve`: log in as root, search, open a session, read an entry;
read the sessions list and the usage page, wide and narrow.

Uses Debian's chromium (/usr/bin/chromium) through Playwright's Python package; never
downloads a browser. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from commands import pimem
from pijournal import Journal
from servers import Server, wait_indexed
from usage_world import GPT, OPUS, SECRET, write_usage_world

CHROMIUM = os.environ.get("PIMEM_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser test skipped: the playwright Python package is not installed (pip install playwright)")
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)) and not shutil.which(CHROMIUM):
        pytest.skip(f"browser test skipped: no chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def served(agent_dir, home, tmp_path):
    env = dict(os.environ)
    for key in ("PIMEM_DB", "PIMEM_SESSIONS_DIRS", "DATASETTE_SECRET"):
        env.pop(key, None)
    env["PI_CODING_AGENT_DIR"] = str(agent_dir)
    env["PYTHONUNBUFFERED"] = "1"
    cwd = str(home / "Apps/prjct")
    j = Journal(agent_dir / "sessions", cwd)
    j.session_info("Fix the heron deploy")
    j.user("The heron deploy fails on staging with a timeout. Can you look?")
    j.assistant("I'll check the deploy script first.", tool_calls=[("bash", {"command": "cat deploy.sh"})])
    j.tool_result("bash", "#!/bin/sh\n" + "\n".join(f"echo step {i}  # heron stage" for i in range(200)))
    j.assistant("The heron deploy waits 5s for the health check; raising it to 30s fixes the timeout.")
    j.compaction("The user asked to fix the heron deploy timeout; the health-check wait was raised to 30s.")
    other = Journal(agent_dir / "sessions", str(home / "Apps/fluenty"))
    other.user("translate the onboarding screens")
    server = Server(env)
    link = server.wait_ready()
    token = pimem(env, "token").strip()
    wait_indexed(server, token)
    try:
        yield server, link, j
    finally:
        server.stop()


def test_reviewer_logs_in_searches_opens_a_session_and_reads(browser, served):
    server, link, journal = served
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1200, "height": 900})

    # before logging in: nothing
    response = page.goto(f"{server.url}/-/pi-memory")
    assert response.status == 403
    assert "heron" not in page.content()

    page.goto(link)
    page.goto(f"{server.url}/-/pi-memory")
    assert page.locator("h1").first.inner_text() == "Pi memory"
    assert page.locator("svg.pi-memory-activity rect").count() == 60
    assert "Fix the heron deploy" in page.content()
    page.screenshot(path=str(ARTIFACTS / "pi-memory-overview.png"), full_page=True)

    # search from the overview's box
    page.fill("input[name=q]", "heron timeout")
    page.select_option("select[name=scope]", "global")
    page.click("input[type=submit]")
    page.wait_for_url("**/-/pi-memory/search?**")
    hits = page.locator("ul.pi-memory-hits li")
    assert hits.count() >= 2
    assert page.locator("ul.pi-memory-hits mark").count() >= 2
    assert "translate the onboarding" not in page.content()
    page.screenshot(path=str(ARTIFACTS / "pi-memory-search.png"), full_page=True)

    # open the session of the first hit
    hits.first.locator("a", has_text="session").click()
    page.wait_for_url("**/-/pi-memory/sessions/**")
    assert page.locator("h1").inner_text() == "Fix the heron deploy"
    entries = page.locator(".pi-memory-entry")
    assert entries.count() == 5
    kinds = [entries.nth(i).get_attribute("class") for i in range(5)]
    assert [k.split("kind-")[1] for k in kinds] == ["user", "assistant", "tool_result", "assistant", "compaction"]
    folded = page.locator(".pi-memory-entry.kind-tool_result details")
    assert folded.count() == 1 and not folded.first.evaluate("d => d.open")
    folded.locator("summary").click()
    assert folded.first.evaluate("d => d.open")
    assert page.locator("text=echo step 199").is_visible()
    page.screenshot(path=str(ARTIFACTS / "pi-memory-session.png"), full_page=True)

    # read one entry on its own page
    page.locator(".pi-memory-entry.kind-compaction h3 a").click()
    page.wait_for_url("**/-/pi-memory/read?**")
    text = page.locator(".pi-memory-text").inner_text()
    assert "health-check wait was raised to 30s" in text
    page.screenshot(path=str(ARTIFACTS / "pi-memory-read.png"), full_page=True)

    # Datasette's own entries table shows the text beside the pointer
    page.goto(f"{server.url}/history/entries")
    assert page.locator(".pi-memory-cell").count() >= 5
    page.locator(".pi-memory-cell").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "pi-memory-entries-table.png"), full_page=False)
    page.close()


@pytest.fixture
def served_usage(agent_dir, home):
    """`pimem serve` over usage_world's three sessions (two projects, three models, a failed call)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PIMEM_DB", "PIMEM_SESSIONS_DIRS", "DATASETTE_SECRET")}
    env.update(PI_CODING_AGENT_DIR=str(agent_dir), PYTHONUNBUFFERED="1")
    made = write_usage_world(agent_dir / "sessions", home)
    server = Server(env)
    link = server.wait_ready()
    wait_indexed(server, pimem(env, "token").strip())
    try:
        yield server, link, made
    finally:
        server.stop()


def _fits(page, width: int) -> bool:
    """Whether the page needs no horizontal scrolling at this viewport width."""
    return page.evaluate("document.documentElement.scrollWidth") <= width


def test_a_reviewer_reads_the_sessions_list_and_the_usage_page_wide_and_narrow(browser, served_usage):
    server, link, made = served_usage
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    assert page.goto(f"{server.url}/-/pi-memory/usage").status == 403
    page.goto(link)

    # the sessions list, sorted by cost from its column header
    page.goto(f"{server.url}/-/pi-memory/sessions")
    rows = page.locator("table.pm-list tbody tr")
    assert rows.count() == 3
    page.locator("th a", has_text="Cost").click()
    page.wait_for_url("**/-/pi-memory/sessions?sort=cost")
    first = rows.first.inner_text()
    assert "Fix the flaky deploy" in first and "$2.50" in first and SECRET not in page.content()
    page.screenshot(path=str(ARTIFACTS / "pi-memory-sessions.png"), full_page=True)

    # the usage page: a bar of the cost chart opens the sessions it counts
    page.goto(f"{server.url}/-/pi-memory/usage")
    assert page.locator(".pm-headline strong").first.inner_text() == "$2.75"
    page.screenshot(path=str(ARTIFACTS / "pi-memory-usage.png"), full_page=True)
    page.locator(f".pm-chart a.pm-seg[aria-label*='{OPUS}']").first.click()
    page.wait_for_url(f"**/-/pi-memory/sessions?since=*model={OPUS}")
    assert rows.count() == 1 and "Fix the flaky deploy" in rows.first.inner_text()
    rows.first.locator("td.pm-title a").click()
    page.wait_for_url(f"**/-/pi-memory/sessions/{made['big'].session_id}")
    header = page.locator(".pi-memory-session-figures").inner_text()
    assert "$2.50" in header and OPUS in header and GPT not in header

    # the same two pages on a phone: nothing needs scrolling sideways
    page.set_viewport_size({"width": 400, "height": 860})
    for path, name in (("sessions", "pi-memory-sessions-narrow.png"), ("usage", "pi-memory-usage-narrow.png")):
        page.goto(f"{server.url}/-/pi-memory/{path}")
        assert _fits(page, 400), path
        page.screenshot(path=str(ARTIFACTS / name), full_page=True)
    page.close()
