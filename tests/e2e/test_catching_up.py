"""Never a silent wait (issue #32): after a bulk import the vectors have a backlog to embed. A read
answers at once from what is searchable and says how far behind the vectors are; `strata serve`'s
/healthz says it is catching up, not ok, while they are. The installed `strata` command and a real
`strata serve`, the real model."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import STRATA_COMMAND, Served

REPO = "acme/api"
QUERY = {"repo_id": REPO, "query": "flaky integration test of the payment service", "mode": "targeted"}


def import_memories(env: dict[str, str], tmp_path: Path, count: int) -> None:
    lines = [
        json.dumps(
            {
                "repo_id": REPO,
                "memory": {
                    "text": f"The integration test of the payment service number {n} is flaky when the "
                    f"queue worker {n % 7} starts late",
                    "kind": "fact",
                    "scope": "repo",
                    "confidence": 0.8,
                },
            }
        )
        for n in range(count)
    ]
    source = tmp_path / "memories.jsonl"
    source.write_text("\n".join(lines) + "\n")
    done = subprocess.run([STRATA_COMMAND, "import", str(source)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


def wait_for(probe: Callable[[], Any], until: Callable[[Any], bool], timeout: float = 900) -> Any:
    deadline = time.monotonic() + timeout  # only guards against a hang
    while True:
        value = probe()
        if until(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


@pytest.mark.slow
def test_a_cli_read_answers_from_what_is_searchable_and_says_how_far_behind(
    strata_env: dict[str, str], tmp_path: Path
) -> None:
    import_memories(strata_env, tmp_path, 40)
    env = {**strata_env, "STRATA_READ_EMBED_SECONDS": "0"}  # embed nothing first: the whole backlog stays
    done = subprocess.run(
        [STRATA_COMMAND, "--json", "read", json.dumps(QUERY)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout)
    assert answer["results"], answer  # found by their words
    assert answer["behind"]["events"] == answer["position"] > 0, answer  # no vector embedded yet
    assert "vectors are" in done.stderr and "events behind" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr

    # the next read, with the default time to embed, carries on where that one stopped
    done = subprocess.run(
        [STRATA_COMMAND, "--json", "read", json.dumps(QUERY)],
        env={**strata_env, "STRATA_READ_EMBED_SECONDS": "3600"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout)
    assert answer["behind"] is None and answer["results"], answer
    assert "vectors are" not in done.stderr


@pytest.mark.slow
def test_healthz_says_catching_up_and_reads_say_behind_until_the_vectors_are_there(
    strata_env: dict[str, str], serve: Callable[..., Served], tmp_path: Path
) -> None:
    import_memories(strata_env, tmp_path, 300)  # no process follows the log: nothing embedded yet
    served = serve()
    with httpx.Client(base_url=served.url, timeout=120) as http:
        health = http.get("/healthz")
        # 300 texts to embed when the server started: far more than the moment it took to ask
        assert health.status_code == 200, health.text
        report = health.json()
        assert report["status"] == "catching_up" and report["ok"] is True, report
        assert report["behind"]["events"] > 0 and report["behind"]["projection"] == "vectors", report
        assert report["projections"]["vectors"]["lag"] == report["behind"]["events"], report

        read = http.post("/v1/read", json=QUERY)
        assert read.status_code == 200, read.text
        answer = read.json()
        assert answer["results"], answer
        assert answer["behind"]["events"] > 0, answer

        done = wait_for(lambda: http.get("/healthz").json(), lambda h: h["status"] != "catching_up")
        assert done["status"] == "ok" and done["behind"] is None, done
        assert http.post("/v1/read", json=QUERY).json()["behind"] is None
