"""Behaviour of pimem_index.redaction.

One behaviour per test; each positive sits beside a must-not over the same
kind of text.  Token-shaped values are built at run time from random
characters (see tests/redaction_corpus.py), so none is committed.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support import redaction_corpus as corpus

from pimem_index.redaction import compiler, driver
from pimem_index.redaction.driver import MASK, SLICE_CHARS, redact
from pimem_index.redaction.gitleaks import GITLEAKS, GITLEAKS_VERSION
from pimem_index.redaction.needles import needles as needles_of
from pimem_index.redaction.table import KINDS, RULES

R = random.Random(20240601)
ALNUM = corpus.ALNUM
B64 = corpus.B64
HEX = corpus.HEX
GH = "gh" + "p_"


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(R.choice(alphabet) for _ in range(n))


def pem_block(label: str = "RSA ", lines: int = 6) -> tuple[str, list[str]]:
    body = [rand(64, B64) for _ in range(lines)]
    return f"-----BEGIN {label}PRIVATE KEY-----\n" + "\n".join(body) + f"\n-----END {label}PRIVATE KEY-----", body


def unchanged(text: str) -> bool:
    return redact(text) == text


# --- key names beside = or : -----------------------------------------------


def test_password_assignment_is_masked_and_key_name_stays():
    assert redact("password=hunter2") == "password=" + MASK
    assert unchanged("password_field = forms.CharField()")


def test_prose_about_passwords_is_untouched():
    assert unchanged("the password is stored in vault")
    assert redact("the password: hunter2") == "the password: " + MASK


def test_empty_password_does_not_swallow_next_line():
    assert unchanged("PASSWORD=\nNEXT=visible")
    assert redact("PASSWORD=s3cret\nNEXT=visible") == "PASSWORD=" + MASK + "\nNEXT=visible"


def test_json_and_escaped_json_values_are_masked():
    assert redact('{"password": "s3cr3t!"}') == '{"password": "' + MASK + '"}'
    assert redact('{\\"api_key\\": \\"abc123def\\"}') == '{\\"api_key\\": \\"' + MASK + '\\"}'
    assert unchanged('{"password": null, "token": ""}')


def test_yaml_toml_ini_xml_values_are_masked():
    assert redact("db:\n  password: hunter2\n") == "db:\n  password: " + MASK + "\n"
    assert redact('[db]\npassword = "hunter2"\n') == '[db]\npassword = "' + MASK + '"\n'
    assert redact("[db]\npassword = two words\n") == "[db]\npassword = " + MASK + "\n"
    assert redact("<password>hunter2</password>") == "<password>" + MASK + "</password>"
    assert unchanged("db:\n  password_file: /run/secrets/db\n")


def test_env_and_export_lines_are_masked_up_to_the_command():
    assert redact("export API_KEY=abc123xyz") == "export API_KEY=" + MASK
    assert redact("PGPASSWORD=s3cret psql -h db") == "PGPASSWORD=" + MASK + " psql -h db"
    assert unchanged("export API_URL=https://api.example.com")


def test_command_line_flag_value_is_masked():
    assert redact("cli --password hunter2 --verbose") == "cli --password " + MASK + " --verbose"
    assert redact("cli --api-key abc123 -v") == "cli --api-key " + MASK + " -v"
    assert unchanged("a password hunter2 would be weak")


def test_token_usage_counts_are_untouched():
    assert unchanged('"usage":{"input":12,"output":3,"totalTokens":2916}')
    assert unchanged('{"input_tokens": 5, "max_tokens": 4096}\ntoken_count = 5')
    assert redact('"token": "abc123def456"') == '"token": "' + MASK + '"'


def test_metadata_key_names_are_untouched():
    assert unchanged('secret_name = "prod/db"\nsecretName: prod/db\ntoken_type = "bearer"')
    assert redact('client_secret = "prod/db"') == 'client_secret = "' + MASK + '"'


def test_variable_references_are_untouched():
    assert unchanged("password: ${DB_PASSWORD}\ntoken=$GITHUB_TOKEN\napi_key: ${{ secrets.KEY }}")
    assert unchanged('api_key = os.environ["API_KEY"]\npassword = args.password\ntoken = get_token()')
    assert redact("password: $ecret1") == "password: $ecret1"  # documented: $-values read as references


def test_obvious_placeholders_are_untouched():
    # documented choice: changeme and friends are well-known defaults, not secrets
    assert unchanged(
        "api_key: <your-api-key>\npassword: xxxxxxxx\nsecret: '***'\nAPI_KEY=YOUR_API_KEY\npassword: changeme"
    )
    assert redact("password: changeme2024") == "password: " + MASK


def test_generic_key_needs_a_secret_looking_value():
    assert unchanged('sort_key = "name"\n"key": "Enter"\ncache_key = "user:1"')
    value = rand(32)
    assert redact(f'encryption_key = "{value}"') == f'encryption_key = "{MASK}"'


def test_type_annotations_are_untouched():
    assert unchanged("def login(user: str, password: str) -> Token:\n    token: Optional[str] = None")
    assert unchanged("    private_key: SSHPrivateKeyTypes,\n    auth: t.Any = None,")
    assert redact("    private_key: Xk3pQ9vL2mR7") == "    private_key: " + MASK


def test_code_assigning_a_variable_is_untouched():
    assert unchanged("self.token = nextchar\nexposed, token = result\npasswd = passwd + 'anonymous@'")
    assert unchanged('"input_token": "next_token",\nportfolio_token = f"share-{portfolio_id}"')
    assert redact('token = "nx8Kq2p"') == 'token = "' + MASK + '"'
    assert unchanged('"input_token": "marker"')  # a plain word is not a machine token


def test_format_fields_regex_groups_and_arns_are_untouched():
    assert unchanged("f'token {token:02x}' and r'(?P<access_key>[A-Z0-9]{20})'")
    assert unchanged('"Resource": "arn:aws:secretsmanager:*:*:secret:prod-db-*"')
    assert unchanged('"AWS::IAM::AccessKey": "62d91b17309e76c8"')


def test_python_bytes_literal_value_is_masked_inside_its_quotes():
    assert redact("pbkdf2(password=b'hunter22', salt=b'x')") == f"pbkdf2(password=b'{MASK}', salt=b'x')"


def test_already_redacted_text_is_stable():
    text = f"password=hunter2 {GH}{rand(36)} Authorization: Bearer {rand(40)}"
    once = redact(text)
    assert redact(once) == once


# --- headers, cookies --------------------------------------------------------


def test_authorization_header_keeps_scheme():
    tok = rand(40)
    assert redact(f"Authorization: Bearer {tok}") == "Authorization: Bearer " + MASK
    assert redact(f'-H "authorization: token {tok}"') == '-H "authorization: token ' + MASK + '"'
    assert unchanged('curl -H "Authorization: Bearer $TOKEN" https://x')


def test_cookie_values_are_masked_and_attributes_kept():
    assert redact("Cookie: sessionid=abc123; csrftoken=def456") == f"Cookie: sessionid={MASK}; csrftoken={MASK}"
    assert redact("Set-Cookie: session=abc123; Path=/; HttpOnly") == f"Set-Cookie: session={MASK}; Path=/; HttpOnly"
    assert unchanged("the cookie is set on login")


# --- token prefixes ------------------------------------------------------------


def test_github_token_keeps_prefix():
    assert redact(f"token {GH}{rand(36)} end") == f"token {GH}{MASK} end"
    assert unchanged(f"commit {rand(40, HEX)}")


def test_token_right_after_escaped_newline_in_json_is_masked():
    token = GH + rand(36)
    out = redact(json.dumps({"text": "see\n\n" + token}))
    assert token not in out and GH + MASK in out
    stripe = "sk" + "_live_" + rand(30)
    assert stripe not in redact(json.dumps({"text": "x\n" + stripe}))


def test_assignment_of_a_prefixed_token_keeps_the_prefix():
    assert redact(f"export GITHUB_TOKEN={GH}{rand(36)}") == f"export GITHUB_TOKEN={GH}{MASK}"


def test_openai_key_is_masked_but_words_with_sk_dash_are_not():
    key = "sk-" + "proj-" + rand(120, corpus.B64U)
    assert redact(key) == "sk-proj-" + MASK
    assert unchanged("scikit sk-learn-compatible-estimators-and-more")


def test_aws_key_id_and_nearby_secret_are_masked():
    kid = "AK" + "IA" + rand(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    secret = rand(40, B64)
    out = redact(f"{kid},{secret}")
    assert kid[4:] not in out and secret not in out
    assert unchanged("AKIA is the prefix of AWS access key ids")


def test_jwt_is_masked_after_its_first_three_characters():
    tok = corpus.g_jwt(R).value
    assert redact(f"token {tok} end") == f"token eyJ{MASK} end"
    assert unchanged("eyJ alone is not a token")


def test_a_telegram_like_token_of_another_length_needs_the_word_telegram():
    tok = "123456789:AA" + rand(36, corpus.B64U)  # Telegram's own tokens have 33 after the AA
    assert tok[10:] not in redact(f"telegram bot {tok}")
    assert tok[10:] in redact(f"ratio {tok}")


def test_uuids_ids_and_hashes_are_untouched():
    assert unchanged('"id": "toolu_01' + rand(22) + '", "sessionId": "6f1c2a9e-3b7d-4c1e-9a2b-1c2d3e4f5a6b"')
    assert unchanged('"integrity": "sha512-' + rand(86, B64) + '=="')
    assert unchanged("color: #ff00aa; background: #1E90FF")


# --- URLs and command lines ------------------------------------------------------


def test_url_password_is_masked_user_and_host_kept():
    assert redact("postgres://app:pa55word@db/app") == f"postgres://app:{MASK}@db/app"
    assert redact("redis://:pa55word@cache:6379") == f"redis://:{MASK}@cache:6379"
    assert unchanged("https://user@host.example.com/x and git@github.com:u/r.git")


def test_curl_user_password_is_masked():
    assert redact("curl -u admin:letmein https://x") == f"curl -u admin:{MASK} https://x"
    assert unchanged("docker run -u 1000:1000 image && git push -u origin main")


def test_mysql_p_password_is_masked_but_not_the_port():
    assert redact("mysql -uroot -pS3cret db") == f"mysql -uroot -p{MASK} db"
    assert redact("mysql -h h -P 3306 -u r -p S3cret db") == f"mysql -h h -P 3306 -u r -p {MASK} db"
    assert unchanged("mysql -h db -P 3306 -u root app")


def test_sshpass_password_is_masked():
    assert redact("sshpass -p 'hunter2' ssh host") == f"sshpass -p '{MASK}' ssh host"
    assert unchanged("ssh -p 2222 host")


def test_netrc_password_is_masked():
    assert redact("machine api.example.com login me password hunter22") == (
        "machine api.example.com login me password " + MASK
    )
    assert unchanged("the password hunter22 is weak")


def test_requests_auth_tuple_password_is_masked():
    assert redact('requests.get(url, auth=("me", "hunter22"))') == f'requests.get(url, auth=("me", "{MASK}"))'
    assert unchanged("requests.get(url, auth=auth, headers=headers)")


def test_ai_provider_keys_keep_prefix():
    for prefix, n in (("gs" + "k_", 52), ("xa" + "i-", 80), ("pp" + "lx-", 48), ("r" + "8_", 37)):
        assert redact(f"key {prefix}{rand(n)}") == f"key {prefix}{MASK}"
    assert unchanged("taxi-driver, a secret_handshake_protocol, the r8_ folder")


# --- private keys ----------------------------------------------------------------------


def test_pem_private_key_body_is_masked_and_labels_kept():
    block, body = pem_block("RSA ")
    out = redact(block)
    assert out.startswith("-----BEGIN RSA PRIVATE KEY-----" + MASK)
    assert out.rstrip().endswith("-----END RSA PRIVATE KEY-----")
    assert not any(line in out for line in body)


def test_pem_written_with_escaped_newlines_in_json_is_masked():
    block, body = pem_block("")
    out = redact(json.dumps({"private_key": block + "\n"}))
    assert not any(line in out for line in body)
    assert "-----BEGIN PRIVATE KEY-----" in out


def test_pem_cut_off_before_end_is_masked():
    block, body = pem_block("OPENSSH ")
    cut = block[: block.index(body[3]) + 10]
    out = redact(cut + "\n[output truncated]")
    assert not any(line[:10] in out for line in body[:4])


def test_putty_private_lines_are_masked_public_lines_kept():
    public, private = rand(64, B64), rand(64, B64)
    ppk = (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 1\n"
        + public
        + "\nPrivate-Lines: 1\n"
        + private
        + "\nPrivate-MAC: "
        + rand(64, HEX)
    )
    out = redact(ppk)
    assert private not in out and public in out and "Private-MAC" in out


def test_public_keys_and_certificates_are_untouched():
    assert unchanged("-----BEGIN PUBLIC KEY-----\n" + rand(64, B64) + "\n-----END PUBLIC KEY-----")
    assert unchanged("-----BEGIN CERTIFICATE-----\n" + rand(64, B64) + "\n-----END CERTIFICATE-----")


# --- text handling ----------------------------------------------------------------------------


def test_non_ascii_text_around_secrets_survives():
    text = "café ☕ password=s3cr3t 日本語 " + GH + rand(36) + " 🚀\n"
    assert redact(text) == f"café ☕ password={MASK} 日本語 {GH}{MASK} 🚀\n"


def test_lone_surrogates_do_not_break_redaction():
    text = "x\ud800y password=abc"
    assert redact(text) == "x\ud800y password=" + MASK


def test_text_over_a_megabyte_is_redacted_in_slices():
    filler = "".join(f"line {i} of ordinary output\n" for i in range(120_000))  # ~3 MB
    tokens = [GH + rand(36) for _ in range(3)]
    text = tokens[0] + "\n" + filler + tokens[1] + "\n" + filler + tokens[2]
    assert len(text) > 2 * SLICE_CHARS
    out = redact(text)
    assert not any(t in out for t in tokens)
    assert out.count(GH + MASK) == 3 and len(out) == len(text) - 3 * (36 - len(MASK))


def test_pem_block_crossing_a_slice_boundary_is_masked_whole():
    block, body = pem_block("EC ", lines=40)
    pad = "x" * 60 + "\n"
    lead = pad * (SLICE_CHARS // len(pad) - 10)  # the block starts just before the cut
    out = redact(lead + block + "\n" + pad * 100)
    assert not any(line in out for line in body)


# --- registry, corpus ---------------------------------------------------------------------------


def test_every_rule_kind_is_documented():
    for rule in RULES:
        assert rule.kind in KINDS and KINDS[rule.kind]


def test_every_corpus_kind_is_documented():
    assert set(corpus.GENERATORS) <= set(KINDS)


def test_recall_per_kind_is_at_least_99_5_percent():
    table = corpus.recall_table(redact)
    report = corpus.format_table(table)
    print("\n" + report)
    low = {k: v for k, v in table.items() if (v[0] - v[1]) / v[0] < 0.995}
    details = "\n".join(f"--- {k} in {ctx}\n{t}\n=> {o}" for k, v in low.items() for ctx, t, o in v[3])
    assert not low, report + "\n" + details


def test_at_least_98_percent_of_realistic_negatives_survive_and_none_is_mangled():
    negatives = list(corpus.negatives())
    changed = [name for name, text in negatives if redact(text) != text]
    assert len(negatives) >= 100
    assert len(changed) <= 0.02 * len(negatives), changed


@pytest.mark.parametrize("name,text", list(corpus.negatives()), ids=[n for n, _ in corpus.negatives()])
def test_negative_survives_unchanged(name, text):
    assert redact(text) == text


def test_adversarial_input_does_not_backtrack_catastrophically():
    # A guard, not a benchmark (benchmarks/bench_redact.py measures): each
    # input takes milliseconds; catastrophic backtracking would take minutes.
    inputs = {
        "base64": rand(4096, B64) * 64,
        "equals": "=" * 262144,
        "password=": "password=" * 30000,
        "pem headers": ("-----BEGIN RSA PRIVATE KEY-----" + rand(64, B64)) * 3000,
        "curl": ("curl " + "x" * 3000 + "\n") * 80,
        "cookies": ("Cookie: " + "a=a;" * 2000 + "\n") * 30,
    }
    for name, text in inputs.items():
        t0 = time.perf_counter()
        redact(text)
        assert time.perf_counter() - t0 < 10, name


def test_rules_table_compiles_to_one_regex_per_scan_literal():
    scans = [(sc.fold, sc.scan) for sc in driver.compiled().scanners]
    assert len(scans) == len(set(scans))


# --- gitleaks' default rules: every id answered ------------------------------------------------


def _gitleaks_ids_read() -> list[str]:
    path = Path(__file__).with_name("gitleaks_rule_ids.txt")
    lines = path.read_text().splitlines()
    assert GITLEAKS_VERSION in lines[1]  # the file says which version was read
    return [line for line in lines if line and not line.startswith("#")]


def test_every_gitleaks_rule_id_read_has_a_kind_or_a_reason():
    ids = _gitleaks_ids_read()
    assert len(ids) > 200
    assert set(ids) == set(GITLEAKS)  # none missing, none invented
    unanswered = [i for i, (kind, note) in GITLEAKS.items() if kind is None and not note.strip()]
    assert unanswered == []


def test_every_kind_named_for_a_gitleaks_rule_exists():
    named = {kind for kind, _ in GITLEAKS.values() if kind is not None}
    assert named - set(KINDS) == set()


# --- formats gitleaks knows: the shape alone is enough ------------------------------------------


@pytest.mark.parametrize(
    "prefix,body",
    [
        ("hv" + "s.", rand(95, corpus.B64U)),
        ("hv" + "b.", rand(150, corpus.B64U)),
        ("da" + "pi", rand(32, HEX)),
        ("lsv" + "2_", "pt_" + rand(32, HEX) + "_" + rand(10, HEX)),
        ("ruby" + "gems_", rand(48, HEX)),
        ("r" + "8_", rand(37)),
    ],
    ids=["vault hvs", "vault hvb", "databricks", "langsmith", "rubygems", "replicate"],
)
def test_a_token_with_a_long_fixed_prefix_is_masked_without_its_service_named(prefix, body):
    assert redact(f"here: {prefix}{body} ok") == f"here: {prefix}{MASK} ok"
    assert unchanged(f"here: {prefix}short ok")  # the prefix alone is not a token


@pytest.mark.parametrize("shape", corpus.SERVICE_SHAPES, ids=[p for p, _, _ in corpus.SERVICE_SHAPES])
def test_every_documented_service_token_shape_is_masked(shape):
    prefix, n, alphabet = shape
    body = rand(n, alphabet)
    if prefix.startswith("sm" + "_"):
        body = "A" + body[1:-1] + "7"
    out = redact(f"see {prefix}{body} here")  # no key name: the shape alone
    assert body[-12:] not in out
    assert unchanged(f"see {prefix}{body[: n // 3]} here")  # cut short, it is not that token


def test_aws_documentation_example_keys_are_left_alone_but_real_ones_are_not():
    example = "AK" + "IA" + "IOSFODNN7EXAMPLE"
    assert unchanged(f"aws_access_key_id = {example}")
    real = "AK" + "IA" + rand(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    assert real[4:] not in redact(f"aws_access_key_id = {real}")


def test_a_hex_digest_starting_like_a_clickhouse_key_is_left_alone():
    assert unchanged("4b1d" + rand(38, HEX))
    key = "4b1d" + rand(37) + "Z"
    assert key[4:] not in redact(key)


# --- passwords on the command line of known tools ----------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "docker login -u me -p {pw} registry.example.com",
        "podman login -u me -p '{pw}' quay.io",
        "az login -u me@example.com -p {pw}",
        "redis-cli -h cache -a {pw} ping",
        "mongosh -u admin -p {pw} --authenticationDatabase admin",
        "htpasswd -b /etc/nginx/.htpasswd admin {pw}",
        "htpasswd -nb admin {pw}",
        "sqlcmd -S db -U sa -P {pw} -Q 'select 1'",
        "ldapsearch -x -D cn=admin,dc=x -w {pw} -b dc=x",
        "keytool -list -keystore app.jks -storepass {pw}",
        "smbclient //host/share -U admin%{pw}",
        "rabbitmqctl add_user admin {pw}",
    ],
)
def test_a_password_given_to_a_known_tool_is_masked(command):
    pw = "Pw" + rand(14)
    assert redact(command.format(pw=pw)) == command.format(pw=MASK)


def test_port_and_prompt_flags_of_the_same_tools_are_left_alone():
    assert unchanged("redis-cli -p 6379 ping\ndocker run -p 8080:80 image\nmongosh -u admin -p --host db")
    assert unchanged("echo $PW | docker login -u me --password-stdin registry.example.com")


# --- session cookies, config pairs ---------------------------------------------------------------


@pytest.mark.parametrize("name", corpus.SESSION_COOKIES)
def test_a_session_cookie_passed_to_curl_is_masked(name):
    value = rand(32)
    assert redact(f"curl -b '{name}={value}' https://x") == f"curl -b '{name}={MASK}' https://x"
    assert unchanged("curl -b cookies.txt -c cookies.txt https://x")  # a cookie jar, not a cookie


def test_a_session_cookie_by_its_usual_name_is_masked_anywhere():
    value = rand(40)
    assert redact(f'document.cookie = "laravel_session={value}";') == f'document.cookie = "laravel_session={MASK}";'
    assert unchanged("db_session = Session(engine)\nrequests_session = requests.Session()")


@pytest.mark.parametrize(
    "template",
    [
        '<add key="ApiKey" value="{v}" />',
        '<add key="ClearTextPassword" value="{v}" />',
        '[{{"key": "api_key", "value": "{v}"}}]',
        '{{"env": [{{"name": "DB_PASSWORD", "value": "{v}"}}]}}',
        "env:\n  - name: API_TOKEN\n    value: {v}\n",
    ],
)
def test_a_value_whose_sibling_key_attribute_names_a_secret_is_masked(template):
    v = "Xk3" + rand(16)
    assert redact(template.format(v=v)) == template.format(v=MASK)


def test_a_value_whose_sibling_key_attribute_names_a_setting_is_left_alone():
    assert unchanged('<add key="Region" value="eu-west-1" />\n[{"name": "max_tokens", "value": "4096"}]')
    assert unchanged("env:\n  - name: LOG_LEVEL\n    value: debug\n")


# --- every spelling of a secret -------------------------------------------------------------------


def test_urls_written_with_json_escaped_slashes_are_masked():
    pw, dsn_key, hook = rand(16), rand(32, HEX), rand(24)
    text = json.dumps({"db": f"postgres://app:{pw}@db/prod", "dsn": f"https://{dsn_key}@o1.ingest.sentry.io/2"})
    text += json.dumps({"hook": f"https://hooks.slack.com/services/T0AB/B0CD/{hook}"})
    php = text.replace("/", "\\/")  # PHP's json_encode
    out = redact(php)
    assert pw not in out and dsn_key not in out and hook not in out
    assert "postgres:\\/\\/app:" + MASK + "@db\\/prod" in out
    assert unchanged('{"url": "https:\\/\\/github.com\\/user\\/repo.git"}')


def test_url_encoded_key_names_and_separators_are_recognised():
    pw = "Hu" + rand(12)
    assert redact(f"api%5Fkey={pw}") == f"api%5Fkey={MASK}"
    assert redact(f"next=%2Fcb%3Fpassword%3D{pw}%26page%3D2") == f"next=%2Fcb%3Fpassword%3D{MASK}%26page%3D2"
    assert unchanged("next=%2Fsettings%3Ftab%3Dpassword%26sort%5Fkey%3Dname")


def test_values_quoted_with_html_entities_are_masked():
    pw = "Hu" + rand(12)
    assert redact(f"&quot;password&quot;: &quot;{pw}&quot;") == f"&quot;password&quot;: &quot;{MASK}&quot;"
    assert redact(f"password&#x3D;{pw}") == f"password&#x3D;{MASK}"
    assert unchanged("&quot;token_type&quot;: &quot;bearer&quot;, &quot;password&quot;: null")


# --- the needle prefilter: skipping a scanner never changes the result ---------------------------


def _trigger_texts() -> list[str]:
    """Texts that only just hold a scanner's needle (alone, in other cases, at
    an edge, beside a secret-shaped tail), and the recall corpus."""
    texts = []
    for sc in driver.compiled().scanners:
        for needle in sorted(needles_of(sc.regex)):
            n = needle.decode("latin-1")
            texts += [
                n,
                n.upper(),
                n.title(),
                "x" + n,
                n + "=" + rand(40),
                n + " " + rand(40, B64),
                "\\n" + n + ": " + rand(24),
                "é" + n + rand(36, HEX) + "\ud800",
            ]
    texts += [case.text for case in corpus.cases(seed=7, per_context=2)]
    return texts + [text for _, text in corpus.negatives()]


def test_a_scanner_matches_only_texts_holding_one_of_its_needles():
    scanners = [
        (sc, needles_of(sc.regex), entry)
        for sc, entry in zip(driver.compiled().scanners, driver.compiled().plan, strict=True)
    ]
    for text in _trigger_texts():
        b = text.encode("utf-8", "surrogatepass")
        plan = driver.compiled().plan_for(b)
        for sc, needles, entry in scanners:
            hay = b.lower() if sc.fold else b
            if sc.regex.search(hay):
                assert any(n in hay for n in needles), (sc.scan, text)
                assert any(e is entry for e in plan), (sc.scan, text)


def test_prefilter_and_full_scan_agree_on_texts_that_only_just_hold_a_trigger(monkeypatch):
    texts = _trigger_texts()
    fast = [redact(t) for t in texts]
    rules = driver.compiled()
    monkeypatch.setattr(rules, "plan_for", lambda b: rules.plan)
    assert [redact(t) for t in texts] == fast


def test_every_scanner_has_needles_where_hyperscan_installs():
    pytest.importorskip("hyperscan")
    assert driver.compiled().needle_db is not None
    assert driver.compiled().always == [], "a scanner without needles runs on every text"


def test_needles_are_read_off_the_pattern():
    needles = needles_of
    assert needles(re.compile(rb"k(?:ey[0-9]*|en(?<=token))")) == {b"key", b"token"}
    assert needles(re.compile(rb"_(?<=gh[po]_)[a-z]{3}")) == {b"ghp_", b"gho_"}
    assert needles(re.compile(rb"(?:ab|cd)ef")) == {b"abef", b"cdef"}
    assert needles(re.compile(rb"a*b?")) == {b""}  # nothing is required
    assert needles(re.compile(rb"(?i)secret")) == {b""}  # case-insensitive: not a literal
    assert needles(re.compile(rb"x(?i:abc)")) == {b"x"}


def _random_pattern(r: random.Random, depth: int = 0) -> str:
    """A small regex over a b c _ with classes, branches, repeats and lookarounds."""
    kind = r.randrange(3 if depth > 3 else 10)
    if kind == 0:
        return r.choice("abc_") * r.randint(1, 3)
    if kind == 1:
        return r.choice(["[ab]", "[a-c_]", "[^a]", ".", "\\w", "\\b", "$"])
    if kind == 2:
        return r.choice(["a", "b", "c", "_", "ab"])
    if kind == 3:
        return "(?:" + "|".join(_random_pattern(r, depth + 1) for _ in range(r.randint(2, 3))) + ")"
    if kind == 4:
        quant = r.choice(["*", "+", "?", "{2}", "{1,3}", "{0,2}", "*?", "++", "{2}+"])
        return "(?:" + _random_pattern(r, depth + 1) + ")" + quant
    if kind in (5, 6):
        fixed = "".join(r.choice(["a", "b", "_", "[ab]", "c", ".", "[^b]"]) for _ in range(r.randint(1, 3)))
        return "(?" + r.choice(["<=", "<!"]) + fixed + ")"
    if kind == 7:
        return "(?" + r.choice(["=", "!"]) + _random_pattern(r, depth + 1) + ")"
    if kind == 8:
        return "(?" + r.choice([f"P<g{r.randrange(10**6)}>", ">", ":"]) + _random_pattern(r, depth + 1) + ")"
    return "".join(_random_pattern(r, depth + 1) for _ in range(r.randint(2, 4)))


def test_needles_hold_for_random_patterns_and_texts():
    r = random.Random(5)
    texts = ["".join(r.choice("abc_ \n") for _ in range(r.randint(0, 14))) for _ in range(60)]
    for _ in range(1500):
        source = _random_pattern(r)
        try:
            regex = re.compile(source.encode())
        except re.error:
            continue  # e.g. a repeated group name
        needles = needles_of(regex)
        for text in texts:
            b = text.encode()
            if regex.search(b):
                assert any(n in b for n in needles), (source, text, needles)


def test_without_hyperscan_every_scanner_runs_with_the_same_result(monkeypatch):
    texts = _trigger_texts()
    expected = [redact(t) for t in texts]
    monkeypatch.setitem(sys.modules, "hyperscan", None)  # import hyperscan raises ImportError
    plain = compiler.build()
    assert plain.needle_db is None and plain.context_db is None
    monkeypatch.setattr(driver, "_COMPILED", plain)
    assert [redact(t) for t in texts] == expected


def test_threads_redacting_at_once_get_the_same_results():
    # A Hyperscan scan writes to its scratch space and releases the GIL: one per thread.
    texts = [f"password=s3cr3t{i} " + "ordinary output, nothing secret\n" * 4000 + GH + rand(36) for i in range(8)]
    expected = [redact(t) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            assert list(pool.map(redact, texts * 4)) == expected * 4


@pytest.mark.parametrize("before", ["", "word " * (SLICE_CHARS // 5) + "\n"], ids=["small", "sliced"])
def test_a_mask_capped_inside_a_character_takes_the_whole_character(before):
    value = "a1B2" * 63 + "a1B"  # 255 characters: the rule's cap ends inside the é that follows
    out = redact(before + f"curl -u admin:{value}é tail")
    assert out.endswith("curl -u admin:[REDACTED] tail")
    assert value not in out and "é" not in out
    assert redact(before + "un café, s'il vous plaît") == before + "un café, s'il vous plaît"


def telegram_token(bot_id_digits: int = 10, tail: int = 33) -> str:
    return rand(1, "123456789") + rand(bot_id_digits - 1, "0123456789") + ":AA" + rand(tail, ALNUM + "_-")


@pytest.mark.parametrize(
    "text",
    ["export BOT_TOKEN={t}", "curl https://api.example.org/bot{t}/getMe", '{{"token": "{t}"}}', "token\\n{t}"],
)
def test_a_telegram_token_of_the_exact_shape_is_masked_without_the_word_nearby(text):
    token = telegram_token()
    out = redact(text.format(t=token))
    assert token.split(":")[1] not in out and MASK in out


def test_digits_colon_aa_of_another_shape_stay_without_the_word_and_are_masked_with_it():
    short = telegram_token(tail=36)
    long_id = telegram_token(bot_id_digits=12)
    for text in (f"ratio {short} in a log", f"line {long_id}"):
        assert redact(text) == text
        assert MASK in redact("our telegram bot: " + text)


# --- compiled on first use ------------------------------------------------------------------------


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "; import sys; print(' '.join(sys.modules))"], **_RUN)
    return set(out.stdout.split())


_RUN: dict = {"capture_output": True, "text": True, "check": True, "timeout": 60}
_COMPILING = {"pimem_index.redaction.compiler", "pimem_index.redaction.table", "hyperscan"}


def test_importing_the_package_compiles_no_rule_and_the_first_redaction_does():
    assert _modules_after("import pimem_index, pimem_index.cli") & _COMPILING == set()
    after = _modules_after("import pimem_index; pimem_index.redaction.redact('password=hunter2')")
    assert {"pimem_index.redaction.compiler", "pimem_index.redaction.table"} <= after


def test_every_harmless_line_is_kept_on_its_own():
    # precision line by line: a line alone has less around it than the whole negative it comes from
    lines = [line for _, text in corpus.negatives() for line in text.splitlines() if line.strip()]
    changed = [line for line in lines if redact(line) != line]
    assert len(lines) >= 200
    assert changed == []


# --- shapes: a rule whose literal is an ordinary word is looked for by the start of its pattern --------


_SHAPED = random.Random(28)  # not R: these are made at collection, and R's sequence is other tests' values


def _shaped_rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_SHAPED.choice(alphabet) for _ in range(n))


def _scanners_planned(text: str) -> set[bytes]:
    return {step[2] for step in driver.compiled().plan_for(text.encode("utf-8", "surrogatepass"))}


@pytest.mark.parametrize(
    "word, prose, assignment",
    [
        (
            b"pat",
            "the path to the patch matches the pattern",
            "token: pat" + _shaped_rand(14) + "." + _shaped_rand(64, HEX),
        ),
        (
            b"value",
            "return value; the value of x, values",
            '{"name": "DB_PASSWORD", "value": "' + _shaped_rand(20) + '"}',
        ),
        (b"k", "keys, a keyboard, two monkeys; keyring", "api_key = " + _shaped_rand(24)),
        (b"p", "a passport; the bypass; passing", "PASSWORD=" + _shaped_rand(16)),
        (b"uth", "the author; OAuth2 authentication", "Authorization: Bearer " + _shaped_rand(30)),
    ],
)
def test_a_scanner_whose_literal_is_a_word_runs_where_its_secret_can_start_not_on_the_word(word, prose, assignment):
    pytest.importorskip("hyperscan")
    assert word in _scanners_planned(assignment)
    assert MASK in redact(assignment)
    assert word not in _scanners_planned(prose)
    assert redact(prose) == prose


def test_every_shape_is_the_start_of_its_rules_pattern():
    shaped = [rule for rule in RULES if rule.shape]
    assert {rule.kind for rule in shaped} >= {"secret_assignment", "config_pair", "authorization_header"}
    for rule in shaped:
        assert compiler.is_start(rule.shape, rule.pattern), rule.kind
        assert b"{," not in rule.shape  # Python's {,n} is a literal to Hyperscan
    assert compiler.is_start(rb"ab(?P<k>)", rb"ab(?P<k>)c*")
    assert not compiler.is_start(rb"a", rb"a|b")  # the pattern may match without it
    assert not compiler.is_start(rb"(?:ab)", rb"(?:ab)*c")  # a repeat of its last item may be absent
    assert not compiler.is_start(rb"ab", rb"ab{2}")
