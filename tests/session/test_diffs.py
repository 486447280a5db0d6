"""Diffs on the session page: the one Pi recorded in an edit's result (`details.diff`, not a unified diff),
else one computed from the edit's old and new text at a bounded cost, with only the sizes and the folded
texts past a cap. Pi's diffs come from the real-Pi corpus (edit_heavy); the large edits from the writer."""

from __future__ import annotations

import random
import time

import pytest
import pytest_asyncio
from support.plugin_world import ROOT, make_datasette, running
from support.real_pi_index import indexed_corpus

from pimem_index.index import indexer
from pimem_index.session import conversation, diffs

PI_DIFF = "    ...\n  6     return a - b\n  7 \n  9 def mul(a, b):\n-10     return a * b\n+10     return b * a"


@pytest.fixture
def world(tmp_path, monkeypatch):
    indexed = indexed_corpus(tmp_path, monkeypatch)
    yield indexed
    indexed.conn.close()


async def session_page(locations, session_id: str) -> str:
    async with running(make_datasette(locations)) as ds:
        res = await ds.client.get(f"/-/pi-memory/sessions/{session_id}", actor=ROOT)
    assert res.status_code == 200, res.text[:500]
    return res.text


def shown(diff: dict) -> list[tuple]:
    return [(d["op"], d["old"], d["new"], d["text"]) for d in diff["lines"]]


def test_pis_diff_reads_as_lines_with_file_line_numbers_and_gaps():
    diff = diffs.recorded(PI_DIFF).as_dict()
    assert shown(diff) == [
        ("…", None, None, ""),
        (" ", None, 6, "    return a - b"),
        (" ", None, 7, ""),
        (" ", None, 9, "def mul(a, b):"),
        ("-", 10, None, "    return a * b"),
        ("+", None, 10, "    return b * a"),
    ]
    assert (diff["removed"], diff["added"]) == (1, 1)
    assert not any(d["text"].startswith(("10", " 6", "...")) for d in diff["lines"])  # numbers are not text


def test_a_line_of_pis_diff_that_does_not_read_as_pi_writes_it_is_kept_as_text():
    diff = diffs.recorded("-1 old\n+1 new\nno number here").as_dict()
    assert shown(diff)[-1] == (" ", None, None, "no number here")
    assert shown(diff)[:2] == [("-", 1, None, "old"), ("+", None, 1, "new")]


@pytest.mark.asyncio
async def test_the_session_page_shows_the_diff_pi_recorded_with_its_line_numbers(world):
    text = await session_page(world.locations, world.session("edit_heavy"))
    assert '<div class="op-add"><span class="pi-memory-ln">10</span>+     return b * a  # commutes</div>' in text
    assert "The diff Pi showed for its 3 replacements" in text
    assert "Replacement 1 of 3" not in text  # Pi's one diff, not three computed ones
    assert "  ...\n" not in text and ">    ...<" not in text  # a gap is a gap line, not Pi's dots


def test_a_failed_edit_has_no_recorded_diff_and_is_diffed_from_its_text(world):
    data = conversation.page(world.conn, world.locations, world.session("with_failures"))
    (call,) = [
        b["call"]
        for item in data["items"]
        if item["type"] == "entry"
        for b in item["entry"]["blocks"]
        if b["kind"] == "tool_call" and b["call"]["name"] == "edit"
    ]
    assert call["result"]["is_error"] and call["result"]["diff"] is None
    assert [(d["op"], d["text"]) for d in call["edits"][0]["diff"]["lines"]] == [("-", "def nowhere():"), ("+", "x")]
    assert call["edits"][0]["diff"]["source"] == "computed"


