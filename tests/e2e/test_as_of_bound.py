"""Requests `as_of` past moments cannot queue replays of the log without bound, through a real
`strata serve` process: past `max_as_of_builds` distinct moments in progress, a request for yet another
is refused at once (503 too_many_as_of, with a retry hint) instead of waiting behind the others'
replays (issue #20: 8 distinct moments -> 35 s of replay for the last), and requests for one moment
share one build."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest

from tests.conftest import STRATA_COMMAND, Served, write_request

REPO = "acme/api"
MEMORIES = 10_000  # a replay of this log takes about a second: the requests below all arrive during the first ones


def _fill(env: dict[str, str], tmp_path: Path) -> None:
    lines = tmp_path / "memories.jsonl"
    with lines.open("w", encoding="utf-8") as out:
        for i in range(MEMORIES):
            out.write(json.dumps(write_request(REPO, f"note {i}: service {i % 97} answers on port {4000 + i}")) + "\n")
    done = subprocess.run(
        [STRATA_COMMAND, "--json", "import", str(lines)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _built(served: Served) -> list[int]:
    """The positions whose past model the server built, from its log lines."""
    return [
        int(m.group(1))
        for line in served.stderr
        if "as_of_built" in line
        for m in [re.search(r"position=(\d+)", line)]
        if m
    ]


@pytest.mark.slow
def test_distinct_past_moments_beyond_the_bound_are_refused_at_once(
    serve: Callable[..., Served], strata_env: dict[str, str], tmp_path: Path
) -> None:
    _fill(strata_env, tmp_path)
    served = serve(env={"STRATA_MAX_AS_OF_BUILDS": "3", "STRATA_LOG_LEVEL": "info"})
    finished: list[tuple[int, httpx.Response]] = []

    async def ask(http: httpx.AsyncClient, position: int) -> None:
        response = await http.post("/v1/memories", json={"repo_id": REPO, "as_of": position, "limit": 5})
        finished.append((position, response))

    async def scenario(positions: list[int]) -> None:
        async with httpx.AsyncClient(base_url=served.url, timeout=300) as http, anyio.create_task_group() as group:
            for position in positions:
                group.start_soon(ask, http, position)

    # 8 distinct moments at once, each near the head: every build replays most of the log (a second or more,
    # longer on a loaded machine, as the requests' own spread is), so none finishes before the last arrives
    anyio.run(scenario, [9000 + 100 * k for k in range(1, 9)])
    statuses = [response.status_code for _, response in finished]
    assert sorted(statuses) == [200] * 3 + [503] * 5, [(p, r.text[:200]) for p, r in finished]
    refused = [response.json()["error"] for _, response in finished if response.status_code == 503]
    assert {e["code"] for e in refused} == {"too_many_as_of"} and {e["path"] for e in refused} == {"as_of"}
    assert all("retry" in e["message"] for e in refused)
    # refused at once: every refusal answered before any accepted request (a replay each) did
    assert statuses[:5] == [503] * 5, statuses
    served_positions = sorted(p for p, r in finished if r.status_code == 200)
    assert sorted(_built(served)) == served_positions  # the refused ones replayed nothing
    assert all(r.json()["position"] == p for p, r in finished if r.status_code == 200)

    finished.clear()
    anyio.run(scenario, [9000] * 5)  # one moment, five requests: one build, nobody refused
    assert [r.status_code for _, r in finished] == [200] * 5, [r.text[:200] for _, r in finished]
    assert _built(served).count(9000) == 1

    with httpx.Client(base_url=served.url, timeout=300) as http:  # the bound frees up as requests finish
        for position in (1500, 2500, 3500):
            assert http.post("/v1/memories", json={"repo_id": REPO, "as_of": position}).status_code == 200
    assert served.stop() == 0
