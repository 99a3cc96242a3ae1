"""The credential formats Strata redacts, as data: domain/sanitise.py compiles its scanners from this
module and the tests generate their recall corpus from it (tests/secret_corpus.py).

The list was drawn up from gitleaks' default rules (config/gitleaks.toml), detect-secrets' plugins and
GitHub's secret-scanning partner list, restated here as shapes; each entry's `sources` names the scanner
rules that cover the same credential. NOT_COVERED lists what is deliberately left out, and why.

A shape is literal text with segments: `{alphabet:n}` or `{alphabet:min-max}` characters drawn from
ALPHABETS, and `(...)?` for an optional part (no nesting). Segments of variable length must be followed
by something their alphabet cannot contain, so every compiled pattern is linear (a test checks it).
"""

from __future__ import annotations

import base64
import re
import string
from dataclasses import dataclass

ALPHABETS: dict[str, str] = {
    "digit": string.digits,
    "hex": string.digits + "abcdef",
    "hexup": string.digits + "ABCDEF",
    "hexany": string.hexdigits,
    "lower": string.ascii_lowercase,
    "alpha": string.ascii_letters,
    "alnum": string.ascii_letters + string.digits,
    "alnumlow": string.ascii_lowercase + string.digits,
    "alnumup": string.ascii_uppercase + string.digits,
    "alnumdash": string.ascii_letters + string.digits + "-",
    "alnumpct": string.ascii_letters + string.digits + "%",
    "b64url": string.ascii_letters + string.digits + "_-",
    "b64urldot": string.ascii_letters + string.digits + "_-.",
    "b64urlpad": string.ascii_letters + string.digits + "_-=",
    "b64": string.ascii_letters + string.digits + "+/",
    "pad": "=",
    "bech32": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
    "b32low": string.ascii_lowercase + "234567",
    "tilde": string.ascii_letters + string.digits + "_.~",
    "tildedash": string.ascii_letters + string.digits + "_.~-",
    "path": string.ascii_letters + string.digits + "_/-",
    "urlpath": string.ascii_letters + string.digits + "_@/.~-",
}
# An alphabet holding "." never ends a token with it: a sentence's full stop is not part of the secret.

FAMILIES = ("cloud", "vcs", "ci", "package_registry", "ml", "payment", "messaging", "email", "database",
            "observability", "saas", "private_key", "jwt", "generic")


@dataclass(frozen=True)
class TokenFormat:
    """A credential recognisable by its own shape: a distinctive prefix, or a literal marker inside it."""

    name: str
    provider: str
    family: str
    kind: str  # the marker it leaves: [REDACTED:<kind>]
    prefixes: tuple[str, ...]  # any one of them, then `body`; empty when the body carries a marker
    body: str  # shape of what follows the prefix
    sources: tuple[str, ...]  # scanner rules covering it: gitleaks:<id>, detect-secrets:<plugin>, github:<type>
    note: str = ""  # structure worth knowing (checksums, what the prefix encodes)
    anywhere: bool = False  # the prefix may sit inside a larger word (`Cookie: _gitlab_session=...`)
    keep_prefix: bool = False  # redact only what follows the prefix (a webhook URL keeps its host)
    needs_digit: bool = False  # the body must hold a digit: keeps words with a short prefix out


@dataclass(frozen=True)
class ContextFormat:
    """A credential with no shape of its own: recognised by where it sits (a key, a header, a URL)."""

    name: str
    provider: str
    family: str
    kind: str
    context: str  # assignment, connection_string, authorization, bearer, url_userinfo, url_query, cli_flag,
    #               xml_value, pem or putty: which rule finds it, and which contexts the corpus builds
    key: str  # the variable, header, parameter or flag it appears under in real files
    value: str  # shape of a realistic value
    sources: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class CommandFormat:
    """A password handed to a command-line program as an option's value (`mysql -p'...'`, `sqlcmd -P ...`,
    `sshpass -p ...`): recognised by the program and its option, whatever the value looks like."""

    name: str
    provider: str
    family: str
    kind: str
    commands: tuple[str, ...]  # program names; a subcommand follows after a space (`docker login`)
    options: tuple[str, ...]  # case-sensitive (mysql's `-p` is the password, its `-P` the port); "" for a
    #                           positional `user/password` (sqlplus)
    attached: bool  # the value may follow the option directly (`-pSECRET`)
    separate: bool  # the value may be the next argument (`-p SECRET`)
    examples: tuple[str, ...]  # realistic command lines, `{}` where the password goes (the corpus uses them)
    sources: tuple[str, ...]
    user_separator: str = ""  # the value is `user<separator>password` (smbclient's `-U user%password`)
    value_prefix: str = ""  # the password follows a marker inside the value (openssl's `-passin pass:...`)
    stops: tuple[str, ...] = ()  # programs a wrapper runs: their options are theirs (`sshpass -p X ssh -p 22`)
    note: str = ""


@dataclass(frozen=True)
class KeyWord:
    """A key name that announces a secret value (`password=`, `X-Api-Key:`, `?access_token=`).

    `tier` says how much the value must look like a secret: `password` (anything but a placeholder or code),
    `strong` (also no bare prose word after a colon), `weak` (must be high-entropy: the word alone is not
    proof)."""

    word: str  # regex for the key's last word, which the redactor scans for
    pattern: str  # regex the lower-cased key must end with
    kind: str
    tier: str
    equals_only: bool = False  # only `key=value` (a URL parameter), never `Key: value` (a file header)


@dataclass(frozen=True)
class Uncovered:
    name: str
    provider: str
    reason: str
    sources: tuple[str, ...] = ()


GL = "gitleaks:"
DS = "detect-secrets:"
GH = "github:"
DOCS = "provider-docs"


