"""Issue 27, class 1: a secret-like name set in code, wherever the name stands (a subscript, a sigil, a
prefix, the first argument of a setter, a Dockerfile or fish/csh line), masks the value beside it; code that
only reads the name, placeholders and ids stay as written.

Values are built at run time from random characters (tests/support/redaction_corpus.py's rule)."""

from __future__ import annotations

import random

import pytest
from support.redaction_corpus import ALNUM

from pimem_index.redaction import MASK, redact

R = random.Random(2701)


def secret() -> str:
    return R.choice("ABCDEFGH") + "".join(R.choice(ALNUM) for _ in range(18)) + R.choice("23456789")


# (language, how the name is set): {v} is the value
SET_IN_CODE = [
    ("python subscript", 'os.environ["DB_PASSWORD"] = "{v}"'),
    ("python subscript, single quotes", "os.environ['API_KEY']='{v}'"),
    ("python dict item", "config['password'] = '{v}'"),
    ("django settings", 'settings["SECRET_KEY"] = "{v}"'),
    ("python setdefault", 'os.environ.setdefault("DB_PASSWORD", "{v}")'),
    ("js subscript", 'process.env["API_KEY"] = "{v}";'),
    ("js header subscript", 'headers["X-Api-Key"] = "{v}";'),
    ("js localStorage", 'localStorage.setItem("token", "{v}");'),
    ("js object without space", 'const config = {{password:"{v}"}}'),
    ("go struct literal", 'cfg := Config{{Password: "{v}"}}'),
    ("go Setenv", 'os.Setenv("GITHUB_TOKEN", "{v}")'),
    ("ruby ENV subscript", 'ENV["API_TOKEN"] = "{v}"'),
    ("ruby ENV.store", 'ENV.store("API_TOKEN", "{v}")'),
    ("ruby symbol", 'conn = connect(:password => "{v}")'),
    ("php $_ENV", "$_ENV['DB_PASSWORD']={v}"),
    ("php $_ENV quoted", "$_ENV['DB_PASSWORD'] = '{v}';"),
    ("php array", "$config['db']['password'] = '{v}';"),
    ("php define", "define('DB_PASSWORD', '{v}');"),
    ("java setProperty", 'System.setProperty("db.password", "{v}");'),
    ("powershell env", '$env:GITHUB_TOKEN="{v}"'),
    ("powershell env, spaced", "$env:API_KEY = '{v}'"),
    ("powershell SetEnvironmentVariable", '[Environment]::SetEnvironmentVariable("API_KEY", "{v}", "User")'),
    ("a prefix with a colon", "x:api_key={v}"),
    ("dockerfile ENV, legacy form", "ENV API_KEY {v}"),
    ("fish set", "set -gx API_TOKEN {v}"),
    ("csh setenv", "setenv DB_PASSWORD {v}"),
]


@pytest.mark.parametrize("form", [f for _, f in SET_IN_CODE], ids=[n for n, _ in SET_IN_CODE])
def test_a_secret_name_set_in_code_masks_its_value(form):
    value = secret()
    out = redact(form.format(v=value))
    assert value not in out and MASK in out


# The same forms in the languages' other everyday uses: reading the name, a placeholder, a reference, an id.
READ_OR_NOT_A_SECRET = [
    ("python read", 'api_key = os.environ["API_KEY"]\nif config["password"] == expected: pass'),
    ("python getenv default", 'token = os.getenv("GITHUB_TOKEN", "")\npw = os.environ.get("DB_PASSWORD")'),
    ("python variable", 'os.environ["DB_PASSWORD"] = db_password\nsettings["SECRET_KEY"] = get_random_secret_key()'),
    ("python field lists", 'fields = ("username", "password", "email")\nexclude = ["password", "last_login"]'),
    ("python replace", 'text = text.replace("password", "passphrase")'),
    ("js read", "const key = process.env['API_KEY'];\nheaders['Authorization'] = `Bearer ${token}`;"),
    ("js getItem", 'const token = localStorage.getItem("token");'),
    ("go Getenv", 'token := os.Getenv("GITHUB_TOKEN")\ncfg := Config{Password: os.Getenv("DB_PASSWORD")}'),
    ("ruby fetch", 'ENV.fetch("API_TOKEN")\nENV["API_TOKEN"] = nil'),
    ("php getenv", "$pw = getenv('DB_PASSWORD');\n$x = $_ENV['DB_PASSWORD'];"),
    ("php define from env", "define('DB_PASSWORD', getenv('DB_PASSWORD'));"),
    ("powershell read", "Write-Host $env:GITHUB_TOKEN\n$env:API_KEY = $null"),
    ("powershell placeholder", '$env:GITHUB_TOKEN="<your-token>"'),
    ("dockerfile ARG without default", "ARG NPM_TOKEN\nENV NODE_ENV production\nENV API_KEY=${API_KEY}"),
    ("fish read", "set -gx PATH $PATH ~/bin\nset -gx API_TOKEN $GITHUB_TOKEN"),
    ("k8s secretKeyRef", "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef: {name: db, key: password}"),
    ("github actions", "env:\n  API_TOKEN: ${{ secrets.API_TOKEN }}\n  NODE_ENV: production"),
    ("arn", "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf"),
    ("f-string format", 'print(f"{token:02x}")'),
    ("uuid and hash as ids", 'settings["SESSION_ID"] = "0b6e6f2c-3f2a-4b1d-9c3e-2f1a0b9c8d7e"'),
]


@pytest.mark.parametrize("text", [t for _, t in READ_OR_NOT_A_SECRET], ids=[n for n, _ in READ_OR_NOT_A_SECRET])
def test_code_that_reads_a_secret_name_or_sets_no_secret_is_unchanged(text):
    assert redact(text) == text
