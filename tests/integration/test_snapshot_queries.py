"""The snapshot's query methods (projections/snapshot_queries.py), on a store built through the
composition root and compacted: each answers what the SQL its callers used to run answered, under the
visibility rule of domain/visibility.py (a repo sees its own memories and the global ones, never another
repo's), and the hook's read-only connection gets the same answers as the projection's own."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from strata_recall.interface.app.bootstrap import Strata
from strata_recall.projections.reads import ReadLedger
from strata_recall.projections.snapshot import SnapshotProjection
from strata_recall.projections.snapshot_queries import COLUMNS, SnapshotReader, read_only
from tests.conftest import write_request

A, B = "acme/api", "acme/web"
FP = "ws1:12:0123456789abcdef0123456789abcdef"
SHA = "0123456789abcdef0123456789abcdef01234567"


def write(strata: Strata, repo: str, text: str, scope: str = "repo", path: str | None = None, **extra: object) -> str:
    request = write_request(repo, text, "fact", scope, **extra)
    if path is not None:  # a client's fingerprint: no working tree needed
        request["anchors"] = [{"path": path, "fingerprint": FP}]
    return strata.api().write(request).memory_id


@pytest.fixture
def planted(strata: Strata) -> dict[str, str]:
    m = {
        "a_fact": write(strata, A, "The API answers health checks on /healthz with a 200"),
        "a_anchored": write(
            strata,
            A,
            "connect() retries three times before giving up",
            path="src/db_pool.py",
        ),
        "a_other_path": write(
            strata,
            A,
            "Templates are rendered by jinja2 in strict mode",
            path="src/dbXpool.py",
        ),
        "a_learned": write(strata, A, "Release notes are generated from the changelog", evidence_refs=[f"git:{SHA}"]),
        "a_gone": write(strata, A, "The staging cluster has five nodes"),
        "b_fact": write(strata, B, "The web app is built with vite"),
        "global": write(strata, A, "Never commit secrets to any repository", scope="global"),
    }
    strata.api().forget({"repo_id": A, "memory_id": m["a_gone"], "reason": "scaled down"})
    strata.compact()
    return m


@pytest.fixture
def snapshot(strata: Strata, planted: dict[str, str]) -> SnapshotProjection:
    projection: SnapshotProjection = strata.projection("snapshot")  # type: ignore[assignment]
    return projection


@pytest.fixture
def hook_reader(strata: Strata, planted: dict[str, str]) -> Iterator[SnapshotReader]:
    reader = SnapshotReader(read_only(strata.settings.projection_dir / "snapshot.sqlite"))
    yield reader
    reader.close()


def test_the_column_list_is_the_tables(snapshot: SnapshotProjection) -> None:
    """One column list: the table has exactly these columns and the fold's state blob."""
    assert snapshot.rows()  # the projection reads its rows through the same list
    table = [row[1] for row in snapshot.conn.execute("PRAGMA table_info(snapshot)")]
    assert sorted(table) == sorted([*COLUMNS, "state"])


def test_a_hook_sees_live_memories_of_its_repo_and_global_ones(
    planted: dict[str, str], hook_reader: SnapshotReader, snapshot: SnapshotProjection
) -> None:
    shown = hook_reader.visible_live(planted.values(), A)
    assert set(shown) == {planted[k] for k in ("a_fact", "a_anchored", "a_other_path", "a_learned", "global")}
    assert shown[planted["a_anchored"]].anchors[0]["path"] == "src/db_pool.py"
    assert shown[planted["global"]].scope == "global"
    assert set(hook_reader.visible_live(planted.values(), B)) == {planted["b_fact"], planted["global"]}
    assert snapshot.visible_live(planted.values(), B) == hook_reader.visible_live(planted.values(), B)
    assert hook_reader.visible_live([], A) == {}


def test_anchored_memories_are_the_repos_own_oldest_first(
    planted: dict[str, str], snapshot: SnapshotProjection
) -> None:
    found = snapshot.anchored(A, ("active", "pending"))
    assert [m.memory_id for m in found] == [planted["a_anchored"], planted["a_other_path"]]
    assert found[0].kind == "fact" and found[0].status == "active" and found[0].changes == 0
    assert snapshot.anchored(B, ("active", "pending")) == []


