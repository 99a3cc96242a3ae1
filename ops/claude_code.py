"""The real Claude Code CLI, for measuring and testing how it sees `strata mcp` (ops/bench_start.py,
tests/e2e/test_claude_code.py): installed with npm into a cache folder once, then reused.

Usage: python ops/claude_code.py   # install it (if needed) and print where it is and its version

`claude mcp list` needs no login and no network: it starts each MCP server of the project's
`.mcp.json`, sends `initialize` and `tools/list`, and prints one line per server, "✔ Connected" when it
got both, "Connected · tools fetch failed" when `tools/list` did not come within its 5 s. A project's
server is only checked once approved: the project (a git repository, so Claude Code finds its root)
approves it in `.claude/settings.local.json`. Claude Code writes its state into a HOME of its own here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "@anthropic-ai/claude-code"
VERSION = "2.1.197"
"""The version measured and tested (issue #21 was found with 2.1.x)."""
INSTALL_TIMEOUT_S = 600.0


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "strata-ops" / f"claude-code-{VERSION}"


def installed(folder: Path | None = None) -> Path | None:
    """The `claude` command of the cached install, if it is there and runs."""
    claude = (folder or cache_dir()) / "node_modules" / ".bin" / "claude"
    if not claude.exists():
        return None
    try:
        done = subprocess.run([str(claude), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return claude if done.returncode == 0 and VERSION in done.stdout else None


def ensure(folder: Path | None = None) -> tuple[Path | None, str]:
    """(the `claude` command, "") once installed into the cache folder (npm, on first use), or (None, why
    not): npm missing, or the install failed."""
    folder = folder or cache_dir()
    claude = installed(folder)
    if claude is not None:
        return claude, ""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        return None, "node and npm are not installed"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(folder),
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--loglevel=error",
                f"{PACKAGE}@{VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"npm install {PACKAGE}@{VERSION} failed: {exc}"
    claude = installed(folder)
    if claude is None:
        return None, f"npm install {PACKAGE}@{VERSION} failed: {(done.stderr or done.stdout)[-1000:]}"
    return claude, ""


@dataclass(frozen=True)
class Project:
    """A throwaway git repository whose `.mcp.json` names one approved stdio server `strata`, and the HOME
    Claude Code runs with."""

    root: Path
    home: Path


def project(folder: Path, command: str, args: list[str], env: dict[str, str]) -> Project:
    root, home = folder / "project", folder / "home"
    (root / ".claude").mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    server = {"command": command, "args": args, "env": env}
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"strata": server}}, indent=2), encoding="utf-8")
    (root / ".claude" / "settings.local.json").write_text(
        json.dumps({"enabledMcpjsonServers": ["strata"]}), encoding="utf-8"
    )
    return Project(root, home)


@dataclass(frozen=True)
class Listed:
    output: str
    seconds: float

    @property
    def line(self) -> str:
        return next((line for line in self.output.splitlines() if line.startswith("strata:")), "")

    @property
    def connected_with_tools(self) -> bool:
        """ "✔ Connected", not "Connected · tools fetch failed" nor a failure to connect."""
        return "✔ Connected" in self.line and "fail" not in self.line.lower()


def mcp_list(claude: Path, where: Project, timeout: float = 120.0) -> Listed:
    """One `claude mcp list` in the project, offline, with its own HOME."""
    import time

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env = {**clean, "HOME": str(where.home), "XDG_CONFIG_HOME": str(where.home / ".config"), "DISABLE_AUTOUPDATER": "1"}
    started = time.perf_counter()
    done = subprocess.run(
        [str(claude), "mcp", "list"], cwd=where.root, env=env, capture_output=True, text=True, timeout=timeout
    )
    return Listed(done.stdout + done.stderr, time.perf_counter() - started)


if __name__ == "__main__":
    found, why = ensure()
    if found is None:
        print(f"Claude Code is not available: {why}", file=sys.stderr)
        sys.exit(1)
    print(found, subprocess.run([str(found), "--version"], capture_output=True, text=True).stdout.strip())
