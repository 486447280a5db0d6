"""`pimem token`'s tokens under any Datasette that serves the index, whatever secret it was started with.

`pimem token` signs with `<agent folder>/pi-memory/secret`. A Datasette started without that
secret (a plain `datasette serve history.sqlite`) would refuse such a token; this handler
checks a `dstok_` token against that file too, with Datasette's own rules (expiry, restrictions).
A token it cannot verify is left to Datasette's handler, so the instance's own tokens keep working.
"""

from __future__ import annotations

import os
import time

import itsdangerous
from datasette.tokens import SignedTokenHandler, TokenHandler

from datasette_pi_memory.kept import SECONDS
from datasette_pi_memory.state import logger, state
from pimem_index import UserError, refuse_planted

PREFIX = "dstok_"
SECRET_FILE = "secret"


def index_secret(datasette) -> str | None:
    """The pi-memory secret, when this instance serves the index and the file exists (never created here)."""
    memory = state(datasette)
    if not memory.settings.serves_index:
        return None
    path = memory.locations.memory_dir / SECRET_FILE
    try:
        refuse_planted(path.parent, "folder")
        refuse_planted(path, "secret")
        return path.read_text().strip() or None
    except OSError:
        return None
    except UserError as e:  # a secret someone else could have planted signs nothing here
        logger.warning("pi-memory: not using the secret: %s", e)
        return None


class _SignedWith:
    """This Datasette seen by SignedTokenHandler, but unsigning with another secret."""

    def __init__(self, datasette, secret: str):
        self._datasette = datasette
        self._secret = secret

    def unsign(self, signed, namespace="default"):
        return itsdangerous.URLSafeSerializer(self._secret, namespace).loads(signed)

    def setting(self, key):
        return self._datasette.setting(key)


class IndexSecretTokens(TokenHandler):
    """Verifies tokens signed with the pi-memory secret; creates tokens as Datasette's own handler does."""

    name = "pi-memory"

    async def create_token(self, datasette, actor_id, *, expires_after=None, restrictions=None) -> str:
        return await SignedTokenHandler().create_token(
            datasette, actor_id, expires_after=expires_after, restrictions=restrictions
        )

    async def verify_token(self, datasette, token: str) -> dict | None:
        """The token's actor when the pi-memory secret signed it. Kept a few seconds (kept.SECONDS, never past
        the token's expiry) for the secret file as it is now: a new secret (a revoked token) is seen at once."""
        if not token.startswith(PREFIX):
            return None
        memory = state(datasette)
        key = (token, _secret_identity(memory))
        kept = memory.tokens.get(key, _UNKNOWN)
        if kept is not _UNKNOWN:
            return dict(kept) if kept is not None else None
        actor = await self._verify(datasette, token)
        expires = (actor or {}).get("token_expires")
        seconds = min(SECONDS, expires - time.time()) if isinstance(expires, int | float) else SECONDS
        memory.tokens.put(key, dict(actor) if actor is not None else None, seconds)
        return actor

    async def _verify(self, datasette, token: str) -> dict | None:
        secret = index_secret(datasette)
        if secret is None:
            return None
        try:
            itsdangerous.URLSafeSerializer(secret, "token").loads(token[len(PREFIX) :])
        except itsdangerous.BadSignature:
            return None  # not ours: Datasette's own handler decides
        return await SignedTokenHandler().verify_token(_SignedWith(datasette, secret), token)


_UNKNOWN = object()


def _secret_identity(memory) -> tuple | None:
    """What changes when the secret file is replaced, rewritten or its owner or mode changes (one stat)."""
    try:
        st = os.stat(os.path.join(memory.locations.memory_dir, SECRET_FILE))
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_uid)
