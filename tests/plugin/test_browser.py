"""A real headless Chromium against `pimem serve`: log in as root, search, open a session, read an entry;
read the sessions list and the usage page, wide and narrow.

Uses Debian's chromium (/usr/bin/chromium) through Playwright's Python package; never
downloads a browser. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import pytest
from support.chromium import ARTIFACTS, serve_env
from support.commands import pimem
from support.pijournal import Journal
from support.servers import Server, wait_indexed
from support.usage_world import GPT, OPUS, SECRET, write_usage_world

pytestmark = pytest.mark.slow  # real processes: pytest -m 'not slow' is the fast loop


@pytest.fixture
def served(agent_dir, home, tmp_path):
    env = serve_env(agent_dir)
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


LONG_PROJECT = "Apps/prjct/frontendmonorepowithalongname/packages/designsystemcomponents"


@pytest.fixture
def served_layout(agent_dir, home, tmp_path):
    """`pimem serve` over a project with a long sub-folder and a compaction summary written in markdown."""
    env = serve_env(agent_dir)
    Journal(agent_dir / "sessions", str(home / "Apps/prjct")).user("the root of the project")
    deep = Journal(agent_dir / "sessions", str(home / LONG_PROJECT))
    deep.session_info("Design system work")
    deep.user("rename the button tokens")
    deep.compaction(
        "## Goal\nRename the button tokens\n\n## Progress\n- [x] colors\n- [ ] spacing\n\n<b>bold tag</b>\n\n"
        "![pixel](http://127.0.0.2:9/pixel.png?leak=button-tokens)"
    )
    server = Server(env)
    link = server.wait_ready()
    wait_indexed(server, pimem(env, "token").strip())
    try:
        yield server, link
    finally:
        server.stop()


@pytest.fixture
def served_usage(agent_dir, home):
    """`pimem serve` over usage_world's three sessions (two projects, three models, a failed call)."""
    env = serve_env(agent_dir)
    made = write_usage_world(agent_dir / "sessions", home)
    server = Server(env)
    link = server.wait_ready()
    wait_indexed(server, pimem(env, "token").strip())
    try:
        yield server, link, made
    finally:
        server.stop()


@pytest.fixture
def served_conversation(agent_dir, home):
    """`pimem serve` over one session with thinking, an edit, a failed test run, a write, a label,
    a model change, a failed bash run and a fork."""
    env = serve_env(agent_dir)
    j = Journal(agent_dir / "sessions", str(home / "Apps/prjct"))
    j.session_info("Move the login token out of the code")
    user = j.user("The login token is hardcoded in src/auth.py. Move it to the environment and run the tests.")
    j.thinking_level_change("high")
    j.assistant(
        "I'll move the token to an environment variable, then run the auth tests.",
        thinking="The token sits in src/auth.py as a literal. Read it from TOKEN instead; tests need it set.",
        tool_calls=[
            (
                "edit",
                {
                    "path": "src/auth.py",
                    "oldText": "import os\n\nTOKEN = 'ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'\nTIMEOUT = 30",
                    "newText": "import os\n\nTOKEN = os.environ['TOKEN']\nTIMEOUT = 30",
                },
                "call-edit",
            ),
            ("bash", {"command": "pytest -q tests/test_auth.py"}, "call-test"),
        ],
    )
    j.tool_result("edit", "Successfully replaced text in src/auth.py.", call_id="call-edit")
    j.tool_result(
        "bash",
        "F.\nFAILED tests/test_auth.py::test_login - KeyError: 'TOKEN'\n1 failed, 1 passed in 0.12s",
        call_id="call-test",
        is_error=True,
    )
    j.label(user, "token refactor")
    j.model_change("gpt-5")
    j.assistant(
        "The tests need TOKEN set; adding it to conftest.py.",
        tool_calls=[
            (
                "write",
                {"path": "tests/conftest.py", "content": "import os\n\nos.environ.setdefault('TOKEN', 'test-token')\n"},
                "call-write",
            )
        ],
    )
    j.tool_result("write", "Successfully wrote 58 bytes to tests/conftest.py", call_id="call-write")
    j.bash("make lint", "src/auth.py:3:1: F401 'sys' imported but unused\nmake: *** [lint] Error 1", exit_code=2)
    j.assistant("Tests pass now; lint reports one unused import.")
    j.branch_from(user)
    j.assistant("Alternatively, read the token from a file outside the repository.")
    j.user("No, keep the environment variable.")
    server = Server(env)
    link = server.wait_ready()
    wait_indexed(server, pimem(env, "token").strip())
    try:
        yield server, link, j
    finally:
        server.stop()


def test_the_overview_chart_spans_the_page(browser, served_layout):
    server, link = served_layout
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(link)
    page.goto(f"{server.url}/-/pi-memory")
    chart = page.locator("svg.pi-memory-activity").bounding_box()
    content = page.locator("h1").first.evaluate("h => h.parentElement.getBoundingClientRect().width")
    page.screenshot(path=str(ARTIFACTS / "pi-memory-overview-wide.png"), full_page=True)
    assert chart["width"] >= 0.9 * content, (chart, content)
    assert chart["height"] <= 200  # as wide as the page, not taller than a chart should be
    page.close()


