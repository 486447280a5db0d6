"""The session page for a reviewer, through a real Datasette: built and rendered on its own threads so a slow
page never holds the API, a summary of what the session changed and what failed, links between failures,
figures for the branch shown. Journals: the real-Pi corpus and the writer."""

from __future__ import annotations

import asyncio
import json
import re
import threading

import pytest
from support.plugin_world import ROOT, make_datasette, page_html, pimem_serve_datasette, running

from datasette_pi_memory.state import PAGE_THREADS, state
from pimem_index.index import indexer


@pytest.fixture
def big_edit(conn, locations, new_journal):
    """A session whose one edit is 10,000 near-identical lines."""
    j = new_journal("Apps/lockfile")
    j.user("bump the heron pin")
    old = "\n".join(["x"] * 10_000)
    new = "\n".join(["x"] * 5_000 + ["PINNED"] + ["x"] * 4_999)
    j.assistant(tool_calls=[("edit", {"path": "deps.lock", "edits": [{"oldText": old, "newText": new}]}, "call-1")])
    j.tool_result("edit", "Successfully replaced 1 block(s) in deps.lock.", call_id="call-1")
    indexer.index_all(conn, locations)
    return j


@pytest.mark.asyncio
async def test_api_search_answers_while_every_page_thread_is_busy_rendering(locations, big_edit):
    async with running(make_datasette(locations)) as real_pi_ds:
        memory = state(real_pi_ds)
        release = threading.Event()
        held = [memory.pages.submit(release.wait) for _ in range(PAGE_THREADS)]  # pages as slow as can be
        try:
            page = asyncio.ensure_future(
                real_pi_ds.client.get(f"/-/pi-memory/sessions/{big_edit.session_id}", actor=ROOT)
            )
            search = asyncio.ensure_future(
                real_pi_ds.client.get("/-/pi-memory/api/search", params={"q": "heron", "scope": "global"}, actor=ROOT)
            )
            done, _pending = await asyncio.wait({page, search}, return_when=asyncio.FIRST_COMPLETED)
            assert search in done and search.result().status_code == 200
            assert search.result().json()["results"]  # a real answer, not an error
            assert not page.done()  # the page still waits for a page thread: it shares none with the API
        finally:
            release.set()
        res, again = await asyncio.gather(
            page, real_pi_ds.client.get("/-/pi-memory/api/search", params={"q": "heron", "scope": "global"}, actor=ROOT)
        )
        assert res.status_code == 200 and "+ PINNED" in res.text and again.status_code == 200
        assert all(f.done() for f in held)


# ---- on the real-Pi corpus ----------------------------------------------------------------------------


def section(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i : text.index(end, i)]


def review_of(text: str) -> str:
    return section(text, '<section class="pi-memory-review"', "</section>")


@pytest.mark.asyncio
async def test_the_summary_lists_the_files_the_session_changed_each_with_its_diffs(real_pi_ds, real_pi):
    review = review_of(await page_html(real_pi_ds, f"/-/pi-memory/sessions/{real_pi.session('edit_heavy')}"))
    app = section(review, "<code>src/app.py</code>", "</details>")
    assert "2 changes" in app and '<span class="pm-add">+4</span> <span class="pm-del">&minus;4</span>' in app
    assert '<span class="pi-memory-ln">10</span>+     return b * a  # commutes</div>' in app  # Pi's diff, per change
    notes = section(review, "<code>NOTES.md</code>", "</details>")
    assert "1 change " in notes and '<span class="pi-memory-ln">4</span>+ - DONE: division' in notes
    failed = review_of(await page_html(real_pi_ds, f"/-/pi-memory/sessions/{real_pi.session('with_failures')}"))
    assert "No edit or write call changed a file." in failed
    assert '<details class="pi-memory-file">' not in failed
    assert "0 files, 0 changes" in failed  # the edit that failed changed nothing


@pytest.mark.asyncio
async def test_failed_calls_and_errored_turns_are_listed_as_links_to_them(real_pi_ds, real_pi):
    sid = real_pi.session("with_failures")
    review = review_of(await page_html(real_pi_ds, f"/-/pi-memory/sessions/{sid}"))
    failed = real_pi.conn.execute(
        "SELECT id FROM entries WHERE session_id = ? AND (is_error = 1 OR stop_reason IN ('error', 'aborted')) "
        "ORDER BY line",
        (sid,),
    ).fetchall()
    links = [f'<a href="?entry={eid}">' for (eid,) in failed]
    assert len(links) == 6 and all(link in review for link in links)
    assert [review.index(link) for link in links] == sorted(review.index(link) for link in links)  # journal order
    assert "edit failed</a> <code>src/app.py</code>" in review and "turn aborted</a>" in review
    fine = review_of(await page_html(real_pi_ds, f"/-/pi-memory/sessions/{real_pi.session('edit_heavy')}"))
    assert "No failed call, failed command or errored turn." in fine
    assert "?entry=" not in fine.split('id="pi-memory-failures"')[1]


