"""`strata init` (connect an agent client) and `strata hook` (its lifecycle hooks)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer

from strata_recall.domain.errors import StrataError
from strata_recall.interface.cli.common import Options, _emit, _fail, app


def outside_git(result: dict[str, Any], start: Path) -> None:
    """A folder that is no git repository is a case `init` supports (docs/REPO_IDS.md), but one a user may
    reach by running it in the wrong folder: its answer says so first, with the repo id chosen from the
    folder's path."""
    from strata_recall.interface.agents.repo_identity import git_common_dir, repo_root

    root = repo_root(start)
    if git_common_dir(root) is not None:
        return
    wrote = "would write" if result.get("dry_run") else ("removed from" if result.get("removed") else "wrote into")
    chosen = f"repo id {result['repo_id']}"
    if result.get("repo_id_source") == "folder":
        chosen += (
            ", made from the folder's path (moved or renamed, it is another id; choose a lasting one with --repo-id)"
        )
    note = (
        f"{root} is not in a git repository: init {wrote} this folder, and its memories are filed under {chosen}. "
        "If you meant a repository, run init inside it or pass --repo-root."
    )
    result["notes"] = [note, *result.get("notes", [])]


@app.command("init")
def init_client(
    ctx: typer.Context,
    client: str = typer.Argument(..., help="claude-code, codex, cursor or vscode."),
    http: str | None = typer.Option(
        None,
        "--http",
        metavar="URL",
        help="Connect to a running `strata serve` at URL (e.g. http://127.0.0.1:7411/mcp) instead of starting `strata mcp`; the hooks read from it too.",
    ),
    hooks: bool = typer.Option(False, "--hooks", help="Also install the lifecycle hooks (claude-code, codex, cursor)."),
    remove: bool = typer.Option(
        False,
        "--remove",
        help="Undo what init wrote: our MCP entry, instructions block, hooks and local settings; files left empty are removed.",
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the changes as a diff; write nothing."),
    repo_root: Path | None = typer.Option(
        None, "--repo-root", help="The repository [default: the git root of the current directory]."
    ),
    repo_id: str | None = typer.Option(
        None,
        "--repo-id",
        help="The repo id memories are filed under, for the instructions and the hooks [default: the origin remote's host/owner/name, else local/<folder name>-<hash of its path>].",
    ),
    command: str | None = typer.Option(
        None,
        "--command",
        help="How this machine starts Strata [default: this installation's strata]; kept out of the repository's files.",
    ),
    token_env: str | None = typer.Option(
        None,
        "--token-env",
        metavar="VAR",
        help="With --http: the environment variable holding the server's token [default: STRATA_TOKEN, when the server listens beyond loopback or it is set].",
    ),
) -> None:
    """Connect an agent client: write or merge its MCP configuration, append the session protocol to its
    instructions file between markers, and with --hooks install the lifecycle hooks. The repository's
    files name `strata` and a token's variable only; this machine's paths go to the client's local
    scope. Idempotent; never touches unrelated settings; refuses a malformed file, or a link leading
    out of the repository (or out of the client's config folder), and writes nothing then. Prints the
    repo id it chose. --remove undoes it.

    Example: strata init claude-code --hooks --http http://strata.internal:7411/mcp --repo-id team/backend
    """
    from strata_recall.interface.agents import clients

    opts: Options = ctx.obj
    data_dir = opts.data_dir or (Path(os.environ["STRATA_DATA_DIR"]) if os.environ.get("STRATA_DATA_DIR") else None)
    try:
        result = clients.init(
            client,
            root=repo_root or Path.cwd(),
            repo_id=repo_id,
            http_url=http,
            hooks=hooks,
            dry_run=dry_run,
            command=command,
            data_dir=data_dir,
            remove=remove,
            token_env=token_env,
        )
    except StrataError as exc:
        raise _fail(opts, exc) from None
    outside_git(result, repo_root or Path.cwd())

    _emit(opts, result, _initialised)


@app.command("hook")
def hook(
    ctx: typer.Context,
    event: str = typer.Argument(..., help="session-start, prompt, edit, after-command, stop or pre-compact."),
    repo_id: str | None = typer.Option(
        None, "--repo-id", "--repo", help="The repo id [default: derived from the payload's cwd]."
    ),
    http: str | None = typer.Option(
        None,
        "--http",
        metavar="URL",
        help="Read from a running `strata serve` (its base or /mcp URL) instead of the local store.",
    ),
    token_env: str | None = typer.Option(
        None,
        "--token-env",
        metavar="VAR",
        help="The environment variable holding the server's token [default: STRATA_TOKEN].",
    ),
) -> None:
    """A lifecycle hook for agent clients (installed by `strata init CLIENT --hooks`): reads the client's
    JSON payload on stdin and prints its reply. session-start: the repo's memory index; prompt, edit,
    after-command: the memories relevant to that moment, if any clear the bar; stop, pre-compact: remind
    the agent once to write what it learned and rate its reads. Always exits 0.

    Example: strata hook prompt --repo-id team/backend --http http://strata.internal:7411 < payload.json
    """
    from strata_recall.interface.agents import hooks

    opts: Options = ctx.obj
    hooks.run(
        event,
        stdin=sys.stdin,
        stdout=sys.stdout,
        stderr=sys.stderr,
        config=opts.config,
        data_dir=opts.data_dir,
        repo_id=repo_id,
        http=http,
        token_env=token_env,
    )


def _initialised(r: dict[str, Any]) -> str:
    """`strata init`'s answer, readable: each file and local step, the repo id chosen and any notes."""
    lines = [
        f"{f['action']}: {f['path']}" + (f" (a link: wrote {f['written_to']})" if "written_to" in f else "")
        for f in r["files"]
    ]
    lines += [f"{step['status']}: {step['command']}  ({step['why']})" for step in r.get("local", [])]
    source = r.get("repo_id_from") or r["repo_id_source"]
    head = (
        f"{r['client']} (repo_id {r['repo_id']}, from {source})"
        + (" -- removed" if r["removed"] else "")
        + (" -- dry run, nothing written" if r["dry_run"] else "")
    )
    notes = [f"note: {n}" for n in r.get("notes", [])]
    return "\n".join([head, *lines, *notes] + ([r["diff"].rstrip()] if r["dry_run"] and r["diff"] else []))
