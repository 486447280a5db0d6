"""One-time root login links that a running server accepts without a restart (`pimem login`).

A link carries a nonce and an expiry signed with `<agent folder>/pi-memory/secret`, the file the
server reads too, so links minted after it started are valid. The server records each nonce it
accepts in `<agent folder>/pi-memory/login-used` (0600, expired nonces pruned): a second use is refused.
The login it gives lasts a day (or the `login_seconds` setting): an HttpOnly, SameSite cookie whose
signed value carries the same expiry, so Datasette refuses it afterwards even if a browser kept it.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import time
from pathlib import Path

import itsdangerous
from datasette import Forbidden, Response
from datasette.utils import baseconv

from datasette_pi_memory.state import Settings, state
from datasette_pi_memory.tokens import index_secret

NAMESPACE = "pi-memory-login"
ROUTE = "/-/pi-memory/login"
LANDING = "/-/pi-memory"
TTL_SECONDS = 300
COOKIE_SECONDS = Settings.login_seconds
USED_FILE = "login-used"
ANOTHER = "Get a new one by running: pimem login"


def mint(secret: str, base_url: str, now: float | None = None) -> str:
    """A fresh login link for the server at base_url, valid once for TTL_SECONDS."""
    expires = int((now if now is not None else time.time()) + TTL_SECONDS)
    signed = itsdangerous.URLSafeSerializer(secret, NAMESPACE).dumps(
        {"a": "root", "n": secrets.token_hex(16), "e": expires}
    )
    return f"{base_url.rstrip('/')}{ROUTE}?token={signed}"


def check(secret: str | None, token: str, used_file: Path, now: float | None = None) -> dict:
    """The actor a link logs in, or Forbidden saying why not (bad, expired or already used)."""
    if not secret or not token:
        raise Forbidden(f"This login link is not valid for this server. {ANOTHER}")
    try:
        payload = itsdangerous.URLSafeSerializer(secret, NAMESPACE).loads(token)
    except itsdangerous.BadSignature:
        raise Forbidden(f"This login link is not valid for this server. {ANOTHER}") from None
    now = now if now is not None else time.time()
    if not isinstance(payload, dict) or not isinstance(payload.get("e"), int) or payload["e"] < now:
        raise Forbidden(f"This login link has expired (links last {TTL_SECONDS // 60} minutes). {ANOTHER}")
    if not _first_use(used_file, str(payload.get("n")), payload["e"], now):
        raise Forbidden(f"This login link was already used. {ANOTHER}")
    return {"id": payload.get("a", "root")}


def _first_use(used_file: Path, nonce: str, expires: int, now: float) -> bool:
    """Record the nonce as used (under a lock, across processes); False if it was used before."""
    fd = os.open(used_file, os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(fd, "r+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        used = {}
        for line in fh.read().splitlines():
            try:
                record = json.loads(line)
                used[record["n"]] = int(record["e"])
            except (ValueError, KeyError, TypeError):
                continue
        if nonce in used:
            return False
        used = {n: e for n, e in used.items() if e >= now}
        used[nonce] = expires
        fh.seek(0)
        fh.truncate()
        fh.write("".join(json.dumps({"n": n, "e": e}) + "\n" for n, e in used.items()))
    return True


async def login_view(datasette, request):
    """Log the link's actor (root) in and land on the Pi memory page; a used or stale link is a 403."""
    memory = state(datasette)
    used_file = memory.locations.ensure_memory_dir() / USED_FILE
    actor = check(index_secret(datasette), request.args.get("token", ""), used_file)
    response = Response.redirect(datasette.urls.path(LANDING))
    seconds = memory.settings.login_seconds
    expires = baseconv.base62.encode(int(time.time()) + seconds)  # what Datasette's set_actor_cookie signs
    value = datasette.sign({"a": actor, "e": expires}, "actor")
    response.set_cookie("ds_actor", value, max_age=seconds, httponly=True, samesite="lax")
    return response
