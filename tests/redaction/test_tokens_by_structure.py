"""Issue 27, class 3: tokens known by their structure, without a context word nearby. A Discord bot token's
first part is the base64 of a numeric id (a snowflake); a JWT's first two parts are JSON objects in base64,
also when the JSON is written with whitespace. Dotted names, versions and base64 that decodes to anything
else stay."""

from __future__ import annotations

import base64
import json
import random

import pytest
from support.redaction_corpus import ALNUM, B64U

from pimem_index.redaction import MASK, redact

R = random.Random(2703)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def rand(n: int, alphabet: str = B64U) -> str:
    return "".join(R.choice(alphabet) for _ in range(n))


def discord_token(digits: int) -> tuple[str, str]:
    """(token, its secret part): the bot's id in base64, a timestamp, an HMAC."""
    bot_id = str(R.randint(10 ** (digits - 1), 10**digits - 1))
    secret = rand(6) + "." + rand(R.randint(27, 38))
    return b64url(bot_id.encode()) + "." + secret, secret


PLACES = [
    ("an env line", "BOT=@"),
    ("prose", "the bot logs in with @ and then"),
    ("a JSON string after a line break", json.dumps({"text": "config:\n@"})),
    ("quotes", "client.run('@')"),
    ("alone", "@"),
]


@pytest.mark.parametrize("digits", [17, 18, 19, 20])
@pytest.mark.parametrize("place", [p for _, p in PLACES], ids=[n for n, _ in PLACES])
def test_a_discord_bot_token_is_masked_by_its_structure_without_the_word(digits, place):
    token, secret = discord_token(digits)
    text = place.replace("@", token)
    assert "discord" not in text.lower()
    out = redact(text)
    assert secret not in out and MASK in out
    assert token.split(".")[0] in out  # the bot's id is public: it stays


def test_three_dotted_parts_whose_first_is_not_a_numeric_id_stay():
    not_ids = [
        b64url(b"hello world, abc") + "." + rand(6) + "." + rand(30),  # base64 of text, not of digits
        "MTIzNDU2" + "." + rand(6) + "." + rand(30),  # an id too short for a snowflake
        rand(24, ALNUM) + "." + rand(6) + "." + rand(30),  # random characters
    ]
    text = "\n".join(["v1.2.3 and app.config.settings and com.example.Service", *not_ids])
    assert redact(text) == text


def jwt(header: bytes, payload: bytes) -> str:
    return b64url(header) + "." + b64url(payload) + "." + rand(43)


SPACED = [
    ("a spaced header", b'{ "alg": "HS256", "typ": "JWT" }', b'{"sub": "1234567890"}'),
    ("a header on lines", b'{\n  "alg": "RS256"\n}', b'{"sub": "42"}'),
    ("a payload on lines", b'{"alg":"HS256"}', b'{\n  "sub": "1234567890",\n  "admin": true\n}'),
    ("a header with tabs", b'{\t"alg": "ES256"}', b'{\t"iss": "me"}'),
]


@pytest.mark.parametrize("header,payload", [(h, p) for _, h, p in SPACED], ids=[n for n, _, _ in SPACED])
def test_a_token_whose_parts_decode_to_json_objects_is_masked(header, payload):
    token = jwt(header, payload)
    out = redact(f"the session holds {token} until it expires")
    assert token.split(".")[1] not in out and token.split(".")[2] not in out


def test_dotted_base64_that_is_not_json_stays():
    not_json = [
        b64url(b"{ not json at all") + "." + b64url(b'{"a": 1}') + "." + rand(20),
        b64url(b"[1, 2, 3]") + "." + b64url(b"[4]") + "." + rand(20),
        "ewogICJ" + "." + "abc" + "." + "def",  # too short to be a token
    ]
    text = " ".join(not_json) + " new.view.few"
    assert redact(text) == text
