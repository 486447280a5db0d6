"""The session page as a conversation, through a real Datasette over real journals: tool calls with
their results, failures marked, edits as diffs, writes and thinking folded, settings and labels where
they occur, forks and branch paths, and links that open the page holding an entry.

Each positive check sits beside a must-not over the same page (the secret, raw JSON, the other branch).
"""

from __future__ import annotations

import json

import pytest
import pytest_asyncio
from click.testing import CliRunner
from support.plugin_world import ROOT, make_datasette, running

from pimem_index import journal
from pimem_index.cli import cli
from pimem_index.index import indexer
from pimem_index.session import conversation

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub token's shape


@pytest.fixture
def convo(conn, locations, new_journal):
    """One session with an edit, a failed test run, a label, a model change, a write, two bash runs and a fork."""
    j = new_journal("Apps/convo")
    ids = {"user": j.user("fix the login bug")}
    j.thinking_level_change("high")
    ids["edit_turn"] = j.assistant(
        "Moving the token out of the code.",
        thinking="The token is hardcoded in auth.py",
        tool_calls=[
            (
                "edit",
                {
                    "path": "src/auth.py",
                    "oldText": f"x = 1\nTOKEN = '{SECRET}'\ny = 2",
                    "newText": "x = 1\nTOKEN = os.environ['TOKEN']\ny = 2",
                },
                "call-edit",
            ),
            ("bash", {"command": "pytest -q tests/test_auth.py"}, "call-test"),
        ],
    )
    ids["edit_result"] = j.tool_result("edit", "Edited src/auth.py", call_id="call-edit")
    ids["test_result"] = j.tool_result(
        "bash", "FAILED test_login - KeyError: TOKEN", call_id="call-test", is_error=True
    )
    j.label(ids["user"], f"before the fix {SECRET}")
    j.model_change("gpt-5")
    ids["write_turn"] = j.assistant(
        "Setting TOKEN for the tests.",
        tool_calls=[
            (
                "write",
                {"path": "tests/conftest.py", "content": "import os\n" + "os.environ['TOKEN'] = 't'\n" * 40},
                "call-write",
            )
        ],
    )
    ids["write_result"] = j.tool_result("write", "Wrote tests/conftest.py", call_id="call-write")
    ids["lint"] = j.bash("make lint", "lint: 3 errors", exit_code=2)
    ids["status"] = j.bash("git status", "nothing to commit", exit_code=0)
    j.branch_from(ids["user"])
    ids["other"] = j.assistant("Another way: read the token from a file.")
    ids["other_user"] = j.user("go on with the file approach")
    indexer.index_all(conn, locations)
    return {"journal": j, "ids": ids, "path": f"/-/pi-memory/sessions/{j.session_id}"}


@pytest_asyncio.fixture
async def ds(locations, convo):
    async with running(make_datasette(locations)) as datasette:
        yield datasette


async def page(ds, path: str, **params) -> str:
    res = await ds.client.get(path, params=params, actor=ROOT)
    assert res.status_code == 200, res.text[:500]
    return res.text


def entries(data: dict) -> list[str]:
    return [item["entry"]["id"] for item in data["items"] if item["type"] == "entry"]


def calls(data: dict, entry_id: str) -> list[dict]:
    view = next(item["entry"] for item in data["items"] if item["type"] == "entry" and item["entry"]["id"] == entry_id)
    return [b["call"] for b in view["blocks"] if b["kind"] == "tool_call"]


def test_a_tool_result_is_shown_beneath_its_call_not_apart(conn, locations, convo):
    ids = convo["ids"]
    data = conversation.page(conn, locations, convo["journal"].session_id)
    edit, test = calls(data, ids["edit_turn"])
    assert edit["result"]["id"] == ids["edit_result"] and test["result"]["id"] == ids["test_result"]
    assert ids["edit_result"] not in entries(data) and ids["test_result"] not in entries(data)


