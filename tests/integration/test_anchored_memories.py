"""Memories anchored to code, in a real git working tree: a write fingerprints the anchored symbol
from the tree (and records HEAD), a read with the workspace says `anchor_changed` once the code is
edited (not when it is only reformatted or moved) and ranks the memory lower, and says it no
longer once the edit is reverted; a deleted file is `anchor_missing`; `check --apply` records each
drift once. A client's fingerprints are judged only by the file fingerprints a client sends. Bad
anchors are refused with nothing recorded; a file Strata will not read is one refusal whatever the
reason."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from strata_recall.domain.anchors import fingerprint
from strata_recall.domain.errors import InvalidInput, NotFound, StrataError
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.services.hygiene import check
from strata_recall.interface.app.settings import load_settings
from tests.conftest import write_request

REPO = "acme/api"
DB = '''"""Database access."""

import time


def connect(url):
    for attempt in range(3):
        try:
            return open_connection(url)
        except ConnectionError:
            time.sleep(2 ** attempt)
    raise ConnectionError(url)


def close(conn):
    conn.close()
'''


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def strata(data_dir: Path, tmp_path: Path) -> Iterator[Strata]:
    """A store whose local clients may have it read files under `tmp_path/work` (workspace_roots)."""
    app = build(load_settings(environ={}, data_dir=data_dir, workspace_roots=[tmp_path / "work"]))
    yield app
    app.close()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "src").mkdir(parents=True)
    (root / "src" / "db.py").write_text(DB)
    (root / "README.md").write_text("# api\n")
    git(root, "init", "-q")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=t", "add", ".")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "initial")
    return root


TEXT = "connect() retries three times with exponential backoff before giving up"


def anchored(api: CommandAPI, root: Path) -> str:
    request = {**write_request(REPO, TEXT), "anchors": [{"path": "src/db.py", "symbol": "connect"}]}
    return api.write({**request, "workspace": {"root": str(root)}}).memory_id


def result(api: CommandAPI, root: Path | None, memory_id: str, **workspace: object) -> tuple[int, dict]:
    request: dict = {"repo_id": REPO, "query": "how does connect retry with backoff"}
    if root is not None or workspace:
        request["workspace"] = {**({"root": str(root)} if root else {}), **workspace}
    results = api.read(request).results
    for rank, r in enumerate(results):
        if r.memory_id == memory_id:
            return rank, r.model_dump()
    raise AssertionError(f"{memory_id} not returned")


def test_an_anchored_memory_flips_with_the_code_and_back(strata: Strata, tree: Path) -> None:
    api = strata.api()
    memory_id = anchored(api, tree)
    stored = strata.log.memory(memory_id).anchor_list
    assert stored[0]["commit"] == git(tree, "rev-parse", "HEAD")
    connect = DB[DB.index("def connect") : DB.index("def close")]
    assert (stored[0]["fingerprint"], stored[0]["file_fingerprint"]) == (fingerprint(connect), fingerprint(DB))
    strata.catch_up()

    r = result(api, tree, memory_id)[1]
    assert (r["anchor_changed"], r["anchor_missing"]) == ([], [])
    assert r["anchors"] == [{"path": "src/db.py", "symbol": "connect", "lines": None, "commit": stored[0]["commit"]}]

    db = tree / "src" / "db.py"
    db.write_text("import os\n\n\ndef helper():\n    return os.getcwd()\n\n\n" + DB.replace("    ", "  "))
    assert result(api, tree, memory_id)[1]["anchor_changed"] == []  # moved and reindented only

    db.write_text(DB.replace("range(3)", "range(5)"))
    assert git(tree, "status", "--porcelain") == "M src/db.py"
    assert result(api, tree, memory_id)[1]["anchor_changed"] == ["src/db.py#connect"]
    assert result(api, None, memory_id)[1]["anchor_changed"] == []  # without a workspace nothing is judged

    git(tree, "checkout", "--", "src/db.py")
    assert result(api, tree, memory_id)[1]["anchor_changed"] == []

    db.unlink()
    assert result(api, tree, memory_id)[1]["anchor_missing"] == ["src/db.py#connect"]


def test_a_memory_whose_code_moved_on_ranks_below_one_whose_did_not(strata: Strata, tree: Path) -> None:
    """The same lesson twice, equally relevant: anchored in this repo (believed a little more) and
    global (not anchored). Reads keep the better of two near-identical results, so the anchored one
    is shown while its code holds, and the global one once the code changed."""
    api = strata.api()
    request = {**write_request(REPO, TEXT, confidence=0.85), "anchors": [{"path": "src/db.py", "symbol": "connect"}]}
    mine = api.write({**request, "workspace": {"root": str(tree)}}).memory_id
    shared = api.write(write_request(REPO, TEXT, scope="global", confidence=0.8)).memory_id
    strata.catch_up()

    def shown() -> list[str]:
        read = api.read({"repo_id": REPO, "query": TEXT, "workspace": {"root": str(tree)}})
        return [r.memory_id for r in read.results if r.memory_id in (mine, shared)]

    assert shown() == [mine]
    (tree / "src" / "db.py").write_text(DB.replace("range(3)", "range(5)"))
    assert shown() == [shared]
    git(tree, "checkout", "--", "src/db.py")
    assert shown() == [mine]


def test_a_client_can_send_file_fingerprints_instead_of_a_root(strata: Strata, tree: Path) -> None:
    """What a client elsewhere does: its anchors carry the fingerprints `strata fingerprint` prints,
    its reads the files' fingerprints now. Strata reads no file for it, and its fingerprints are never
    judged against a file Strata reads (that would test a client's guess against the file)."""
    api = strata.api()
    connect = DB[DB.index("def connect") : DB.index("def close")]
    anchor = {
        "path": "src/db.py",
        "symbol": "connect",
        "fingerprint": fingerprint(connect),
        "file_fingerprint": fingerprint(DB),
    }
    memory_id = api.write({**write_request(REPO, TEXT), "anchors": [anchor]}).memory_id
    assert strata.log.memory(memory_id).anchor_list[0]["fingerprinted_by"] == "client"
    strata.catch_up()
    now = fingerprint(DB)
    assert result(api, None, memory_id, files={"src/db.py": now})[1]["anchor_changed"] == []
    edited = fingerprint(DB.replace("range(3)", "range(5)"))
    assert result(api, None, memory_id, files={"src/db.py": edited})[1]["anchor_changed"] == ["src/db.py#connect"]
    assert result(api, None, memory_id, files={"src/db.py": None})[1]["anchor_missing"] == ["src/db.py#connect"]
    assert result(api, None, memory_id, files={"README.md": now})[1]["anchor_changed"] == []  # not named: not judged
    (tree / "src" / "db.py").write_text(DB.replace("range(3)", "range(5)"))
    assert result(api, tree, memory_id)[1]["anchor_changed"] == []  # Strata's reads judge only its own fingerprints
    assert check(strata, REPO, str(tree))["unjudged"] == 1


def test_strata_fingerprints_are_judged_only_by_what_strata_reads(strata: Strata, tree: Path) -> None:
    memory_id = anchored(strata.api(), tree)
    strata.catch_up()
    edited = fingerprint(DB.replace("range(3)", "range(5)"))
    assert result(strata.api(), None, memory_id, files={"src/db.py": edited})[1]["anchor_changed"] == []
    assert result(strata.api(), None, memory_id, files={"src/db.py": None})[1]["anchor_missing"] == []


def test_views_show_where_a_memory_is_anchored_never_its_fingerprints(strata: Strata, tree: Path) -> None:
    api = strata.api()
    memory_id = anchored(api, tree)
    (tree / "src" / "db.py").write_text(DB.replace("range(3)", "range(5)"))
    check(strata, REPO, str(tree), apply=True)
    view = api.memory({"repo_id": REPO, "memory_id": memory_id}).model_dump_json()
    assert "ws1:" not in view and '"src/db.py"' in view and "anchored at version" in view


def test_check_reports_drift_and_apply_records_it_once(strata: Strata, tree: Path) -> None:
    api = strata.api()
    memory_id = anchored(api, tree)
    other_repo = api.write(
        {
            **write_request("acme/web", "close() is idempotent"),
            "anchors": [{"path": "src/db.py", "symbol": "close"}],
            "workspace": {"root": str(tree)},
        }
    ).memory_id
    assert check(strata, REPO, str(tree))["drifted"] == []
    (tree / "src" / "db.py").write_text(DB.replace("range(3)", "range(5)").replace("conn.close()", "conn.shutdown()"))
    report = check(strata, REPO, str(tree))
    assert [d["memory_id"] for d in report["drifted"]] == [memory_id]  # the other repo's memory is not this repo's
    assert report["drifted"][0]["anchors"][0]["state"] == "changed" and report["recorded"] == 0
    before = strata.log.memory(memory_id).truth_value
    applied = check(strata, REPO, str(tree), apply=True)
    assert applied["recorded"] == 1 and strata.log.memory(memory_id).truth_value < before
    adjusted = strata.log.history(strata.log.memory(memory_id).id)[-1]
    assert adjusted.source == "anchor" and any("src/db.py#connect" in ref for ref in adjusted.evidence_refs)
    head = strata.log.position()
    assert check(strata, REPO, str(tree), apply=True)["recorded"] == 0 and strata.log.position() == head
    assert [d["memory_id"] for d in check(strata, "acme/web", str(tree))["drifted"]] == [other_repo]


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda r: {**r, "memory": {**r["memory"], "scope": "global"}}, "anchors_on_global_memory"),
        (lambda r: {k: v for k, v in r.items() if k != "workspace"}, "fingerprint_required"),
        (lambda r: {**r, "anchors": [{"path": "../etc/passwd"}]}, "invalid_path"),
        (lambda r: {**r, "anchors": [{"path": "src/db.py", "symbol": "nope"}]}, "anchor_not_found"),
        (lambda r: {**r, "workspace": {"root": "relative/path"}}, "string_pattern_mismatch"),
        (lambda r: {**r, "anchors": [{"path": "src/db.py", "fingerprint": "abc"}]}, "string_pattern_mismatch"),
        (
            lambda r: {**r, "anchors": [{"path": "src/db.py", "file_fingerprint": fingerprint(DB)}]},
            "fingerprint_required",
        ),
    ],
)
def test_bad_anchors_are_refused_with_nothing_recorded(strata: Strata, tree: Path, change, code: str) -> None:
    api = strata.api()
    request = {
        **write_request(REPO, "connect() retries"),
        "anchors": [{"path": "src/db.py", "symbol": "connect"}],
        "workspace": {"root": str(tree)},
    }
    head = strata.log.position()
    with pytest.raises((InvalidInput, NotFound)) as refused:
        api.write(change(request))
    assert isinstance(refused.value, StrataError) and refused.value.code == code
    assert strata.log.position() == head


