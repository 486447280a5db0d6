"""`/-/pi-memory/api/identity` through a real Datasette: the server proves it holds the secret behind the agent's
token without seeing the token (issue 25 item 5)."""

from __future__ import annotations

import hashlib
import hmac
import secrets

import pytest
from datasette.app import Datasette as PlainDatasette
from support.plugin_world import make_datasette, running

from datasette_pi_memory import identity
from pimem_index.replies import IdentityReply, conforms


def expected(token: str, challenge: str) -> str:
    """What the Pi tool computes from the token it holds (memory_context.ts verifyServer)."""
    signature = token.rsplit(".", 1)[1]
    return hmac.new(signature.encode(), f"pi-memory identity:{challenge}".encode(), hashlib.sha256).hexdigest()


async def ask(ds, token: str, challenge: str):
    payload = token.removeprefix("dstok_").rsplit(".", 1)[0]
    return await ds.client.get(identity.ROUTE, params={"challenge": challenge, "token_payload": payload})


@pytest.mark.asyncio
async def test_the_server_answers_a_challenge_with_a_proof_only_the_secrets_holder_can_give(locations, world, token):
    async with running(make_datasette(locations)) as ds:
        challenge = secrets.token_hex(32)
        res = await ask(ds, token, challenge)  # no Authorization: the token itself never travels
        assert res.status_code == 200, res.text
        assert conforms(res.json(), IdentityReply) == []
        assert res.json()["proof"] == expected(token, challenge)
        assert token.rsplit(".", 1)[1] not in res.text
        other = await ask(ds, token, secrets.token_hex(32))
        assert other.json()["proof"] not in (res.json()["proof"], expected(token, challenge))


@pytest.mark.asyncio
async def test_a_token_signed_with_another_secret_gets_a_proof_that_does_not_match_it(locations, world):
    other = PlainDatasette(secret="another-secret")
    try:
        foreign = await other.create_token("pi-agent")
    finally:
        other.close()
    async with running(make_datasette(locations)) as ds:
        challenge = secrets.token_hex(32)
        res = await ask(ds, foreign, challenge)
        assert res.status_code == 200 and res.json()["proof"] != expected(foreign, challenge)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "params",
    [{}, {"challenge": "abc", "token_payload": "x"}, {"challenge": "g" * 64, "token_payload": "x"},
     {"challenge": "a" * 64, "token_payload": "x y"}, {"challenge": "a" * 64, "token_payload": "x" * 5000}],
)  # fmt: skip
async def test_a_malformed_identity_request_is_a_one_line_400_with_an_example(locations, world, params):
    async with running(make_datasette(locations)) as ds:
        res = await ds.client.get(identity.ROUTE, params=params)
        assert res.status_code == 400 and set(res.json()) == {"error"}
        assert "e.g. /-/pi-memory/api/identity?challenge=" in res.json()["error"] and "\n" not in res.json()["error"]
        assert "proof" not in res.text