@pytest.mark.asyncio
async def test_a_failed_tool_result_is_marked_and_a_good_one_is_not(ds, convo):
    text = await page(ds, convo["path"])
    failed = text[text.index(f'id="entry-{convo["ids"]["test_result"]}"') :][:400]
    good = text[text.index(f'id="entry-{convo["ids"]["edit_result"]}"') :][:400]
    assert '<span class="pi-memory-badge bad">error</span>' in failed
    assert "pi-memory-badge bad" not in good
    assert text.count('<span class="pi-memory-badge bad">failed</span>') == 1  # on the failed call's head only


@pytest.mark.asyncio
async def test_a_nonzero_bash_exit_is_marked_and_a_zero_exit_is_not(ds, convo):
    text = await page(ds, convo["path"])
    assert '<span class="pi-memory-badge bad">exit 2</span>' in text
    assert '<span class="pi-memory-badge ok">exit 0</span>' in text
    assert '<span class="pi-memory-badge bad">exit 0</span>' not in text
    assert f'class="pi-memory-entry kind-bash failed" id="entry-{convo["ids"]["lint"]}"' in text
    assert f'class="pi-memory-entry kind-bash" id="entry-{convo["ids"]["status"]}"' in text


@pytest.mark.asyncio
async def test_an_edit_is_a_diff_with_the_secret_in_old_text_masked(ds, convo):
    text = await page(ds, convo["path"])
    assert '<div class="op-del">- TOKEN = &#39;ghp_[REDACTED]&#39;</div>' in text
    assert '<div class="op-add">+ TOKEN = os.environ[&#39;TOKEN&#39;]</div>' in text
    assert '<div class="op-same">  x = 1</div>' in text
    assert SECRET not in text and SECRET[4:20] not in text
    assert "oldText" not in text and "newText" not in text and "&#34;path&#34;" not in text  # no raw arguments


@pytest.mark.asyncio
async def test_a_write_is_folded_under_its_path(ds, convo):
    text = await page(ds, convo["path"])
    head = text.index("<strong>write</strong> <code>tests/conftest.py</code>")
    folded = text.index('<details class="pi-memory-write"><summary>Content written', head)
    assert text.index("os.environ[&#39;TOKEN&#39;] = &#39;t&#39;", folded) > folded
    assert '<details class="pi-memory-write" open' not in text
    assert "<dt>content</dt>" not in text


@pytest.mark.asyncio
async def test_thinking_is_labelled_and_folded(ds, convo):
    text = await page(ds, convo["path"])
    folded = text.index('<details class="pi-memory-thinking"><summary>Thinking (')
    assert text.index("The token is hardcoded in auth.py", folded) < text.index("</details>", folded)
    assert '<details class="pi-memory-thinking" open' not in text


@pytest.mark.asyncio
async def test_a_model_change_is_shown_between_the_entries_it_came_between(ds, convo):
    text = await page(ds, convo["path"])
    change = text.index("Model changed to <strong>openai/gpt-5</strong>")
    assert text.index(f'id="entry-{convo["ids"]["test_result"]}"') < change
    assert change < text.index(f'id="entry-{convo["ids"]["write_turn"]}"')
    assert text.count("Model changed to") == 1
    assert "Thinking level set to <strong>high</strong>" in text


@pytest.mark.asyncio
async def test_a_label_is_shown_where_it_was_set_and_on_its_entry_with_its_secret_masked(ds, convo):
    text = await page(ds, convo["path"])
    mark = text.index("Label &ldquo;before the fix ghp_[REDACTED]&rdquo; set on")
    assert text.index(f'id="entry-{convo["ids"]["test_result"]}"') < mark
    user = text[text.index(f'id="entry-{convo["ids"]["user"]}"') :][:600]
    assert "&#9873; before the fix ghp_[REDACTED]" in user
    assert SECRET not in text


@pytest.mark.asyncio
async def test_a_fork_lists_both_branches_and_says_where_journal_order_jumps_back(ds, convo):
    ids = convo["ids"]
    text = await page(ds, convo["path"])
    fork = text[text.index("The conversation forks here into 2 branches") :]
    fork = fork[: fork.index("</div>")]
    assert f"?entry={ids['edit_turn']}" in fork and f"?entry={ids['other']}" in fork
    assert f"?leaf={ids['status']}" in fork and f"?leaf={ids['other_user']}" in fork
    jump = text.index("Another branch: the next entry continues from")
    assert text.index(f'id="entry-{ids["status"]}"') < jump < text.index(f'id="entry-{ids["other"]}"')
    assert text.count("Another branch:") == 1  # results, settings and labels are no jumps


