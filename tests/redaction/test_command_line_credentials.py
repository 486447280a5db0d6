"""Issue 27, class 4: credentials on a command line with an empty part (``curl -u KEY:``, as Stripe and others
document, ``-u :TOKEN``, ``--user KEY:``, HTTPie's ``-a KEY:``) mask the part that is there; a user name with
no password, flags that take no credentials, and references stay."""

from __future__ import annotations

import random

import pytest
from support.redaction_corpus import ALNUM

from pimem_index.redaction import MASK, redact

R = random.Random(2704)


def key() -> str:
    return (
        "".join(R.choice(ALNUM) for _ in range(8))
        + "".join(R.choice("0123456789") for _ in range(4))
        + "".join(R.choice(ALNUM) for _ in range(12))
    )


WITH_AN_EMPTY_PART = [
    ("curl -u KEY:", "curl https://api.example.com/v1/charges -u {k}:"),
    ("curl -u KEY: before the url", "curl -u {k}: https://api.example.com/v1/charges"),
    ("curl -u quoted", 'curl -u "{k}:" https://api.example.com'),
    ("curl -u :TOKEN", "curl -u :{k} https://api.example.com"),
    ("curl --user KEY:", "curl --user {k}: https://api.example.com"),
    ("curl --user=KEY:", "curl --user={k}: https://api.example.com"),
    ("curl in a JSON command", '{{"command": "curl -s -u {k}: https://api.example.com/v1/balance"}}'),
    ("httpie -a KEY:", "http -a {k}: https://api.example.com/v1/charges"),
    ("httpie --auth user:pass", "https --auth admin:{k} api.example.com"),
    ("httpie -a user:pass", "http -a admin:{k} api.example.com/items"),
    ("xh -a KEY:", "xh -a {k}: api.example.com"),
]


@pytest.mark.parametrize("form", [f for _, f in WITH_AN_EMPTY_PART], ids=[n for n, _ in WITH_AN_EMPTY_PART])
def test_a_credential_with_an_empty_part_on_a_command_line_is_masked(form):
    k = key()
    out = redact(form.format(k=k))
    assert k not in out and MASK in out


LEFT_ALONE = [
    ("a user without a password", "curl -u admin: https://localhost:8080/health"),
    ("a user prompted for", "curl -u deploy https://example.com\nhttp -a alice example.org"),
    ("references", "curl -u $STRIPE_KEY: https://api.stripe.com\nhttp -a :$TOKEN api.example.com"),
    ("an empty pair", "curl -u : --negotiate https://intranet.example.com"),
    ("other flags", "http -v -a example.org\nls -a /tmp\nxh --verbose api.example.com"),
    ("a url with a port", "curl -sS http://127.0.0.1:8001/-/pi-memory/api/status"),
]


@pytest.mark.parametrize("text", [t for _, t in LEFT_ALONE], ids=[n for n, _ in LEFT_ALONE])
def test_command_lines_without_a_credential_are_unchanged(text):
    assert redact(text) == text
