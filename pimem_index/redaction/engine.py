"""Mask secrets in text before it is indexed or shown.

``redact(text)`` returns ``text`` with every secret it recognises replaced by
``[REDACTED]``.  The key name or the token's prefix stays visible, so a reader
knows what was there::

    password=[REDACTED]
    Authorization: Bearer [REDACTED]
    ghp_[REDACTED]
    postgres://user:[REDACTED]@host/db
    -----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END RSA PRIVATE KEY-----

``KINDS`` maps every kind of secret covered to a one-line description (the
docs/redaction.md lists them).

How it stays fast (it runs on every indexed entry and every output):

* The text is encoded to UTF-8 once and ASCII-case-folded with
  ``bytes.lower()``; both run at GB/s, where ``str.lower()`` on non-ASCII text
  is ten times slower.  Rules work on bytes.  A masked span never splits a
  multi-byte character: spans end at ASCII delimiters.
* Every rule's pattern starts right after a literal, its ``scan`` (``_``,
  ``-``, ``://``, ``k``, ``auth``, ``-----BEGIN``...).  Rules sharing a scan
  literal are compiled into one regex ``scan(?:(?P<r0>...)|(?P<r1>...))``, so
  ``re`` uses its literal-prefix search and one pass serves many kinds (the
  ``_`` pass finds ghp_, npm_, hf_, dckr_pat_, sk_live_..., via lookbehinds
  placed after the literal).  Rare literals are first tested with ``in``
  (C speed), so most texts skip those rules entirely.
* Most texts cannot match most scanners.  Each scanner's needles, literals
  one of which every match holds or sees (``password``, ``ghp_``, ``eyj``...),
  are read off its compiled regex; one Hyperscan pass over the text (GB/s,
  all needles at once) tells which scanners can match, and only those run;
  a text with no needle is not even lowered.  Without Hyperscan (no wheel for
  the platform) every scanner runs, with the same result.
* No pattern begins with an unanchored ``[...]*``, every repetition is
  bounded, and scans that look ahead along a line stop at the next occurrence
  of their own literal, so time per megabyte stays flat on adversarial input.
* Text over ``SLICE_CHARS`` characters is redacted in slices cut at line
  ends; each slice is scanned together with ``SLICE_OVERLAP`` bytes either
  side, so a PEM block crossing the cut is still masked whole.

One answer for one text, wherever it is shown: a part of an entry (a search
excerpt's window, a page's first characters, a slice) is redacted by
``redact_part`` as the whole text would be.  Rules look at most
``SLICE_OVERLAP`` bytes around what they mask, and the part is scanned with
that much either side; what depends on the whole entry (``CONTEXT_WORDS``:
a Discord or Telegram bot token is a secret in an entry that mentions the
service anywhere) is decided once per entry by ``context_of``.

To add a kind, append a ``Rule`` to ``RULES``: a kind name, a description, the
scan literal, and a pattern for what follows it, whose groups ``s``, ``s2``...
cover what to mask (or a ``handler`` that returns spans).

Decisions (what is deliberately *not* masked):

* References and placeholders: ``$VAR``, ``${VAR}``, ``${{ secrets.X }}``,
  ``%VAR%``, ``<your-token>``, ``{token}``, ``xxxx``, ``****``,
  ``YOUR_API_KEY``, ``..._here``, ``null``/``true``/``None``, and well-known
  defaults such as ``changeme`` (public, so not a secret; masking them would
  only hide what a config says).  Any value starting with ``$`` reads as a
  reference.
* Code rather than values: ``args.password``, ``os.environ["X"]``,
  ``get_token()``, ``token = prev`` (an identifier without digits after
  `` = ``), ``password: str`` and other annotations, ``f"{token:02x}"``,
  ``(?P<access_key>...)``, names that end with the keyword
  (``"input_token": "next_token"``), ARN and ``AWS::`` type names.
* Metadata beside a secret word: ``token_count``, ``password_field``,
  ``secret_name``, ``totalTokens`` (the keyword must end the key name), usage
  counts and short numbers, plain lower-case words as *token/key/auth* values
  (``"input_token": "marker"``; a password may be a word, so password and
  secret values are masked whatever they look like).
* ``key`` alone, or ``*_key`` with a prefix that is not secret-like
  (``sort_key``, ``cache_key``), masks only values that look machine-made
  (16+ token characters with letters and digits).
* Public material: public keys, certificates, ``ssh-ed25519 AAAA...``,
  git SHAs, UUIDs, provider ids (``toolu_``, ``call_``, ``msg_``,
  ``chatcmpl-``), package integrity hashes, hex colours.

Limits (known and accepted):

* A random secret with no key name and no known prefix (a bare 40-character
  string in prose) is not recognised; there is no entropy-only rule, which
  would mask hashes and ids everywhere.
* Values end at whitespace unless quoted or on an INI/YAML line
  (``password = two words``); a shell password with an unquoted space leaks
  its tail (the shell would split it too).
* A PEM body longer than 48 KB is masked up to 48 KB.  Slices overlap by
  64 KB, so no secret shorter than that is cut by a slice boundary.
* Key names are recognised in ASCII, URL-encoded (``api%5Fkey%3D``) and
  between HTML entities (``&quot;password&quot;``); URLs also with JSON's
  escaped slashes (``postgres:\\/\\/...``).
* ``-p VALUE`` is a password only for the tools ``cli_password`` names (for
  others it is as often a port).
* gitleaks' default rules and how each is answered: ``redact_gitleaks.py``.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

# re's own parser (3.11+, like possessive repeats); private modules, so typed Any
_sre: Any = importlib.import_module("re._constants")
_sre_parse: Any = importlib.import_module("re._parser")


def _import_hyperscan() -> Any:
    """The hyperscan module, or None where no wheel exists (every scanner then runs on every text)."""
    try:
        return importlib.import_module("hyperscan")
    except ImportError:
        return None


hyperscan = _import_hyperscan()

__all__ = ["redact", "KINDS", "RULES", "Rule", "MASK", "SLICE_CHARS", "SLICE_OVERLAP"]
__all__ += ["redact_part", "context_of", "Context"]

MASK = "[REDACTED]"
_MASK_B = MASK.encode()

#: Text longer than this many characters is redacted in slices cut at line ends.
SLICE_CHARS = 1 << 20
#: Bytes of the following slice scanned together with each slice.
SLICE_OVERLAP = 64 * 1024

Span = tuple[int, int]
# check(match, group_prefix, original_bytes, folded_bytes) -> keep?
Check = Callable[[re.Match, str, bytes, bytes], bool]
# handler(rule, match, group_prefix, original_bytes, folded_bytes) -> spans
Handler = Callable[["Rule", re.Match, str, bytes, bytes, dict], Iterable[Span]]


@dataclass(frozen=True)
class Rule:
    """One kind of secret.

    ``pattern`` is matched right after the literal ``scan`` (in the ASCII
    lower-cased text when ``fold`` is true; offsets are the same as in the
    original).  Named groups ``s``, ``s2``... mark what to mask; ``check`` may
    veto a match; a ``handler`` replaces the default group masking.  ``rare``
    makes the driver test ``scan in text`` before running the regex (worth it
    for literals that seldom occur).  ``handler(rule, m, g, b, bl, ctx)``
    gets ``ctx``, a dict shared by all matches in one text.
    """

    kind: str
    description: str
    scan: bytes
    pattern: bytes
    fold: bool = False
    rare: bool = False
    check: Check | None = None
    handler: Handler | None = None
    guard: bytes = b""  # shared lookbehind tried once before alternatives that start with a lookbehind
    back: int = 0  # secret_assignment: keyword bytes before the scan literal
    family: str = ""  # secret_assignment: password, secret, token, auth, cred, key


# ---------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------


def _not_after_word(lit: bytes, chars: bytes = rb"A-Za-z0-9_") -> bytes:
    """Lookbehind, placed after the literal ``lit``: ``lit`` is not glued to
    a preceding word character, except that a JSON escape (``\\n``...) or a
    %-escape right before it counts as a boundary (``\\b`` fails after
    ``\\n`` because ``n`` is a word character)."""
    e = re.escape(lit)
    return rb"(?:(?<![" + chars + rb"]" + e + rb")|(?<=\\[nrtbf]" + e + rb")|(?<=%[0-9A-Fa-f]{2}" + e + rb"))"


_END_ALNUM = rb"(?![A-Za-z0-9_])"

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


def _is_placeholder(value: bytes) -> bool:
    v = value.lower().strip()
    if v in _PLACEHOLDER_WORDS or _ALNUM_RE.search(v) is None:
        return True  # also ``***``, ``...``, `` + ``: nothing a secret is made of
    if not v.strip(_MASK_CHARS) and (b"x" in v or b"*" in v or b"\xe2\x80\xa2" in v):
        return True  # xxxx, ****, xxxx-xxxx
    if v.endswith((b"_here", b"-here", b" here", b"example")) or b"examplekey" in v:
        return True  # ..._here; AWS's documented AKIAIOSFODNN7EXAMPLE, wJalr...EXAMPLEKEY
    return _PLACEHOLDER_RE.fullmatch(v) is not None


def _group_not_placeholder(*names: str) -> Check:
    def check(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
        for n in names:
            s, e = m.span(g + n)
            if e > s:
                return not _is_placeholder(b[s:e])
        return True

    return check


def _body_mixed(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
    """The masked body has an upper-case letter or a digit (so it is not a
    word like ``sk-learn-compatible-estimators``)."""
    s, e = m.span(g + "s")
    body = b[s:e]
    return any(c in b"0123456789" or 0x41 <= c <= 0x5A for c in body)


def _whole_match(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterable[Span]:
    """Mask the scan literal too (e.g. the ``AA`` opening a Telegram token)."""
    return [(m.start(), m.end())]


# ---------------------------------------------------------------------------
# Key names beside = or :  (password=..., "api_key": "...", --token x, XML)
# ---------------------------------------------------------------------------

_KEY_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEY_END = rb"(?![a-z0-9_]|-[a-z0-9])"

# Prefixes that make a name ending in "key" a secret's name whatever its value.
_STRONG_KEY_PREFIXES = (
    b"api",
    b"access",
    b"secret",
    b"private",
    b"account",
    b"sharedaccess",
    b"client",
    b"master",
    b"encryption",
    b"signing",
    b"license",
    b"licence",
    b"subscription",
    b"app",
    b"auth",
    b"consumer",
    b"webhook",
    b"deploy",
    b"service",
    b"admin",
    b"stripe",
    b"openai",
    b"anthropic",
    b"session",
    b"cookie",
    b"hmac",
    b"jwt",
    b"crypt",
    b"sign",
    b"x-api",
    b"x_api",
    b"token",
    b"mailgun",
    b"sendgrid",
    b"twilio",
    b"aws",
    b"gcp",
    b"azure",
    b"storage",
    b"write",
    b"rest",
    b"live",
    b"prod",
    b"primary",
    b"secondary",
)

_CALL_RE = re.compile(rb"[^(\[]{0,4096}[(\[].*", re.S)  # calls, indexing, tuples
_DOTTED_RE = re.compile(rb"([A-Za-z_$][A-Za-z0-9_]*)(?:(?:\.|->|::)[A-Za-z_][A-Za-z0-9_]*)+[;,]?")
_CODE_ROOTS = frozenset(
    b"""self this cls os sys process env environ config conf cfg settings args opts options request req
    ctx context app params vars secrets credentials creds data user session window document import
    st props state form""".split()
)


def _is_expression(value: bytes) -> bool:
    """``args.password``, ``os.environ["X"]``, ``get_token()``: code, not a value."""
    if _CALL_RE.fullmatch(value):
        return True
    m = _DOTTED_RE.fullmatch(value)
    if m is None:
        return False
    # a.b.c without digits, or rooted at a well-known object; a random
    # secret with a dot (``Xk3.p9Q``) has digits and no such root
    return m.group(1).lower() in _CODE_ROOTS or not any(c in b"0123456789" for c in value)


_TOKENISH_RE = re.compile(rb"[A-Za-z0-9+/=_.~-]{16,}")
_DIGITS_RE = re.compile(rb"[0-9]+")
_TYPE_WORDS_RE = re.compile(rb"(?:str|string|bytes|int|bool|secretstr|optional|any)\b.*")
_LINE_START_RE = re.compile(rb"[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]+|setenv[ \t]+)?[\"']?")
_VISIBLE_PREFIX_RE = re.compile(
    rb"(?:gh[pousr]_|github_pat_|sk-ant-(?:[a-z]{2,8}[0-9]{2}-)?|sk-(?:proj-|svcacct-|admin-)?|xox[a-z]-|xapp-|"
    rb"A3T[A-Z0-9]|AKIA|ASIA|AIza|ya29\.|npm_|pypi-|hf_|gl(?:pat|dt|rt|ptt)-|dckr_pat_|do[opr]_v1_|"
    rb"[sr]k_(?:live|test)_|SG\.|key-|eyJ|[Bb]earer |[Bb]asic )"
)


def _key_start(bl: bytes, pos: int) -> int:
    """Start of the identifier that ends at ``pos`` (walks back at most 64 bytes)."""
    start = pos
    limit = max(0, pos - 64)
    while start > limit:
        if bl[start - 3 : start] in _KEY_ESCAPES:
            start -= 3
        elif bl[start - 1] in _KEY_CHARS:
            start -= 1
        else:
            break
    # ``\nPASSWORD=...`` inside a JSON string: drop the escape's letter.
    if start > 0 and bl[start - 1] == 0x5C and start < pos and bl[start] in b"nrtbf":
        start += 1
    return start


_ENTITY_QUOTE = rb"&quot;|&#x0*22;|&#0*34;|&apos;|&#x0*27;|&#0*39;"  # folded
_ENTITY_QUOTE_RE = re.compile(_ENTITY_QUOTE)
_KEY_ESCAPES = (b"%5f", b"%2d", b"%2e")  # _ - . URL-encoded inside a key name (api%5Fkey)


def _entity_quoted(bl: bytes, pos: int) -> Span | None:
    """A value quoted with HTML entities (``&quot;s3cret&quot;`` in a pasted page): its contents."""
    q = _ENTITY_QUOTE_RE.match(bl, pos)
    if q is None:
        return None
    end = bl.find(q.group(), q.end(), q.end() + 4096)
    if end < 0 or bl.find(b"\n", q.end(), end) >= 0:
        return None
    return q.end(), end


def _quoted_value(b: bytes, pos: int) -> Span | None:
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


# the rest of an INI / YAML line, without a trailing " # comment" or blanks
_TO_EOL_RE = re.compile(rb"(?:[^\r\n\\#]|(?<![ \t])#){0,4096}")
_HAS_DIGIT_RE = re.compile(rb"[0-9]")
_IDENT_RE = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_CONCAT_RE = re.compile(rb"^[ \t]*\+[ \t]|[ \t]\+[ \t]*$")
_WORDS_RE = re.compile(rb"[a-z][a-z _-]{0,40}")
# a type after "name:": CamelCase or dotted, maybe generic, then , = ) | or the end
_ANNOTATION_RE = re.compile(
    rb"(?:[a-z_][a-z0-9_]*\.)*[A-Z][A-Za-z]*[a-z][A-Za-z]*(?:\[[^\]\n]{0,200}\])?[ \t]*(?:[,=)|]|$)"
)
_TEMPLATE_RE = re.compile(rb"\$?\{[A-Za-z_][A-Za-z0-9_.]*\}")
_CODE_HINT_RE = re.compile(rb"[\"'()\[\]{}]| [-+*/%|&<>=]=? |->| (?:if|else|or|and|not|in|is) ")
_DOC_HEAD_RE = re.compile(rb"(?::param|:type|@param|:arg|:raises?)[ \t]")


def _looks_random(value: bytes) -> bool:
    """A machine-made secret: 16+ token characters with both letters and digits."""
    return (
        _TOKENISH_RE.fullmatch(value) is not None
        and _HAS_DIGIT_RE.search(value) is not None
        and _HAS_LETTER_RE.search(value) is not None
    )


_AUTH_TUPLE_RE = re.compile(
    rb"(?:HTTP(?:Basic|Digest)Auth)?\([ \t]*[\"'][^\"'\n]{0,256}[\"'][ \t]*,[ \t]*[\"'](?P<s>[^\"'\n]{1,256})[\"']"
)
_HAS_LETTER_RE = re.compile(rb"[A-Za-z]")


def _assignment(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterable[Span]:
    span = _assignment_span(rule, m, g, b, bl)
    return () if span is None else (span,)


def _assignment_span(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes) -> Span | None:
    family = rule.family
    kw_start = m.start() - rule.back
    kw_end = m.end(g + "k")
    kw = bl[kw_start:kw_end]
    kstart = _key_start(bl, kw_start)
    prefix = bl[kstart:kw_start].replace(b"%5f", b"_").replace(b"%2d", b"-").replace(b"%2e", b".")
    sep = m.group(g + "sep")
    vpos = m.start(g + "v")
    if m.start(g + "ws") >= 0:
        # ``--password value``: only command-line flags take a space.
        if not prefix.startswith(b"-"):
            return None
    before = bl[kstart - 1] if kstart else 0x0A
    if before in b":{" or (before == 0x3C and bl[kstart - 3 : kstart - 1] == b"?p"):
        # arn:aws:secretsmanager:...:secret:name, AWS::IAM::AccessKey,
        # f"{token:02x}", (?P<access_key>...): names, not assignments
        return None
    if family == "key":
        stripped = prefix.rstrip(b"_.-")
        strong = bool(stripped) and stripped.endswith(_STRONG_KEY_PREFIXES)
    else:
        strong = True
    if sep == b">":
        # XML element <password>value</password>
        if before != 0x3C:
            return None
        end = bl.find(b"<", vpos, vpos + 4096)
        if end <= vpos:
            return None
        value = b[vpos:end]
        if _is_placeholder(value) or (not strong and not _looks_random(value)):
            return None
        return vpos, end
    if family == "password" and len(kw) <= 5 and kw.startswith(b"pass"):
        # bare "pass": not "bypass=", "compass:"; but db_pass, dbPass, PASS
        if (
            prefix
            and prefix[-1:] not in b"_.-"
            and not (b[kw_start : kw_start + 1].isupper() and b[kw_start - 1 : kw_start].islower())
        ):
            return None
    if prefix.rstrip(b"_.-").endswith(b"from"):
        return None  # from_secret: name (Drone), a reference to a secret
    # INI / YAML / properties lines take the rest of the line as the value
    # (``password = two words``); shell and .env assignments (``NAME=value
    # cmd``) end at whitespace.
    to_eol = False
    if m.start(g + "kq") < 0 and (sep == b":" or (sep == b"=" and bl[vpos - 1] in b" \t")):
        line_start = bl.rfind(b"\n", max(0, kstart - 40), kstart) + 1
        if line_start == 0 and kstart > 40:
            line_start = -1
        if line_start >= 0:
            head = bl[line_start:kstart]
            esc = head.rfind(b"\\n")
            if esc >= 0:
                head = head[esc + 2 :]
            if _DOC_HEAD_RE.search(head):
                return None  # :param str password: the password to use
            to_eol = _LINE_START_RE.fullmatch(head) is not None
    if family in ("auth", "cred") and b[vpos : vpos + 1] in b"(H":
        t = _AUTH_TUPLE_RE.match(b, vpos)  # auth=("user", "pass"), HTTPBasicAuth("u", "p")
        if t is not None and not _is_placeholder(t.group("s")):
            return t.span("s")
    quoted = _quoted_value(b, vpos) or _entity_quoted(bl, vpos)
    if quoted is not None:
        vstart, vend = quoted
    else:
        if b[vpos : vpos + 1] in b"{[(#\"'`":
            return None  # an object, a list, a call, a comment, a closing quote
        vstart = vpos
        if to_eol:
            eol = _TO_EOL_RE.match(b, vpos)  # matches the empty string at least
            vend = eol.end() if eol is not None else vpos
            while vend > vpos and b[vend - 1] in b" \t":
                vend -= 1
        else:
            vend = m.end(g + "v")  # the regex consumed the unquoted run
        if sep == b"%3d":
            amp = bl.find(b"%26", vstart, vend)  # password%3Dx%26next%3D1: an encoded query string
            vend = amp if amp >= 0 else vend
    if vend <= vstart:
        return None
    value = b[vstart:vend]
    if _is_placeholder(value.rstrip(b"'\",;")):
        return None
    if value.startswith(b"-----BEGIN"):
        return None  # the private_key rule masks it and keeps its label
    bare = value.rstrip(b",;")
    if _IDENT_RE.fullmatch(bare) and bare.lower().replace(b"-", b"_").endswith(kw.replace(b"-", b"_")):
        return None  # password=password, token=auth_token, "input_token": "next_token": a name
    if _TEMPLATE_RE.search(value):
        return None  # f"share-{portfolio_id}", `${token}`: interpolated at run time
    if quoted is not None and _CONCAT_RE.search(value):
        return None  # "TOKEN=" + prefix + "...": the quotes close and reopen a code string
    if quoted is None and m.start(g + "kq") >= 0 and _IDENT_RE.fullmatch(bare):
        return None  # {"password": pw_var}: JSON would quote a string, so this is code
    if (family in ("token", "key", "auth", "cred") or (kw == b"pass" and sep == b":")) and _WORDS_RE.fullmatch(value):
        return None  # "input_token": "marker", "session-token": machine secrets are not plain words
    if quoted is None:
        if _is_expression(bare) or (to_eol and _CODE_HINT_RE.search(value)):
            return None
        if sep == b":" and (_TYPE_WORDS_RE.fullmatch(bare.lower()) or _ANNOTATION_RE.match(value)):
            return None  # password: str, private_key: SSHPrivateKeyTypes, auth: t.Any = None
        if sep == b"=" and bl[vpos - 1] in b" \t" and _IDENT_RE.fullmatch(bare) and not _HAS_DIGIT_RE.search(bare):
            return None  # token = prev, self.password = password_var: code assigns a variable
    if kw == b"pwd" and prefix in (b"", b"old") and value[:1] in b"/~":
        return None  # PWD=/home/user
    if _DIGITS_RE.fullmatch(value) and (len(value) < 4 or (family != "password" and len(value) < 12)):
        return None  # usage counts, ids, flags
    if not strong:
        # "sort_key": "name" is not a secret; a long random value is.
        if not _looks_random(value):
            return None
    p = _VISIBLE_PREFIX_RE.match(value)
    if p is not None and p.end() < len(value):
        vstart += p.end()  # GITHUB_TOKEN=ghp_[REDACTED]: keep the token's prefix
    return vstart, vend


def _auth_header_check(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
    s, e = m.span(g + "s")
    value = b[s:e]
    if _is_placeholder(value):
        return False
    if m.start(g + "sc") < 0 and m.start(g + "oq") < 0:
        # authorization = self.headers.get(...), 'Authorization': auth: code
        bare = value.rstrip(b",;")
        if _is_expression(bare) or (_IDENT_RE.fullmatch(bare) and not _HAS_DIGIT_RE.search(bare)):
            return False
    return True


# ---------------------------------------------------------------------------
# Cookies
# ---------------------------------------------------------------------------

_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_")


def _glued(bl: bytes, pos: int) -> bool:
    """``bl[pos]`` continues a word (``\\n``-style escapes do not count)."""
    return pos > 0 and bl[pos - 1] in _WORD_BYTES and not (pos > 1 and bl[pos - 2] == 0x5C)


_COOKIE_PAIR_RE = re.compile(rb"[ \t]*(?P<n>[^=;\s\"'\\]{1,256})=(?P<v>[^;\s\"'\\]{1,4096})[ \t]*;?")
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
    match = _COOKIE_PAIR_RE.match
    while pos < end:
        p = match(b, pos, end)  # pairs follow each other: name=value; name=value
        if p is None:
            return
        if p.group("n").lower() not in attrs:
            s, e = p.span("v")
            if not (b[s] in b"$<{*xX" and _is_placeholder(b[s:e])):
                yield s, e
        if is_set:
            return  # Set-Cookie: only the first pair is the cookie; the rest are attributes
        pos = p.end()


# ---------------------------------------------------------------------------
# Private keys (PEM, escaped PEM, truncated PEM)
# ---------------------------------------------------------------------------

_PEM_BODY_STOP_RE = re.compile(rb"[^A-Za-z0-9+/=\s\\:,.()_-]|-----(?:END|BEGIN)")
_PEM_MAX = 48 * 1024


def _pem(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterator[Span]:
    start = m.end()
    limit = min(len(b), start + _PEM_MAX)
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
        return _whole_match(rule, m, g, b, bl, ctx)
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


# ---------------------------------------------------------------------------
# .netrc, PuTTY keys
# ---------------------------------------------------------------------------


def _netrc_check(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
    """``password x`` (no separator) is a .netrc entry when ``machine`` or
    ``login`` comes shortly before it."""
    s = m.start()
    window = bl[max(0, s - 300) : s]
    return (
        b"login " in window
        and (b"machine " in window or b"default " in window)
        and not _is_placeholder(b[m.start(g + "s") : m.end(g + "s")])
    )


_PUTTY_STOP_RE = re.compile(rb"private-mac|[^a-z0-9+/=\s\\]")


def _putty(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterator[Span]:
    """The base64 lines after ``Private-Lines: N`` up to ``Private-MAC``."""
    start = m.end()
    stop = _PUTTY_STOP_RE.search(bl, start, start + _PEM_MAX)
    end = stop.start() if stop is not None else min(len(b), start + _PEM_MAX)
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


#: Words whose mention anywhere in an entry makes a token of a shape too common alone a secret.
CONTEXT_WORDS = (b"discord", b"telegram")
# Those whose tokens a rule finds by searching the whole text once it meets the word: a part of
# an entry without the word gets that search from the entry's Context (_spans).
_CONTEXT_SEARCHES: dict[bytes, Callable[[bytes, dict], list[Span]]] = {b"discord": _discord_tokens}


# ---------------------------------------------------------------------------
# The rule table
# ---------------------------------------------------------------------------
#
# Scan literals begin with bytes that are rare in code and prose (k, x, y, j,
# _, upper-case A...), because re's literal search loops on the first byte.
# Each alternative then starts with a literal where possible, so the regex
# engine rejects it with one comparison.  Most rules run on the folded text;
# where case matters (ghp_ vs GHP_, -p vs -P) a check looks at the original.

_B64U = rb"[a-z0-9_-]"  # base64url on folded text (same offsets as the original)


def _orig_at(offset: int, literal: bytes, group: str = "") -> Check:
    """Check: the original bytes hold ``literal`` at ``offset`` from the match
    start (or from the start of ``group``)."""

    def check(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
        pos = (m.start(g + group) if group else m.start()) + offset
        return b[pos : pos + len(literal)] == literal

    return check


def _all(*checks: Check) -> Check:
    def check(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
        return all(c(m, g, b, bl) for c in checks)

    return check


_FLAG_COMPOUNDS = (b"api", b"auth", b"access", b"client", b"secret", b"db", b"admin", b"root", b"user", b"bot")


def _flag_lb(*words: bytes) -> bytes:
    """Lookbehind: the keyword just matched ends a command-line flag
    (``--password``, ``--db-password``, ``--api_key``, ``--apitoken``)."""
    alts = []
    for w in words:
        alts.append(rb"(?<=[-_]" + re.escape(w) + rb")")
        alts.extend(rb"(?<=-" + c + re.escape(w) + rb")" for c in _FLAG_COMPOUNDS)
    return rb"(?:" + rb"|".join(alts) + rb")"


def _kw(family: str, scan: bytes, pattern: bytes, flag_words: tuple[bytes, ...], back: int = 0) -> Rule:
    """A secret_assignment rule: ``pattern`` continues the keyword after the
    scan literal and ends with an empty group ``k`` at the keyword's end;
    ``back`` is how many keyword bytes precede the scan literal."""
    sep = (
        rb"(?P<kq>\\{0,3}[\"']|" + _ENTITY_QUOTE + rb")?"  # closing quote of the key, maybe escaped
        rb"(?:[ \t]*(?P<sep>=>|:=|=(?!=)|:(?![:/])|>|%3d|&#x3d;|&#0*61;|&equals;)[ \t]*|"
        + _flag_lb(*flag_words)
        + rb"(?P<ws>[ \t]+))"
    )
    # The value is consumed (possessively) so the scan resumes after it:
    # "password=password=..." costs one match, not one per repetition.
    value = rb"(?P<v>(?:\\{0,3}[\"'`])?[^\s\"'`,;&<>)\]}\\|]{0,4096}+)"
    return Rule(
        "secret_assignment",
        "",
        scan,
        pattern + _KEY_END + sep + value,
        fold=True,
        handler=_assignment,
        back=back,
        family=family,
    )


_MYSQL_P_RE = re.compile(
    rb"[ \t]-p(?:(?P<s>[^\s\"'\\;|&<>-][^\s\"'\\;|&<>]{0,255})|[\"'](?P<s2>[^\"'\n\\]{1,256})[\"']"
    rb"|[ \t]+(?P<s3>[^\s\"'\\;|&<>-][^\s\"'\\;|&<>]{0,255}))"
)
_COMMAND_END_RE = re.compile(rb"\n|\\n|[;|]|&&|mysql|mariadb")


def _mysql(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterator[Span]:
    """``-pPASS``, ``-p'PASS'`` and ``-p PASS`` up to the end of the command
    (case-sensitive: ``-P`` is the port)."""
    start = m.end()
    stop = _COMMAND_END_RE.search(bl, start, start + 2000)
    end = stop.start() if stop is not None else min(len(b), start + 2000)
    for p in _MYSQL_P_RE.finditer(b, start, end):
        for name in ("s", "s2", "s3"):
            s, e = p.span(name)
            if e > s and not _is_placeholder(b[s:e]):
                yield s, e


# ---------------------------------------------------------------------------
# Prefixed service tokens: the prefix alone is distinctive enough
# ---------------------------------------------------------------------------


def _token(
    kind: str,
    scan: bytes,
    body: bytes,
    *,
    fold: bool = True,
    description: str = "",
    check: Check | None = None,
    word: bytes = rb"A-Za-z0-9_",
    end: bytes = _END_ALNUM,
) -> Rule:
    """A token that starts with the literal ``scan`` (not glued to a word before
    it) followed by ``body``, which is masked; the prefix stays visible."""
    pattern = _not_after_word(scan, word) + rb"(?P<s>" + body + rb")" + end
    return Rule(kind, description, scan, pattern, fold=fold, check=check)


def _has_non_hex(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
    """The masked body holds a character a hex digest never does (so a
    ``4b1d...`` hash is not taken for a ClickHouse key)."""
    s, e = m.span(g + "s")
    return re.search(rb"[g-zA-Z]", b[s:e]) is not None


def _has_digit(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
    s, e = m.span(g + "s")
    return _HAS_DIGIT_RE.search(b, s, e) is not None


def _mask_before(n: int) -> Handler:
    """Handler: mask the ``n`` bytes before the match (a token known by its suffix)."""

    def handler(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterable[Span]:
        return [(max(0, m.start() - n), m.start())]

    return handler


_SERVICES = (
    "prefixed tokens of other services: 1Password A3-/ops_, Adobe p8e-, Airtable pat, Alibaba LTAI, "
    "Artifactory AKCp/cmVmd, Atlassian ATATT3, Authress .acc_, Amazon Bedrock ABSK/bedrock-api-key-, "
    "Azure AD client secrets ...Q~, ClickHouse 4b1d, Clojars, Cloudflare origin CA v1.0-, Defined Networking "
    "dnkey-, Doppler dp.pt., Dropbox sl., Duffel, Dynatrace dt0c01., EasyPost EZAK/EZTK, Facebook EAAC/EAAM "
    "and app|secret, Flutterwave FLWSECK, Fly.io fo1_/fm2_, Frame.io fio-u-, Grafana glc_/glsa_/eyJrIjoi, "
    "Harness pat./sat., Terraform .atlasv1., Heroku HRKU-AA, Infracost ico-, Intra42 s-s4t2, Mailchimp "
    "...-us1, Mapbox pk./sk., MaxMind _mmk, Microsoft Teams webhooks, New Relic NRAK-/NRII-/NRJS-, Octopus "
    "API-, OpenShift sha256~, Plaid access-, PlanetScale pscale_, Postman PMAK-, Prefect pnu_, Pulumi pul-, "
    "ReadMe rdme_, Scalingo tk-us-, Brevo xkeysib-, Sentry sntrys_/sntryu_, SettleMint sm_, Shippo, "
    "Sidekiq, SonarQube squ_, Sourcegraph sgp_, Square sq0/EAAA, Twitter bearer AAAA..., Typeform tfp_, "
    "Yandex AQVN"
)

_HEX = rb"[0-9a-f]"
_UUID = _HEX + rb"{8}-" + _HEX + rb"{4}-" + _HEX + rb"{4}-" + _HEX + rb"{4}-" + _HEX + rb"{12}"
_WB = rb"A-Za-z0-9+/"  # word characters of a base64 run: a token is not glued inside one

_SERVICE_RULES: list[Rule] = [
    _token(
        "vault_token",
        b"hvs.",
        rb"[a-z0-9_-]{90,300}",
        description="HashiCorp Vault tokens hvs., hvb., hvr.",
        end=rb"(?![a-z0-9_-])",
    ),
    _token("vault_token", b"hvb.", rb"[a-z0-9_-]{90,400}", end=rb"(?![a-z0-9_-])"),
    _token("vault_token", b"hvr.", rb"[a-z0-9_-]{20,300}", end=rb"(?![a-z0-9_-])"),
    _token(
        "databricks_token",
        b"dapi",
        rb"[0-9a-f]{32}(?:-[0-9])?",
        fold=False,
        description="Databricks access tokens dapi...",
    ),
    _token(
        "langsmith_key",
        b"lsv2_",
        rb"(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}",
        description="LangSmith API keys lsv2_pt_, lsv2_sk_",
    ),
    _token("rubygems_token", b"rubygems_", rb"[0-9a-f]{48}", description="RubyGems API keys rubygems_..."),
    _token("huggingface_token", b"api_org_", rb"[a-z]{34}", check=_body_mixed),
    _token("gitlab_token", b"glffct-", rb"[a-z0-9_-]{20,64}"),
    _token("gitlab_token", b"GR1348941", rb"[A-Za-z0-9_-]{20,64}", fold=False),
    _token("saas_token", b"ntn_", rb"[0-9]{11}[a-z0-9]{35}"),
    _token(
        "jwt",
        b"ZXlK",  # a JWT encoded once more in base64: eyJhbGciOi, eyJ0eXAiOi, eyJraWQiOi
        rb"(?:aGJHY2lPaU|MGVYQWlPaU|cmFXUWlPaU)[A-Za-z0-9+/]{40,16384}={0,2}",
        fold=False,
        word=_WB,
        end=rb"(?![A-Za-z0-9+/=])",
    ),
    _token("mailgun_key", b"pubkey-", rb"[a-f0-9]{32}"),
    _token("stripe_key", b"sk_prod_", rb"[a-z0-9]{10,256}", check=_body_mixed),
    _token("stripe_key", b"rk_prod_", rb"[a-z0-9]{10,256}", check=_body_mixed),
    _token(
        "service_token",
        b"A3-",
        rb"[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
        fold=False,
        description=_SERVICES,
    ),
    _token("service_token", b"ops_", rb"eyj[a-z0-9+/]{200,8192}={0,3}", end=rb"(?![a-z0-9+/=])"),
    _token("service_token", b"p8e-", rb"[a-z0-9]{32}"),
    _token("service_token", b"pat", rb"[A-Za-z0-9]{14}\.[a-f0-9]{64}", fold=False),
    _token("service_token", b"LTAI", rb"[A-Za-z0-9]{20}", fold=False, check=_has_digit),
    _token("service_token", b"AKCp", rb"[A-Za-z0-9]{60,80}", fold=False),
    _token("service_token", b"cmVmd", rb"[A-Za-z0-9]{59}", fold=False, word=_WB, end=rb"(?![A-Za-z0-9+/=])"),
    _token("service_token", b"ATATT3", rb"[A-Za-z0-9_=-]{150,250}", fold=False, end=rb"(?![A-Za-z0-9_=-])"),
    Rule(
        "service_token",
        "",
        b".acc",
        rb"[_-][a-z0-9-]{10,32}\.(?P<s>[a-z0-9+/_=-]{30,120})",
        fold=True,
    ),
    _token(
        "service_token", b"ABSK", rb"[A-Za-z0-9+/]{100,300}={0,2}", fold=False, word=_WB, end=rb"(?![A-Za-z0-9+/=])"
    ),
    _token("service_token", b"bedrock-api-key-", rb"[a-z0-9+/=%_-]{20,8192}", end=rb""),
    Rule(
        "service_token",
        "",
        b"Q~",
        rb"(?<=[0-9]Q~)(?<![A-Za-z0-9_~.][A-Za-z0-9_~.]{3}[0-9]Q~)(?P<s>[A-Za-z0-9_~.-]{31,34})(?![A-Za-z0-9_~.-])",
    ),
    _token("service_token", b"4b1d", rb"[A-Za-z0-9]{38}", fold=False, check=_has_non_hex),
    _token("service_token", b"clojars_", rb"[a-z0-9]{60}"),
    _token("service_token", b"v1.0-", rb"[a-f0-9]{24}-[a-f0-9]{146}", fold=False),
    _token("service_token", b"dnkey-", rb"[a-z0-9=_-]{26}-[a-z0-9=_-]{52}", end=rb"(?![a-z0-9=_-])"),
    _token("service_token", b"dp.", rb"(?:pt|st|ct|sa|scim|audit)\.[a-z0-9]{40,44}"),
    _token("service_token", b"sl.", rb"(?:u\.)?[A-Za-z0-9_=-]{130,1400}", fold=False, end=rb"(?![A-Za-z0-9_=-])"),
    _token("service_token", b"duffel_", rb"(?:test|live)_[a-z0-9_=-]{43}", end=rb"(?![a-z0-9_=-])"),
    _token("service_token", b"dt0c01.", rb"[a-z0-9]{24}\.[a-z0-9]{64}"),
    _token("service_token", b"EZ", rb"(?:AK|TK)[A-Za-z0-9]{54}", fold=False),
    _token(
        "service_token",
        b"EAA",
        rb"(?:[MC][A-Za-z0-9]{100,4096}|A[A-Za-z0-9_-]{22,60})",
        fold=False,
        word=_WB,
        end=rb"(?![A-Za-z0-9+/=_-])",
    ),
    Rule(
        "service_token",
        "",
        b"|",
        rb"(?<=[0-9]{15}\|)(?<![0-9]{17}\|)(?P<s>[0-9a-z_-]{27,40})(?![a-z0-9_-])",
        fold=True,
        check=_body_mixed,
    ),
    _token("service_token", b"flw", rb"(?:seck|pubk)(?:_test)?-[a-h0-9]{12,32}(?:-x)?", end=rb"(?![a-z0-9])"),
    _token("service_token", b"fo1_", rb"[A-Za-z0-9_-]{43}", fold=False, end=rb"(?![A-Za-z0-9_-])"),
    _token(
        "service_token", b"fm", rb"(?:1[ar]|2)_[A-Za-z0-9+/]{100,8192}={0,3}", fold=False, end=rb"(?![A-Za-z0-9+/=])"
    ),
    _token("service_token", b"fio-u-", rb"[a-z0-9_=-]{64}", end=rb"(?![a-z0-9_=-])"),
    _token("service_token", b"glc_", rb"[a-z0-9+/]{32,400}={0,3}", end=rb"(?![a-z0-9+/=])"),
    _token("service_token", b"glsa_", rb"[a-z0-9]{32}_[a-f0-9]{8}"),
    _token("service_token", b"eyJrIjoi", rb"[A-Za-z0-9]{60,400}={0,3}", fold=False, end=rb"(?![A-Za-z0-9=])"),
    Rule(
        "service_token",
        "",
        b"at.",
        rb"(?<=[ps]at\.)(?<![A-Za-z0-9_][ps]at\.)(?P<s>[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20})"
        + _END_ALNUM,
    ),
    Rule("service_token", "", b".atlasv1.", rb"(?P<s>[a-z0-9_=-]{60,70})(?![a-z0-9_=-])", fold=True),
    _token("service_token", b"HRKU-AA", rb"[A-Za-z0-9_-]{58}", fold=False, end=rb"(?![A-Za-z0-9_-])"),
    _token("service_token", b"ico-", rb"[A-Za-z0-9]{32}", fold=False, check=_body_mixed),
    _token("service_token", b"s-s4t2", rb"(?:ud|af)-[a-f0-9]{64}"),
    Rule(
        "service_token",
        "",
        b"-us",
        rb"(?<=[0-9a-f]{32}-us)(?<![a-z0-9_][0-9a-f]{32}-us)[0-9]{1,2}" + _END_ALNUM,
        fold=True,
        handler=_mask_before(32),
    ),
    _token("service_token", b"k.eyJ1", rb"[A-Za-z0-9_-]{40,400}\.[A-Za-z0-9_-]{20,100}", fold=False),
    Rule(
        "service_token",
        "",
        b"_mmk",
        rb"(?<=[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)(?<![A-Za-z0-9_][A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)" + _END_ALNUM,
        handler=_mask_before(36),
    ),
    Rule(
        "service_token",
        "",
        b".webhook.office.com",
        rb"\\?/webhookb2\\?/(?P<s>[a-z0-9@/\\_-]{40,400})",
        fold=True,
    ),
    _token("service_token", b"NR", rb"(?:AK|II|JS)-[A-Za-z0-9-]{19,40}", fold=False, check=_has_digit),
    _token("service_token", b"API-", rb"[A-Z0-9]{26}", fold=False, check=_has_digit),
    _token("service_token", b"sha256~", rb"[a-z0-9_-]{43}", end=rb"(?![a-z0-9_-])"),
    _token("service_token", b"access-", rb"(?:sandbox|development|production)-" + _UUID, end=rb"(?![a-z0-9-])"),
    _token("service_token", b"pscale_", rb"(?:tkn|oauth|pw)_[a-z0-9_=.-]{32,64}", end=rb"(?![a-z0-9_=.-])"),
    _token("service_token", b"PMAK-", rb"[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", fold=False),
    _token("service_token", b"pnu_", rb"[a-z0-9]{36}"),
    _token("service_token", b"pul-", rb"[a-f0-9]{40}", fold=False),
    _token("service_token", b"rdme_", rb"[a-z0-9]{70}"),
    _token("service_token", b"tk-us-", rb"[a-z0-9_-]{48}", end=rb"(?![a-z0-9_-])"),
    _token("service_token", b"xkeysib-", rb"[a-f0-9]{64}-[a-z0-9]{16}"),
    _token("service_token", b"xsmtpsib-", rb"[a-f0-9]{64}-[a-z0-9]{16}"),
    _token("service_token", b"sntrys_", rb"eyj[a-z0-9+/=_]{60,800}", end=rb"(?![a-z0-9+/=_])"),
    _token("service_token", b"sntryu_", rb"[a-f0-9]{64}"),
    _token("service_token", b"sm_", rb"(?:aat|pat|sat)_[a-z0-9]{16}", check=_body_mixed),
    _token("service_token", b"shippo_", rb"(?:live|test)_[a-f0-9]{40}"),
    Rule(
        "service_token",
        "",
        b"__contribsys__com",
        rb"(?:\\{0,3}[\"'])?[ \t]*[=:][ \t]*(?:\\{0,3}[\"'])?(?P<s>[a-f0-9]{8}:[a-f0-9]{8})" + _END_ALNUM,
        fold=True,
    ),
    _token("service_token", b"sq", rb"[upa]_[a-f0-9]{40}", fold=False),
    _token("service_token", b"sgp_", rb"(?:[a-f0-9]{16}_|local_)?[a-f0-9]{40}"),
    _token("service_token", b"sq0", rb"(?:atp|csp)-[a-z0-9_-]{22,60}", end=rb"(?![a-z0-9_-])"),
    _token(
        "service_token",
        b"AAAAAAAAAAAAAAAAAAAAA",
        rb"[A-Za-z0-9%]{60,120}",
        fold=False,
        word=_WB,
        end=rb"(?![A-Za-z0-9%+/=])",
        check=_body_mixed,
    ),
    _token("service_token", b"tfp_", rb"[a-z0-9_.=-]{59}", end=rb"(?![a-z0-9_.=-])"),
    _token("service_token", b"AQVN", rb"[A-Za-z0-9_-]{35,38}", fold=False, end=rb"(?![A-Za-z0-9_-])"),
]


# ---------------------------------------------------------------------------
# Passwords on the command line of well-known tools
# ---------------------------------------------------------------------------

_CMD_END_RE = re.compile(rb"\n|\\n|[;|]|&&")
_FLAG_VALUE = (
    rb"(?:[ \t]+|=)(?:\"(?P<s>[^\"\n\\]{1,256})\"|'(?P<s2>[^'\n\\]{1,256})'"
    rb"|(?P<s3>[^\s\"'\\;|&<>-][^\s\"'\\;|&<>]{0,255}))"
)


def _flag_values(flags: bytes) -> Handler:
    """Handler: mask the value of each of ``flags`` (a case-sensitive regex
    alternative, e.g. ``-p|--password``) up to the end of the command."""
    flag_re = re.compile(rb"[ \t](?:" + flags + rb")" + _FLAG_VALUE)

    def handler(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterator[Span]:
        start = m.end()
        stop = _CMD_END_RE.search(bl, start, start + 2000)
        end = stop.start() if stop is not None else min(len(b), start + 2000)
        for p in flag_re.finditer(b, start, end):
            for name in ("s", "s2", "s3"):
                s, e = p.span(name)
                if e > s and not _is_placeholder(b[s:e]):
                    yield s, e

    return handler


_HTPASSWD_RE = re.compile(
    rb"(?:[ \t]+-[a-zA-Z]{1,8}){0,6}[ \t]+-(?P<f>[a-zA-Z]{0,8}b[a-zA-Z]{0,8})(?:[ \t]+-[a-zA-Z]{1,8}){0,6}"
    rb"(?P<file>[ \t]+[^\s-][^\s]{0,255})?[ \t]+[^\s-][^\s]{0,255}[ \t]+"
    rb"(?:\"(?P<s>[^\"\n\\]{1,256})\"|'(?P<s2>[^'\n\\]{1,256})'|(?P<s3>[^\s\"'\\;|&<>]{1,256}))"
)


def _htpasswd(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterable[Span]:
    """``htpasswd -b[c] FILE USER PASS`` and ``htpasswd -nb USER PASS``: the last argument."""
    p = _HTPASSWD_RE.match(b, m.end())
    if p is None or ("n" in p.group("f").decode()) != (p.group("file") is None):
        return ()
    for name in ("s", "s2", "s3"):
        s, e = p.span(name)
        if e > s and not _is_placeholder(b[s:e]):
            return [(s, e)]
    return ()


_CLI_TOOLS = (
    "passwords given to well-known tools on the command line: docker/podman/nerdctl/buildah/skopeo/helm/oras/"
    "oc/az/cf login -p, redis-cli -a, mongosh/mongo/mongodump -p, htpasswd -b, sqlcmd/bcp -P, ldapsearch... -w, "
    "keytool/jarsigner -storepass/-keypass, smbclient -U user%pass, rabbitmqctl add_user"
)

_CLI_RULES: list[Rule] = [
    Rule(
        "cli_password",
        _CLI_TOOLS,
        b"login",
        rb"(?:(?<=docker login)|(?<=podman login)|(?<=nerdctl login)|(?<=buildah login)|(?<=skopeo login)"
        rb"|(?<=registry login)|(?<=oras login)|(?<=oc login)(?:(?<![a-z0-9_.-]oc login)|(?<=\\[nrt]oc login))"
        rb"|(?<=az login)(?:(?<![a-z0-9_.-]az login)|(?<=\\[nrt]az login))"
        rb"|(?<=cf login)(?:(?<![a-z0-9_.-]cf login)|(?<=\\[nrt]cf login)))",
        fold=True,
        handler=_flag_values(rb"-p|--password"),
    ),
    Rule("cli_password", "", b"redis-cli", rb"", fold=True, handler=_flag_values(rb"-a|--pass")),
    Rule(
        "cli_password",
        "",
        b"mongo",
        rb"(?:sh|dump|restore|import|export|stat|top|files)?(?![a-z0-9_])",
        fold=True,
        handler=_flag_values(rb"-p|--password"),
    ),
    Rule("cli_password", "", b"htpasswd", rb"(?![a-z0-9_.])", fold=True, handler=_htpasswd),
    Rule("cli_password", "", b"sqlcmd", rb"", fold=True, handler=_flag_values(rb"-P")),
    Rule("cli_password", "", b"bcp ", rb"", fold=True, handler=_flag_values(rb"-P")),
    Rule(
        "cli_password",
        "",
        b"ldap",
        rb"(?:search|add|modify|delete|whoami|passwd|compare|modrdn|exop)(?![a-z0-9_])",
        fold=True,
        handler=_flag_values(rb"-w"),
    ),
    Rule(
        "cli_password",
        "",
        b"keytool",
        rb"",
        fold=True,
        handler=_flag_values(rb"-(?:src|dest|new)?(?:store|key)pass"),
    ),
    Rule(
        "cli_password",
        "",
        b"jarsigner",
        rb"",
        fold=True,
        handler=_flag_values(rb"-(?:store|key)pass"),
    ),
    Rule(
        "cli_password",
        "",
        b"smbclient",
        rb"(?:(?!smbclient)[^\n;|]){0,500}?[ \t](?:-U|--user)[ \t=]+[\"']?[^\s%\"']{1,64}%(?P<s>[^\s\"']{1,256})",
        fold=False,
        check=_group_not_placeholder("s"),
    ),
    Rule(
        "cli_password",
        "",
        b"rabbitmqctl",
        rb"[ \t]+(?:add_user|change_password)[ \t]+[\"']?[^\s\"']{1,128}[\"']?[ \t]+"
        rb"(?:[\"'](?P<s>[^\"'\n]{1,256})[\"']|(?P<s2>[^\s\"'\\;|&]{1,256}))",
        fold=True,
        check=_group_not_placeholder("s", "s2"),
    ),
]


# ---------------------------------------------------------------------------
# Session cookies by name, and curl -b
# ---------------------------------------------------------------------------


def _session_value(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
    s, e = m.span(g + "s")
    return _looks_random(b[s:e])


_CURL_COOKIE_RE = re.compile(rb"[ \t](?:-b|--cookie)(?:[ \t]+|=)(?:\\{0,3}[\"'])?")


def _curl_cookies(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterator[Span]:
    """``curl -b 'name=value; name2=value2'``: every cookie value (a cookie jar
    file name, without ``=``, is left alone)."""
    start = m.end()
    stop = _CMD_END_RE.search(bl, start, start + 4000)
    end = stop.start() if stop is not None else min(len(b), start + 4000)
    for c in _CURL_COOKIE_RE.finditer(b, start, end):
        pos = c.end()
        while pos < end:
            p = _COOKIE_PAIR_RE.match(b, pos, end)
            if p is None:
                break
            s, e = p.span("v")
            if not _is_placeholder(b[s:e]):
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


# ---------------------------------------------------------------------------
# Configuration pairs whose key is a separate attribute
# ---------------------------------------------------------------------------

_NAME_ATTR_RE = re.compile(
    rb"(?<![a-z0-9_])(?:key|name)(?:\\{0,3}[\"'])?[ \t]*[=:][ \t]*(?:\\{0,3}[\"'])?(?P<n>[a-z0-9_.:-]{2,80})"
)
_PAIR_GAP_RE = re.compile(rb"(?:\\[nrt]|[\s\"'\\,;{}-]){0,40}")
_SECRET_NAME_RE = re.compile(
    rb"pass(?:word|wd|phrase)?|pwd|secret|token|credential|auth|connection[_.-]?string"
    rb"|(?:api|access|private|signing|encryption|master|license|account|client|app)[_.-]?key"
)
_NOT_SECRET_NAME_RE = re.compile(
    rb".*[_.-]?(?:name|id|url|uri|file|path|type|count|length|size|endpoint|user|username|expiry|expires|ttl)"
)
_PAIR_VALUE_RE = re.compile(rb"[^\s\"'<>,;}\]\\]{1,4096}")


def _config_pair(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterable[Span]:
    """``<add key="ApiKey" value="..."/>``, ``{"name": "DB_PASSWORD", "value": "..."}``,
    ``- name: API_KEY\\n  value: ...``: a value whose sibling key or name attribute names a secret."""
    start = m.start()
    near = None
    for found in _NAME_ATTR_RE.finditer(bl, max(0, start - 200), start):
        near = found  # the last name before this value
    if near is None or not _PAIR_GAP_RE.fullmatch(bl, near.end(), start):
        return ()
    name = near.group("n")
    if not _SECRET_NAME_RE.search(name) or _NOT_SECRET_NAME_RE.fullmatch(name):
        return ()
    vpos = m.end()
    quoted = _quoted_value(b, vpos)
    if quoted is not None:
        s, e = quoted
    else:
        v = _PAIR_VALUE_RE.match(b, vpos)
        if v is None:
            return ()
        s, e = v.span()
    value = b[s:e]
    if e <= s or _is_placeholder(value) or _is_expression(value):
        return ()
    if _DIGITS_RE.fullmatch(value) and len(value) < 12:
        return ()  # {"name": "max_tokens", "value": "4096"}: a setting, not a secret
    return [(s, e)]


_CONFIG_PAIR_RULES: list[Rule] = [
    Rule(
        "config_pair",
        'configuration pairs whose key is a separate attribute: <add key="ApiKey" value="..."/> (.NET, NuGet), '
        '{"key": "api_key", "value": "..."} and {"name": "DB_PASSWORD", "value": "..."} (JSON), '
        "- name: API_KEY / value: ... (YAML: Kubernetes, ECS, CI variables)",
        b"value",
        _not_after_word(b"value") + rb"(?:\\{0,3}[\"'])?[ \t]*[=:][ \t]*",
        fold=True,
        handler=_config_pair,
    ),
]


RULES: list[Rule] = [
    # --- "p": password, passwd, passphrase, pass, pwd; sshpass; pypi- -------
    Rule(
        "sshpass",
        "sshpass -p PASS",
        b"p",
        rb"ass(?<=sshpass)[ \t]+(?:-[a-oq-z](?:[ \t]*[^\s-][^\s]{0,255})?[ \t]+){0,4}(?P<f>-p)[ \t]*"
        rb"(?:[\"'](?P<s>[^\"'\n\\]{1,256})[\"']|(?P<s2>[^\s\"'\\]{1,256}))",
        fold=True,
        check=_all(_orig_at(1, b"p", "f"), _group_not_placeholder("s", "s2")),
    ),
    _kw("password", b"p", rb"ass(?:word|wd|phrase)?s?[0-9]*(?P<k>)", (b"pass", b"password", b"passwd", b"passphrase")),
    _kw("password", b"p", rb"wd[0-9]*(?P<k>)", (b"pwd",)),
    Rule(
        "netrc",
        ".netrc entries: machine host login user password PASS",
        b"p",
        rb"assword(?<![a-z0-9_.-]password)[ \t]+(?P<s>[^\s\"'\\]{1,256})"
        rb"(?=[ \t]*(?:[\r\n\"'`<\\]|\Z|(?:account|machine|login|default|macdef)[ \t]))",
        fold=True,
        check=_netrc_check,
    ),
    Rule(
        "private_key",
        "",
        b"p",
        rb"rivate-lines:[ \t]*[0-9]{1,4}",
        fold=True,
        handler=_putty,
    ),
    # --- "k": token, key, cookie; sk-, sk-ant-, sk_live_, SK..., key-, dckr_ -
    Rule(
        "azure_storage_key",
        "Azure storage AccountKey= and SharedAccessKey= values",
        b"k",
        rb"ey(?:(?<=accountkey)|(?<=sharedaccesskey))(?:[ \t]*=[ \t]*|%3d|%253d)"
        rb"(?P<s>(?:[a-z0-9+/]|%2[bf]|%252[bf]){20,256}(?:=|%3d|%253d){0,2})",
        fold=True,
    ),
    Rule(
        "age_secret_key",
        "age encryption secret keys AGE-SECRET-KEY-1...",
        b"k",
        rb"ey-1(?<=age-secret-key-1)(?P<s>[a-z0-9]{58})(?![a-z0-9])",
        fold=True,
    ),
    Rule(
        "mailgun_key",
        "Mailgun API keys key-...",
        b"k",
        rb"ey-" + _not_after_word(b"key-", rb"a-z0-9_-") + rb"(?P<s>[a-f0-9]{32})(?![a-z0-9_])",
        fold=True,
    ),
    _kw("key", b"k", rb"ey[0-9]*(?P<k>)", (b"key",)),
    Rule(
        "cookie",
        "Cookie and Set-Cookie headers and --cookie values (session tokens)",
        b"k",
        rb"ie(?<=cookie)(?:\\{0,3}[\"'])?(?:[ \t]*[:=][ \t]*(?:\\{0,3}[\"'])?|(?<=-cookie)(?P<ws>[ \t]+)[\"']?)",
        fold=True,
        handler=_cookie,
        back=3,
    ),
    _kw("token", b"k", rb"en(?<=token)[0-9]*(?P<k>)", (b"token",), back=2),
    Rule(
        "anthropic_key",
        "Anthropic keys sk-ant-...",
        b"k",
        rb"-(?<=sk-)ant-(?:[a-z]{2,8}[0-9]{2}-)?(?P<s>" + _B64U + rb"{20,512})",
        fold=True,
        check=_orig_at(-1, b"sk-ant-"),
    ),
    Rule(
        "openai_key",
        "OpenAI keys sk-, sk-proj-, sk-svcacct-, sk-admin-",
        b"k",
        rb"-(?<=sk-)"
        + _not_after_word(b"sk-", rb"a-z0-9_")
        + rb"(?:(?:proj|svcacct|admin|none)-)?(?P<s>"
        + _B64U
        + rb"{32,512})",
        fold=True,
        check=_all(_orig_at(-1, b"sk-"), _body_mixed),
    ),
    Rule(
        "stripe_key",
        "Stripe secret and restricted keys sk_live_, sk_test_, rk_live_, rk_test_, webhook secrets whsec_",
        b"k",
        rb"_(?<=[rs]k_)(?:(?<![a-z0-9][rs]k_)|(?<=\\[nrtbf][rs]k_)|(?<=%[0-9a-f]{2}[rs]k_))(?:live|test)_(?P<s>[a-z0-9]{10,256})",
        fold=True,
        check=_body_mixed,
    ),
    Rule(
        "twilio",
        "Twilio account SIDs AC..., API key SIDs SK..., and a 32-hex auth token right after a SID",
        b"k",
        rb"(?<=sk)" + _not_after_word(b"sk", rb"a-z0-9_") + rb"(?P<s>[0-9a-f]{32})(?![a-z0-9_])",
        fold=True,
        check=_orig_at(-1, b"SK"),
    ),
    Rule(
        "dockerhub_token",
        "Docker Hub access tokens dckr_pat_, dckr_oat_",
        b"k",
        rb"r_(?<=dckr_)(?:pat|oat)_(?P<s>[a-z0-9_-]{20,256})",
        fold=True,
    ),
    # --- "c": secret, credentials; curl -u ----------------------------------
    _kw("secret", b"c", rb"ret(?<=secret)[0-9]*(?P<k>)", (b"secret",), back=2),
    _kw("cred", b"c", rb"red(?:ential)?s?(?P<k>)", (b"cred", b"creds", b"credential", b"credentials")),
    Rule(
        "curl_user",
        "curl -u user:pass and --user user:pass",
        b"c",
        rb"url(?:(?!curl)(?:[^\n\\]|\\(?s:.))){0,2000}?[ \t](?:-u|--user)(?:[ \t]+|=)?[\"']?"
        rb"(?P<u>[^\s:\"'$\\]{1,256}):(?P<s>[^\s\"'\\]{1,256})",
        fold=True,
        check=_group_not_placeholder("s"),
    ),
    Rule(
        "discord_bot_token",
        "Discord bot tokens in text that mentions discord",
        b"c",
        rb"ord(?<=discord)",
        fold=True,
        handler=_discord,
    ),
    # --- "uth": auth, Authorization ----------------------------------------
    Rule(
        "authorization_header",
        "Authorization / Proxy-Authorization header values (Bearer, Basic, token, Bot...)",
        b"uth",
        rb"orization(?<=authorization)(?:\\{0,3}[\"'])?[ \t]*[:=][ \t]*(?P<oq>\\{0,3}[\"'])?[ \t]*"
        rb"(?:(?P<sc>bearer|basic|token|bot|digest|negotiate|ntlm|apikey|api-key|sso-key|key|jwt|aws4-hmac-sha256)"
        rb"[ \t]+)?"
        rb"(?P<s>[^\s\"'\\,;<>{}]{1,4096}(?:[ \t]*,[ \t]*[a-z]{1,32}=[^\s\"'\\,;<>]{1,512}){0,8})",
        fold=True,
        check=_auth_header_check,
    ),
    _kw("auth", b"uth", rb"(?<=auth)(?P<k>)", (b"auth",), back=1),
    # --- "://": URLs -----------------------------------------------------------
    Rule(
        "sentry_dsn",
        "Sentry DSN keys https://<key>@o1.ingest.sentry.io/1",
        b"://",
        rb"(?P<s>[0-9a-f]{32})(?::[0-9a-f]{32})?@",
        fold=True,
    ),
    Rule(
        "slack_webhook",
        "Slack incoming-webhook and workflow URLs",
        b"://",
        rb"hooks\.slack\.com\\?/(?:services|workflows|triggers)\\?/(?P<s>[a-z0-9/_\\-]{8,256})",
        fold=True,
    ),
    Rule(
        "discord_webhook",
        "Discord webhook URLs",
        b"://",
        rb"(?:ptb\.|canary\.)?discord(?:app)?\.com\\?/api\\?/(?:v[0-9]+\\?/)?webhooks\\?/[0-9]{5,30}\\?/"
        rb"(?P<s>[a-z0-9_-]{20,256})",
        fold=True,
    ),
    Rule(
        "url_userinfo",
        "passwords in URL user-info scheme://user:pass@host, including database URLs "
        "(postgres, mysql, mongodb, redis, amqp, mssql...)",
        b"://",
        rb"(?P<u>[^\s:/?#@\"'<>\\\[\]]{0,256}):(?P<s>[^\s/?#\"'<>\\]{1,256})@(?=[a-z0-9\[])",
        fold=True,
        check=_group_not_placeholder("s"),
    ),
    # --- "_": ghp_ gho_ ghu_ ghs_ ghr_ github_pat_ npm_ hf_ do?_v1_ ------------
    Rule(
        "github_token",
        "GitHub tokens ghp_, gho_, ghu_, ghs_, ghr_ and github_pat_",
        b"_",
        rb"(?<=gh[pousr]_)(?P<s>[a-z0-9]{36,255})(?![a-z0-9_])",
        fold=True,
        check=_orig_at(-3, b"gh"),
        guard=rb"(?<=[pousrmf8ta]_)",
    ),
    Rule("github_token", "", b"_", rb"pat_(?<=github_pat_)(?P<s>[a-z0-9_]{22,255})", fold=True),
    Rule(
        "npm_token",
        "npm tokens npm_...",
        b"_",
        rb"(?<=npm_)(?P<s>[a-z0-9]{36})(?![a-z0-9_])",
        fold=True,
        guard=rb"(?<=[pousrmf8ta]_)",
    ),
    Rule(
        "huggingface_token",
        "Hugging Face tokens hf_...",
        b"_",
        rb"(?<=hf_)" + _not_after_word(b"hf_", rb"a-z0-9_") + rb"(?P<s>[a-z0-9]{30,40})(?![a-z0-9_])",
        fold=True,
        check=_body_mixed,
        guard=rb"(?<=[pousrmf8ta]_)",
    ),
    Rule(
        "ai_provider_key",
        "AI provider keys: Groq gsk_, xAI xai-, Perplexity pplx-, Replicate r8_, Tavily tvly-",
        b"k",
        rb"_(?<=gsk_)(?P<s>[a-z0-9]{40,64})(?![a-z0-9_])",
        fold=True,
        check=_body_mixed,
    ),
    Rule(
        "ai_provider_key",
        "",
        b"_",
        rb"(?<=r8_)" + _not_after_word(b"r8_", rb"a-z0-9_") + rb"(?P<s>[a-z0-9]{30,40})(?![a-z0-9_])",
        fold=True,
        check=_body_mixed,
        guard=rb"(?<=[pousrmf8ta]_)",
    ),
    Rule(
        "saas_token",
        "Linear lin_api_, Shopify shpat_/shpca_/shppa_/shpss_, Notion secret_ tokens",
        b"_",
        rb"api_(?<=lin_api_)(?P<s>[a-z0-9]{40})(?![a-z0-9_])",
        fold=True,
    ),
    Rule(
        "saas_token",
        "",
        b"_",
        rb"(?:(?<=shpat_)|(?<=shpca_)|(?<=shppa_)|(?<=shpss_))(?P<s>[a-f0-9]{32})(?![a-z0-9_])",
        fold=True,
        guard=rb"(?<=[pousrmf8ta]_)",
    ),
    Rule(
        "saas_token",
        "",
        b"c",
        rb"ret_(?<=secret_)(?P<s>[a-z0-9]{43})(?![a-z0-9_])",
        fold=True,
        check=_body_mixed,
    ),
    Rule("stripe_key", "", b"c", rb"_(?<=whsec_)(?P<s>[a-z0-9+/]{24,64})", fold=True),
    Rule(
        "digitalocean_token",
        "DigitalOcean tokens dop_v1_, doo_v1_, dor_v1_",
        b"_",
        rb"v1_(?<=do[opr]_v1_)(?P<s>[a-f0-9]{64})(?![a-z0-9_])",
        fold=True,
    ),
    # --- "x": Slack -----------------------------------------------------------
    Rule(
        "slack_token",
        "Slack tokens xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxe- and app tokens xapp-",
        b"x",
        rb"(?:ox[abeoprs]|app)-(?P<s>[a-z0-9-]{10,512})",
        fold=True,
    ),
    Rule(
        "ai_provider_key",
        "",
        b"x",
        rb"ai-" + _not_after_word(b"xai-", rb"a-z0-9_-") + rb"(?P<s>[a-z0-9]{60,100})(?![a-z0-9_])",
        fold=True,
        check=_body_mixed,
    ),
    Rule(
        "ai_provider_key",
        "",
        b"x",
        rb"-(?<=pplx-)(?P<s>[a-z0-9]{40,64})(?![a-z0-9_])",
        fold=True,
        check=_body_mixed,
    ),
    # --- "y": ya29. and mysql -p ---------------------------------------------
    Rule(
        "google_oauth_token",
        "Google OAuth access tokens ya29....",
        b"y",
        rb"a29\.(?P<s>" + _B64U + rb"{20,4096})",
        fold=True,
    ),
    Rule(
        "ai_provider_key",
        "",
        b"y",
        rb"-(?<=tvly-)(?:dev-|prod-)?(?P<s>[a-z0-9]{20,64})(?![a-z0-9_])",
        fold=True,
        check=_body_mixed,
    ),
    Rule(
        "pypi_token",
        "PyPI upload tokens pypi-AgE...",
        b"y",
        rb"pi-(?<=pypi-)(?P<s>age" + _B64U + rb"{50,4096})",
        fold=True,
        check=_orig_at(0, b"AgE", "s"),
    ),
    Rule(
        "mysql_password",
        "mysql -pPASS and -p PASS (mysql, mysqldump, mysqladmin, mariadb...)",
        b"y",
        rb"sql(?<=mysql)(?:dump|admin|import|sh|check)?",
        fold=True,
        handler=_mysql,
    ),
    # --- "b": Bearer, -----BEGIN ... PRIVATE KEY-----, mariadb -p -------------
    Rule(
        "bearer_token",
        "Bearer tokens outside an Authorization header",
        b"b",
        rb"earer[ \t]+(?P<s>[a-z0-9._~+/-]{16,4096}=*)",
        fold=True,
        check=_group_not_placeholder("s"),
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
    Rule("mysql_password", "", b"b", rb"(?<=mariadb)(?:-dump|-admin)?", fold=True, handler=_mysql),
    # --- "g": SendGrid SG., Azure SAS sig= ----------------------------------
    Rule(
        "sendgrid_key",
        "SendGrid API keys SG.xxx.yyy",
        b"g",
        rb"\.(?<=sg\.)(?P<s>" + _B64U + rb"{16,32}\." + _B64U + rb"{16,64})",
        fold=True,
        check=_orig_at(-1, b"SG."),
    ),
    Rule(
        "gitlab_token",
        "GitLab tokens glpat-, gldt-, glrt-, glptt-, glsoat-, glcbt-, glft-, glimt-, gloas-, glagent-",
        b"g",
        rb"l(?:pat|dt|rt|ptt|soat|cbt|ft|imt|oas|agent)-"
        + rb"(?<![a-z0-9_]gl)".replace(b"gl)", b"gl)")
        + rb"(?P<s>[a-z0-9_.-]{20,256})",
        fold=True,
        check=_orig_at(0, b"gl"),
    ),
    Rule(
        "azure_sas_signature",
        "Azure SAS signatures sig=...",
        b"g",
        rb"=(?<![a-z0-9_]sig=)(?<=sig=)(?P<s>[a-z0-9%+/=]{16,512})",
        fold=True,
    ),
    # --- "y" also: JWT ----------------------------------------------------------
    Rule(
        "jwt",
        "JSON Web Tokens eyJ... (and JWE)",
        b"y",
        rb"j(?<=eyj)(?P<s>" + _B64U + rb"{8,8192}\.ey" + _B64U + rb"{8,16384}(?:\." + _B64U + rb"{0,8192}){1,3}=*)",
        fold=True,
        check=_orig_at(-1, b"eyJ"),
    ),
    # --- "A" (case-sensitive): AWS, AIza, Twilio AC, Telegram ----------------
    Rule(
        "aws_secret_key",
        "AWS secret access keys: 40 base64 characters within 300 bytes after an access key id "
        "(aws_secret_access_key=... is masked by secret_assignment too)",
        b"A",
        rb"(?:KIA"
        + _not_after_word(b"AKIA", rb"A-Za-z0-9+/")
        + rb"|SIA"
        + _not_after_word(b"ASIA", rb"A-Za-z0-9+/")
        + rb")(?P<s>[A-Z0-9]{16})"
        + _END_ALNUM
        + rb"(?s:.){0,300}?(?<=[\s,;:=|\"'>])(?P<s2>(?:[A-Za-z0-9+]|\\?/){40})(?![A-Za-z0-9/+=])",
        check=_group_not_placeholder("s"),  # AWS's documented AKIAIOSFODNN7EXAMPLE
    ),
    Rule(
        "aws_access_key_id",
        "AWS access key ids AKIA..., ASIA..., AGPA..., AIDA..., AROA... and A3T...",
        b"A",
        rb"(?:3T[A-Z0-9]|KIA|SIA|GPA|IDA|ROA|IPA|NPA|NVA|BIA|CCA)(?P<s>[A-Z0-9]{16})" + _END_ALNUM,
        check=_group_not_placeholder("s"),
    ),
    Rule(
        "google_api_key",
        "Google API keys AIza...",
        b"A",
        rb"Iza(?P<s>[A-Za-z0-9_-]{35})(?![A-Za-z0-9_-])",
    ),
    Rule(
        "twilio",
        "",
        b"A",
        rb"C"
        + _not_after_word(b"AC")
        + rb"(?P<s>[a-f0-9]{32})"
        + _END_ALNUM
        + rb"(?:[^\n]{0,100}?(?<![A-Za-z0-9])(?P<s2>[a-f0-9]{32})(?![A-Za-z0-9]))?",
    ),
    Rule(
        "telegram_bot_token",
        "Telegram bot tokens (digits:AA...): their exact shape anywhere, looser ones in text that mentions telegram",
        b"A",
        rb"A(?:(?<=[0-9]:AA)|(?<=[0-9]%3AAA)|(?<=[0-9]%253AAA))[A-Za-z0-9_-]{31,40}(?![A-Za-z0-9_-])",
        handler=_telegram,
    ),
]

RULES.extend(_SERVICE_RULES + _CLI_RULES + _SESSION_COOKIE_RULES + _CONFIG_PAIR_RULES)
# URLs written with JSON's escaped slashes (PHP's json_encode: postgres:\/\/app:pw@db\/prod): the same rules
RULES.extend([replace(rule, scan=b":\\/\\/") for rule in RULES if rule.scan == b"://"])

_ASSIGNMENT_DESCRIPTION = (
    "values beside secret-like key names (password, passwd, pwd, passphrase, secret, token, api_key, "
    "apikey, client_secret, access_key, private_key, auth, credentials, *_KEY...) after = : := => or as "
    "--flag value, in JSON (also escaped), YAML, TOML, INI, XML, .env and export lines, source code "
    "and headers such as X-Api-Key"
)

#: Kinds that another rule covers, listed in docs/redaction.md.
_COVERED_BY_OTHER_RULES = {
    "database_url": "database URLs with a password (postgres, mysql, mongodb, redis, ...): url_userinfo",
    "env_export": ".env lines and `export NAME=value` with secret-like names: secret_assignment",
    "pgpassword": "PGPASSWORD=... : secret_assignment",
    "gcp_service_account": 'GCP service-account JSON "private_key": private_key',
    "putty_private_key": "PuTTY .ppk Private-Lines: private_key",
}

#: kind -> description: every kind of secret ``redact`` masks.
KINDS: dict[str, str] = {}
for _r in RULES:
    if _r.kind == "secret_assignment":
        KINDS.setdefault(_r.kind, _ASSIGNMENT_DESCRIPTION)
    elif _r.description:
        KINDS.setdefault(_r.kind, _r.description)
KINDS.update(_COVERED_BY_OTHER_RULES)
KINDS = dict(sorted(KINDS.items()))


# ---------------------------------------------------------------------------
# Compiling the table into one regex per scan literal
# ---------------------------------------------------------------------------

_GROUP_DEF = re.compile(rb"\(\?P<([A-Za-z_][A-Za-z0-9_]*)>")
_GROUP_REF = re.compile(rb"\(\?P=([A-Za-z_][A-Za-z0-9_]*)\)")


@dataclass
class _Scanner:
    fold: bool
    scan: bytes
    rare: bool
    regex: re.Pattern
    rules: dict[str, tuple[Rule, list[str]]]  # group name -> (rule, mask group names)


def _prefixed_groups(pattern: bytes, pfx: bytes) -> bytes:
    """``pattern`` with every group name (and back-reference) prefixed by ``pfx``."""
    pattern = _GROUP_DEF.sub(lambda m: b"(?P<" + pfx + m.group(1) + b">", pattern)
    return _GROUP_REF.sub(lambda m: b"(?P=" + pfx + m.group(1) + b")", pattern)


def _compile(rules: list[Rule]) -> list[_Scanner]:
    grouped: dict[tuple, list[Rule]] = {}
    for rule in rules:
        grouped.setdefault((rule.fold, rule.scan, rule.rare), []).append(rule)
    scanners = []
    n = 0
    for (fold, scan, rare), members in grouped.items():
        alts = []
        guarded: dict[bytes, list[bytes]] = {}
        table: dict[str, tuple[Rule, list[str]]] = {}
        for rule in members:
            name = f"r{n}"
            n += 1
            pfx = name.encode() + b"_"
            src = _prefixed_groups(rule.pattern, pfx)
            # An empty group closing each alternative names the rule that
            # matched (m.lastgroup) and marks where it ended, without hiding
            # the alternative's leading literal from the engine's fast check.
            alt = src + b"(?P<" + name.encode() + b">)"
            if rule.guard:
                if rule.guard not in guarded:
                    guarded[rule.guard] = []
                    alts.append(rule.guard)  # placeholder, filled below
                guarded[rule.guard].append(alt)
            else:
                alts.append(alt)
            masks = [f"{name}_{g.decode()}" for g in _GROUP_DEF.findall(rule.pattern) if re.fullmatch(rb"s[0-9]*", g)]
            table[name] = (rule, masks)
        # alternatives sharing a guard: guard(?:alt|alt...), so a scan stop
        # that fails the guard costs one lookbehind, not one per alternative
        alts = [a + b"(?:" + b"|".join(guarded[a]) + b")" if a in guarded else a for a in alts]
        regex = re.compile(re.escape(scan) + b"(?:" + b"|".join(alts) + b")")
        scanners.append(_Scanner(fold, scan, rare, regex, table))
    return scanners


_SCANNERS = _compile(RULES)
_SCAN_PLAN = [
    (
        sc.fold,
        sc.rare,
        sc.scan,
        sc.regex.search,
        {name: (rule, masks, rule.check, rule.handler) for name, (rule, masks) in sc.rules.items()},
    )
    for sc in _SCANNERS
]


# ---------------------------------------------------------------------------
# Needles: which scanners can match a text at all
# ---------------------------------------------------------------------------
#
# Every match of a scanner's regex holds (or its lookarounds see) one of a few
# literals, its needles, read off the compiled regex with re's own parser, so
# they cannot drift from the rules.  One Hyperscan pass over a text reports
# the scanners with a needle in it; the others cannot match and are skipped.
# Hyperscan is only this prefilter: the regexes and checks still decide.

_NEEDLE_CAP = 64  # strings in one set at most; past that the set is given up
_EMPTY = frozenset([b""])  # the empty string: as needles, found in every text


@dataclass(frozen=True)
class _Lits:
    """What is known of the matches of a parsed regex item: ``exact`` holds
    every string it matches (None: too many), each match starts with one of
    ``pre``, the text up to its end ends with one of ``suf``, and one of
    ``req`` occurs in every text it matches in."""

    exact: frozenset | None
    pre: frozenset
    suf: frozenset
    req: frozenset


_UNKNOWN = _Lits(None, _EMPTY, _EMPTY, _EMPTY)


def _cross(a: frozenset | None, b: frozenset | None) -> frozenset | None:
    """Each string of ``a`` followed by each of ``b`` (None past the cap)."""
    if a is None or b is None or len(a) * len(b) > _NEEDLE_CAP:
        return None
    return frozenset(x + y for x in a for y in b)


def _union(sets: list) -> frozenset | None:
    if any(s is None for s in sets) or sum(map(len, sets)) > _NEEDLE_CAP:
        return None
    return frozenset().union(*sets)


def _shortest(s: frozenset | None, implied: Callable[[bytes, bytes], bool]) -> frozenset | None:
    """``s`` without the strings that ``implied(x, other)`` says another one covers
    (starting with ``ab`` implies starting with ``a``): fewer, shorter strings
    join better with what comes next."""
    if s is None:
        return None
    return frozenset(x for x in s if not any(o != x and implied(x, o) for o in s))


def _selectivity(s: frozenset) -> tuple:
    """Longer needles are rarer, up to 4 bytes; past that, fewer is better."""
    n = min(map(len, s))
    return min(n, 4), -len(s), n


def _best(*sets: frozenset | None) -> frozenset:
    return max((s for s in sets if s is not None), key=_selectivity, default=_EMPTY)


def _class_bytes(items: list) -> frozenset | None:
    """The bytes of a small character class (``[pousr]``, ``[0-9a-f]``), else None."""
    out: set[int] = set()
    for op, av in items:
        if op is _sre.LITERAL:
            out.add(av)
        elif op is _sre.RANGE and av[1] - av[0] < 16:
            out.update(range(av[0], av[1] + 1))
        else:
            return None  # negated, a category such as \s, a wide range
    return frozenset(bytes([c]) for c in out) if len(out) <= 16 else None


def _fixed(strings: frozenset, left: frozenset) -> _Lits:
    """An item matching one of ``strings``, after text ending with one of ``left``."""
    after = _cross(left, strings) or strings
    return _Lits(strings, strings, after, after)


def _item(op, av, left: frozenset) -> _Lits:
    """_Lits of one parsed item; the text before it ends with one of ``left``.
    Anything not understood here is _UNKNOWN, which is always true."""
    if op is _sre.LITERAL:
        return _fixed(frozenset([bytes([av])]), left)
    if op is _sre.IN:
        chars = _class_bytes(av)
        return _UNKNOWN if chars is None else _fixed(chars, left)
    if op is _sre.SUBPATTERN:
        return _UNKNOWN if av[1] & _sre.SRE_FLAG_IGNORECASE else _seq(av[3], left)
    if op is _sre.ATOMIC_GROUP:
        return _seq(av, left)
    if op is _sre.BRANCH:
        alts = [_seq(alt, left) for alt in av[1]]
        return _Lits(
            _union([a.exact for a in alts]),
            _shortest(_union([a.pre for a in alts]), bytes.startswith) or _EMPTY,
            _shortest(_union([a.suf for a in alts]), bytes.endswith) or _EMPTY,
            _union([a.req for a in alts]) or _EMPTY,
        )
    if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT):
        lo, hi, sub = av
        return _repeat(lo, hi, sub, left)
    if op is _sre.ASSERT:
        direction, sub = av
        if direction < 0:  # a lookbehind: its match ends here
            inner = _seq(sub, _EMPTY)
            return _Lits(_EMPTY, _EMPTY, _best(left, inner.suf), inner.req)
        return _Lits(_EMPTY, _EMPTY, left, _seq(sub, left).req)
    if op is _sre.ASSERT_NOT or op is _sre.AT:
        return _Lits(_EMPTY, _EMPTY, left, _EMPTY)
    return _UNKNOWN


def _power(strings: frozenset | None, n: int) -> frozenset | None:
    """Every string made of ``n`` strings of ``strings`` (None past the cap)."""
    out: frozenset | None = _EMPTY
    for _ in range(n):
        out = _cross(out, strings)
        if out is None:
            break
    return out


def _repeat(lo: int, hi: int, sub: list, left: frozenset) -> _Lits:
    if lo == 0:
        return _UNKNOWN
    first = _seq(sub, left)
    exact = _power(first.exact, lo) if lo == hi else None
    if exact is not None:
        fixed = _fixed(exact, left)
        return _Lits(exact, exact, fixed.suf, _best(first.req, fixed.req))
    # one repetition at least: starts like the first, ends like the last
    last = first if left is _EMPTY else _seq(sub, _EMPTY)
    return _Lits(None, first.pre, last.suf, first.req)


def _seq(items: list, left: frozenset) -> _Lits:
    """_Lits of items matched one after the other (zero-width ones add nothing)."""
    exact: frozenset | None = _EMPTY
    pre = None
    suf, req = left, _EMPTY
    for op, av in items:
        it = _item(op, av, suf)
        joined = _cross(exact, it.exact)
        if joined is None and pre is None and exact is not None:
            pre = _cross(exact, it.pre) or exact  # the exact run ends here
        exact = joined
        suf = it.suf
        req = _best(req, it.req)
    return _Lits(exact, pre or exact or _EMPTY, suf, req)


def _needles(regex: re.Pattern) -> frozenset:
    """Literals one of which occurs in every text ``regex`` matches in (lookarounds
    included); ``{b""}`` when none is known."""
    if regex.flags & re.IGNORECASE:
        return _EMPTY
    req = _seq(_sre_parse.parse(regex.pattern, regex.flags).data, _EMPTY).req
    return _shortest(req, bytes.__contains__) or _EMPTY  # a needle holding another adds nothing


def _hs_literal(needle: bytes) -> bytes:
    """A needle as a Hyperscan expression: every byte escaped, none a metacharacter."""
    return b"".join(b"\\x%02x" % c for c in needle)


def _prefilter(scanners: list[_Scanner]) -> tuple[Any, list[int]]:
    """(a Hyperscan database reporting, as its id, the index of each scanner with
    a needle in a text; indexes of the scanners that always run).  Folded
    scanners' needles are matched ASCII-caseless in the original bytes, which
    finds all that an exact search of ``bytes.lower()`` would."""
    every = list(range(len(scanners)))
    if hyperscan is None:
        return None, every
    always, ids, exprs, flags = [], [], [], []
    for i, sc in enumerate(scanners):
        needles = _needles(sc.regex)
        if b"" in needles:
            always.append(i)
            continue
        ids.append(i)
        exprs.append(b"|".join(_hs_literal(n) for n in sorted(needles)))
        flags.append(hyperscan.HS_FLAG_SINGLEMATCH | (hyperscan.HS_FLAG_CASELESS if sc.fold else 0))
    if not ids:
        return None, every
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=flags)
    except hyperscan.error:  # a CPU Hyperscan does not support: scan as without it
        return None, every
    return db, always


_NEEDLE_DB, _ALWAYS = _prefilter(_SCANNERS)
_THREAD = threading.local()


def _on_needle(index: int, start: int, end: int, flags: int, found: list) -> None:
    """Hyperscan's match handler: a needle of scanner ``index`` is in the text."""
    found.append(index)