@pytest.mark.asyncio
async def test_a_leaf_shows_its_path_and_not_the_other_branch(ds, convo):
    ids = convo["ids"]
    text = await page(ds, convo["path"], leaf=ids["other_user"])
    assert "One branch: the path from the start of the session" in text
    assert all(f'id="entry-{ids[k]}"' in text for k in ("user", "other", "other_user"))
    assert f'id="entry-{ids["edit_turn"]}"' not in text and f'id="entry-{ids["status"]}"' not in text
    assert "Another branch:" not in text


@pytest.mark.asyncio
async def test_a_path_shows_the_settings_on_it_and_not_those_of_another_branch(ds, convo):
    ids = convo["ids"]
    edits = await page(ds, convo["path"], leaf=ids["status"])
    other = await page(ds, convo["path"], leaf=ids["other_user"])
    assert "Thinking level set to <strong>high</strong>" in edits and "Model changed to" in edits
    assert "Thinking level set to" not in other and "Model changed to" not in other


@pytest.fixture
def long_session(conn, locations, new_journal):
    """A session of 203 entries: 199 user messages, then a call at entry 200 whose result is entry 201."""
    j = new_journal("Apps/long")
    users = [j.user(f"message number {n}") for n in range(199)]
    call = j.assistant("Running it.", tool_calls=[("bash", {"command": "make all"}, "call-late")])
    result = j.tool_result("bash", "built", call_id="call-late")
    last = j.user("thanks")
    j.user("bye")
    indexer.index_all(conn, locations)
    return {"journal": j, "users": users, "call": call, "result": result, "last": last}


@pytest.mark.asyncio
async def test_an_entry_link_opens_the_page_that_holds_it(locations, long_session):
    s = long_session
    path = f"/-/pi-memory/sessions/{s['journal'].session_id}"
    async with running(make_datasette(locations)) as ds:
        res = await ds.client.get(path, params={"entry": s["last"]}, actor=ROOT)
        assert res.status_code == 302
        assert res.headers["location"] == f"{path}?offset=200#entry-{s['last']}"
        second = await page(ds, path, offset="200")
        first = await ds.client.get(path, params={"entry": s["users"][3]}, actor=ROOT)
    assert f'id="entry-{s["last"]}"' in second and f'id="entry-{s["users"][0]}"' not in second
    assert first.headers["location"] == f"{path}#entry-{s['users'][3]}"


@pytest.mark.asyncio
async def test_a_call_and_its_result_on_two_pages_link_to_each_other(locations, long_session):
    s = long_session
    path = f"/-/pi-memory/sessions/{s['journal'].session_id}"
    async with running(make_datasette(locations)) as ds:
        first = await page(ds, path)
        second = await page(ds, path, offset="200")
    assert f'Result: <a href="?entry={s["result"]}">on the next page</a>' in first
    assert "No result recorded" not in first
    assert f'Result of a bash call in <a href="?entry={s["call"]}">' in second


@pytest.mark.asyncio
async def test_an_offset_past_the_end_says_how_many_entries_there_are(ds, convo):
    text = await page(ds, convo["path"], offset="99999")
    assert "This session has 10 entries; there is nothing at offset 99,999." in text
    assert 'class="pi-memory-entry' not in text
    assert "Entries 100,000" not in text


@pytest.mark.asyncio
async def test_an_unknown_entry_is_a_one_line_400_with_an_example(ds, convo):
    res = await ds.client.get(convo["path"], params={"entry": "nope"}, actor=ROOT)
    assert res.status_code == 400
    assert "this session has no entry &#39;nope&#39;; give one of its entry ids (e.g. entry=c3d4e5f6)" in res.text
    assert "Traceback" not in res.text


