"""A redaction corpus generated at test time.

Secrets are built from their documented formats with random characters
(a seeded ``random.Random``), so no token-shaped literal is committed: a
prefix such as GitHub's is written ``"gh" + "p_"``.  Each kind is placed in
every context a Pi journal shows: JSON (also escaped inside another JSON
string, and right after a literal ``\\n``), YAML, TOML, INI, XML, shell,
Python, JavaScript, an HTTP dump and a URL.

    python tests/redaction_corpus.py      # print recall per kind

``cases()`` yields ``Case`` objects (kind, context, text, secrets that must
vanish, strings that must stay); ``negatives()`` yields texts that must come
back unchanged.
"""

from __future__ import annotations

import base64
import html
import json
import random
import string
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import quote
from xml.sax.saxutils import escape as xml_escape

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64U = ALNUM + "-_"
# characters a password may hold in every context without quoting trouble
PW_CHARS = ALNUM + "!@%^*-_.~+"


@dataclass
class Sample:
    """One secret: either a bare ``value`` (placed beside a key) or a whole
    ``snippet`` (a header line, a command, a PEM block...)."""

    kind: str
    value: str = ""
    snippet: str = ""
    key: str = "value"  # the key a bare value is written under
    secrets: list[str] = field(default_factory=list)  # must vanish
    keeps: list[str] = field(default_factory=list)  # must stay visible
    url_safe: bool = True  # usable as a URL query value unencoded
    needs_key: bool = False  # only recognisable beside its key


@dataclass
class Case:
    kind: str
    context: str
    text: str
    secrets: list[str]
    keeps: list[str]


