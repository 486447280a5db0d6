"""What is kept in memory for an index belongs to that open index (`memo.IndexMemo`), never to a module."""

from __future__ import annotations

from pimem_index import store
from pimem_index.index.indexer import index_all
from pimem_index.search import query, wordforms


def ids(reply) -> list[str]:
    return [r["id"] for r in reply["results"]]


def test_two_indexes_open_in_one_process_keep_their_own_answers(locations, new_journal, tmp_path):
    j = new_journal()
    first = j.user("capybara grooming notes")
    a = store.open_index(tmp_path / "a.sqlite")
    index_all(a, locations)
    later = [j.user("capybaras swim in the river"), j.user("an unrelated line")]
    b = store.open_index(tmp_path / "b.sqlite")
    index_all(b, locations)
    try:
        assert ids(query.search(a, locations, "capybara", scope="global")) == [first]
        kept_by_a = len(a.memo)
        assert kept_by_a and len(b.memo) == 0, "a search on one index keeps nothing for the other"
        assert set(ids(query.search(b, locations, "capybara", scope="global"))) == {first, later[0]}
        assert a.memo is not b.memo and len(a.memo) == kept_by_a
        assert (query.collection_stats(a).count, query.collection_stats(b).count) == (1, 3)
        assert wordforms.in_index(a, "capybara", 1) == ("capybara",)
        assert wordforms.in_index(b, "capybara", 1) == ("capybara", "capybaras")
    finally:
        a.close()
        b.close()


def test_an_index_replaced_at_the_same_path_is_never_answered_from_the_one_before(locations, new_journal):
    j = new_journal()
    j.user("capybara grooming notes")
    j.user("zebra crossing notes")
    before = store.open_index(locations.db_path)
    index_all(before, locations)
    assert wordforms.in_index(before, "capybara", 2) == ("capybara",)
    assert len(query.search(before, locations, "capybara", scope="global")["results"]) == 1
    before.close()
    store.delete_index_files(locations.db_path)
    other = new_journal("Apps/other")
    found = [other.user("capybara again"), other.user("capybaras everywhere")]
    j.path.unlink()  # the same path, the same entry count, other words: only the second journal
    after = store.open_index(locations.db_path)
    try:
        index_all(after, locations)
        reply = query.search(after, locations, "capybara", scope="global")
        assert set(ids(reply)) == set(found), "the other form the new index holds is found"
        assert wordforms.in_index(after, "capybara", 2) == ("capybara", "capybaras")
    finally:
        after.close()
