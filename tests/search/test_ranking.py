"""Ranking: entries holding every query word, in some form, come before entries missing a word; among
those a word counts the same in any form and an entry holding every word as written scores more (a
weight, not a tier); the parts of an identifier match only as written.

Each positive sits beside a must-not over the same data.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pimem_index.cli import cli
from pimem_index.search import query

LONG_TAIL = " and the release job of the pipeline kept the previous build, so the rollback needed no manual step" * 3


@pytest.fixture
def ranking_world(agent_dir, new_journal, home):
    """One project with `deploy failure` (the query) held as written and in other forms, in entries of
    about the same length and in a long one, newest entries holding one word only, unrelated notes."""
    j = new_journal("Apps/prjct")
    for n in range(40):
        j.user(f"unrelated note {n} about the widgets table and its indexes")
    ids = {
        "long_written": j.user("the deploy failure on friday came from a stale lock file" + LONG_TAIL),
        "written": j.user("note: deploy failure"),
        "forms": j.user("note: deploys failures"),  # as long as `written`, and newer
        "short_forms": j.user("deploying failures"),
    }
    ids["missing"] = [j.user(f"deploy {n}") for n in range(12)]  # one word only, as written, short and newest
    ids["identifier"] = j.user("the parse_args call rejected the flag" + LONG_TAIL)
    ids["identifier_forms"] = [j.user(f"parsed args {n}") for n in range(3)]  # short and newer
    assert CliRunner().invoke(cli, ["index"]).exit_code == 0
    return {"ids": ids, "cwd": str(home / "Apps/prjct")}


def hit_ids(reply: dict) -> list[str]:
    return [h["id"] for h in reply["results"]]


def test_entries_holding_every_word_in_some_form_rank_before_entries_missing_a_word(conn, locations, ranking_world):
    ids = ranking_world["ids"]
    reply = query.search(conn, locations, "deploy failure", cwd=ranking_world["cwd"], limit=20)
    found = hit_ids(reply)
    every_word = {ids["long_written"], ids["written"], ids["forms"], ids["short_forms"]}
    assert reply["match"] == "all"
    assert set(found[:4]) == every_word
    assert not set(found) & set(ids["missing"])  # shorter and newer, and still never above them


def test_an_entry_holding_the_words_as_written_ranks_above_one_holding_them_in_other_forms(
    conn, locations, ranking_world
):
    ids = ranking_world["ids"]
    found = hit_ids(query.search(conn, locations, "deploy failure", cwd=ranking_world["cwd"], limit=10))
    assert found.index(ids["written"]) < found.index(ids["forms"])
    # the same two entries, asked in the other forms: now `forms` holds the words as written
    found = hit_ids(query.search(conn, locations, "deploys failures", cwd=ranking_world["cwd"], limit=10))
    assert found.index(ids["forms"]) < found.index(ids["written"])


def test_words_as_written_are_a_weight_not_a_tier(conn, locations, ranking_world):
    ids = ranking_world["ids"]
    reply = query.search(conn, locations, "deploy failure", cwd=ranking_world["cwd"], limit=10)
    found = hit_ids(reply)
    # a short entry holding every word in other forms passes a long one holding them as written ...
    assert found.index(ids["short_forms"]) < found.index(ids["long_written"])
    # ... but not one of about its length holding them as written
    assert found.index(ids["written"]) < found.index(ids["short_forms"])
    scores = {h["id"]: h["score"] for h in reply["results"]}
    assert scores[ids["written"]] > scores[ids["forms"]] > 0


def test_an_identifier_matches_exactly_and_its_entry_is_first(ranking_world):
    ids, cwd = ranking_world["ids"], ranking_world["cwd"]

    def search(q: str) -> list[str]:
        result = CliRunner().invoke(cli, ["search", q, "--cwd", cwd, "--json"])
        assert result.exit_code == 0, result.output
        return hit_ids(json.loads(result.output))

    found = search("parse_args")
    assert found[0] == ids["identifier"]
    assert not set(found) & set(ids["identifier_forms"])  # `parsed args` is not parse_args
    # the same words, not written as an identifier, find the other forms (shorter and newer: first)
    assert set(ids["identifier_forms"]) <= set(search("parse args"))


def test_other_forms_are_scored_among_their_newest_matches_in_the_scope(agent_dir, new_journal, home, monkeypatch):
    """A rare word whose other form is common costs a bounded read (issue 28): of the entries holding only
    other forms, the newest FORMS_SCANNED in the scope are scored, however many hold them."""
    monkeypatch.setattr(query, "FORMS_SCANNED", 5)
    j = new_journal("Apps/prjct")
    oldest = j.user("deploys")  # the shortest: the best score, were every entry scored
    exact_old = j.user("the deploy checklist, written down once and for all, before any of the releases below")
    newer = [j.user(f"the deploys of week {n} went out without a hitch") for n in range(8)]
    assert CliRunner().invoke(cli, ["index"]).exit_code == 0
    result = CliRunner().invoke(cli, ["search", "deploy", "--cwd", str(home / "Apps/prjct"), "--json", "--limit", "20"])
    found = hit_ids(json.loads(result.output))
    assert set(newer[-5:]) <= set(found)
    assert oldest not in found and not set(newer[:3]) & set(found)
    assert exact_old in found  # the words as written are all read, old or not
