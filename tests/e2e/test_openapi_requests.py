"""A client generated from `/openapi.json` sends only what `strata serve` accepts: each request below is
checked against the request schema the server publishes and then sent to it, and the two verdicts agree
(a refusal for shape is 400; a memory that does not exist is 404, a matter of state). The cases are
schemathesis's findings against b642b79 (seed 20): repo ids with a compatibility character of the Basic
Multilingual Plane, a read with neither a query nor memory ids, and a max_text_chars below its bound,
which the schema allowed and the server refused. A real server process with a token."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from jsonschema import Draft202012Validator

from tests.conftest import Served, write_request

TOKEN = "openapi-requests-" + "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
UNKNOWN = "00000000-0000-0000-0000-000000000000"


def repo_id_cases(repo_id: str) -> list[tuple[str, dict[str, Any]]]:
    """One request of each kind schemathesis sent, naming the repo id."""
    return [
        ("write", write_request(repo_id, "The staging database is reset nightly")),
        ("read", {"repo_id": repo_id, "query": "database"}),
        ("forget", {"repo_id": repo_id, "memory_id": UNKNOWN}),
        ("memory_index", {"repo_id": repo_id}),
        ("overview", {"repo_id": repo_id}),
        ("timeline", {"repo_id": repo_id}),
        ("review_queue", {"repo_id": repo_id}),
    ]


CASES: list[tuple[str, dict[str, Any]]] = [
    *repo_id_cases("acme/api"),
    *repo_id_cases("acme/caf\u00e9"),
    *repo_id_cases("acme/\u212bngstr\u00f6m"),  # ANGSTROM SIGN: NFC makes it Å, accepted by both
    *repo_id_cases("\u00a8\u00c4o"),  # DIAERESIS
    *repo_id_cases("acme/V\u013fapi"),  # LATIN CAPITAL LETTER L WITH MIDDLE DOT
    *repo_id_cases("acme/\u00b5s"),  # MICRO SIGN
    *repo_id_cases("x\u00bc"),  # VULGAR FRACTION ONE QUARTER
    *repo_id_cases("acme/\uff41pi"),  # FULLWIDTH LATIN SMALL LETTER A
    *repo_id_cases("acme/\ufb01le"),  # LATIN SMALL LIGATURE FI
    ("read", {"repo_id": "acme/api", "memory_ids": [UNKNOWN]}),
    ("read", {"repo_id": "acme/api", "query": "database", "memory_ids": None}),
    ("read", {"repo_id": "acme/api", "query": "database", "memory_ids": []}),
    ("read", {"repo_id": "acme/api"}),
    ("read", {"repo_id": "acme/api", "query": None, "memory_ids": None}),
    ("read", {"repo_id": "acme/api", "query": None, "memory_ids": []}),
    ("read", {"repo_id": "acme/api", "memory_ids": []}),
    ("read", {"as_of": "0001-01-01", "mode": "targeted", "query": None, "memory_ids": None, "repo_id": "acme/api"}),
    # max_text_chars published its bounds as pydantic's ge/le, which JSON Schema ignores
    ("read", {"repo_id": "acme/api", "memory_ids": ["0"], "max_text_chars": 0}),
    ("read", {"repo_id": "acme/api", "query": "database", "max_text_chars": 39}),
    ("read", {"repo_id": "acme/api", "query": "database", "max_text_chars": 40.0}),
    ("read", {"repo_id": "acme/api", "query": "database", "max_text_chars": 100_000}),
    ("read", {"repo_id": "acme/api", "query": "database", "max_text_chars": 100_001}),
]


def test_the_published_request_schemas_accept_what_the_server_accepts(serve: Callable[..., Served]) -> None:
    served = serve(env={"STRATA_TOKEN": TOKEN})
    disagreements = []
    with httpx.Client(base_url=served.url, timeout=60, headers=AUTH) as http:
        document = http.get("/openapi.json").json()
        for op, body in CASES:
            schema = document["paths"][f"/v1/{op}"]["post"]["requestBody"]["content"]["application/json"]["schema"]
            schema_ok = Draft202012Validator({**schema, "components": document["components"]}).is_valid(body)
            response = http.post(f"/v1/{op}", json=body)
            assert response.status_code in (200, 400, 404), (op, body, response.text)
            server_ok = response.status_code != 400
            if schema_ok != server_ok:
                verdict = "accepts" if schema_ok else "refuses"
                disagreements.append((op, body, f"schema {verdict}, server {response.status_code}: {response.text}"))
    assert served.stop() == 0
    assert not disagreements, "\n".join(map(str, disagreements))


def test_a_read_without_a_query_or_ids_names_its_rule(serve: Callable[..., Served]) -> None:
    served = serve(env={"STRATA_TOKEN": TOKEN})
    with httpx.Client(base_url=served.url, timeout=60, headers=AUTH) as http:
        response = http.post("/v1/read", json={"repo_id": "acme/api", "memory_ids": []})
    assert served.stop() == 0
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "query_required", response.text
