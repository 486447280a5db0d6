"""A journal's entries get rowids in the order they are written in it, whatever was indexed between its passes:
the read side finds a result's call and the entries around an entry in rowid order (search.exchange)."""

from __future__ import annotations

from pimem_index.index.indexer import index_all


def test_a_journals_entries_get_rowids_in_the_order_they_are_written_across_passes(conn, locations, new_journal):
    first = new_journal("Apps/prjct")
    other = new_journal("Apps/other")
    for n in range(3):
        first.user(f"first pass {n}")
    index_all(conn, locations)
    for n in range(3):
        other.user(f"the other journal {n}")
        first.user(f"second pass {n}")
    index_all(conn, locations)
    rows = conn.execute(
        "SELECT e.rowid, e.offset FROM entries e JOIN files f ON f.id = e.file_id WHERE f.path = ? ORDER BY e.rowid",
        (str(first.path),),
    ).fetchall()
    offsets = [offset for _rowid, offset in rows]
    assert len(rows) == 6 and offsets == sorted(offsets)
    assert not any(later < earlier for earlier, later in zip(offsets, offsets[1:], strict=False))
