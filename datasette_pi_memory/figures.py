"""The figures pages: every session (filtered, sorted, paged) and usage (cost and tokens per day and
model, per project, per model, the costliest sessions), for people; the agent's token gets a 403.

Thin: the figures come from pimem_index.session.activity through its request objects (as the API's and the
CLI's do) and session titles from pimem_index.session.browse (the name, stored redacted, or the first user
message reread and redacted). Charts are server-rendered CSS bars, each a link to the sessions it counts.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from datasette_pi_memory import html
from datasette_pi_memory.state import state
from datasette_pi_memory.views import ensure_pages_allowed, render
from pimem_index import (
    SessionsRequest,
    UsageRequest,
    UserError,
    activity,
    allowed,
    browse,
    figures_scope,
    query_args,
    replies,
    session_ids,
)

SESSIONS_PAGE = 50
SORTS = (("date", "Latest activity"), ("cost", "Cost"), ("tokens", "Tokens"), ("size", "Entries"))
TOP_SESSIONS = 10
DEFAULT_DAYS = 30  # the usage page's period when none is asked for
MAX_DAY_BARS = 92  # longer periods are charted per ISO week, and past MAX_WEEK_BARS per month
MAX_WEEK_BARS = 104
PERIODS = (("Last 7 days", 7), ("Last 30 days", 30), ("Last 90 days", 90), ("Last year", 365))
FILTERS = ("cwd", "model", "since", "until", "sort")


def _scoped(conn, args: dict, max_scope: str) -> tuple[dict, list[dict]]:
    """The page's parameters with its scope (scope.figures_scope), and the projects to choose from."""
    projects = browse.projects(conn, limit=200)
    scope, cwd = figures_scope(args["cwd"], max_scope, projects[0]["cwd"] if projects else None)
    return {**args, "scope": scope, "cwd": cwd, "journal": None, "session_id": None}, projects


def _sessions_data(conn, locations, args: dict, max_scope: str) -> dict:
    args, projects = _scoped(conn, args, max_scope)
    data: dict[str, Any] = {
        "projects": projects,
        "params": args,
        "models": [],
        "reply": None,
        "error": None,
        "shorts": {},
    }
    try:
        request = SessionsRequest.from_args({**args, "limit": args["limit"] or SESSIONS_PAGE}, max_scope=max_scope)
        data["reply"] = activity.sessions(conn, request, locations)
        data["models"] = _models(conn, args, max_scope)
    except UserError as e:
        data["error"] = str(e)
        return data
    data["params"] = {**args, "sort": request.sort, "offset": request.offset, "limit": request.limit}
    related = [s["parent_session_id"] for s in data["reply"]["sessions"]]
    related += [fork for s in data["reply"]["sessions"] for fork in s["forks"]]
    data["shorts"] = session_ids.short_ids(conn, related)  # parents and forks, named by their short ids
    return data


def _models(conn, args: dict, max_scope: str) -> list[str]:
    """The models used in the page's scope, the costliest first (the model filter's choices)."""
    request = UsageRequest.from_args({**args, "since": None, "until": None, "by": "model"}, max_scope=max_scope)
    return [row["key"] for row in activity.usage(conn, request)["rows"] if row["key"]]


async def sessions_page(datasette, request):
    """/-/pi-memory/sessions: every session in the actor's scope, filtered, sorted and paged."""
    await ensure_pages_allowed(datasette, request)
    memory = state(datasette)
    max_scope = memory.max_scope_for(request.actor)
    data = await memory.run(_sessions_data, memory.locations, query_args(request.args), max_scope)
    params = data["params"]
    base = datasette.urls.path("/-/pi-memory/sessions")

    def page_url(**changes) -> str:
        wanted = {key: params.get(key) for key in FILTERS} | {"limit": request.args.get("limit")}
        wanted |= {"offset": params.get("offset") or None} | changes
        if wanted.get("sort") == "date":
            wanted["sort"] = None
        query = html.qs(**wanted)
        return base + ("?" + query if query else "")

    return await render(
        datasette,
        request,
        "pi_memory_sessions.html",
        {
            **data,
            "sorts": SORTS,
            "sort_label": dict(SORTS).get(params.get("sort") or "date", "Latest activity"),
            "all_projects": allowed("global", max_scope),
            "filtered": any(request.args.get(key) for key in FILTERS),
            "page_url": page_url,
        },
        status=400 if data["error"] else 200,
    )


# ---- the usage page ---------------------------------------------------------------------------


