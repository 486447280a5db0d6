"""Tokens known by their structure rather than a prefix: PEM and PuTTY private keys (a block up to its
end), JSON Web Tokens, Telegram and Discord bot tokens; and the context words (``discord``, ``telegram``)
whose mention anywhere in an entry makes a token of a shape too common alone a secret."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterable, Iterator

from pimem_index.redaction.rule import B64U, Rule, Span, not_after_word, orig_at, whole_match

# ---------------------------------------------------------------------------
# Private keys (PEM, escaped PEM, truncated PEM)
# ---------------------------------------------------------------------------

_PEM_BODY_STOP_RE = re.compile(rb"[^A-Za-z0-9+/=\s\\:,.()_-]|-----(?:END|BEGIN)")
PEM_MAX = 48 * 1024


def _pem(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterator[Span]:
    start = m.end()
    limit = min(len(b), start + PEM_MAX)
    # the body ends at -----END, or where it is cut off: a character no PEM
    # body holds (end of a JSON string, truncated output) or another BEGIN
    stop = _PEM_BODY_STOP_RE.search(b, start, limit)
    end = stop.start() if stop is not None else limit
    e = end
    while e > start and b[e - 1] in b" \t\r\n":
        e -= 1
    if e - start >= 2 and b[e - 2 : e] in (b"\\n", b"\\r"):
        e -= 2  # keep the escaped newline before -----END visible
    s = start
    if b[s : s + 2] in (b"\\n", b"\\r"):
        s += 2
    if e > s:
        yield s, e


# ---------------------------------------------------------------------------
# Context: a word anywhere in the entry (discord, telegram)
# ---------------------------------------------------------------------------


def _mentions(word: bytes, bl: bytes, ctx: dict) -> bool:
    """Whether the entry mentions ``word`` (any case) anywhere: in the Context given for a part
    of it (``ctx["context"]``), else in this text, which is then the entry's whole text."""
    context = ctx.get("context")
    if context is not None:
        return word in context.words
    key = "mentions " + word.decode()
    if key not in ctx:
        ctx[key] = word in bl
    return ctx[key]