@pytest.mark.asyncio
async def test_each_failure_links_to_the_previous_and_the_next_failure(real_pi_ds, real_pi):
    text = await page_html(real_pi_ds, f"/-/pi-memory/sessions/{real_pi.session('with_failures')}")
    navs = [section(text, f"failure {n} of 6", "</span>") for n in range(1, 7)]
    first, second, last = navs[0], navs[1], navs[5]
    assert "next &rarr;" in first and "&larr; previous" not in first
    assert "&larr; previous" in second and "next &rarr;" in second
    assert "&larr; previous" in last and "next &rarr;" not in last
    ids = [
        e
        for (e,) in real_pi.conn.execute(
            "SELECT id FROM entries WHERE session_id = ? "
            "AND (is_error = 1 OR stop_reason IN ('error', 'aborted')) ORDER BY line",
            (real_pi.session("with_failures"),),
        )
    ]
    assert (
        f'<a href="?entry={ids[0]}">&larr; previous</a>' in second
        and f'<a href="?entry={ids[2]}">next &rarr;</a>' in second
    )
    assert "failure 1 of" not in await page_html(real_pi_ds, f"/-/pi-memory/sessions/{real_pi.session('edit_heavy')}")


@pytest.mark.asyncio
async def test_the_error_count_in_the_header_links_to_the_failures(real_pi_ds, real_pi):
    text = await page_html(real_pi_ds, f"/-/pi-memory/sessions/{real_pi.session('with_failures')}")
    assert '<a href="#pi-memory-failures" class="pm-err-link"><strong class="pm-err">4</strong> errors</a>' in text
    assert 'id="pi-memory-failures"' in text
    fine = await page_html(real_pi_ds, f"/-/pi-memory/sessions/{real_pi.session('edit_heavy')}")
    assert "<strong>0</strong> errors" in fine and "pm-err-link" not in fine


def _path_usage(journal, leaf: str) -> tuple[int, int, int]:
    """Input tokens, output tokens and assistant messages on the path from the root to `leaf`, from the journal."""
    lines = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    by_id = {line["id"]: line for line in lines}
    at, inp, out, n = leaf, 0, 0, 0
    while at:
        line = by_id[at]
        message = line.get("message") or {}
        if message.get("role") == "assistant":
            inp, out, n = inp + message["usage"]["input"], out + message["usage"]["output"], n + 1
        at = line.get("parentId")
    return inp, out, n


@pytest.mark.asyncio
async def test_the_header_figures_follow_the_branch_shown(real_pi_ds, real_pi):
    sid, journal = real_pi.session("rich"), real_pi.corpus.journal("rich")
    leaf = json.loads(journal.read_text().splitlines()[-3])["id"]  # the answer after /tree navigation
    assert (
        leaf
        == real_pi.conn.execute(
            "SELECT id FROM entries WHERE session_id = ? AND kind = 'assistant' ORDER BY line DESC LIMIT 1", (sid,)
        ).fetchone()[0]
    )
    branch_in, branch_out, _n = _path_usage(journal, leaf)
    whole = real_pi.conn.execute(
        "SELECT sum(input_tokens), sum(output_tokens) FROM entries WHERE session_id = ? AND kind = 'assistant'", (sid,)
    ).fetchone()
    assert branch_in < whole[0]  # the corpus gives the branch fewer tokens than the session
    figures = section(
        await page_html(real_pi_ds, f"/-/pi-memory/sessions/{sid}", leaf=leaf),
        "pi-memory-session-figures",
        "</div>\n</div>",
    )
    assert f'title="{branch_in:,} in, {branch_out:,} out"' in figures
    assert f'title="{whole[0]:,} in, {whole[1]:,} out"' not in figures
    plain = await page_html(real_pi_ds, f"/-/pi-memory/sessions/{sid}")
    assert f'title="{whole[0]:,} in, {whole[1]:,} out"' in plain


@pytest.mark.asyncio
async def test_compaction_summaries_render_as_markdown_with_html_disabled(
    real_pi_ds, real_pi, conn, locations, new_journal
):
    text = await page_html(real_pi_ds, f"/-/pi-memory/sessions/{real_pi.session('compacted')}")
    assert "<h2>Goal</h2>" in text and "<li>compacted twice</li>" in text
    assert "## Goal" not in text
    j = new_journal("Apps/compact")
    j.user("hello")
    j.assistant("hi")
    j.compaction("## Goal\n<script>alert(1)</script> **kept**")
    indexer.index_all(conn, locations)
    async with running(make_datasette(locations)) as mine:
        page = await page_html(mine, f"/-/pi-memory/sessions/{j.session_id}")
    assert "<strong>kept</strong>" in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)</script>" not in page


