"""Routes: the JSON API for the agent and the pages for people. Every one checks pi-memory-read (identity needs no
token: it proves the server holds the secret and tells nothing else)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import orjson
from datasette import Forbidden, NotFound, Response
from markupsafe import Markup

from datasette_pi_memory import api, html, identity
from datasette_pi_memory.state import ACTION, state
from pimem_index import (
    SessionsRequest,
    UsageRequest,
    UserError,
    activity,
    browse,
    check_offset,
    conversation,
    counted,
    db,
    duration,
    figures_scope,
    index_status,
    journal,
    lineage,
    noun,
    offered,
    page_default_scope,
    query,
    query_args,
    session_ids,
    wider,
)

logger = logging.getLogger("datasette_pi_memory")


async def allowed(datasette, request) -> bool:
    return await state(datasette).allowed(datasette, request.actor)


def _json_denied(request) -> Response:
    if request.actor is None:
        return Response.json(
            {"error": "authentication required: send Authorization: Bearer <token> (see pimem token)"},
            status=401,
            headers={"www-authenticate": 'Bearer realm="pi-memory"'},
        )
    return Response.json({"error": f"permission denied: {ACTION} is required"}, status=403)


async def api_view(datasette, request):
    if not await allowed(datasette, request):
        return _json_denied(request)
    action = request.url_vars["action"]
    memory = state(datasette)
    args = query_args(request.args)
    try:
        data = await memory.run(api.call, memory.locations, action, args, memory.max_scope_for(request.actor))
    except UserError as e:
        return Response.json({"error": e.for_http()}, status=400)
    except db.DatabaseError as e:
        logger.exception("pi-memory index error")
        return Response.json({"error": db.describe_error(e, memory.locations.db_path)}, status=500)
    except Exception:
        logger.exception("pi-memory API error on %s", request.path)
        return Response.json(
            {"error": "internal error in the pi-memory API; the server log has the details"}, status=500
        )
    return _json(data)


def _json(data: dict) -> Response:
    """A reply as JSON, written by orjson as the CLI's --json is (the standard library's encoder took a
    tenth of a request's CPU); a text orjson refuses (a lone surrogate) goes through the standard library."""
    try:
        body = orjson.dumps(data)
    except orjson.JSONEncodeError:
        return Response.json(data, headers={"cache-control": "no-store"})
    return Response(body, content_type="application/json; charset=utf-8", headers={"cache-control": "no-store"})


async def api_not_found(datasette, request):
    """Any other /-/pi-memory/api path: a JSON 404 naming the routes there are."""
    return Response.json(
        {
            "error": f"no API route {request.path}; the routes are {api.route_list()} "
            "(e.g. /-/pi-memory/api/search?q=deploy)"
        },
        status=404,
    )


async def ensure_pages_allowed(datasette, request) -> None:
    if not await allowed(datasette, request):
        raise Forbidden(
            f"Reading Pi journals needs the {ACTION} permission: log in as root with a one-time link "
            "from pimem login (run it where pimem serve runs)"
        )
    refusal = state(datasette).page_refusal(request.actor)
    if refusal:
        raise Forbidden(refusal)


# ---- pages -----------------------------------------------------------------------------------

KIND_LABELS = {
    "user": "User",
    "assistant": "Assistant",
    "tool_result": "Tool result",
    "bash": "Bash",
    "custom": "Extension message",
    "compaction": "Compaction",
    "branch_summary": "Branch summary",
}
FOLD_CHARS = 1200


async def render(datasette, request, template: str, context: dict, status: int = 200) -> Response:
    body = await datasette.render_template(template, {**_helpers(datasette), **context}, request=request)
    return Response.html(body, status=status, headers={"cache-control": "no-store", **html.PAGE_HEADERS})


def _helpers(datasette) -> dict:
    """What every page template may call: URLs, formatting, labels."""
    return {
        "pm_urls": _urls(datasette),
        "when": html.when,
        "qs": html.qs,
        "search_qs": html.search_qs,
        "highlight": html.highlight,
        "markdown": html.markdown,
        "path": html.path,
        "kind_labels": KIND_LABELS,
        "fold_chars": FOLD_CHARS,
        "counted": counted,
        "noun": noun,
        "money": html.money,
        "tokens": html.tokens,
        "duration": duration,
        "share": html.share,
        "folder": html.folder,
        "short_path": html.short_path,
    }


def _urls(datasette) -> dict:
    path = datasette.urls.path
    return {
        "home": path("/-/pi-memory"),
        "search": path("/-/pi-memory/search"),
        "summaries": path("/-/pi-memory/summaries"),
        "read": path("/-/pi-memory/read"),
        "sessions": path("/-/pi-memory/sessions/"),
        "session_list": path("/-/pi-memory/sessions"),
        "usage": path("/-/pi-memory/usage"),
    }