def _buckets(first: date, last: date) -> tuple[str, list[dict]]:
    """The chart's bars from `first` to `last`: days, else ISO weeks, else months; each with its key
    (as activity.usage names it) and the local days it covers (`since`, `until`)."""
    if (last - first).days < MAX_DAY_BARS:
        days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
        return "day", [_bucket(day.isoformat(), day, day) for day in days]
    monday = first - timedelta(days=first.weekday())
    if (last - monday).days < MAX_WEEK_BARS * 7:
        weeks = range((last - monday).days // 7 + 1)
        return "week", [_week(monday + timedelta(weeks=i)) for i in weeks]
    months, day = [], first.replace(day=1)
    while day <= last:
        following = (day + timedelta(days=32)).replace(day=1)
        months.append(_bucket(day.isoformat()[:7], day, following - timedelta(days=1)))
        day = following
    return "month", months


def _week(monday: date) -> dict:
    year, week, _ = monday.isocalendar()
    return _bucket(f"{year}-W{week:02d}", monday, monday + timedelta(days=6))


def _bucket(key: str, since: date, until: date) -> dict:
    return {
        "key": key,
        "since": since.isoformat(),
        "until": until.isoformat(),
        "cost": 0.0,
        "total_tokens": 0,
        "split": {},
    }


def _period(args: dict, rows: list[replies.UsageRow], today: date) -> tuple[date, date]:
    """The days the chart covers: the dates asked for, else the first day with figures to today."""
    first = _day(args["since"]) or (_day(rows[0]["key"]) if rows else None) or today
    last = _day(args["until"]) or today
    return min(first, last), max(first, last)


def _day(value: str | None) -> date | None:
    """The local day a page parameter or a day key names (YYYY-MM-DD or an ISO date-time), else None."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.astimezone().date() if parsed.tzinfo else parsed.date()


def _chart(conn, args: dict, max_scope: str, today: date) -> dict:
    """Cost and tokens per bar (day, week or month) split by model, zeros included, oldest first."""

    def usage(by: str) -> list[replies.UsageRow]:
        request = UsageRequest.from_args({**args, "by": by}, max_scope=max_scope)
        return activity.usage(conn, request, split="model")["rows"]

    rows = usage("day")
    by, bars = _buckets(*_period(args, rows, today))
    found = {row["key"]: row for row in (rows if by == "day" else usage(by))}
    for bar in bars:
        bar.update({key: value for key, value in found.get(bar["key"], {}).items() if key != "key"})
    return {"by": by, "bars": bars}


def _usage_data(conn, locations, args: dict, max_scope: str, today: date) -> dict:
    args, projects = _scoped(conn, args, max_scope)
    data: dict[str, Any] = {"projects": projects, "params": args, "report": None, "error": None}
    try:
        per_model = activity.usage(conn, UsageRequest.from_args({**args, "by": "model"}, max_scope=max_scope))
        per_project = activity.usage(conn, UsageRequest.from_args({**args, "by": "project"}, max_scope=max_scope))
        top = SessionsRequest.from_args(
            {**args, "sort": "cost", "limit": TOP_SESSIONS, "offset": None}, max_scope=max_scope
        )
        chart = _chart(conn, args, max_scope, today)
        sessions = [s for s in activity.sessions(conn, top)["sessions"] if s["cost"]]
    except UserError as e:
        data["error"] = str(e)
        return data
    data["report"] = {
        "root": per_model["root"],
        "total": per_model["total"],
        "models": per_model["rows"],
        "projects": per_project["rows"],
        "sessions": browse.titled(conn, locations, sessions),
        **chart,
    }
    return data


async def usage_page(datasette, request):
    """/-/pi-memory/usage: cost and tokens per day by model, per project, per model, the costliest sessions."""
    await ensure_pages_allowed(datasette, request)
    memory = state(datasette)
    max_scope = memory.max_scope_for(request.actor)
    today = datetime.now().astimezone().date()
    args = query_args(request.args)
    if "since" not in request.args and "until" not in request.args:
        args["since"] = (today - timedelta(days=DEFAULT_DAYS - 1)).isoformat()
    data = await memory.run(_usage_data, memory.locations, args, max_scope, today)
    params = data["params"]
    sessions_base = datasette.urls.path("/-/pi-memory/sessions")
    usage_base = datasette.urls.path("/-/pi-memory/usage")

    def sessions_link(**changes) -> str:
        wanted = {
            "cwd": params["cwd"] if params["scope"] == "project" else None,
            "since": params["since"],
            "until": params["until"],
        }
        return sessions_base + "?" + html.qs(**(wanted | changes))

    return await render(
        datasette,
        request,
        "pi_memory_usage.html",
        {
            **data,
            "all_projects": allowed("global", max_scope),
            "colour": html.colours([m["key"] for m in (data["report"] or {}).get("models", [])]),
            "periods": _period_links(usage_base, params, today),
            "sessions_link": sessions_link,
            "bar_link": lambda bar, model: sessions_link(since=bar["since"], until=bar["until"], model=model),
            "model_link": lambda model: sessions_link(model=model),
            "project_link": lambda root: sessions_link(cwd=root),
        },
        status=400 if data["error"] else 200,
    )


def _period_links(base: str, params: dict, today: date) -> list[tuple[str, str, bool]]:
    """The usage page's quick periods (the last 7, 30, 90 and 365 days, and all time: an empty since),
    each with its link and whether it is the period shown."""
    starts = [(label, (today - timedelta(days=days - 1)).isoformat()) for label, days in PERIODS] + [("All time", "")]
    cwd = [("cwd", params["cwd"])] if params["scope"] == "project" and params["cwd"] else []
    shown = None if params["until"] else (params["since"] or "")
    return [(label, base + "?" + urlencode([*cwd, ("since", since)]), since == shown) for label, since in starts]


ROUTES = [
    (r"^/-/pi-memory/sessions/?$", sessions_page),
    (r"^/-/pi-memory/usage/?$", usage_page),
]
