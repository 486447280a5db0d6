"""The text digest entries fold by: each run of ASCII whitespace as one space, nothing else folded."""

from __future__ import annotations

import hashlib

from pimem_index.index.parsing import normal_spaces, text_digest

# Runs of every whitespace byte bytes.split() knows, at either end and between words, beside
# characters that are not ASCII whitespace (a non-breaking space, an em space, UTF-8 beyond ASCII).
TEXTS = [
    "",
    " ",
    "\n\n\t ",
    "one",
    "  one  ",
    "one two",
    "one  two",
    "one\ttwo\n\nthree\r\n  four\x0b\x0cfive",
    "def f():\n    return 1\n\n\n        # deep\n",
    "a\u00a0b\u2003c  é\n\n中文 \t 🙂",
    "x" + " " * 1000 + "y",
    "lone \udcff surrogate",
]


def _split_and_joined(text: str) -> bytes:
    return b" ".join(text.encode("utf-8", "surrogatepass").split())


def test_the_text_digest_is_the_words_joined_by_one_space():
    for text in TEXTS:
        assert normal_spaces(text) == _split_and_joined(text), repr(text)
        expected = int.from_bytes(hashlib.blake2b(_split_and_joined(text), digest_size=8).digest(), "big", signed=True)
        assert text_digest(text) == expected, repr(text)


def test_whitespace_runs_share_a_digest_and_other_words_do_not():
    assert text_digest("npm run check   | grep error") == text_digest("npm run check | grep error\n")
    assert text_digest("one\ttwo") == text_digest(" one\n\n two ")
    assert text_digest("one two") != text_digest("onetwo")
    assert text_digest("one\u00a0two") != text_digest("one two")  # only ASCII whitespace folds
    assert text_digest("One two") != text_digest("one two")
