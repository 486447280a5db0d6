"""`/-/pi-memory/api/identity`: this server proves it holds the pi-memory secret before a client sends its token.

The Pi tool holds a token `dstok_<payload>.<signature>`, the signature made with the secret. It sends
only the payload and a fresh challenge; the server signs the payload again and answers
HMAC-SHA256(signature, "pi-memory identity:" + challenge). Only a server that holds the secret can
answer, and the answer reveals neither the signature nor the secret, so something else listening on
the port learns nothing and is refused before the token leaves the tool.
"""

from __future__ import annotations

import hashlib
import hmac
import re

import itsdangerous
from datasette import Response

from datasette_pi_memory.tokens import PREFIX, index_secret

ROUTE = "/-/pi-memory/api/identity"
CONTEXT = "pi-memory identity:"
_CHALLENGE = re.compile(r"[0-9a-f]{32,128}")
_PAYLOAD = re.compile(r"\.?[A-Za-z0-9_-]{1,4096}")  # itsdangerous' URL-safe payload, compressed ones start with "."
EXAMPLE = f"{ROUTE}?challenge=<32 to 128 hex digits>&token_payload=<the token between dstok_ and its last dot>"


def proof(signature: str, challenge: str) -> str:
    """What a client holding the token's signature expects for its challenge."""
    return hmac.new(signature.encode(), f"{CONTEXT}{challenge}".encode(), hashlib.sha256).hexdigest()


def token_proof(secret: str, payload: str, challenge: str) -> str:
    """The proof for a token payload, signed with the secret as `pimem token` signs it."""
    signature = itsdangerous.URLSafeSerializer(secret, "token").make_signer().get_signature(payload).decode()
    return proof(signature, challenge)


def split_token(token: str) -> tuple[str, str] | None:
    """(payload, signature) of a `dstok_` token, None when it has another form."""
    if not token.startswith(PREFIX) or "." not in token[len(PREFIX) + 1 :]:
        return None
    payload, signature = token[len(PREFIX) :].rsplit(".", 1)
    return payload, signature


async def identity_view(datasette, request):
    """Answer a challenge with the proof; anyone may ask (it needs no token, and tells nothing)."""
    challenge = request.args.get("challenge", "")
    payload = request.args.get("token_payload", "")
    if not _CHALLENGE.fullmatch(challenge) or not _PAYLOAD.fullmatch(payload):
        return Response.json({"error": f"identity needs a challenge and a token payload, e.g. {EXAMPLE}"}, status=400)
    secret = index_secret(datasette)
    if secret is None:
        return Response.json({"error": "this Datasette does not serve the pi-memory index"}, status=404)
    return Response.json(
        {"server": "pi-memory", "proof": token_proof(secret, payload, challenge)}, headers={"cache-control": "no-store"}
    )
