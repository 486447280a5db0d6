"""Prefixed tokens: the prefix names the service (``ghp_``, ``sk-ant-``, ``xoxb-``, ``AKIA``, ``hvs.``...),
so the token is masked wherever it stands and the prefix stays visible."""

from __future__ import annotations

from pimem_index.redaction.rule import (
    B64U,
    END_ALNUM,
    Check,
    Rule,
    all_of,
    has_non_hex,
    mask_before,
    not_after,
    not_after_word,
    orig_at,
)
from pimem_index.redaction.values import body_mixed, group_not_placeholder, has_digit


def _token(
    kind: str,
    scan: bytes,
    body: bytes,
    *,
    fold: bool = True,
    description: str = "",
    check: Check | None = None,
    word: bytes = rb"A-Za-z0-9_",
    end: bytes = END_ALNUM,
    shaped: bool = False,
) -> Rule:
    """A token that starts with the literal ``scan`` (not glued to a word before
    it) followed by ``body``, which is masked; the prefix stays visible.  ``shaped``:
    the prefilter looks for the whole token, for a prefix that is a common word."""
    pattern = not_after_word(scan, word) + rb"(?P<s>" + body + rb")" + end
    return Rule(kind, description, scan, pattern, fold=fold, check=check, shape=pattern if shaped else b"")


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
    _token("huggingface_token", b"api_org_", rb"[a-z]{34}", check=body_mixed),
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
    _token("stripe_key", b"sk_prod_", rb"[a-z0-9]{10,256}", check=body_mixed),
    _token("stripe_key", b"rk_prod_", rb"[a-z0-9]{10,256}", check=body_mixed),
    _token(
        "service_token",
        b"A3-",
        rb"[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
        fold=False,
        description=_SERVICES,
    ),
    _token("service_token", b"ops_", rb"eyj[a-z0-9+/]{200,8192}={0,3}", end=rb"(?![a-z0-9+/=])"),
    _token("service_token", b"p8e-", rb"[a-z0-9]{32}"),
    _token("service_token", b"pat", rb"[A-Za-z0-9]{14}\.[a-f0-9]{64}", fold=False, shaped=True),
    _token("service_token", b"LTAI", rb"[A-Za-z0-9]{20}", fold=False, check=has_digit),
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
        rb"(?<=[0-9]Q~)"
        + not_after(rb"[A-Za-z0-9_~.]{3}[0-9]Q~", rb"A-Za-z0-9_~.")
        + rb"(?P<s>[A-Za-z0-9_~.-]{31,34})(?![A-Za-z0-9_~.-])",
    ),
    _token("service_token", b"4b1d", rb"[A-Za-z0-9]{38}", fold=False, check=has_non_hex),
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
        check=body_mixed,
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
        rb"(?<=[ps]at\.)"
        + not_after(rb"[ps]at\.")
        + rb"(?P<s>[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20})"
        + END_ALNUM,
    ),
    Rule("service_token", "", b".atlasv1.", rb"(?P<s>[a-z0-9_=-]{60,70})(?![a-z0-9_=-])", fold=True),
    _token("service_token", b"HRKU-AA", rb"[A-Za-z0-9_-]{58}", fold=False, end=rb"(?![A-Za-z0-9_-])"),
    _token("service_token", b"ico-", rb"[A-Za-z0-9]{32}", fold=False, check=body_mixed),
    _token("service_token", b"s-s4t2", rb"(?:ud|af)-[a-f0-9]{64}"),
    Rule(
        "service_token",
        "",
        b"-us",
        rb"(?<=[0-9a-f]{32}-us)" + not_after(rb"[0-9a-f]{32}-us", rb"a-z0-9_") + rb"[0-9]{1,2}" + END_ALNUM,
        fold=True,
        handler=mask_before(32),
    ),
    _token("service_token", b"k.eyJ1", rb"[A-Za-z0-9_-]{40,400}\.[A-Za-z0-9_-]{20,100}", fold=False),
    Rule(
        "service_token",
        "",
        b"_mmk",
        rb"(?<=[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)" + not_after(rb"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk") + END_ALNUM,
        handler=mask_before(36),
    ),
    Rule(
        "service_token",
        "",
        b".webhook.office.com",
        rb"\\?/webhookb2\\?/(?P<s>[a-z0-9@/\\_-]{40,400})",
        fold=True,
    ),
    _token("service_token", b"NR", rb"(?:AK|II|JS)-[A-Za-z0-9-]{19,40}", fold=False, check=has_digit),
    _token("service_token", b"API-", rb"[A-Z0-9]{26}", fold=False, check=has_digit),
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
    _token("service_token", b"sm_", rb"(?:aat|pat|sat)_[a-z0-9]{16}", check=body_mixed),
    _token("service_token", b"shippo_", rb"(?:live|test)_[a-f0-9]{40}"),
    Rule(
        "service_token",
        "",
        b"__contribsys__com",
        rb"(?:\\{0,3}[\"'])?[ \t]*[=:][ \t]*(?:\\{0,3}[\"'])?(?P<s>[a-f0-9]{8}:[a-f0-9]{8})" + END_ALNUM,
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
        check=body_mixed,
    ),
    _token("service_token", b"tfp_", rb"[a-z0-9_.=-]{59}", end=rb"(?![a-z0-9_.=-])"),
    _token("service_token", b"AQVN", rb"[A-Za-z0-9_-]{35,38}", fold=False, end=rb"(?![A-Za-z0-9_-])"),
]