def _overview(conn, locations):
    return {
        "status": index_status(conn, locations),
        "indexing": query.indexing_state(conn, locations),
        "activity": browse.entries_per_day(conn, days=60),
        "recent": browse.recent_sessions(conn, locations, limit=15),
        "projects": browse.projects(conn, limit=50),
    }


HEADLINE_DAYS = 30


def _headline(conn, max_scope: str) -> dict | None:
    """The overview's usage figures, all time and over the last HEADLINE_DAYS days, in the figures
    pages' scope (scope.figures_scope); None when there is no project to show."""
    projects = browse.projects(conn, limit=1)
    scope, cwd = figures_scope(None, max_scope, projects[0]["cwd"] if projects else None)
    if scope == "project" and cwd is None:
        return None
    since = (datetime.now().astimezone().date() - timedelta(days=HEADLINE_DAYS - 1)).isoformat()
    figures = {}
    for name, start in (("all", None), ("recent", since)):
        request = UsageRequest.create("model", scope=scope, cwd=cwd, since=start, max_scope=max_scope)
        figures[name] = activity.usage(conn, request)
    return {
        "root": figures["all"]["root"],
        "all": figures["all"]["total"],
        "recent": figures["recent"]["total"],
        "days": HEADLINE_DAYS,
        "since": since,
    }


async def index_page(datasette, request):
    await ensure_pages_allowed(datasette, request)
    memory = state(datasette)
    data = await memory.run(_overview, memory.locations)
    max_scope = memory.max_scope_for(request.actor)
    data["headline"] = await memory.run(_headline, max_scope)
    return await render(
        datasette,
        request,
        "pi_memory_index.html",
        {
            **data,
            "chart": html.activity_svg(data["activity"]),
            "scopes": offered(max_scope),
            "scope": page_default_scope(max_scope),
            "locations": memory.locations,
            "empty": data["status"]["journals_total"] == 0,
            "folders_exist": [(str(d), d.is_dir()) for d in memory.locations.sessions_dirs],
        },
    )


def _search_page_data(conn, locations, action, params: dict, max_scope, searched: bool):
    projects = browse.projects(conn, limit=200)
    picked = None  # a project chosen for the caller, which the page names
    if params["scope"] == "project" and not params["cwd"] and projects:
        params["cwd"] = picked = projects[0]["cwd"]
    reply: Any = None  # the hits of summaries get what the page shows of them (`shown`)
    error = None
    if searched:
        try:  # the API's request path (the pages do not index on demand: no journal)
            reply = api.search(conn, locations, params, max_scope, summaries=action == "summaries")
        except UserError as e:
            error = e.for_http()
    if reply and action == "summaries":
        for hit in reply["results"]:
            hit["shown"] = browse.entry_shown(conn, locations, hit)
    return {"projects": projects, "reply": reply, "error": error, "picked_project": picked}


async def search_page(datasette, request):
    return await _search_or_summaries(datasette, request, "search")


async def _search_or_summaries(datasette, request, action: str):
    await ensure_pages_allowed(datasette, request)
    memory = state(datasette)
    max_scope = memory.max_scope_for(request.actor)
    params = query_args(request.args)  # also what the form shows again
    params["journal"] = None  # the pages do not index on demand
    params["scope"] = params["scope"] or page_default_scope(max_scope)
    params["limit"] = params["limit"] or "20"
    searched = action == "summaries" or "q" in request.args or bool(params["kinds"])
    data = await memory.run(_search_page_data, memory.locations, action, params, max_scope, searched)
    kinds = journal.SUMMARY_KINDS if action == "summaries" else journal.KINDS
    return await render(
        datasette,
        request,
        "pi_memory_search.html",
        {
            **data,
            "action": action,
            "params": params,
            "scopes": offered(max_scope),
            "kinds": kinds,
            "title": "Summaries" if action == "summaries" else "Search",
        },
        status=400 if data["error"] else 200,
    )


async def summaries_page(datasette, request):
    return await _search_or_summaries(datasette, request, "summaries")


async def read_page(datasette, request):
    await ensure_pages_allowed(datasette, request)
    memory = state(datasette)
    max_scope = memory.max_scope_for(request.actor)
    params = query_args(request.args)
    if not params["id"]:
        return await render(
            datasette,
            request,
            "pi_memory_read.html",
            {"params": params, "reply": None, "error": "Which entry? Open one from a search (e.g. read?id=c3d4e5f6)"},
            status=400,
        )
    if params["scope"] is None:
        params["scope"] = "session" if params["session_id"] else page_default_scope(max_scope)
    error = None
    reply = None
    try:  # the API's request path: the same request, the same checks and messages (no journal: not indexed)
        reply = await memory.run(api.read, memory.locations, params, max_scope)
    except UserError as e:
        error = e.for_http()
    return await render(
        datasette,
        request,
        "pi_memory_read.html",
        {
            "params": params,
            "reply": reply,
            "error": error,
            "wider": wider(reply["scope"], max_scope) if reply and reply["status"] == "not_found" else None,
        },
        status=400 if error else 200,
    )