@pytest.mark.asyncio
@pytest.mark.parametrize("offset", ["-5", "ten"])
async def test_a_bad_offset_is_a_one_line_400_in_the_pages_syntax(ds, convo, offset):
    res = await ds.client.get(convo["path"], params={"offset": offset}, actor=ROOT)
    assert res.status_code == 400
    assert "offset must be a whole number, 0 or more (e.g. offset=200)" in res.text
    assert "--offset" not in res.text and "Traceback" not in res.text


@pytest.mark.asyncio
async def test_the_read_page_and_the_entries_table_link_to_the_entry_in_its_session(ds, convo):
    j, user = convo["journal"], convo["ids"]["user"]
    read = await page(ds, "/-/pi-memory/read", id=user, session_id=j.session_id)
    table = await page(ds, "/history/entries")
    assert f"/-/pi-memory/sessions/{j.session_id}?entry={user}" in read
    assert f"/-/pi-memory/sessions/{j.session_id}?entry={user}" in table
    assert f"/-/pi-memory/sessions/{j.session_id}#entry-" not in read + table


def test_the_blocks_of_an_entry_cut_exactly_its_indexed_text():
    line = {
        "type": "message",
        "id": "d4e5f6a7",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "look\nfirst"},
                {"type": "thinking", "thinking": "[x]", "thinkingSignature": "EqQB", "redacted": True},
                {"type": "text", "text": ""},
                {"type": "text", "text": "Reading."},
                {
                    "type": "toolCall",
                    "id": "t1",
                    "name": "edit",
                    "arguments": {"path": "a", "oldText": "1\n2", "n": [1]},
                },
                {"type": "image", "data": "QUFB"},
            ],
        },
    }
    obj = json.loads(json.dumps(line))
    entry = journal.interpret(obj, 2)
    shape = journal.shape(obj, entry)
    assert shape.text == entry.text
    cut = [(b.kind, shape.text[b.span.start : b.span.end]) for b in shape.blocks]
    assert cut == [
        ("thinking", "look\nfirst"),
        ("redacted_thinking", ""),
        ("text", "Reading."),
        ("tool_call", "edit\npath: a\noldText: 1\n2\nn: [1]"),
        ("image", "[image]"),
    ]
    call = shape.blocks[3].call
    assert [(shape.text[k.start : k.end], shape.text[v.start : v.end]) for k, v in call.arguments] == [
        ("path", "a"),
        ("oldText", "1\n2"),
        ("n", "[1]"),
    ]
    assert "EqQB" not in shape.text and "QUFB" not in shape.text


@pytest.mark.asyncio
async def test_a_forgotten_entry_is_not_shown_and_the_conversation_runs_on_through_it(locations, convo):
    ids, j = convo["ids"], convo["journal"]
    result = CliRunner().invoke(cli, ["forget", ids["lint"], "--session", j.session_id])
    assert result.exit_code == 0, result.output
    async with running(make_datasette(locations)) as ds:
        text = await page(ds, convo["path"])
    assert f'id="entry-{ids["status"]}"' in text and "git status" in text
    assert f'id="entry-{ids["lint"]}"' not in text and "make lint" not in text and "lint: 3 errors" not in text
    assert text.count("Another branch:") == 1  # only the real jump back to the first message


@pytest.mark.asyncio
async def test_a_label_names_its_target_only_when_it_is_an_entry_of_the_session(locations, convo, conn):
    j = convo["journal"]
    j.label(f"not-an-entry-{SECRET}", "stray")
    indexer.index_all(conn, locations)
    async with running(make_datasette(locations)) as ds:
        text = await page(ds, convo["path"])
    assert "Label &ldquo;stray&rdquo; set on an entry" in text
    assert f'Label &ldquo;before the fix ghp_[REDACTED]&rdquo; set on <a href="?entry={convo["ids"]["user"]}">' in text
    assert "not-an-entry" not in text and SECRET not in text