def _pem_base64_prefixes() -> tuple[str, ...]:
    """Base64 of a PEM private-key header (a kubeconfig `client-key-data`, a Helm value): the encoding of
    the first whole 3-byte groups is fixed, so it is a prefix like any other."""
    labels = ("RSA PRIVATE KEY", "EC PRIVATE KEY", "DSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "PRIVATE KEY",
              "ENCRYPTED PRIVATE KEY")
    out = []
    for label in labels:
        head = f"-----BEGIN {label}-----".encode()
        out.append(base64.b64encode(head[: len(head) // 3 * 3]).decode())
    return tuple(out)


_UUID = "{hex:8}-{hex:4}-{hex:4}-{hex:4}-{hex:12}"


def _t(name: str, provider: str, family: str, kind: str, prefixes: str | tuple[str, ...], body: str,
       sources: tuple[str, ...], note: str = "", **flags: bool) -> TokenFormat:
    return TokenFormat(name, provider, family, kind, (prefixes,) if isinstance(prefixes, str) else prefixes,
                       body, sources, note, **flags)


TOKEN_FORMATS: tuple[TokenFormat, ...] = (
    # ---- version control ----------------------------------------------------------------------
    _t("github_classic_pat", "GitHub", "vcs", "github_token", "ghp_", "{alnum:36-255}",
       (GL + "github-pat", DS + "GitHubTokenDetector", GH + "github_personal_access_token"),
       "30 random base62 characters and a CRC32 checksum in the last 6"),
    _t("github_oauth_token", "GitHub", "vcs", "github_token", "gho_", "{alnum:36-255}",
       (GL + "github-oauth", DS + "GitHubTokenDetector", GH + "github_oauth_access_token")),
    _t("github_app_user_token", "GitHub", "vcs", "github_token", "ghu_", "{alnum:36-255}",
       (GL + "github-app-token", DS + "GitHubTokenDetector", GH + "github_app_installation_access_token")),
    _t("github_app_installation_token", "GitHub", "vcs", "github_token", "ghs_", "{alnum:36-255}",
       (GL + "github-app-token", DS + "GitHubTokenDetector", GH + "github_app_installation_access_token")),
    _t("github_refresh_token", "GitHub", "vcs", "github_token", "ghr_", "{alnum:36-255}",
       (GL + "github-refresh-token", DS + "GitHubTokenDetector", GH + "github_refresh_token")),
    _t("github_fine_grained_pat", "GitHub", "vcs", "github_token", "github_pat_", "{alnum:20-255}_{alnum:40-255}",
       (GL + "github-fine-grained-pat", GH + "github_personal_access_token"), "22-character id, `_`, 59-character secret"),
    # ---- Strata's own ------------------------------------------------------------------------
    _t("strata_token", "Strata", "saas", "strata_token", "strata_", "{b64url:43}",
       ("strata:domain/credential.py",),
       "a named token of `strata token create`: 32 random bytes, URL-safe base64; an agent that pastes one "
       "into a memory must not publish it to every reader of the repo"),
    _t("gitlab_pat", "GitLab", "vcs", "gitlab_token", "glpat-", "{b64url:20-300}(.{alnumlow:9})?",
       (GL + "gitlab-pat", GL + "gitlab-pat-routable", DS + "GitLabTokenDetector", GH + "gitlab_access_token"),
       "routable tokens end with `.` and a 2-character version plus 7-character CRC"),
    _t("gitlab_deploy_token", "GitLab", "vcs", "gitlab_token", "gldt-", "{b64url:20-64}",
       (GL + "gitlab-deploy-token", DS + "GitLabTokenDetector", GH + "gitlab_deploy_token")),
    _t("gitlab_runner_token", "GitLab", "vcs", "gitlab_token", "glrt-", "{b64url:20-300}(.{alnumlow:9})?",
       (GL + "gitlab-runner-authentication-token", GL + "gitlab-runner-authentication-token-routable",
        DS + "GitLabTokenDetector", GH + "gitlab_runner_auth_token")),
    _t("gitlab_runner_registration_token", "GitLab", "vcs", "gitlab_token", "GR1348941", "{b64url:20-50}",
       (GL + "gitlab-rrt", DS + "GitLabTokenDetector", GH + "gitlab_runner_registration_token")),
    _t("gitlab_pipeline_trigger_token", "GitLab", "vcs", "gitlab_token", "glptt-", "{b64url:40}",
       (GL + "gitlab-ptt", DS + "GitLabTokenDetector", GH + "gitlab_pipeline_trigger_token")),
    _t("gitlab_feed_token", "GitLab", "vcs", "gitlab_token", "glft-", "{b64url:20-64}",
       (GL + "gitlab-feed-token", DS + "GitLabTokenDetector", GH + "gitlab_feed_token_v2")),
    _t("gitlab_incoming_mail_token", "GitLab", "vcs", "gitlab_token", "glimt-", "{b64url:25}",
       (GL + "gitlab-incoming-mail-token", DS + "GitLabTokenDetector", GH + "gitlab_incoming_email_token")),
    _t("gitlab_kubernetes_agent_token", "GitLab", "vcs", "gitlab_token", "glagent-", "{b64url:50-1024}",
       (GL + "gitlab-kubernetes-agent-token", DS + "GitLabTokenDetector", GH + "gitlab_kubernetes_agent_token")),
    _t("gitlab_oauth_app_secret", "GitLab", "vcs", "gitlab_token", "gloas-", "{b64url:64}",
       (GL + "gitlab-oauth-app-secret", DS + "GitLabTokenDetector", GH + "gitlab_oauth_app_secret")),
    _t("gitlab_scim_token", "GitLab", "vcs", "gitlab_token", "glsoat-", "{b64url:20-64}",
       (GL + "gitlab-scim-token", DS + "GitLabTokenDetector", GH + "gitlab_scim_oauth_token")),
    _t("gitlab_ci_job_token", "GitLab", "vcs", "gitlab_token", "glcbt-", "{alnum:1-5}_{b64url:20-64}",
       (GL + "gitlab-cicd-job-token", DS + "GitLabTokenDetector", GH + "gitlab_ci_build_token")),
    _t("gitlab_feature_flag_token", "GitLab", "vcs", "gitlab_token", "glffct-", "{b64url:20-64}",
       (GL + "gitlab-feature-flag-client-token", GH + "gitlab_feature_flag_client_token")),
    _t("gitlab_session_cookie", "GitLab", "vcs", "gitlab_token", "_gitlab_session=", "{alnumlow:32}",
       (GL + "gitlab-session-cookie",), anywhere=True, keep_prefix=True),
    _t("atlassian_api_token", "Atlassian", "vcs", "atlassian_token", "ATATT3", "{b64urlpad:150-300}",
       (GL + "atlassian-api-token", GH + "atlassian_api_token"), "Jira, Confluence and Bitbucket API tokens"),
    _t("bitbucket_access_token", "Atlassian", "vcs", "atlassian_token", "ATCTT3", "{b64urlpad:150-300}",
       (DOCS,), "repository and workspace access tokens"),
    _t("bitbucket_app_password", "Atlassian", "vcs", "atlassian_token", "ATBB", "{alnum:24-40}", (DOCS,),
       needs_digit=True),

    # ---- CI/CD and infrastructure tools -------------------------------------------------------
    _t("terraform_cloud_token", "HashiCorp", "ci", "terraform_token", (), "{alnum:14}.atlasv1.{b64urlpad:60-70}",
       (GL + "hashicorp-tf-api-token", GH + "terraform_api_token"), "the marker `.atlasv1.` sits after a 14-character id"),
    _t("vault_service_token", "HashiCorp", "ci", "vault_token", "hvs.", "{b64url:90-120}",
       (GL + "vault-service-token", GH + "hashicorp_vault_service_token")),
    _t("vault_batch_token", "HashiCorp", "ci", "vault_token", "hvb.", "{b64url:138-300}",
       (GL + "vault-batch-token", GH + "hashicorp_vault_batch_token")),
    _t("vault_legacy_token", "HashiCorp", "ci", "vault_token", "s.", "{alnum:24}",
       (GL + "vault-service-token",), "pre-1.10 service tokens", needs_digit=True),
    _t("pulumi_access_token", "Pulumi", "ci", "pulumi_token", "pul-", "{hex:40}",
       (GL + "pulumi-api-token", GH + "pulumi_access_token")),
    _t("doppler_token", "Doppler", "ci", "doppler_token", ("dp.pt.", "dp.ct.", "dp.sa.", "dp.scim.", "dp.audit."),
       "{alnum:40-44}", (GL + "doppler-api-token", GH + "doppler_personal_token", GH + "doppler_cli_token",
                         GH + "doppler_service_account_token", GH + "doppler_scim_token", GH + "doppler_audit_token"),
       "personal, CLI, service-account, SCIM and audit tokens"),
    _t("doppler_service_token", "Doppler", "ci", "doppler_token", "dp.st.", "({b64url:1-32}.)?{alnum:40-44}",
       (GH + "doppler_service_token",), "an optional environment slug before the secret"),
    _t("sonarqube_token", "SonarSource", "ci", "sonar_token", ("squ_", "sqp_", "sqa_"), "{hex:40}",
       (GL + "sonar-api-token",), "user, project and global analysis tokens"),
    _t("jfrog_api_key", "JFrog", "package_registry", "jfrog_token", "AKCp", "{alnum:69}",
       (GL + "artifactory-api-key", DS + "ArtifactoryDetector", GH + "jfrog_platform_api_key")),
    _t("jfrog_reference_token", "JFrog", "package_registry", "jfrog_token", "cmVmdGtu", "{alnum:56}",
       (GL + "artifactory-reference-token", GH + "jfrog_platform_reference_token"), "the prefix is base64 of `reftkn`"),
    _t("sourcegraph_token", "Sourcegraph", "ci", "sourcegraph_token", "sgp_", "({hexany:16}_)?{hexany:40}",
       (GL + "sourcegraph-access-token", GH + "sourcegraph_access_token"), "an optional 16-character instance id"),
    _t("sourcegraph_local_token", "Sourcegraph", "ci", "sourcegraph_token", "sgp_local_", "{hexany:40}",
       (GL + "sourcegraph-access-token", GH + "sourcegraph_access_token")),
    _t("harness_token", "Harness", "ci", "harness_token", ("pat.", "sat."), "{b64url:22}.{alnum:24}.{alnum:20}",
       (GL + "harness-api-key",), "personal and service-account tokens"),
    _t("octopus_deploy_key", "Octopus Deploy", "ci", "octopus_key", "API-", "{alnumup:26}",
       (GL + "octopus-deploy-api-key", GH + "octopus_deploy_api_key"), needs_digit=True),
    _t("buildkite_user_token", "Buildkite", "ci", "buildkite_token", "bkua_", "{hex:40}",
       (GH + "buildkite_user_access_token",)),
    _t("docker_hub_pat", "Docker", "package_registry", "docker_token", ("dckr_pat_", "dckr_oat_"), "{b64url:27-64}",
       (GH + "docker_personal_access_token", GH + "docker_organization_access_token"),
       "personal and organisation access tokens"),
    _t("databricks_token", "Databricks", "cloud", "databricks_token", "dapi", "{hex:32}(-{digit:1})?",
       (GL + "databricks-api-token", GH + "databricks_access_token")),
    _t("flyio_token", "Fly.io", "cloud", "flyio_token", "fo1_", "{b64url:43}", (GL + "flyio-access-token",)),
    _t("flyio_macaroon", "Fly.io", "cloud", "flyio_token", "fm2_", "{b64:100-4096}{pad:0-3}",
       (GL + "flyio-access-token",)),
    _t("heroku_api_key_v2", "Heroku", "cloud", "heroku_key", "HRKU-AA", "{b64url:58}",
       (GL + "heroku-api-key-v2", GH + "heroku_platform_api_oauth2_token")),
    _t("render_api_key", "Render", "cloud", "render_key", "rnd_", "{alnum:20-64}", (DOCS,), needs_digit=True),
    _t("netlify_pat", "Netlify", "cloud", "netlify_token", "nfp_", "{alnum:30-50}",
       (GL + "netlify-access-token",), needs_digit=True),
    _t("openshift_token", "Red Hat", "cloud", "openshift_token", "sha256~", "{b64url:43}",
       (GL + "openshift-user-token",)),

    # ---- cloud providers ---------------------------------------------------------------------
    _t("aws_access_key_id", "Amazon Web Services", "cloud", "aws_access_key_id",
       ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"), "{alnumup:16}",
       (GL + "aws-access-token", DS + "AWSKeyDetector", GH + "aws_access_key_id"),
       "the 4-letter prefix names the resource type (AKIA long-lived key, ASIA temporary key, ...)"),
    _t("aws_session_token", "Amazon Web Services", "cloud", "aws_session_token", ("IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdzE"),
       "{b64:100-4096}{pad:0-2}", (GH + "aws_session_token",),
       "the prefix is the fixed start of the serialised token (`origin_ec` for current ones)"),
    _t("aws_bedrock_key", "Amazon Web Services", "cloud", "aws_bedrock_key", "ABSK", "{b64:109-269}{pad:0-2}",
       (GL + "aws-amazon-bedrock-api-key-long-lived",)),
    _t("gcp_api_key", "Google", "cloud", "gcp_api_key", "AIza", "{b64url:35}",
       (GL + "gcp-api-key", GH + "google_api_key", GH + "google_gemini_api_key"), "also Gemini and Firebase keys"),
    _t("google_oauth_client_secret", "Google", "cloud", "google_oauth_secret", "GOCSPX-", "{b64url:28}",
       (GH + "google_oauth_client_secret",)),
    _t("google_oauth_access_token", "Google", "cloud", "google_oauth_token", "ya29.", "{b64urldot:20-2048}",
       (GH + "google_oauth_access_token",)),
    _t("google_oauth_refresh_token", "Google", "cloud", "google_oauth_token", "1//0", "{b64urldot:40-512}",
       (GH + "google_oauth_refresh_token",)),
    _t("azure_ad_client_secret", "Microsoft Azure", "cloud", "azure_client_secret", (),
       "{tilde:3}{digit:1}Q~{tildedash:31-34}",
       (GL + "azure-ad-client-secret", GH + "azure_active_directory_application_secret"),
       "`Q~` after a 3-character id and a version digit"),
    _t("alibaba_access_key_id", "Alibaba Cloud", "cloud", "alibaba_access_key", "LTAI", "{alnum:12-24}",
       (GL + "alibaba-access-key-id", GH + "alibaba_cloud_access_key_id"), needs_digit=True),
    _t("tencent_secret_id", "Tencent Cloud", "cloud", "tencent_secret_id", "AKID", "{alnum:32}",
       (GH + "tencent_cloud_secret_id",), needs_digit=True),
    _t("yandex_api_key", "Yandex", "cloud", "yandex_key", "AQVN", "{b64url:35-38}",
       (GL + "yandex-api-key", GH + "yandex_cloud_api_key")),
    _t("yandex_static_key", "Yandex", "cloud", "yandex_key", "YC", "{b64url:38}",
       (GL + "yandex-aws-access-token", GH + "yandex_cloud_iam_access_secret"), needs_digit=True),
    _t("yandex_iam_token", "Yandex", "cloud", "yandex_key", "t1.", "{b64url:20-400}{pad:0-2}.{b64url:86}{pad:0-2}",
       (GL + "yandex-access-token", GH + "yandex_cloud_iam_token")),
    _t("digitalocean_token", "DigitalOcean", "cloud", "digitalocean_token", ("dop_v1_", "doo_v1_", "dor_v1_"),
       "{hex:64}", (GL + "digitalocean-pat", GL + "digitalocean-access-token", GL + "digitalocean-refresh-token",
                    GH + "digitalocean_personal_access_token", GH + "digitalocean_oauth_token",
                    GH + "digitalocean_refresh_token"), "personal, OAuth and refresh tokens"),
    _t("cloudflare_origin_ca_key", "Cloudflare", "cloud", "cloudflare_key", "v1.0-", "{hex:24}-{hex:146}",
       (GL + "cloudflare-origin-ca-key",)),
    _t("supabase_pat", "Supabase", "cloud", "supabase_key", "sbp_", "{hex:40}", (GH + "supabase_personal_access_token",)),
    _t("supabase_secret_key", "Supabase", "cloud", "supabase_key", "sb_secret_", "{b64url:20-64}",
       (GH + "supabase_secret_key",)),
    _t("tailscale_key", "Tailscale", "cloud", "tailscale_key", "tskey-", "{lower:3-10}-{alnum:8-20}-{alnum:20-64}",
       (GH + "tailscale_api_key",), "api, auth, client and scim keys: `tskey-<type>-<id>-<secret>`"),

    # ---- observability -----------------------------------------------------------------------
    _t("grafana_cloud_token", "Grafana", "observability", "grafana_token", "glc_", "{b64:32-400}{pad:0-3}",
       (GL + "grafana-cloud-api-token", GH + "grafana_cloud_api_token")),
    _t("grafana_service_account_token", "Grafana", "observability", "grafana_token", "glsa_", "{alnum:32}_{hexany:8}",
       (GL + "grafana-service-account-token", GH + "grafana_project_service_account_token")),
    _t("grafana_api_key", "Grafana", "observability", "grafana_token", "eyJrIjoi", "{alnum:70-400}{pad:0-3}",
       (GL + "grafana-api-key", GH + "grafana_project_api_key"), "base64 of a JSON object starting `{\"k\":\"`"),
    _t("newrelic_user_key", "New Relic", "observability", "newrelic_key", "NRAK-", "{alnumup:27}",
       (GL + "new-relic-user-api-key", GH + "new_relic_personal_api_key")),
    _t("newrelic_insert_key", "New Relic", "observability", "newrelic_key", "NRII-", "{b64url:32}",
       (GL + "new-relic-insert-key",)),
    _t("sentry_user_token", "Sentry", "observability", "sentry_token", "sntryu_", "{hex:64}",
       (GL + "sentry-user-token", GH + "sentry_personal_token")),
    _t("sentry_org_token", "Sentry", "observability", "sentry_token", "sntrys_eyJ", "{b64:60-400}{pad:0-2}_{b64:43}",
       (GL + "sentry-org-token", GH + "sentry_organization_token"), "base64 JSON claims, `_`, then the secret"),
    _t("dynatrace_token", "Dynatrace", "observability", "dynatrace_token", "dt0c01.", "{alnum:24}.{alnum:64}",
       (GL + "dynatrace-api-token", GH + "dynatrace_api_token")),

    # ---- SaaS and developer tools --------------------------------------------------------------
    _t("postman_api_key", "Postman", "saas", "postman_key", "PMAK-", "{hex:24}-{hex:34}",
       (GL + "postman-api-token", GH + "postman_api_key")),
    _t("linear_api_key", "Linear", "saas", "linear_key", "lin_api_", "{alnum:40}",
       (GL + "linear-api-key", GH + "linear_api_key")),
    _t("notion_token", "Notion", "saas", "notion_token", "ntn_", "{digit:11}{alnum:35}",
       (GL + "notion-api-token", GH + "notion_api_token")),
    _t("notion_legacy_token", "Notion", "saas", "notion_token", "secret_", "{alnum:43}",
       (GH + "notion_integration_token",), "integration tokens before `ntn_`", needs_digit=True),
    _t("airtable_pat", "Airtable", "saas", "airtable_token", "pat", "{alnum:14}.{hex:64}",
       (GL + "airtable-personnal-access-token", GH + "airtable_personal_access_token")),
    _t("figma_pat", "Figma", "saas", "figma_token", "figd_", "{b64url:38-48}", (GH + "figma_pat",)),
    _t("typeform_pat", "Typeform", "saas", "typeform_token", "tfp_", "{b64urldot:59}",
       (GL + "typeform-api-token", GH + "typeform_personal_access_token")),
    _t("frameio_token", "Frame.io", "saas", "frameio_token", "fio-u-", "{b64urlpad:64}",
       (GL + "frameio-api-token", GH + "frameio_developer_token")),
    _t("readme_api_key", "ReadMe", "saas", "readme_key", "rdme_", "{alnumlow:70}",
       (GL + "readme-api-token", GH + "readmeio_api_access_token")),
    _t("infracost_key", "Infracost", "saas", "infracost_key", "ico-", "{alnum:32}", (GL + "infracost-api-token",)),
    _t("prefect_key", "Prefect", "saas", "prefect_key", "pnu_", "{alnum:36}",
       (GL + "prefect-api-token", GH + "prefect_user_api_key")),
    _t("scalingo_token", "Scalingo", "cloud", "scalingo_token", "tk-us-", "{b64url:48}", (GL + "scalingo-api-token",)),
    _t("settlemint_token", "SettleMint", "saas", "settlemint_token", ("sm_pat_", "sm_aat_", "sm_sat_"), "{alnum:16}",
       (GL + "settlemint-personal-access-token", GL + "settlemint-application-access-token",
        GL + "settlemint-service-access-token")),
    _t("adobe_client_secret", "Adobe", "saas", "adobe_secret", "p8e-", "{alnum:32}",
       (GL + "adobe-client-secret", GH + "adobe_client_secret")),
    _t("contentful_pat", "Contentful", "saas", "contentful_token", "CFPAT-", "{b64url:43}",
       (GH + "contentful_personal_access_token",)),
    _t("mapbox_secret_token", "Mapbox", "saas", "mapbox_token", "sk.eyJ", "{b64url:50-400}.{b64url:20-40}",
       (GH + "mapbox_secret_access_token",), "public `pk.` tokens are meant to ship and are not redacted"),
    _t("maxmind_license_key", "MaxMind", "saas", "maxmind_key", (), "{alnum:6}_{alnum:29}_mmk",
       (GL + "maxmind-license-key", GH + "maxmind_license_key")),
    _t("onepassword_secret_key", "1Password", "saas", "onepassword_key", "A3-",
       "{alnumup:6}-{alnumup:11}-{alnumup:5}-{alnumup:5}-{alnumup:5}", (GL + "1password-secret-key",)),
    _t("onepassword_service_token", "1Password", "saas", "onepassword_key", "ops_eyJ", "{b64:250-4096}{pad:0-3}",
       (GL + "1password-service-account-token", GH + "1password_service_account_token")),
    _t("shippo_token", "Shippo", "saas", "shippo_token", ("shippo_live_", "shippo_test_"), "{hexany:40}",
       (GL + "shippo-api-token", GH + "shippo_live_api_token", GH + "shippo_test_api_token")),
    _t("easypost_key", "EasyPost", "saas", "easypost_key", ("EZAK", "EZTK"), "{alnum:54}",
       (GL + "easypost-api-token", GL + "easypost-test-api-token", GH + "easypost_production_api_key")),
    _t("duffel_token", "Duffel", "saas", "duffel_token", ("duffel_live_", "duffel_test_"), "{b64urlpad:43}",
       (GL + "duffel-api-token", GH + "duffel_live_access_token")),
    _t("clojars_token", "Clojars", "package_registry", "clojars_token", "CLOJARS_", "{alnumlow:60}",
       (GL + "clojars-api-token", GH + "clojars_deploy_token")),

    # ---- package registries ------------------------------------------------------------------
    _t("npm_token", "npm", "package_registry", "npm_token", "npm_", "{alnum:36}",
       (GL + "npm-access-token", DS + "NpmDetector", GH + "npm_access_token"), "CRC32 checksum in the last 6"),
    _t("pypi_token", "PyPI", "package_registry", "pypi_token", ("pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"),
       "{b64url:50-1000}", (GL + "pypi-upload-token", DS + "PypiTokenDetector", GH + "pypi_api_token"),
       "a macaroon; the prefix encodes `pypi.org` (or `test.pypi.org`)"),
    _t("rubygems_key", "RubyGems", "package_registry", "rubygems_key", "rubygems_", "{hex:48}",
       (GL + "rubygems-api-token", GH + "rubygems_api_key")),
    _t("nuget_key", "NuGet", "package_registry", "nuget_key", "oy2", "{alnumlow:43}", (GH + "nuget_api_key",),
       needs_digit=True),
    _t("crates_io_token", "crates.io", "package_registry", "crates_token", "cio", "{alnum:32}",
       (GH + "cratesio_api_token",), needs_digit=True),

    # ---- machine-learning providers and hubs -----------------------------------------------------
    _t("openai_project_key", "OpenAI", "ml", "openai_key", "sk-proj-", "{b64url:20-512}",
       (GL + "openai-api-key", DS + "OpenAIDetector", GH + "openai_api_key"),
       "current keys hold the marker `T3BlbkFJ` (base64 of `OpenAI`)", needs_digit=True),
    _t("openai_service_key", "OpenAI", "ml", "openai_key", ("sk-svcacct-", "sk-admin-"), "{b64url:20-512}",
       (GL + "openai-api-key", GH + "openai_api_key"), "service-account and admin keys", needs_digit=True),
    _t("openai_legacy_key", "OpenAI", "ml", "openai_key", "sk-", "{alnum:32-64}",
       (GL + "openai-api-key", DS + "OpenAIDetector", GH + "openai_api_key", GH + "deepseek_api_key"),
       "also the shape of DeepSeek and other OpenAI-compatible providers' keys", needs_digit=True),
    _t("anthropic_api_key", "Anthropic", "ml", "anthropic_key", "sk-ant-api03-", "{b64url:20-512}",
       (GL + "anthropic-api-key", GH + "anthropic_api_key"), "93 characters then `AA`"),
    _t("anthropic_admin_key", "Anthropic", "ml", "anthropic_key", "sk-ant-admin01-", "{b64url:20-512}",
       (GL + "anthropic-admin-api-key", GH + "anthropic_admin_api_key")),
    _t("anthropic_other_key", "Anthropic", "ml", "anthropic_key", "sk-ant-", "{b64url:20-512}",
       (GH + "anthropic_session_id",), "OAuth and session tokens share the `sk-ant-` prefix"),
    _t("openrouter_key", "OpenRouter", "ml", "openrouter_key", "sk-or-v1-", "{hex:64}", (GH + "openrouter_api_key",)),
    _t("huggingface_token", "Hugging Face", "ml", "huggingface_token", "hf_", "{alpha:34}",
       (GL + "huggingface-access-token", GH + "hf_user_access_token")),
    _t("huggingface_org_token", "Hugging Face", "ml", "huggingface_token", "api_org_", "{alpha:34}",
       (GL + "huggingface-organization-api-token", GH + "hf_org_api_key")),
    _t("replicate_token", "Replicate", "ml", "replicate_token", "r8_", "{alnum:37}", (GH + "replicate_api_token",),
       needs_digit=True),
    _t("groq_key", "Groq", "ml", "groq_key", "gsk_", "{alnum:52}", (GH + "groq_api_key",)),
    _t("xai_key", "xAI", "ml", "xai_key", "xai-", "{alnum:80}", (GH + "xai_api_key",)),
    _t("perplexity_key", "Perplexity", "ml", "perplexity_key", "pplx-", "{alnum:48}",
       (GL + "perplexity-api-key", GH + "perplexity_api_key")),
    _t("langsmith_key", "LangChain", "ml", "langsmith_key", ("lsv2_pt_", "lsv2_sk_"), "{hex:32}_{hex:10}",
       (GH + "langchain_api_personal_key", GH + "langchain_api_server_key"), "personal and service keys"),
    _t("pinecone_key", "Pinecone", "ml", "pinecone_key", "pcsk_", "{alnum:4-10}_{alnum:40-100}",
       (GH + "pinecone_api_key",)),

    # ---- payment -------------------------------------------------------------------------------
    _t("stripe_secret_key", "Stripe", "payment", "stripe_key", ("sk_live_", "sk_test_"), "{alnum:10-255}",
       (GL + "stripe-access-token", DS + "StripeDetector", GH + "stripe_api_key", GH + "stripe_test_secret_key"),
       "Paystack secret keys share this shape; publishable `pk_` keys are public by design"),
    _t("stripe_restricted_key", "Stripe", "payment", "stripe_key", ("rk_live_", "rk_test_"), "{alnum:10-255}",
       (GL + "stripe-access-token", DS + "StripeDetector", GH + "stripe_live_restricted_key")),
    _t("stripe_webhook_secret", "Stripe", "payment", "stripe_webhook_secret", "whsec_", "{b64:20-255}{pad:0-2}",
       (GH + "stripe_webhook_signing_secret",)),
    _t("square_access_token", "Square", "payment", "square_token", "EAAA", "{b64url:60}",
       (GL + "square-access-token", GH + "square_access_token")),
    _t("square_legacy_token", "Square", "payment", "square_token", "sq0atp-", "{b64url:22}",
       (GL + "square-access-token", GH + "square_access_token")),
    _t("square_oauth_secret", "Square", "payment", "square_token", "sq0csp-", "{b64url:43}",
       (DS + "SquareOAuthDetector", GH + "square_production_application_secret")),
    _t("braintree_token", "PayPal Braintree", "payment", "braintree_token",
       ("access_token$production$", "access_token$sandbox$"), "{alnumlow:16}${hex:32}", (DOCS,)),
    _t("flutterwave_secret_key", "Flutterwave", "payment", "flutterwave_key", ("FLWSECK_TEST-", "FLWSECK-"),
       "{hexany:32}-X", (GL + "flutterwave-secret-key", GH + "flutterwave_live_api_secret_key")),
    _t("shopify_access_token", "Shopify", "payment", "shopify_token", ("shpat_", "shpca_", "shppa_"), "{hexany:32}",
       (GL + "shopify-access-token", GL + "shopify-custom-access-token", GL + "shopify-private-app-access-token",
        GH + "shopify_access_token", GH + "shopify_custom_app_access_token", GH + "shopify_private_app_password")),
    _t("shopify_shared_secret", "Shopify", "payment", "shopify_token", "shpss_", "{hexany:32}",
       (GL + "shopify-shared-secret", GH + "shopify_app_shared_secret")),
    _t("plaid_access_token", "Plaid", "payment", "plaid_token",
       ("access-sandbox-", "access-development-", "access-production-"), _UUID, (GL + "plaid-api-token",)),

    # ---- messaging -----------------------------------------------------------------------------
    _t("slack_bot_token", "Slack", "messaging", "slack_token", "xoxb-", "{digit:10-13}-{digit:10-13}-{alnum:24-34}",
       (GL + "slack-bot-token", DS + "SlackDetector", GH + "slack_api_token")),
    _t("slack_legacy_bot_token", "Slack", "messaging", "slack_token", "xoxb-", "{digit:8-14}-{alnum:18-26}",
       (GL + "slack-legacy-bot-token", DS + "SlackDetector", GH + "slack_api_token")),
    _t("slack_user_token", "Slack", "messaging", "slack_token", "xoxp-",
       "{digit:10-13}-{digit:10-13}-{digit:10-13}-{alnum:28-34}",
       (GL + "slack-user-token", DS + "SlackDetector", GH + "slack_api_token")),
    _t("slack_app_token", "Slack", "messaging", "slack_token", "xapp-", "{digit:1}-{alnumup:8-12}-{digit:10-13}-{alnum:64}",
       (GL + "slack-app-token", GH + "slack_api_token")),
    _t("slack_config_token", "Slack", "messaging", "slack_token", ("xoxe.xoxp-", "xoxe.xoxb-"), "{digit:1}-{alnum:160-170}",
       (GL + "slack-config-access-token",)),
    _t("slack_refresh_token", "Slack", "messaging", "slack_token", "xoxe-", "{digit:1}-{alnum:140-150}",
       (GL + "slack-config-refresh-token",)),
    _t("slack_legacy_token", "Slack", "messaging", "slack_token", ("xoxa-", "xoxr-", "xoxs-", "xoxo-"),
       "{alnumdash:10-255}", (GL + "slack-legacy-token", GL + "slack-legacy-workspace-token", DS + "SlackDetector")),
    _t("slack_webhook", "Slack", "messaging", "slack_webhook",
       ("hooks.slack.com/services/", "hooks.slack.com/workflows/", "hooks.slack.com/triggers/"), "{path:8-512}",
       (GL + "slack-webhook-url", DS + "SlackDetector", GH + "slack_incoming_webhook_url",
        GH + "slack_workflow_webhook_url"), keep_prefix=True),
    _t("discord_bot_token", "Discord", "messaging", "discord_token",
       ("MT", "Mj", "Mz", "ND", "NT", "Nj", "Nz", "OD", "OT"), "{b64url:22-24}.{b64url:6}.{b64url:27-38}",
       (DS + "DiscordBotTokenDetector", GH + "discord_bot_token"),
       "base64 of the bot's numeric id (so `MT`...`OT`), a timestamp and an HMAC"),
    _t("discord_webhook", "Discord", "messaging", "discord_webhook",
       ("discord.com/api/webhooks/", "discordapp.com/api/webhooks/"), "{digit:17-20}/{b64url:60-68}",
       (DOCS,), keep_prefix=True),
    _t("teams_webhook", "Microsoft", "messaging", "teams_webhook", "webhook.office.com/webhookb2/", "{urlpath:60-400}",
       (GL + "microsoft-teams-webhook",), keep_prefix=True),
    _t("telegram_bot_token", "Telegram", "messaging", "telegram_token", (), "{digit:5-16}:AA{b64url:33}",
       (GL + "telegram-bot-api-token", DS + "TelegramBotTokenDetector", GH + "telegram_bot_token"),
       "the bot's numeric id, `:`, then the secret (always starting `AA`)"),
    _t("twilio_api_key", "Twilio", "messaging", "twilio_key", "SK", "{hexany:32}",
       (GL + "twilio-api-key", DS + "TwilioKeyDetector", GH + "twilio_api_key")),
    _t("firebase_fcm_server_key", "Google", "messaging", "firebase_key", (), "{b64url:4-11}:APA91b{b64url:120-160}",
       (GH + "firebase_cloud_messaging_server_key",)),
    _t("twitter_bearer_token", "X (Twitter)", "messaging", "twitter_token", "A" * 22, "{alnumpct:80-100}",
       (GL + "twitter-bearer-token",), "22 `A`s: the app id's padding"),
    _t("facebook_access_token", "Meta", "messaging", "facebook_token", "EAA", "{alnum:100-512}",
       (GL + "facebook-page-access-token", GH + "facebook_access_token")),

    # ---- email services ------------------------------------------------------------------------
    _t("sendgrid_key", "Twilio SendGrid", "email", "sendgrid_key", "SG.", "{b64url:22}.{b64url:43}",
       (GL + "sendgrid-api-token", DS + "SendGridDetector", GH + "sendgrid_api_key")),
    _t("mailgun_key", "Mailgun", "email", "mailgun_key", "key-", "{hex:32}",
       (GL + "mailgun-private-api-token", GH + "mailgun_api_key")),
    _t("mailchimp_key", "Mailchimp", "email", "mailchimp_key", (), "{hex:32}-us{digit:1-2}",
       (GL + "mailchimp-api-key", DS + "MailchimpDetector", GH + "mailchimp_api_key"), "32 hex, `-us`, data-centre number"),
    _t("brevo_key", "Brevo", "email", "brevo_key", ("xkeysib-", "xsmtpsib-"), "{hex:64}-{alnum:16}",
       (GL + "sendinblue-api-token", GH + "sendinblue_api_key", GH + "sendinblue_smtp_key"), "API and SMTP keys"),

    # ---- databases -----------------------------------------------------------------------------
    _t("planetscale_token", "PlanetScale", "database", "planetscale_token", ("pscale_tkn_", "pscale_oauth_"),
       "{b64urldot:32-64}", (GL + "planetscale-api-token", GL + "planetscale-oauth-token",
                             GH + "planetscale_service_token", GH + "planetscale_oauth_token")),
    _t("planetscale_password", "PlanetScale", "database", "planetscale_token", "pscale_pw_", "{b64urldot:32-64}",
       (GL + "planetscale-password", GH + "planetscale_database_password")),

    # ---- private keys and JWTs -----------------------------------------------------------------
    _t("age_secret_key", "age", "private_key", "private_key", "AGE-SECRET-KEY-1", "{bech32:58}",
       (GL + "age-secret-key",)),
    _t("pem_private_key_base64", "PEM (base64-encoded)", "private_key", "private_key", _pem_base64_prefixes(),
       "{b64:40-16384}{pad:0-2}", (GH + "github_ssh_private_key",),
       "kubeconfig `client-key-data`, Helm values: a PEM private key, base64-encoded once more"),
    _t("jwt", "JSON Web Token", "jwt", "jwt", "eyJ", "{b64url:8-8192}.{b64url:8-65536}.{b64url:16-8192}",
       (GL + "jwt", DS + "JwtTokenDetector", GH + "atlassian_jwt", GH + "frameio_jwt", GH + "palantir_jwt"),
       "signed JWTs (three segments); an unsigned one carries no secret"),
)

CONTEXT_FORMATS: tuple[ContextFormat, ...] = (
    # ---- generic: the key, header or URL part says it is a secret -----------------------------------
    ContextFormat("password_assignment", "generic", "generic", "password", "assignment", "DB_PASSWORD",
                  "{alnum:6-12}!{digit:2}", (GL + "generic-api-key", DS + "KeywordDetector")),
    ContextFormat("secret_assignment", "generic", "generic", "secret", "assignment", "CLIENT_SECRET", "{b64url:24-40}",
                  (GL + "generic-api-key", DS + "KeywordDetector")),
    ContextFormat("token_assignment", "generic", "generic", "token", "assignment", "ACCESS_TOKEN", "{alnum:20-40}",
                  (GL + "generic-api-key",)),
    ContextFormat("api_key_assignment", "generic", "generic", "api_key", "assignment", "apiKey", "{alnum:24-40}",
                  (GL + "generic-api-key", DS + "KeywordDetector")),
    ContextFormat("api_key_header", "generic", "generic", "api_key", "assignment", "X-API-Key", "{hex:32}",
                  (GL + "curl-auth-header",)),
    ContextFormat("bearer_token", "generic", "generic", "bearer_token", "bearer", "Bearer", "{b64url:24-64}",
                  (GL + "curl-auth-header",)),
    ContextFormat("basic_auth_header", "generic", "generic", "basic_auth", "authorization", "Basic", "{b64:16-64}",
                  (GL + "curl-auth-header", DS + "BasicAuthDetector")),
    ContextFormat("curl_user_password", "generic", "generic", "password", "cli_flag", "-u", "{alnum:8-16}",
                  (GL + "curl-auth-user",), "curl's `-u user:password`"),
    ContextFormat("password_flag", "generic", "generic", "password", "cli_flag", "--password", "{alnum:8-16}",
                  (DS + "KeywordDetector",)),
    ContextFormat("url_password", "generic", "generic", "url_password", "url_userinfo", "https://deploy@git.example.com",
                  "{alnum:8-20}", (DS + "BasicAuthDetector",), "user:password in any URL's userinfo"),
    ContextFormat("url_userinfo_token", "generic", "generic", "url_token", "url_userinfo", "https://@github.com",
                  "{hex:40}", (DS + "BasicAuthDetector",), "a token as the only userinfo part (`https://<token>@host`)"),
    ContextFormat("url_access_token", "generic", "generic", "token", "url_query", "access_token", "{b64url:30-60}",
                  (GL + "generic-api-key",)),
    ContextFormat("url_api_key", "generic", "generic", "api_key", "url_query", "api_key", "{alnum:32}",
                  (GL + "generic-api-key",)),
    ContextFormat("url_client_secret", "generic", "generic", "secret", "url_query", "client_secret", "{b64url:30-40}",
                  (GL + "generic-api-key",), "OAuth client credentials in a token request"),
    ContextFormat("xml_password_value", "NuGet", "package_registry", "password", "xml_value", "ClearTextPassword",
                  "{alnum:12-20}", (GL + "nuget-config-password",), "`<add key=\"...Password\" value=\"...\"/>`"),
    # ---- cloud ---------------------------------------------------------------------------------
    ContextFormat("aws_secret_access_key", "Amazon Web Services", "cloud", "aws_secret_access_key", "assignment",
                  "aws_secret_access_key", "{b64:40}", (DS + "AWSKeyDetector", GH + "aws_secret_access_key"),
                  "40 base64 characters: a bare one is indistinguishable from a hash"),
    ContextFormat("aws_presigned_signature", "Amazon Web Services", "cloud", "signature", "url_query",
                  "X-Amz-Signature", "{hex:64}", (DOCS,), "the signature of a presigned URL grants its access"),
    ContextFormat("azure_storage_account_key", "Microsoft Azure", "cloud", "secret", "connection_string", "AccountKey",
                  "{b64:86}==", (DS + "AzureStorageKeyDetector", GH + "azure_storage_account_key")),
    ContextFormat("azure_service_bus_key", "Microsoft Azure", "cloud", "secret", "connection_string",
                  "SharedAccessKey", "{b64:43}=", (GH + "azure_service_bus_identifiable",)),
    ContextFormat("azure_sas_token", "Microsoft Azure", "cloud", "signature", "url_query", "sig", "{b64:43}%3D",
                  (GH + "azure_sas_token",)),
    ContextFormat("azure_devops_pat", "Microsoft Azure", "ci", "token", "assignment", "AZURE_DEVOPS_EXT_PAT",
                  "{b32low:52}", (GH + "azure_devops_personal_access_token",), "52 lower-case base32 characters"),
    ContextFormat("azure_openai_key", "Microsoft Azure", "ml", "api_key", "assignment", "api-key", "{hex:32}",
                  (GH + "azure_openai_key",)),
    ContextFormat("azure_apim_subscription_key", "Microsoft Azure", "cloud", "secret", "assignment",
                  "Ocp-Apim-Subscription-Key", "{hex:32}", (GH + "azure_apim_subscription_key",)),
    ContextFormat("azure_function_key", "Microsoft Azure", "cloud", "secret", "assignment", "x-functions-key",
                  "{b64url:54}==", (GH + "azure_function_key",)),
    ContextFormat("heroku_api_key", "Heroku", "cloud", "api_key", "assignment", "HEROKU_API_KEY", _UUID,
                  (GL + "heroku-api-key",), "a UUID: only its key tells it from a request id"),
    ContextFormat("cloudflare_api_token", "Cloudflare", "cloud", "token", "assignment", "CLOUDFLARE_API_TOKEN",
                  "{b64url:40}", (GL + "cloudflare-api-key", GH + "cloudflare_account_api_token")),
    ContextFormat("cloudflare_global_key", "Cloudflare", "cloud", "secret", "assignment", "X-Auth-Key", "{hex:37}",
                  (GL + "cloudflare-global-api-key", GH + "cloudflare_global_user_api_key")),
    ContextFormat("ibm_cloud_iam_key", "IBM Cloud", "cloud", "secret", "assignment", "IBM_CLOUD_IAM_KEY",
                  "{b64url:44}", (DS + "IbmCloudIamDetector", GH + "ibm_cloud_iam_key"),
                  "Cloudant, SoftLayer and COS HMAC credentials sit under password/api_key/secret keys as well"),
    ContextFormat("vercel_token", "Vercel", "cloud", "token", "assignment", "VERCEL_TOKEN", "{alnum:24}",
                  (GH + "vercel_personal_access_token",)),
    ContextFormat("kubernetes_secret_data", "Kubernetes", "cloud", "password", "assignment", "password",
                  "{b64:16-44}=", (GL + "kubernetes-secret-yaml",), "base64 values under a Secret's `data:`"),
    # ---- CI and registries ---------------------------------------------------------------------
    ContextFormat("github_legacy_token_header", "GitHub", "vcs", "authorization", "authorization", "token", "{hex:40}",
                  (GH + "github_oauth_access_token",), "40-hex OAuth tokens from before the `gh?_` prefixes"),
    ContextFormat("gitlab_private_token_header", "GitLab", "vcs", "token", "assignment", "PRIVATE-TOKEN", "{b64url:20}",
                  (GH + "gitlab_access_token",), "20-character tokens from before `glpat-`"),
    ContextFormat("webhook_secret", "GitHub", "vcs", "secret", "assignment", "GITHUB_WEBHOOK_SECRET", "{hex:40}",
                  (GL + "generic-api-key",)),
    ContextFormat("circleci_token", "CircleCI", "ci", "token", "assignment", "Circle-Token", "{hex:40}",
                  (GH + "circleci_personal_access_token",)),
    ContextFormat("snyk_token", "Snyk", "ci", "token", "assignment", "SNYK_TOKEN", _UUID, (GL + "snyk-api-token",)),
    ContextFormat("codecov_token", "Codecov", "ci", "token", "assignment", "CODECOV_TOKEN", _UUID,
                  (GL + "codecov-access-token",)),
    ContextFormat("travis_token", "Travis CI", "ci", "token", "assignment", "TRAVIS_API_TOKEN", "{b64url:22}",
                  (GL + "travisci-access-token",)),
    ContextFormat("npm_legacy_auth_token", "npm", "package_registry", "token", "assignment",
                  "//registry.npmjs.org/:_authToken", _UUID, (DS + "NpmDetector", GH + "npm_access_token")),
    ContextFormat("npmrc_auth", "npm", "package_registry", "credential", "assignment", "_auth", "{b64:24-40}=",
                  (DOCS,), "base64 of `user:password` in .npmrc"),
    ContextFormat("docker_config_auth", "Docker", "package_registry", "credential", "assignment", "auth",
                  "{b64:32-60}==", (DOCS,), "base64 of `user:token` in ~/.docker/config.json"),
    # ---- observability and SaaS ----------------------------------------------------------------
    ContextFormat("datadog_api_key", "Datadog", "observability", "api_key", "assignment", "DD_API_KEY", "{hex:32}",
                  (GL + "datadog-access-token", GH + "datadog_api_key")),
    ContextFormat("datadog_app_key", "Datadog", "observability", "secret", "assignment", "DD_APP_KEY", "{hex:40}",
                  (GH + "datadog_app_key",)),
    ContextFormat("newrelic_license_key", "New Relic", "observability", "secret", "assignment",
                  "NEW_RELIC_LICENSE_KEY", "{hex:36}NRAL", (GH + "new_relic_license_key",)),
    ContextFormat("splunk_hec_token", "Splunk", "observability", "authorization", "authorization", "Splunk", _UUID,
                  (DOCS,)),
    ContextFormat("sentry_dsn", "Sentry", "observability", "url_token", "url_userinfo",
                  "https://@o4505.ingest.sentry.io/4505", "{hex:32}", (DOCS,)),
    ContextFormat("pagerduty_token", "PagerDuty", "observability", "token", "assignment", "PAGERDUTY_TOKEN",
                  "{b64url:20}", (GH + "pagerduty_oauth_token",)),
    ContextFormat("okta_api_token", "Okta", "saas", "authorization", "authorization", "SSWS", "00{b64url:40}",
                  (GL + "okta-access-token",)),
    ContextFormat("algolia_admin_key", "Algolia", "saas", "secret", "assignment", "ALGOLIA_ADMIN_KEY", "{hex:32}",
                  (GL + "algolia-api-key",)),
    ContextFormat("twilio_auth_token", "Twilio", "messaging", "token", "assignment", "TWILIO_AUTH_TOKEN", "{hex:32}",
                  (DOCS,)),
    ContextFormat("postmark_server_token", "Postmark", "email", "token", "assignment", "X-Postmark-Server-Token",
                  _UUID, (DOCS,)),
    ContextFormat("sparkpost_key", "SparkPost", "email", "api_key", "assignment", "SPARKPOST_API_KEY", "{hex:40}",
                  (DOCS,)),
    ContextFormat("smtp_password", "generic", "email", "password", "assignment", "EMAIL_HOST_PASSWORD",
                  "{alnum:16}", (DS + "KeywordDetector",)),
    ContextFormat("django_secret_key", "Django", "saas", "secret", "assignment", "SECRET_KEY",
                  "django-insecure-{b64url:40}", (GL + "generic-api-key",)),
    ContextFormat("rails_secret_key_base", "Ruby on Rails", "saas", "secret", "assignment", "secret_key_base",
                  "{hex:128}", (GL + "generic-api-key",)),
    ContextFormat("jwt_signing_secret", "generic", "saas", "secret", "assignment", "JWT_SECRET", "{b64:32-48}",
                  (GL + "generic-api-key",)),
    # ---- machine learning ----------------------------------------------------------------------
    ContextFormat("cohere_key", "Cohere", "ml", "api_key", "assignment", "CO_API_KEY", "{alnum:40}",
                  (GL + "cohere-api-token", GH + "cohere_api_key")),
    ContextFormat("mistral_key", "Mistral AI", "ml", "api_key", "assignment", "MISTRAL_API_KEY", "{alnum:32}",
                  (GH + "mistral_ai_api_key",)),
    ContextFormat("wandb_key", "Weights & Biases", "ml", "api_key", "assignment", "WANDB_API_KEY", "{hex:40}",
                  (GH + "wandb_api_key",)),
    ContextFormat("kaggle_key", "Kaggle", "ml", "secret", "assignment", "key", "{hex:32}", (DOCS,),
                  "kaggle.json holds `\"key\": \"<32 hex>\"`"),
    # ---- databases -----------------------------------------------------------------------------
    ContextFormat("postgres_url_password", "PostgreSQL", "database", "url_password", "url_userinfo",
                  "postgresql://app@db.internal:5432/prod", "{alnum:12-24}", (DS + "BasicAuthDetector",)),
    ContextFormat("mongodb_url_password", "MongoDB", "database", "url_password", "url_userinfo",
                  "mongodb+srv://svc@cluster0.abcde.mongodb.net/app", "{alnum:12-24}",
                  (GH + "mongodb_atlas_db_uri_with_credentials",)),
    ContextFormat("redis_url_password", "Redis", "database", "url_password", "url_userinfo",
                  "rediss://default@cache.internal:6380/0", "{alnum:16-32}", (DS + "BasicAuthDetector",)),
    ContextFormat("jdbc_password", "JDBC", "database", "password", "url_query", "password", "{alnum:10-16}",
                  (GL + "generic-api-key",), "`jdbc:mysql://host/db?user=app&password=...`"),
    ContextFormat("ado_connection_string_password", "SQL Server", "database", "password", "connection_string",
                  "Password", "{alnum:12-20}", (GH + "azure_sql_password",), "`Server=...;User Id=...;Password=...;`"),
    # ---- private key blocks --------------------------------------------------------------------
    ContextFormat("pem_rsa_private_key", "PEM", "private_key", "private_key", "pem", "RSA PRIVATE KEY",
                  "MIIEow{b64:58}", (GL + "private-key", DS + "PrivateKeyDetector", GH + "github_ssh_private_key")),
    ContextFormat("pem_ec_private_key", "PEM", "private_key", "private_key", "pem", "EC PRIVATE KEY",
                  "MHcCAQEE{b64:56}", (GL + "private-key", DS + "PrivateKeyDetector")),
    ContextFormat("pem_pkcs8_private_key", "PEM", "private_key", "private_key", "pem", "PRIVATE KEY",
                  "MIIEvQIBADAN{b64:52}", (GL + "private-key", DS + "PrivateKeyDetector")),
    ContextFormat("pem_encrypted_private_key", "PEM", "private_key", "private_key", "pem", "ENCRYPTED PRIVATE KEY",
                  "MIIFHDBOBgkq{b64:52}", (GL + "private-key", DS + "PrivateKeyDetector")),
    ContextFormat("openssh_private_key", "OpenSSH", "private_key", "private_key", "pem", "OPENSSH PRIVATE KEY",
                  "b3BlbnNzaC1rZXktdjEAAAAA{b64:40}", (GL + "private-key", DS + "PrivateKeyDetector",
                                                       GH + "github_ssh_private_key")),
    ContextFormat("pgp_private_key_block", "OpenPGP", "private_key", "private_key", "pem", "PGP PRIVATE KEY BLOCK",
                  "lQOYBF{b64:58}", (GL + "private-key", DS + "PrivateKeyDetector")),
    ContextFormat("putty_private_key", "PuTTY", "private_key", "private_key", "putty", "PuTTY-User-Key-File-3",
                  "{b64:64}", (DS + "PrivateKeyDetector",), "the `Private-Lines:` block of a .ppk file"),
)

def _cmd(name: str, provider: str, family: str, commands: str, options: str, form: str, examples: tuple[str, ...],
         sources: tuple[str, ...] = (DOCS,), note: str = "", **more: object) -> CommandFormat:
    """`commands` and `options` are separated by `|`; `form` is attached, separate or both."""
    return CommandFormat(name, provider, family, "password", tuple(commands.split("|")), tuple(options.split("|")),
                         form in ("attached", "both"), form in ("separate", "both"), examples, sources, note=note,
                         **more)  # type: ignore[arg-type]


_MYSQL = ("mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mysqlpump|mysqlbinlog|mysqlslap|mysqlsh|"
          "mariadb|mariadb-dump|mariadb-admin|mariadb-import|mariadb-check|mariadb-show|mariadb-binlog|mariadb-slap")
_MONGO = "mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport|mongostat|mongotop|mongofiles"
_LDAP = "ldapsearch|ldapadd|ldapmodify|ldapdelete|ldapmodrdn|ldapcompare|ldapwhoami|ldappasswd|ldapexop"
_LOGIN = ("docker login|podman login|buildah login|skopeo login|nerdctl login|helm registry login|oras login|"
          "regctl registry login")

# Programs that take a password on their command line. `--password X` and `--password=X` of any program are
# read by the flag and assignment rules; these are the short options, attached values and positional forms
# those rules cannot know (`-p` is mysql's password but ssh's port).
COMMAND_FORMATS: tuple[CommandFormat, ...] = (
    _cmd("mysql_password_option", "MySQL / MariaDB", "database", _MYSQL, "-p", "attached",
         ("mysql -h db.internal -u root -p'{}' shop", "mysqldump -uroot -p{} --single-transaction shop",
          'mariadb -u app -p"{}" -e "select 1"'),
         note="no space: `-p word` asks for the password and takes `word` as the database"),
    _cmd("sqlserver_password_option", "Microsoft SQL Server", "database", "sqlcmd|bcp|osql", "-P", "both",
         ("sqlcmd -S sql.internal -U sa -P {} -Q \"select 1\"", "bcp dbo.orders out orders.dat -S sql.internal -U loader -P'{}' -c")),
    _cmd("mongodb_password_option", "MongoDB", "database", _MONGO, "-p", "separate",
         ("mongosh --host db.internal -u admin -p {} --authenticationDatabase admin",
          "mongodump -u backup -p '{}' --db shop --out /backups")),
    _cmd("redis_password_option", "Redis", "database", "redis-cli|keydb-cli|valkey-cli", "-a|--pass", "separate",
         ("redis-cli -h cache.internal -p 6379 -a {} ping", "valkey-cli --pass '{}' -n 2 flushdb"),
         note="`-p` is the port there"),
    _cmd("cassandra_password_option", "Apache Cassandra", "database", "cqlsh", "-p", "separate",
         ("cqlsh cassandra.internal 9042 -u cassandra -p {}",)),
    _cmd("influxdb_password_option", "InfluxDB", "database", "influx", "-password", "separate",
         ("influx -host metrics.internal -username admin -password {} -execute 'SHOW DATABASES'",)),
    _cmd("oracle_connect_password", "Oracle", "database", "sqlplus|expdp|impdp|exp|imp|rman|sqlldr|dgmgrl", "",
         "separate", ("sqlplus -s app/{}@//db.internal:1521/ORCL @migrate.sql",
                      "expdp system/{}@orcl directory=DUMP_DIR dumpfile=full.dmp full=y"),
         user_separator="/", note="the connect string `user/password@database`"),
    _cmd("sshpass_password_option", "sshpass", "generic", "sshpass", "-p", "both",
         ("sshpass -p '{}' ssh deploy@10.0.0.5 uptime", "sshpass -p{} scp -P 2222 build.tar.gz deploy@10.0.0.5:/srv"),
         stops=("ssh", "scp", "sftp", "rsync", "git")),
    _cmd("putty_password_option", "PuTTY", "generic", "plink|pscp|psftp", "-pw", "separate",
         ("plink -ssh deploy@10.0.0.5 -pw {} uptime", "pscp -pw '{}' build.zip deploy@10.0.0.5:/srv")),
    _cmd("registry_login_password", "Docker / Podman / Helm", "package_registry", _LOGIN, "-p", "separate",
         ("docker login -u ci-bot -p {} registry.example.com",
          "helm registry login registry.example.com --username ci -p '{}'"),
         note="`-p` of `docker run` is a port mapping: only the login subcommands count"),
    _cmd("ldap_bind_password", "OpenLDAP", "generic", _LDAP, "-w", "both",
         ("ldapsearch -x -H ldaps://ldap.internal -D cn=admin,dc=example,dc=com -w {} -b dc=example,dc=com",
          "ldapmodify -x -D cn=admin,dc=example,dc=com -w '{}' -f users.ldif")),
    _cmd("openssl_pass_argument", "OpenSSL", "generic", "openssl", "-passin|-passout|-pass|-password", "separate",
         ("openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{}",
          "openssl rsa -in server.key -passin 'pass:{}' -out plain.key"),
         value_prefix="pass:", note="`env:VAR` and `file:path` name where the password is, not the password"),
    _cmd("java_keystore_password", "Java keytool", "generic", "keytool|jarsigner",
         "-storepass|-keypass|-srcstorepass|-deststorepass|-srckeypass|-destkeypass|-new", "separate",
         ("keytool -importcert -alias ca -file ca.pem -keystore truststore.jks -storepass {} -noprompt",
          "jarsigner -keystore release.jks -storepass '{}' app.apk release")),
    _cmd("gpg_passphrase_option", "GnuPG", "generic", "gpg|gpg2", "--passphrase", "separate",
         ("gpg --batch --pinentry-mode loopback --passphrase '{}' -d secrets.tar.gpg",)),
    _cmd("zip_password_option", "Info-ZIP", "generic", "zip|unzip|zipcloak", "-P", "separate",
         ("zip -r -P {} backup.zip ./exports", "unzip -P '{}' backup.zip -d restore")),
    _cmd("archiver_password_option", "7-Zip / RAR", "generic", "7z|7za|7zz|7zr|rar|unrar", "-p", "attached",
         ("7z x backup.7z -p{} -o./restore", "rar a -hp -p'{}' backup.rar exports")),
    _cmd("ipmi_password_option", "IPMI", "generic", "ipmitool", "-P", "separate",
         ("ipmitool -I lanplus -H 10.0.0.20 -U admin -P {} chassis power status",)),
    _cmd("mqtt_password_option", "Eclipse Mosquitto", "messaging", "mosquitto_pub|mosquitto_sub|mosquitto_rr", "-P",
         "separate", ("mosquitto_pub -h mqtt.internal -u sensor -P {} -t home/temp -m 21",)),
    _cmd("smb_user_password", "Samba", "generic", "smbclient|rpcclient|smbcacls|smbget", "-U|--user", "separate",
         ("smbclient //files.internal/share -U admin%{} -c ls",), user_separator="%",
         note="`-U user%password`"),
    _cmd("httpie_auth_password", "HTTPie", "generic", "http|https", "-a|--auth", "separate",
         ("http -a deploy:{} GET https://ci.example.com/api/json",), user_separator=":",
         note="`-a user:password`, as curl's `-u`"),
    _cmd("freerdp_password_option", "FreeRDP", "generic", "xfreerdp|wlfreerdp|sdl-freerdp", "/p:", "attached",
         ("xfreerdp /v:win.internal /u:admin /p:{} /cert:ignore",)),
)

# Vendors whose secrets have no shape of their own (a bare 32-hex auth token), named in prose: "the Twilio
# auth token is <32 hex>". domain/sanitise.py looks for the vendor's name, then a word that names a secret,
# then (across a few filler words) a value of the format's shape that looks generated.
_PROSE = "prose_named"
PROSE_FORMATS: tuple[ContextFormat, ...] = (
    ContextFormat("twilio_auth_token_in_prose", "Twilio", "messaging", "token", _PROSE, "Twilio", "{hex:32}", (DOCS,),
                  "the account's auth token: 32 hex characters (the `AC...` account SID beside it is an id)"),
    ContextFormat("twilio_api_secret_in_prose", "Twilio", "messaging", "secret", _PROSE, "Twilio", "{alnum:32}",
                  (DOCS,), "the secret of an `SK...` API key"),
    ContextFormat("vonage_api_secret_in_prose", "Vonage", "messaging", "secret", _PROSE, "Vonage|Nexmo",
                  "{alnum:16}", (DOCS,)),
    ContextFormat("plivo_auth_token_in_prose", "Plivo", "messaging", "token", _PROSE, "Plivo", "{alnum:40}", (DOCS,)),
    ContextFormat("messagebird_key_in_prose", "MessageBird", "messaging", "api_key", _PROSE, "MessageBird",
                  "{alnum:25}", (GL + "messagebird-api-token",)),
    ContextFormat("datadog_api_key_in_prose", "Datadog", "observability", "api_key", _PROSE, "Datadog", "{hex:32}",
                  (GL + "datadog-access-token", GH + "datadog_api_key")),
    ContextFormat("datadog_app_key_in_prose", "Datadog", "observability", "secret", _PROSE, "Datadog", "{hex:40}",
                  (GH + "datadog_app_key",)),
    ContextFormat("algolia_admin_key_in_prose", "Algolia", "saas", "secret", _PROSE, "Algolia", "{hex:32}",
                  (GL + "algolia-api-key",)),
    ContextFormat("mailjet_secret_in_prose", "Mailjet", "email", "secret", _PROSE, "Mailjet", "{hex:32}", (DOCS,)),
    ContextFormat("pusher_secret_in_prose", "Pusher", "messaging", "secret", _PROSE, "Pusher", "{hex:20}", (DOCS,)),
)

# Key names that announce a secret. The redactor scans for the last words (`word`, a small regex) and then
# checks the whole key against `pattern`, in this order (the first match decides); a key must END with the
# word, so `password_field` and `token_count` are not keys. `(?<![a-z0-9]...)` keeps `compass`, `bypass`,
# `OLDPWD` out.
_QUALIFIERS = ("app", "application", "master", "license", "licence", "encryption", "signing", "account", "client",
               "service", "server", "consumer", "admin", "deploy", "webhook", "hmac", "jwt", "root", "partner",
               "merchant", "subscription", "functions?", "db", "database", "write", "ingest", "sdk", "shared",
               "storage", "session", "auth", "iam", "cloudant", "softlayer", "kaggle", "mailgun", "mailjet", "sparkpost", "algolia", "stripe",
               "datadog", "dd", "cloudflare", "cf", "heroku", "twilio", "sendgrid", "openai", "anthropic",
               "gemini", "google", "azure", "aws")
KEY_WORDS: tuple[KeyWord, ...] = (
    KeyWord(r"key", r"secret[_.-]?access[_.-]?key", "aws_secret_access_key", "strong"),
    KeyWord(r"pass(?:word|wd|phrase|code)", r"pass(?:word|wd|phrase|code)", "password", "password"),
    KeyWord(r"pass", r"(?<![a-z0-9])pass", "password", "password"),
    KeyWord(r"pwd", r"(?<![a-z0-9])pwd", "password", "password"),
    KeyWord(r"pw", r"(?<![a-z0-9])pw", "password", "password"),
    KeyWord(r"key[_.-]?base", r"secret[_.-]?key[_.-]?base", "secret", "strong"),
    KeyWord(r"key", r"secret[_.-]?key", "secret", "strong"),
    KeyWord(r"secret", r"secret", "secret", "strong"),
    KeyWord(r"key", r"api[_.-]?key", "api_key", "strong"),
    KeyWord(r"key", r"access[_.-]?key", "secret", "strong"),
    KeyWord(r"key", r"private[_.-]?key", "secret", "strong"),
    KeyWord(r"token", r"token", "token", "strong"),
    KeyWord(r"key", r"(?<![a-z0-9])(?:" + "|".join(_QUALIFIERS) + r")[_.-]?key", "secret", "weak"),
    KeyWord(r"key", r"(?<![a-z0-9_.-])key", "secret", "weak"),
    KeyWord(r"cred(?:ential)?s?", r"cred(?:ential)?s?", "credential", "weak"),
    KeyWord(r"auth", r"(?<![a-z0-9])auth", "credential", "weak"),
    KeyWord(r"sig(?:nature)?", r"signature|(?<![a-z0-9])sig", "signature", "weak", equals_only=True),
    KeyWord(r"pat", r"(?<![a-z0-9])pat", "token", "weak"),
)

# Authorization schemes whose parameter is the credential itself (`Digest` and `AWS4-HMAC-SHA256` carry
# `key=value` pairs instead, which the assignment rule reads).
AUTH_SCHEMES: dict[str, str] = {
    "bearer": "bearer_token", "basic": "basic_auth", "token": "authorization", "bot": "authorization",
    "ssws": "authorization", "splunk": "authorization", "geniekey": "authorization", "apikey": "authorization",
    "api-key": "authorization", "key": "authorization", "dsn": "authorization",
}

NOT_COVERED: tuple[Uncovered, ...] = (
    Uncovered("bare_hex_or_base64_secret", "any",
              "A bare 32/40/64-character hex or base64 string (Datadog keys, AWS secret keys, Twilio auth tokens, "
              "CircleCI tokens...) is indistinguishable from a hash, a git sha or an id: covered only under a key, "
              "header or URL parameter that names it (CONTEXT_FORMATS), or after its vendor's name and a word "
              "naming a secret in prose (PROSE_FORMATS)."),
    Uncovered("bare_uuid_secret", "Heroku, Snyk, Postmark, Codecov",
              "UUID-shaped keys look like every request id: covered only in context."),
    Uncovered("clickhouse_cloud_key", "ClickHouse",
              "The `4b1d` prefix is four hex digits, so hashes start with it every 65,536 times.",
              (GL + "clickhouse-cloud-api-secret-key",)),
    Uncovered("twilio_account_sid", "Twilio", "`AC` + 32 hex is an account identifier, not a secret.",
              (DS + "TwilioKeyDetector", GH + "twilio_account_sid")),
    Uncovered("public_client_keys", "Stripe, Mapbox, Lob, Flutterwave, New Relic browser",
              "Publishable keys (`pk_live_`, `pk.eyJ`, `FLWPUBK`, `NRJS-`) are designed to ship in web pages.",
              (GL + "flutterwave-public-key", GL + "lob-pub-api-key", GL + "new-relic-browser-api-token")),
    Uncovered("client_ids", "Adobe, Asana, Bitbucket, Discord, LinkedIn, Looker, Plaid, Sumo Logic...",
              "OAuth client ids and app ids identify, they do not authenticate; their secrets are covered in context.",
              (GL + "adobe-client-id", GL + "discord-client-id", GL + "plaid-client-id", GL + "sumologic-access-id")),
    Uncovered("keyword_only_vendor_keys", "Adafruit, Beamer, Bittrex, Coinbase, Finnhub, Flickr, Kraken, ...",
              "Vendor keys with no prefix (gitleaks matches them after the vendor's name): covered when their key "
              "ends in key/token/secret/password; `ADAFRUIT_IO=...` without such a word is not."),
    Uncovered("facebook_app_token", "Meta",
              "`<app id>|<secret>`: a `|` between digits and hex is also a table cell or a shell pipe.",
              (GL + "facebook-access-token",)),
    Uncovered("jwt_base64", "JSON Web Token", "A JWT base64-encoded once more (`ZXlK...`) is rare in agent notes "
              "and its prefix is common in base64 data.", (GL + "jwt-base64",)),
    Uncovered("unsigned_jwt", "JSON Web Token", "Two segments and an empty signature: the claims are not a secret."),
    Uncovered("artifactory_password_ap", "JFrog", "`AP` + 8 alphanumerics (detect-secrets) matches ordinary words "
              "and ids.", (DS + "ArtifactoryDetector",)),
    Uncovered("pkcs12_file", "any", "Binary .p12/.pfx files never reach a text memory.", (GL + "pkcs12-file",)),
    Uncovered("positional_cli_passwords", "htpasswd, rabbitmqctl, net use, mysql_config_editor",
              "`htpasswd -b file user password`, `rabbitmqctl add_user name password`: the password is the n-th "
              "bare argument, which only a parser of each program's options could find; the option forms "
              "(COMMAND_FORMATS) and `--password` of any program are covered."),
    Uncovered("netrc_and_pgpass", "any",
              "`machine h login u password p` and `host:port:db:user:password` lines have no `=` or `:` after the "
              "word; a bare `password x` is also prose."),
    Uncovered("azure_identifiable_key_signatures", "Microsoft Azure",
              "Azure's newer keys carry a signature at a fixed offset (for example `AZDO`, `+ASt`), not documented "
              "for every service: covered in context (AccountKey=, SharedAccessKey=, x-functions-key, api-key)."),
    Uncovered("public_ip_address", "any", "An IP address is not a credential (detect-secrets' IPPublicDetector).",
              (DS + "IPPublicDetector",)),
)


# ---- shapes --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Segment:
    alphabet: str  # a key of ALPHABETS
    low: int
    high: int


@dataclass(frozen=True)
class Optional_:
    parts: tuple[str | Segment, ...]


Part = str | Segment | Optional_
_PART = re.compile(r"\{(\w+):(\d+)(?:-(\d+))?\}|\(((?:[^()]|\{[^}]*\})*)\)\?|([^{(]+)")


def parse_shape(shape: str) -> tuple[Part, ...]:
    """The parts of a shape: literal strings, Segments and Optional_ groups, in order."""
    parts: list[Part] = []
    pos = 0
    while pos < len(shape):
        m = _PART.match(shape, pos)
        if m is None:
            raise ValueError(f"bad shape {shape!r} at {pos}")
        if m.group(1):
            if m.group(1) not in ALPHABETS:
                raise ValueError(f"unknown alphabet {m.group(1)!r} in {shape!r}")
            low = int(m.group(2))
            parts.append(Segment(m.group(1), low, int(m.group(3) or low)))
        elif m.group(4) is not None:
            inner = parse_shape(m.group(4))
            if any(isinstance(p, Optional_) for p in inner):
                raise ValueError(f"nested optional part in {shape!r}")
            parts.append(Optional_(inner))  # type: ignore[arg-type]
        else:
            parts.append(m.group(5))
        pos = m.end()
    return tuple(parts)


def all_formats() -> tuple[TokenFormat | ContextFormat | CommandFormat, ...]:
    return TOKEN_FORMATS + CONTEXT_FORMATS + PROSE_FORMATS + COMMAND_FORMATS
