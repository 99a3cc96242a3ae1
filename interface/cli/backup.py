"""`strata import` and `strata export`: bulk loads, whole-log backups and the Markdown digest."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from strata_recall.domain import archive
from strata_recall.domain.errors import InvalidInput
from strata_recall.interface.app import lazy
from strata_recall.interface.cli import render
from strata_recall.interface.cli.common import _api, _emit, _session, app

if TYPE_CHECKING:
    from strata_recall.interface.app.services import digest
else:  # the Markdown digest's projections: only for `export --markdown` (interface/app/lazy.py)
    digest = lazy.module("strata_recall.interface.app.services.digest")


@app.command("import")
def import_(
    ctx: typer.Context,
    file: str = typer.Argument(..., help="A JSONL file, or '-' for stdin."),
    events: bool = typer.Option(
        False,
        "--events",
        help="The file is a `strata export` of a whole log: restore it "
        "into this empty store (every projection then rebuilds to the original's digest).",
    ),
) -> None:
    """Bulk-load write requests, one JSON object per line, all or nothing; or, with --events, restore
    a whole log exported by `strata export` into an empty store.

    Example: strata import memories.jsonl   |   strata --data-dir /new import --events backup.jsonl
    """
    with _session(ctx) as strata, _open_input(file) as (handle, size):
        with typer.progressbar(length=size or 0, label="importing", file=sys.stderr) as bar:

            def counted() -> Iterator[bytes]:
                for line in handle:
                    bar.update(len(line))
                    yield line

            if events:
                restored = archive.restore(strata.log, counted())
                response: Any = {"ok": True, "events": restored, "position": strata.log.position()}
            else:
                response = _api(strata).import_lines(counted())
        if events:
            _emit(ctx.obj, response, lambda v: f"restored {v['events']} events; log position {v['position']}")
        else:
            _emit(ctx.obj, response, render.imported)


@contextmanager
def _open_input(file: str) -> Iterator[tuple[Any, int | None]]:
    if file == "-":
        yield sys.stdin.buffer, None
        return
    try:
        handle = open(file, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InvalidInput("unreadable_file", "", f"cannot read {file}: {exc.strerror}") from None
    with handle:
        yield handle, Path(file).stat().st_size


@app.command()
def export(
    ctx: typer.Context,
    output: str = typer.Option("-", "--output", "-o", help="Where to write; '-' for stdout (the default)."),
    markdown: bool = typer.Option(
        False, "--markdown", help="A readable digest of one repo's memory instead of the log."
    ),
    repo: str | None = typer.Option(None, "--repo", help="The repo of the Markdown digest."),
    include_global: bool = typer.Option(True, "--global/--no-global", help="Include global memories in the digest."),
) -> None:
    """Write the whole event log as JSON lines (restore with `strata import --events`), or with
    --markdown --repo ID a readable digest of what that repo's memory holds (an AGENTS.md-style file).

    Example: strata export -o backup.jsonl   |   strata export --markdown --repo acme/api -o MEMORY.md
    """
    with _session(ctx) as strata:
        if markdown:
            if not repo:
                raise InvalidInput(
                    "missing_repo", "repo", "--markdown needs --repo ID: the digest is of one repo's memory"
                )
            strata.catch_up()
            _write_output(output, [digest.markdown_digest(strata, repo, include_global).encode()])
            written = {"ok": True, "format": "markdown", "repo_id": repo, "output": output}
        else:
            head = strata.log.position()
            with typer.progressbar(length=head, label="exporting", file=sys.stderr) as bar:

                def lines() -> Iterator[bytes]:
                    for line in archive.export_lines(strata.log):
                        bar.update(1)
                        yield line

                _write_output(output, lines())
            written = {"ok": True, "format": archive.FORMAT, "events": head, "output": output}
        if output != "-":
            _emit(
                ctx.obj,
                written,
                lambda v: f"wrote {v.get('events', 'the digest')} {'events ' if 'events' in v else ''}to {v['output']}",
            )


def _write_output(output: str, chunks: Iterable[bytes]) -> None:
    if output == "-":
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        return
    target = Path(output)
    partial: Path | None = None
    try:
        # a file of its own, created exclusively (never through a name planted beside the target) and
        # owner-only: the log holds every repo's memories and the tokens' hashes, as the data directory does
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
        partial = Path(name)
        with open(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
        partial.replace(target)  # a reader never sees half a file
    except OSError as exc:
        if partial is not None:
            partial.unlink(missing_ok=True)
        raise InvalidInput("unwritable_file", "output", f"cannot write {output}: {exc.strerror}") from None
