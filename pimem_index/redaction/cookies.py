"""Cookies: Cookie and Set-Cookie headers, ``curl -b``, and session cookies by their usual names."""

from __future__ import annotations

import re
from collections.abc import Iterator

from pimem_index.redaction.commands import CMD_END_RE
from pimem_index.redaction.rule import Rule, Span
from pimem_index.redaction.values import is_placeholder, looks_random

# ---------------------------------------------------------------------------
# Cookies
# ---------------------------------------------------------------------------

_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_")


def _glued(bl: bytes, pos: int) -> bool:
    """``bl[pos]`` continues a word (``\\n``-style escapes do not count)."""
    return pos > 0 and bl[pos - 1] in _WORD_BYTES and not (pos > 1 and bl[pos - 2] == 0x5C)


COOKIE_PAIR_RE = re.compile(rb"[ \t]*(?P<n>[^=;\s\"'\\]{1,256})=(?P<v>[^;\s\"'\\]{1,4096})[ \t]*;?")
_COOKIE_END_RE = re.compile(rb"[\r\n\"'\\]")
_COOKIE_ATTRS = frozenset(
    b"path domain expires max-age samesite secure httponly priority partitioned version comment".split()
)


def _cookie(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterator[Span]:
    start = m.start() - rule.back
    if m.start(g + "ws") >= 0 and not bl[max(0, start - 2) : start] == b"--":
        return  # "cookie value" in prose; only --cookie takes a space
    is_set = bl[max(0, start - 4) : start] == b"set-"
    if _glued(bl, start):
        return  # skip_encoding_cookie=True: an identifier, not a header
    pos = m.end(g[:-1])
    stop = _COOKIE_END_RE.search(b, pos, pos + 16384)
    end = stop.start() if stop is not None else min(len(b), pos + 16384)
    attrs = _COOKIE_ATTRS
    match = COOKIE_PAIR_RE.match
    while pos < end:
        p = match(b, pos, end)  # pairs follow each other: name=value; name=value
        if p is None:
            return
        if p.group("n").lower() not in attrs:
            s, e = p.span("v")
            if not (b[s] in b"$<{*xX" and is_placeholder(b[s:e])):
                yield s, e
        if is_set:
            return  # Set-Cookie: only the first pair is the cookie; the rest are attributes
        pos = p.end()


# ---------------------------------------------------------------------------
# Session cookies by name, and curl -b
# ---------------------------------------------------------------------------


def _session_value(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
    s, e = m.span(g + "s")
    return looks_random(b[s:e])


_CURL_COOKIE_RE = re.compile(rb"[ \t](?:-b|--cookie)(?:[ \t]+|=)(?:\\{0,3}[\"'])?")


def _curl_cookies(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterator[Span]:
    """``curl -b 'name=value; name2=value2'``: every cookie value (a cookie jar
    file name, without ``=``, is left alone)."""
    start = m.end()
    stop = CMD_END_RE.search(bl, start, start + 4000)
    end = stop.start() if stop is not None else min(len(b), start + 4000)
    for c in _CURL_COOKIE_RE.finditer(b, start, end):
        pos = c.end()
        while pos < end:
            p = COOKIE_PAIR_RE.match(b, pos, end)
            if p is None:
                break
            s, e = p.span("v")
            if not is_placeholder(b[s:e]):
                yield s, e
            pos = p.end()


_SESSION_VALUE = rb"(?P<s>[a-z0-9%._~+/=:-]{16,4096})(?![a-z0-9%._~+/=:-])"

# One scan literal per cookie name ending in "=" (cookie syntax): "session" alone is a common word, and
# the prefilter's needles are these literals.
_SESSION_COOKIE_RULES: list[Rule] = [
    Rule(
        "session_cookie",
        "session cookies by their usual names, wherever written (curl -b, document.cookie, logs): PHPSESSID, "
        "JSESSIONID, ASP.NET_SessionId, sessionid, laravel_session, _gitlab_session, *_session, _session_id, "
        "connect.sid, next-auth.session-token",
        b"sessid=",
        rb"(?<=phpsessid=)" + _SESSION_VALUE,
        fold=True,
        check=_session_value,
    ),
    Rule(
        "session_cookie",
        "",
        b"sessionid=",
        rb"(?:(?<=jsessionid=)|(?<![a-z0-9_.-]sessionid=)|(?<=asp\.net_sessionid=))" + _SESSION_VALUE,
        fold=True,
        check=_session_value,
    ),
    Rule("session_cookie", "", b"_session=", _SESSION_VALUE, fold=True, check=_session_value),
    Rule("session_cookie", "", b"_session_id=", _SESSION_VALUE, fold=True, check=_session_value),
    Rule(
        "session_cookie",
        "",
        b"session-token=",
        rb"(?<=next-auth\.session-token=)" + _SESSION_VALUE,
        fold=True,
        check=_session_value,
    ),
    Rule(
        "session_cookie",
        "",
        b"connect.sid=",
        rb"(?P<s>[a-z0-9%._~+/:-]{16,4096})",
        fold=True,
    ),
    Rule("cookie", "", b"curl", rb"(?![a-z0-9_])", fold=True, handler=_curl_cookies),
]


RULES: list[Rule] = [
    Rule(
        "cookie",
        "Cookie and Set-Cookie headers and --cookie values (session tokens)",
        b"k",
        rb"ie(?<=cookie)(?:\\{0,3}[\"'])?(?:[ \t]*[:=][ \t]*(?:\\{0,3}[\"'])?|(?<=-cookie)(?P<ws>[ \t]+)[\"']?)",
        fold=True,
        handler=_cookie,
        back=3,
    ),
] + _SESSION_COOKIE_RULES