def _plan_for(b: bytes) -> list:
    """The _SCAN_PLAN entries, in order, of the scanners that can match ``b``."""
    if _NEEDLE_DB is None:
        return _SCAN_PLAN
    try:
        scratch = _THREAD.scratch
    except AttributeError:  # a scan writes to its scratch: one per thread
        scratch = _THREAD.scratch = hyperscan.Scratch(_NEEDLE_DB)
    found = list(_ALWAYS)
    _NEEDLE_DB.scan(b, _on_needle, 0, found, scratch)  # data, handler, flags, context, scratch (keywords cost more)
    if not found:
        return found
    found.sort()
    return [_SCAN_PLAN[i] for i in found]


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    """What rules may know of an entry beyond the part of its text being redacted: the
    CONTEXT_WORDS its whole text mentions (decided once per entry by ``context_of``)."""

    words: frozenset[bytes] = frozenset()


def _context_db() -> Any:
    """A Hyperscan database reporting, as its id, the index of each CONTEXT_WORDS word in a text."""
    if hyperscan is None:
        return None
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    flags = [hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_SINGLEMATCH] * len(CONTEXT_WORDS)
    try:
        db.compile(
            expressions=[_hs_literal(w) for w in CONTEXT_WORDS],
            ids=list(range(len(CONTEXT_WORDS))),
            elements=len(CONTEXT_WORDS),
            flags=flags,
        )
    except hyperscan.error:
        return None
    return db


