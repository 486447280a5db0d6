"""What the writer binds to its INSERTs: no bytes and no None (pysqlite3 looks for an adapter for
each, 8x the cost of binding an int, a str or a bytearray; store.bindable)."""

from __future__ import annotations

from typing import cast

import pytest
from support.passes import threaded_or_bulk

from pimem_index import db
from pimem_index.index import indexer


class Recording:
    """A connection that forwards everything and keeps the values bound to each INSERT."""

    def __init__(self, conn: db.Connection) -> None:
        self._conn = conn
        self.bound: dict[str, list] = {}

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def _keep(self, sql: str, rows: list) -> None:
        if sql.lstrip().startswith("INSERT INTO entries") or sql.lstrip().startswith("INSERT INTO tool_calls"):
            self.bound.setdefault(sql.split()[2], []).extend(value for row in rows for value in row)

    def execute(self, sql, params=()):
        self._keep(sql, [params])
        return self._conn.execute(sql, params)

    def executemany(self, sql, rows):
        rows = list(rows)
        self._keep(sql, rows)
        return self._conn.executemany(sql, rows)


@pytest.mark.parametrize("bulk", [False, True], ids=["threaded", "bulk"])
def test_the_writer_binds_no_bytes_and_no_none_to_its_inserts(conn, locations, new_journal, bulk):
    j = new_journal("Apps/binding")
    j.user("first")
    j.assistant("calling", tool_calls=[("bash", {"command": "ls"}, "toolu_01XFDUDYJgAACzvnptvVer6u")])
    j.tool_result("bash", "listing", call_id="toolu_01XFDUDYJgAACzvnptvVer6u")
    j.assistant("no result yet", tool_calls=[("custom", {}, "call_1")])
    recording = Recording(conn)
    indexer.index_all(cast(db.Connection, recording), locations, settings=threaded_or_bulk(bulk))
    assert {"entries", "tool_calls", "entries_fts"} <= set(recording.bound)
    values = [v for name in ("entries", "tool_calls") for v in recording.bound[name]]
    assert any(isinstance(v, bytearray) for v in values)  # the stored keys: blobs, bound as bytearrays
    assert not [v for v in values if v is None or isinstance(v, bytes)]
    stored = conn.execute(
        "SELECT typeof(c.sid), typeof(e.eid), typeof(c.call_key) FROM tool_calls c "
        "JOIN entries e ON e.rowid = c.entry_rowid ORDER BY c.rowid"
    ).fetchall()
    assert stored == [("blob", "blob", "blob"), ("blob", "blob", "text")]
    assert conn.execute(
        "SELECT count(*) FROM tool_calls WHERE result_rowid IS NULL AND is_error IS NULL"
    ).fetchone() == (1,)
