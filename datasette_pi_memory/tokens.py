"""`pimem token`'s tokens under any Datasette that serves the index, whatever secret it was started with.

`pimem token` signs with `<agent folder>/pi-memory/secret`. A Datasette started without that
secret (a plain `datasette serve history.sqlite`) would refuse such a token; this handler
checks a `dstok_` token against that file too, with Datasette's own rules (expiry, restrictions).
A token it cannot verify is left to Datasette's handler, so the instance's own tokens keep working.
"""

from __future__ import annotations

import itsdangerous
from datasette.tokens import SignedTokenHandler, TokenHandler

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
        secret = index_secret(datasette) if token.startswith(PREFIX) else None
        if secret is None:
            return None
        try:
            itsdangerous.URLSafeSerializer(secret, "token").loads(token[len(PREFIX) :])
        except itsdangerous.BadSignature:
            return None  # not ours: Datasette's own handler decides
        return await SignedTokenHandler().verify_token(_SignedWith(datasette, secret), token)