_CONTEXT_DB = _context_db()


def context_of(text: str) -> Context:
    """The Context of an entry from its whole text: one caseless pass for the CONTEXT_WORDS
    (GB/s with Hyperscan), so every part of the entry is redacted as the whole would be."""
    return _context_of_bytes(text.encode("utf-8", "surrogatepass"))


def _context_of_bytes(b: bytes) -> Context:
    if _CONTEXT_DB is None:
        bl = b.lower()
        return Context(frozenset(w for w in CONTEXT_WORDS if w in bl))
    try:
        scratch = _THREAD.context_scratch
    except AttributeError:
        scratch = _THREAD.context_scratch = hyperscan.Scratch(_CONTEXT_DB)
    found: list[int] = []
    _CONTEXT_DB.scan(b, _on_needle, 0, found, scratch)
    return Context(frozenset(CONTEXT_WORDS[i] for i in found))


def _spans(b: bytes, context: Context | None = None) -> list[Span]:
    """What to mask in ``b``: the whole text of an entry, or a part of one whose ``context`` is given."""
    plan = _plan_for(b)
    searches = [_CONTEXT_SEARCHES[w] for w in context.words if w in _CONTEXT_SEARCHES] if context else []
    if not plan and not searches:
        return []  # most texts: no scanner can match, not even lower() runs
    bl = b.lower()
    spans: list[Span] = []
    ctx: dict = {"context": context}
    for fold, rare, scan, search, rules in plan:
        hay = bl if fold else b
        if rare and scan not in hay:
            continue
        m = search(hay)  # usually None: one C call, no iterator
        while m is not None:
            name = m.lastgroup
            rule, masks, check, handler = rules[name]
            g = name + "_"
            if check is None or check(m, g, b, bl):
                if handler is not None:
                    spans.extend(handler(rule, m, g, b, bl, ctx))
                else:
                    for mg in masks:
                        s, e = m.span(mg)
                        if e > s:
                            spans.append((s, e))
            m = search(hay, m.end())  # lookbehinds still see bytes before pos
    for tokens in searches:  # the entry mentions the word, maybe outside this part
        spans.extend(tokens(b, ctx))
    return spans


