"""What is a term: a tool call's content is, its structure (argument names, object keys) is not."""

from __future__ import annotations

import json

import pytest

from pimem_index.index.indexer import index_all
from pimem_index.search import query


def ids(reply) -> list[str]:
    return [r["id"] for r in reply["results"]]


@pytest.fixture
def calls(conn, locations, new_journal, home):
    """A bash call with a timeout, an edit with an `edits` list, and a user message about a timeout."""
    j = new_journal("Apps/prjct")
    asked = j.user("the deploy hit a timeout again")
    bash = j.assistant(tool_calls=[("bash", {"command": "npm run check | grep error", "timeout": 30})])
    edit = j.assistant(
        tool_calls=[("edit", {"path": "src/app.py", "edits": [{"oldText": "frobnicate()", "newText": "defrost()"}]})]
    )
    lookup = j.assistant(tool_calls=[("docs_lookup", {"filter": {"language": "haskell", "limit": 5}})])
    index_all(conn, locations)
    return {"asked": asked, "bash": bash, "edit": edit, "lookup": lookup, "cwd": str(home / "Apps/prjct")}


def test_an_argument_name_is_not_a_term(conn, locations, calls):
    reply = query.search(conn, locations, "timeout", cwd=calls["cwd"])
    assert ids(reply) == [calls["asked"]]
    assert calls["bash"] not in ids(reply)
    for name in ("command", "path"):
        assert ids(query.search(conn, locations, name, cwd=calls["cwd"])) == []


def test_an_argument_value_is_a_term(conn, locations, calls):
    assert ids(query.search(conn, locations, "grep npm", cwd=calls["cwd"])) == [calls["bash"]]
    assert ids(query.search(conn, locations, "frobnicate", cwd=calls["cwd"])) == [calls["edit"]]


def test_the_keys_of_an_argument_object_are_not_terms(conn, locations, calls):
    for key in ("oldtext", "newtext", "language", "filter"):
        assert ids(query.search(conn, locations, key, cwd=calls["cwd"])) == []
    assert ids(query.search(conn, locations, "defrost", cwd=calls["cwd"])) == [calls["edit"]]
    hit = query.search(conn, locations, "haskell", cwd=calls["cwd"])["results"][0]
    assert hit["id"] == calls["lookup"] and "haskell" in hit["excerpt"]
    assert "language" not in hit["excerpt"] and "filter" not in hit["excerpt"]


def test_an_excerpt_shows_a_calls_values_without_its_argument_names(conn, locations, calls):
    hit = query.search(conn, locations, "grep", cwd=calls["cwd"])["results"][0]
    assert "npm run check | grep error" in hit["excerpt"] and "30" in hit["excerpt"]
    assert "command:" not in hit["excerpt"] and "timeout" not in hit["excerpt"]
    edit = query.search(conn, locations, "frobnicate", cwd=calls["cwd"])["results"][0]
    assert "frobnicate()" in edit["excerpt"] and "defrost()" in edit["excerpt"]
    assert "oldText" not in edit["excerpt"] and "newText" not in edit["excerpt"]


def test_a_secret_named_only_by_its_argument_stays_masked(conn, locations, new_journal, home):
    j = new_journal("Apps/prjct")
    j.assistant(tool_calls=[("login", {"user": "deployer", "password": "Zq8vLw3pXkR2"})])
    index_all(conn, locations)
    cwd = str(home / "Apps/prjct")
    assert ids(query.search(conn, locations, "Zq8vLw3pXkR2", cwd=cwd)) == []
    hit = query.search(conn, locations, "deployer", cwd=cwd)["results"][0]
    assert "deployer" in hit["excerpt"]
    assert "Zq8vLw3pXkR2" not in hit["excerpt"] and "[REDACTED]" in hit["excerpt"]


def test_the_cli_search_finds_no_call_by_its_argument_names(run, calls):
    data = json.loads(run("search", "timeout", "--json", "--cwd", calls["cwd"]).output)
    assert ids(data) == [calls["asked"]]
    found = json.loads(run("search", "grep", "--json", "--cwd", calls["cwd"]).output)
    assert ids(found) == [calls["bash"]] and "timeout" not in found["results"][0]["excerpt"]