@pytest.mark.asyncio
async def test_the_forks_slot_shows_a_forks_template_when_there_is_one_and_nothing_when_absent(real_pi, tmp_path):
    sid = real_pi.session("fork_child")
    async with running(make_datasette(real_pi.locations)) as plain:
        without = await page_html(plain, f"/-/pi-memory/sessions/{sid}")
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "pi_memory_forks.html").write_text('<p class="forks-slot">forks of {{ session.session_id }}</p>')
    async with running(make_datasette(real_pi.locations, template_dir=str(templates))) as slotted:
        filled = await page_html(slotted, f"/-/pi-memory/sessions/{sid}")
    assert f'<p class="forks-slot">forks of {sid}</p>' in section(
        filled, '<header class="pi-memory-session-header">', "</header>"
    )
    assert "forks-slot" not in without


def test_tool_calls_carry_their_session(real_pi):
    rows = real_pi.conn.execute(
        "SELECT c.session_id, e.session_id FROM tool_calls c JOIN entries e ON e.rowid = c.entry_rowid"
    ).fetchall()
    assert rows and all(call == entry for call, entry in rows)
    assert all(call is not None for call, _ in rows)


@pytest.mark.asyncio
async def test_files_most_edited_takes_a_session_or_a_project(real_pi):
    async with running(pimem_serve_datasette(real_pi.locations)) as real_pi_ds:

        async def rows(**params):
            res = await real_pi_ds.client.get(
                "/history/files_most_edited.json", params={"_shape": "array", **params}, actor=ROOT
            )
            assert res.status_code == 200, res.text
            return {(r["path"], r["session_id"]): r["edits"] for r in res.json()}

        edit_heavy, clone = real_pi.session("edit_heavy"), real_pi.session("all_tools")
        one = await rows(session_id=edit_heavy)
        assert one == {("src/app.py", edit_heavy): 2, ("NOTES.md", edit_heavy): 1}
        everything = await rows()
        assert set(one) < set(everything) and any(sid != edit_heavy for _path, sid in everything)
        alpha, beta = str(real_pi.corpus.projects["alpha"]), str(real_pi.corpus.projects["beta"])
        assert set(await rows(project=alpha)) == set(everything)
        assert await rows(project=beta) == {}  # the beta project's sessions changed no file
        assert await rows(project=alpha[:-1]) == {}  # a folder's prefix is not the folder
        assert ("src/app.py", real_pi.session("with_failures")) not in everything  # its only edit failed
        assert clone in {sid for _path, sid in everything}  # all_tools wrote a file


@pytest.mark.asyncio
async def test_every_link_in_the_summary_and_the_failure_links_answers(real_pi_ds, real_pi):
    for role in ("edit_heavy", "with_failures", "rich"):
        url = f"/-/pi-memory/sessions/{real_pi.session(role)}"
        text = await page_html(real_pi_ds, url)
        links = set(re.findall(r'href="(\?entry=[^"#]+)"', review_of(text)))
        links |= set(re.findall(r'href="(\?entry=[^"]+)">(?:&larr; previous|next &rarr;)', text))  # failure to failure
        assert links, role
        for link in sorted(links):
            res = await real_pi_ds.client.get(url + link.replace("&amp;", "&"), actor=ROOT, follow_redirects=True)
            entry = link.split("entry=")[1].split("&")[0]
            assert res.status_code == 200 and f'id="entry-{entry}"' in res.text, (role, link)
        missing = await real_pi_ds.client.get(url + "?entry=nosuchentry", actor=ROOT, follow_redirects=True)
        assert missing.status_code == 400  # an entry the session lacks is a one-line error, not a 404 or 500


@pytest.mark.asyncio
async def test_a_session_that_changed_nothing_and_never_failed_says_so_in_one_line(real_pi_ds, real_pi):
    review = review_of(await page_html(real_pi_ds, f"/-/pi-memory/sessions/{real_pi.session('fork_parent')}"))
    assert "No file changed and nothing failed" in review
    assert "<h2>" not in review and "Files changed" not in review


@pytest.mark.asyncio
async def test_a_session_page_is_headed_by_its_name_else_its_first_user_message(real_pi_ds, real_pi):
    named = await page_html(real_pi_ds, f"/-/pi-memory/sessions/{real_pi.session('rich')}")
    assert "<h1>Fixture: the rich session</h1>" in named
    unnamed = await page_html(real_pi_ds, f"/-/pi-memory/sessions/{real_pi.session('with_failures')}")
    assert "<h1>Try a few things that will fail.</h1>" in unnamed
    assert "<title>Try a few things that will fail. - Pi memory</title>" in unnamed
    assert "<h1>Session</h1>" not in unnamed and "<h1>Session</h1>" not in named