def test_a_version_1_journal_without_tree_ids_reads_as_one_line(conn, locations, new_journal):
    j = new_journal("Apps/old", version=1)
    first = j.user("an old question")
    j.assistant("an old answer")
    last = j.user("a follow-up")
    indexer.index_all(conn, locations)
    data = conversation.page(conn, locations, j.session_id, leaf=last)
    whole = conversation.page(conn, locations, j.session_id)
    assert entries(data) == [first, entries(whole)[1], last]
    assert [item["type"] for item in whole["items"]] == ["entry", "entry", "entry"]  # no fork, no jump


@pytest.mark.asyncio
async def test_a_link_to_an_entry_off_the_branch_shown_opens_the_whole_journal_at_it(ds, convo):
    ids = convo["ids"]
    res = await ds.client.get(convo["path"], params={"leaf": ids["other_user"], "entry": ids["lint"]}, actor=ROOT)
    on_path = await ds.client.get(convo["path"], params={"leaf": ids["other_user"], "entry": ids["other"]}, actor=ROOT)
    assert res.status_code == 302 and res.headers["location"] == f"{convo['path']}#entry-{ids['lint']}"
    assert on_path.headers["location"] == f"{convo['path']}?leaf={ids['other_user']}#entry-{ids['other']}"


def settings(data: dict) -> list[tuple[str, str]]:
    return [(item["type"], item["value"]) for item in data["items"] if item["type"] in conversation.SHOWN_NODES]


def test_settings_written_after_the_last_indexing_wait_for_the_next(conn, locations, convo):
    j = convo["journal"]
    j.model_change("written-after-indexing")
    data = conversation.page(conn, locations, j.session_id)
    assert ("model_change", "openai/gpt-5") in settings(data)
    assert ("model_change", "openai/written-after-indexing") not in settings(data)


def test_no_settings_are_read_from_a_journal_whose_first_line_changed(conn, locations, convo):
    j = convo["journal"]
    data = j.path.read_bytes()
    head = data.index(b"\n")
    j.path.write_bytes(data[:head].replace(b'"version":3', b'"version":9') + data[head:])
    after = conversation.page(conn, locations, j.session_id)
    assert settings(after) == []
    assert entries(after)[0] == convo["ids"]["user"]  # the entries themselves are still their lines


@pytest.mark.asyncio
async def test_an_aborted_turn_is_marked_and_a_finished_one_is_not(locations, convo, conn):
    j = convo["journal"]
    aborted = j.assistant("Starting the long refactor", stop="aborted")
    indexer.index_all(conn, locations)
    async with running(make_datasette(locations)) as ds:
        text = await page(ds, convo["path"])
    assert f'class="pi-memory-entry kind-assistant failed" id="entry-{aborted}"' in text
    assert '<span class="pi-memory-badge bad">aborted</span>' in text
    assert f'class="pi-memory-entry kind-assistant" id="entry-{convo["ids"]["other"]}"' in text


# ---- a page costs about its page, whatever the tree's shape (issue 25 item 16) -----------------------


def _message_line(j, eid: str, parent: str | None, role: str, text: str) -> dict:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": j.tick(0.001),
        "message": {"role": role, "content": [{"type": "text", "text": text}]},
    }


@pytest.mark.asyncio
async def test_labels_that_are_each_others_parent_show_once_on_a_path(conn, locations, new_journal):
    j = new_journal("Apps/odd")
    first = j.user("the first question")
    j.write_line(
        {
            "type": "label",
            "id": "lab00001",
            "parentId": "lab00002",
            "timestamp": j.tick(),
            "targetId": first,
            "label": "one",
        }
    )
    j.write_line(
        {
            "type": "label",
            "id": "lab00002",
            "parentId": "lab00001",
            "timestamp": j.tick(),
            "targetId": first,
            "label": "two",
        }
    )
    j.write_line(_message_line(j, "u0000002", "lab00001", "user", "an entry under the label cycle"))
    indexer.index_all(conn, locations)
    data = conversation.page(conn, locations, j.session_id, leaf="u0000002")
    assert entries(data) == ["u0000002"]
    labels = [item["value"] for item in data["items"] if item["type"] == "label"]
    assert sorted(labels) == ["one", "two"]  # each label once, never the cycle walked 10,000 times
    async with running(make_datasette(locations)) as ds:
        res = await ds.client.get(f"/-/pi-memory/sessions/{j.session_id}?leaf=u0000002", actor=ROOT)
    assert res.status_code == 200 and res.text.count("pi-memory-mark label") == 2


