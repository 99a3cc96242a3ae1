"""The store `strata import` leaves, this checkout's against another revision's, on the same input.

Usage: python ops/compare_import.py --against main [--lines 20000] [--repeat 2000]

Both trees run `strata --json import FILE` in a fresh process (the same interpreter and packages; the
other revision's code first on PYTHONPATH: ops/revision.py) on one file of realistic write requests
(ops/workload.py), with --repeat of them written a second time at the end (reinforcements) and a few
with anchors, and some written again with secrets in their text and evidence. Then the two event tables are compared row by row in log order: position, aggregate id,
version, topic and stored state, each event's timestamp (the only value that depends on when it ran)
replaced by a placeholder, and the aggregate ids of idempotency keys (random per request) by their
order of appearance. Prints the outcome both printed, the counts, and the first rows that differ;
exits 1 if anything does.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "ops"))

import revision
from workload import realistic_lines

_STAMP = re.compile(rb'"_type_":"datetime_iso","_data_":"[^"]*"')
KEY_TOPIC_PART = "idempotency"


def lines_of(n: int, repeat: int) -> list[str]:
    lines = realistic_lines(n)
    out = list(lines)
    for i, line in enumerate(lines[:repeat]):  # the same request again: the memory is reinforced
        request = json.loads(line)
        if i % 4 == 0 and request["memory"]["scope"] == "repo":
            fingerprint = f"ws1:{i}:{i:032x}"
            request["anchors"] = [{"path": f"src/module_{i}.py", "symbol": f"handler_{i}", "fingerprint": fingerprint}]
        out.append(json.dumps(request))
        if i % 7 == 0:  # a new memory holding secrets, redacted on write
            request = json.loads(line)
            request["memory"]["text"] += f" (token ghp_{i:036d}, key AKIA{i:016d})"
            request["memory"]["evidence_refs"] = [*request["memory"].get("evidence_refs", []), f"password=Hunter{i}xQ9"]
            out.append(json.dumps(request))
    return out


def run_import(code: list[Path] | None, data: Path, path: Path) -> dict[str, object]:
    env = {**os.environ, "STRATA_DATA_DIR": str(data)}
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in code)
    strata = Path(sys.executable).parent / "strata"
    result = subprocess.run([str(strata), "--json", "import", str(path)], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"import failed: {result.stdout} {result.stderr[-2000:]}")
    outcome: dict[str, object] = json.loads(result.stdout)
    return outcome


def rows(data: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(data / "events.sqlite") as db:
        found = db.execute(
            "SELECT rowid, originator_id, originator_version, topic, state FROM stored_events ORDER BY rowid"
        ).fetchall()
    keys: dict[str, str] = {}
    out = []
    for position, originator, version, topic, state in found:
        if KEY_TOPIC_PART in topic.lower():
            originator = keys.setdefault(originator, f"key-{len(keys)}")
        out.append((position, originator, version, topic, _STAMP.sub(b'"_data_":"T"', bytes(state))))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="main")
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        path = base / "requests.jsonl"
        path.write_text("\n".join(lines_of(args.lines, args.repeat)) + "\n")
        other = revision.import_paths(revision.checkout(args.against, base))
        outcomes = {
            args.against: run_import(other, base / "theirs", path),
            "this checkout": run_import(None, base / "ours", path),
        }
        theirs, ours = rows(base / "theirs"), rows(base / "ours")
    for label, outcome in outcomes.items():
        print(f"{label}: {json.dumps(outcome)}")
    print(f"events: {len(theirs)} | {len(ours)}")
    print(f"topics: {sorted(Counter(r[3] for r in theirs).items())}")
    same_topics = Counter(r[3] for r in theirs) == Counter(r[3] for r in ours)
    differing = [(a, b) for a, b in zip(theirs, ours, strict=False) if a != b]
    for a, b in differing[:5]:
        print(f"differs at position {a[0]}:\n  {args.against}: {a}\n  this checkout: {b}")
    same_outcome = outcomes[args.against] == outcomes["this checkout"]
    same = same_outcome and same_topics and len(theirs) == len(ours) and not differing
    print(
        "the same store: every event's position, aggregate, version, topic and state (timestamps aside)"
        if same
        else f"DIFFERENT: {len(differing)} rows differ"
    )
    raise SystemExit(0 if same else 1)


if __name__ == "__main__":
    main()
