"""The rule table: every family's rules in one list, and ``KINDS``, each kind of secret with a line that
says what it is (docs/redaction.md lists them).  Imported on first use of ``redact``, not at import."""

from __future__ import annotations

from pimem_index.redaction import assignments, commands, cookies, structured, tokens, urls
from pimem_index.redaction.assignments import ASSIGNMENT_DESCRIPTION
from pimem_index.redaction.rule import Rule

# Rules sharing a scan literal are tried in this order at one position (the first that matches wins):
# a token's own rule before the key names (AccountKey= is an Azure key, not any *key=).
RULES: list[Rule] = [*tokens.RULES, *assignments.RULES, *cookies.RULES, *commands.RULES, *urls.RULES]
RULES += structured.RULES

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
        KINDS.setdefault(_r.kind, ASSIGNMENT_DESCRIPTION)
    elif _r.description:
        KINDS.setdefault(_r.kind, _r.description)
KINDS.update(_COVERED_BY_OTHER_RULES)
KINDS = dict(sorted(KINDS.items()))
