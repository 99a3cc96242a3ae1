"""One settings object: defaults < config file (TOML) < STRATA_* environment < explicit overrides.

Nothing is read at import time; `load_settings()` is called by the composition root.
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, ValidationInfo, field_validator

from strata_recall.domain.errors import InvalidInput
from strata_recall.projections.tuning import TUNED, Fusion, RecallConfig, Signals

ENV_PREFIX = "STRATA_"
RECALL = RecallConfig()
"""The engine's tuning as it is defined (projections/tuning.py): the defaults of the recall_* settings."""


def default_data_dir() -> Path:
    """The platform's per-user data directory."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "strata"
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA", home / "AppData" / "Local")) / "strata"
    return Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share") / "strata"


def default_config_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "strata" / "config.toml"


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    data_dir: Path = Field(default_factory=default_data_dir)
    review_writes: bool = Field(False, description="Agent writes land pending a person's review.")
    log_level: Literal["debug", "info", "warning", "error"] = "warning"
    log_format: Literal["console", "json"] = "console"
    model_dir: Path | None = Field(None, description="The embedding model folder; default <data_dir>/models/minilm.")
    compact_interval_seconds: float = Field(60.0, gt=0, description="How often workers compact the snapshot.")
    housekeeping_interval_seconds: float = Field(3600.0, gt=0)
    worker_batch_size: int = Field(500, ge=1, le=100_000)
    poll_interval_seconds: float = Field(0.05, gt=0, le=60)
    embed_threads: int | None = Field(
        None,
        ge=1,
        le=64,
        description="Threads of the embedding model: a query's, and how many batches of bulk embedding run "
        "side by side; default: onnxruntime's choice (all cores).",
    )
    feedback_max_memories: int = Field(
        8, ge=1, le=100, description="Most memories one session's feedback may move (the reads it cites)."
    )
    read_retention_days: float = Field(
        30.0,
        gt=0,
        description="How long a read can be cited by feedback or a utility update; housekeeping forgets older reads.",
    )
    near_duplicates: bool = Field(
        True,
        description="Check writes against the nearest memories where the embedding model is loaded (serve, "
        "mcp): report them in `similar`, and reinforce one the write repeats instead of duplicating it.",
    )
    reflect_interval_seconds: float = Field(
        86400.0, gt=0, description="How often a serving process or worker runs `strata reflect` over every repo."
    )
    reflect_apply: bool = Field(
        False,
        description="Scheduled reflect records its actions (archive, merge, link); by default it only logs its report.",
    )
    reflect_truth_floor: float = Field(
        0.1, ge=0, le=1, description="Memories whose decayed truth is below this are archived by reflect."
    )
    max_waiting_reads: int = Field(
        32,
        ge=1,
        le=10_000,
        description="Most reads a serving process lets wait for consistency.after_position at once.",
    )
    read_your_writes_seconds: float = Field(
        5.0,
        ge=0,
        le=300,
        description="In an MCP session, how long a read or memory_index waits for the projections to reach the "
        "session's last write before it answers anyway, saying it is behind (consistency.behind).",
    )
    read_embed_seconds: float = Field(
        2.0,
        ge=0,
        le=3600,
        description="How long a CLI read (with no worker running) spends embedding the vectors' backlog before it "
        "answers from what is searchable, saying how far behind the vectors are (behind).",
    )
    as_of_models: int = Field(
        1,
        ge=1,
        le=16,
        description="Read models of the past (`as_of`) a process keeps built; each costs a replay of the log to its "
        "position, and its vectors' memory once a read uses it (~200 MB at 100,000 memories).",
    )
    embedding_cache_size: int = Field(
        10_000,
        ge=0,
        le=10_000_000,
        description="Vectors the embedding cache keeps (~1.7 KB each), the last embedded outside the vector projection: "
        "the write path's near-duplicate checks (reused when the projection reaches the write) and the old texts "
        "of reads of the past. 0 keeps none. The vector projection holds every memory's vector, and a replay "
        "takes them from it: the cache is not needed to rebuild without embedding again.",
    )
    workspace_roots: list[Path] = Field(
        default_factory=list,
        description="Folders whose files a local client (the CLI, `strata mcp` over stdio) may have Strata read for "
        "anchors and workspaces, besides the git working tree the process starts in (comma-separated "
        "in STRATA_WORKSPACE_ROOTS). A client over HTTP never makes Strata read a file.",
    )
    request_stall_seconds: float = Field(
        30.0,
        gt=0,
        le=86400,
        description="An operation that holds a serving process's lane longer than this is logged "
        "(request_stalled) and marks /healthz degraded until it finishes.",
    )
    max_as_of_builds: int = Field(
        2,
        ge=1,
        le=16,
        description="Most distinct past moments (`as_of`) a serving process builds, waits to build or serves at once; "
        "a request for yet another is refused at once (503 too_many_as_of), one for a moment already "
        "under way shares its build.",
    )
    log_wait_seconds: float = Field(
        1.0,
        ge=0.1,
        le=300,
        description="How long a request to a serving process waits for an unreachable event log (PostgreSQL: a "
        "connection, retries) before a read answers from this node's projections, saying how far behind "
        "(`outage`), and anything else is refused (503 event_log_unavailable, Retry-After). While the log is known "
        "to be unreachable, requests do not wait for it.",
    )
    token_staleness_seconds: float = Field(
        0.5,
        ge=0.3,
        le=3600,
        description="How old a serving process's knowledge of the named tokens (its last successful read of the "
        "log's token events; it reads them every 0.25 s) may be before it refuses the named tokens it cannot vouch "
        "for (503 event_log_unavailable, Retry-After): the longest a token revoked just before the log became "
        "unreachable stays usable on a node (docs/SECURITY.md).",
    )
    as_of_builds_per_token: int = Field(
        30,
        ge=1,
        le=100_000,
        description="Most past moments (`as_of`) one token may have a serving process build per hour (each a replay "
        "of the log); beyond, 503 as_of_quota. A moment already built costs nothing; the operator is not counted.",
    )
    # the recall engine's tuning (advanced: docs/CONFIGURATION.md; chosen by ops/eval_recall.py, not per request)
    recall_fusion: Fusion = Field(
        RECALL.fusion, description="How the vector and keyword rankings are fused (projections/fusion.py)."
    )
    recall_vector_weight: float = Field(RECALL.vector_weight, ge=0, description="The vector ranking's weight.")
    recall_keyword_weight: float = Field(RECALL.keyword_weight, ge=0, description="The keyword ranking's weight.")
    recall_rrf_k: float = Field(RECALL.rrf_k, gt=0, description="Reciprocal rank fusion's k (fusion rrf).")
    recall_overfetch: int = Field(RECALL.overfetch, ge=1, le=10_000, description="Hits each search fetches.")
    recall_consider: int | None = Field(
        RECALL.consider, ge=1, description="Fused hits weighed, as a multiple of the read's limit (none: all)."
    )
    recall_threshold: dict[str, float] = Field(
        default_factory=lambda: dict(RECALL.threshold),
        description="The cosine a search hit needs, by mode (targeted, ambient; `mode=value` pairs in the "
        "environment).",
    )
    recall_kind_offset: dict[str, float] = Field(
        default_factory=lambda: dict(RECALL.kind_offset),
        description="What each kind adds to the threshold (`kind=value` pairs in the environment).",
    )
    recall_keyword_relief: float = Field(
        RECALL.keyword_relief, description="What the threshold gives a hit the keyword search found too."
    )
    recall_low_truth: float = Field(RECALL.low_truth, ge=0, le=1, description="A memory less true is held back.")
    recall_half_life_days: float = Field(RECALL.half_life_days, gt=0, description="How fast truth decays.")
    recall_link_decay: float = Field(RECALL.link_decay, ge=0, le=1, description="Share of relevance a link passes.")
    recall_related_seeds: int = Field(RECALL.related_seeds, ge=0, description="Best hits whose related links spread.")
    recall_related_decay: tuple[float, ...] = Field(
        RECALL.related_decay, description="Share of a seed's relevance at distance 1, 2 along related links."
    )
    recall_chain_share: float | None = Field(
        RECALL.chain_share, gt=0, le=1, description="Most of an answer one chain of related memories may hold."
    )
    recall_hop_seeds: int = Field(RECALL.hop_seeds, ge=0, description="Best hits semantic hops start from.")
    recall_hop_fanout: int = Field(RECALL.hop_fanout, ge=0, description="Neighbours one semantic hop looks at.")
    recall_hop_threshold: float = Field(RECALL.hop_threshold, description="The cosine a first hop needs.")
    recall_hop_tightening: float = Field(RECALL.hop_tightening, description="What each further hop adds to it.")
    recall_hop_decay: float = Field(RECALL.hop_decay, ge=0, le=1, description="Share of relevance a hop passes.")
    recall_duplicate_cosine: float = Field(
        RECALL.duplicate_cosine, description="A memory this similar to one already shown is a duplicate."
    )
    recall_per_source_cap: int = Field(
        RECALL.per_source_cap, ge=1, description="Most memories one hit may bring through its links or hops."
    )
    recall_unfavoured_kind: float = Field(
        RECALL.unfavoured_kind, ge=0, le=1, description="Score weight of kinds an archetype profile does not list."
    )
    recall_relevance: Signals = Field(
        RECALL.relevance, description="The signals a read ranks by (vector or keyword alone: evaluation)."
    )
    recall_bar: float = Field(
        RECALL.bar, ge=0, le=1, description="A read's min_relevance when it names none (the contract's default)."
    )
    # strata serve
    host: str = Field("127.0.0.1", description="Address `strata serve` binds to.")
    port: int = Field(7411, ge=0, le=65535, description="Port `strata serve` listens on (0 picks a free one).")
    token: SecretStr | None = Field(
        None,
        description="The single all-powerful bearer token (recorded as `default`); a non-loopback bind needs it "
        "or a named token (`strata token create`, docs/SECURITY.md).",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host names `strata serve` answers to besides loopback names and its bound address "
        "(comma-separated in STRATA_ALLOWED_HOSTS); '*' turns the Host check off.",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Web origins (scheme://host:port) whose pages may call `strata serve`, besides its own "
        "(comma-separated in STRATA_ALLOWED_ORIGINS).",
    )
    mcp_sessions_per_token: int = Field(
        64,
        ge=1,
        le=10_000,
        description="Most MCP sessions (streamable HTTP) one token holds open on `strata serve`: opening one more "
        "ends that token's session idle longest, or is refused (503) while each has a request in flight.",
    )
    # strata hook
    hook_recall_deadline_seconds: float = Field(
        2.0,
        gt=0,
        le=60,
        description="How long a recall hook (prompt, edit, after-command) may take before it gives up and injects "
        "nothing; session-start, stop and pre-compact take 1 s more. Read by the hooks themselves "
        "(interface/agents/hooks.py recall_deadline: the environment, then the config file).",
    )
    hook_learn_on_stop: bool = Field(
        True,
        description="The stop hook starts a background `strata learn` of the session's new commits and of what its "
        "transcript proved (docs/LEARNING.md). Read by the hooks themselves (interface/agents/hooks.py "
        "learn_on_stop: the environment, then the config file).",
    )
    # the event log: the embedded SQLite file, or a shared PostgreSQL server
    event_store: Literal["sqlite", "postgres"] = "sqlite"
    postgres_host: str = "127.0.0.1"
    postgres_port: int = Field(5432, ge=1, le=65535)
    postgres_dbname: str = "strata"
    postgres_user: str = "strata"
    postgres_password: SecretStr | None = None
    postgres_schema: str = Field("", description="A schema for the log's tables; empty means public.")
    postgres_pool_size: int = Field(5, ge=1, le=100)

    @field_validator("recall_threshold", "recall_kind_offset", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> Any:
        """A table in the config file; `key=value` pairs, comma-separated, in the environment."""
        if not isinstance(value, str):
            return value
        pairs = [part.split("=", 1) for part in value.split(",") if part.strip()]
        return {pair[0].strip(): pair[1].strip() if len(pair) == 2 else "" for pair in pairs}

    @field_validator("recall_threshold", "recall_kind_offset", mode="after")
    @classmethod
    def _over_the_defaults(cls, value: dict[str, float], info: ValidationInfo) -> dict[str, float]:
        """The keys named replace the engine's values for them; a key it does not know is refused."""
        defaults: dict[str, float] = getattr(RECALL, str(info.field_name).removeprefix("recall_"))
        unknown = sorted(value.keys() - defaults.keys())
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r} (known: {', '.join(defaults)})")
        return {**defaults, **value}

    @field_validator("recall_related_decay", mode="before")
    @classmethod
    def _numbers(cls, value: Any) -> Any:
        """A list in the config file; comma-separated in the environment."""
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value

    @field_validator("allowed_hosts", "allowed_origins", "workspace_roots", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        """A list in the config file; a comma-separated string in the environment."""
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value

    def recall_config(self) -> RecallConfig:
        """The recall engine's tuning these settings give."""
        return RecallConfig(**{name: getattr(self, f"recall_{name}") for name in TUNED})

    @property
    def event_db(self) -> Path:
        return self.data_dir / "events.sqlite"

    @property
    def projection_dir(self) -> Path:
        return self.data_dir / "projections"

    @property
    def embedding_model_dir(self) -> Path:
        return self.model_dir or self.data_dir / "models" / "minilm"


def _from_env(environ: dict[str, str]) -> dict[str, Any]:
    known = Settings.model_fields
    out: dict[str, Any] = {}
    for key, value in environ.items():
        if key.startswith(ENV_PREFIX):
            name = key[len(ENV_PREFIX) :].lower()
            if name in known:
                out[name] = value
    return out


def load_settings(config_file: Path | None = None, environ: dict[str, str] | None = None, **overrides: Any) -> Settings:
    env = dict(os.environ if environ is None else environ)
    explicit = config_file or (Path(env["STRATA_CONFIG"]) if env.get("STRATA_CONFIG") else None)
    path = explicit or default_config_file()
    values: dict[str, Any] = {}
    if path.exists():
        try:
            values.update(tomllib.loads(path.read_text(encoding="utf-8")).get("strata", {}))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise InvalidInput("invalid_config", str(path), f"cannot read config file: {exc}") from exc
    elif explicit:
        raise InvalidInput("invalid_config", str(path), "config file does not exist")
    values.update(_from_env(env))
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        settings = Settings.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise InvalidInput("invalid_config", field, f"setting {field}: {first['msg']}") from exc
    return settings.model_copy(
        update={
            "data_dir": settings.data_dir.expanduser(),
            "workspace_roots": [root.expanduser() for root in settings.workspace_roots],
        }
    )
