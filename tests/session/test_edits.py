"""Edits as Pi writes them, every shape: a list of replacements, that list sent as a JSON string, and the
legacy top-level oldText/newText. Each reads as its replacements (journal.edit_replacements), shows as
diffs on the session page, names its file in tool_calls, and never appears as raw JSON on a page.

Journals: the real-Pi corpus (edit_heavy, edit_json_string, with_failures), and the writer for the legacy
shape and a malformed string, which Pi 0.73 no longer writes.
"""

from __future__ import annotations

import json
import re

import pytest
from support.plugin_world import page_html

from pimem_index import journal
from pimem_index.index import indexer
from pimem_index.session import conversation

RAW_EDITS = re.compile(r"(&#34;|\")(oldText|newText)(&#34;|\")|edits: \[|\[\{")


def edit_calls(data: dict) -> list[dict]:
    found = []
    for item in data["items"]:
        if item["type"] == "entry":
            found += [
                b["call"] for b in item["entry"]["blocks"] if b["kind"] == "tool_call" and b["call"]["view"] == "edit"
            ]
    return found


def test_every_shape_of_edits_reads_as_its_replacements():
    listed = [{"oldText": "a * b", "newText": "b * a"}, {"oldText": "x", "newText": ""}]
    assert journal.edit_replacements(listed) == [("a * b", "b * a"), ("x", "")]
    assert journal.edit_replacements(json.dumps(listed)) == [("a * b", "b * a"), ("x", "")]
    assert journal.edit_replacements('[{"oldText": "a", "newText": "b"}') is None  # malformed: shown as text
    assert journal.edit_replacements([{"oldText": "a"}]) is None
    assert journal.edit_replacements([]) is None and journal.edit_replacements(7) is None


def test_an_edit_call_is_indexed_as_old_and_new_text_never_as_json():
    text = journal.tool_call_text("edit", {"path": "a.py", "edits": '[{"oldText": "x = 1\\n", "newText": "x = 2\\n"}]'})
    assert text == "edit\npath: a.py\noldText: x = 1\n\nnewText: x = 2\n"
    assert "[{" not in text and '"oldText"' not in text
    legacy = journal.tool_call_text("edit", {"path": "a.py", "oldText": "x", "newText": "y"})
    assert legacy == "edit\npath: a.py\noldText: x\nnewText: y"
    other = journal.tool_call_text("multi", {"edits": [{"oldText": "x", "newText": "y"}]})
    assert other == 'multi\nedits: [{"oldText":"x","newText":"y"}]'  # only the edit tool's edits are replacements


def test_an_edit_with_three_replacements_shows_a_diff_for_each(real_pi):
    data = conversation.page(real_pi.conn, real_pi.locations, real_pi.session("edit_heavy"))
    edits = edit_calls(data)
    assert [len(c["edits"]) for c in edits] == [1, 3, 1]
    three = edits[1]["edits"]
    assert [r["old"]["text"] for r in three] == ["def add(a, b):", "def sub(a, b):", "    return b * a\n"]
    assert ("+", "def sub(a: int, b: int) -> int:") in [(d["op"], d["text"]) for d in three[1]["diff"]["lines"]]
    assert all(a["key"] != "edits" for c in edits for a in c["args"])  # never the raw argument


def test_edits_sent_as_a_json_string_show_as_a_diff_not_as_the_string(real_pi):
    data = conversation.page(real_pi.conn, real_pi.locations, real_pi.session("edit_json_string"))
    notes = [c for c in edit_calls(data) if c["path"] == "NOTES.md"]
    assert len(notes) == 1
    assert [(d["op"], d["text"]) for d in notes[0]["edits"][0]["diff"]["lines"]] == [
        ("-", "TODO: handle division"),
        ("+", "DONE: division"),
    ]
    assert notes[0]["args"] == []


