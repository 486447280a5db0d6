"""URLs: passwords in user-info (``scheme://user:pass@host``), Sentry DSN keys, Slack and Discord webhooks;
also written with JSON's escaped slashes (``postgres:\\/\\/app:pw@db``)."""

from __future__ import annotations

from dataclasses import replace

from pimem_index.redaction.rule import Rule
from pimem_index.redaction.values import group_not_placeholder

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
        check=group_not_placeholder("s"),
    ),
]

# URLs written with JSON's escaped slashes (PHP's json_encode: postgres:\/\/app:pw@db\/prod): the same rules
RULES: list[Rule] = _PLAIN + [replace(rule, scan=b":\\/\\/") for rule in _PLAIN]