def _telegram(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterable[Span]:
    """A bot token (digits:AA...) in an entry that mentions telegram, or anywhere in its exact shape."""
    if _mentions(b"telegram", bl, ctx) or _telegram_shape(m, b):
        return whole_match(rule, m, g, b, bl, ctx)
    return ()


_TELEGRAM_BOT_ID_RE = re.compile(rb"(?:(?<![A-Za-z0-9_])|(?<=bot)|(?<=\\[nrt]))[0-9]{8,10}\Z")


def _telegram_shape(m: re.Match, b: bytes) -> bool:
    """Telegram's exact token shape, distinctive without the word: a bot id of 8 to 10 digits
    (alone or after the API's `bot`), a colon, then 35 characters that start with AA (the match)."""
    colon = m.start() - 1
    return (
        m.end() - m.start() == 35
        and b[colon : m.start()] == b":"
        and _TELEGRAM_BOT_ID_RE.search(b, max(0, colon - 11), colon) is not None
    )


_PUTTY_STOP_RE = re.compile(rb"private-mac|[^a-z0-9+/=\s\\]")


def _putty(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterator[Span]:
    """The base64 lines after ``Private-Lines: N`` up to ``Private-MAC``."""
    start = m.end()
    stop = _PUTTY_STOP_RE.search(bl, start, start + PEM_MAX)
    end = stop.start() if stop is not None else min(len(b), start + PEM_MAX)
    while start < end and b[start] in b" \t\r\n\\":
        start += 2 if b[start] == 0x5C else 1  # the line break, maybe escaped
    while end > start and b[end - 1] in b" \t\r\n":
        end -= 1
    if end - start >= 2 and b[end - 2 : end] in (b"\\n", b"\\r"):
        end -= 2
    if end > start:
        yield start, end


# ---------------------------------------------------------------------------
# Discord: a bot token is only recognisable in text that mentions discord
# ---------------------------------------------------------------------------

_DISCORD_TOKEN_RE = re.compile(
    rb"[MNO](?:(?<![A-Za-z0-9_-][MNO])|(?<=\\[nrtbf][MNO])|(?<=%[0-9A-F]{2}[MNO]))[A-Za-z0-9_-]{23,27}\.(?P<s>[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})(?![A-Za-z0-9_-])"
)


def _discord(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterable[Span]:
    return _discord_tokens(b, ctx)


def _discord_tokens(b: bytes, ctx: dict) -> list[Span]:
    """Every Discord bot token in the text, searched once per text (at the first mention)."""
    if "discord" in ctx:
        return []
    ctx["discord"] = True
    return [t.span("s") for t in _DISCORD_TOKEN_RE.finditer(b)]


# ---------------------------------------------------------------------------
# Structure instead of context: a Discord bot token's first part is a numeric id in base64; a JWT's
# parts are JSON objects in base64
# ---------------------------------------------------------------------------

# base64 of ASCII digits: each 3 digits are 4 characters from these classes (1 or 2 digits left: 2 or 3),
# so a snowflake id of 17 to 20 digits is 23 to 27 characters no other text has by chance
_GROUP = rb"(?:[MNO][DTjz][AEIMQUYcgk][w-z0-5])"
_LAST = rb"(?:[MNO][AQgw]|[MNO][DTjz][AEIMQUYcgk])"  # 1 or 2 digits left over
# after the scanned first character: the rest of the first group, then 17 to 20 digits in all
_SNOWFLAKE_REST = (
    rb"[DTjz][AEIMQUYcgk][w-z0-5](?:" + _GROUP + rb"{5}" + _LAST + rb"?|" + _GROUP + rb"{4}[MNO][DTjz][AEIMQUYcgk])"
)


def _b64_json_object(part: bytes) -> bool:
    """``part`` (base64url, maybe unpadded) decodes to a JSON object."""
    try:
        text = base64.urlsafe_b64decode(part + b"=" * (-len(part) % 4))
        return isinstance(json.loads(text), dict)
    except ValueError:  # binascii.Error, UnicodeDecodeError and JSONDecodeError are ValueErrors
        return False


def _json_parts(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
    """The first two parts of a dotted token decode to JSON objects (a JWT with a spaced header)."""
    s, e = m.span(g + "s")
    first, second = (b[m.start() : s] + b[s:e]).split(b".")[:2]
    return _b64_json_object(first) and _b64_json_object(second)


_STRUCTURE_RULES: list[Rule] = [
    *(
        Rule(
            "discord_bot_token",
            "",
            first,
            rb"(?=[DTjz])"  # most capitals are not followed so: fail before the lookbehind
            + not_after_word(first, rb"A-Za-z0-9_-")
            + _SNOWFLAKE_REST
            + rb"\.(?P<s>[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})(?![A-Za-z0-9_-])",
        )
        for first in (b"M", b"N", b"O")  # base64 of an ASCII digit starts so
    ),
    *(
        Rule(
            "jwt",
            "",
            scan,
            not_after_word(scan, rb"A-Za-z0-9_-")
            + rb"(?P<s>[A-Za-z0-9_-]{4,8192}\.e[yw][A-Za-z0-9_-]{8,16384}\.[A-Za-z0-9_-]{0,8192})(?![A-Za-z0-9_-])",
            check=_json_parts,
        )
        for scan in (b"eyA", b"ew")  # base64 of '{ ' and of '{' and a line break or tab
    ),
]


#: Words whose mention anywhere in an entry makes a token of a shape too common alone a secret.
CONTEXT_WORDS = (b"discord", b"telegram")
# Those whose tokens a rule finds by searching the whole text once it meets the word: a part of
# an entry without the word gets that search from the entry's Context (_spans).
CONTEXT_SEARCHES: dict[bytes, Callable[[bytes, dict], list[Span]]] = {b"discord": _discord_tokens}


RULES: list[Rule] = [
    Rule(
        "private_key",
        "",
        b"p",
        rb"rivate-lines:[ \t]*[0-9]{1,4}",
        fold=True,
        handler=_putty,
    ),
    Rule(
        "discord_bot_token",
        "Discord bot tokens: anywhere when the first part is the base64 of a numeric id (a snowflake), "
        "looser shapes in text that mentions discord",
        b"c",
        rb"ord(?<=discord)",
        fold=True,
        handler=_discord,
    ),
    Rule(
        "private_key",
        "PEM private-key blocks (RSA, EC, DSA, OPENSSH, PKCS#8 PRIVATE KEY, ENCRYPTED, PGP PRIVATE KEY BLOCK) "
        "and PuTTY Private-Lines, "
        "also written with escaped \\n inside JSON strings (GCP service-account private_key) "
        "or cut off before their END line",
        b"b",
        rb"egin(?<=-----begin)[a-z0-9 ]{0,40}private key(?: block)?-----",
        fold=True,
        handler=_pem,
    ),
    Rule(
        "jwt",
        "JSON Web Tokens eyJ... (and JWE), and three-part tokens whose first two parts decode to JSON objects "
        'written with whitespace ({ "alg"..., {\\n...)',
        b"y",
        rb"j(?<=eyj)(?P<s>" + B64U + rb"{8,8192}\.e[yw]" + B64U + rb"{8,16384}(?:\." + B64U + rb"{0,8192}){1,3}=*)",
        fold=True,
        check=orig_at(-1, b"eyJ"),
    ),
    Rule(
        "telegram_bot_token",
        "Telegram bot tokens (digits:AA...): their exact shape anywhere, looser ones in text that mentions telegram",
        b"A",
        rb"A(?:(?<=[0-9]:AA)|(?<=[0-9]%3AAA)|(?<=[0-9]%253AAA))[A-Za-z0-9_-]{31,40}(?![A-Za-z0-9_-])",
        handler=_telegram,
    ),
] + _STRUCTURE_RULES
