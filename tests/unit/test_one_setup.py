"""README, the serve banner and the inspector's empty page recommend one setup (#30): a running server,
and the client with its hooks reading it (`strata init CLIENT --http URL/mcp --hooks`), never the local
store's hooks, which cannot embed a prompt in a hook's time (docs/CLIENTS.md, "Where the hooks read")."""

from __future__ import annotations

import re
import socket
from pathlib import Path

from strata_recall.interface.http.serve import banner

ROOT = Path(__file__).resolve().parents[2]
RECOMMENDED = re.compile(r"strata init claude-code --http (\S+)/mcp --hooks")
LOCAL_HOOKS = re.compile(r"strata init claude-code --hooks(?! --remove)")


def test_readme_banner_and_page_recommend_the_server_with_its_hooks() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = (ROOT / "interface" / "http" / "static" / "app.js").read_text(encoding="utf-8")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        said = banner(sock, "/data", None, token=False)
    for where, text in (("README", readme), ("banner", said)):
        assert RECOMMENDED.search(text), where
    # the page names the server it is served by
    assert "const server = `${location.origin}/mcp`;" in page
    assert "strata init claude-code --http ${server} --hooks" in page
    for where, text in (("README", readme), ("banner", said), ("empty page", page)):
        assert not LOCAL_HOOKS.search(text), where
    assert RECOMMENDED.search(readme)[1] == "http://127.0.0.1:7411"  # the address `strata serve` listens on
