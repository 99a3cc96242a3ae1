"""A memory that differs from another only in a literal value is its own memory, through a real
`strata serve` process (where the model is loaded and near-duplicates merge): the 15 lines of
tests/data/literal_values.jsonl, four of which repeat another line but for a base64 value (issue #20:
a merge swallowed such lines), are 15 memories."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from strata_recall.domain.duplicates import MERGE_COSINE
from tests.conftest import Served, write_request

REPO = "acme/api"
FIXTURE = Path(__file__).parents[1] / "data" / "literal_values.jsonl"


def test_lines_that_differ_in_a_literal_value_are_never_merged(serve: Callable[..., Served]) -> None:
    lines = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(lines) == 15 and sum("differs_from" in line for line in lines) == 4
    served = serve()
    written: list[dict[str, Any]] = []
    with httpx.Client(base_url=served.url, timeout=60) as http:
        for line in lines:
            response = http.post("/v1/write", json=write_request(REPO, line["text"]))
            assert response.status_code == 200, response.text
            written.append(response.json())
            # the next write must find this one: wait until the vector projection holds it
            seen = http.post(
                "/v1/read",
                json={
                    "repo_id": REPO,
                    "query": "fixture",
                    "consistency": {"after_position": written[-1]["position"], "timeout_ms": 30000},
                },
            )
            assert seen.status_code == 200, seen.text
    assert served.stop() == 0

    for line, answer in zip(lines, written, strict=True):
        assert answer["similarity_checked"] is True
        assert (answer["outcome"], answer["merged"]) == ("created", None), (line["text"], answer)
        if "differs_from" in line:  # cosine alone would merge it: the distinct value is what stops it
            nearest = answer["similar"][0]
            assert nearest["memory_id"] == written[line["differs_from"]]["memory_id"], (line["text"], answer["similar"])
            assert nearest["similarity"] >= MERGE_COSINE
    assert len({answer["memory_id"] for answer in written}) == 15