def _r(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _password(rng: random.Random) -> str:
    # never starts like a placeholder or a variable reference
    return rng.choice(UPPER) + _r(rng, rng.randint(9, 20), PW_CHARS) + rng.choice(DIGITS)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# ---------------------------------------------------------------------------
# Secret generators, one per documented format
# ---------------------------------------------------------------------------

NEUTRAL_KEYS = ["value", "data", "item", "deploy", "setting", "output", "result", "entry"]
SECRET_KEYS = [
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "secret",
    "client_secret",
    "token",
    "access_token",
    "auth_token",
    "refresh_token",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "secret_key",
    "private_key",
    "auth",
    "credentials",
    "db_password",
    "mysql_root_password",
    "x-api-key",
    "x-auth-token",
    "secretKey",
    "apiToken",
    "clientSecret",
    "db.password",
    "session_token",
    "webhook_secret",
    "signing_key",
    "encryption_key",
]


def _bare(
    kind: str, value: str, prefix: str, rng: random.Random, *, key: str | None = None, url_safe: bool = True
) -> Sample:
    return Sample(
        kind,
        value=value,
        key=key or rng.choice(NEUTRAL_KEYS),
        secrets=[value[len(prefix) :]],
        keeps=[prefix] if prefix else [],
        url_safe=url_safe,
    )


def g_github(rng):
    if rng.random() < 0.75:
        p = "gh" + rng.choice("pousr") + "_"
        return _bare("github_token", p + _r(rng, 36), p, rng)
    p = "github" + "_pat_"
    return _bare("github_token", p + _r(rng, 22) + "_" + _r(rng, 59), p, rng)


def g_openai(rng):
    p = rng.choice(["sk-", "sk-proj-", "sk-svcacct-"])
    body = _r(rng, 48) if p == "sk-" else _r(rng, rng.randint(100, 156), B64U)
    return _bare("openai_key", p + body, p, rng)


def g_anthropic(rng):
    p = "sk-" + "ant-api03-"
    return _bare("anthropic_key", p + _r(rng, 93, B64U) + "AA", p, rng)


def g_slack(rng):
    if rng.random() < 0.8:
        p = "xox" + rng.choice("bpars") + "-"
        v = p + _r(rng, 11, DIGITS) + "-" + _r(rng, 12, DIGITS) + "-" + _r(rng, 24)
    else:
        p = "xa" + "pp-"
        v = p + "1-A" + _r(rng, 10, UPPER + DIGITS) + "-" + _r(rng, 13, DIGITS) + "-" + _r(rng, 64, HEX)
    return _bare("slack_token", v, p, rng)


def g_slack_webhook(rng):
    p = "https://hooks.slack.com/services/"
    v = p + "T" + _r(rng, 8, UPPER + DIGITS) + "/B" + _r(rng, 10, UPPER + DIGITS) + "/" + _r(rng, 24)
    return _bare("slack_webhook", v, p, rng)


def g_aws_id(rng):
    p = rng.choice(["AK" + "IA", "AS" + "IA"])
    return _bare("aws_access_key_id", p + _r(rng, 16, UPPER + "234567"), p, rng)


def g_aws_secret(rng):
    key_id = "AK" + "IA" + _r(rng, 16, UPPER + "234567")
    secret = _r(rng, 40, B64)
    form = rng.randrange(3)
    if form == 0:
        return Sample(
            "aws_secret_key",
            value=secret,
            key="aws_secret_access_key",
            secrets=[secret],
            url_safe=False,
            needs_key=True,
        )
    if form == 1:
        snippet = "Access key ID,Secret access key\n" + key_id + "," + secret
    else:
        snippet = (
            "aws configure set aws_access_key_id " + key_id + "\naws configure set aws_secret_access_key " + secret
        )
    return Sample("aws_secret_key", snippet=snippet, secrets=[secret, key_id[4:]])


def g_google_api(rng):
    p = "AI" + "za"
    return _bare("google_api_key", p + _r(rng, 35, B64U), p, rng)


def g_google_oauth(rng):
    p = "ya" + "29."
    return _bare("google_oauth_token", p + _r(rng, rng.randint(100, 200), B64U), p, rng)


def g_npm(rng):
    p = "np" + "m_"
    return _bare("npm_token", p + _r(rng, 36), p, rng)


def g_pypi(rng):
    p = "py" + "pi-"
    return _bare("pypi_token", p + "AgEIcHlwaS5vcmc" + _r(rng, rng.randint(60, 150), B64U), p, rng)


def g_hf(rng):
    p = "h" + "f_"
    return _bare("huggingface_token", p + _r(rng, 34, UPPER + LOWER), p, rng)


def g_gitlab(rng):
    p = rng.choice(["gl" + "pat-", "gl" + "dt-", "gl" + "rt-"])
    return _bare("gitlab_token", p + _r(rng, 20, B64U), p, rng)


def g_docker(rng):
    p = "dc" + "kr_pat_"
    return _bare("dockerhub_token", p + _r(rng, 27, B64U), p, rng)


def g_digitalocean(rng):
    p = rng.choice(["dop", "doo", "dor"]) + "_v1_"
    return _bare("digitalocean_token", p + _r(rng, 64, HEX), p, rng)


def g_stripe(rng):
    if rng.random() < 0.2:
        p = "wh" + "sec_"
        return _bare("stripe_key", p + _r(rng, 32), p, rng)
    p = rng.choice(["s", "r"]) + "k_" + rng.choice(["live", "test"]) + "_"
    return _bare("stripe_key", p + _r(rng, rng.randint(24, 99)), p, rng)


def g_sendgrid(rng):
    p = "S" + "G."
    return _bare("sendgrid_key", p + _r(rng, 22, B64U) + "." + _r(rng, 43, B64U), p, rng)


def g_twilio(rng):
    form = rng.randrange(3)
    if form < 2:
        p = "A" + "C" if form == 0 else "S" + "K"
        return _bare("twilio", p + _r(rng, 32, HEX), p, rng)
    sid = "A" + "C" + _r(rng, 32, HEX)
    tok = _r(rng, 32, HEX)
    snippet = f'client = Client("{sid}", "{tok}")'
    return Sample("twilio", snippet=snippet, secrets=[sid[2:], tok], keeps=["Client("])


def g_mailgun(rng):
    p = "ke" + "y-"
    return _bare("mailgun_key", p + _r(rng, 32, HEX), p, rng)


def g_discord_bot(rng):
    # the first part is the bot's numeric id in base64: its structure, not a word nearby, finds the token
    digits = rng.randint(17, 20)
    uid = str(rng.randint(10 ** (digits - 1), 10**digits - 1)).encode()
    first = base64.b64encode(uid).decode().rstrip("=")
    rest = _r(rng, 6, B64U) + "." + _r(rng, rng.randint(27, 38), B64U)
    return Sample(
        "discord_bot_token", value=first + "." + rest, key=rng.choice(NEUTRAL_KEYS), secrets=[rest], keeps=[first]
    )


def g_discord_webhook(rng):
    p = "https://discord.com/api/webhooks/" + _r(rng, 18, DIGITS) + "/"
    return _bare("discord_webhook", p + _r(rng, 68, B64U), p, rng)


def g_telegram(rng):
    bot = _r(rng, rng.randint(8, 10), DIGITS)
    secret = "AA" + _r(rng, 33, B64U)
    return Sample(
        "telegram_bot_token",
        value=bot + ":" + secret,
        key="telegram_bot",
        secrets=[secret],
        keeps=[bot + ":"],
        needs_key=True,
    )


def g_sentry(rng):
    key = _r(rng, 32, HEX)
    v = "https://" + key + "@o" + _r(rng, 6, DIGITS) + ".ingest.sentry.io/" + _r(rng, 7, DIGITS)
    return Sample("sentry_dsn", value=v, key="dsn", secrets=[key], keeps=["ingest.sentry.io"])


def g_jwt(rng):
    header = json.dumps({"alg": rng.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"}, separators=(",", ":"))
    payload = json.dumps(
        {"sub": _r(rng, 12), "name": _r(rng, 8, LOWER), "iat": rng.randint(10**9, 2 * 10**9)}, separators=(",", ":")
    )
    if rng.random() < 0.3:  # JSON written with whitespace: the parts decode to objects all the same
        header = json.dumps(json.loads(header), indent=rng.choice([None, 2, "\t"]), separators=(", ", ": "))
        payload = json.dumps(json.loads(payload), indent=rng.choice([None, 2]))
    v = _b64url(header.encode()) + "." + _b64url(payload.encode()) + "." + _r(rng, 43, B64U)
    return Sample("jwt", value=v, key=rng.choice(NEUTRAL_KEYS), secrets=[v[3:]], keeps=[v[:3]])


def g_azure_storage(rng):
    key = _r(rng, 86, B64) + "=="
    v = (
        f"DefaultEndpointsProtocol=https;AccountName={_r(rng, 10, LOWER)};AccountKey={key};"
        "EndpointSuffix=core.windows.net"
    )
    return Sample(
        "azure_storage_key", value=v, key="connection", secrets=[key[:-2]], keeps=["AccountKey="], url_safe=False
    )


def g_azure_sas(rng):
    sig = quote(_r(rng, 43, B64) + "=", safe="")
    v = (
        f"https://{_r(rng, 10, LOWER)}.blob.core.windows.net/data/f.csv?sv=2022-11-02&ss=b&srt=o&sp=r"
        f"&se=2030-01-01T00:00:00Z&sig={sig}"
    )
    return Sample("azure_sas_signature", value=v, key="sas_url", secrets=[sig], keeps=["sig="], url_safe=False)


def g_url_userinfo(rng):
    pw = _r(rng, rng.randint(10, 24), ALNUM + "-_.~")
    scheme = rng.choice(["https", "http", "ftp", "sftp", "smtp"])
    v = f"{scheme}://{_r(rng, 6, LOWER)}:{pw}@{_r(rng, 8, LOWER)}.example.com/path"
    form = rng.random()
    if form < 0.15:  # URL-encoded, as a query parameter or a redirect
        return Sample("url_userinfo", value=quote(v, safe=""), key="next", secrets=[pw], url_safe=False)
    return Sample("url_userinfo", value=v, key="remote", secrets=[pw], keeps=[scheme + "://"])


def g_database_url(rng):
    pw = _r(rng, rng.randint(10, 24), ALNUM + "-_.~")
    scheme = rng.choice(["postgres", "postgresql", "mysql", "mongodb+srv", "redis", "amqp", "mssql"])
    user = "" if scheme == "redis" and rng.random() < 0.5 else _r(rng, 6, LOWER)
    v = f"{scheme}://{user}:{pw}@db-{_r(rng, 4, LOWER)}.internal:5432/app"
    return Sample("database_url", value=v, key="database_url", secrets=[pw], keeps=[scheme + "://"])


def _pem(rng, label: str, lines: int) -> tuple[str, list[str]]:
    body = [_r(rng, 64, B64) for _ in range(lines)]
    return "\n".join(body), body


def g_private_key(rng):
    label = rng.choice(["RSA ", "EC ", "DSA ", "OPENSSH ", "", "ENCRYPTED ", "PGP "])
    nlines = rng.randint(4, 12)
    body, lines = _pem(rng, label, nlines)
    block = "BLOCK" if label == "PGP " else ""
    begin = f"-----BEGIN {label}PRIVATE KEY{' ' + block if block else ''}-----"
    end = f"-----END {label}PRIVATE KEY{' ' + block if block else ''}-----"
    if label == "PGP ":
        body = "Version: GnuPG v2\n\n" + body
    if label == "RSA " and rng.random() < 0.3:
        body = "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC," + _r(rng, 32, HEX).upper() + "\n\n" + body
    truncated = rng.random() < 0.25
    if truncated:
        cut = rng.randint(1, nlines - 1)
        text = begin + "\n" + "\n".join(lines[:cut]) + "\n" + lines[cut][:20]
        secrets = lines[:cut] + [lines[cut][:20]]
    else:
        text = begin + "\n" + body + "\n" + end
        secrets = lines
    return Sample("private_key", snippet=text, secrets=secrets, keeps=[begin])


def g_gcp_service_account(rng):
    body, lines = _pem(rng, "", 8)
    doc = {
        "type": "service_account",
        "project_id": _r(rng, 8, LOWER),
        "private_key_id": _r(rng, 40, HEX),
        "private_key": "-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----\n",
        "client_email": _r(rng, 6, LOWER) + "@x.iam.gserviceaccount.com",
    }
    return Sample(
        "gcp_service_account", snippet=json.dumps(doc, indent=2), secrets=lines, keeps=["-----BEGIN PRIVATE KEY-----"]
    )


def g_authorization(rng):
    scheme = rng.choice(["Bearer", "Basic", "token", "Bot", "Bearer"])
    if scheme == "Basic":
        cred = base64.b64encode(f"{_r(rng, 6, LOWER)}:{_password(rng)}".encode()).decode()
    elif scheme == "token":
        cred = _r(rng, 40, HEX)
    else:
        cred = _r(rng, rng.randint(30, 60), B64U)
    name = rng.choice(["Authorization", "authorization", "Proxy-Authorization"])
    return Sample(
        "authorization_header", snippet=f"{name}: {scheme} {cred}", secrets=[cred], keeps=[f"{name}: {scheme} "]
    )


def g_cookie(rng):
    sid = _r(rng, 32)
    if rng.random() < 0.5:
        csrf = _r(rng, 32)
        return Sample(
            "cookie", snippet=f"Cookie: sessionid={sid}; csrftoken={csrf}", secrets=[sid, csrf], keeps=["sessionid="]
        )
    return Sample(
        "cookie",
        snippet=f"Set-Cookie: session={sid}; Path=/; HttpOnly; Secure; SameSite=Lax",
        secrets=[sid],
        keeps=["Set-Cookie: session=", "Path=/"],
    )


def g_curl(rng):
    pw = _password(rng)
    user = _r(rng, 6, LOWER)
    key = _r(rng, 8, ALNUM) + _r(rng, 4, DIGITS) + _r(rng, rng.randint(12, 30), ALNUM)
    form, secret = rng.choice(
        [
            (f"curl -u {user}:{pw} https://api.example.com/v1/items", pw),
            (f"curl -s -X POST --user {user}:{pw} https://api.example.com/v1/items -d @body.json", pw),
            (f"curl -fsSL -u '{user}:{pw}' https://api.example.com/v1/items", pw),
            # an empty part: a key as the user (as Stripe documents), a token as the password
            (f"curl https://api.example.com/v1/charges -u {key}:", key),
            (f"curl -u :{key} https://api.example.com/v1/items", key),
            (f"curl --user={key}: https://api.example.com/v1/items", key),
            (f"http -a {user}:{pw} api.example.com/v1/items", pw),
            (f"https --auth {key}: api.example.com/v1/items", key),
        ]
    )
    return Sample("curl_user", snippet=form, secrets=[secret], keeps=[form.split()[0]])


def g_mysql(rng):
    pw = _password(rng)
    form = rng.choice(
        [
            f"mysql -u root -p{pw} -h db.internal app",
            f"mysqldump -uroot -p'{pw}' app > dump.sql",
            f"mysql -h 127.0.0.1 -P 3306 -u app -p {pw} app",
            f"mariadb -u root -p{pw} app",
        ]
    )
    return Sample("mysql_password", snippet=form, secrets=[pw], keeps=["-p"])


def g_sshpass(rng):
    pw = _password(rng)
    form = rng.choice([f"sshpass -p '{pw}' ssh deploy@10.0.0.5", f"sshpass -p {pw} scp build.tgz deploy@host:/srv/"])
    return Sample("sshpass", snippet=form, secrets=[pw], keeps=["sshpass -p"])


def g_pgpassword(rng):
    pw = _password(rng)
    return Sample(
        "pgpassword",
        snippet=f"PGPASSWORD={pw} psql -h db.internal -U app app",
        secrets=[pw],
        keeps=["PGPASSWORD=", "psql"],
    )


def g_env_export(rng):
    name = rng.choice(
        [
            "API_KEY",
            "SECRET_KEY",
            "DB_PASSWORD",
            "AUTH_TOKEN",
            "STRIPE_SECRET",
            "OPENAI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "JWT_SECRET",
            "SESSION_SECRET",
            "GH_TOKEN",
            "SMTP_PASSWORD",
        ]
    )
    pw = _r(rng, rng.randint(16, 40), ALNUM + "_-")
    if rng.random() < 0.2:  # a ; # & or ) inside the value is part of it
        pw = pw[:6] + rng.choice(";#&)") + pw[6:]
    line = rng.choice([f"export {name}={pw}", f"{name}={pw}", f'export {name}="{pw}"', f"{name}='{pw}'"])
    if rng.random() < 0.4:  # the name set in code or on a line of another language
        pw = pw.replace(";", "").replace("#", "").replace("&", "").replace(")", "")
        line = rng.choice(
            [
                f'os.environ["{name}"] = "{pw}"',
                f"os.environ.setdefault('{name}', '{pw}')",
                f'process.env["{name}"] = "{pw}";',
                f'os.Setenv("{name}", "{pw}")',
                f'ENV["{name}"] = "{pw}"',
                f"$_ENV['{name}'] = '{pw}';",
                f"define('{name}', '{pw}');",
                f'$env:{name}="{pw}"',
                f"ENV {name} {pw}",
                f"set -gx {name} {pw}",
                f"setenv {name} {pw}",
                f'[Environment]::SetEnvironmentVariable("{name}", "{pw}", "User")',
            ]
        )
        return Sample("env_export", snippet=line, secrets=[pw], keeps=[name])
    return Sample("env_export", snippet=line, secrets=[pw], keeps=[name + "="])


def g_ai_provider(rng):
    p, n, alphabet = rng.choice(
        [
            ("gs" + "k_", 52, ALNUM),
            ("xa" + "i-", 80, ALNUM),
            ("pp" + "lx-", 48, ALNUM),
            ("r" + "8_", 37, ALNUM),
            ("tv" + "ly-", 32, ALNUM),
            ("tv" + "ly-dev-", 32, ALNUM),
        ]
    )
    return _bare("ai_provider_key", p + _r(rng, n, alphabet), p, rng)


def g_saas(rng):
    p, n, alphabet = rng.choice(
        [("lin" + "_api_", 40, ALNUM), ("sh" + "pat_", 32, HEX), ("sh" + "pss_", 32, HEX), ("sec" + "ret_", 43, ALNUM)]
    )
    return _bare("saas_token", p + _r(rng, n, alphabet), p, rng)


def g_age(rng):
    p = "AGE-" + "SECRET-KEY-1"
    return _bare("age_secret_key", p + _r(rng, 58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"), p, rng)


def g_netrc(rng):
    pw = _password(rng)
    host = _r(rng, 8, LOWER) + ".example.com"
    if rng.random() < 0.5:
        snippet = f"machine {host} login {_r(rng, 6, LOWER)} password {pw}"
    else:
        snippet = f"machine {host}\n  login {_r(rng, 6, LOWER)}\n  password {pw}"
    return Sample("netrc", snippet=snippet, secrets=[pw], keeps=["password "])


def g_putty(rng):
    priv = [_r(rng, 64, B64) for _ in range(rng.randint(1, 3))]
    snippet = (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: key\nPublic-Lines: 2\n"
        + _r(rng, 64, B64)
        + "\n"
        + _r(rng, 20, B64)
        + f"\nPrivate-Lines: {len(priv)}\n"
        + "\n".join(priv)
        + "\nPrivate-MAC: "
        + _r(rng, 64, HEX)
    )
    return Sample("putty_private_key", snippet=snippet, secrets=priv, keeps=["Private-Lines:"])


def g_assignment(rng):
    return Sample(
        "secret_assignment", value=_password(rng), key=rng.choice(SECRET_KEYS), url_safe=False, needs_key=True
    )


def g_vault(rng):
    p, n = rng.choice([("hv" + "s.", 95), ("hv" + "b.", 150), ("hv" + "s.", 110)])
    return _bare("vault_token", p + _r(rng, n, B64U), p, rng)


def g_databricks(rng):
    p = "da" + "pi"
    return _bare("databricks_token", p + _r(rng, 32, HEX) + rng.choice(["", "-2"]), p, rng)


def g_langsmith(rng):
    p = "lsv" + "2_" + rng.choice(["pt", "sk"]) + "_"
    return _bare("langsmith_key", p + _r(rng, 32, HEX) + "_" + _r(rng, 10, HEX), "lsv" + "2_", rng)


def g_rubygems(rng):
    p = "ruby" + "gems_"
    return _bare("rubygems_token", p + _r(rng, 48, HEX), p, rng)


# Other services' documented token shapes: (prefix, body length, alphabet)
SERVICE_SHAPES = [
    ("op" + "s_eyJ", 260, B64[:62]),
    ("p8" + "e-", 32, LOWER + DIGITS),
    ("LT" + "AI", 20, ALNUM),
    ("AK" + "Cp", 69, ALNUM),
    ("ATA" + "TT3", 186, ALNUM + "_-"),
    ("AB" + "SK", 132, ALNUM),
    ("4b" + "1d", 38, UPPER + LOWER),
    ("CLO" + "JARS_", 60, LOWER + DIGITS),
    ("dp" + ".pt.", 43, ALNUM),
    ("duf" + "fel_live_", 43, ALNUM),
    ("EZ" + "AK", 54, ALNUM),
    ("EA" + "AC", 120, ALNUM),
    ("EA" + "AA", 60, ALNUM),
    ("FLW" + "SECK_TEST-", 32, "abcdefgh0123456789"),
    ("fo" + "1_", 43, ALNUM),
    ("fm" + "2_", 120, ALNUM),
    ("fio" + "-u-", 64, ALNUM),
    ("gl" + "c_", 80, ALNUM),
    ("HR" + "KU-AA", 58, ALNUM),
    ("ic" + "o-", 32, ALNUM),
    ("s-s4" + "t2ud-", 64, HEX),
    ("NR" + "AK-", 27, UPPER + DIGITS),
    ("sha" + "256~", 43, ALNUM),
    ("psc" + "ale_tkn_", 43, ALNUM),
    ("pn" + "u_", 36, ALNUM),
    ("pu" + "l-", 40, HEX),
    ("rd" + "me_", 70, LOWER + DIGITS),
    ("tk" + "-us-", 48, ALNUM),
    ("sntr" + "yu_", 64, HEX),
    ("sm" + "_pat_", 16, ALNUM),
    ("shi" + "ppo_live_", 40, HEX),
    ("sq" + "u_", 40, HEX),
    ("sg" + "p_", 40, HEX),
    ("sq" + "0atp-", 22, ALNUM),
    ("tf" + "p_", 59, ALNUM),
    ("AQ" + "VN", 36, ALNUM),
]


def g_service(rng):
    p, n, alphabet = rng.choice(SERVICE_SHAPES)
    body = _r(rng, n, alphabet)
    if p.startswith("sm" + "_"):
        body = rng.choice(UPPER) + body[1:-1] + rng.choice(DIGITS)  # SettleMint: mixed case
    sample = _bare("service_token", p + body, p, rng)
    sample.keeps = [p[:2]]  # rules keep the service's prefix, sometimes not its sub-kind (dp. of dp.pt.)
    return sample


def g_cli_password(rng):
    pw = _password(rng)
    user = _r(rng, 6, LOWER)
    form = rng.choice(
        [
            f"docker login -u {user} -p {pw} registry.example.com",
            f"podman login --username {user} -p '{pw}' quay.io",
            f"redis-cli -h cache.internal -a {pw} ping",
            f"az login -u {user}@example.com -p {pw}",
            f"mongosh -u {user} -p {pw} --authenticationDatabase admin",
            f"htpasswd -b .htpasswd {user} {pw}",
            f"htpasswd -nb {user} {pw}",
            f"sqlcmd -S db -U {user} -P {pw} -Q 'select 1'",
            f"ldapsearch -x -D cn={user},dc=example,dc=com -w {pw} -b dc=example,dc=com",
            f"keytool -list -keystore app.jks -storepass {pw}",
            f"rabbitmqctl add_user {user} {pw}",
        ]
    )
    return Sample("cli_password", snippet=form, secrets=[pw], keeps=[form.split()[0]])


SESSION_COOKIES = [
    "PHPSESSID",
    "JSESSIONID",
    "laravel_session",
    "connect.sid",
    "sessionid",
    "_session_id",
    "_gitlab_session",
]


def g_session_cookie(rng):
    name = rng.choice(SESSION_COOKIES)
    value = _r(rng, rng.randint(26, 48))
    if name == "connect.sid":
        value = "s%3A" + value + "." + _r(rng, 43, B64U)
    form = rng.choice(
        [
            f"curl -b '{name}={value}' https://app.example.com/api/me",
            f'curl --cookie "{name}={value}" https://app.example.com/',
            f"curl -s -b {name}={value} -H 'Accept: application/json' https://app.example.com/x",
            f'document.cookie = "{name}={value}; path=/";',
            f"Cookie: {name}={value}",
        ]
    )
    return Sample("session_cookie", snippet=form, secrets=[value], keeps=[name + "="])


CONFIG_PAIR_NAMES = ["ApiKey", "api_key", "DB_PASSWORD", "ClientSecret", "AUTH_TOKEN", "ClearTextPassword", "SecretKey"]


def g_config_pair(rng):
    name = rng.choice(CONFIG_PAIR_NAMES)
    value = _password(rng)
    form = rng.choice(
        [
            f'<appSettings>\n  <add key="{name}" value="{value}" />\n</appSettings>',
            json.dumps([{"key": name, "value": value}, {"key": "Region", "value": "eu"}]),
            json.dumps({"env": [{"name": name, "value": value}]}, indent=2),
            f"env:\n  - name: {name}\n    value: {value}\n  - name: LOG_LEVEL\n    value: info\n",
            f'env:\n  - name: {name}\n    value: "{value}"\n',
        ]
    )
    return Sample("config_pair", snippet=form, secrets=[value], keeps=[name])


GENERATORS: dict[str, Callable[[random.Random], Sample]] = {
    "secret_assignment": g_assignment,
    "authorization_header": g_authorization,
    "github_token": g_github,
    "openai_key": g_openai,
    "anthropic_key": g_anthropic,
    "slack_token": g_slack,
    "slack_webhook": g_slack_webhook,
    "aws_access_key_id": g_aws_id,
    "aws_secret_key": g_aws_secret,
    "google_api_key": g_google_api,
    "google_oauth_token": g_google_oauth,
    "npm_token": g_npm,
    "pypi_token": g_pypi,
    "huggingface_token": g_hf,
    "gitlab_token": g_gitlab,
    "dockerhub_token": g_docker,
    "digitalocean_token": g_digitalocean,
    "stripe_key": g_stripe,
    "sendgrid_key": g_sendgrid,
    "twilio": g_twilio,
    "mailgun_key": g_mailgun,
    "discord_bot_token": g_discord_bot,
    "discord_webhook": g_discord_webhook,
    "telegram_bot_token": g_telegram,
    "sentry_dsn": g_sentry,
    "jwt": g_jwt,
    "private_key": g_private_key,
    "gcp_service_account": g_gcp_service_account,
    "azure_storage_key": g_azure_storage,
    "azure_sas_signature": g_azure_sas,
    "url_userinfo": g_url_userinfo,
    "database_url": g_database_url,
    "curl_user": g_curl,
    "mysql_password": g_mysql,
    "sshpass": g_sshpass,
    "pgpassword": g_pgpassword,
    "env_export": g_env_export,
    "cookie": g_cookie,
    "ai_provider_key": g_ai_provider,
    "saas_token": g_saas,
    "age_secret_key": g_age,
    "netrc": g_netrc,
    "putty_private_key": g_putty,
    "vault_token": g_vault,
    "databricks_token": g_databricks,
    "langsmith_key": g_langsmith,
    "rubygems_token": g_rubygems,
    "service_token": g_service,
    "cli_password": g_cli_password,
    "session_cookie": g_session_cookie,
    "config_pair": g_config_pair,
}


def _fill_assignment_secret(s: Sample) -> Sample:
    if s.kind == "secret_assignment" and not s.secrets:
        s.secrets = [s.value]
    return s


# ---------------------------------------------------------------------------
# Contexts
# ---------------------------------------------------------------------------


def _ident(key: str) -> str:
    return key.replace("-", "_").replace(".", "_")


def _env(key: str) -> str:
    return _ident(key).upper()


def _camel(key: str) -> str:
    parts = _ident(key).split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def _header(key: str) -> str:
    name = "-".join(p[:1].upper() + p[1:] for p in key.replace("_", "-").replace(".", "-").split("-"))
    return name if name.lower().startswith("x-") else "X-" + name


def _pair_line(s: Sample) -> str:
    return f"{s.key}={s.value}"


def c_json(s: Sample, rng) -> str:
    if s.snippet:
        return json.dumps({"type": "toolResult", "content": [{"type": "text", "text": s.snippet}]})
    return json.dumps({"config": {s.key: s.value, "retries": 3}}, indent=rng.choice([None, 2]))


def c_json_escaped(s: Sample, rng) -> str:
    inner = c_json(s, rng)
    return json.dumps({"role": "toolResult", "content": [{"type": "text", "text": "cat config.json\n" + inner}]})


def c_json_after_newline(s: Sample, rng) -> str:
    # the secret starts right after a literal backslash-n inside a JSON string
    body = s.snippet or (f"{s.key}: {s.value}" if s.needs_key else s.value)
    return json.dumps({"type": "text", "text": "Here it is:\n\n" + body + "\n\nDone."})


def c_yaml(s: Sample, rng) -> str:
    if s.snippet:
        if "\n" in s.snippet:
            return (
                "steps:\n  - name: setup\n    run: |\n"
                + "\n".join("      " + line for line in s.snippet.splitlines())
                + "\n"
            )
        return f"steps:\n  - name: setup\n    run: {s.snippet}\n"
    q = rng.choice(["", '"', "'"])
    return f"service:\n  name: api\n  {s.key}: {q}{s.value}{q}\n  replicas: 2\n"


def c_toml(s: Sample, rng) -> str:
    if s.snippet:
        if "\n" in s.snippet:
            return f"[job]\nscript = '''\n{s.snippet}\n'''\n"
        return "[job]\nscript = " + json.dumps(s.snippet) + "\n"
    key = s.key if all(c.isalnum() or c in "_-" for c in s.key) else json.dumps(s.key)
    return f'[server]\nhost = "0.0.0.0"\n{key} = "{s.value}"\nport = 8080\n'


def c_ini(s: Sample, rng) -> str:
    if s.snippet:
        lines = s.snippet.splitlines()
        return "[task]\ncommand = " + lines[0] + "".join("\n    " + line for line in lines[1:]) + "\nretries = 2\n"
    return f"[default]\nregion = eu-west-1\n{s.key} = {s.value}\noutput = json\n"


def c_xml(s: Sample, rng) -> str:
    if s.snippet:
        return f"<job>\n  <script>{xml_escape(s.snippet)}</script>\n</job>\n"
    return f"<settings>\n  <{s.key}>{xml_escape(s.value)}</{s.key}>\n  <timeout>30</timeout>\n</settings>\n"


def c_shell(s: Sample, rng) -> str:
    if s.snippet:
        return "$ cd /srv/app\n$ " + s.snippet + "\nok\n"
    form = rng.randrange(3)
    if form == 0:
        return f"export {_env(s.key)}={s.value}\n./run.sh\n"
    if form == 1:
        return f"{_env(s.key)}='{s.value}' ./deploy.sh --verbose\n"
    return f"./cli configure --{s.key.replace('_', '-').replace('.', '-').lower()} {s.value} --region eu\n"


def c_python(s: Sample, rng) -> str:
    if s.snippet:
        if "\n" in s.snippet:
            return 'DATA = """\n' + s.snippet + '\n"""\n'
        return f"subprocess.run({s.snippet!r}, shell=True, check=True)\n"
    if rng.random() < 0.5:
        return f'{_ident(s.key).upper()} = "{s.value}"\nclient = Client()\n'
    return f"client = Client(\n    {_ident(s.key)}={s.value!r},\n    timeout=30,\n)\n"


def c_js(s: Sample, rng) -> str:
    if s.snippet:
        return "const script = `" + s.snippet.replace("`", "\\`") + "`;\n"
    if rng.random() < 0.5:
        return f"const {_camel(s.key)} = '{s.value}';\nexport default {_camel(s.key)};\n"
    return f'const client = new Client({{\n  {_camel(s.key)}: "{s.value}",\n  retries: 3,\n}});\n'


def c_http(s: Sample, rng) -> str:
    head = "POST /v1/items HTTP/1.1\nHost: api.example.com\nContent-Type: application/json\n"
    if s.snippet:
        first = s.snippet.split(":", 1)[0]
        if first in ("Authorization", "authorization", "Proxy-Authorization", "Cookie", "Set-Cookie"):
            return head + s.snippet + "\nAccept: */*\n\n{}\n"
        return head + "Accept: */*\n\n" + s.snippet + "\n"
    return head + f"{_header(s.key)}: {s.value}\nAccept: */*\n\n{{}}\n"


def c_url(s: Sample, rng) -> str | None:
    if s.snippet:
        return None
    if s.value.startswith(("http://", "https://", "ftp://", "sftp://", "smtp://")) or "://" in s.value:
        return f"Open {s.value} in a browser.\n"
    if not s.url_safe:
        return f"https://api.example.com/v1/items?page=2&{s.key}={quote(s.value, safe='')}&sort=asc"
    return f"https://api.example.com/v1/items?page=2&{s.key}={s.value}&sort=asc"


def c_json_slashes(s: Sample, rng) -> str:
    # PHP's json_encode escapes every slash: postgres:\/\/app:pw@db\/prod
    return c_json(s, rng).replace("/", "\\/")


def c_html(s: Sample, rng) -> str | None:
    # a page pasted with its entities: &quot;password&quot;: &quot;...&quot;
    if s.snippet:
        return None
    return "<pre>{&quot;" + s.key + "&quot;: &quot;" + html.escape(s.value) + "&quot;}</pre>"


def c_url_encoded_key(s: Sample, rng) -> str | None:
    # a query string encoded once more, key name and all: next=%3Fapi%5Fkey%3D...%26page%3D2
    if s.snippet or "://" in s.value:
        return None
    encoded = quote(s.key, safe="").replace("_", "%5F").replace(".", "%2E").replace("-", "%2D")
    return (
        f"https://app.example.com/login?next=%2Fcb%3F{encoded}%3D{quote(quote(s.value, safe=''), safe='')}%26page%3D2"
    )


CONTEXTS: dict[str, Callable[[Sample, random.Random], str | None]] = {
    "json": c_json,
    "json_escaped": c_json_escaped,
    "json_after_newline": c_json_after_newline,
    "yaml": c_yaml,
    "toml": c_toml,
    "ini": c_ini,
    "xml": c_xml,
    "shell": c_shell,
    "python": c_python,
    "js": c_js,
    "http": c_http,
    "url": c_url,
    "json_slashes": c_json_slashes,
    "html": c_html,
    "url_encoded_key": c_url_encoded_key,
}


def _forms(secret: str) -> list[str]:
    """How a secret can appear once its context escaped it."""
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(json.dumps(secret)[1:-1])[1:-1], xml_escape(secret)}
    forms.add(quote(secret, safe=""))
    forms.add(quote(quote(secret, safe=""), safe=""))
    forms.add(html.escape(secret))
    forms |= {f.replace("/", "\\/") for f in list(forms)}
    return [f for f in forms if len(f) >= 4]


def cases(seed: int = 1234, per_context: int = 12) -> Iterator[Case]:
    rng = random.Random(seed)
    for kind, gen in GENERATORS.items():
        for context, render in CONTEXTS.items():
            for _ in range(per_context):
                sample = _fill_assignment_secret(gen(rng))
                text = render(sample, rng)
                if text is None:
                    continue
                if context == "url" and not sample.snippet and sample.kind == "secret_assignment":
                    secrets = [quote(sample.value, safe="")]
                else:
                    secrets = sample.secrets
                yield Case(kind, context, text, secrets, sample.keeps)


def leaked(case: Case, out: str) -> list[str]:
    """The secrets of ``case`` still readable in ``out`` (in any escaped form)."""
    return [s for s in case.secrets for f in _forms(s) if f in out]


def lost_keeps(case: Case, out: str) -> list[str]:
    return [
        k
        for k in case.keeps
        if not any(f in out for f in {k, json.dumps(k)[1:-1], xml_escape(k), quote(k, safe=""), k.replace("/", "\\/")})
    ]


# ---------------------------------------------------------------------------
# Negatives: texts that must come back unchanged
# ---------------------------------------------------------------------------


def negatives(seed: int = 99) -> Iterator[tuple[str, str]]:
    rng = random.Random(seed)
    u = uuid.UUID(int=rng.getrandbits(128), version=4)
    sha = _r(rng, 40, HEX)
    plain = {
        "git sha": f"commit {sha}\nMerge: {sha[:7]} {_r(rng, 7, HEX)}\n",
        "git log oneline": "\n".join(f"{_r(rng, 7, HEX)} fix: {_r(rng, 8, LOWER)}" for _ in range(5)),
        "uuid": f'"sessionId": "{u}"',
        "tool ids": f'"id": "toolu_01{_r(rng, 22)}", "call": "call_{_r(rng, 24)}", "msg": "msg_01{_r(rng, 22)}"',
        "chatcmpl id": f'"id": "chatcmpl-{_r(rng, 29)}"',
        "entry ids": f'{{"type":"message","id":"{_r(rng, 8, HEX)}","parentId":"{_r(rng, 8, HEX)}"}}',
        "usage counts": '"usage":{"input":1234,"output":56,"cacheRead":0,"totalTokens":2916}',
        "input_tokens": '{"input_tokens": 5, "output_tokens": 12, "max_tokens": 4096}',
        "token_count": "token_count = 5\nmax_new_tokens: 512\n",
        "password_field": "password_field = forms.CharField(widget=forms.PasswordInput)",
        "secret_name": 'secret_name = "prod/db"\nsecretName: prod/db\n',
        "token_type": 'token_type = "bearer"\n"token_type": "Bearer"',
        "password from variable": "self.password = password\npassword = getpass.getpass()\n",
        "env lookup": 'api_key = os.environ["API_KEY"]\ntoken = os.getenv("GITHUB_TOKEN")\n',
        "process.env": "const apiKey = process.env.API_KEY;\n{ password: config.db.password }",
        "type annotations": "def login(username: str, password: str) -> Token:\n    token: Optional[str] = None\n",
        "ts types": "interface Creds { password: string; token?: string }",
        "json null": '{"password": null, "token": "", "secret": false}',
        "${VAR}": "password: ${DB_PASSWORD}\napi_key: ${{ secrets.API_KEY }}\n",
        "$VAR": 'token=$GITHUB_TOKEN\ncurl -H "Authorization: Bearer $TOKEN" https://api.example.com\n',
        "placeholders": "api_key: <your-api-key>\npassword: xxxxxxxx\nsecret: '********'\nAPI_KEY=YOUR_API_KEY\n",
        "changeme": "password: changeme\n",
        "prose": "The password is stored in vault. Set the token in your environment, then rotate the secret.",
        "prose auth": "The auth flow works; the author fixed OAuth yesterday. Cookies are set on login.",
        "prose key": "Use an API key: see the docs. The private key is in ~/.ssh/id_rsa.",
        "bearer prose": "Bearer token authentication is used by the API.",
        "hex colours": 'color: #ff00aa;\nbackground: #1E90FF;\n"accent": "#abcdef"',
        "integrity": f'"integrity": "sha512-{_r(rng, 86, B64)}=="',
        "pwd": "PWD=/home/user/project\nOLDPWD=/tmp\n",
        "keys not secret": (
            'sort_key = "name"\nprimary_key = True\n"key": "Enter"\nmonkey: banana\ncache_key = f"user:{uid}"'
        ),
        "flags": (
            "git push -u origin main\nssh -p 2222 host\ndocker run -u 1000:1000 image\nmysql -h db -P 3306 -u root app"
        ),
        "urls without password": "https://github.com/user/repo.git\ngit@github.com:user/repo.git\nhttps://user@host.example.com/x",
        "words like prefixes": "sk-learn compatible; task-runner; disk-usage; the hf_hub cache; npm_config_cache",
        "more prefix-like words": "taxi-driver; a secret_handshake_protocol; ./r8_cache; dop_v1_notes; gsk_tmp",
        "public key": "-----BEGIN PUBLIC KEY-----\n"
        + "\n".join(_r(rng, 64, B64) for _ in range(4))
        + "\n-----END PUBLIC KEY-----",
        "certificate": "-----BEGIN CERTIFICATE-----\n"
        + "\n".join(_r(rng, 64, B64) for _ in range(4))
        + "\n-----END CERTIFICATE-----",
        "ssh public key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + _r(rng, 43, B64) + " user@host",
        "empty password": "PASSWORD=\nNEXT_VAR=visible\n",
        "empty yaml": "password:\n  from_secret: db\n",
        "npm output": "added 123 packages, and audited 124 packages in 3s\nfound 0 vulnerabilities",
        "paths": "/home/user/.config/token-cache/ and ./secrets/README.md and tests/test_auth.py",
        "python kwargs": "requests.post(url, auth=auth, headers=headers)\nlogin(password=password)",
        "aws documentation keys": (
            "aws_access_key_id = AKIA" + "IOSFODNN7EXAMPLE\n"
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY\n"
        ),
        "hashes starting like keys": f"sha256 4b1d{_r(rng, 60, HEX)}\nid 4b1d{_r(rng, 38, HEX)}\ndapi{_r(rng, 8, HEX)}",
        "cargo and yarn checksums": (
            f'checksum = "{_r(rng, 64, HEX)}"\n  integrity sha1-{_r(rng, 27, B64)}=\n'
            f'"resolved": "https://registry.yarnpkg.com/x/-/x-1.0.0.tgz#{_r(rng, 40, HEX)}"'
        ),
        "base64 image": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA"
        + _r(rng, 200, B64)
        + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
        + _r(rng, 100, B64)
        + "EAAA"
        + _r(rng, 60, B64)
        + "ABSK"
        + _r(rng, 300, B64)
        + "==",
        "base64 of zeros": '"blob": "' + "A" * 200 + '=="',
        "ports and prompts": (
            "docker run -p 8080:80 image\nredis-cli -p 6379 ping\nmongosh --port 27017\n"
            "echo $PW | docker login -u me --password-stdin registry.example.com\n"
            "docker login -u me -p $REGISTRY_PASSWORD registry.example.com\nmongosh -u admin -p --host db"
        ),
        "session ids in journals": f'"sessionId": "{u}", "session_id": "{u}", "session": "{_r(rng, 8, HEX)}"',
        "session objects in code": "db_session = Session(engine)\nrequests_session = requests.Session()\n",
        "name value settings": (
            '[{"name": "DB_HOST", "value": "db.internal"}, {"name": "max_tokens", "value": "4096"},'
            ' {"key": "Enter", "value": "submit"}, {"name": "token_count", "value": "12"}]\n'
            '<add key="Region" value="eu-west-1" />\n- name: LOG_LEVEL\n  value: info\n'
        ),
        "escaped urls without password": '{"url": "https:\\/\\/github.com\\/user\\/repo.git"}',
        "encoded query without secrets": "https://x.example.com/login?next=%2Fsettings%3Ftab%3Dpassword%26sort_key%3Dname",
        "html entities": "<p>&quot;token_type&quot;: &quot;bearer&quot;, &quot;password&quot;: null</p>",
        "prose with service words": "Use access-control headers; the API-FIRST design; pat.md and sl.txt; ssl.conf",
        "already redacted": "password=[REDACTED]\nAuthorization: Bearer [REDACTED]\n" + "gh" + "p_[REDACTED]",
        # issue 27: code reading secret names, command lines without credentials, structure that is no token
        "reading secret names in code": (
            'api_key = os.environ["API_KEY"]\ntoken = os.getenv("GITHUB_TOKEN", "")\n'
            "const key = process.env['API_KEY'];\nENV.fetch(\"API_TOKEN\")\n$pw = getenv('DB_PASSWORD');\n"
            'Write-Host $env:GITHUB_TOKEN\ntoken := os.Getenv("GITHUB_TOKEN")\n'
            "define('DB_PASSWORD', getenv('DB_PASSWORD'));\nos.environ[\"DB_PASSWORD\"] = db_password\n"
        ),
        "names listed, not set": 'fields = ("username", "password", "email")\ntext.replace("password", "passphrase")',
        "env lines without secrets": (
            "ENV NODE_ENV production\nset -gx PATH $PATH ~/bin\nsetenv EDITOR vim\nARG NPM_TOKEN"
        ),
        "command lines without credentials": (
            "curl -u admin: https://localhost:8080/health\ncurl -u deploy https://example.com\n"
            "curl -u $STRIPE_KEY: https://api.stripe.com\nhttp -v -a example.org\nxh --verbose api.example.com"
        ),
        "values ended by what follows": (
            "https://x.example.com/cb?user=ann&next=%2Fhome\nServer=db;Database=app;Encrypt=true\n"
            "x=l;return x\n&quot;secret:1&rdquo;"
        ),
        "encoded urls without user-info": (
            "https%3A%2F%2Fgithub.com%2Fuser%2Frepo.git\nhttp%3A%2F%2Flocalhost%3A8001%2F%3Fq%3Da%2540b\n"
            "https:\\\\/\\\\/github.com\\\\/user\\\\/repo.git"
        ),
        "dotted names and base64 that is no token": (
            "v1.2.3 app.config.settings com.example.Service MTIzNDU2.abcdef.ghijklmnopqrstuvwxyzABCDEFGH "
            + _b64url(b"hello world, abc")
            + "."
            + _r(rng, 6, B64U)
            + "."
            + _r(rng, 30, B64U)
            + " "
            + _b64url(b"[1, 2, 3]")
            + "."
            + _b64url(b"[4]")
            + "."
            + _r(rng, 20, B64U)
        ),
    }
    for name, text in plain.items():
        yield name, text
        yield name + " (json)", json.dumps({"type": "text", "text": text})


# ---------------------------------------------------------------------------
# Recall report
# ---------------------------------------------------------------------------


def recall_table(redact: Callable[[str], str], seed: int = 1234, per_context: int = 12):
    """{kind: (cases, leaked, lost_keeps, [example failures])}"""
    table: dict[str, list] = {}
    for case in cases(seed, per_context):
        out = redact(case.text)
        row = table.setdefault(case.kind, [0, 0, 0, []])
        row[0] += 1
        if leaked(case, out):
            row[1] += 1
            if len(row[3]) < 3:
                row[3].append((case.context, case.text[:300], out[:300]))
        elif lost_keeps(case, out):
            row[2] += 1
    return table


def format_table(table) -> str:
    lines = [f"{'kind':24s} {'cases':>6s} {'recall':>8s} {'prefix kept':>12s}"]
    for kind, (n, leak, lost, _) in table.items():
        lines.append(f"{kind:24s} {n:6d} {100 * (n - leak) / n:7.1f}% {100 * (n - leak - lost) / n:11.1f}%")
    return "\n".join(lines)


if __name__ == "__main__":
    from pimem_index.redaction import redact

    verbose = "-v" in sys.argv

    t = recall_table(redact)
    print(format_table(t))
    for kind, (_n, _leak, _lost, examples) in t.items():
        for ctx, text, out in examples:
            print(f"\n--- {kind} in {ctx}\n{text}\n=>\n{out}")
