"""A request is parsed once, without the index, into its terms; the reply carries them, and the CLI and the
pages mark the reply's terms: the query text is never cut into words again."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from datasette.utils import MultiParams

from pimem_index.cli import cli
from pimem_index.errors import UserError
from pimem_index.index.indexer import index_all
from pimem_index.search import query, request, scope
from pimem_index.search.request import ReadRequest, SearchRequest, query_args

MARKED = re.compile(r"\x1b\[1m\x1b\[4m(\w+)\x1b\[0m")  # click.style(bold, underline)


class FirstCutOnly:
    """The query tokeniser (request._TERM) as it cut the query once; cut again, it finds no word at all,
    as a tokeniser changed between the search and its display would."""

    def __init__(self) -> None:
        self.cuts = 0

    def findall(self, text: str) -> list[str]:
        self.cuts += 1
        return re.findall(r"[^\W_]+", text) if self.cuts == 1 else []


@pytest.fixture
def quolls(conn, locations, new_journal):
    j = new_journal()
    made = {"both": j.user("the quoll met a numbat at dawn"), "quoll": j.user("a quoll alone")}
    index_all(conn, locations)
    return made


def test_a_request_is_parsed_without_the_index_and_resolved_on_it_once(conn, locations, home, quolls, new_journal):
    journal_path = str(new_journal().path)
    args = query_args(MultiParams({"q": ["Quoll NUMBAT quoll"]}))
    parsed = SearchRequest.from_args(args, max_scope="project", journal_path=journal_path)
    assert parsed.terms == ("quoll", "numbat") and parsed.cwd is None, "terms cut, the journal's folder not yet read"
    with pytest.raises(UserError, match="scope 'project' needs cwd or journal"):
        SearchRequest.from_args(args, max_scope="project")  # refused before any index is opened
    with pytest.raises(UserError, match="scope 'project' needs cwd or journal"):
        scope.request_scope(conn, parsed)  # the journal is not indexed: its folder is unknown
    index_all(conn, locations)
    assert scope.request_scope(conn, parsed).root == str(home / "Apps/prjct")


def test_a_search_reply_and_a_read_reply_carry_the_terms_searched(conn, locations, quolls):
    reply = query.search(conn, locations, "Quoll NUMBAT quoll-numbat", scope="global")
    assert reply["terms"] == ["quoll", "numbat"]
    assert [hit["id"] for hit in reply["results"]] == [quolls["both"]], "every term searched, the lone quoll not"
    read = query.read(conn, locations, ReadRequest.create(quolls["both"], scope="global", query="NUMBAT, quoll!"))
    assert read["status"] == "ok" and read["terms"] == ["numbat", "quoll"]
    assert query.read(conn, locations, quolls["both"], scope="global")["terms"] == [], "no query: nothing to mark"


def test_the_cli_marks_the_reply_s_terms_and_never_cuts_the_query_again(quolls, monkeypatch):
    cut = FirstCutOnly()
    monkeypatch.setattr(request, "_TERM", cut)
    result = CliRunner().invoke(cli, ["search", "quoll numbat", "--scope", "global"], color=True)
    assert result.exit_code == 0, result.output
    assert sorted(set(MARKED.findall(result.output))) == ["numbat", "quoll"]
    assert cut.cuts == 1, "the query was cut into words once, by its request"


class NoMoreCuts:
    """The query tokeniser once the request is parsed: cutting the query again fails the test."""

    def findall(self, text: str) -> list[str]:
        raise AssertionError(f"the query was cut into words again: {text!r}")


def test_an_identifier_s_parts_are_found_when_the_request_is_parsed_and_searching_never_cuts_again(
    conn, locations, new_journal, monkeypatch
):
    j = new_journal()
    hit = j.user("call parse_args before the timeouts")
    index_all(conn, locations)
    parsed = SearchRequest.create("parse_args timeout", scope="global")
    assert parsed.written == {"parse", "args"} and "timeout" not in parsed.written
    monkeypatch.setattr(request, "_TERM", NoMoreCuts())
    reply = query.search(conn, locations, parsed)
    assert [h["id"] for h in reply["results"]] == [hit] and reply["terms"] == ["parse", "args", "timeout"]