@pytest.fixture
def many_forks(conn, locations, new_journal):
    """3,000 answers to one question: a fork of 3,000 branches."""
    j = new_journal("Apps/forks")
    question = j.user("the question every fork answers")
    for i in range(3000):
        j.write_line(_message_line(j, f"f{i:07d}", question, "assistant", f"fork {i} answers"))
    indexer.index_all(conn, locations)
    return j, question


@pytest.mark.asyncio
async def test_a_fork_of_thousands_lists_a_dozen_branches_and_says_how_many_more(
    conn, locations, many_forks, monkeypatch
):
    j, question = many_forks
    reread = []
    real = conversation.reread_shape
    monkeypatch.setattr(conversation, "reread_shape", lambda *a, **k: reread.append(1) or real(*a, **k))
    data = conversation.page(conn, locations, j.session_id)
    fork = next(item for item in data["items"] if item["type"] == "fork")
    assert (fork["count"], fork["more"], len(fork["branches"])) == (3000, 3000 - conversation.FORK_BRANCHES, 12)
    assert fork["branches"][0]["id"] == "f0000000" and fork["branches"][0]["next"]  # the branch below is listed
    assert len(reread) <= conversation.PAGE + 2 * conversation.FORK_BRANCHES + 2  # a page's entries, not 3,000
    async with running(make_datasette(locations)) as ds:
        res = await ds.client.get(f"/-/pi-memory/sessions/{j.session_id}", actor=ROOT)
    assert "forks here into 3,000 branches" in res.text and "and 2,988 more branches" in res.text
    assert "f0002999" not in res.text.split("forks here")[1].split("</div>")[0]  # not every branch listed
    assert len(res.content) < 400_000


def test_a_deep_chain_with_side_branches_gives_each_fork_its_branch_end_and_length(conn, locations, new_journal):
    j = new_journal("Apps/deep")
    parent = None
    for i in range(3000):
        j.write_line(_message_line(j, f"c{i:07d}", parent, "user", f"chain step {i}"))
        if parent is not None:
            j.write_line(_message_line(j, f"s{i:07d}", parent, "assistant", f"side branch {i}"))
        parent = f"c{i:07d}"
    indexer.index_all(conn, locations)
    tree = conversation.load_tree(conn, locations, j.session_id)
    assert conversation.latest_leaf(tree, "c0000000") == "s0002999"  # the last line: a side branch
    assert conversation.latest_leaf(tree, "s0000005") == "s0000005"
    assert conversation.depth(tree, "c0002999") == 3000 == len(conversation.path_to(tree, "c0002999"))
    data = conversation.page(conn, locations, j.session_id)
    first = next(item for item in data["items"] if item["type"] == "fork")
    assert [(b["id"], b["leaf"], b["length"]) for b in first["branches"]] == [
        ("c0000001", "s0002999", 2999),
        ("s0000001", "s0000001", 1),
    ]
    end = conversation.page(conn, locations, j.session_id, leaf="c0002999", offset=2800)
    assert entries(end)[-1] == "c0002999" and "s0002999" not in entries(end)


def test_entries_whose_parents_form_a_cycle_end_every_walk(conn, locations, new_journal):
    j = new_journal("Apps/cycle")
    j.write_line(_message_line(j, "e0000001", "e0000002", "user", "my parent is my child"))
    j.write_line(_message_line(j, "e0000002", "e0000001", "assistant", "and mine is yours"))
    indexer.index_all(conn, locations)
    tree = conversation.load_tree(conn, locations, j.session_id)
    assert conversation.latest_leaf(tree, "e0000001") in ("e0000001", "e0000002")
    assert conversation.depth(tree, "e0000001") <= 2 and len(conversation.path_to(tree, "e0000001")) <= 2
    for leaf in (None, "e0000001"):
        assert set(entries(conversation.page(conn, locations, j.session_id, leaf=leaf))) <= {"e0000001", "e0000002"}
