"""Workspace reads are the operator's decision (issue #20), end to end.

Through a real `strata serve` with a token, as an attacker holding it would try: over /v1 and MCP over
HTTP no request makes the server read its own disk (`workspace.root` is refused the same way whatever
it names), a guessed fingerprint tells nothing about a file, and views never show a fingerprint. A
stuck operation marks /healthz degraded, with its name, while health keeps answering. Through the
installed `strata` command and `strata mcp` over stdio (local clients): a root inside the repo the
command runs in is read, anything else is one refusal whatever the reason, and a FIFO or /proc never
holds it up."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from strata_recall.domain.anchors import fingerprint
from tests.conftest import STRATA_COMMAND, Served, write_request

REPO = "acme/api"
TOKEN = "workspace-token-for-tests-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SECRET = "db_password=hunter2-and-more\nport=5432\n"


def allowed_root(tmp_path: Path) -> Path:
    """A folder the operator configured as a workspace root, holding what an attacker would aim at:
    a secret file, a FIFO, symlinks out of the root."""
    root = tmp_path / "allowed"
    (root / "src").mkdir(parents=True)
    (root / "src" / "db.py").write_text("def connect():\n    return 1\n")
    (root / "secret.env").write_text(SECRET)
    os.chmod(root / "secret.env", 0o600)
    os.mkfifo(root / "pipe.py")
    (root / "etc").symlink_to("/etc")
    (root / "passwd").symlink_to("/etc/passwd")
    return root


def attempts(root: Path) -> list[tuple[str, str]]:
    """(workspace root, anchored path): the issue's attacks, and an honest root for comparison."""
    return [
        ("/", "etc/passwd"),
        ("/etc", "shadow"),
        ("/etc", "no-such-file"),
        ("/proc", "kmsg"),
        ("/proc", "self/environ"),
        (str(root), "etc/passwd"),
        (str(root), "passwd"),
        (str(root), "pipe.py"),
        (str(root / "etc"), "passwd"),
        ("/nonexistent", "x.py"),
        (str(root), "secret.env"),
        (str(root), "src/db.py"),
    ]


def serving(serve: Callable[..., Served], root: Path, **env: str) -> Served:
    return serve(env={"STRATA_TOKEN": TOKEN, "STRATA_WORKSPACE_ROOTS": str(root), "STRATA_LOG_FORMAT": "json", **env})


def head(http: httpx.Client) -> int:
    return int(http.get("/healthz").json()["head"])


@pytest.mark.slow
def test_over_http_no_request_makes_the_server_read_its_disk(serve: Callable[..., Served], tmp_path: Path) -> None:
    root = allowed_root(tmp_path)
    served = serving(serve, root)
    refusals: set[tuple[int, str, str, str]] = set()
    with httpx.Client(base_url=served.url, headers=AUTH, timeout=30) as http:
        before = head(http)
        for workspace_root, path in attempts(root):
            write = {
                **write_request(REPO, f"anchored to {path}"),
                "anchors": [{"path": path}],
                "workspace": {"root": workspace_root},
            }
            read = {"repo_id": REPO, "query": "password", "workspace": {"root": workspace_root}}
            for op, body in (("write", write), ("read", read)):
                answer = http.post(f"/v1/{op}", json=body)
                error = answer.json()["error"]
                refusals.add((answer.status_code, error["code"], error["path"], error["message"]))
        assert head(http) == before  # nothing was recorded

    async def over_mcp() -> set[tuple[str, str]]:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        seen = set()
        async with (
            create_mcp_http_client(headers=AUTH) as http_client,
            Client(streamable_http_client(f"{served.url}/mcp", http_client=http_client)) as client,
        ):
            for workspace_root, path in attempts(root):
                result = await client.call_tool(
                    "write",
                    {
                        **write_request(REPO, f"anchored to {path}"),
                        "anchors": [{"path": path}],
                        "workspace": {"root": workspace_root},
                    },
                )
                assert result.is_error
                error = json.loads(result.content[0].text)["error"]  # type: ignore[union-attr]
                seen.add((error["code"], error["message"]))
        return seen

    # one answer, whatever the root names: allowed or not, there or not, a file, a FIFO, /proc
    assert {(status, code, message) for status, code, _, message in refusals} == {
        (400, "workspace_files_required", next(iter(refusals))[3])
    }
    assert "workspace.files" in next(iter(refusals))[3] and "strata fingerprint" in next(iter(refusals))[3]
    assert anyio.run(over_mcp) == {("workspace_files_required", next(iter(refusals))[3])}
    assert served.stop() == 0


