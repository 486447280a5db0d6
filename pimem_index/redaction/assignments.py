"""Key names beside a value: ``password=...``, ``"api_key": "..."``, ``--token x``, ``<password>...``,
Authorization headers and Bearer tokens, .netrc entries, and configuration pairs whose key is a separate
attribute (``{"name": "DB_PASSWORD", "value": "..."}``).  One handler reads the value after the key name
and decides whether it is a secret or code, a placeholder, a type, a count."""

from __future__ import annotations

import re
from collections.abc import Iterable

from pimem_index.redaction.rule import Rule, Span, not_after_word
from pimem_index.redaction.values import (
    DIGITS_RE,
    ENTITY_QUOTE,
    HAS_DIGIT_RE,
    IDENT_RE,
    entity_quoted,
    group_not_placeholder,
    is_expression,
    is_placeholder,
    looks_random,
    quoted_value,
)

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


_KEY_ESCAPES = (b"%5f", b"%2d", b"%2e")  # _ - . URL-encoded inside a key name (api%5Fkey)
_TO_EOL_RE = re.compile(rb"(?:[^\r\n\\#]|(?<![ \t])#){0,4096}")
_CONCAT_RE = re.compile(rb"^[ \t]*\+[ \t]|[ \t]\+[ \t]*$")
_WORDS_RE = re.compile(rb"[a-z][a-z _-]{0,40}")
# a type after "name:": CamelCase or dotted, maybe generic, then , = ) | or the end
_ANNOTATION_RE = re.compile(
    rb"(?:[a-z_][a-z0-9_]*\.)*[A-Z][A-Za-z]*[a-z][A-Za-z]*(?:\[[^\]\n]{0,200}\])?[ \t]*(?:[,=)|]|$)"
)
_TEMPLATE_RE = re.compile(rb"\$?\{[A-Za-z_][A-Za-z0-9_.]*\}")
_CODE_HINT_RE = re.compile(rb"[\"'(\[\]{}]|\)(?![A-Za-z0-9])| [-+*/%|&<>=]=? |->| (?:if|else|or|and|not|in|is) ")
_DOC_HEAD_RE = re.compile(rb"(?::param|:type|@param|:arg|:raises?)[ \t]")
_AUTH_TUPLE_RE = re.compile(
    rb"(?:HTTP(?:Basic|Digest)Auth)?\([ \t]*[\"'][^\"'\n]{0,256}[\"'][ \t]*,[ \t]*[\"'](?P<s>[^\"'\n]{1,256})[\"']"
)


