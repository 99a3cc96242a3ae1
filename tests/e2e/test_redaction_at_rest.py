"""No secret an agent sends reaches a file: every free-text field of every request (a memory's text and
author, a read's query, a review's reviewer and note, a forget's reason, an archetype's examples) is
redacted before it is written, through a real `strata serve` process and the installed command. The
test reads the raw bytes of every file of the data directory (the event log with its WAL, the read
ledger, the projections) and the server's log."""

from __future__ import annotations

import json
import random
import string
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import STRATA_COMMAND, Served, write_request

REPO = "acme/api"


def _fake(alphabet: str, n: int, rng: random.Random) -> str:
    """Random characters with a digit and a letter in them: assembled at run time, so no literal in this
    file looks like a credential to a scanner."""
    body = [rng.choice(alphabet) for _ in range(n)]
    body[1], body[3] = rng.choice("123456789"), rng.choice([c for c in alphabet if c.isalpha()])
    return "".join(body)


def _data_bytes(data_dir: Path) -> bytes:
    """Every byte Strata wrote under its data directory (the model's files excepted: they are the model)."""
    return b"".join(
        path.read_bytes()
        for path in sorted(data_dir.rglob("*"))
        if path.is_file() and "models" not in path.relative_to(data_dir).parts
    )


def test_no_secret_in_any_field_reaches_a_file(serve: Callable[..., Served], strata_env: dict[str, str]) -> None:
    rng = random.Random(20)
    alnum, hexdigits = string.ascii_letters + string.digits, "0123456789abcdef"
    secrets = {
        "author token": "ghp_" + _fake(alnum, 36, rng),
        "mysql password": _fake(alnum, 14, rng),
        "twilio auth token": _fake(hexdigits, 32, rng),
        "query password": _fake(alnum, 12, rng),
        "reviewer token": "glpat-" + _fake(alnum, 20, rng),
        "review note password": _fake(alnum, 12, rng),
        "forget reason key": "sk_" + "live_" + _fake(alnum, 24, rng),
        "archetype example password": _fake(alnum, 12, rng),
    }
    archetype = {
        "name": "database access",
        "description": "how to reach the databases",
        "examples": [f"mysql -u root -p'{secrets['archetype example password']}' fails with 1045"],
    }
    made = subprocess.run(
        [STRATA_COMMAND, "--json", "archetypes", "set", json.dumps(archetype)],
        env=strata_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stdout + made.stderr

    served = serve(env={"STRATA_REVIEW_WRITES": "true", "STRATA_LOG_LEVEL": "debug"})

    def post(op: str, body: dict[str, Any]) -> dict[str, Any]:
        response = httpx.post(f"{served.url}/v1/{op}", json=body, timeout=60)
        assert response.status_code == 200, response.text
        return response.json()

    text = (
        f"Restore the dump with mysql -h db.internal -u root -p'{secrets['mysql password']}' shop; the Twilio "
        f"auth token is {secrets['twilio auth token']}"
    )
    written = post("write", {**write_request(REPO, text), "author": secrets["author token"]})
    assert written["redactions"] == 3 and written["status"] == "pending"
    reviewed = post(
        "review",
        {
            "repo_id": REPO,
            "memory_id": written["memory_id"],
            "decision": "approved",
            "reviewer": secrets["reviewer token"],
            "note": f"fine, though the admin password={secrets['review note password']} is old",
        },
    )
    assert reviewed["status"] == "active"
    read = post(
        "read",
        {
            "repo_id": REPO,
            "query": f"mysql -u root -p{secrets['query password']} denied",
            "consistency": {"after_position": reviewed["position"], "timeout_ms": 30000},
        },
    )
    assert read["read_id"]
    other = post("write", write_request(REPO, "The staging database is reset every night"))
    post(
        "forget",
        {
            "repo_id": REPO,
            "memory_id": other["memory_id"],
            "reason": f"wrong, and it came with {secrets['forget reason key']}",
        },
    )
    assert served.stop() == 0

    stored = _data_bytes(Path(strata_env["STRATA_DATA_DIR"]))
    log = "".join(served.stderr)
    leaked = sorted(name for name, secret in secrets.items() if secret.encode() in stored or secret in log)
    assert not leaked, f"reached a file or the log: {leaked}"
    # what was around the secrets is kept: the memory, the read's query, the review are all there
    assert b"-u root -p'[REDACTED:password]' shop" in stored
    assert b"Twilio auth token is [REDACTED:token]" in stored
    assert b"[REDACTED:github_token]" in stored and b"-u root -p[REDACTED:password] denied" in stored


def test_a_word_like_password_in_a_shell_line_never_reaches_a_file(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    """A shell's `NAME=value` and a command's `--password value` are literals: the value is the password
    even when it reads like a variable's name (a word and a digit), which in code (`password=new_password`)
    would be a reference and is kept."""
    rng = random.Random(41)
    words = ["tulip", "orchard", "copper", "lantern", "meadow", "harbor"]
    rng.shuffle(words)
    secrets = {  # word-like passwords: a word, a digit, a word (assembled at run time)
        "export": f"{words[0]}{rng.randint(2, 9)}{words[1]}",
        "env prefix": f"{words[2]}{rng.randint(2, 9)}x",
        "flag": f"{words[3]}{rng.randint(2, 9)}{words[4]}",
    }
    text = (
        f"The migration needs the database: export DB_PASSWORD={secrets['export']} before running it, or "
        f"PGPASSWORD={secrets['env prefix']} psql -h db.internal -U app; the admin tool takes "
        f"--password {secrets['flag']} on its command line"
    )
    served = serve()
    response = httpx.post(f"{served.url}/v1/write", json=write_request(REPO, text), timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["redactions"] == 3
    assert served.stop() == 0

    stored = _data_bytes(Path(strata_env["STRATA_DATA_DIR"]))
    leaked = sorted(name for name, secret in secrets.items() if secret.encode() in stored)
    assert not leaked, f"reached a file: {leaked}"
    assert b"export DB_PASSWORD=[REDACTED:password] before" in stored
    assert b"--password [REDACTED:password] on its" in stored