@pytest.mark.slow
def test_a_guessed_fingerprint_tells_nothing_about_a_file(serve: Callable[..., Served], tmp_path: Path) -> None:
    """The attack of the issue: anchors on a line of a secret file whose fingerprints are guesses of a
    prefix; reads with a workspace would say which guess is right. Every answer is the same for a
    right and a wrong guess."""
    root = allowed_root(tmp_path)
    served = serving(serve, root)
    right, wrong = fingerprint("db_password=h"), fingerprint("db_password=x")
    texts = {
        "right": "The database password setting is documented in the env file",
        "wrong": "The service port is configured next to the credentials",
    }
    with httpx.Client(base_url=served.url, headers=AUTH, timeout=60) as http:
        ids = {}
        for name, guess in (("right", right), ("wrong", wrong)):
            written = http.post(
                "/v1/write",
                json={
                    **write_request(REPO, texts[name]),
                    "anchors": [{"path": "secret.env", "lines": [1, 1], "fingerprint": guess}],
                },
            )
            assert written.status_code == 200, written.text
            ids[name] = written.json()["memory_id"]
        position = written.json()["position"]
        workspaces = [
            {"root": str(root)},
            {"root": str(root), "files": {"secret.env": right}},
            {"files": {"secret.env": right}},
            {"files": {"secret.env": wrong}},
            {"files": {"secret.env": None}},
        ]
        for workspace in workspaces:
            seen = []
            for name in ("right", "wrong"):
                answer = http.post(
                    "/v1/read",
                    json={
                        "repo_id": REPO,
                        "query": texts[name],
                        "workspace": workspace,
                        "consistency": {"after_position": position},
                    },
                )
                if answer.status_code != 200:
                    seen.append((answer.status_code, answer.json()["error"]["code"]))
                    continue
                result = next(r for r in answer.json()["results"] if r["memory_id"] == ids[name])
                seen.append((result["anchor_changed"], result["anchor_missing"], result["relevance"] > 0.5))
            assert seen[0] == seen[1], workspace
        for memory_id in ids.values():
            view = http.post("/v1/memory", json={"repo_id": REPO, "memory_id": memory_id})
            assert view.status_code == 200 and "ws1:" not in view.text  # views never show a fingerprint
    assert served.stop() == 0


@pytest.mark.slow
def test_a_stuck_operation_marks_health_degraded_and_health_keeps_answering(
    serve: Callable[..., Served], strata_env: dict[str, str], tmp_path: Path
) -> None:
    """Deterministically stuck: another process holds the write lock of the read ledger, so a read
    (which records itself there) waits on the lane until the lock is released."""
    served = serving(serve, tmp_path, STRATA_REQUEST_STALL_SECONDS="0.5")
    with httpx.Client(base_url=served.url, headers=AUTH, timeout=120) as http:
        written = http.post("/v1/write", json=write_request(REPO, "Integration tests hang without Postgres")).json()
        body = {"repo_id": REPO, "query": "tests hang", "consistency": {"after_position": written["position"]}}
        assert http.post("/v1/read", json=body).status_code == 200
        assert http.get("/healthz").json()["status"] == "ok"
        lock = sqlite3.connect(Path(strata_env["STRATA_DATA_DIR"]) / "projections" / "reads.sqlite", timeout=60)
        lock.execute("BEGIN IMMEDIATE")
        answered: list[httpx.Response] = []

        def read_on_its_own_connection() -> None:
            with httpx.Client(base_url=served.url, headers=AUTH, timeout=120) as other:
                answered.append(other.post("/v1/read", json=body))

        stuck = threading.Thread(target=read_on_its_own_connection)
        stuck.start()
        try:
            health = wait_for(
                lambda: http.get("/healthz").json(), lambda h: h["status"] == "degraded"
            )  # answers meanwhile
            assert health["ok"] is True and health["stalled"]["op"] == "read" and health["stalled"]["seconds"] >= 0.5
            assert not answered  # the read is still held
            wait_for(lambda: served.stderr, lambda lines: logged(lines, finished=False))
        finally:
            lock.rollback()
            lock.close()
        stuck.join(60)
        assert answered and answered[0].status_code == 200
        health = wait_for(lambda: http.get("/healthz").json(), lambda h: h["status"] == "ok")
        assert health["stalled"] is None
        wait_for(lambda: served.stderr, lambda lines: logged(lines, finished=True))
    assert served.stop() == 0
    assert len([line for line in served.stderr if '"request_stalled"' in line]) == 2  # once stuck, once finished


