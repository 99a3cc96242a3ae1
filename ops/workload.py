"""A realistic, reproducible workload for the benchmarks: what coding agents write while they work.

Each repo has a codebase of its own — modules, files, functions, classes, services, environment
variables, commands, libraries with versions — built from a large pool of words, so memories use a
large vocabulary with a realistic long tail (identifiers, paths, ports, versions, issue numbers and
commit hashes are rare tokens; a few hundred common words are frequent). Sentences come in many
shapes per kind and vary in length. The history has structure: problems, then solutions and failed
tactics linked to them (and sometimes to a second, related problem), facts and preferences (a few of
them global), change memories that supersede earlier facts (chains, some of them several links long),
and truth/utility updates.

Everything is deterministic for a seed: the same call gives the same requests, so embedding caches
keyed by content hash can be reused between runs.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from strata_recall.domain.ids import memory_id

# --- the word pool -------------------------------------------------------------------------------

_DOMAIN = """account address admin agent alert alias allocation analytics archive artifact asset audit auth
avatar backlog backup badge balance banner basket batch billing blob bookmark bucket budget buffer bundle
cache calendar campaign canvas card cart catalog category channel chart checkout claim client cluster cohort
comment config connector consent contact container contract coupon credential cron cursor customer dashboard
dataset deadline delivery deployment device diff digest discount dispatch document domain draft editor
embedding endpoint entitlement envelope estimate event export feature feed filter flag folder form forecast
gateway grant graph group guard handler header heartbeat history hook identity image import inbox incident
index invoice issue item job journal key label ledger license limit listing locale lock log lookup mailer
manifest mapping marker member merchant message meter metric migration mirror model module monitor namespace
node note notification offer order organisation outbox owner package page panel parcel partner patch payload
payment payout permission pipeline plan plugin policy pool portal post preference preview price printer
profile project prompt provider queue quota rate receipt record refund region registry release reminder
report request reservation resource retry review reward role route rule runner sample schedule schema score
screen search secret segment sender session setting shard shipment signal signature sitemap sketch slot
snapshot socket source span sprint stage statement status stock storage stream subscription summary
supplier survey sync table tag task team template tenant thread ticket timeline token topic tracker
transaction transfer translation trigger upload usage user variant vendor version video voucher wallet
warehouse webhook widget worker workflow workspace zone""".split()

_VERBS = """add aggregate apply archive assign authorize backfill build cache calculate cancel capture
check claim clean close collect compact compile compress compute confirm convert copy create decode
delete deliver deploy detect diff dispatch download drain emit encode enqueue enrich ensure estimate
evaluate expand export extract fetch filter flush format generate group handle hydrate import index
infer init invalidate join load lock lookup map mark merge migrate normalise notify open parse patch
persist poll prefetch prepare process publish purge push queue rank read rebuild reconcile record
redact refresh register reindex release reload render replay replicate request reserve reset resolve
restore retry rotate route sample save scan schedule score seed send serialise shard sign snapshot
sort split stage start stream submit summarise sync tag throttle tokenize track transform translate
trim truncate unlock update upload upsert validate verify warm watch wrap write""".split()

_ADJECTIVES = """active async batched blocking broken cached canonical cold concurrent corrupt daily
default deferred dirty duplicate eager empty encrypted expired external failed flaky frozen global
hidden idle implicit incremental inline internal invalid lazy legacy local lossy manual missing
nested nightly nullable offline optional orphaned outdated paginated partial pending private public
raw readonly recursive remote retried rolling scheduled shared signed slow sparse stale strict
synchronous temporary transient trusted unbounded unique unsigned unused upstream verbose weekly""".split()

_LIBRARIES = """alembic asyncpg attrs black boto3 celery click cryptography django docker fastapi flask
gunicorn httpx hypothesis jinja2 kafka kubernetes lxml marshmallow mypy nginx numpy orjson pandas
playwright poetry postgres prometheus protobuf psycopg pydantic pyjwt pytest redis requests ruff
sentry sqlalchemy sqlite starlette structlog terraform tox typer uvicorn webpack vite eslint jest
typescript react nextjs node npm pnpm yarn babel grpc openapi graphql rabbitmq elasticsearch
opensearch minio traefik helm argo airflow dbt spark pyarrow polars duckdb clickhouse grafana
loki tempo jaeger otel vault consul etcd zookeeper memcached varnish cloudflare stripe twilio
sendgrid auth0 keycloak okta""".split()

_ERRORS = """TimeoutError ConnectionRefusedError IntegrityError KeyError ValueError TypeError
AttributeError PermissionError FileNotFoundError OperationalError DeadlockDetected SerializationFailure
ValidationError ImportError ModuleNotFoundError RecursionError MemoryError UnicodeDecodeError
SSLError ProtocolError ReadTimeout ChunkedEncodingError JSONDecodeError NotImplementedError
AssertionError OverflowError BrokenPipeError StaleElementReferenceException OOMKilled
CrashLoopBackOff ImagePullBackOff EADDRINUSE ECONNRESET ETIMEDOUT ENOSPC EACCES""".split()

_SYMPTOMS = [
    "hangs",
    "times out",
    "crashes",
    "is slow",
    "returns 500",
    "returns 404",
    "leaks memory",
    "deadlocks",
    "fails intermittently",
    "double-counts",
    "drops messages",
    "logs a warning",
    "retries forever",
    "silently skips rows",
    "blocks the event loop",
    "uses 100% CPU",
    "produces an empty result",
    "corrupts the output",
    "loses the session",
    "rejects valid input",
]

_WHEN = [
    "on the first request after a deploy",
    "under load",
    "when the {env} variable is unset",
    "when two {noun}s share a {noun2}",
    "after the {lib} upgrade to {version}",
    "on cold start",
    "when the {noun} table has more than {count} rows",
    "in CI but not locally",
    "on arm64 runners",
    "when {lib} is older than {version}",
    "after a failover",
    "when the clock is skewed",
    "while the {noun} migration is running",
    "with more than {count} concurrent {noun}s",
    "only on Mondays when the nightly {noun} job overlaps",
    "in the {region} region",
    "when the cache is cold",
    "behind the {lib} proxy",
    "when the payload exceeds {count} KB",
    "right after `{command}`",
]

_CAUSES = [
    "the connection pool was exhausted by {function}",
    "{function} held a lock across an await",
    "the {noun} index was missing on {table}",
    "{env} pointed at the staging {noun} service",
    "a stale {path} was shipped in the image",
    "the {lib} client reused a closed socket",
    "an N+1 query in {function}",
    "the retry policy ignored {error}",
    "the fixture for {noun} was shared between tests",
    "{class_} cached a mutable default",
    "the {noun} queue had no dead-letter route",
    "timezone-naive datetimes in {function}",
    "a race between {function} and {function2}",
    "the {lib} default changed in {version}",
    "the health check hit {route} which needs auth",
    "a missing `await` in {function}",
    "the batch size in {path} was hard-coded to {count}",
    "a circular import between {module} and {module2}",
]

_REGIONS = ["eu-west-1", "us-east-1", "ap-south-1", "eu-central-1", "us-west-2", "sa-east-1"]


def _zipf_choice(rnd: random.Random, items: list, s: float = 1.1):
    """Pick with a heavy head and a long tail (rank r has weight ~ 1 / r^s)."""
    n = len(items)
    # inverse-CDF of a continuous power law: cheap, deterministic, close enough to Zipf
    u = rnd.random()
    rank = ((n ** (1 - s) - 1) * u + 1) ** (1 / (1 - s)) if s != 1 else n**u
    return items[min(n - 1, max(0, int(rank) - 1))]


@dataclass
class Codebase:
    """The identifiers of one repo."""

    name: str
    modules: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    envs: list[str] = field(default_factory=list)
    routes: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    services: list[str] = field(default_factory=list)
    libs: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def generate(cls, name: str, rnd: random.Random) -> Codebase:
        cb = cls(name)
        nouns = rnd.sample(_DOMAIN, 60)
        cb.modules = [
            f"{a}_{b}" if rnd.random() < 0.5 else a for a, b in zip(nouns, rnd.sample(_DOMAIN, 60), strict=True)
        ]
        top = rnd.choice(["src", "app", "lib", "services", "pkg", "internal"])
        ext = rnd.choice([".py", ".py", ".ts", ".go", ".rs"])
        cb.paths = [f"{top}/{rnd.choice(cb.modules)}/{rnd.choice(_DOMAIN)}{ext}" for _ in range(80)]
        cb.functions = [
            f"{rnd.choice(_VERBS)}_{rnd.choice(nouns)}" + (f"_{rnd.choice(_DOMAIN)}" if rnd.random() < 0.4 else "")
            for _ in range(150)
        ]
        cb.classes = [
            f"{rnd.choice(_ADJECTIVES).title()}{rnd.choice(nouns).title()}{rnd.choice(['Service', 'Repository', 'Handler', 'Client', 'Worker', 'Manager', 'Builder', 'Store'])}"
            for _ in range(60)
        ]
        cb.tables = [
            f"{rnd.choice(nouns)}s" if rnd.random() < 0.6 else f"{rnd.choice(nouns)}_{rnd.choice(_DOMAIN)}s"
            for _ in range(40)
        ]
        cb.envs = [
            f"{rnd.choice(nouns).upper()}_{rnd.choice(['URL', 'TIMEOUT', 'POOL_SIZE', 'ENABLED', 'REGION', 'BUCKET', 'MODE', 'LIMIT'])}"
            for _ in range(30)
        ]
        cb.routes = [
            f"/{rnd.choice(['api', 'v1', 'v2', 'internal'])}/{rnd.choice(nouns)}s/{rnd.choice(['{id}', 'search', 'export', 'bulk', 'status'])}"
            for _ in range(30)
        ]
        cb.commands = [
            rnd.choice(
                [
                    f"make {rnd.choice(_VERBS)}-{rnd.choice(nouns)}",
                    f"just {rnd.choice(_VERBS)}",
                    f"pytest -m {rnd.choice(nouns)}",
                    f"npm run {rnd.choice(_VERBS)}:{rnd.choice(nouns)}",
                    f"./scripts/{rnd.choice(_VERBS)}_{rnd.choice(nouns)}.sh",
                    f"docker compose up {rnd.choice(nouns)}",
                ]
            )
            for _ in range(25)
        ]
        cb.services = [
            f"{rnd.choice(nouns)}-{rnd.choice(['api', 'worker', 'gateway', 'scheduler', 'indexer', 'sync'])}"
            for _ in range(12)
        ]
        cb.libs = [
            (lib, f"{rnd.randint(0, 9)}.{rnd.randint(0, 30)}.{rnd.randint(0, 12)}")
            for lib in rnd.sample(_LIBRARIES, 25)
        ]
        return cb

    def fill(self, template: str, rnd: random.Random) -> str:
        lib, version = _zipf_choice(rnd, self.libs)
        values = {
            "module": _zipf_choice(rnd, self.modules),
            "module2": rnd.choice(self.modules),
            "path": _zipf_choice(rnd, self.paths),
            "function": _zipf_choice(rnd, self.functions),
            "function2": rnd.choice(self.functions),
            "class_": _zipf_choice(rnd, self.classes),
            "table": _zipf_choice(rnd, self.tables),
            "env": _zipf_choice(rnd, self.envs),
            "route": _zipf_choice(rnd, self.routes),
            "command": _zipf_choice(rnd, self.commands),
            "service": _zipf_choice(rnd, self.services),
            "lib": lib,
            "version": version,
            "noun": _zipf_choice(rnd, _DOMAIN),
            "noun2": rnd.choice(_DOMAIN),
            "verb": _zipf_choice(rnd, _VERBS),
            "adj": _zipf_choice(rnd, _ADJECTIVES),
            "error": _zipf_choice(rnd, _ERRORS),
            "count": rnd.choice([10, 50, 100, 500, 1000, 5000, 10000, 65536, 250000]),
            "port": rnd.randint(1024, 65000),
            "line": rnd.randint(12, 2400),
            "issue": rnd.randint(100, 99999),
            "sha": "".join(rnd.choice("0123456789abcdef") for _ in range(7)),
            "region": rnd.choice(_REGIONS),
            "minutes": rnd.choice([2, 5, 15, 30, 90]),
            "pct": rnd.choice([5, 20, 40, 75, 90]),
        }
        text = template
        for _ in range(3):  # slots may bring slots (e.g. {when} -> {env})
            if "{" not in text:
                break
            text = text.format_map(_Slots(values, rnd, self))
        return text


class _Slots(dict):
    def __init__(self, values: dict, rnd: random.Random, cb: Codebase) -> None:
        super().__init__(values)
        self.rnd, self.cb = rnd, cb

    def __missing__(self, key: str) -> str:
        if key == "symptom":
            return self.rnd.choice(_SYMPTOMS)
        if key == "when":
            return self.rnd.choice(_WHEN)
        if key == "cause":
            return self.rnd.choice(_CAUSES)
        if key in ("id", "old"):
            return "{" + key + "}"
        raise KeyError(key)


PROBLEMS = [
    "{function} {symptom} {when}",
    "{service} {symptom} {when}; the logs show {error} from {path}:{line}",
    "Tests in {path} {symptom} {when}",
    "`{command}` fails with {error} {when}",
    "{class_}.{verb}() raises {error} {when}",
    "The {noun} export {symptom}: {route} {symptom} {when} (issue #{issue})",
    "After commit {sha} the {noun} page {symptom}",
    "{lib} {version} {symptom} in {module} {when}",
    "Deploying {service} to {region} {symptom}; rollout stalls for {minutes} minutes",
    "Flaky test: test_{function} {symptom} about {pct}% of runs {when}",
    "Queries on {table} got slow {when}; p95 went from 40 ms to {count} ms",
    "{env} is ignored by {service} {when}",
]
SOLUTIONS = [
    "Fixed: {cause}. Changed {function} in {path} and it passes now",
    "Run `{command}` before the tests; it creates the {noun} fixtures",
    "Set {env} explicitly in .env.test, otherwise {service} falls back to the {adj} default",
    "Pin {lib} to {version} until {lib} issue #{issue} is released",
    "Add an index on {table} ({noun}_id, created_at); the query plan stops scanning",
    "Wrap {function} in a transaction and retry on {error} with jittered backoff",
    "Move the {noun} lookup out of the loop in {function}: one query with IN (...) instead of N",
    "Use {class_} from {module} instead of calling {route} directly",
    "The root cause was {cause}; reverting {sha} and adding a regression test in {path} fixed it",
    "Increase the pool size ({env}) to {count} and close sessions in {function}",
    "Mark the {noun} fixture function-scoped and reset {table} between tests",
    "Await {function} and pass a timeout of {minutes} minutes to the {lib} client",
]
FAILED = [
    "Raising the timeout of {function} did not help; {error} still shows up {when}",
    "Retrying {command} blindly made it worse: the {noun} rows were written twice",
    "Upgrading {lib} to {version} did not fix it and broke {module}",
    "Clearing the {noun} cache only hid it for {minutes} minutes",
    "Disabling {env} looked like a fix but {service} then {symptom}",
    "Rewriting {function} with threads deadlocked on {table}",
    "Restarting {service} is not a fix: {cause}",
]
FACTS = [
    "{service} listens on port {port} and reads its settings from {env}",
    "{table} is written only by {function} in {path}",
    "{module} depends on {lib} {version}; do not import it from {module2}",
    "{class_} is the only place that talks to {route}",
    "The {noun} job runs every {minutes} minutes through `{command}`",
    "CI runs on {region} runners with {lib} {version} preinstalled",
    "{function} returns {adj} {noun}s; callers must filter them",
    "Migrations live in {path}; the {table} table is partitioned by month",
    "The staging {service} shares its database with {service}",
    "{env} defaults to {count} in production and to 10 in tests",
    "Feature flag {noun}_{verb} gates {route} for {pct}% of tenants",
    "Logs of {service} go to {lib} and are kept {minutes} days",
]
PREFERENCES = [
    "Prefer `{command}` over ad-hoc scripts for {noun} chores",
    "Keep {module} free of {lib} imports; inject {class_} instead",
    "Write tests for {function} with {lib} fixtures, not mocks",
    "Name {noun} handlers after the event they handle, as in {function}",
    "Small commits: one {noun} change per pull request, with the issue number",
    "Use structured logging with the {noun}_id field in every {service} log line",
    "Avoid {adj} {noun}s in {module}; make them explicit",
]
CHANGES = [
    "Changed: {service} now listens on port {port} (the note said: {old})",
    "Since commit {sha}, {table} is written by {function} instead",
    "{lib} was upgraded to {version}; '{old} ...' no longer holds",
    "{env} was renamed; the old setting is ignored from release {version}",
    "The {noun} job moved to `{command}` and runs every {minutes} minutes",
]
CONTEXT = [
    "(see {path}:{line})",
    "; reproduced with `{command}`",
    "— found while working on issue #{issue}",
    "in {region}",
    ", at least since {lib} {version}",
    "; {service} is affected too",
    ". Watch {env} when touching this",
    "(commit {sha})",
    "; {class_} is involved",
    ", which also touches {table}",
]
"""Optional context an agent appends: more length variety, more rare tokens."""

GLOBAL_PREFERENCES = [
    "Run the linter before pushing ({lib} catches most of it)",
    "Prefer explicit {noun} ids in log lines over positional messages",
    "Never commit generated {noun} files; regenerate them in CI",
    "Explain a failed approach in the memory, not only the fix",
]


def realistic_lines(n: int, repos: int = 20, seed: int = 7) -> list[str]:
    """JSONL write requests: problems, then solutions and failed tactics linked to them (sometimes
    also to a related problem), facts, preferences (a few global), and change memories on facts."""
    rnd = random.Random(seed)
    bases = [Codebase.generate(f"org/repo-{r}", random.Random(seed * 1000 + r)) for r in range(repos)]
    problems: dict[str, list[str]] = {}
    facts: dict[str, list[tuple[str, str]]] = {}  # repo -> (id, text), the newest of each chain
    seen: set[str] = set()
    lines = []
    i = 0
    while len(lines) < n:
        i += 1
        repo_index = min(repos - 1, int(_zipf_choice(rnd, list(range(repos)), 0.6)))  # some repos are busier
        cb = bases[repo_index]
        repo = cb.name
        roll = rnd.random()
        scope, links = "repo", {}
        if roll < 0.25 or not problems.get(repo):
            kind, text = "problem", cb.fill(rnd.choice(PROBLEMS), rnd)
        elif roll < 0.47:
            kind, text = "solution", cb.fill(rnd.choice(SOLUTIONS), rnd)
            links = {"problem_id": _recent(rnd, problems[repo])}
            if rnd.random() < 0.15 and len(problems[repo]) > 1:
                links["related_memory_ids"] = [_recent(rnd, problems[repo])]
        elif roll < 0.57:
            kind, text = "failed_tactic", cb.fill(rnd.choice(FAILED), rnd)
            links = {"problem_id": _recent(rnd, problems[repo])}
        elif roll < 0.82:
            kind, text = "fact", cb.fill(rnd.choice(FACTS), rnd)
        elif roll < 0.92:
            kind, text = "preference", cb.fill(rnd.choice(PREFERENCES), rnd)
            if rnd.random() < 0.1:
                scope, text = "global", cb.fill(rnd.choice(GLOBAL_PREFERENCES), rnd)
        elif facts.get(repo):
            kind = "change"
            at = rnd.randrange(max(0, len(facts[repo]) - 300), len(facts[repo]))
            target, old_text = facts[repo][at]
            text = cb.fill(rnd.choice(CHANGES), rnd).replace("{old}", " ".join(old_text.split()[:5]))
            links = {"change_targets": [target]}
        else:
            continue
        for _ in range(2):
            if rnd.random() < 0.4:
                text = (
                    f"{text} {cb.fill(rnd.choice(CONTEXT), rnd)}".replace(" ;", ";")
                    .replace(" ,", ",")
                    .replace(" .", ".")
                )
        key = f"{kind}\x1f{scope}\x1f{repo if scope == 'repo' else ''}\x1f{text}"
        if key in seen:
            text = f"{text} (seen again in session {i})"
            key = f"{kind}\x1f{scope}\x1f{repo if scope == 'repo' else ''}\x1f{text}"
            if key in seen:
                continue
        seen.add(key)
        mid = str(memory_id(text, kind, scope, repo))
        if kind == "problem":
            problems.setdefault(repo, []).append(mid)
        elif kind == "fact":
            facts.setdefault(repo, []).append((mid, text))
        elif kind == "change":
            facts[repo][at] = (mid, text)  # a later change may supersede this one: chains grow
        request = {
            "repo_id": repo,
            "memory": {
                "text": text,
                "kind": kind,
                "scope": scope,
                "confidence": round(rnd.uniform(0.5, 0.95), 2),
                "rationale": rnd.choice(_RATIONALES),
                "links": links,
                "evidence_refs": [f"session:{i}"]
                + ([f"{cb.fill('{path}:{line}', rnd)}"] if rnd.random() < 0.4 else []),
            },
        }
        lines.append(json.dumps(request))
    return lines


_RATIONALES = [
    "observed while working on the task",
    "reproduced twice",
    "from the CI logs",
    "confirmed by reading the code",
    "the user said so",
    "found while bisecting",
]


def _recent(rnd: random.Random, items: list[str]) -> str:
    """Mostly one of the last few hundred, sometimes an old one."""
    if rnd.random() < 0.85:
        return rnd.choice(items[-300:])
    return rnd.choice(items)


def realistic_updates(lines: list[str], n: int, seed: int = 9) -> list[str]:
    """Update requests on memories of `lines`: truth checks on facts (and changes), utility on
    solutions and failed tactics for the problem they name."""
    rnd = random.Random(seed)
    requests = [json.loads(line) for line in lines]
    facts = [
        (r["repo_id"], str(memory_id(r["memory"]["text"], r["memory"]["kind"], "repo", r["repo_id"])))
        for r in requests
        if r["memory"]["kind"] in ("fact", "change") and r["memory"]["scope"] == "repo"
    ]
    tactics = [
        (
            r["repo_id"],
            str(memory_id(r["memory"]["text"], r["memory"]["kind"], "repo", r["repo_id"])),
            r["memory"]["links"]["problem_id"],
        )
        for r in requests
        if r["memory"]["kind"] in ("solution", "failed_tactic")
    ]
    out = []
    for i in range(n):
        if i % 2 and facts:
            repo, mid = _zipf_choice(rnd, facts, 0.8)
            updates = {
                "truth": {
                    "target": rnd.choice([0.1, 0.9, 0.95]),
                    "confidence": 0.9,
                    "rationale": "checked against the code",
                    "evidence_refs": [f"ci#{i}"],
                }
            }
        else:
            repo, mid, problem = _zipf_choice(rnd, tactics, 0.8)
            updates = {
                "utility": {
                    "target": rnd.choice([0.0, 1.0, 1.0]),
                    "confidence": 0.8,
                    "rationale": "used it",
                    "context_problem_id": problem,
                }
            }
        out.append(json.dumps({"repo_id": repo, "memory_id": mid, "mode": "commit", "updates": updates}))
    return out


def realistic_queries(n: int, repos: int = 20, seed: int = 5) -> list[dict]:
    """Targeted reads as an agent would make them: a problem it meets (worded like a problem memory
    of that repo, so partly overlapping real ones), a how-to question, or a question about a fact."""
    rnd = random.Random(seed)
    bases = [Codebase.generate(f"org/repo-{r}", random.Random(7 * 1000 + r)) for r in range(repos)]
    shapes = [
        lambda cb: cb.fill(rnd.choice(PROBLEMS), rnd),
        lambda cb: cb.fill("how do I fix {error} in {function} {when}", rnd),
        lambda cb: cb.fill("which port does {service} listen on", rnd),
        lambda cb: cb.fill("what writes to the {table} table", rnd),
        lambda cb: cb.fill("why does `{command}` fail {when}", rnd),
        lambda cb: cb.fill("{lib} {version} upgrade broke {module}", rnd),
    ]
    out = []
    for _ in range(n):
        cb = bases[rnd.randrange(repos)]
        out.append({"repo_id": cb.name, "query": rnd.choice(shapes)(cb), "mode": "targeted"})
    return out