def _whole_chars(b: bytes, s: int, e: int) -> Span:
    """A span widened to whole UTF-8 characters: a rule's length cap can end one inside a
    character, and masking half of it would leave bytes that do not decode."""
    while s > 0 and (b[s] & 0xC0) == 0x80:
        s -= 1
    n = len(b)
    while e < n and (b[e] & 0xC0) == 0x80:
        e += 1
    return s, e


def _apply(b: bytes, spans: list[Span]) -> bytes:
    spans = sorted(_whole_chars(b, s, e) for s, e in spans)
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


def redact(text: str, context: Context | None = None) -> str:
    """Return ``text`` with secrets replaced by ``[REDACTED]`` (key names and
    token prefixes stay visible).  ``text`` is an entry's whole text, or a part
    of one whose ``context_of`` is given (better: ``redact_part``)."""
    if not text:
        return text
    if len(text) > SLICE_CHARS:
        return redact_part(text, 0, len(text), context)
    b = text.encode("utf-8", "surrogatepass")
    spans = _spans(b, context)
    if not spans:
        return text
    return _apply(b, spans).decode("utf-8", "surrogatepass")


def redact_part(text: str, start: int, end: int, context: Context | None = None) -> str:
    """Characters ``start`` to ``end`` of ``text`` as ``redact(text)`` shows them (a secret
    crossing an end is masked), without redacting all of a large text: the part is scanned
    with SLICE_OVERLAP bytes either side, which holds any rule's reach, and the entry's
    ``context`` (computed here from all of ``text`` when not given)."""
    start, end = max(0, start), min(len(text), end)
    if start >= end:
        return ""
    a = max(0, start - SLICE_OVERLAP)  # characters: at least as many bytes
    z = min(len(text), end + SLICE_OVERLAP)
    b = text[a:z].encode("utf-8", "surrogatepass")
    if context is None:
        context = _context_of_bytes(b) if a == 0 and z == len(text) else context_of(text)
    lo = len(text[a:start].encode("utf-8", "surrogatepass"))
    hi = len(b) - len(text[end:z].encode("utf-8", "surrogatepass"))
    out: list[bytes] = []
    pos = lo
    for s, e in _masked(b, lo, hi, context):
        out.append(b[pos:s])
        out.append(_MASK_B)
        pos = e
    if pos == lo:
        return text[start:end]
    out.append(b[pos:hi])
    return b"".join(out).decode("utf-8", "surrogatepass")