RULES: list[Rule] = [
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
        rb"ey-" + not_after_word(b"key-", rb"a-z0-9_-") + rb"(?P<s>[a-f0-9]{32})(?![a-z0-9_])",
        fold=True,
    ),
    Rule(
        "anthropic_key",
        "Anthropic keys sk-ant-...",
        b"k",
        rb"-(?<=sk-)ant-(?:[a-z]{2,8}[0-9]{2}-)?(?P<s>" + B64U + rb"{20,512})",
        fold=True,
        check=orig_at(-1, b"sk-ant-"),
    ),
    Rule(
        "openai_key",
        "OpenAI keys sk-, sk-proj-, sk-svcacct-, sk-admin-",
        b"k",
        rb"-(?<=sk-)"
        + not_after_word(b"sk-", rb"a-z0-9_")
        + rb"(?:(?:proj|svcacct|admin|none)-)?(?P<s>"
        + B64U
        + rb"{32,512})",
        fold=True,
        check=all_of(orig_at(-1, b"sk-"), body_mixed),
    ),
    Rule(
        "stripe_key",
        "Stripe secret and restricted keys sk_live_, sk_test_, rk_live_, rk_test_, webhook secrets whsec_",
        b"k",
        rb"_(?<=[rs]k_)(?:(?<![a-z0-9][rs]k_)|(?<=\\[nrtbf][rs]k_)|(?<=%[0-9a-f]{2}[rs]k_))(?:live|test)_(?P<s>[a-z0-9]{10,256})",
        fold=True,
        check=body_mixed,
    ),
    Rule(
        "twilio",
        "Twilio account SIDs AC..., API key SIDs SK..., and a 32-hex auth token right after a SID",
        b"k",
        rb"(?<=sk)" + not_after_word(b"sk", rb"a-z0-9_") + rb"(?P<s>[0-9a-f]{32})(?![a-z0-9_])",
        fold=True,
        check=orig_at(-1, b"SK"),
    ),
    Rule(
        "dockerhub_token",
        "Docker Hub access tokens dckr_pat_, dckr_oat_",
        b"k",
        rb"r_(?<=dckr_)(?:pat|oat)_(?P<s>[a-z0-9_-]{20,256})",
        fold=True,
    ),
    Rule(
        "github_token",
        "GitHub tokens ghp_, gho_, ghu_, ghs_, ghr_ and github_pat_",
        b"_",
        rb"(?<=gh[pousr]_)(?P<s>[a-z0-9]{36,255})(?![a-z0-9_])",
        fold=True,
        check=orig_at(-3, b"gh"),
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
        rb"(?<=hf_)" + not_after_word(b"hf_", rb"a-z0-9_") + rb"(?P<s>[a-z0-9]{30,40})(?![a-z0-9_])",
        fold=True,
        check=body_mixed,
        guard=rb"(?<=[pousrmf8ta]_)",
    ),
    Rule(
        "ai_provider_key",
        "AI provider keys: Groq gsk_, xAI xai-, Perplexity pplx-, Replicate r8_, Tavily tvly-",
        b"k",
        rb"_(?<=gsk_)(?P<s>[a-z0-9]{40,64})(?![a-z0-9_])",
        fold=True,
        check=body_mixed,
    ),
    Rule(
        "ai_provider_key",
        "",
        b"_",
        rb"(?<=r8_)" + not_after_word(b"r8_", rb"a-z0-9_") + rb"(?P<s>[a-z0-9]{30,40})(?![a-z0-9_])",
        fold=True,
        check=body_mixed,
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
        check=body_mixed,
    ),
    Rule("stripe_key", "", b"c", rb"_(?<=whsec_)(?P<s>[a-z0-9+/]{24,64})", fold=True),
    Rule(
        "digitalocean_token",
        "DigitalOcean tokens dop_v1_, doo_v1_, dor_v1_",
        b"_",
        rb"v1_(?<=do[opr]_v1_)(?P<s>[a-f0-9]{64})(?![a-z0-9_])",
        fold=True,
    ),
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
        rb"ai-" + not_after_word(b"xai-", rb"a-z0-9_-") + rb"(?P<s>[a-z0-9]{60,100})(?![a-z0-9_])",
        fold=True,
        check=body_mixed,
    ),
    Rule(
        "ai_provider_key",
        "",
        b"x",
        rb"-(?<=pplx-)(?P<s>[a-z0-9]{40,64})(?![a-z0-9_])",
        fold=True,
        check=body_mixed,
    ),
    Rule(
        "google_oauth_token",
        "Google OAuth access tokens ya29....",
        b"y",
        rb"a29\.(?P<s>" + B64U + rb"{20,4096})",
        fold=True,
    ),
    Rule(
        "ai_provider_key",
        "",
        b"y",
        rb"-(?<=tvly-)(?:dev-|prod-)?(?P<s>[a-z0-9]{20,64})(?![a-z0-9_])",
        fold=True,
        check=body_mixed,
    ),
    Rule(
        "pypi_token",
        "PyPI upload tokens pypi-AgE...",
        b"y",
        rb"pi-(?<=pypi-)(?P<s>age" + B64U + rb"{50,4096})",
        fold=True,
        check=orig_at(0, b"AgE", "s"),
    ),
    Rule(
        "sendgrid_key",
        "SendGrid API keys SG.xxx.yyy",
        b"g",
        rb"\.(?<=sg\.)(?P<s>" + B64U + rb"{16,32}\." + B64U + rb"{16,64})",
        fold=True,
        check=orig_at(-1, b"SG."),
    ),
    Rule(
        "gitlab_token",
        "GitLab tokens glpat-, gldt-, glrt-, glptt-, glsoat-, glcbt-, glft-, glimt-, gloas-, glagent-",
        b"g",
        rb"l(?:pat|dt|rt|ptt|soat|cbt|ft|imt|oas|agent)-"
        + rb"(?<![a-z0-9_]gl)".replace(b"gl)", b"gl)")
        + rb"(?P<s>[a-z0-9_.-]{20,256})",
        fold=True,
        check=orig_at(0, b"gl"),
    ),
    Rule(
        "azure_sas_signature",
        "Azure SAS signatures sig=...",
        b"g",
        rb"=(?<=sig=)" + not_after_word(b"sig=", rb"a-z0-9_") + rb"(?P<s>[a-z0-9%+/=]{16,512})",
        fold=True,
    ),
    Rule(
        "aws_secret_key",
        "AWS secret access keys: 40 base64 characters within 300 bytes after an access key id "
        "(aws_secret_access_key=... is masked by secret_assignment too)",
        b"A",
        rb"(?:KIA"
        + not_after_word(b"AKIA", rb"A-Za-z0-9+/")
        + rb"|SIA"
        + not_after_word(b"ASIA", rb"A-Za-z0-9+/")
        + rb")(?P<s>[A-Z0-9]{16})"
        + END_ALNUM
        + rb"(?s:.){0,300}?(?<=[\s,;:=|\"'>])(?P<s2>(?:[A-Za-z0-9+]|\\?/){40})(?![A-Za-z0-9/+=])",
        check=group_not_placeholder("s"),  # AWS's documented AKIAIOSFODNN7EXAMPLE
    ),
    Rule(
        "aws_access_key_id",
        "AWS access key ids AKIA..., ASIA..., AGPA..., AIDA..., AROA... and A3T...",
        b"A",
        rb"(?:3T[A-Z0-9]|KIA|SIA|GPA|IDA|ROA|IPA|NPA|NVA|BIA|CCA)(?P<s>[A-Z0-9]{16})" + END_ALNUM,
        check=group_not_placeholder("s"),
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
        + not_after_word(b"AC")
        + rb"(?P<s>[a-f0-9]{32})"
        + END_ALNUM
        + rb"(?:[^\n]{0,100}?(?<![A-Za-z0-9])(?P<s2>[a-f0-9]{32})(?![A-Za-z0-9]))?",
    ),
] + _SERVICE_RULES
