"""`strata learn` on a repository someone else made, through the installed command and the stop hook as
Claude Code runs it: a `.git` whose config names commands (a promisor remote's ssh command, fsmonitor,
pagers, textconv and external diff drivers, hooks) runs none of them; commit messages and file names
holding terminal controls reach the terminal escaped (interface/app/git_runs.py, interface/app/visible.py)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from uuid import uuid4

from strata_recall.domain.anchors import fingerprint
from tests.conftest import HOOK_DEADLINE_ENV, STRATA_COMMAND, hook_commands, strata_ok, strata_run
from tests.e2e.test_learn import commit

COMMANDS = ("ssh", "fsmonitor", "pager", "textconv", "external", "hook")
"""What the hostile config can make git run; each leaves a file of its name in the markers folder."""


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout.strip()


def hostile(root: Path, markers: Path) -> None:
    """Two commits, then a config naming a command for everything git could run, and the first version of
    the file missing from a partial clone's objects: reading the second commit's counts needs it, and git
    would fetch it from the promisor remote through `core.sshCommand`."""
    commit(root, "Add the pool", {"pool.py": "x = 1\n"}, 1_700_000_000)
    commit(root, "Hold the pool lock", {"pool.py": "x = 2\n"}, 1_700_086_400)
    markers.mkdir()

    def leaves(name: str) -> str:
        return f"touch {markers / name}; false"

    blob = git(root, "rev-parse", "HEAD~1:pool.py")
    (root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    for key, value in {
        "core.repositoryformatversion": "1",
        "extensions.partialClone": "origin",
        "remote.origin.promisor": "true",
        "remote.origin.url": "ssh://git.example.invalid/acme/api.git",
        "core.sshCommand": leaves("ssh"),
        "core.fsmonitor": leaves("fsmonitor"),
        "core.pager": leaves("pager"),
        "pager.log": leaves("pager"),
        "diff.evil.textconv": leaves("textconv"),
        "diff.evil.command": leaves("external"),
        "diff.external": leaves("external"),
        "core.hooksPath": str(markers / "hooks"),
    }.items():
        git(root, "config", key, value)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text("* diff=evil\n")
    (markers / "hooks").mkdir()
    for name in ("post-checkout", "post-index-change", "reference-transaction", "pre-auto-gc", "post-merge"):
        hook = markers / "hooks" / name
        hook.write_text(f"#!/bin/sh\ntouch {markers / 'hook'}\n")
        hook.chmod(0o755)


def ran(markers: Path) -> list[str]:
    return sorted(name for name in COMMANDS if (markers / name).exists())


def test_learn_runs_nothing_a_hostile_git_config_names(
    strata_env: dict[str, str], git_repo: Path, tmp_path: Path
) -> None:
    markers = tmp_path / "markers"
    hostile(git_repo, markers)
    refused = strata_run(strata_env, "--json", "learn", "--no-embed", "--root", str(git_repo))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert json.loads(refused.stdout)["error"]["code"] == "git_failed"  # the object is missing: not fetched
    assert ran(markers) == []

    # the stop hook, as Claude Code runs it, starts the same learn in the session's repository by itself
    env = {**strata_env, **HOOK_DEADLINE_ENV}
    strata_ok(strata_run(env, "--json", "init", "claude-code", "--hooks", cwd=git_repo))
    payload = {"session_id": "s-1", "cwd": str(git_repo), "hook_event_name": "Stop", "stop_hook_active": False}
    done = subprocess.run(
        ["sh", "-c", hook_commands(git_repo)["Stop"]],
        input=json.dumps(payload),
        env={**env, "STRATA_COMMAND": STRATA_COMMAND},
        cwd=git_repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    learned = Path(env["STRATA_DATA_DIR"]) / "hooks" / "learn.log"
    give_up = time.monotonic() + 120  # a guard against a hang, not a timing
    while not (learned.exists() and '"ok":' in learned.read_text()):
        assert time.monotonic() < give_up
        time.sleep(0.2)
    assert '"git_failed"' in learned.read_text()
    assert ran(markers) == []


def test_a_historys_terminal_controls_reach_the_terminal_escaped(strata_env: dict[str, str], git_repo: Path) -> None:
    title = "\x1b]0;owned\x07"
    commit(git_repo, "Add the pool", {"pool.py": "x = 1\n"}, 1_700_000_000)
    commit(
        git_repo,
        f"Fix the lock race{title}\x1b[2J\n\nThe body \x1b]8;;https://evil.example\x1b\\a link\x1b]8;;\x1b\\ \u202eevil",
        {f"red\x1b[31m{title}.py": "y = 2\n", "pool.py": "x = 2\n"},
        1_700_086_400,
    )
    strata_ok(strata_run(strata_env, "--json", "learn", "--no-embed", "--root", str(git_repo)))
    events = strata_ok(strata_run(strata_env, "--json", "log"))["events"]
    fixed = next(e["memory_id"] for e in events if e["type"] == "MemoryWritten" and "lock race" in e["fields"]["text"])
    assert title in next(e for e in events if e["memory_id"] == fixed)["fields"]["text"]  # the data kept as it is
    for args in (["show", fixed], ["log"], ["learn", "--no-embed", "--root", str(git_repo)]):
        shown = strata_run(strata_env, "--text", *args)
        assert shown.returncode == 0, shown.stderr
        for output in (shown.stdout, shown.stderr):
            assert not any(c in output for c in "\x1b\x07\r\u202e"), (args, output)
        if args[0] != "learn":
            assert "red\\x1b[31m\\x1b]0;owned\\x07.py" in shown.stdout  # the file name, escaped
    text = strata_run(strata_env, "--text", "show", fixed).stdout
    assert "Fix the lock race\\x1b]0;owned\\x07\\x1b[2J" in text and "\\u202eevil" in text
    assert "\n    The body" in text  # the message's body indented under its first line


def test_a_capture_sent_to_a_server_fingerprints_no_file_through_a_link_out_of_the_repository(
    strata_env: dict[str, str], git_repo: Path, tmp_path: Path
) -> None:
    """`strata learn --transcript --http` (what the stop hook of a client set up for a team server runs):
    the files the session edited are fingerprinted on the client, and only those whose real path lies in
    the repository (interface/agents/hook_cues.py relative): a file the repository links to from outside
    is not read, its fingerprint never sent. The server here records what it is sent and answers as
    Strata would. (The audit found this held before: a guard.)"""
    from tests.e2e.test_capture import seed, transcript

    seed(git_repo)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "settings.py").write_text("PASSWORD = 'kept-on-this-machine'\n")
    (git_repo / "src" / "settings.py").unlink()
    (git_repo / "src" / "settings.py").symlink_to(outside / "settings.py")
    path = transcript(git_repo, tmp_path / "claude" / "session.jsonl")
    sent: list[tuple[str, dict[str, Any]]] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            op = self.path.rsplit("/", 1)[1]
            sent.append((op, body))
            kind = body.get("memory", {}).get("kind", "fact")
            answer = {"memory_id": str(uuid4()), "resolved": {"kind": kind, "scope": "repo"}, "outcome": "created"}
            answer |= {"status": "active", "position": len(sent), "credited": []}
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        args = ["--json", "learn", "--root", str(git_repo), "--repo-id", "team/backend", "--no-instructions"]
        args += ["--transcript", str(path), "--no-history", "--http", f"http://127.0.0.1:{server.server_port}"]
        strata_ok(strata_run({**strata_env, "T": "t"}, *args, "--token-env", "T"))
    finally:
        server.shutdown()
    solution = next(body for op, body in sent if op == "write" and body["memory"]["kind"] == "solution")
    assert [a["path"] for a in solution["anchors"]] == ["src/pool.py"]  # src/settings.py links out: not read
    linked = fingerprint((outside / "settings.py").read_text())
    assert linked not in json.dumps(sent)
