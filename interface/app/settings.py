"""One settings object: defaults < config file (TOML) < STRATA_* environment < explicit overrides.

Nothing is read at import time; `load_settings()` is called by the composition root.
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from strata_recall.domain.errors import InvalidInput

ENV_PREFIX = "STRATA_"


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
        None, ge=1, le=64, description="Threads of the embedding model; default: onnxruntime's choice (all cores)."
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

    @field_validator("allowed_hosts", "allowed_origins", "workspace_roots", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        """A list in the config file; a comma-separated string in the environment."""
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value

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
