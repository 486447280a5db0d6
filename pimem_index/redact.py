"""Mask secrets in text before it is indexed or shown.

``redact(text)`` returns ``text`` with every secret it recognises replaced by
``[REDACTED]``.  The key name or token prefix stays visible so a reader knows
what was there::

    password=[REDACTED]
    Authorization: Bearer [REDACTED]
    ghp_[REDACTED]
    postgres://user:[REDACTED]@host/db
    -----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END RSA PRIVATE KEY-----

How it works, and why it is fast enough to run on every indexed entry:

* The text is encoded to UTF-8 once and ASCII-case-folded with
  ``bytes.lower()`` (both run at GB/s; ``str.lower()`` on non-ASCII text is
  ten times slower).  Every rule works on bytes; masked spans never split a
  multi-byte character because no rule ends a span inside a run of non-ASCII
  bytes.
* Each rule (see ``RULES``) names literal *anchors*.  A rule runs only when
  one of its anchors occurs in the text (a C-speed ``in`` test, cached per
  call), so a text with no anchor costs a handful of substring searches.
* Every pattern starts with a literal (or a lookbehind placed after a
  literal), so ``re`` scans with its fast literal-prefix search instead of
  trying the pattern at every position.  No pattern starts with an unanchored
  ``[...]*``; repetitions are bounded, so the time per megabyte stays flat on
  adversarial input.
* Text over ``SLICE_CHARS`` is redacted in slices cut at line boundaries.
  Each slice is scanned with ``SLICE_OVERLAP`` bytes of the next one, so a
  secret (a PEM block, say) that starts in one slice and ends in the next is
  still masked as a whole.

To add a kind: write a ``Rule`` (kind, description, anchors, pattern whose
group ``s`` - or groups ``s1``, ``s2``... - cover what to mask) and append it
to ``RULES``; ``KINDS`` and the README list follow from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

__all__ = ["redact", "KINDS", "RULES", "Rule", "MASK", "SLICE_CHARS"]

MASK = "[REDACTED]"
_MASK_B = MASK.encode()

#: Text longer than this (characters) is redacted in slices cut at line ends.
SLICE_CHARS = 1 << 20
#: Bytes of the following slice scanned together with each slice.
SLICE_OVERLAP = 64 * 1024

Span = tuple[int, int]
Finder = Callable[[bytes, bytes], Iterable[Span]]


@dataclass(frozen=True)
class Rule:
    """One kind of secret.

    ``anchors`` are literal byte strings; the rule runs only when one of them
    occurs in the text (in the ASCII-lower-cased text when ``fold`` is true,
    so anchors must then be lower case).  Either ``pattern`` (matched against
    the original bytes, or the lower-cased bytes when ``on_folded`` is true;
    positions are the same) with named groups ``s``/``s1``/``s2``... marking
    what to mask, or ``finder(b, bl)`` yielding ``(start, end)`` spans.
    ``check(m, b)`` may veto a pattern match.
    """

    kind: str
    description: str
    anchors: tuple[bytes, ...]
    fold: bool = False
    pattern: re.Pattern[bytes] | None = None
    on_folded: bool = False
    finder: Finder | None = None
    check: Callable[[re.Match[bytes], bytes], bool] | None = None
    groups: tuple[str, ...] = field(default=("s",))

    def spans(self, b: bytes, bl: bytes) -> Iterator[Span]:
        if self.finder is not None:
            yield from self.finder(b, bl)
            return
        assert self.pattern is not None
        hay = bl if self.on_folded else b
        check = self.check
        groups = self.groups
        for m in self.pattern.finditer(hay):
            if check is not None and not check(m, b):
                continue
            for g in groups:
                s, e = m.span(g)
                if e > s:
                    yield s, e


# ---------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------

# Left boundary for a token: not glued to a preceding word character, except
# that a JSON escape (``\n``, ``\t``...) or a %-escape right before it counts
# as a boundary (``\b`` fails after ``\n`` because ``n`` is a word character).
_LB = rb"(?:(?<![A-Za-z0-9_])|(?<=\\[nrtbf])|(?<=%[0-9A-Fa-f]{2}))"
_LB_DASH = rb"(?:(?<![A-Za-z0-9_-])|(?<=\\[nrtbf])|(?<=%[0-9A-Fa-f]{2}))"
# Right boundary for fixed-length tokens.
_RB = rb"(?![A-Za-z0-9_])"


def _c(pattern: bytes, flags: int = 0) -> re.Pattern[bytes]:
    return re.compile(pattern, flags)


# Values that are obviously not secrets: placeholders, references, types.
_PLACEHOLDER_WORDS = frozenset(
    b"""none null nil undefined true false yes no on off
    changeme change_me change-me changeit password passwd pass secret token
    apikey api_key api-key key example sample placeholder dummy fake redacted
    hidden masked removed omitted str string bytes int integer number bool
    boolean any unknown object optional required secretstr todo tbd n/a na
    include omit same-origin env prompt ask stdin - | > |- >- ... \xe2\x80\xa6
    empty default""".split()
)
_PLACEHOLDER_RE = re.compile(
    rb"""(?x)
    \$ .*                              # $VAR ${VAR} $(cmd) ${{ secrets.X }}
  | %[a-z_][a-z0-9_]*%                 # %VAR%
  | %\([a-z_][a-z0-9_]*\)[sd]          # %(name)s
  | <[^<>\n]*>                         # <your-token>
  | \{\{.*\}\}                         # {{ template }}
  | \{[a-z_][a-z0-9_.\[\]'"]*\}        # {token}  (f-strings)
  | \[redacted\]                       # already masked
  | [x*.\xe2\x80\xa2#_ -]*[x*\xe2\x80\xa2][x*.\xe2\x80\xa2#_ -]*   # xxxx ****
  | (?:your|insert|enter|paste)[_ .-].*   # YOUR_API_KEY, enter-token
  | .*[_ -]here                        # token_here
  | (?:example|sample|dummy|fake|placeholder|test)[_-].*
    """,
)


def _is_placeholder(value: bytes) -> bool:
    v = value.lower().strip()
    if v in _PLACEHOLDER_WORDS:
        return True
    return _PLACEHOLDER_RE.fullmatch(v) is not None


# ---------------------------------------------------------------------------
# Key names beside = or :  (password=..., "api_key": "...", --token x, XML)
# ---------------------------------------------------------------------------

_KEY_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_.-")
_SEP = (
    rb"(?P<kq>\\{0,3}[\"'])?"  # closing quote of the key, maybe escaped
    rb"(?:[ \t]*(?P<sep>=>|:=|=(?!=)|:(?![:/\\])|>)[ \t]*|(?P<ws>[ \t]+))"
)
_KEY_END = rb"(?![a-z0-9_]|-[a-z0-9])"

# keyword -> family.  Families decide how strict the value check is.
_KEYWORD_PATTERNS: list[tuple[bytes, bytes, str]] = [
    (b"pass", rb"pass(?:word|wd|phrase)?s?[0-9]*", "password"),
    (b"pwd", rb"pwd[0-9]*", "password"),
    (b"secret", rb"secret[0-9]*", "secret"),
    (b"token", rb"token[0-9]*", "token"),
    (b"auth", rb"auth(?:orization)?", "auth"),
    (b"cred", rb"cred(?:ential)?s?", "cred"),
    (b"key", rb"key[0-9]*", "key"),
]
_KEYWORD_RES = [
    (anchor, _c(rb"(?P<kw>" + kw + rb")" + _KEY_END + _SEP), family)
    for anchor, kw, family in _KEYWORD_PATTERNS
]

# Prefixes that make a name ending in "key" a secret name whatever its value.
_STRONG_KEY_PREFIXES = (
    b"api", b"access", b"secret", b"private", b"account", b"sharedaccess",
    b"client", b"master", b"encryption", b"signing", b"license", b"licence",
    b"subscription", b"app", b"auth", b"consumer", b"webhook", b"deploy",
    b"service", b"admin", b"stripe", b"openai", b"anthropic", b"session",
    b"cookie", b"hmac", b"jwt", b"crypt", b"sign", b"x-api", b"x_api",
    b"token", b"mailgun", b"sendgrid", b"twilio", b"aws", b"gcp", b"azure",
    b"storage", b"search", b"ingestion", b"write", b"read", b"rest", b"live",
)
_METADATA_SUFFIX_RE = re.compile(rb"[_.-]?(?:id|ids|name|names|field|type|count|len|length|file|path|dir|url|env|prefix|hash|policy|ref|arn|version)$")

_EXPR_RE = re.compile(
    rb"""(?x)
    [A-Za-z_][A-Za-z0-9_]*(?:(?:\.|->|::)[A-Za-z_][A-Za-z0-9_]*)+[;,]?  # a.b.c
  | .*[(\[].*                          # calls, indexing, tuples
    """
)
_TOKENISH_RE = re.compile(rb"[A-Za-z0-9+/=_.~-]{16,}")
_DIGITS_RE = re.compile(rb"[0-9]+")
_TYPE_WORDS_RE = re.compile(rb"(?:str|string|bytes|int|bool|secretstr|optional|any)\b.*")

_VISIBLE_PREFIX_RE = re.compile(
    rb"(?:gh[pousr]_|github_pat_|sk-ant-(?:[a-z]{2,8}[0-9]{2}-)?|sk-(?:proj-|svcacct-|admin-)?|xox[a-z]-|xapp-|"
    rb"A3T[A-Z0-9]|AKIA|ASIA|AIza|ya29\.|npm_|pypi-|hf_|gl(?:pat|dt|rt|ptt)-|dckr_pat_|do[opr]_v1_|"
    rb"[sr]k_(?:live|test)_|SG\.|key-|eyJ|Bearer |Basic |bearer |basic )"
)
_LINE_START_RE = re.compile(rb"[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]+|setenv[ \t]+)?[\"']?$")


def _key_start(bl: bytes, pos: int) -> int:
    """Start of the identifier that ends at ``pos`` (walks back <= 64 bytes)."""
    start = pos
    limit = max(0, pos - 64)
    while start > limit and bl[start - 1] in _KEY_CHARS:
        start -= 1
    # ``\nPASSWORD=...`` inside a JSON string: drop the escape letter.
    if start > 0 and bl[start - 1] == 0x5C and start < pos and bl[start] in b"nrtbf":
        start += 1
    return start


def _quoted_value(b: bytes, pos: int) -> Span | None:
    """If a quoted value starts at ``pos``, the span of its contents."""
    n = len(b)
    i = pos
    while i < n and i - pos < 4 and b[i] == 0x5C:  # escaped quotes: \" \\\"
        i += 1
    if i >= n or b[i] not in b"\"'`":
        return None
    quote = b[pos : i + 1]
    start = i + 1
    end = b.find(quote, start, min(n, start + 4096))
    if quote in (b'"', b"'") and end > 0:
        # skip quotes escaped with a backslash inside a plain quoted string
        while end > 0 and b[end - 1] == 0x5C:
            end = b.find(quote, end + 1, min(n, start + 4096))
    nl = b.find(b"\n", start, end if end >= 0 else min(n, start + 4096))
    if end < 0 or nl >= 0:
        return None
    return start, end


_UNQUOTED_STOP = frozenset(b" \t\r\n\"'`,;&<>)]}\\|")


def _unquoted_end(b: bytes, pos: int, to_eol: bool) -> int:
    n = len(b)
    limit = min(n, pos + 4096)
    i = pos
    if to_eol:
        while i < limit and b[i] not in b"\r\n\\":
            if b[i] == 0x23 and i > pos and b[i - 1] in b" \t":  # " # comment"
                break
            i += 1
        while i > pos and b[i - 1] in b" \t":
            i -= 1
        return i
    while i < limit and b[i] not in _UNQUOTED_STOP:
        i += 1
    return i


def _value_span(b: bytes, pos: int, to_eol: bool) -> tuple[Span, bool] | None:
    q = _quoted_value(b, pos)
    if q is not None:
        return q, True
    if pos >= len(b) or b[pos] in b"{[(\r\n":
        return None
    end = _unquoted_end(b, pos, to_eol)
    if end <= pos:
        return None
    return (pos, end), False


def _key_spans(b: bytes, bl: bytes, present: Callable[[bytes], bool]) -> Iterator[Span]:
    for anchor, rx, family in _KEYWORD_RES:
        if not present(anchor):
            continue
        for m in rx.finditer(bl):
            span = _key_match(b, bl, m, family)
            if span is not None:
                yield span


def _key_match(b: bytes, bl: bytes, m: re.Match[bytes], family: str) -> Span | None:
    kw_start = m.start("kw")
    kw = m.group("kw")
    kstart = _key_start(bl, kw_start)
    name = bl[kstart : m.end("kw")]
    prefix = bl[kstart:kw_start]
    sep = m.group("sep")
    if kw == b"authorization":
        return None  # the Authorization header rule handles it
    if m.group("ws") is not None:
        # ``--password value``: only command-line flags take a space.
        if not prefix.startswith(b"-") and not (kstart > 0 and b[kstart - 1] == 0x2D):
            return None
    if sep == b">":
        # XML element <password>value</password>
        if kstart == 0 or bl[kstart - 1] != 0x3C:
            return None
        end = bl.find(b"<", m.end(), m.end() + 4096)
        if end <= m.end():
            return None
        value = b[m.end() : end]
        if _is_placeholder(value):
            return None
        return m.end(), end
    if family == "password" and kw.startswith(b"pass") and len(kw) <= 5:
        # bare "pass": reject "bypass=", "compass:"; allow db_pass, dbPass, PASS
        if prefix and prefix[-1:] not in b"_.-" and not (
            b[kw_start : kw_start + 1].isupper() and b[kw_start - 1 : kw_start].islower()
        ):
            return None
    if family == "key":
        stripped = prefix.rstrip(b"_.-")
        strong = stripped.endswith(_STRONG_KEY_PREFIXES)
        if prefix and not stripped:
            strong = False
    else:
        strong = True
    line_start = bl.rfind(b"\n", 0, kstart) + 1
    head = bl[line_start:kstart]
    if head.endswith((b"\\n", b"\\r", b"\\t")):
        head = b""
    # INI / YAML / properties lines take the rest of the line as the value
    # (``password = two words``); shell and .env assignments (``NAME=value
    # cmd``) end at whitespace.
    at_line_start = (
        m.group("kq") is None
        and (sep == b":" or (sep == b"=" and m.group(0)[-1:] in b" \t"))
        and _LINE_START_RE.fullmatch(head) is not None
    )
    vs = _value_span(b, m.end(), to_eol=at_line_start)
    if vs is None:
        return None
    (vstart, vend), quoted = vs
    value = b[vstart:vend]
    if not value or _is_placeholder(value):
        return None
    if value.lstrip().startswith(b"-----BEGIN"):
        return None  # the private-key rule masks it and keeps its label
    if not quoted:
        if _EXPR_RE.fullmatch(value):
            return None
        vl = value.lower()
        if kw in vl and (vl.replace(b"-", b"_").endswith(kw.replace(b"-", b"_")) or vl == name):
            return None  # password=password, token=auth_token: a variable
        if _TYPE_WORDS_RE.fullmatch(vl) and sep == b":":
            return None
    if family == "password" and kw == b"pwd" and prefix in (b"", b"old") and value[:1] in b"/~":
        return None  # PWD=/home/user
    p = _VISIBLE_PREFIX_RE.match(value)
    if p is not None and p.end() < len(value):
        vstart += p.end()  # GITHUB_TOKEN=ghp_[REDACTED]: keep the token's prefix
    if family in ("token", "auth", "key", "cred") and _DIGITS_RE.fullmatch(value) and len(value) < 12:
        return None  # usage counts, ids
    if not strong:
        # "sort_key": "name" is not a secret; a long random value is.
        if not _TOKENISH_RE.fullmatch(value):
            return None
        if not (any(c in b"0123456789" for c in value) and any(0x41 <= c <= 0x7A for c in value)):
            return None
    return vstart, vend


# ---------------------------------------------------------------------------
# Authorization headers, bearer tokens, cookies
# ---------------------------------------------------------------------------

_AUTH_HEADER_RE = _c(
    rb"authorization(?:\\{0,3}[\"'])?[ \t]*[:=][ \t]*(?:\\{0,3}[\"'])?[ \t]*"
    rb"(?:(?:bearer|basic|token|bot|digest|negotiate|ntlm|apikey|api-key|sso-key|key|jwt|aws4-hmac-sha256)[ \t]+)?"
    rb"(?P<s>[^\s\"'\\,;<>{}]{1,4096}(?:[ \t]*,[ \t]*[a-z]+=[^\s\"'\\,;<>]{1,512}){0,8})"
)
_BEARER_RE = _c(rb"bearer[ \t]+(?P<s>[A-Za-z0-9._~+/=-]{16,4096})")


def _auth_header_check(m: re.Match[bytes], b: bytes) -> bool:
    return not _is_placeholder(b[m.start("s") : m.end("s")])


_COOKIE_RE = _c(
    rb"(?P<set>set-)?cookie(?:\\{0,3}[\"'])?[ \t]*:[ \t]*(?:\\{0,3}[\"'])?(?P<v>[^\r\n\"'\\]{1,8192})"
)
_COOKIE_PAIR_RE = _c(rb"(?:^|;)[ \t]*(?P<n>[^=;\s]{1,256})=(?P<s>[^;\s]{1,4096})")
_COOKIE_ATTRS = frozenset(
    b"path domain expires max-age samesite secure httponly priority partitioned version comment".split()
)


def _cookie_spans(b: bytes, bl: bytes) -> Iterator[Span]:
    for m in _COOKIE_RE.finditer(bl):
        vstart = m.start("v")
        value = b[vstart : m.end("v")]
        for i, p in enumerate(_COOKIE_PAIR_RE.finditer(value)):
            if m.group("set") and i > 0:
                break
            if p.group("n").lower() in _COOKIE_ATTRS:
                continue
            if _is_placeholder(p.group("s")):
                continue
            yield vstart + p.start("s"), vstart + p.end("s")


# ---------------------------------------------------------------------------
# Private keys (PEM, escaped PEM, truncated PEM, PuTTY)
# ---------------------------------------------------------------------------

_PEM_BEGIN_RE = _c(rb"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY_STOP_RE = _c(rb"[^A-Za-z0-9+/=\s\\:,.()_-]")
_PEM_MAX = 64 * 1024


def _pem_spans(b: bytes, bl: bytes) -> Iterator[Span]:
    pos = 0
    n = len(b)
    while True:
        m = _PEM_BEGIN_RE.search(b, pos)
        if m is None:
            return
        start = m.end()
        limit = min(n, start + _PEM_MAX)
        end = b.find(b"-----END", start, limit)
        stop = _PEM_BODY_STOP_RE.search(b, start, end if end >= 0 else limit)
        if stop is not None:
            end = stop.start()
        elif end < 0:
            end = limit
        # keep a trailing JSON escape (\n) and whitespace visible
        e = end
        while e > start and b[e - 1] in b" \t\r\n":
            e -= 1
        if e - start >= 2 and b[e - 2 : e] in (b"\\n", b"\\r"):
            e -= 2
        s = start
        if b[s : s + 2] in (b"\\n", b"\\r"):
            s += 2
        if e > s:
            yield s, e
        pos = max(end, start + 1)


# ---------------------------------------------------------------------------
# URLs with credentials, command lines
# ---------------------------------------------------------------------------

_URL_USERINFO_RE = _c(
    rb"://(?P<u>[^\s:/?#@\"'<>\\\[\]]{0,256}):(?P<s>[^\s/?#@\"'<>\\]{1,256})@(?=[A-Za-z0-9\[])"
)


def _url_check(m: re.Match[bytes], b: bytes) -> bool:
    return not _is_placeholder(m.group("s"))


_DB_SCHEMES = (
    rb"(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|redis|rediss|amqps?|mssql|sqlserver|"
    rb"oracle|cockroachdb|clickhouse|neo4j(?:\+s)?|bolt|couchdb|cassandra|jdbc:[a-z]+|postgis|timescale)"
)
_DB_URL_RE = _c(
    rb"(?<![a-z0-9+])" + _DB_SCHEMES
    + rb"(?:\+[a-z0-9]+)?://(?P<u>[^\s:/?#@\"'<>\\]{0,256}):(?P<s>[^\s/?#\"'<>\\]{1,256})@"
)
_SENTRY_DSN_RE = _c(rb"://(?P<s>[0-9a-f]{32})(?::[0-9a-f]{32})?@[A-Za-z0-9.-]{0,200}")
_CURL_USER_RE = _c(
    rb"curl(?:[^\n\\]|\\[^\n]|\\\n){0,2000}?[ \t](?:-u|--user)(?:[ \t]+|=)?[\"']?"
    rb"(?P<u>[^\s:\"'$]{1,256}):(?P<s>[^\s\"']{1,256})"
)
_MYSQL_RE = _c(
    rb"(?<![A-Za-z0-9_-])(?:mysql|mysqldump|mysqladmin|mariadb|mysqlimport|mysqlsh)"
    rb"(?:[^\n]){0,300}?[ \t]-p(?:(?P<s1>[^\s\"'-][^\s\"']{0,255})|[\"'](?P<s2>[^\s\"']{1,256})[\"']"
    rb"|[ \t]+(?P<s3>[^\s\"'<>|;&-][^\s\"'<>|;&]{0,255}))"
)
_SSHPASS_RE = _c(
    rb"sshpass[ \t]+(?:-[a-oq-z][ \t]+\S+[ \t]+)*-p[ \t]*(?:[\"'](?P<s1>[^\"'\n]{1,256})[\"']|(?P<s2>[^\s\"']{1,256}))"
)


def _value_not_placeholder(*groups: str) -> Callable[[re.Match[bytes], bytes], bool]:
    def check(m: re.Match[bytes], b: bytes) -> bool:
        for g in groups:
            v = m.group(g)
            if v is not None:
                return not _is_placeholder(v)
        return True

    return check


# ---------------------------------------------------------------------------
# The rule table
# ---------------------------------------------------------------------------

_B64U = rb"A-Za-z0-9_-"


def _mixed(m: re.Match[bytes], b: bytes) -> bool:
    """The masked body has an upper-case letter or a digit (not a word)."""
    body = m.group("s")
    return any(c in b"0123456789" or 0x41 <= c <= 0x5A for c in body)


RULES: list[Rule] = [
    Rule(
        "private_key",
        "PEM private-key blocks (RSA, EC, DSA, OPENSSH, PKCS#8, ENCRYPTED, PGP), "
        "also written with escaped \\n inside JSON strings or cut off before their END line; "
        "this covers GCP service-account JSON private_key",
        (b"private key",), fold=True, finder=_pem_spans,
    ),
    Rule(
        "github_token", "GitHub tokens ghp_, gho_, ghu_, ghs_, ghr_ and github_pat_",
        (b"gh",),
        pattern=_c(rb"(?:gh[pousr]_(?P<s>[A-Za-z0-9]{36,255})|github_pat_(?P<s2>[A-Za-z0-9_]{22,255}))" + _RB),
        groups=("s", "s2"),
    ),
    Rule(
        "anthropic_key", "Anthropic keys sk-ant-...",
        (b"sk-ant-",),
        pattern=_c(rb"sk-ant-(?:[a-z]{2,8}[0-9]{2}-)?(?P<s>[" + _B64U + rb"]{20,512})"),
    ),
    Rule(
        "openai_key", "OpenAI keys sk-, sk-proj-, sk-svcacct-, sk-admin-",
        (b"sk-",),
        pattern=_c(_LB + rb"sk-(?!ant-)(?:(?:proj|svcacct|admin|None)-)?(?P<s>[" + _B64U + rb"]{32,512})"),
        check=_mixed,
    ),
    Rule(
        "slack_token", "Slack tokens xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxe- and xapp-",
        (b"xox", b"xapp-"),
        pattern=_c(rb"(?:xox[abeoprs](?:-[0-9]+)?|xapp)-(?P<s>[A-Za-z0-9-]{10,512})"),
    ),
    Rule(
        "slack_webhook", "Slack incoming-webhook and workflow URLs",
        (b"hooks.slack.com",),
        pattern=_c(rb"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9/_-]{8,256})"),
    ),
    Rule(
        "aws_access_key_id", "AWS access key ids AKIA..., ASIA... (and other AWS id prefixes)",
        (b"A",),
        pattern=_c(rb"(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)(?P<s>[A-Z0-9]{16})" + _RB),
    ),
    Rule(
        "aws_secret_key", "AWS secret access keys: 40 base64 characters within 300 of an access key id "
        "(aws_secret_access_key = ... is also masked by secret_assignment)",
        (b"AKIA", b"ASIA"),
        pattern=_c(
            rb"(?:AKIA|ASIA)[A-Z0-9]{16}(?:[^\n]|\\n|\n){0,300}?"
            rb"(?<![A-Za-z0-9/+=])(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
    ),
    Rule(
        "google_api_key", "Google API keys AIza...",
        (b"AIza",),
        pattern=_c(rb"AIza(?P<s>[A-Za-z0-9_-]{35})" + _RB.replace(b"_]", b"_-]")),
    ),
    Rule(
        "google_oauth_token", "Google OAuth access tokens ya29....",
        (b"ya29.",),
        pattern=_c(rb"ya29\.(?P<s>[A-Za-z0-9_-]{20,4096})"),
    ),
    Rule(
        "npm_token", "npm tokens npm_...",
        (b"npm_",),
        pattern=_c(rb"npm_(?P<s>[A-Za-z0-9]{36})" + _RB),
    ),
    Rule(
        "pypi_token", "PyPI upload tokens pypi-AgE...",
        (b"pypi-",),
        pattern=_c(rb"pypi-(?P<s>AgE[A-Za-z0-9_-]{50,4096})"),
    ),
    Rule(
        "huggingface_token", "Hugging Face tokens hf_...",
        (b"hf_",),
        pattern=_c(_LB + rb"hf_(?P<s>[A-Za-z0-9]{30,40})" + _RB),
        check=_mixed,
    ),
    Rule(
        "gitlab_token", "GitLab tokens glpat-, gldt-, glrt-, glptt-, glsoat-, glcbt-...",
        (b"gl",),
        pattern=_c(rb"gl(?:pat|dt|rt|ptt|soat|cbt|ft|imt|agent|oas|ffct)-(?P<s>[A-Za-z0-9_.-]{20,256})"),
    ),
    Rule(
        "dockerhub_token", "Docker Hub personal access tokens dckr_pat_...",
        (b"dckr_",),
        pattern=_c(rb"dckr_(?:pat|oat)_(?P<s>[A-Za-z0-9_-]{20,256})"),
    ),
    Rule(
        "digitalocean_token", "DigitalOcean tokens dop_v1_, doo_v1_, dor_v1_",
        (b"_v1_",),
        pattern=_c(rb"do[opr]_v1_(?P<s>[a-f0-9]{64})" + _RB),
    ),
    Rule(
        "stripe_key", "Stripe secret and restricted keys sk_live_, sk_test_, rk_live_, rk_test_",
        (b"k_live_", b"k_test_"),
        pattern=_c(rb"[rs]k_(?:live|test)_(?P<s>[A-Za-z0-9]{10,256})"),
    ),
    Rule(
        "sendgrid_key", "SendGrid API keys SG.xxx.yyy",
        (b"SG.",),
        pattern=_c(rb"SG\.(?P<s>[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64})"),
    ),
    Rule(
        "twilio", "Twilio account SIDs AC..., API key SIDs SK..., and 32-hex auth tokens in text naming Twilio",
        (b"AC", b"SK"),
        pattern=_c(_LB + rb"(?:AC|SK)(?P<s>[a-f0-9]{32})" + _RB),
    ),
    Rule(
        "twilio_auth_token", "32-hex values in text that mentions twilio",
        (b"twilio",), fold=True,
        pattern=_c(rb"(?<![A-Za-z0-9])(?:AC|SK)?(?P<s>[a-f0-9]{32})(?![A-Za-z0-9])"),
    ),
    Rule(
        "mailgun_key", "Mailgun API keys key-...",
        (b"key-",),
        pattern=_c(_LB_DASH + rb"key-(?P<s>[a-f0-9]{32})" + _RB),
    ),
    Rule(
        "discord_bot_token", "Discord bot tokens in text that mentions discord",
        (b"discord",), fold=True,
        pattern=_c(rb"(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{23,27}\.(?P<s>[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})(?![A-Za-z0-9_-])"),
    ),
    Rule(
        "discord_webhook", "Discord webhook URLs",
        (b"discord",), fold=True,
        pattern=_c(rb"discord(?:app)?\.com/api/(?:v[0-9]+/)?webhooks/[0-9]{5,30}/(?P<s>[A-Za-z0-9_-]{20,256})"),
    ),
    Rule(
        "telegram_bot_token", "Telegram bot tokens in text that mentions telegram",
        (b"telegram",), fold=True,
        pattern=_c(rb"(?<![A-Za-z0-9])[0-9]{5,16}:(?P<s>AA[A-Za-z0-9_-]{30,40})(?![A-Za-z0-9_-])"),
    ),
    Rule(
        "jwt", "JSON Web Tokens eyJ...",
        (b"eyJ",),
        pattern=_c(rb"eyJ(?P<s>[A-Za-z0-9_-]{8,8192}\.ey[A-Za-z0-9_-]{8,16384}(?:\.[A-Za-z0-9_-]{0,8192}){1,3}=*)"),
    ),
    Rule(
        "azure_storage_key", "Azure storage AccountKey= and SharedAccessKey= values",
        (b"accesskey=", b"accountkey="), fold=True,
        pattern=_c(rb"(?:account|sharedaccess)key=(?P<s>[A-Za-z0-9+/]{20,256}={0,2})"),
        on_folded=True,
    ),
    Rule(
        "azure_sas_signature", "Azure SAS signatures sig=",
        (b"sig=",), fold=True,
        pattern=_c(rb"(?<![a-z0-9_])sig=(?P<s>[A-Za-z0-9%+/=]{16,512})"),
        on_folded=True,
    ),
    Rule(
        "database_url", "database URLs with a password (postgres, mysql, mongodb, redis, amqp, mssql...)",
        (b"://",),
        pattern=_DB_URL_RE, on_folded=True, check=_url_check,
    ),
    Rule(
        "url_userinfo", "passwords in URL user-info scheme://user:pass@host",
        (b"://",),
        pattern=_URL_USERINFO_RE, check=_url_check,
    ),
    Rule(
        "sentry_dsn", "Sentry DSN keys https://<key>@host",
        (b"://",),
        pattern=_SENTRY_DSN_RE,
    ),
    Rule(
        "curl_user", "curl -u user:pass and --user user:pass",
        (b"curl",), fold=True,
        pattern=_CURL_USER_RE, check=_value_not_placeholder("s"),
    ),
    Rule(
        "mysql_password", "mysql -pPASS and -p PASS (mysql, mysqldump, mysqladmin, mariadb)",
        (b"mysql", b"mariadb"), fold=True,
        pattern=_MYSQL_RE, groups=("s1", "s2", "s3"), check=_value_not_placeholder("s1", "s2", "s3"),
    ),
    Rule(
        "sshpass", "sshpass -p PASS",
        (b"sshpass",), fold=True,
        pattern=_SSHPASS_RE, groups=("s1", "s2"), check=_value_not_placeholder("s1", "s2"),
    ),
    Rule(
        "authorization_header", "Authorization / Proxy-Authorization headers (Bearer, Basic, token, Bot...)",
        (b"authorization",), fold=True,
        pattern=_AUTH_HEADER_RE, on_folded=True, check=_auth_header_check,
    ),
    Rule(
        "bearer_token", "Bearer tokens outside an Authorization header",
        (b"bearer",), fold=True,
        pattern=_BEARER_RE, on_folded=True, check=_auth_header_check,
    ),
    Rule(
        "cookie", "Cookie and Set-Cookie header values (session tokens)",
        (b"cookie",), fold=True, finder=_cookie_spans,
    ),
]

#: Rule kinds handled by ``_key_spans`` (needs the anchor cache, so not a Rule).
_ASSIGNMENT_KIND = (
    "secret_assignment",
    "values beside secret-like key names (password, passwd, pwd, passphrase, secret, token, "
    "api_key, apikey, client_secret, access_key, private_key, auth, credentials, *_KEY...) "
    "with = : := => or as --flag value, in JSON, YAML, TOML, INI, XML, .env, export lines, "
    "PGPASSWORD=, source code and HTTP headers such as X-Api-Key",
)

#: kind -> description, for the README and for reports.
KINDS: dict[str, str] = {_ASSIGNMENT_KIND[0]: _ASSIGNMENT_KIND[1]}
for _r in RULES:
    KINDS.setdefault(_r.kind, _r.description)


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


def _spans(b: bytes) -> list[Span]:
    bl = b.lower()
    cache: dict[tuple[bytes, bool], bool] = {}

    def present(anchor: bytes, fold: bool = True) -> bool:
        key = (anchor, fold)
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = anchor in (bl if fold else b)
        return hit

    spans: list[Span] = list(_key_spans(b, bl, present))
    for rule in RULES:
        fold = rule.fold
        for a in rule.anchors:
            if present(a, fold):
                break
        else:
            continue
        spans.extend(rule.spans(b, bl))
    return spans


def _apply(b: bytes, spans: list[Span]) -> bytes:
    spans.sort()
    out: list[bytes] = []
    pos = 0
    cur_s, cur_e = spans[0]
    for s, e in spans[1:]:
        if s <= cur_e:
            if e > cur_e:
                cur_e = e
            continue
        out.append(b[pos:cur_s])
        out.append(_MASK_B)
        pos = cur_e
        cur_s, cur_e = s, e
    out.append(b[pos:cur_s])
    out.append(_MASK_B)
    out.append(b[cur_e:])
    return b"".join(out)


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _decode(b: bytes) -> str:
    return b.decode("utf-8", "surrogatepass")


def redact(text: str) -> str:
    """Return ``text`` with secrets replaced by ``[REDACTED]``."""
    if not text:
        return text
    if len(text) > SLICE_CHARS:
        return _redact_large(text)
    b = _encode(text)
    spans = _spans(b)
    if not spans:
        return text
    return _decode(_apply(b, spans))


def _slice_bounds(b: bytes, size: int) -> Iterator[tuple[int, int]]:
    """(start, end) byte offsets of slices of about ``size`` bytes ending at line ends."""
    n = len(b)
    start = 0
    while start < n:
        target = start + size
        if target >= n:
            yield start, n
            return
        nl = b.find(b"\n", target, target + SLICE_OVERLAP // 2)
        if nl < 0:
            nl = b.rfind(b"\n", start + size // 2, target)
        end = nl + 1 if nl >= 0 else target
        # never cut inside a UTF-8 sequence
        while end < n and (b[end] & 0xC0) == 0x80:
            end += 1
        yield start, end
        start = end


def _redact_large(text: str) -> str:
    b = _encode(text)
    spans: list[Span] = []
    n = len(b)
    for start, end in _slice_bounds(b, SLICE_CHARS):
        stop = min(n, end + SLICE_OVERLAP)
        if stop < n:
            nl = b.rfind(b"\n", end, stop)
            if nl >= 0:
                stop = nl + 1
        for s, e in _spans(b[start:stop]):
            if s < end - start:  # spans starting in the overlap belong to the next slice
                spans.append((s + start, e + start))
    if not spans:
        return text
    return _decode(_apply(b, spans))
