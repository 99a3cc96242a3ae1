"""What a new user meets first: `strata demo` leaves nothing behind unless told where to write, and
`strata serve` says where its data lives and how to connect an agent."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import STRATA_COMMAND, Served


@pytest.mark.slow
def test_demo_uses_a_temporary_store_unless_one_is_named(strata_env: dict[str, str], tmp_path: Path) -> None:
    unnamed = {k: v for k, v in strata_env.items() if k != "STRATA_DATA_DIR"}
    result = subprocess.run(
        [STRATA_COMMAND, "--text", "demo"], env=unnamed, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "a temporary store in " in result.stdout and "reinforced fact" in result.stdout
    scratch = Path(result.stdout.split("a temporary store in ", 1)[1].split(",", 1)[0])
    assert not scratch.exists()
    assert not any(Path(strata_env["HOME"]).rglob("events.sqlite"))  # nothing in the user's data directory

    named = tmp_path / "kept"
    kept = subprocess.run(
        [STRATA_COMMAND, "--text", "--data-dir", str(named), "demo"],
        env=unnamed,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert kept.returncode == 0 and "temporary store" not in kept.stdout
    assert (named / "events.sqlite").exists()


@pytest.mark.slow
def test_serve_says_where_its_data_is_and_how_to_connect(
    serve: Callable[..., Served], strata_env: dict[str, str]
) -> None:
    served = serve()
    deadline = time.monotonic() + 20
    while "connect an agent" not in "".join(served.stderr) and time.monotonic() < deadline:
        time.sleep(0.05)  # the lines after "serving on" arrive a moment later
    said = "".join(served.stderr)
    assert f"data directory {strata_env['STRATA_DATA_DIR']}" in said
    assert f"strata init claude-code --http {served.url}/mcp" in said
    assert httpx.get(f"{served.url}/healthz", timeout=30).status_code == 200  # up, signal handlers in place
    assert served.stop() == 0


def test_the_postgres_log_without_its_driver_says_which_extra(strata_env: dict[str, str], tmp_path: Path) -> None:
    """psycopg is the `postgres` extra: without it, choosing the PostgreSQL log is a clear refusal."""
    shadow = tmp_path / "shadow" / "psycopg"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('psycopg is not installed here')\n")
    env = {**strata_env, "STRATA_EVENT_STORE": "postgres", "PYTHONPATH": str(shadow.parent)}
    result = subprocess.run([STRATA_COMMAND, "--json", "log"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "postgres_not_installed" and "strata-recall[postgres]" in error["message"]


def readme_commands(text: str) -> list[tuple[str, list[str]]]:
    """Each command in README's shell blocks, in order, as (the command's words, the logical line it is on).
    A logical line runs on while a quote is open; commands in it are split at `&&`, `||`, `;` and `|`."""
    commands: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        pending = ""
        for line in block.splitlines():
            pending = f"{pending}\n{line}" if pending else line
            try:
                shlex.split(pending, comments=True)
            except ValueError:
                continue  # a quote is still open: the command goes on on the next line
            lexer = shlex.shlex(pending, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            words: list[str] = []
            for token in [*lexer, ";"]:
                if token in {"&&", "||", ";", "|"}:
                    while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
                        words.pop(0)  # VAR=value before a command
                    if words:
                        commands.append((pending, words))
                    words = []
                else:
                    words.append(token)
            pending = ""
    return commands


@pytest.mark.slow
def test_every_readme_command_names_a_program_a_literal_follower_has(tmp_path: Path) -> None:
    """Follow README literally in a shell that has only the system's PATH, in a clone whose `.venv` is what
    README's install makes (this test's own environment, installed the same way): the shell runs what README
    tells it to run to change the shell (`. .venv/bin/activate`, `cd`) and asks `command -v` for the program of
    every other command. "strata: command not found" after an install into .venv/bin only is what this keeps out."""
    root = Path(__file__).resolve().parents[2]
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / ".venv").symlink_to(Path(sys.prefix))
    commands = readme_commands((root / "README.md").read_text())
    assert len(commands) >= 10  # the blocks were read
    script = ["set -u", f"cd {shlex.quote(str(clone))}"]
    for line, words in commands:
        program = words[0]
        if program in {".", "source", "cd"}:
            script.append(line if program != "cd" else f"cd {shlex.quote(str(clone))}")
        else:
            script.append(f"command -v {shlex.quote(program)} >/dev/null || echo {shlex.quote(program)}")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(["bash", "-c", "\n".join(script)], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [], f"README names programs a literal follower does not have: {result.stdout}"
