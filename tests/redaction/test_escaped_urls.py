"""Issue 27, class 6: a URL's user-info is masked when the URL is URL-encoded (once or twice, as a query
parameter or a redirect) or written with JSON's escapes applied twice; encoded and escaped URLs without a
password stay."""

from __future__ import annotations

import json
import random
from urllib.parse import quote

import pytest
from support.redaction_corpus import ALNUM

from pimem_index.redaction import MASK, redact

R = random.Random(2706)


def password() -> str:
    return R.choice("ABCDEFGH") + "".join(R.choice(ALNUM) for _ in range(14)) + R.choice("23456789")


def encoded(url: str) -> str:
    return quote(url, safe="")


ESCAPED = [
    ("url-encoded", lambda u: encoded(u)),
    ("url-encoded in a query", lambda u: "https://app.example.com/connect?dsn=" + encoded(u) + "&mode=rw"),
    ("url-encoded twice", lambda u: encoded(encoded(u))),
    ("url-encoded, upper and lower case", lambda u: encoded(u).lower().replace("%3a", "%3A", 1)),
    ("json escaped twice", lambda u: json.dumps(json.dumps(json.dumps({"url": u}))).replace("/", "\\\\/")),
    ("json slashes escaped twice", lambda u: u.replace("/", "\\\\/")),
]


@pytest.mark.parametrize("escape", [e for _, e in ESCAPED], ids=[n for n, _ in ESCAPED])
@pytest.mark.parametrize("scheme", ["https", "postgres", "redis", "amqp"])
def test_user_info_in_an_escaped_url_is_masked(escape, scheme):
    pw = password()
    out = redact(escape(f"{scheme}://app_user:{pw}@db.example.com:5432/prod"))
    assert pw not in out and MASK in out and "app_user" in out


UNCHANGED = [
    ("encoded url without user-info", encoded("https://github.com/user/repo.git?tab=readme")),
    ("encoded url with a user only", encoded("https://git@github.com/user/repo.git")),
    ("encoded email in a query", "https://x.example.com/login?email=" + encoded("ann@example.com") + "&next=%2F"),
    ("encoded url with a port", encoded("http://localhost:8001/-/pi-memory?q=a%40b")),
    ("json escaped twice without user-info", "https:\\\\/\\\\/github.com\\\\/user\\\\/repo.git"),
]


@pytest.mark.parametrize("text", [t for _, t in UNCHANGED], ids=[n for n, _ in UNCHANGED])
def test_escaped_urls_without_a_password_are_unchanged(text):
    assert redact(text) == text
