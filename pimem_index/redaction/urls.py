"""URLs: passwords in user-info (``scheme://user:pass@host``), Sentry DSN keys, Slack and Discord webhooks;
also written with JSON's escaped slashes (``postgres:\\/\\/app:pw@db``, escaped again up to four backslashes)
and user-info URL-encoded (``https%3A%2F%2Fuser%3Apass%40host``, up to three times)."""

from __future__ import annotations

import re
from dataclasses import replace
from urllib.parse import unquote_to_bytes

from pimem_index.redaction.rule import Rule
from pimem_index.redaction.values import group_not_placeholder, is_placeholder

_PLAIN: list[Rule] = [
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
        rb"hooks\.slack\.com\\{0,2}/(?:services|workflows|triggers)\\{0,2}/(?P<s>[a-z0-9/_\\-]{8,256})",
        fold=True,
    ),
    Rule(
        "discord_webhook",
        "Discord webhook URLs",
        b"://",
        rb"(?:ptb\.|canary\.)?discord(?:app)?\.com\\{0,2}/api\\{0,2}/(?:v[0-9]+\\{0,2}/)?webhooks\\{0,2}/[0-9]{5,30}\\{0,2}/"
        rb"(?P<s>[a-z0-9_-]{20,256})",
        fold=True,
    ),
    Rule(
        "url_userinfo",
        "passwords in URL user-info scheme://user:pass@host, including database URLs "
        "(postgres, mysql, mongodb, redis, amqp, mssql...), also URL-encoded (up to three times) "
        "or with JSON's escaped slashes (up to four backslashes)",
        b"://",
        rb"(?P<u>[^\s:/?#@\"'<>\\\[\]]{0,256}):(?P<s>[^\s/?\"'<>\\]{1,256})@(?=[a-z0-9\[])",
        fold=True,
        check=group_not_placeholder("s"),
    ),
]


def _encoded_userinfo(pct: bytes) -> bytes:
    """Pattern after an encoded ``://``: ``user%3Apass%40`` where every reserved character is written
    ``pct`` and two hex digits (``%`` once encoded, ``%25`` twice)."""
    plain = rb"[^\s%:/?#@\"'<>\\&=]"
    user = rb"(?:" + plain + rb"|" + pct + rb"(?!3a|40|2f)[0-9a-f]{2})"
    password = rb"(?:" + plain + rb"|" + pct + rb"(?!40|2f)[0-9a-f]{2})"
    return rb"(?P<u>" + user + rb"{0,256})" + pct + rb"3a(?P<s>" + password + rb"{1,256})" + pct + rb"40(?=[a-z0-9\[%])"


def _decoded_not_placeholder(m: re.Match, g: str, b: bytes, bl: bytes) -> bool:
    """The password, decoded (twice at most), is not a placeholder (``%24TOKEN`` is ``$TOKEN``)."""
    s, e = m.span(g + "s")
    return not is_placeholder(unquote_to_bytes(unquote_to_bytes(b[s:e])))


_ENCODED: list[Rule] = [
    Rule("url_userinfo", "", scan, _encoded_userinfo(pct), fold=True, check=_decoded_not_placeholder)
    for scan, pct in ((b"%3a%2f%2f", b"%"), (b"%253a%252f%252f", b"%25"), (b"%25253a%25252f%25252f", b"%2525"))
]

# URLs written with JSON's escaped slashes (PHP's json_encode: postgres:\/\/app:pw@db\/prod), escaped again
# (a JSON string inside another): the same rules
RULES: list[Rule] = (
    _PLAIN
    + [replace(rule, scan=b":\\/\\/") for rule in _PLAIN]
    + [replace(rule, scan=b":\\\\/\\\\/") for rule in _PLAIN]
    + [replace(rule, scan=b":\\\\\\/\\\\\\/") for rule in _PLAIN]  # and escaped again: \\\/
    + [replace(rule, scan=b":\\\\\\\\/\\\\\\\\/") for rule in _PLAIN]  # \\\\/
    + _ENCODED
)