def logged(lines: list[str], *, finished: bool) -> bool:
    for line in list(lines):
        if '"request_stalled"' in line:
            entry = json.loads(line)
            if entry["op"] == "read" and entry["finished"] is finished:
                return True
    return False


def wait_for(probe: Callable[[], Any], until: Callable[[Any], bool], timeout: float = 25.0) -> Any:
    """Poll `probe` until `until` holds (a generous deadline: the machine may be loaded)."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if until(value):
            return value
        assert time.monotonic() < deadline, f"still {value!r}"[-2000:]
        time.sleep(0.05)


# --- local clients: the installed command and strata mcp over stdio --------------------------------


def strata(env: dict[str, str], *args: str, cwd: Path) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [STRATA_COMMAND, "--json", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )
    assert "Traceback" not in done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def test_a_local_write_reads_only_under_its_roots(strata_env: dict[str, str], git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "src").mkdir()
    (git_repo / "src" / "db.py").write_text("def connect():\n    return 1\n")
    os.mkfifo(git_repo / "pipe.py")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.env").write_text(SECRET)
    (git_repo / "escape").symlink_to(outside)
    (git_repo / "secret.env").symlink_to(outside / "secret.env")

    def write(
        root: str, path: str, cwd: Path = git_repo, env: dict[str, str] = strata_env
    ) -> tuple[int, dict[str, Any]]:
        return strata(
            env,
            "write",
            json.dumps(
                {
                    **write_request(REPO, f"connect() returns one ({path})"),
                    "anchors": [{"path": path}],
                    "workspace": {"root": root},
                }
            ),
            cwd=cwd,
        )

    code, written = write(str(git_repo), "src/db.py")  # the repo the command runs in
    assert code == 0, written
    code, written = write(str(git_repo / "src"), "db.py")
    assert code == 0, written
    refusals = set()
    for root, path in (
        ("/", "etc/passwd"),
        ("/etc", "shadow"),
        ("/proc", "kmsg"),
        (str(outside), "secret.env"),
        (str(git_repo), "escape/secret.env"),
        (str(git_repo), "secret.env"),
        (str(git_repo), "pipe.py"),
        (str(git_repo), "gone.py"),
        (str(git_repo / "escape"), "secret.env"),
    ):
        code, refused = write(root, path)
        assert code == 3, (root, path, refused)
        refusals.add(
            (refused["error"]["code"], refused["error"]["message"].replace(repr(root), "R").replace(repr(path), "P"))
        )
    assert {c for c, _ in refusals} == {"not_readable"} and len(refusals) == 2  # a folder's message and a file's
    code, _ = write(str(git_repo), "src/db.py", cwd=tmp_path)  # run elsewhere, the repo is no root of the command
    assert code == 3
    code, written = write(
        str(outside),
        "secret.env",
        cwd=tmp_path,
        env={**strata_env, "STRATA_WORKSPACE_ROOTS": f"{tmp_path / 'nowhere'},{outside}"},
    )
    assert code == 0, written  # a configured root


def test_an_import_line_reads_only_under_its_roots_too(
    strata_env: dict[str, str], git_repo: Path, tmp_path: Path
) -> None:
    """`strata import FILE`: a file of write requests someone handed over names anchors and roots as it
    likes; each line's files are read by the same reader as a write's, and one line refused refuses all."""
    (git_repo / "src").mkdir()
    (git_repo / "src" / "db.py").write_text("def connect():\n    return 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.env").write_text(SECRET)
    (git_repo / "escape").symlink_to(outside)
    (git_repo / "secret.env").symlink_to(outside / "secret.env")

    def line(root: str, path: str) -> str:
        request = {**write_request(REPO, f"connect() returns one ({path})"), "anchors": [{"path": path}]}
        return json.dumps({**request, "workspace": {"root": root}})

    good = line(str(git_repo), "src/db.py")
    for root, path, code in (
        (str(git_repo), "escape/secret.env", "not_readable"),
        (str(git_repo), "secret.env", "not_readable"),
        (str(git_repo / "escape"), "secret.env", "not_readable"),
        ("/", "etc/passwd", "not_readable"),
        (str(git_repo), "../outside/secret.env", "invalid_path"),
        (str(git_repo), "/etc/passwd", "invalid_path"),
    ):
        requests = tmp_path / "requests.jsonl"
        requests.write_text(good + "\n" + line(root, path) + "\n")
        status, refused = strata(strata_env, "import", str(requests), cwd=git_repo)
        assert status in (2, 3), (root, path, refused)
        assert [(e["code"], e["path"].split(":")[0]) for e in refused["errors"]] == [(code, "2")], refused
    status, log = strata(strata_env, "log", cwd=git_repo)
    assert status == 0 and log["position"] == 0  # nothing imported
    (tmp_path / "good.jsonl").write_text(good + "\n")
    status, imported = strata(strata_env, "import", str(tmp_path / "good.jsonl"), cwd=git_repo)
    assert status == 0 and imported["created"] == 1, imported


def test_a_guess_read_locally_tells_nothing_either(strata_env: dict[str, str], git_repo: Path) -> None:
    """A local client's reads of its own tree judge only fingerprints Strata computed: a client's
    guessed fingerprints are neither searched for nor compared with the file."""
    (git_repo / "secret.env").write_text(SECRET)
    texts = [
        "The database password setting is documented in the env file",
        "The service port is configured next to the credentials",
        "Local secrets live in an env file at the root of the repository",
    ]
    guesses = [fingerprint("db_password=h"), fingerprint("db_password=x"), fingerprint(SECRET.splitlines()[0])]
    judged = []
    for text, guess in zip(texts, guesses, strict=True):
        code, written = strata(
            strata_env,
            "write",
            json.dumps(
                {
                    **write_request(REPO, text),
                    "anchors": [{"path": "secret.env", "lines": [1, 1], "fingerprint": guess}],
                }
            ),
            cwd=git_repo,
        )
        assert code == 0, written
        code, read = strata(
            strata_env,
            "read",
            json.dumps({"repo_id": REPO, "query": text, "workspace": {"root": str(git_repo)}}),
            cwd=git_repo,
        )
        assert code == 0, read
        result = next(r for r in read["results"] if r["memory_id"] == written["memory_id"])
        judged.append((result["anchor_changed"], result["anchor_missing"]))
    assert judged == [([], [])] * 3
    code, report = strata(strata_env, "check", "--repo", REPO, "--root", str(git_repo), "--apply", cwd=git_repo)
    assert code == 0 and report["drifted"] == [] and report["unjudged"] == 3


def test_strata_mcp_over_stdio_reads_the_repo_it_was_started_in(strata_env: dict[str, str], git_repo: Path) -> None:
    (git_repo / "src").mkdir()
    (git_repo / "src" / "db.py").write_text("def connect():\n    return 1\n")
    os.mkfifo(git_repo / "pipe.py")
    params = StdioServerParameters(command=STRATA_COMMAND, args=["mcp"], env=strata_env, cwd=str(git_repo))

    async def main() -> list[Any]:
        async with Client(params, read_timeout_seconds=60) as client:
            answers = [
                await client.call_tool(
                    "write",
                    {
                        **write_request(REPO, f"connect() returns one ({path})"),
                        "anchors": [{"path": path}],
                        "workspace": {"root": str(git_repo)},
                    },
                )
                for path in ("src/db.py", "pipe.py")
            ]
            answers.append(
                await client.call_tool("read", {"repo_id": REPO, "query": "connect", "workspace": {"root": "/"}})
            )
            return answers

    fine, fifo, outside = anyio.run(main)
    assert not fine.is_error, fine.content
    for refused in (fifo, outside):
        assert refused.is_error and json.loads(refused.content[0].text)["error"]["code"] == "not_readable"  # type: ignore[union-attr]
