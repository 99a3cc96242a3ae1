"""What `strata serve` tells its operator to give clients: bound to every interface, an address other
machines can use (never 0.0.0.0), which the server then answers to, and how to allow the other names
clients use (STRATA_ALLOWED_HOSTS) — the 421 a teammate otherwise gets."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable

import httpx
import pytest

from tests.conftest import Served


def said_all(served: Served) -> str:
    deadline = time.monotonic() + 60
    while "connect an agent" not in "".join(served.stderr) and time.monotonic() < deadline:
        time.sleep(0.05)  # the lines after "serving on" arrive a moment later
    return "".join(served.stderr)


@pytest.mark.slow
def test_a_wildcard_bind_names_an_address_clients_can_use(serve: Callable[..., Served]) -> None:
    served = serve("--host", "0.0.0.0", env={"STRATA_TOKEN": "banner-test-token"})
    said = said_all(served)
    connect = re.search(r"strata init claude-code --http (\S+) --hooks", said)
    assert connect is not None, said
    url = connect.group(1)
    assert "0.0.0.0" not in url and url.startswith(f"http://{socket.gethostname()}:")
    assert "STRATA_ALLOWED_HOSTS" in said and "421" in said
    port = url.rsplit(":", 1)[1].split("/")[0]
    # the name the banner gives is one the Host check answers to; another name is refused until allowed
    with httpx.Client(timeout=30) as http:
        named = http.get(f"http://127.0.0.1:{port}/healthz", headers={"Host": f"{socket.gethostname()}:{port}"})
        assert named.status_code == 200, named.text
        other = http.get(f"http://127.0.0.1:{port}/healthz", headers={"Host": f"strata.example.internal:{port}"})
        assert other.status_code == 421
    served.stop()
    allowed = serve(
        "--host",
        "0.0.0.0",
        env={"STRATA_TOKEN": "banner-test-token", "STRATA_ALLOWED_HOSTS": "strata.example.internal"},
    )
    port = allowed.url.rsplit(":", 1)[1]
    assert (
        httpx.get(
            f"http://127.0.0.1:{port}/healthz", headers={"Host": f"strata.example.internal:{port}"}, timeout=30
        ).status_code
        == 200
    )


@pytest.mark.slow
def test_a_loopback_bind_gives_its_own_address(serve: Callable[..., Served]) -> None:
    served = serve()
    said = said_all(served)
    assert f"strata init claude-code --http {served.url}/mcp --hooks" in said and "STRATA_ALLOWED_HOSTS" not in said
