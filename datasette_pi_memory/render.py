"""The render hook: an entry's redacted journal text beside its pointer on the entries pages.

Only Datasette's own table and row pages for the `entries` table of the index database
qualify (custom SQL passes table=None and is never acted on). The pointer is looked up
by the row's primary key in the index's entries table, never taken from cell values, and
pimem_index.session.browse refuses journals outside the journal folders.

The text goes in the `length` cell: offset and length are the pointer into the journal,
and the text is what those bytes say. The number stays visible and sortable.

Ids link to the plugin's pages (`link_cell`): in any table, view, canned query or SQL result of
the index database, a `session_id` cell links to the session's page and an `entry_id` cell to
the read page. A link reads nothing; the page it opens checks the permission itself.
"""

from __future__ import annotations

from urllib.parse import quote

from markupsafe import Markup, escape

from datasette_pi_memory.html import qs
from datasette_pi_memory.state import ACTION, same_file, state
from pimem_index import browse

RENDER_TABLE = "entries"
SESSION_COLUMN = "session_id"
ENTRY_COLUMN = "entry_id"
RENDER_COLUMN = "length"
PREVIEW_CHARS = 400


def entry_cell(row, column, table, pks, database, datasette, request):
    if table != RENDER_TABLE or column != RENDER_COLUMN or request is None or not database:
        return None
    memory = state(datasette)
    if database != memory.settings.database:
        return None
    ds_db = datasette.databases.get(database)
    if ds_db is None or not ds_db.path or not same_file(ds_db.path, memory.locations.db_path):
        return None
    if list(pks or ()) != ["rowid"]:
        return None
    try:
        rowid = int(row["rowid"])
        length = row["length"]
    except (KeyError, IndexError, TypeError, ValueError):
        return None

    async def inner():
        if memory.page_refusal(request.actor) or not await datasette.allowed(action=ACTION, actor=request.actor):
            return None
        data = await memory.run(browse.entry_text, memory.locations, rowid, PREVIEW_CHARS)
        if data is None:
            return None
        return cell_html(datasette, data, length)

    return inner()


def session_url(datasette, data: dict) -> str:
    """The session page that holds the entry, scrolled to it (the page finds which one)."""
    path = datasette.urls.path("/-/pi-memory/sessions/" + quote(data["session_id"] or "", safe=""))
    return path + "?" + qs(entry=data["id"])


def cell_html(datasette, data: dict, length) -> Markup:
    read_url = datasette.urls.path("/-/pi-memory/read") + "?" + qs(id=data["id"], session_id=data["session_id"])
    parts = [
        f'{escape(str(length))}<div class="pi-memory-cell" '
        'style="margin-top:0.3em;min-width:18em;max-width:40em;font-size:0.85em">'
    ]
    if data["unavailable"]:
        parts.append(f"<em>{escape(data['text'])}</em>")
    else:
        text = data["text"]
        more = " …" if data["truncated"] else ""
        parts.append(f'<div style="white-space:pre-wrap;max-height:12em;overflow:auto">{escape(text)}{more}</div>')
        label = f"read all {data['total_chars']:,} characters" if data["truncated"] else "read"
        parts.append(f'<a href="{escape(read_url)}">{label}</a>')
        parts.append(f' &middot; <a href="{escape(session_url(datasette, data))}">in its session</a>')
    parts.append("</div>")
    return Markup("".join(parts))


def link_cell(row, value, column, database, datasette):
    """A `session_id` or `entry_id` cell of the index database as a link to its plugin page, else None."""
    if column not in (SESSION_COLUMN, ENTRY_COLUMN) or not isinstance(value, str) or not value:
        return None
    if not database or database != state(datasette).settings.database:
        return None
    if column == SESSION_COLUMN:
        href = datasette.urls.path("/-/pi-memory/sessions/") + quote(value, safe="")
    else:
        href = datasette.urls.path("/-/pi-memory/read") + "?" + qs(id=value, session_id=_cell(row, SESSION_COLUMN))
    return Markup(f'<a href="{escape(href)}">{escape(value)}</a>')


def _cell(row, column: str):
    """A row's value in `column`, None when the row has no such column."""
    try:
        return row[column]
    except (KeyError, IndexError):
        return None
