"""`strata check`'s report (the check itself: interface/app/services/hygiene.py) and `strata
fingerprint` (what an anchor on a file carries): the operator's and the user's own files, named on the
command line. Which files may be read, and how: interface/app/workspace.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import structlog

from strata_recall.domain.anchors import CHANGED, anchored_text, fingerprint
from strata_recall.domain.errors import InvalidInput, NotFound
from strata_recall.interface.app.workspace import FileReader, not_readable, real

log = structlog.get_logger("strata.anchors")


def render_check(report: dict[str, Any]) -> str:
    lines = [
        f"{report['checked']} anchored memories of {report['repo_id']} checked against {report['root']}"
        + (f" at {report['commit'][:12]}" if report["commit"] else "")
        + f": {len(report['drifted'])} drifted"
    ]
    for item in report["drifted"]:
        recorded = ""
        if report["applied"]:
            recorded = "  (truth adjusted)" if item.get("recorded") else "  (already recorded)"
        lines.append(f"- {item['kind']} {item['memory_id']}: {item['text']}{recorded}")
        for a in item["anchors"]:
            since = f" since {a['commit'][:12]}" if a["commit"] else ""
            lines.append(f"    {a['key']}: {'changed' if a['state'] == CHANGED else 'gone'}{since}")
    if report["unjudged"]:
        lines.append(
            f"{report['unjudged']} anchors not judged: their fingerprints came from a client (compared only "
            "with the file fingerprints a client sends with a read) or were recorded before Strata kept "
            "track of that (write the memory again with its anchors to re-anchor it)"
        )
    if report["drifted"] and not report["applied"]:
        lines.append("dry run: nothing recorded (add --apply to lower their truth once per drift)")
    return "\n".join(lines)


def fingerprint_file(file: Path, symbol: str | None = None, lines: str | None = None) -> dict[str, Any]:
    """`strata fingerprint`: what an anchor on this file (or a symbol or lines in it) carries. The
    file is the local user's, named on the command line; it is read as workspace files are
    (a regular file, bounded in size and time)."""
    span = _line_range(lines) if lines else None
    target = real(file.expanduser())
    source = FileReader().read(target.parent, target.name) if target is not None else None
    if source is None:
        raise not_readable("file", f"file {str(file)!r}")
    text = anchored_text(source, file.as_posix(), symbol, span)
    if text is None:
        what = f"symbol {symbol!r}" if symbol else f"lines {lines}"
        raise NotFound("anchor_not_found", "symbol" if symbol else "lines", f"no {what} in {file}")
    return {
        "ok": True,
        "path": file.as_posix(),
        "symbol": symbol,
        "lines": list(span) if span else None,
        "fingerprint": fingerprint(text),
        "file_fingerprint": fingerprint(source),
    }


def _line_range(text: str) -> tuple[int, int]:
    first, _, last = text.partition("-")
    try:
        span = sorted((int(first), int(last or first)))
    except ValueError:
        raise InvalidInput("invalid_lines", "lines", f"{text!r} is not a line range FIRST-LAST (e.g. 10-24)") from None
    if span[0] < 1:
        raise InvalidInput("invalid_lines", "lines", "lines are numbered from 1")
    return span[0], span[1]