def test_a_malformed_edits_string_is_shown_as_text_and_the_page_still_renders(conn, locations, new_journal):
    j = new_journal("Apps/edits")
    j.user("fix it")
    broken = '[{"oldText": "a", "newText": "b"'
    turn = j.assistant(tool_calls=[("edit", {"path": "a.py", "edits": broken}, "call-1")])
    j.tool_result("edit", "Validation failed", call_id="call-1", is_error=True)
    indexer.index_all(conn, locations)
    data = conversation.page(conn, locations, j.session_id)
    (call,) = [
        b["call"]
        for i in data["items"]
        if i["type"] == "entry" and i["entry"]["id"] == turn
        for b in i["entry"]["blocks"]
        if b["kind"] == "tool_call"
    ]
    assert call["view"] == "args" and call["args"] == [
        {"key": "edits", "text": broken, "total_chars": len(broken), "truncated": False}
    ]
    assert "edits" not in call


def test_the_legacy_old_and_new_text_arguments_are_one_replacement(conn, locations, new_journal):
    j = new_journal("Apps/edits")
    j.user("fix it")
    j.assistant(tool_calls=[("edit", {"newText": "y = 2", "path": "b.py", "oldText": "y = 1"}, "call-1")])
    j.tool_result("edit", "Edited b.py", call_id="call-1")
    indexer.index_all(conn, locations)
    (call,) = edit_calls(conversation.page(conn, locations, j.session_id))
    assert [(r["old"]["text"], r["new"]["text"]) for r in call["edits"]] == [("y = 1", "y = 2")]
    assert call["path"] == "b.py" and call["args"] == []


def test_tool_calls_name_the_file_of_every_edit_shape(real_pi, conn, locations, new_journal):
    rows = real_pi.conn.execute(
        "SELECT c.path, c.is_error FROM tool_calls c JOIN entries e ON e.rowid = c.entry_rowid "
        "WHERE c.tool = 'edit' ORDER BY e.timestamp"
    ).fetchall()
    assert rows == [("src/app.py", 0), ("src/app.py", 0), ("NOTES.md", 0), ("src/app.py", 1)]
    assert all(path and "[" not in path for path, _ in rows)
    j = new_journal("Apps/edits")
    j.assistant(tool_calls=[("edit", {"path": "legacy.py", "oldText": "1", "newText": "2"}, "call-1")])
    indexer.index_all(conn, locations)
    assert conn.execute("SELECT path FROM tool_calls WHERE tool = 'edit'").fetchall() == [("legacy.py",)]


@pytest.mark.asyncio
async def test_no_page_shows_raw_edits_json(real_pi_ds, real_pi):
    pages = [await page_html(real_pi_ds, f"/-/pi-memory/sessions/{sid}") for sid in real_pi.sessions()]
    edit_heavy = pages[real_pi.sessions().index(real_pi.session("edit_heavy"))]
    assert "def add(a: int, b: int) -&gt; int:</div>" in edit_heavy and "DONE: division" in edit_heavy
    alpha = str(real_pi.corpus.projects["alpha"])
    search = await page_html(real_pi_ds, "/-/pi-memory/search", q="division", scope="project", cwd=alpha)
    assert "DONE" in search
    entry = real_pi.conn.execute(
        "SELECT id, session_id FROM entries WHERE tool = 'edit' AND kind = 'assistant'"
    ).fetchone()
    read = await page_html(real_pi_ds, "/-/pi-memory/read", id=entry[0], session_id=entry[1])
    assert "oldText" in read  # the read page shows the entry's text: the replacement, not the JSON
    table = await page_html(real_pi_ds, "/history/entries", tool="edit", kind="assistant")
    assert "DONE: division" in table  # the entries table shows each entry's text beside its pointer
    summaries = await page_html(real_pi_ds, "/-/pi-memory/summaries", scope="global")
    for text in [*pages, search, read, table, summaries]:
        assert not RAW_EDITS.search(text), RAW_EDITS.search(text)