def test_a_computed_diff_holds_both_texts_in_order_whatever_path_computed_it():
    rng = random.Random(7)
    for _ in range(200):
        a = [rng.choice(["x", "y", f"u{rng.randint(0, 10**6)}"]) for _ in range(rng.randint(0, 600))]
        b = list(a)
        for _ in range(rng.randint(1, 30)):
            at = rng.randint(0, len(b))
            if rng.random() < 0.5 and b[at:]:
                del b[at]
            else:
                b.insert(at, rng.choice(["x", "q", f"v{rng.random()}"]))
        diff = diffs.compute("\n".join(a), "\n".join(b), context=10**9)
        if a == b:
            assert diff.lines == []  # no change, no lines
            continue
        assert [d["text"] for d in diff.lines if d["op"] in " -"] == a
        assert [d["text"] for d in diff.lines if d["op"] in " +"] == b
        assert [d["new"] for d in diff.lines if d["op"] in " +"] == list(range(1, len(b) + 1))


def test_a_10000_line_near_identical_edit_shows_only_the_change_and_its_context():
    old = "\n".join(["x"] * 10_000)
    new = "\n".join(["x"] * 5_000 + ["y"] + ["x"] * 4_999)
    diff = diffs.compute(old, new)
    assert [(d["op"], d["text"]) for d in diff.lines if d["op"] != " "] == [("-", "x"), ("+", "y")]
    assert len(diff.lines) == 2 + 2 * diffs.CONTEXT  # not the 10,000 lines around it


def test_lines_replaced_in_runs_of_identical_lines_are_found_and_an_edit_past_the_cap_gives_only_sizes():
    old = "\n".join(["x"] * 2_400)
    new = "\n".join("y" if i % 40 == 0 else "x" for i in range(2_400))
    diff = diffs.compute(old, new)  # difflib alone: cubic here (14 s for 2,000 such lines)
    assert diff.source == "computed" and diff.removed == diff.added == 60
    rewrite = diffs.compute("\n".join(["a"] * 3_000), "\n".join(["b"] * 3_000))
    assert rewrite.source == "too_large" and rewrite.lines == []
    assert (rewrite.old_lines, rewrite.new_lines, rewrite.old_chars) == (3_000, 3_000, 5_999)


@pytest_asyncio.fixture
async def big_edit(conn, locations, new_journal):
    j = new_journal("Apps/lockfile")
    j.user("bump one pin")
    old = "\n".join(["x"] * 10_000)
    new = "\n".join(["x"] * 5_000 + ["PINNED"] + ["x"] * 4_999)
    j.assistant(tool_calls=[("edit", {"path": "deps.lock", "edits": [{"oldText": old, "newText": new}]}, "call-1")])
    j.tool_result("edit", "Successfully replaced 1 block(s) in deps.lock.", call_id="call-1")
    rewrite = [{"oldText": "\n".join(["a"] * 3_000), "newText": "\n".join(["b"] * 3_000)}]
    j.assistant(tool_calls=[("edit", {"path": "gen.csv", "edits": rewrite}, "call-2")])
    j.tool_result("edit", "Successfully replaced 1 block(s) in gen.csv.", call_id="call-2")
    indexer.index_all(conn, locations)
    return j.session_id


@pytest.mark.asyncio
async def test_the_session_page_of_a_10000_line_near_identical_edit_renders_in_under_a_second(locations, big_edit):
    async with running(make_datasette(locations)) as ds:
        await ds.client.get(f"/-/pi-memory/sessions/{big_edit}", actor=ROOT)  # templates compiled once
        started = time.perf_counter()
        res = await ds.client.get(f"/-/pi-memory/sessions/{big_edit}", actor=ROOT)
        elapsed = time.perf_counter() - started
    assert res.status_code == 200 and elapsed < 1.0, elapsed
    text = res.text
    assert '<div class="op-add">+ PINNED</div>' in text
    conversation = text[text.index('class="pi-memory-pager"') :]  # below the summary, which shows it once more
    assert conversation.count('<div class="op-same">  x</div>') == 2 * diffs.CONTEXT  # its context, not 10,000
    assert "Too large to compare here: 3,000 lines (5,999 characters) replaced by 3,000 lines" in text
    assert '<details class="pi-memory-raw-edit">' in text and '<details class="pi-memory-raw-edit" open' not in text
