"""Issue 27, class 2: every rule of the prefixed-token family masks its token wherever it stands (in a
sentence, a JSON string, after a JSON escape, in markup, in a query string...), not only beside a key name;
its prefix followed by an ordinary word stays. Each rule's tokens are generated from its own pattern
(tests/support/regex_samples.py), so a rule added later is tested too."""

from __future__ import annotations

import json
import random

import pytest
from support.regex_samples import mixed_case, sample

from pimem_index.redaction import MASK, redact
from pimem_index.redaction.tokens import RULES

CONTEXTS = {
    "a sentence": "I used {t} for the call.",
    "the start of a text": "{t} is the one",
    "a JSON string": json.dumps({"text": "@"}).replace("@", "{t}"),
    "a JSON sentence": json.dumps({"text": "the value is @, ok"}).replace("@", "{t}"),
    "JSON escaped twice": '{\\"k\\": \\"{t}\\"}',
    "after a JSON line break": '"line\\n{t}"',
    "parentheses": "(see {t})",
    "backticks": "use `{t}` here",
    "an HTML cell": "<td>{t}</td>",
    "a markdown table": "| {t} |",
    "single quotes": "'{t}'",
    "after a colon": "x:{t}",
    "a query string": "https://x.example.com/?k={t}&a=1",
    "a tab-separated line": "a\t{t}\tb",
}


def tokens_of(rule, rng: random.Random, n: int = 3) -> list[str]:
    """Up to ``n`` strings the rule masks on their own (a check may refuse some random ones)."""
    found = []
    for _ in range(400):
        token = sample(rule.scan, rule.pattern, rng)
        token = mixed_case(token, rng) if rule.fold else token
        if redact(f" {token} ") != f" {token} ":
            found.append(token)
            if len(found) == n:
                break
    return found


@pytest.mark.parametrize("rule", RULES, ids=[f"{r.kind}:{r.scan.decode()}" for r in RULES])
def test_a_prefixed_token_is_masked_wherever_it_stands(rule):
    rng = random.Random(rule.scan + rule.pattern)
    tokens = tokens_of(rule, rng)
    assert tokens, "no sample of the rule's pattern is masked"
    leaks = [
        (where, text)
        for token in tokens
        for where, form in CONTEXTS.items()
        if MASK not in redact(text := form.replace("{t}", token))
    ]
    assert leaks == []


@pytest.mark.parametrize("rule", RULES, ids=[f"{r.kind}:{r.scan.decode()}" for r in RULES])
def test_a_prefix_followed_by_an_ordinary_word_stays(rule):
    rng = random.Random(rule.pattern)
    for token in tokens_of(rule, rng, 1):
        prefix = redact(f" {token} ").split(MASK)[0].strip()
        if prefix:
            text = f"see {prefix}notes and {prefix}cache"
            assert redact(text) == text
