"""Issue 27, class 5: a ``#``, ``;``, ``)`` or ``&`` inside a value, with no whitespace before it, is part of
the value, so the rest of the secret is masked too; a comment after whitespace, a statement's end, a query
string's next parameter and a connection string's next key stay visible."""

from __future__ import annotations

import random

import pytest
from support.redaction_corpus import ALNUM

from pimem_index.redaction import MASK, redact

R = random.Random(2705)


def tail() -> str:
    return R.choice("ABCDEFGH") + "".join(R.choice(ALNUM) for _ in range(14)) + R.choice("23456789")


INSIDE = [
    ("env, #", "DB_PASSWORD=pa{c}{t}"),
    ("env, ;", "DB_PASSWORD=pa;{t}"),
    ("env, &", "DB_PASSWORD=pa&{t}"),
    ("env, )", "DB_PASSWORD=pa){t}"),
    ("yaml, )", "token: pa){t}"),
    ("yaml, ;", "api_key: pa;{t}"),
    ("flag", "--password=pa;{t}"),
    ("inline env before a command", "PGPASSWORD=pa;{t} psql -h db"),
    ("url user-info, #", "postgres://app:pa#{t}@db.internal/prod"),
    ("mysql -p", "mysql -u root -ppa;{t} app"),
    ("redis-cli -a", "redis-cli -a pa;{t} ping"),
    ("curl -u", "curl -u admin:pa;{t} https://example.com"),
]


@pytest.mark.parametrize("form", [f for _, f in INSIDE], ids=[n for n, _ in INSIDE])
def test_a_special_character_inside_a_value_does_not_end_it(form):
    t = tail()
    out = redact(form.replace("{c}", "#").format(t=t))
    assert t not in out and MASK in out


AFTER = [
    ("a comment after whitespace", "DB_PASSWORD=Pa55w0rdX # the staging one", "# the staging one"),
    ("a query string", "https://x.example.com/cb?password=Pa55w0rdX&next=%2Fhome", "&next=%2Fhome"),
    ("a connection string", "Server=db;Database=app;Password=Pa55w0rdX;Encrypt=true", ";Encrypt=true"),
    ("a shell list", "export DB_PASSWORD=Pa55w0rdX; ./run.sh", "; ./run.sh"),
    ("a call", "connect(password=Pa55w0rdX).cursor()", ").cursor()"),
    ("a statement end", "$password = Pa55w0rdX;\n$user = 'app';", ";\n$user = 'app';"),
]


@pytest.mark.parametrize("text,kept", [(t, k) for _, t, k in AFTER], ids=[n for n, _, _ in AFTER])
def test_what_follows_a_value_after_whitespace_or_as_the_next_item_stays(text, kept):
    out = redact(text)
    assert "Pa55w0rdX" not in out and out.endswith(kept)
