"""The committed corpus of journals written by the real Pi 0.73.1 (tests/fixtures/real_pi) holds what
its corpus.json says, and copy_corpus moves it intact; a slow test regenerates it with the real Pi
and compares the shapes of the lines, so a change in Pi's format shows up as a diff."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.real_pi import CORPUS_DIR, RealPiCorpus, copy_corpus, encode_cwd, load_manifest

EVERY_ROLE = {
    "all_tools",
    "extension_tool",
    "thinking",
    "usage_with_cache",
    "edit_heavy",
    "edit_json_string",
    "with_failures",
    "aborted",
    "rich",
    "bash_execution",
    "session_name",
    "model_change",
    "thinking_level_change",
    "image",
    "custom_message",
    "custom_entry",
    "label",
    "branch_summary",
    "tree_navigation",
    "compacted",
    "auto_compacted",
    "fork_parent",
    "clone_parent",
    "fork_child",
    "clone_child",
    "same_minute_a",
    "same_minute_b",
    "print_mode",
}
UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
FILE_NAME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_(?P<id>[0-9a-f-]{36})\.jsonl$")


def lines(journal: Path) -> list[dict]:
    return [json.loads(line) for line in journal.read_text(encoding="utf-8").split("\n") if line]


def messages(journal: Path, role: str) -> list[dict]:
    return [e["message"] for e in lines(journal) if e["type"] == "message" and e["message"]["role"] == role]


def entries(journal: Path, kind: str) -> list[dict]:
    return [e for e in lines(journal) if e["type"] == kind]


def tool_calls(journal: Path, name: str) -> list[dict]:
    return [
        b for m in messages(journal, "assistant") for b in m["content"] if b["type"] == "toolCall" and b["name"] == name
    ]


def results_by_call(journal: Path) -> dict[str, dict]:
    return {m["toolCallId"]: m for m in messages(journal, "toolResult")}


@pytest.fixture
def corpus(tmp_path) -> RealPiCorpus:
    return copy_corpus(tmp_path / "pi")


# ---- what copy_corpus gives -------------------------------------------------------------------


def test_every_role_is_in_the_corpus_and_names_a_journal_in_pis_layout(corpus):
    assert set(corpus.journals) == EVERY_ROLE
    assert corpus.sessions == corpus.agent / "sessions"
    assert set(corpus.projects) == {"alpha", "beta"}
    for journal in corpus.all_journals():
        header = lines(journal)[0]
        assert header["type"] == "session" and header["version"] == 3
        assert Path(header["cwd"]) in corpus.projects.values() and Path(header["cwd"]).is_dir()
        assert journal.parent == corpus.sessions / encode_cwd(header["cwd"])
        match = FILE_NAME.match(journal.name)
        assert match and match["id"] == header["id"] and UUID7.match(header["id"]), journal.name
    # both projects hold several sessions
    for cwd in corpus.projects.values():
        assert len(list((corpus.sessions / encode_cwd(str(cwd))).glob("*.jsonl"))) >= 3


def test_copy_moves_the_root_in_every_line_and_keeps_the_lines(corpus):
    old_root = corpus.manifest["root"]
    for entry in corpus.manifest["journals"]:
        source = (CORPUS_DIR / entry["file"]).read_text(encoding="utf-8")
        copied = corpus.journal(entry["roles"][0]).read_text(encoding="utf-8")
        assert source.endswith("\n") and copied.endswith("\n")
        assert source.count("\n") == copied.count("\n")
        assert old_root in source and old_root not in copied
        assert encode_cwd(old_root).strip("-") not in copied  # nor its encoded form (parentSession)
        assert str(corpus.root) in copied
        for before, after in zip(source.split("\n"), copied.split("\n"), strict=True):
            if before:
                assert json.loads(after)["type"] == json.loads(before)["type"]
    # a path inside a tool result moved too
    [missing] = [m for m in messages(corpus.journal("with_failures"), "toolResult") if m["toolName"] == "read"]
    assert str(corpus.projects["alpha"] / "missing.txt") in missing["content"][0]["text"]


# ---- the format facts the corpus pins down ------------------------------------------------------


def test_every_builtin_tool_and_the_extension_tool_ran():
    names = {m["toolName"] for j in (CORPUS_DIR / "sessions").rglob("*.jsonl") for m in messages(j, "toolResult")}
    assert {"read", "bash", "edit", "write", "grep", "find", "ls", "fixture_lookup"} <= names


def test_edits_are_an_array_of_replacements_and_the_result_carries_pis_diff(corpus):
    journal = corpus.journal("edit_heavy")
    results = results_by_call(journal)
    arrays = [c for c in tool_calls(journal, "edit") if isinstance(c["arguments"]["edits"], list)]
    assert {len(c["arguments"]["edits"]) for c in arrays} >= {1, 3}, "one and several replacements in a call"
    for call in arrays:
        assert set(call["arguments"]) == {"path", "edits"}
        assert all(set(edit) == {"oldText", "newText"} for edit in call["arguments"]["edits"])
        result = results[call["id"]]
        assert result["isError"] is False
        assert set(result["details"]) == {"diff", "firstChangedLine"}
        diff = result["details"]["diff"]
        # Pi's own diff: one line per file line, "+"/"-"/" " then the line number padded to one width
        assert all(re.match(r"^[-+ ] *(\d+|\.\.\.)( |$)", line) for line in diff.split("\n")), diff
        assert any(line.startswith("-") for line in diff.split("\n"))
        assert any(line.startswith("+") for line in diff.split("\n"))
        assert isinstance(result["details"]["firstChangedLine"], int)


def test_an_edit_whose_edits_is_a_json_string_is_recorded_as_the_model_sent_it(corpus):
    journal = corpus.journal("edit_json_string")
    [call] = [c for c in tool_calls(journal, "edit") if isinstance(c["arguments"]["edits"], str)]
    parsed = json.loads(call["arguments"]["edits"])
    assert isinstance(parsed, list) and set(parsed[0]) == {"oldText", "newText"}
    result = results_by_call(journal)[call["id"]]
    assert result["isError"] is False and "diff" in result["details"]


def test_failed_tool_calls_are_errors_without_a_diff(corpus):
    journal = corpus.journal("with_failures")
    failed = [m for m in messages(journal, "toolResult") if m["isError"]]
    assert {m["toolName"] for m in failed} >= {"edit", "bash", "read"}
    for m in failed:
        assert m["details"] == {}
    [bash] = [m for m in failed if m["toolName"] == "bash" and "exited with code 3" in m["content"][0]["text"]]
    assert bash["content"][0]["text"].endswith("Command exited with code 3")
    assert any(m["content"][0]["text"] == "Command aborted" for m in failed)


def test_an_aborted_turn_is_an_empty_assistant_message(corpus):
    aborted = [m for m in messages(corpus.journal("aborted"), "assistant") if m["stopReason"] == "aborted"]
    assert len(aborted) == 2  # one while streaming, one while a tool ran
    for m in aborted:
        assert m["content"] == [] and m["errorMessage"] == "Request was aborted."
        assert m["usage"]["totalTokens"] == 0


def test_assistant_messages_carry_usage_and_cost(corpus):
    for journal in corpus.all_journals():
        for m in messages(journal, "assistant"):
            assert set(m["usage"]) == {"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"}
            assert set(m["usage"]["cost"]) == {"input", "output", "cacheRead", "cacheWrite", "total"}
            assert m["api"] == "openai-completions" and m["provider"] == "scripted"
    cached = [m for m in messages(corpus.journal("usage_with_cache"), "assistant") if m["usage"]["cacheRead"]]
    assert cached and all(m["usage"]["cost"]["total"] > 0 for m in cached)


def test_thinking_blocks(corpus):
    blocks = [
        b for m in messages(corpus.journal("thinking"), "assistant") for b in m["content"] if b["type"] == "thinking"
    ]
    assert blocks and all(b["thinking"] and "thinkingSignature" in b for b in blocks)


def test_the_rich_session(corpus):
    journal = corpus.journal("rich")
    [info] = entries(journal, "session_info")
    assert info["name"] == "Fixture: the rich session"
    bash = messages(journal, "bashExecution")
    assert {m["exitCode"] for m in bash} == {0, 2}
    assert all(set(m) >= {"command", "output", "exitCode", "cancelled", "truncated", "timestamp"} for m in bash)
    [image] = [b for m in messages(journal, "user") if isinstance(m["content"], list) for b in m["content"][1:]]
    assert image["type"] == "image" and image["mimeType"] == "image/png" and image["data"].startswith("iVBOR")
    assert [e["modelId"] for e in entries(journal, "model_change")] == ["scripted-model", "scripted-reasoner"]
    assert [e["thinkingLevel"] for e in entries(journal, "thinking_level_change")] == ["off", "medium", "high"]
    [note] = entries(journal, "custom_message")
    assert note["customType"] == "corpus-note" and note["display"] is True and isinstance(note["content"], str)
    [state] = entries(journal, "custom")
    assert state["customType"] == "corpus-state" and state["data"]["notes"] == 1
    labels = entries(journal, "label")
    assert [e.get("label") for e in labels] == ["first-question", "before-image", "other-route", None]
    assert "label" not in labels[-1]  # a cleared label has no key at all
    [summary] = entries(journal, "branch_summary")
    ids = {e["id"]: e for e in lines(journal)[1:]}
    assert summary["parentId"] in ids and summary["fromId"] == summary["parentId"]
    # /tree navigation: the branch summary is a second child of an older entry
    children = [e for e in ids.values() if e["parentId"] == summary["parentId"]]
    assert len(children) == 2


def test_compactions(corpus):
    journal = corpus.journal("compacted")
    compactions = entries(journal, "compaction")
    assert len(compactions) == 2
    ids = {e["id"] for e in lines(journal)[1:]}
    for c in compactions:
        assert c["firstKeptEntryId"] in ids and c["fromHook"] is False
        assert set(c["details"]) == {"readFiles", "modifiedFiles"}
    assert "**Turn Context (split turn):**" in compactions[0]["summary"]
    assert compactions[1]["tokensBefore"] > 100000  # the auto-compaction after large reported usage


def test_fork_and_clone_are_new_journals_naming_the_parents_path(corpus):
    parent = corpus.journal("fork_parent")
    assert corpus.journal("clone_parent") == parent
    assert "parentSession" not in lines(parent)[0]
    for role in ("fork_child", "clone_child"):
        child = corpus.journal(role)
        header = lines(child)[0]
        assert header["parentSession"] == str(parent) and Path(header["parentSession"]).is_file()
        assert header["id"] != lines(parent)[0]["id"]
        # the copied entries keep their ids (and timestamps): entry ids are unique per journal only
        parent_ids = [e["id"] for e in lines(parent)[1:]]
        child_ids = [e["id"] for e in lines(child)[1:]]
        assert child_ids[:3] == parent_ids[:3]


def test_two_sessions_share_the_first_8_characters_of_their_ids(corpus):
    a, b = (lines(corpus.journal(r))[0]["id"] for r in ("same_minute_a", "same_minute_b"))
    assert a != b and a[:8] == b[:8]


# ---- regenerating with the real Pi ---------------------------------------------------------------


def shapes(journal: Path) -> Iterator[tuple]:
    """What a reader depends on, without the values that change from run to run."""
    for e in lines(journal):
        yield ("line", e["type"], tuple(sorted(e)))
        if e["type"] != "message":
            if e["type"] in ("custom_message", "custom"):
                yield ("custom", e["type"], e["customType"])
            continue
        m = e["message"]
        yield ("message", m["role"], tuple(sorted(m)))
        if m["role"] == "assistant":
            yield ("stopReason", m["stopReason"])
            yield ("usage", tuple(sorted(m["usage"])), tuple(sorted(m["usage"]["cost"])))
        if m["role"] == "toolResult":
            yield ("toolResult", m["toolName"], m["isError"], tuple(sorted(m.get("details") or {})))
        for block in m["content"] if isinstance(m.get("content"), list) else []:
            yield ("block", m["role"], block["type"], tuple(sorted(block)))
            if block["type"] == "toolCall":
                args = block["arguments"]
                edits = args.get("edits")
                yield ("toolCall", block["name"], tuple(sorted(args)), type(edits).__name__ if edits else None)


def corpus_shapes(manifest: dict, base: Path) -> dict[str, set]:
    return {",".join(j["roles"]): set(shapes(base / j["file"])) for j in manifest["journals"]}


@pytest.mark.slow
def test_regenerating_with_the_real_pi_gives_the_same_shapes(tmp_path):
    from support import real_pi_corpus

    why = real_pi_corpus.tools_missing()
    if why:
        pytest.skip(f"cannot regenerate the real-Pi corpus: {why}")
    out = tmp_path / "out"
    fresh = real_pi_corpus.generate(out, root=tmp_path / "root")
    committed = load_manifest()
    assert [j["roles"] for j in fresh["journals"]] == [j["roles"] for j in committed["journals"]]
    before, after = corpus_shapes(committed, CORPUS_DIR), corpus_shapes(fresh, out)
    diff = {
        roles: {
            "only_committed": sorted(before[roles] - after[roles]),
            "only_regenerated": sorted(after[roles] - before[roles]),
        }
        for roles in before
        if before[roles] != after[roles]
    }
    assert diff == {}, "Pi writes differently from the committed corpus:\n" + json.dumps(diff, indent=1, default=str)
    assert fresh["observations"] == committed["observations"]