# a call that sets its first (or second) argument to the next one: os.Setenv("API_KEY", ...),
# localStorage.setItem(...), define(...), ENV.store(...), setattr(self, "token", ...)
_SETTER_CALL_RE = re.compile(
    rb"(?:(?<![a-z0-9_])|(?<=\\[nrt]))(?:(?:set|put|store|define)[a-z0-9_]*|[a-z0-9_]*(?:setenv|putenv))"
    rb"[ \t]*\((?:[ \t]*[a-z_][a-z0-9_.]*[ \t]*,)?[ \t]*\\{0,3}[\"']\Z"
)


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
    sep = m.group(g + "sep") or (b"," if m.start(g + "cs") >= 0 else None)
    vpos = m.start(g + "v")
    if m.start(g + "ws") >= 0:
        # ``--password value``: only command-line flags take a space.
        if not prefix.startswith(b"-"):
            return None
    if m.start(g + "sub") >= 0 and sep != b"=":
        return None  # os.environ["DB_PASSWORD"] = ...: a subscript is set with =
    if sep == b"," and not _SETTER_CALL_RE.search(bl, max(0, kstart - 80), kstart):
        return None  # ("username", "password", "email"): a list of names, not setenv("PASSWORD", "...")
    before = bl[kstart - 1] if kstart else 0x0A
    if before == 0x24 and sep == b":":
        return None  # $STRIPE_KEY: (a shell expansion before a colon), not a key
    if (before == 0x3A and (sep == b":" or bl[kstart - 2 : kstart - 1] == b":")) or (
        before == 0x3C and bl[kstart - 3 : kstart - 1] == b"?p"
    ):
        # arn:aws:secretsmanager:...:secret:name, AWS::IAM::AccessKey, (?P<access_key>...): names,
        # not assignments; $env:TOKEN=..., :password => ..., x:api_key=... are
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
        if is_placeholder(value) or (not strong and not looks_random(value)):
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
        if t is not None and not is_placeholder(t.group("s")):
            return t.span("s")
    quoted = quoted_value(b, vpos) or entity_quoted(bl, vpos)
    if quoted is not None:
        vstart, vend = quoted
    elif before == 0x7B or sep == b",":
        return None  # f"{token:02x}" (a format), setItem("token", token); {password: "..."} is quoted
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
    if is_placeholder(value.rstrip(b"'\",;")):
        return None
    if value.startswith(b"-----BEGIN"):
        return None  # the private_key rule masks it and keeps its label
    bare = value.rstrip(b",;")
    if IDENT_RE.fullmatch(bare) and bare.lower().replace(b"-", b"_").endswith(kw.replace(b"-", b"_")):
        return None  # password=password, token=auth_token, "input_token": "next_token": a name
    if _TEMPLATE_RE.search(value):
        return None  # f"share-{portfolio_id}", `${token}`: interpolated at run time
    if quoted is not None and _CONCAT_RE.search(value):
        return None  # "TOKEN=" + prefix + "...": the quotes close and reopen a code string
    if (
        quoted is None
        and m.start(g + "kq") >= 0
        and IDENT_RE.fullmatch(bare)
        and not (m.start(g + "sub") >= 0 and HAS_DIGIT_RE.search(bare))
    ):
        return None  # {"password": pw_var}: JSON would quote a string, so this is code
    if (family in ("token", "key", "auth", "cred") or (kw == b"pass" and sep == b":")) and _WORDS_RE.fullmatch(value):
        return None  # "input_token": "marker", "session-token": machine secrets are not plain words
    if quoted is None:
        if is_expression(bare) or (to_eol and _CODE_HINT_RE.search(value)):
            return None
        if sep == b":" and (_TYPE_WORDS_RE.fullmatch(bare.lower()) or _ANNOTATION_RE.match(value)):
            return None  # password: str, private_key: SSHPrivateKeyTypes, auth: t.Any = None
        if sep == b"=" and bl[vpos - 1] in b" \t" and IDENT_RE.fullmatch(bare) and not HAS_DIGIT_RE.search(bare):
            return None  # token = prev, self.password = password_var: code assigns a variable
    if kw == b"pwd" and prefix in (b"", b"old") and value[:1] in b"/~":
        return None  # PWD=/home/user
    if DIGITS_RE.fullmatch(value) and (len(value) < 4 or (family != "password" and len(value) < 12)):
        return None  # usage counts, ids, flags
    if not strong:
        # "sort_key": "name" is not a secret; a long random value is.
        if not looks_random(value):
            return None
    p = _VISIBLE_PREFIX_RE.match(value)
    if p is not None and p.end() < len(value):
        vstart += p.end()  # GITHUB_TOKEN=ghp_[REDACTED]: keep the token's prefix
    return vstart, vend


