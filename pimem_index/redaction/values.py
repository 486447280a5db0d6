"""What a value looks like: a placeholder or a reference (not a secret), code (an expression, a call), a
machine-made token, a quoted string; the checks rules of every family apply to what they would mask."""

from __future__ import annotations

import re

from pimem_index.redaction.rule import Check, Span

# Values that are obviously not secrets: placeholders, references, types.
_PLACEHOLDER_WORDS = frozenset(
    b"""none null nil undefined true false yes no on off
    changeme change_me change-me changeit password passwd pass secret token
    apikey api_key api-key key example sample placeholder dummy fake redacted
    hidden masked removed omitted str string bytes int integer number bool
    boolean any unknown object optional required secretstr todo tbd n/a na
    include omit same-origin env prompt ask stdin - | > |- >- ... \xe2\x80\xa6
    empty default bearer basic digest plain login cram-md5 digest-md5 xoauth2 oauthbearer
    gssapi ntlm external scram-sha-1 scram-sha-256""".split()
)
_PLACEHOLDER_RE = re.compile(
    rb"""(?x)
    \$.*                               # $VAR ${VAR} $(cmd) ${{ secrets.X }}
  | %[a-z_][a-z0-9_]*%                 # %VAR%
  | %\([a-z_][a-z0-9_]*\)[sd]          # %(name)s
  | <[^<>\n]*>                         # <your-token>
  | \{\{.*\}\}                         # {{ template }}
  | \{[a-z_][a-z0-9_.\[\]'"]*\}        # {token}  (f-strings, str.format)
  | \[redacted\].*                     # already masked
  | \#[0-9a-f]{3,8}                    # a hex colour
  | %[-#0-9.]*[sdrifx]                 # %s %r %d
  | \{[0-9]*\}                         # {} {0}
  | (?:your|insert|enter|paste)[_ .-].*          # YOUR_API_KEY, enter-token
  | (?:example|sample|dummy|fake|placeholder|test)[_-].*
    """,
)
_MASK_CHARS = b"x*.#_ -\xe2\x80\xa2"


_ALNUM_RE = re.compile(rb"[A-Za-z0-9]")


def is_placeholder(value: bytes) -> bool:
    v = value.lower().strip()
    if v in _PLACEHOLDER_WORDS or _ALNUM_RE.search(v) is None:
        return True  # also ``***``, ``...``, `` + ``: nothing a secret is made of
    if not v.strip(_MASK_CHARS) and (b"x" in v or b"*" in v or b"\xe2\x80\xa2" in v):
        return True  # xxxx, ****, xxxx-xxxx
    if v.endswith((b"_here", b"-here", b" here", b"example")) or b"examplekey" in v:
        return True  # ..._here; AWS's documented AKIAIOSFODNN7EXAMPLE, wJalr...EXAMPLEKEY
    return _PLACEHOLDER_RE.fullmatch(v) is not None


def group_not_placeholder(*names: str) -> Check:
    def check(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
        for n in names:
            s, e = m.span(g + n)
            if e > s:
                return not is_placeholder(b[s:e])
        return True

    return check


_CALL_RE = re.compile(rb"[^(\[]{0,4096}[(\[].*", re.S)  # calls, indexing, tuples
_DOTTED_RE = re.compile(rb"([A-Za-z_$][A-Za-z0-9_]*)(?:(?:\.|->|::)[A-Za-z_][A-Za-z0-9_]*)+[;,]?")
_CODE_ROOTS = frozenset(
    b"""self this cls os sys process env environ config conf cfg settings args opts options request req
    ctx context app params vars secrets credentials creds data user session window document import
    st props state form""".split()
)


def is_expression(value: bytes) -> bool:
    """``args.password``, ``os.environ["X"]``, ``get_token()``: code, not a value."""
    if _CALL_RE.fullmatch(value):
        return True
    m = _DOTTED_RE.fullmatch(value)
    if m is None:
        return False
    # a.b.c without digits, or rooted at a well-known object; a random
    # secret with a dot (``Xk3.p9Q``) has digits and no such root
    return m.group(1).lower() in _CODE_ROOTS or not any(c in b"0123456789" for c in value)


TOKENISH_RE = re.compile(rb"[A-Za-z0-9+/=_.~-]{16,}")
DIGITS_RE = re.compile(rb"[0-9]+")
ENTITY_QUOTE = rb"&quot;|&#x0*22;|&#0*34;|&apos;|&#x0*27;|&#0*39;"  # folded
ENTITY_QUOTE_RE = re.compile(ENTITY_QUOTE)


def entity_quoted(bl: bytes, pos: int) -> Span | None:
    """A value quoted with HTML entities (``&quot;s3cret&quot;`` in a pasted page): its contents."""
    q = ENTITY_QUOTE_RE.match(bl, pos)
    if q is None:
        return None
    end = bl.find(q.group(), q.end(), q.end() + 4096)
    if end < 0 or bl.find(b"\n", q.end(), end) >= 0:
        return None
    return q.end(), end


def quoted_value(b: bytes, pos: int) -> Span | None:
    """If a quoted value (maybe with escaped quotes) starts at ``pos``, the span of its contents."""
    n = len(b)
    if b[pos : pos + 1] in (b"b", b"r", b"u", b"B", b"R", b"U") and b[pos + 1 : pos + 2] in (b"'", b'"'):
        pos += 1  # b'...' r"..." literals
    i = pos
    while i < n and i - pos < 4 and b[i] == 0x5C:
        i += 1
    if i >= n or b[i] not in b"\"'`":
        return None
    quote = b[pos : i + 1]
    start = i + 1
    limit = min(n, start + 4096)
    end = b.find(quote, start, limit)
    if len(quote) == 1:
        while end > 0 and b[end - 1] == 0x5C:  # a quote escaped inside the value
            end = b.find(quote, end + 1, limit)
    if end < 0 or b.find(b"\n", start, end) >= 0:
        return None
    return start, end


HAS_DIGIT_RE = re.compile(rb"[0-9]")
IDENT_RE = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def looks_random(value: bytes) -> bool:
    """A machine-made secret: 16+ token characters with both letters and digits."""
    return (
        TOKENISH_RE.fullmatch(value) is not None
        and HAS_DIGIT_RE.search(value) is not None
        and HAS_LETTER_RE.search(value) is not None
    )


HAS_LETTER_RE = re.compile(rb"[A-Za-z]")


def body_mixed(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
    """The masked body has an upper-case letter or a digit (so it is not a
    word like ``sk-learn-compatible-estimators``)."""
    s, e = m.span(g + "s")
    body = b[s:e]
    return any(c in b"0123456789" or 0x41 <= c <= 0x5A for c in body)


def has_digit(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
    s, e = m.span(g + "s")
    return HAS_DIGIT_RE.search(b, s, e) is not None