def _session_view(conn, locations, session_id: str, params: dict, template, helpers: dict):
    """A session page's data, figures and conversation HTML, all built on a page thread: rendering a
    long conversation is CPU work that must hold neither the event loop nor the API's threads.
    Without the HTML when there is no such session or the request names an entry (a redirect)."""
    data = conversation.page(conn, locations, session_id, **params)
    if data is None or params["entry"]:
        return data, None, None
    figures = _session_figures(conn, session_id, locations)
    if figures is not None and data["branch_figures"] is not None:
        figures = {**figures, **data["branch_figures"]}  # the branch shown, not the whole session
    body = template.render({**helpers, "session": data, "figures": figures})
    return data, figures, Markup(body)


def _session_params(args) -> dict:
    """offset, entry and leaf from a session page's query string; a bad offset is a UserError."""
    offset = check_offset(args.get("offset"), example=200)
    return {"offset": offset, "entry": args.get("entry") or None, "leaf": args.get("leaf") or None}


def _session_figures(conn, session_id: str, locations) -> Mapping[str, Any] | None:
    """The figures in a session page's header: its row of the sessions reply (title, models, duration,
    tokens, cost, tool calls, errors)."""
    try:
        found = activity.sessions(conn, SessionsRequest.create(session_id=session_id, limit=1), locations)["sessions"]
    except UserError:  # not in the index (any more)
        return None
    return found[0] if found else None


async def session_page(datasette, request):
    await ensure_pages_allowed(datasette, request)
    memory = state(datasette)
    session_id = request.url_vars["session_id"]
    try:
        params = _session_params(request.args)
        template = datasette.get_jinja_environment(request).get_template("pi_memory_conversation.html")
        data, figures, body = await memory.run_page(
            _session_view, memory.locations, session_id, params, template, _helpers(datasette)
        )
    except UserError as e:
        context = {"params": query_args(request.args), "reply": None, "error": str(e)}
        return await render(datasette, request, "pi_memory_read.html", context, status=400)
    if data is None:
        return await _session_named(datasette, request, session_id)
    if params["entry"]:
        return Response.redirect(_entry_url(datasette, data, params["entry"]))
    forks = await memory.run(lineage.lineage, memory.locations, session_id, memory.max_scope_for(request.actor))
    context = {"session": data, "figures": figures, "conversation": body, "forks": forks}
    return await render(datasette, request, "pi_memory_session.html", context)


async def _session_named(datasette, request, name: str) -> Response:
    """A session page asked for by a short id or a unique prefix: a redirect (302) to its full id, with the
    query string kept; a name fitting several sessions is a one-line 400 listing them, an unknown one a 404."""
    memory = state(datasette)
    try:
        full = await memory.run(session_ids.resolve, name)
    except session_ids.AmbiguousSession as e:
        context = {"params": query_args(request.args), "reply": None, "error": str(e)}
        return await render(datasette, request, "pi_memory_read.html", context, status=400)
    except UserError:
        raise NotFound(f"No indexed session {name}") from None
    if full == name:  # indexed a moment ago, or gone meanwhile: not a name to resolve
        raise NotFound(f"No indexed session {name}")
    path = datasette.urls.path(f"/-/pi-memory/sessions/{quote(full, safe='')}")
    return Response.redirect(path + (f"?{request.query_string}" if request.query_string else ""))


def _entry_url(datasette, data: dict, entry_id: str) -> str:
    """The session page holding an entry, scrolled to it."""
    path = datasette.urls.path(f"/-/pi-memory/sessions/{quote(data['session_id'], safe='')}")
    query = html.qs(leaf=data["leaf"], offset=data["offset"] or None)
    return f"{path}{'?' + query if query else ''}#entry-{quote(entry_id, safe='')}"


ROUTES = [
    (rf"^{identity.ROUTE}$", identity.identity_view),  # no token: the server proves who it is first
    (rf"^/-/pi-memory/api/(?P<action>{'|'.join(api.ACTIONS)})$", api_view),
    (r"^/-/pi-memory/api(/.*)?$", api_not_found),
    (r"^/-/pi-memory/?$", index_page),
    (r"^/-/pi-memory/search$", search_page),
    (r"^/-/pi-memory/summaries$", summaries_page),
    (r"^/-/pi-memory/read$", read_page),
    (r"^/-/pi-memory/sessions/(?P<session_id>[^/]+)$", session_page),
]
