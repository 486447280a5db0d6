"""Behaviour of pimem_index.redact: one behaviour per test, each positive
beside a must-not over the same kind of text.  Token-shaped values are built
at run time (see tests/redaction_corpus.py) so none is committed."""

from __future__ import annotations

import random

import pytest

from pimem_index.redact import KINDS, MASK, redact

R = random.Random(20240601)
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(R.choice(alphabet) for _ in range(n))


GH = "gh" + "p_"


def test_password_assignment_is_masked_but_key_name_stays():
    assert redact("password=hunter2") == "password=" + MASK


def test_prose_about_passwords_is_untouched():
    text = "the password is stored in vault"
    assert redact(text) == text


def test_github_token_keeps_prefix():
    token = GH + rand(36)
    assert redact(f"token {token} end") == f"token {GH}{MASK} end"


def test_github_token_right_after_escaped_newline_in_json():
    token = GH + rand(36)
    out = redact('{"text": "see\\n\\n' + token + '"}')
    assert token not in out and GH + MASK in out


def test_empty_password_does_not_swallow_next_line():
    text = "PASSWORD=\nNEXT=visible"
    assert redact(text) == text
