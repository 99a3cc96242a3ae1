"""The redaction corpora, shared by tests/unit/test_sanitise.py and ops/eval_redaction.py.

Recall: every format in domain/secret_formats.py, as a fake credential assembled at run time from its
shape (so no literal in the repository looks like a live credential to a scanner), embedded in several
realistic contexts: prose, a shell command, a config line, JSON, a stack trace or log line.
Precision: tests/data/benign_lines.txt, code, config and prose that must come through unchanged.
Adversarial: ~100 KB inputs built to make each rule backtrack, for the linear-time checks.
"""

from __future__ import annotations

import json
import random
import shlex
from dataclasses import dataclass
from pathlib import Path

from strata_recall.domain.secret_formats import (
    ALPHABETS,
    COMMAND_FORMATS,
    CONTEXT_FORMATS,
    PROSE_FORMATS,
    TOKEN_FORMATS,
    CommandFormat,
    ContextFormat,
    Optional_,
    Segment,
    TokenFormat,
    parse_shape,
)

BENIGN = Path(__file__).parent / "data" / "benign_lines.txt"


@dataclass(frozen=True)
class Case:
    format: str  # the format's name in domain/secret_formats.py
    family: str
    kind: str  # the marker the redactor must leave: [REDACTED:<kind>]
    context: str  # prose | shell | config | json | trace (and a few specific ones)
    text: str
    secret: str  # must not survive redaction


def fake(shape: str, rng: random.Random) -> str:
    """A value of `shape`: random characters of each segment's alphabet, optional parts included, with a
    digit and a letter in every long segment so a generated value never reads as a word or a filler."""
    out = []
    for part in parse_shape(shape):
        if isinstance(part, Optional_):
            out += [_segment(p, rng) if isinstance(p, Segment) else p for p in part.parts]
        else:
            out.append(_segment(part, rng) if isinstance(part, Segment) else part)
    return "".join(out)


