"""Routes: the JSON API for the agent and the pages for people. Every one checks pi-memory-read."""

from __future__ import annotations

import logging

from datasette import Forbidden, NotFound, Response

from pimem_index import db
from pimem_index.errors import UserError

from . import api
from .state import ACTION, state

logger = logging.getLogger("datasette_pi_memory")


async def allowed(datasette, request) -> bool:
    return await datasette.allowed(action=ACTION, actor=request.actor)


def _json_denied(request) -> Response:
    if request.actor is None:
        return Response.json(
            {"error": "authentication required: send Authorization: Bearer <token> (see pimem token)"},
            status=401, headers={"www-authenticate": 'Bearer realm="pi-memory"'},
        )
    return Response.json({"error": f"permission denied: {ACTION} is required"}, status=403)


async def api_view(datasette, request):
    if not await allowed(datasette, request):
        return _json_denied(request)
    action = request.url_vars["action"]
    pm = state(datasette)
    params = api.Params.from_request(request)
    try:
        data = await pm.run(api.call, pm.locations, action, params, pm.max_scope_for(request.actor))
    except UserError as e:
        return Response.json({"error": str(e)}, status=400)
    except db.DatabaseError as e:
        logger.exception("pi-memory index error")
        return Response.json({"error": f"the index could not be used: {e} (try: pimem rebuild)"}, status=500)
    return Response.json(data, headers={"cache-control": "no-store"})


async def ensure_pages_allowed(datasette, request) -> None:
    if not await allowed(datasette, request):
        raise Forbidden(f"Reading Pi journals needs the {ACTION} permission: log in as root "
                        "with the link pimem serve printed")


ROUTES = [
    (r"^/-/pi-memory/api/(?P<action>search|read|summaries|status)$", api_view),
]