def _auth_header_check(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
    s, e = m.span(g + "s")
    value = b[s:e]
    if is_placeholder(value):
        return False
    if m.start(g + "sc") < 0 and m.start(g + "oq") < 0:
        # authorization = self.headers.get(...), 'Authorization': auth: code
        bare = value.rstrip(b",;")
        if is_expression(bare) or (IDENT_RE.fullmatch(bare) and not HAS_DIGIT_RE.search(bare)):
            return False
    return True


def _netrc_check(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
    """``password x`` (no separator) is a .netrc entry when ``machine`` or
    ``login`` comes shortly before it."""
    s = m.start()
    window = bl[max(0, s - 300) : s]
    return (
        b"login " in window
        and (b"machine " in window or b"default " in window)
        and not is_placeholder(b[m.start(g + "s") : m.end(g + "s")])
    )


_FLAG_COMPOUNDS = (b"api", b"auth", b"access", b"client", b"secret", b"db", b"admin", b"root", b"user", b"bot")


def _flag_lb(*words: bytes) -> bytes:
    """Lookbehind: the keyword just matched ends a command-line flag
    (``--password``, ``--db-password``, ``--api_key``, ``--apitoken``)."""
    alts = []
    for w in words:
        alts.append(rb"(?<=[-_]" + re.escape(w) + rb")")
        alts.extend(rb"(?<=-" + c + re.escape(w) + rb")" for c in _FLAG_COMPOUNDS)
    return rb"(?:" + rb"|".join(alts) + rb")"


_STATEMENT = (
    rb"(?:return|var|let|const|if|else|for|while|do|function|this|new|throw|break|continue|try|catch|switch|case"
    rb"|async|await|yield|delete|typeof|void|echo|export|cd|then|fi|done)"
)
# An unquoted value: runs of value characters (matched fast), joined by a ; or & with no whitespace
# before and a value character after, unless the next item of a query or connection string follows
# (&next=, ;Encrypt=), an HTML entity (&quot;) or a statement (minified code: x=l;return); or by a )
# before a letter or digit (pa)ss, not connect(password=x).cursor()).
_VALUE_RUN = rb"[^\s\"'`,;&<>)\]}\\|]"
_VALUE = (
    _VALUE_RUN
    + rb"{0,4096}+(?:(?:[;&](?="
    + _VALUE_RUN
    + rb")(?![a-z_][a-z0-9_.-]{0,64}=|#?[a-z0-9]{1,10};|"
    + _STATEMENT
    + rb"\b)|\)(?=[a-z0-9]))"
    + _VALUE_RUN
    + rb"{1,4096}+){0,64}+"
)


def _kw(family: str, scan: bytes, pattern: bytes, flag_words: tuple[bytes, ...], back: int = 0) -> Rule:
    """A secret_assignment rule: ``pattern`` continues the keyword after the
    scan literal and ends with an empty group ``k`` at the keyword's end;
    ``back`` is how many keyword bytes precede the scan literal."""
    sep = (
        # the closing quote of the key, maybe escaped, and of a subscript: os.environ["DB_PASSWORD"]
        rb"(?:(?P<kq>\\{0,3}[\"']|" + ENTITY_QUOTE + rb")(?P<sub>\])?)?"
        rb"(?:[ \t]*(?P<sep>=>|:=|=(?!=)|:(?![:/])|>|%3d|&#x3d;|&#0*61;|&equals;)[ \t]*|"
        # a quoted name and a quoted value as a setter's arguments: setenv("API_KEY", "...")
        rb"(?<=[\"'])[ \t]*(?P<cs>,)[ \t]*(?=\\{0,3}[\"'])|" + _flag_lb(*flag_words) + rb"(?P<ws>[ \t]+))"
    )
    # The value is consumed (possessively) so the scan resumes after it:
    # "password=password=..." costs one match, not one per repetition.
    value = rb"(?P<v>(?:\\{0,3}[\"'`])?" + _VALUE + rb")"
    return Rule(
        "secret_assignment",
        "",
        scan,
        pattern + _KEY_END + sep + value,
        fold=True,
        handler=_assignment,
        back=back,
        family=family,
        shape=pattern + _KEY_END + sep,  # a key name then a separator: the value may be empty
    )


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
    quoted = quoted_value(b, vpos)
    if quoted is not None:
        s, e = quoted
    else:
        v = _PAIR_VALUE_RE.match(b, vpos)
        if v is None:
            return ()
        s, e = v.span()
    value = b[s:e]
    if e <= s or is_placeholder(value) or is_expression(value):
        return ()
    if DIGITS_RE.fullmatch(value) and len(value) < 12:
        return ()  # {"name": "max_tokens", "value": "4096"}: a setting, not a secret
    return [(s, e)]


# ---------------------------------------------------------------------------
# Lines where whitespace separates a variable's name from its value
# ---------------------------------------------------------------------------

# the start of a line or of a command: a line break (maybe escaped), a quote (a JSON string, a shell -c
# argument), a shell separator, a tag, a key's = or : (command = ..., run: ...)
_LINE_HEAD_RE = re.compile(rb"(?:\A|\n|\\n|[\"'`;|&>=:])[ \t]*(?P<cmd>set|)\Z")
_ENV_LINE_VALUE_RE = re.compile(rb"[^\s\"'\\;&|]{1,4096}")


def _env_line(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterable[Span]:
    """``ENV API_KEY value`` (a Dockerfile's legacy form), ``setenv DB_PASSWORD value`` (csh) and
    ``set -gx API_TOKEN value`` (fish): the value, when the line starts so and the name is a secret's."""
    head = _LINE_HEAD_RE.search(bl, max(0, m.start() - 64), m.start())
    if head is None or (head.group("cmd") and rule.scan != b"env "):
        return ()  # the line starts with ENV, setenv or set -x
    name = m.group(g + "n")
    if not _SECRET_NAME_RE.search(name) or _NOT_SECRET_NAME_RE.fullmatch(name):
        return ()
    vpos = m.end()
    quoted = quoted_value(b, vpos)
    if quoted is None:
        v = _ENV_LINE_VALUE_RE.match(b, vpos)
        if v is None:
            return ()
        quoted = v.span()
    s, e = quoted
    value = b[s:e]
    if e <= s or is_placeholder(value) or is_expression(value) or (DIGITS_RE.fullmatch(value) and len(value) < 12):
        return ()
    return [(s, e)]


_NAME_THEN_VALUE = rb"(?P<n>[a-z_][a-z0-9_]{0,64})[ \t]+(?=[^\s])"

_ENV_LINE_RULES: list[Rule] = [
    Rule("secret_assignment", "", b"env ", rb"[ \t]*" + _NAME_THEN_VALUE, fold=True, handler=_env_line),
    Rule(
        "secret_assignment",
        "",
        b"set -",
        rb"(?:-?[a-z]+)(?:[ \t]+-{1,2}[a-z]+)*[ \t]+" + _NAME_THEN_VALUE,
        fold=True,
        handler=_env_line,
    ),
]

_VALUE_KEY = not_after_word(b"value") + rb"(?:\\{0,3}[\"'])?[ \t]*[=:][ \t]*"

_CONFIG_PAIR_RULES: list[Rule] = [
    Rule(
        "config_pair",
        'configuration pairs whose key is a separate attribute: <add key="ApiKey" value="..."/> (.NET, NuGet), '
        '{"key": "api_key", "value": "..."} and {"name": "DB_PASSWORD", "value": "..."} (JSON), '
        "- name: API_KEY / value: ... (YAML: Kubernetes, ECS, CI variables)",
        b"value",
        _VALUE_KEY,
        fold=True,
        handler=_config_pair,
        shape=_VALUE_KEY,  # all of it: JSON's "value": and YAML's value: hold no secret without a name near
    ),
]

ASSIGNMENT_DESCRIPTION = (
    "values beside secret-like key names (password, passwd, pwd, passphrase, secret, token, api_key, "
    "apikey, client_secret, access_key, private_key, auth, credentials, *_KEY...) after = : := => or as "
    "--flag value, in JSON (also escaped), YAML, TOML, INI, XML, .env and export lines, source code "
    "and headers such as X-Api-Key"
)


# An Authorization header's name and separator: what the prefilter looks for (auth is a common word).
_AUTHORIZATION = rb"orization(?<=authorization)(?:\\{0,3}[\"'])?[ \t]*[:=]"

RULES: list[Rule] = (
    [
        _kw(
            "password",
            b"p",
            rb"ass(?:word|wd|phrase)?s?[0-9]*(?P<k>)",
            (b"pass", b"password", b"passwd", b"passphrase"),
        ),
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
        _kw("key", b"k", rb"ey[0-9]*(?P<k>)", (b"key",)),
        _kw("token", b"k", rb"en(?<=token)[0-9]*(?P<k>)", (b"token",), back=2),
        _kw("secret", b"c", rb"ret(?<=secret)[0-9]*(?P<k>)", (b"secret",), back=2),
        _kw("cred", b"c", rb"red(?:ential)?s?(?P<k>)", (b"cred", b"creds", b"credential", b"credentials")),
        Rule(
            "authorization_header",
            "Authorization / Proxy-Authorization header values (Bearer, Basic, token, Bot...)",
            b"uth",
            _AUTHORIZATION + rb"[ \t]*(?P<oq>\\{0,3}[\"'])?[ \t]*"
            rb"(?:(?P<sc>bearer|basic|token|bot|digest|negotiate|ntlm|apikey|api-key|sso-key|key|jwt|aws4-hmac-sha256)"
            rb"[ \t]+)?"
            rb"(?P<s>[^\s\"'\\,;<>{}]{1,4096}(?:[ \t]*,[ \t]*[a-z]{1,32}=[^\s\"'\\,;<>]{1,512}){0,8})",
            fold=True,
            check=_auth_header_check,
            shape=_AUTHORIZATION,
        ),
        _kw("auth", b"uth", rb"(?<=auth)(?P<k>)", (b"auth",), back=1),
        Rule(
            "bearer_token",
            "Bearer tokens outside an Authorization header",
            b"b",
            rb"earer[ \t]+(?P<s>[a-z0-9._~+/-]{16,4096}=*)",
            fold=True,
            check=group_not_placeholder("s"),
        ),
    ]
    + _CONFIG_PAIR_RULES
    + _ENV_LINE_RULES
)