def _segment(seg: Segment, rng: random.Random) -> str:
    chars = ALPHABETS[seg.alphabet]
    n = rng.randint(seg.low, min(seg.high, seg.low + 12))
    body = [rng.choice(chars) for _ in range(n)]
    if n >= 6:
        for i, wanted in enumerate(("0123456789", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")):
            pool = [c for c in wanted if c in chars]
            if pool:
                body[(i * 5 + 1) % n] = rng.choice(pool)
    if "." in chars:  # a dot ends a sentence, never a token
        body = [c if c != "." or (0 < i < n - 1 and body[i - 1] != ".") else "x" for i, c in enumerate(body)]
    return "".join(body)


# ---- recall: shaped tokens ----------------------------------------------------------------------


def _token_contexts(token: str) -> dict[str, str]:
    return {
        "prose": f"Heads up: I pasted {token} into the ticket by mistake, please rotate it today.",
        "shell": f"./scripts/release.sh --registry-login {token} --dry-run 2>&1 | tee release.log",
        "config": f"upstream_auth_value: {token}",
        "json": f'{{"name": "ci", "value": "{token}", "scope": "deploy"}}',
        "trace": (
            'Traceback (most recent call last):\n  File "/app/client.py", line 42, in connect\n'
            f'    raise AuthError(f"rejected credential {{value!r}}")\nclient.AuthError: rejected credential '
            f"'{token}' for https://api.example.com/v1"
        ),
    }


def _url_contexts(url: str) -> dict[str, str]:
    return {
        "prose": f"Alerts go to {url} when the nightly deploy fails.",
        "shell": f"curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"done\"}}' {url}",
        "config": f"notify_url: {url}",
        "json": f'{{"webhook": "{url}", "events": ["deploy"]}}',
        "trace": f"requests.exceptions.ConnectionError: HTTPSConnectionPool: Max retries exceeded with url: {url}",
    }


def token_cases(fmt: TokenFormat, rng: random.Random) -> list[Case]:
    cases = []
    for prefix in fmt.prefixes or ("",):
        body = fake(fmt.body, rng)
        token = prefix + body
        if fmt.keep_prefix and not fmt.anywhere:  # a webhook URL: the host stays, the path goes
            contexts, secret = _url_contexts("https://" + token), body
        elif fmt.anywhere:  # a cookie: the name stays
            contexts = _token_contexts(token)
            contexts["shell"] = f"curl -b '{token}' https://gitlab.example.com/api/v4/user"
            secret = body
        else:
            contexts, secret = _token_contexts(token), token
        cases += [Case(fmt.name, fmt.family, fmt.kind, ctx, text, secret) for ctx, text in contexts.items()]
    return cases


# ---- recall: credentials known by their context ---------------------------------------------------


def _assignment_contexts(key: str, value: str) -> dict[str, str]:
    if "-" in key and not key.startswith("/"):  # an HTTP header
        return {
            "prose": f"Sent {key}: {value} and the gateway still answered 403.",
            "shell": f"curl -sS -H '{key}: {value}' https://api.example.com/v2/items",
            "config": f"{key}: {value}",
            "json": f'{{"headers": {{"{key}": "{value}", "Accept": "application/json"}}}}',
            "trace": f"DEBUG urllib3 sending headers {{'{key}': '{value}', 'User-Agent': 'python-requests/2.32'}}",
        }
    return {
        "prose": f"CI was failing until I set {key}={value} in the pipeline settings.",
        "shell": f"export {key}='{value}' && ./deploy.sh --env prod",
        "config": f"{key}={value}",
        "json": f'{{"{key}": "{value}", "region": "eu-west-1"}}',
        "trace": f"KeyError: 'region' while loading settings {{'{key}': '{value}', 'DEBUG': False}}",
    }


def _connection_string_contexts(key: str, value: str) -> dict[str, str]:
    conn = {
        "AccountKey": f"DefaultEndpointsProtocol=https;AccountName=prodstore;AccountKey={value};"
        "EndpointSuffix=core.windows.net",
        "SharedAccessKey": f"Endpoint=sb://orders.servicebus.windows.net/;SharedAccessKeyName=send;"
        f"SharedAccessKey={value}",
    }.get(key, f"Server=tcp:sql.internal,1433;Database=app;User Id=app;{key}={value};Encrypt=True;")
    return {
        "prose": f"The connection string was {conn} until we moved it to Key Vault.",
        "shell": f'export APP_CONNECTION_STRING="{conn}"',
        "config": f'  connection_string: "{conn}"',
        "json": f'{{"ConnectionStrings": {{"Default": "{conn}"}}}}',
        "trace": f"System.ArgumentException: Format of the initialization string is wrong: '{conn}'",
    }


def _userinfo_contexts(base: str, value: str) -> dict[str, str]:
    scheme, _, rest = base.partition("://")
    user, _, host = rest.partition("@")
    url = f"{scheme}://{user}:{value}@{host}" if user else f"{scheme}://{value}@{host}"
    return {
        "prose": f"Staging reads from {url} since the migration.",
        "shell": f"git clone {url}/org/service.git" if scheme == "https" else f"psql \"{url}\" -c 'select 1'",
        "config": f"DATABASE_URL={url}",
        "json": f'{{"url": "{url}", "pool_size": 10}}',
        "trace": f"sqlalchemy.exc.OperationalError: connection to server failed (url={url})",
    }


def _query_contexts(key: str, value: str) -> dict[str, str]:
    url = (
        f"jdbc:mysql://db.internal:3306/app?user=app&{key}={value}&useSSL=true"
        if key == "password"
        else f"https://api.example.com/v1/items?{key}={value}&page=2"
    )
    return {
        "prose": f"The export job calls {url} every hour.",
        "shell": f"curl -s '{url}' | jq .",
        "config": f"callback: {url}",
        "json": f'{{"source": "{url}", "retries": 3}}',
        "trace": f"requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: {url}",
    }


def _authorization_contexts(scheme: str, value: str) -> dict[str, str]:
    header = f"Authorization: {scheme} {value}"
    return {
        "prose": f"The probe sends {header} and gets a 200.",
        "shell": f"curl -H '{header}' https://api.example.com/v1/me",
        "config": f"  {header}",
        "json": f'{{"headers": {{"Authorization": "{scheme} {value}"}}}}',
        "trace": f"DEBUG http.client send: b'GET /v1/me HTTP/1.1\\r\\n{header}\\r\\n'",
    }


def _flag_contexts(flag: str, value: str) -> dict[str, str]:
    if flag == "-u":
        return {
            "prose": f"Ran `curl -u deploy:{value} https://ci.example.com/api/json` to check the job.",
            "shell": f"curl -fsS -u deploy:{value} https://ci.example.com/api/json",
            "config": f"\tcurl -u deploy:{value} -X POST https://ci.example.com/job/build",
            "json": f'{{"run": "curl -u deploy:{value} https://ci.example.com/api/json"}}',
            "trace": f"subprocess.CalledProcessError: Command 'curl -u deploy:{value} https://ci.example.com' "
            "returned non-zero exit status 22.",
        }
    return {
        "prose": f"Ran `./manage.py seed_admin {flag} {value}` on the staging box.",
        "shell": f"./manage.py seed_admin --username admin {flag} {value} --no-input",
        "config": f"      run: ./manage.py seed_admin {flag} {value}",
        "json": f'{{"command": "./manage.py seed_admin {flag} {value}"}}',
        "trace": f"subprocess.CalledProcessError: Command '['./manage.py', 'seed_admin', '{flag}', '{value}']' "
        "returned non-zero exit status 1.",
    }


def _xml_contexts(key: str, value: str) -> dict[str, str]:
    line = f'<add key="{key}" value="{value}" />'
    return {
        "prose": f"nuget.config had {line} in packageSourceCredentials.",
        "shell": f"echo '{line}' >> nuget.config",
        "config": f"      {line}",
        "trace": f"NuGet.Configuration.NuGetConfigurationException: unexpected element near {line}",
    }


def _pem_contexts(label: str, first_line: str, rng: random.Random) -> tuple[dict[str, str], str]:
    lines = [first_line] + [fake("{b64:64}", rng) for _ in range(3)] + [fake("{b64:20}", rng) + "=="]
    block = f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"
    return {
        "prose": f"The deploy key is below, keep it out of the repo:\n{block}\nthanks",
        "shell": f"cat > ~/.ssh/deploy_key <<'EOF'\n{block}\nEOF",
        "config": "ssh_private_key: |\n  " + block.replace("\n", "\n  "),
        "json": '{"type": "service_account", "private_key": "' + block.replace("\n", "\\n") + '\\n"}',
        "trace": f"paramiko.ssh_exception.SSHException: not a valid key file: {block}",
    }, lines[1]


def _putty_contexts(header: str, rng: random.Random) -> tuple[dict[str, str], str]:
    private = [fake("{b64:64}", rng) for _ in range(2)]
    ppk = (
        f"{header}: ssh-ed25519\nEncryption: none\nComment: deploy@ci\nPublic-Lines: 2\n"
        f"AAAAC3NzaC1lZDI1NTE5AAAAIC1lZDI1NTE5AAAAIC1lZDI1NTE5AAAAIC1lZDI1\nNTE5AAAAIC1lZDI1NTE5\n"
        f"Private-Lines: 2\n" + "\n".join(private) + "\nPrivate-MAC: " + fake("{hex:64}", rng)
    )
    return {
        "prose": f"Exported the key from PuTTYgen:\n{ppk}\nthen converted it.",
        "shell": f"cat > deploy.ppk <<'EOF'\n{ppk}\nEOF",
        "config": "putty_key: |\n  " + ppk.replace("\n", "\n  "),
        "trace": f"ValueError: unsupported key file\n{ppk}",
    }, private[0]


_NOUNS = {"token": "auth token", "secret": "API secret", "api_key": "API key"}


def _prose_contexts(vendor: str, kind: str, value: str) -> dict[str, str]:
    noun = _NOUNS[kind]
    return {
        "prose": f"The {vendor} {noun} is {value}; rotate it after the demo.",
        "chat": f"{vendor.lower()} creds for staging -> {noun.split()[-1]} {value} (ask ops for the rest)",
        "markdown": f"- **{vendor}** {noun}: `{value}`",
        "commit": f"Rotated the {vendor} {noun} ({value}) that leaked into the build log.",
        "ticket": f"{vendor} rejects our calls although the {noun.split()[-1]} we send is {value}, per the vault.",
    }


def _command_contexts(example: str, value: str) -> dict[str, str]:
    line = example.replace("{}", value)
    argv = shlex.split(line)
    return {
        "prose": f"Ran `{line}` on the staging box and it worked.",
        "shell": f"{line} 2>&1 | tee run.log",
        "config": f"      run: {line}",
        "json": json.dumps({"command": line, "cwd": "/srv/app"}),
        "trace": f"subprocess.CalledProcessError: Command '{argv!r}' returned non-zero exit status 1.",
    }


def command_cases(fmt: CommandFormat, rng: random.Random) -> list[Case]:
    """Every context once, the format's example command lines in turn (quoted and bare values, attached
    and separate, an argv list in the trace)."""
    cases = []
    for i, context in enumerate(("prose", "shell", "config", "json", "trace")):
        value = fake("{alnum:10-16}", rng)
        text = _command_contexts(fmt.examples[i % len(fmt.examples)], value)[context]
        cases.append(Case(fmt.name, fmt.family, fmt.kind, context, text, value))
    return cases


def context_cases(fmt: ContextFormat, rng: random.Random) -> list[Case]:
    value = fake(fmt.value, rng)
    secret = value
    if fmt.context == "assignment":
        contexts = _assignment_contexts(fmt.key, value)
    elif fmt.context == "connection_string":
        contexts = _connection_string_contexts(fmt.key, value)
    elif fmt.context == "url_userinfo":
        contexts = _userinfo_contexts(fmt.key, value)
    elif fmt.context == "url_query":
        contexts = _query_contexts(fmt.key, value)
    elif fmt.context in ("authorization", "bearer"):
        contexts = _authorization_contexts(fmt.key, value)
    elif fmt.context == "cli_flag":
        contexts = _flag_contexts(fmt.key, value)
    elif fmt.context == "xml_value":
        contexts = _xml_contexts(fmt.key, value)
    elif fmt.context == "pem":
        contexts, secret = _pem_contexts(fmt.key, value, rng)
    elif fmt.context == "putty":
        contexts, secret = _putty_contexts(fmt.key, rng)
    elif fmt.context == "prose_named":
        contexts = _prose_contexts(fmt.key.split("|")[0], fmt.kind, value)
    else:
        raise ValueError(f"no contexts for {fmt.context!r}")
    return [Case(fmt.name, fmt.family, fmt.kind, ctx, text, secret) for ctx, text in contexts.items()]


def recall_cases(seed: int = 20240611) -> list[Case]:
    rng = random.Random(seed)
    cases: list[Case] = []
    for fmt in TOKEN_FORMATS:
        cases += token_cases(fmt, rng)
    for context_fmt in CONTEXT_FORMATS + PROSE_FORMATS:
        cases += context_cases(context_fmt, rng)
    for command_fmt in COMMAND_FORMATS:
        cases += command_cases(command_fmt, rng)
    return cases


# ---- precision ----------------------------------------------------------------------------------


def benign_lines() -> list[str]:
    """Lines of the precision corpus: `#` starts a comment line in the file, and `\\n` inside a line stands
    for a newline (multi-line snippets)."""
    return [
        raw.replace("\\n", "\n") for raw in BENIGN.read_text().splitlines() if raw.strip() and not raw.startswith("# ")
    ]


# ---- adversarial ----------------------------------------------------------------------------------


def adversarial_inputs(n: int = 100_000) -> dict[str, str]:
    """Inputs that make a careless rule backtrack: long runs of what a pattern accepts, with the one
    thing it needs at the end missing, repeated prefixes, unterminated quotes and blocks."""
    cases = {
        "letters": "a" * n,
        "jwt_dots": "eyJ" + "a." * (n // 2),
        "jwt_long": "eyJ" + "a" * n + "." + "b" * n,
        "assign_repeat": "password=" * (n // 9),
        "assign_open_quote": 'password: "' + "a" * n,
        "token_colons": "token " + ":" * n,
        "pem_open": "-----BEGIN PRIVATE KEY-----" + "x" * n,
        "pem_repeat": "-----BEGIN " * (n // 11),
        "url_pairs": "postgres://" + "a:" * (n // 2),
        "url_repeat": "://a:" * (n // 5),
        "url_ats": "https://" + "@" * n,
        "bearer_long": "Bearer " + "a" * n,
        "bearer_dots": "bearer " + "a." * (n // 2),
        "sk_dashes": "sk-" + "-" * n,
        "sk_repeat": "sk-" * (n // 3),
        "ghp_repeat": "ghp_" * (n // 4),
        "akia_repeat": "AKIA" * (n // 4),
        "xoxb_dashes": "xoxb-" + "-" * n,
        "aws_secret_long": "aws_secret_access_key=" + "A" * n,
        "basic_pad": "Authorization: Basic " + "=" * n,
        "spaces_then_key": " " * n + "password",
        "dotted_i": "\u0130" * n + "password=x",
        # new rules: token starts, shapes with long bounded bodies, markers, context values
        "slashes_prefix": "/ABSK" * (n // 5),
        "base64_blob": ("AbCd+/Ef" * (n // 8)),
        "ya29_dots": "ya29." + "." * n,
        "pypi_repeat": "pypi-AgEIcHlwaS5vcmc" * (n // 20),
        "slack_digits": "xoxb-" + "1" * n,
        "discord_heads": "MT" * (n // 2),
        "telegram_colons": ("1234567:AA" * (n // 10)),
        "azure_tildes": "abc8Q~" * (n // 6),
        "mailchimp_us": ("0123456789abcdef" * 2 + "-us") * (n // 35),
        "atlasv1": ("a" * 14 + ".atlasv1.") * (n // 23),
        "webhook_repeat": "https://hooks.slack.com/services/" * (n // 33),
        "userinfo_token": "https://" + "a1B2" * (n // 4) + "@",
        "query_keys": "?api_key=&access_token=&sig=" * (n // 28),
        "assign_call": "token = " + "a." * (n // 2) + "(",
        "assign_template": "password: ${" + "{" * n,
        "authorization_scheme": "Authorization: " + "a-" * (n // 2),
        "flag_repeat": " --password" * (n // 11),
        "curl_user": "curl" + " -u a:" * (n // 6),
        "xml_value": '<add key="' + "a" * n + 'password" value="',
        "putty_lines": "Private-Lines: 9\n" + "A" * n,
        "mixed_separators": "a=b:c/d+e.f~g$h-" * (n // 16),
        # command lines and vendors named in prose
        "command_repeat": "mysql -p" * (n // 8),
        "command_open_quote": "mysql -p'" + "a" * n,
        "command_long_arguments": "sshpass " + "-x " * (n // 3),
        "command_argv_login": "['docker', 'login', " * (n // 20),
        "command_slashes": "sqlplus " + "a/" * (n // 2),
        "command_user_separators": "smbclient -U " + "a%" * (n // 2),
        "vendor_repeat": "twilio token is " * (n // 16),
        "vendor_fillers": "twilio secret " + "is " * (n // 3),
        "vendor_nouns": "datadog " + "key " * (n // 4),
    }
    return cases