def unreadable_cases(tree: Path) -> dict[str, tuple[str, str]]:
    """(workspace root, anchored path) pairs Strata must not read, each for a different reason."""
    (tree / "big.py").write_bytes(b"x = 1\n" * 1_400_000)  # 8.4 MB
    os.mkfifo(tree / "pipe.py")
    outside = tree.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("db_password=hunter2\n")
    (tree / "escape").symlink_to(outside)
    (tree / "link.txt").symlink_to(outside / "secret.txt")
    return {
        "missing file": (str(tree), "src/gone.py"),
        "missing root": ("/nonexistent/tree", "src/db.py"),
        "root outside the roots": (str(outside), "secret.txt"),
        "the filesystem root": ("/", "etc/passwd"),
        "/etc": ("/etc", "passwd"),
        "/proc": ("/proc", "kmsg"),
        "a FIFO": (str(tree), "pipe.py"),
        "a folder": (str(tree), "src"),
        "too large": (str(tree), "big.py"),
        "a symlinked folder out of the root": (str(tree), "escape/secret.txt"),
        "a symlink out of the root": (str(tree), "link.txt"),
        "a root through a symlink out of the roots": (str(tree / "escape"), "secret.txt"),
    }


def test_every_file_strata_will_not_read_is_one_refusal(strata: Strata, tree: Path) -> None:
    api = strata.api()
    head = strata.log.position()
    answers = set()
    for reason, (root, path) in unreadable_cases(tree).items():
        with pytest.raises(NotFound) as refused:
            api.write(
                {**write_request(REPO, "connect() retries"), "anchors": [{"path": path}], "workspace": {"root": root}}
            )
        error = refused.value
        answers.add((error.code, error.message.replace(repr(root), "ROOT").replace(repr(path), "PATH")))
        assert error.code == "not_readable", reason
    assert len({code for code, _ in answers}) == 1 and len({m for _, m in answers}) == 2  # a folder's and a file's
    assert strata.log.position() == head
