"""Command lines: passwords given to well-known tools as arguments (``mysql -pPASS``, ``sshpass -p``,
``curl -u user:pass``, ``docker login -p``, ``htpasswd -b``...), up to the end of the command."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from pimem_index.redaction.rule import Handler, Rule, Span, all_of, not_after_word, orig_at
from pimem_index.redaction.values import group_not_placeholder, is_placeholder, looks_random

# an unquoted argument: a ; or & inside it (no whitespace before, more after) is part of it
_ARG = rb"[^\s\"'\\;|&<>-](?:[^\s\"'\\;|&<>]|[;&](?=[^\s\"'\\;|&<>])){0,255}"
_MYSQL_P_RE = re.compile(
    rb"[ \t]-p(?:(?P<s>" + _ARG + rb")|[\"'](?P<s2>[^\"'\n\\]{1,256})[\"']"
    rb"|[ \t]+(?P<s3>" + _ARG + rb"))"
)
_COMMAND_END_RE = re.compile(rb"\n|\\n|;(?![^\s])|\||&&|mysql|mariadb")


def _mysql(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterator[Span]:
    """``-pPASS``, ``-p'PASS'`` and ``-p PASS`` up to the end of the command
    (case-sensitive: ``-P`` is the port)."""
    start = m.end()
    stop = _COMMAND_END_RE.search(bl, start, start + 2000)
    end = stop.start() if stop is not None else min(len(b), start + 2000)
    for p in _MYSQL_P_RE.finditer(b, start, end):
        for name in ("s", "s2", "s3"):
            s, e = p.span(name)
            if e > s and not is_placeholder(b[s:e]):
                yield s, e


# ---------------------------------------------------------------------------
# Passwords on the command line of well-known tools
# ---------------------------------------------------------------------------

# a ; ends a command only before whitespace: inside a word (-ppa;ss) it is part of a value
CMD_END_RE = re.compile(rb"\n|\\n|;(?![^\s])|\||&&")
_FLAG_VALUE = (
    rb"(?:[ \t]+|=)(?:\"(?P<s>[^\"\n\\]{1,256})\"|'(?P<s2>[^'\n\\]{1,256})'"
    rb"|(?P<s3>" + _ARG + rb"))"
)


def _flag_values(flags: bytes) -> Handler:
    """Handler: mask the value of each of ``flags`` (a case-sensitive regex
    alternative, e.g. ``-p|--password``) up to the end of the command."""
    flag_re = re.compile(rb"[ \t](?:" + flags + rb")" + _FLAG_VALUE)

    def handler(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterator[Span]:
        start = m.end()
        stop = CMD_END_RE.search(bl, start, start + 2000)
        end = stop.start() if stop is not None else min(len(b), start + 2000)
        for p in flag_re.finditer(b, start, end):
            for name in ("s", "s2", "s3"):
                s, e = p.span(name)
                if e > s and not is_placeholder(b[s:e]):
                    yield s, e

    return handler


_HTPASSWD_RE = re.compile(
    rb"(?:[ \t]+-[a-zA-Z]{1,8}){0,6}[ \t]+-(?P<f>[a-zA-Z]{0,8}b[a-zA-Z]{0,8})(?:[ \t]+-[a-zA-Z]{1,8}){0,6}"
    rb"(?P<file>[ \t]+[^\s\"'\\;|&<>-][^\s\"'\\;|&<>]{0,255})?[ \t]+[^\s\"'\\;|&<>-][^\s\"'\\;|&<>]{0,255}[ \t]+"
    rb"(?:\"(?P<s>[^\"\n\\]{1,256})\"|'(?P<s2>[^'\n\\]{1,256})'|(?P<s3>[^\s\"'\\;|&<>]{1,256}))"
)


def _htpasswd(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterable[Span]:
    """``htpasswd -b[c] FILE USER PASS`` and ``htpasswd -nb USER PASS``: the last argument."""
    p = _HTPASSWD_RE.match(b, m.end())
    if p is None or ("n" in p.group("f").decode()) != (p.group("file") is None):
        return ()
    for name in ("s", "s2", "s3"):
        s, e = p.span(name)
        if e > s and not is_placeholder(b[s:e]):
            return [(s, e)]
    return ()


def _credential_flag(command: bytes, flags: bytes, after: bytes = b"") -> bytes:
    """Pattern, right after the literal ``command`` (not glued to a word before it) and ``after``: the rest
    of its line up to one of ``flags`` and its ``user:password``, either part maybe empty (``-u KEY:``,
    ``-u :TOKEN``)."""
    return (
        not_after_word(command, rb"a-z0-9_./-")
        + after
        + rb"(?:(?!"
        + command.strip()
        + rb"[ \t])(?:[^\n\\]|\\(?s:.))){0,2000}?(?<=[ \t])(?:"
        + flags
        + rb")(?:[ \t]+|=)?[\"']?(?P<u>[^\s:\"'`\\]{0,256}):(?P<s>[^\s\"'`\\]{0,256})"
    )


def _user_password(rule: Rule, m: re.Match, g: str, b: bytes, bl: bytes, ctx: dict) -> Iterable[Span]:
    """The password of ``user:password``; with an empty password, the user when it is a key (machine-made:
    ``-u KEY:``), not a name (``-u admin:``)."""
    s, e = m.span(g + "s")
    if e > s:
        return () if is_placeholder(b[s:e]) else [(s, e)]
    s, e = m.span(g + "u")
    return [(s, e)] if e > s and looks_random(b[s:e]) and not is_placeholder(b[s:e]) else ()


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
        check=group_not_placeholder("s"),
    ),
    Rule(
        "cli_password",
        "",
        b"rabbitmqctl",
        rb"[ \t]+(?:add_user|change_password)[ \t]+[\"']?[^\s\"']{1,128}[\"']?[ \t]+"
        rb"(?:[\"'](?P<s>[^\"'\n]{1,256})[\"']|(?P<s2>[^\s\"'\\;|&]{1,256}))",
        fold=True,
        check=group_not_placeholder("s", "s2"),
    ),
]


RULES: list[Rule] = [
    Rule(
        "sshpass",
        "sshpass -p PASS",
        b"p",
        rb"ass(?<=sshpass)[ \t]+(?:-[a-oq-z](?:[ \t]*[^\s-][^\s]{0,255})?[ \t]+){0,4}(?P<f>-p)[ \t]*"
        rb"(?:[\"'](?P<s>[^\"'\n\\]{1,256})[\"']|(?P<s2>[^\s\"'\\]{1,256}))",
        fold=True,
        check=all_of(orig_at(1, b"p", "f"), group_not_placeholder("s", "s2")),
    ),
    Rule(
        "curl_user",
        "user:password on the command line of curl (-u, --user) and HTTPie or xh (-a, --auth), also with an empty "
        "part: -u KEY: (a key as the user, as Stripe documents) and -u :TOKEN",
        b"c",
        rb"url" + _credential_flag(b"curl", rb"-u|--user"),
        fold=True,
        handler=_user_password,
    ),
    *(
        Rule("curl_user", "", command, _credential_flag(command, rb"-a|--auth"), fold=True, handler=_user_password)
        for command in (b"http ", b"https ", b"xh ", b"xhs ")  # HTTPie and xh: the space keeps URLs out
    ),
    Rule(
        "mysql_password",
        "mysql -pPASS and -p PASS (mysql, mysqldump, mysqladmin, mariadb...)",
        b"y",
        rb"sql(?<=mysql)(?:dump|admin|import|sh|check)?",
        fold=True,
        handler=_mysql,
    ),
    Rule("mysql_password", "", b"b", rb"(?<=mariadb)(?:-dump|-admin)?", fold=True, handler=_mysql),
] + _CLI_RULES
