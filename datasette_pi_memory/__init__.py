"""datasette-pi-memory: Pi session journals through Datasette.

Hooks only: the pi-memory-read action, who holds it, the index database private and
read-only, routes, the render hook on the index's entries table, a menu link, the background
indexer, and reopening an index deleted under the server. What is shown comes
from pimem_index; this package adds HTTP, templates and permissions.
"""

from __future__ import annotations

from datasette import hookimpl
from datasette.permissions import Action, PermissionSQL

from datasette_pi_memory import access, background, catalog, figures, login, render, tokens, views
from datasette_pi_memory.state import (
    ACTION,
    ACTION_ABBR,
    AGENT_ID,
    PLUGIN,
    discard_state,
    existing_state,
    settings_for,
    state,
)
from pimem_index import query


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
    """The agent's actor (from `pimem token`) may read; root gets it from --root; others by config.
    The index database: private to pi-memory-read, read-only for everyone (access.py)."""
    if action != ACTION:
        return access.index_rules(datasette, actor, action)
    if actor and actor.get("id") == AGENT_ID:
        return PermissionSQL.allow(reason="the Pi agent's token (pimem token)")
    return None


@hookimpl
def write_wrapper(datasette, database, request, transaction):
    """Second guard: no write reaches the index through Datasette, whatever the permissions say."""
    return access.refuse_writes(datasette, database)


@hookimpl
def asgi_wrapper(datasette):
    """Before each request, one stat: an index deleted or replaced under the server is reopened."""

    def wrap(app):
        async def follow_index(scope, receive, send):
            if scope.get("type") == "http":
                state(datasette).follow_index(datasette)
            await app(scope, receive, send)

        return follow_index

    return wrap


@hookimpl(trylast=True)
def prepare_connection(conn, database, datasette):
    """The table search box on the index quotes each term apart: Datasette's own escape_fts
    keeps `heron-pipeline` whole, a phrase the index (it keeps no positions) refuses."""
    if database == settings_for(datasette).database:
        conn.create_function("escape_fts", 1, query.match_expression)


@hookimpl(tryfirst=True)
def register_token_handler(datasette):
    """`pimem token`'s tokens work wherever the index is served, whatever secret Datasette has."""
    return tokens.IndexSecretTokens()


@hookimpl
def register_routes(datasette):
    return [*views.ROUTES, *figures.ROUTES, (rf"^{login.ROUTE}$", login.login_view)]


@hookimpl
def menu_links(datasette, actor, request):
    async def inner():
        if actor and not state(datasette).page_refusal(actor) and await datasette.allowed(action=ACTION, actor=actor):
            return [{"href": datasette.urls.path("/-/pi-memory"), "label": "Pi memory"}]
        return []

    return inner


@hookimpl
def render_cell(row, value, column, table, pks, database, datasette, request, column_type):
    return render.entry_cell(row, column, table, pks, database, datasette, request) or render.link_cell(
        row, value, column, database, datasette
    )


@hookimpl
def startup(datasette):
    async def inner():
        memory = state(datasette)
        if (datasette.plugin_config(PLUGIN) or {}).get("root"):
            datasette.root_enabled = True  # pimem serve: root may do everything, as with --root
        if memory.settings.serves_index:
            await catalog.apply(datasette, memory.settings.database)
        if memory.settings.background_index:
            background.start(datasette, memory)

    return inner


@hookimpl
def shutdown(datasette):
    async def inner():
        memory = existing_state(datasette)
        if memory is not None:
            await background.stop(memory)
        discard_state(datasette)

    return inner