def test_memories_anchored_to_a_path_take_its_underscore_literally(
    planted: dict[str, str], snapshot: SnapshotProjection
) -> None:
    """`_` is a LIKE wildcard: src/db_pool.py must not match src/dbXpool.py."""
    assert [m.memory_id for m in snapshot.anchored_to(A, "src/db_pool.py")] == [planted["a_anchored"]]
    assert snapshot.anchored_to(B, "src/db_pool.py") == []


def test_learned_commits_digest_rows_texts_and_repos(planted: dict[str, str], snapshot: SnapshotProjection) -> None:
    assert snapshot.learned_commits(A) == [SHA]
    assert snapshot.learned_commits(B) == []
    own = {r.memory_id for r in snapshot.digest_rows(A, include_global=False)}
    assert own == {planted[k] for k in ("a_fact", "a_anchored", "a_other_path", "a_learned")}
    seen = snapshot.digest_rows(A)
    assert {r.memory_id for r in seen} == own | {planted["global"]}
    assert all(isinstance(r.problem_ids, tuple) and isinstance(r.change_chain, tuple) for r in seen)
    assert snapshot.texts()[planted["b_fact"]] == "The web app is built with vite"
    assert set(snapshot.texts()) == set(planted.values())
    assert snapshot.repos_with_live_memories() == [A, B]


def test_pools_and_visible_ids(planted: dict[str, str], snapshot: SnapshotProjection) -> None:
    own = [r.memory_id for r in snapshot.pool(A)]
    assert set(own) == {planted[k] for k in ("a_fact", "a_anchored", "a_other_path", "a_learned")}
    assert [r.memory_id for r in snapshot.pool(None)] == [planted["global"]]
    assert {r.memory_id for r in snapshot.pool(B, visible=True)} == {planted["b_fact"], planted["global"]}
    assert snapshot.pool(A, kind="solution") == []
    anchored = next(r for r in snapshot.pool(A) if r.memory_id == planted["a_anchored"])
    assert anchored.anchors[0]["path"] == "src/db_pool.py" and anchored.utility_by_problem == {}
    assert anchored.problem_ids == () and anchored.status == "active" and anchored.repo_id == A
    everything = set(planted.values())
    assert snapshot.visible_ids(B, everything) == {planted["b_fact"], planted["global"]}
    assert snapshot.visible_ids(None, everything) == {planted["global"]}
    assert planted["a_gone"] in snapshot.visible_ids(A, everything)  # any status


def test_the_ledger_says_which_reads_were_served_and_rated(tmp_path: Path) -> None:
    ledger = ReadLedger(tmp_path / "reads.sqlite")
    try:
        ledger.record("r1", A, "how is the pool sized", "read", None, 7, ["m1", "m2"])
        ledger.record("r2", A, "what runs the build", "read", None, 8, [])
        ledger.record("r3", B, "other repo", "read", None, 9, ["m3"])
        ledger.credit([("r2", "m9")])
        served = ledger.served(A, ["r1", "r2", "r3", "unknown"])
        assert set(served) == {"r1", "r2"}
        assert served["r1"].memory_ids == ("m1", "m2") and served["r1"].created_at > 0
        assert ledger.rated(["r1", "r2", "r3"]) == {"r2"}
        many = [f"x{i}" for i in range(1200)] + ["r2"]  # past one statement's parameters
        assert ledger.rated(many) == {"r2"}
        assert set(ledger.served(A, many)) == {"r2"}
    finally:
        ledger.close()


def test_the_snapshot_queries_module_needs_only_the_standard_library() -> None:
    """The hooks import it in a fresh process under a deadline: no pydantic, numpy, fastembed, orjson,
    eventsourcing or sqlite driver beyond the standard library's."""
    import subprocess

    heavy = ("pydantic", "numpy", "fastembed", "orjson", "eventsourcing", "sqlean", "sqlite_vec", "structlog")
    probe = (
        "import sys; import strata_recall.projections.snapshot_queries; "
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == ""