# The text of an element line by line, as the browser laid it out.
LINES_OF = """element => {
    const range = document.createRange(), lines = new Map();
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
        for (let i = 0; i < text.length; i++) {
            range.setStart(text, i); range.setEnd(text, i + 1);
            const top = Math.round(range.getBoundingClientRect().top);
            lines.set(top, (lines.get(top) || '') + text.data[i]);
        }
    }
    return [...lines.values()];
}"""


def test_the_overview_breaks_a_long_path_only_after_a_separator_and_stays_in_the_page(browser, served_layout):
    server, link = served_layout
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 700, "height": 900})
    page.goto(link)
    page.goto(f"{server.url}/-/pi-memory")
    cell = page.locator("table.pi-memory-table td code", has_text="designsystemcomponents").first
    lines = cell.evaluate(LINES_OF)
    page.screenshot(path=str(ARTIFACTS / "pi-memory-overview-narrow.png"), full_page=True)
    assert "".join(lines).endswith("designsystemcomponents") and len(lines) > 1
    for line in lines[:-1]:  # every line but the last ends at a separator, never inside a word
        assert line.endswith("/") or line.endswith("-"), lines
    assert page.evaluate("document.documentElement.scrollWidth") <= 700  # nothing pushes the page sideways
    page.close()


def test_the_summaries_page_renders_a_summarys_markdown_without_its_html(browser, served_layout):
    server, link = served_layout
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(link)
    page.goto(f"{server.url}/-/pi-memory/summaries?scope=global")
    summary = page.locator(".pi-memory-markdown").first
    assert summary.locator("h2", has_text="Goal").count() == 1
    assert summary.locator("li").count() == 2
    assert "<b>bold tag</b>" in summary.inner_text() and summary.locator("b").count() == 0
    page.screenshot(path=str(ARTIFACTS / "pi-memory-summaries.png"), full_page=True)


def test_the_pages_load_nothing_from_other_origins_and_break_no_script_of_their_own(browser, served_layout):
    server, link = served_layout
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requested: list[str] = []
    refused: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on(
        "console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None
    )
    page.goto(link)
    for path in ("/-/pi-memory", "/-/pi-memory/summaries?scope=global", "/-/pi-memory/sessions", "/-/pi-memory/usage"):
        page.goto(f"{server.url}{path}")
        page.wait_for_load_state("networkidle")
    summary = page.goto(f"{server.url}/-/pi-memory/summaries?scope=global")
    assert summary is not None and "default-src 'self'" in summary.headers["content-security-policy"]
    assert page.locator(".pi-memory-markdown a", has_text="image: pixel").count() == 1  # the image is a link
    assert page.locator(".pi-memory-markdown img").count() == 0
    assert [url for url in requested if not url.startswith(server.url)] == []  # the pixel was never fetched
    assert any("/-/static/" in url for url in requested)  # Datasette's own scripts still load
    assert refused == []  # and the policy blocked none of them
    page.close()


def test_a_session_reads_as_a_conversation_at_laptop_and_phone_widths(browser, served_conversation):
    server, link, journal = served_conversation
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(link)
    url = f"{server.url}/-/pi-memory/sessions/{journal.session_id}"
    page.goto(url)
    assert page.locator(".pi-memory-call").count() == 3
    assert page.locator(".pi-memory-call.failed").count() == 1
    assert (
        page.locator(".pi-memory-entry .op-del").first.inner_text().startswith("- TOKEN = 'ghp_[REDACTED]'")
    )  # not the summary's folded copy
    assert "a1B2c3D4" not in page.content()
    thinking = page.locator("details.pi-memory-thinking")
    assert not thinking.first.evaluate("d => d.open")
    thinking.locator("summary").first.click()
    assert thinking.first.evaluate("d => d.open")
    assert page.locator(".pi-memory-mark.fork li").count() == 2
    assert page.locator(".pi-memory-mark.jump").count() == 1
    page.screenshot(path=str(ARTIFACTS / "pi-memory-conversation-1280.png"), full_page=True)

    page.set_viewport_size({"width": 400, "height": 860})
    page.reload()
    assert page.locator(".pi-memory-call").count() == 3
    assert page.evaluate("document.documentElement.scrollWidth") <= 400  # nothing wider than the phone
    page.screenshot(path=str(ARTIFACTS / "pi-memory-conversation-400.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})

    # a link to an entry lands on it
    last = journal.last_id
    page.goto(f"{url}?entry={last}")
    page.wait_for_function("window.scrollY > 0")
    assert page.locator(f"#entry-{last}").is_visible()
    assert page.evaluate(f"document.getElementById('entry-{last}').getBoundingClientRect().top") < 900
    page.goto(url)

    # following the other branch shows only its path
    page.locator(".pi-memory-mark.fork li").nth(1).locator("a", has_text="follow this branch").click()
    page.wait_for_url("**leaf=**")
    assert page.locator(".pi-memory-view").is_visible()
    assert page.locator(".pi-memory-entry").count() == 3 and page.locator(".pi-memory-call").count() == 0
    page.screenshot(path=str(ARTIFACTS / "pi-memory-conversation-branch.png"), full_page=True)
    page.close()


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
