"""datasette-pi-memory: Pi session journals through Datasette.

Hooks only: the pi-memory-read action, who holds it, routes, the render hook on the
index's entries table, a menu link, and the background indexer. What is shown comes
from pimem_index; this package adds HTTP, templates and permissions.
"""

from __future__ import annotations

from datasette import hookimpl
from datasette.permissions import Action, PermissionSQL

from pimem_index import query

from . import background, render, views
from .state import ACTION, ACTION_ABBR, AGENT_ID, forget, settings_for, state


@hookimpl
def register_actions(datasette):
    return [
        Action(
            name=ACTION,
            abbr=ACTION_ABBR,
            description="Read Pi journal text",
        )
    ]


@hookimpl
def permission_resources_sql(datasette, actor, action):
    """The agent's actor (from `pimem token`) may read; root gets it from --root; others by config."""
    if action != ACTION:
        return None
    if actor and actor.get("id") == AGENT_ID:
        return PermissionSQL.allow(reason="the Pi agent's token (pimem token)")
    return None


@hookimpl(trylast=True)
def prepare_connection(conn, database, datasette):
    """The table search box on the index quotes each term apart: Datasette's own escape_fts
    keeps `heron-pipeline` whole, a phrase the index (it keeps no positions) refuses."""
    if database == settings_for(datasette).database:
        conn.create_function("escape_fts", 1, query.match_expression)


@hookimpl
def register_routes(datasette):
    return views.ROUTES


@hookimpl
def menu_links(datasette, actor, request):
    async def inner():
        if actor and await datasette.allowed(action=ACTION, actor=actor):
            return [{"href": datasette.urls.path("/-/pi-memory"), "label": "Pi memory"}]
        return []

    return inner


@hookimpl
def render_cell(row, value, column, table, pks, database, datasette, request, column_type):
    return render.entry_cell(row, column, table, pks, database, datasette, request)


@hookimpl
def startup(datasette):
    async def inner():
        pm = state(datasette)
        if pm.settings.background_index:
            background.start(datasette, pm)

    return inner


@hookimpl
def shutdown(datasette):
    async def inner():
        await background.stop(datasette)
        forget(datasette)

    return inner