def _masked(b: bytes, lo: int, hi: int, context: Context) -> Iterator[Span]:
    """The masked spans of ``b`` that meet bytes ``lo`` to ``hi``, merged, in order, cut to
    that range.  It goes in slices of about SLICE_CHARS bytes, each scanned with SLICE_OVERLAP
    bytes either side; a span belongs to the slice it starts in (or meets the first), and
    merging as slices come keeps memory per slice, not per text."""
    n = len(b)
    cur_s = cur_e = -1  # the mask being extended
    for s0, e0 in _slice_bounds(b, lo, hi, SLICE_CHARS):
        a, z = max(0, s0 - SLICE_OVERLAP), min(n, e0 + SLICE_OVERLAP)
        piece = b if a == 0 and z == n else b[a:z]
        first = s0 == lo
        found = sorted(
            _whole_chars(b, s + a, e + a)
            for s, e in _spans(piece, context)
            if s + a < e0 and e + a > s0 and (first or s + a >= s0)
        )
        for s, e in found:
            s, e = max(s, lo), min(e, hi)
            if s <= cur_e:
                if e > cur_e:
                    cur_e = e
                continue
            if cur_e >= 0:
                yield cur_s, cur_e
            cur_s, cur_e = s, e
    if cur_e >= 0:
        yield cur_s, cur_e


def _slice_bounds(b: bytes, lo: int, hi: int, size: int) -> Iterator[tuple[int, int]]:
    """(start, end) byte offsets of consecutive slices of bytes ``lo`` to ``hi`` of about
    ``size`` bytes, each ending at a line end when there is one nearby."""
    start = lo
    while start < hi:
        target = start + size
        if target >= hi:
            yield start, hi
            return
        nl = b.find(b"\n", target, min(hi, target + SLICE_OVERLAP // 2))
        if nl < 0:
            nl = b.rfind(b"\n", start + size // 2, target)
        end = nl + 1 if nl >= 0 else target
        while end < hi and (b[end] & 0xC0) == 0x80:  # never inside a UTF-8 sequence
            end += 1
        yield start, end
        start = end
