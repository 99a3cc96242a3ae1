"""`strata learn`: a repository's history, its instruction files and its agents' sessions."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import click
import typer
from pydantic import TypeAdapter, ValidationError

from strata_recall.domain.errors import InvalidInput, StrataError
from strata_recall.interface.app.logs import configure_logging
from strata_recall.interface.app.settings import load_settings
from strata_recall.interface.cli import render
from strata_recall.interface.cli.common import Options, _emit, _fail, _session, app, log

_PHASES = {
    "reading": "reading history",
    "learning": "learning commits",
    "capturing": "capturing sessions",
    "embedding": "making searchable",
}


class _Bars:
    """A progress bar per phase of a long command, on stderr: where it is, and an estimate of the rest."""

    def __init__(self) -> None:
        self.phase: str | None = None
        self.bar: Any = None
        self.done = 0

    def __call__(self, phase: str, done: int, total: int, where: str) -> None:
        if phase != self.phase:
            self.close()
            self.phase, self.done = phase, 0
            self.bar = click.progressbar(
                length=max(total, 1),
                label=_PHASES.get(phase, phase),
                file=sys.stderr,
                show_eta=True,
                show_pos=True,
                item_show_func=lambda item: item,
            )
            self.bar.__enter__()
        self.bar.update(max(0, done - self.done), where)
        self.done = max(self.done, done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


@app.command()
def learn(
    ctx: typer.Context,
    root: Path = typer.Option(Path("."), "--root", help="The repository (any folder inside it) [default: here]."),
    repo_id: str | None = typer.Option(
        None, "--repo-id", help="File the memories under this repo id [default: the one strata init derives]."
    ),
    since: str | None = typer.Option(None, "--since", help="Only commits after this date (git log --since)."),
    max_commits: int | None = typer.Option(None, "--max-commits", help="Only the most recent N commits.", min=1),
    embed: bool = typer.Option(
        True, "--embed/--no-embed", help="Make it searchable now (embeddings) or leave it to a server's workers."
    ),
    history: bool = typer.Option(True, "--history/--no-history", help="Learn the commit history."),
    instructions: bool = typer.Option(
        True,
        "--instructions/--no-instructions",
        help="Learn the instruction files (CLAUDE.md, AGENTS.md, .cursor/rules, .github/copilot-instructions.md).",
    ),
    sessions: bool = typer.Option(
        False,
        "--sessions",
        help="Also capture the sessions Claude Code (CLAUDE_CONFIG_DIR or ~/.claude) and Codex (CODEX_HOME or "
        "~/.codex) kept of this repository: each check that failed then passed after edits becomes a problem and "
        "its solution.",
    ),
    transcript: Path | None = typer.Option(
        None,
        "--transcript",
        help="Also capture this one session transcript, Claude Code's or a Codex rollout (what the stop hook runs "
        "at the end of a turn).",
    ),
    http: str | None = typer.Option(
        None,
        "--http",
        help="Send what --sessions and --transcript capture to a running `strata serve` at URL instead of the "
        "local store (history and instruction files are learned where the store is: add --no-history --no-instructions).",
    ),
    token_env: str = typer.Option(
        "STRATA_TOKEN", "--token-env", help="With --http: the environment variable holding the server's token."
    ),
) -> None:
    """Learn the repository's history: each meaningful commit becomes a change anchored to the files it
    touched, each revert a failed tactic, and later commits that rewrite a documented decision's files
    are recorded as changes of it. Merges, bot and release commits, lockfile-only and formatting-only
    commits are skipped. Run again, it learns only the new commits, and follows a rebase or force-push
    without duplicating anything. Its instruction files for agents too: each rule (a bullet, a paragraph)
    a fact or preference anchored to its lines, edited rules superseding the old, removed ones archived;
    Strata's own block is never learned (docs/LEARNING.md). With --sessions (or --transcript), what the
    agent's sessions proved too: a check that failed then passed after edits becomes a problem and its
    solution, and memories shown before the pass are credited (docs/LEARNING.md "Capture in the loop").

    Example: strata learn   |   strata learn --root ~/src/api --max-commits 300   |   strata --json learn --since 2024-01-01   |   strata learn --sessions
    """
    from strata_recall.interface.agents import capture
    from strata_recall.interface.agents.repo_identity import repo_root
    from strata_recall.interface.app.services.learning.core import make_searchable

    bars = _Bars()
    if http is not None:
        _capture_to_server(ctx, root, repo_id, http, token_env, history or instructions, sessions, transcript, bars)
        return
    with _session(ctx) as strata, contextlib.ExitStack() as held:
        folder = _learned_folder(root)
        top = repo_root(folder)
        chosen = _learned_repo(top, repo_id)
        if not (history or instructions or sessions or transcript):
            raise InvalidInput("nothing_to_learn", "", "--no-history and --no-instructions leave nothing to learn")
        if transcript is not None and not transcript.expanduser().is_file():
            raise InvalidInput("not_a_file", "transcript", f"--transcript {transcript}: no such file")
        try:
            if transcript is not None:  # the stop hook's background learns of one store run one at a time
                held.enter_context(capture.one_at_a_time(strata.settings.data_dir))
            report, recorded = _learn_here(
                strata, top, chosen, (history, instructions, sessions), since, max_commits, transcript, bars
            )
            if embed and recorded:
                make_searchable(strata, report, bars)
        finally:
            bars.close()
        _emit(ctx.obj, report.as_dict(), render.learned)


def _learn_here(
    strata: Any,
    top: Path,
    chosen: str,
    what: tuple[bool, bool, bool],
    since: str | None,
    max_commits: int | None,
    transcript: Path | None,
    bars: _Bars,
) -> tuple[Any, bool]:
    """What `strata learn` learns into the local store: the history, the instruction files, the sessions
    (`what`: whether each), and a transcript; the report, and whether anything was recorded."""
    from strata_recall.interface.agents import capture
    from strata_recall.interface.app.services.learning.core import LearnReport
    from strata_recall.interface.app.services.learning.git import learn_repository
    from strata_recall.interface.app.services.learning.instructions import learn_instructions

    history, instructions, sessions = what
    if history:
        report = learn_repository(
            strata, top, chosen, since=since, max_commits=max_commits, searchable=False, progress=bars
        )
    else:
        report = LearnReport(chosen, nothing_new=True)
    if instructions:
        report.instructions = learn_instructions(strata, top, chosen)
        report.position = report.instructions["position"] or report.position
    captured = None
    if transcript is not None:
        local = capture.local_capture(strata, chosen, top)
        captured = capture.capture_transcript(local, transcript.expanduser().absolute())
    if sessions:
        found = capture.capture_sessions(capture.local_capture(strata, chosen, top), bars)
        captured = found if captured is None else captured.merge(found)
    if captured is not None:
        report.sessions = captured.as_dict()
        report.position = captured.position or report.position
    recorded = (
        not report.nothing_new
        or (report.instructions or {}).get("position") is not None
        or (captured is not None and captured.position is not None)
    )
    return report, recorded


def _learned_folder(root: Path) -> Path:
    """`strata learn --root`: the folder it names, or a structured refusal."""
    folder = root.expanduser().absolute()
    if not folder.is_dir():
        raise InvalidInput("not_a_directory", "root", f"{root} is not a folder")
    return folder


def _learned_repo(top: Path, repo_id: str | None) -> str:
    """The repo id a learn files its memories under: --repo-id validated, else the one `strata init` derives."""
    from strata_recall.interface.agents.repo_identity import identify
    from strata_recall.schemas.common import RepoId

    try:
        return TypeAdapter(RepoId).validate_python(repo_id) if repo_id is not None else identify(top).repo_id
    except ValidationError as exc:
        raise InvalidInput("invalid_repo_id", "repo_id", f"--repo-id {repo_id!r}: {exc.errors()[0]['msg']}") from None


def _capture_to_server(
    ctx: typer.Context,
    root: Path,
    repo_id: str | None,
    url: str,
    token_env: str,
    learning: bool,
    sessions: bool,
    transcript: Path | None,
    bars: _Bars,
) -> None:
    """`strata learn --http URL`: what sessions proved, sent to a server through its API (no local store
    is opened: the server's is the store)."""
    from strata_recall.interface.agents import capture
    from strata_recall.interface.agents.repo_identity import repo_root
    from strata_recall.interface.app.services.learning.core import LearnReport

    opts: Options = ctx.obj
    try:
        settings = load_settings(opts.config, data_dir=opts.data_dir)
        configure_logging(settings.log_level, settings.log_format)
        folder = _learned_folder(root)
        if learning:
            raise InvalidInput(
                "local_only",
                "http",
                "--http sends only what sessions proved: history and instruction files are learned where the store "
                "is (run strata learn there); add --no-history --no-instructions",
            )
        if not (sessions or transcript):
            raise InvalidInput("nothing_to_learn", "http", "--http needs --sessions or --transcript")
        if transcript is not None and not transcript.expanduser().is_file():
            raise InvalidInput("not_a_file", "transcript", f"--transcript {transcript}: no such file")
        top = repo_root(folder)
        chosen = _learned_repo(top, repo_id)
        remote = capture.server_capture(url, token_env, chosen, top)
        held = capture.one_at_a_time(settings.data_dir) if transcript is not None else contextlib.nullcontext()
        with held:
            try:
                if transcript is not None:
                    capture.capture_transcript(remote, transcript.expanduser().absolute())
                if sessions:
                    capture.capture_sessions(remote, bars)
            finally:
                bars.close()
    except StrataError as exc:
        log.info("refused", code=exc.code, path=exc.path)
        raise _fail(opts, exc) from None
    except Exception as exc:  # never a traceback at the user (as _session)
        log.error("internal_error", error=type(exc).__name__, detail=str(exc))
        raise _fail(opts, StrataError("internal_error", "", f"internal error ({type(exc).__name__}): {exc}")) from None
    report = LearnReport(chosen, source="sessions", nothing_new=True)
    report.sessions = remote.report.as_dict()
    report.position = remote.report.position
    _emit(opts, report.as_dict(), render.learned)
