"""pi_lines, the one writer of Pi journals (the tests' Journal and the benchmark corpus), writes each line as the
real Pi 0.73.1 did in tests/fixtures/real_pi: the same keys in the same order."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from support.pijournal import Journal

from benchmarks import corpus

ROOT = Path(__file__).resolve().parent.parent
REAL_PI = ROOT / "tests" / "fixtures" / "real_pi" / "sessions"


def shape(raw: bytes) -> tuple:
    """A line's kind and key order: its type (a message's role and whether it carries details) and keys."""
    line = json.loads(raw)
    if line["type"] != "message":
        return line["type"], tuple(line)
    body = line["message"]
    return f"message/{body['role']}", tuple(line), tuple(body)


def shapes(folder: Path) -> set[tuple]:
    return {shape(raw) for path in folder.rglob("*.jsonl") for raw in path.read_bytes().splitlines()}


def test_the_tests_journal_writer_shapes_every_line_as_the_real_pi_wrote_it(tmp_path):
    parent = Journal(tmp_path / "sessions", "/home/u/proj")
    j = Journal(tmp_path / "sessions", "/home/u/proj", parent_session=str(parent.path))
    j.model_change()
    j.thinking_level_change()
    j.session_info("a name")
    asked = j.user("what is in here?")
    j.assistant("let me look", thinking="first the files", signature="reasoning_content", tool_calls=[("ls", {})])
    j.tool_result("ls", "src/", call_id=j.call_ids[0])
    j.assistant(tool_calls=[("edit", {"path": "a.py", "edits": []})])
    j.tool_result("edit", "Successfully replaced 1 block(s) in a.py.", details={"diff": "-1 a", "firstChangedLine": 1})
    j.assistant(tool_calls=[("read", {"path": "gone.py"})])
    j.tool_result("read", "ENOENT", is_error=True, details={})
    j.bash("ls", "src")
    j.custom_message("corpus-note", "a note", details={"source": "test"})
    j.custom_state("corpus-state", {"n": 1})
    j.label(asked, "checkpoint")
    j.compaction("what happened so far")
    j.branch_summary("The user explored a different conversation branch before returning here.")

    written = shapes(tmp_path / "sessions")
    real = shapes(REAL_PI)
    assert written - real == set()
    kinds = {s[0] for s in written}
    assert kinds >= {
        "session",
        "model_change",
        "thinking_level_change",
        "session_info",
        "message/user",
        "message/assistant",
        "message/toolResult",
        "message/bashExecution",
        "custom_message",
        "custom",
        "label",
        "compaction",
        "branch_summary",
    }


def test_the_benchmark_corpus_orders_keys_as_the_real_pi_did_wherever_it_writes_the_same_keys(tmp_path):
    corpus.main([str(tmp_path / "corpus"), "--size", "2MB", "--seed", "5", "--now", "2026-06-01"])
    real = shapes(REAL_PI)
    real_by_keys = {(s[0], *(frozenset(part) for part in s[1:])): s for s in real}
    compared: dict[str, int] = {}
    misordered = []
    for path in (tmp_path / "corpus").rglob("*.jsonl"):
        for raw in path.read_bytes().splitlines():
            s = shape(raw)
            twin = real_by_keys.get((s[0], *(frozenset(part) for part in s[1:])))
            if twin is None:
                continue  # keys the real corpus never wrote together (version 1, truncated output, ...)
            compared[s[0]] = compared.get(s[0], 0) + 1
            if s != twin:
                misordered.append(s)
    assert {"session", "message/user", "message/toolResult", "compaction"} <= set(compared)
    assert misordered == []


def test_pi_lines_imports_nothing_of_the_project_so_tests_and_benchmarks_share_it_without_importing_each_other():
    source = (ROOT / "pi_lines" / "__init__.py").read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported <= {"__future__", "json", "typing", "orjson"}
    assert not imported & {"pimem_index", "datasette_pi_memory", "benchmarks", "tests", "support"}
