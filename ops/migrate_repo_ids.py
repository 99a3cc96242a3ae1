"""Rewrite the repo ids of an exported log, for a fresh store: ids from before repo ids were normalised
(NFD spellings, e.g. from macOS folder names), or ids to rename (the old default `acme/api` to the new
`github.com/acme/api`, or `api` to `local/api-<hash>`).

Usage:
  strata export -o old.jsonl
  python ops/migrate_repo_ids.py old.jsonl -o new.jsonl [--rename OLD=NEW ...]
  strata --data-dir NEW_DIR import --events new.jsonl     # then point clients at NEW_DIR

Every `repo_id` in an event's state is normalised to NFC, then renamed by `--rename` (both sides are
normalised too). Positions, memory ids and everything else stay as exported. Prints each repo id found,
how many events carry it and what it becomes. Writes nothing, and exits 1, when a resulting id breaks
the repo id rules (schemas/repo_ids.py): rename such ids with --rename. The read ledger (unrated reads)
is not part of the log and starts empty in the new store.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from strata_recall.schemas import repo_ids


def _rewrite(value: Any, mapping: dict[str, str], seen: Counter[str]) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "repo_id" and isinstance(item, str):
                seen[item] += 1
                normal = repo_ids.normalise(item)
                out[key] = mapping.get(normal, normal)
            else:
                out[key] = _rewrite(item, mapping, seen)
        return out
    if isinstance(value, list):
        return [_rewrite(item, mapping, seen) for item in value]
    return value


def migrate(
    lines: Iterable[bytes], renames: dict[str, str]
) -> tuple[list[bytes], dict[str, tuple[int, str]], list[str]]:
    """(the rewritten lines, {old id: (events, new id)}, the problems with new ids)."""
    mapping = {repo_ids.normalise(old): repo_ids.normalise(new) for old, new in renames.items()}
    seen: Counter[str] = Counter()
    out = []
    for line in lines:
        if not line.strip():
            continue
        record = orjson.loads(line)
        record["state"] = _rewrite(record.get("state"), mapping, seen)
        out.append(orjson.dumps(record) + b"\n")
    report = {
        old: (count, mapping.get(repo_ids.normalise(old), repo_ids.normalise(old))) for old, count in seen.items()
    }
    problems = sorted({f"{new!r}: {found}" for _, new in report.values() if (found := repo_ids.problem(new))})
    return out, report, problems


def _renames(pairs: list[str]) -> Iterator[tuple[str, str]]:
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old or not new:
            raise SystemExit(f"--rename takes OLD=NEW, not {pair!r}")
        yield old, new


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("exported", type=Path, help="A `strata export` file.")
    parser.add_argument("-o", "--output", type=Path, required=True, help="Where to write the rewritten log.")
    parser.add_argument("--rename", action="append", default=[], metavar="OLD=NEW", help="Rename a repo id.")
    args = parser.parse_args()
    with args.exported.open("rb") as handle:
        lines, report, problems = migrate(handle, dict(_renames(args.rename)))
    for old, (count, new) in sorted(report.items()):
        change = "unchanged" if new == old else f"-> {new!r}"
        print(f"{old!r}: {count} events, {change}")
    if problems:
        print("refused by the repo id rules (rename them with --rename OLD=NEW); nothing was written:", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        raise SystemExit(1)
    args.output.write_bytes(b"".join(lines))
    print(
        f"wrote {len(lines)} events to {args.output}; restore with: strata --data-dir NEW_DIR import --events {args.output}"
    )


if __name__ == "__main__":
    main()
