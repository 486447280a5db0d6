"""Ranking: entries holding every query word, in some form, come before entries missing a word, and
among those the words as written count more than other forms of them.

Each positive sits beside a must-not over the same data: an entry missing a word never ranks above
one holding all words in some form, and an entry holding the words only in other forms never ranks
above one holding them as written.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pimem_index.cli import cli
from pimem_index.search import query


@pytest.fixture
def ranking_world(agent_dir, new_journal, home):
    """One project whose newest, shortest entries hold a single query word as written, and older ones
    hold every word, some only in other forms (`deploy failure` is the query), among unrelated notes."""
    j = new_journal("Apps/prjct")
    for n in range(40):
        j.user(f"unrelated note {n} about the widgets table and its indexes")
    ids = {
        "exact": j.user("the deploy failure on friday came from a stale lock file in the release job of the pipeline"),
        "mixed": j.user("deploy: failures"),
        "forms": j.user("deploying: failures"),  # as short as mixed, and newer
    }
    ids["missing"] = [j.user(f"deploy {n}") for n in range(12)]  # one word only, as written, short and newest
    assert CliRunner().invoke(cli, ["index"]).exit_code == 0
    return {"ids": ids, "cwd": str(home / "Apps/prjct")}


def hit_ids(reply: dict) -> list[str]:
    return [h["id"] for h in reply["results"]]


def test_entries_holding_every_word_in_some_form_rank_before_entries_missing_a_word(conn, locations, ranking_world):
    ids = ranking_world["ids"]
    reply = query.search(conn, locations, "deploy failure", cwd=ranking_world["cwd"], limit=20)
    found = hit_ids(reply)
    assert found[:3] == [ids["exact"], ids["mixed"], ids["forms"]]
    assert reply["match"] == "all"
    assert not set(found[:3]) & set(ids["missing"])  # a word missing never ranks above every word in some form


def test_a_short_page_still_holds_the_entry_with_every_word_in_other_forms(conn, locations, ranking_world):
    ids = ranking_world["ids"]
    found = hit_ids(query.search(conn, locations, "deploying failures", cwd=ranking_world["cwd"], limit=3))
    assert set(found) == {ids["exact"], ids["mixed"], ids["forms"]}
    assert not set(found) & set(ids["missing"])


def test_words_as_written_count_more_than_other_forms(conn, locations, ranking_world):
    ids = ranking_world["ids"]
    found = hit_ids(query.search(conn, locations, "deploy failure", cwd=ranking_world["cwd"], limit=3))
    assert found.index(ids["exact"]) < found.index(ids["mixed"]) < found.index(ids["forms"])
    # the forms-only entry is shorter and newer, and still never above an entry holding the words as written
    assert found[0] != ids["forms"]
