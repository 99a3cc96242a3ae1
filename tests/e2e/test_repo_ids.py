"""Repo ids over the real transports (the installed `strata` command, `/v1` on a `strata serve` process):
one spelling per repo (NFC and NFD name the same repo) and no ids that only look alike (invisible,
bidirectional-control, look-alike and mixed-script characters are refused with a structured error, and
nothing is written)."""

from __future__ import annotations

import json
import subprocess
import unicodedata
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import STRATA_COMMAND, Served, strata_ok

COMPOSED = "acme/café"
DECOMPOSED = unicodedata.normalize("NFD", COMPOSED)
REFUSED = [
    ("acme/a\u200bpi", "invisible_characters"),  # zero-width space
    ("acme/api\u200d", "invisible_characters"),  # zero-width joiner
    ("\ufeffacme/api", "invisible_characters"),  # byte order mark
    ("acme/\u202eipa.exe", "invisible_characters"),  # right-to-left override
    ("acme/\u2067api\u2069", "invisible_characters"),  # right-to-left isolate
    ("acme/my\u00a0api", "invisible_characters"),  # no-break space
    ("acme/\u0430pi", "mixed_scripts"),  # a Cyrillic a among Latin letters
    ("acme/\u03b1pi", "mixed_scripts"),  # a Greek alpha
    ("acme/\uff41pi", "confusable_characters"),  # a fullwidth a
]


def write_request(repo_id: str, text: str = "Deploys need the VPN") -> dict[str, Any]:
    return {"repo_id": repo_id, "memory": {"text": text, "kind": "fact", "scope": "repo", "confidence": 0.9}}


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([STRATA_COMMAND, "--json", *args], env=env, capture_output=True, text=True, timeout=120)


def head(env: dict[str, str]) -> int:
    return int(strata_ok(cli(env, "log", "--limit", "1"))["position"])


def test_nfc_and_nfd_name_the_same_repo_through_the_cli(strata_env: dict[str, str]) -> None:
    first = strata_ok(cli(strata_env, "write", json.dumps(write_request(DECOMPOSED))))
    again = strata_ok(cli(strata_env, "write", json.dumps(write_request(COMPOSED))))
    assert again["memory_id"] == first["memory_id"] and again["outcome"] == "reinforced"
    index = strata_ok(cli(strata_env, "index", "--repo", COMPOSED))
    assert f"Memory of {COMPOSED}: 1 memories" in index["text"]
    events = strata_ok(cli(strata_env, "log", "--limit", "5"))["events"]
    written = next(e for e in events if e["type"] == "MemoryWritten")
    assert written["fields"]["repo_id"] == COMPOSED  # stored composed, whatever the client sent


@pytest.mark.parametrize("repo_id, code", REFUSED)
def test_look_alike_repo_ids_are_refused_by_the_cli(strata_env: dict[str, str], repo_id: str, code: str) -> None:
    strata_ok(cli(strata_env, "write", json.dumps(write_request("acme/api"))))
    before = head(strata_env)
    result = cli(strata_env, "write", json.dumps(write_request(repo_id, "Something else entirely")))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stdout + result.stderr
    error = json.loads(result.stdout)["error"]
    assert error["code"] == code and error["path"] == "repo_id"
    assert "U+" in error["message"] or "mixes" in error["message"]
    assert head(strata_env) == before


@pytest.mark.slow
def test_repo_ids_over_http(serve: Callable[..., Served], strata_env: dict[str, str]) -> None:
    served = serve()
    with httpx.Client(base_url=served.url, timeout=60) as http:
        first = http.post("/v1/write", json=write_request(DECOMPOSED))
        assert first.status_code == 200, first.text
        again = http.post("/v1/write", json=write_request(COMPOSED))
        assert again.status_code == 200 and again.json()["memory_id"] == first.json()["memory_id"]
        assert again.json()["outcome"] == "reinforced"
        index = http.post(
            "/v1/memory_index",
            json={
                "repo_id": DECOMPOSED,
                "consistency": {"after_position": again.json()["position"], "timeout_ms": 30000},
            },
        )
        assert index.status_code == 200 and f"Memory of {COMPOSED}: 1 memories" in index.json()["text"]

        position = again.json()["position"]
        for repo_id, code in REFUSED:
            refused = http.post("/v1/write", json=write_request(repo_id, "Something else entirely"))
            assert refused.status_code == 400, (repo_id, refused.text)
            assert refused.json()["error"]["code"] == code and refused.json()["error"]["path"] == "repo_id"
            read = http.post("/v1/read", json={"repo_id": repo_id, "query": "vpn"})
            assert read.status_code == 400 and read.json()["error"]["code"] == code
        after = http.post("/v1/write", json=write_request(COMPOSED, "Releases are tagged on main"))
        assert (
            after.status_code == 200 and after.json()["position"] == position + 2
        )  # nothing was appended (2: the write, its key)
