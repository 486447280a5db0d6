"""The render hook: Datasette's entries pages show an entry's redacted text to readers only; custom SQL,
views, other databases and pointers outside the journal folders read nothing.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from support.plugin_world import HERON, ROOT, make_datasette

from pimem_index.index.indexer import index_all

CANARY = "CANARY-7f3e9b-outside-the-journal-folders"


@pytest.mark.asyncio
async def test_entries_table_shows_redacted_text_to_root_only(ds, world):
    root = await ds.client.get("/history/entries", actor=ROOT)
    assert root.status_code == 200
    assert HERON in root.text and 'class="pi-memory-cell"' in root.text
    assert "&lt;script&gt;alert" in root.text and "<script>alert" not in root.text
    # Issue 14 item 4: the index's tables are private to pi-memory-read even on a plain Datasette
    # (this test used to pin anonymous 200 without the text).
    anon = await ds.client.get("/history/entries")
    assert anon.status_code == 403
    assert HERON not in anon.text and "pi-memory-cell" not in anon.text
    alice = await ds.client.get("/history/entries", actor={"id": "alice"})
    assert alice.status_code == 403 and HERON not in alice.text


@pytest.mark.asyncio
async def test_entry_row_page_shows_text(ds, world, conn):
    rowid = conn.execute("SELECT rowid FROM entries WHERE id = ?", (world["ids"]["user"],)).fetchone()[0]
    res = await ds.client.get(f"/history/entries/{rowid}", actor=ROOT)
    assert res.status_code == 200 and HERON in res.text
    assert "/-/pi-memory/read?id=" in res.text


@pytest.mark.asyncio
async def test_secret_in_a_journal_is_redacted_on_the_table_page(ds, world, conn, locations):
    secret = "gh" + "p_" + "Rk3mW8qZ2xT5vB9nC4yH7jL1pD6sF0gA2eU8"
    world["a"].tool_result("bash", f"export GITHUB_TOKEN={secret}")
    index_all(conn, locations)
    res = await ds.client.get("/history/entries?_sort_desc=rowid", actor=ROOT)
    assert "GITHUB_TOKEN" in res.text and secret not in res.text


@pytest.mark.asyncio
async def test_custom_sql_reads_nothing(ds, world, conn, tmp_path):
    canary_file = tmp_path / "canary.jsonl"
    line = json.dumps({"type": "message", "id": "zz", "message": {"role": "user", "content": CANARY}}).encode()
    canary_file.write_bytes(line + b"\n")
    sql = (
        f"select 1 as rowid, 1 as file_id, 'zz' as id, '{canary_file}' as path, 0 as offset, "
        f"{len(line)} as length, 'user' as kind"
    )
    res = await ds.client.get("/history/-/query", params={"sql": sql}, actor=ROOT)
    assert res.status_code == 200, res.text
    assert CANARY not in res.text and "pi-memory-cell" not in res.text
    # even selecting real entries rows through SQL renders numbers only
    res = await ds.client.get(
        "/history/-/query", params={"sql": "select rowid, offset, length from entries"}, actor=ROOT
    )
    assert res.status_code == 200 and HERON not in res.text and "pi-memory-cell" not in res.text


@pytest.mark.asyncio
async def test_views_and_other_tables_read_nothing(ds, world):
    for path in ("/history/files", "/history/sessions", "/history/meta"):
        res = await ds.client.get(path, actor=ROOT)
        assert res.status_code == 200 and HERON not in res.text and "pi-memory-cell" not in res.text


@pytest.mark.asyncio
async def test_an_entries_table_in_another_database_reads_nothing(locations, world, tmp_path, conn):
    rogue = tmp_path / "rogue.db"
    rc = sqlite3.connect(rogue)
    rc.execute("CREATE TABLE entries (rowid INTEGER PRIMARY KEY, offset INTEGER, length INTEGER)")
    rc.executemany(
        "INSERT INTO entries VALUES (?, 0, 10)", [(r[0],) for r in conn.execute("SELECT rowid FROM entries")]
    )
    rc.commit()
    rc.close()
    datasette = make_datasette(locations)
    datasette.add_database(
        __import__("datasette.database", fromlist=["Database"]).Database(datasette, str(rogue)), name="rogue"
    )
    await datasette.invoke_startup()
    res = await datasette.client.get("/rogue/entries", actor=ROOT)
    assert res.status_code == 200 and HERON not in res.text and "pi-memory-cell" not in res.text
    await datasette.invoke_shutdown()


@pytest.mark.asyncio
async def test_a_pointer_outside_the_folders_is_never_read(ds, world, conn, tmp_path):
    """A tampered index that points an entry at a file outside the journal folders."""
    canary_file = tmp_path / "canary.jsonl"
    canary_file.write_text(CANARY * 10 + "\n")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE files SET path = ? WHERE path = ?", (str(canary_file), str(world["b"].path)))
    conn.execute("COMMIT")
    res = await ds.client.get("/history/entries", actor=ROOT)
    assert CANARY not in res.text
    assert "outside the journal folders" in res.text
    page = await ds.client.get(f"/-/pi-memory/sessions/{world['b'].session_id}", actor=ROOT)
    assert page.status_code == 200 and CANARY not in page.text
