"""What `strata import` stores is a permanent API: the ids, the events and their sanitised texts of a
fixed file (tests/data/import_payloads.jsonl: 446 realistic lines with links and repeats, secrets in
texts, rationales and evidence) must stay exactly what they were before the import was made faster
(domain/ids.py, domain/unit_of_work.py). DIGEST was printed by `payload_digest` on the store that
main's tree (7708a57) made of the file, and this tree's gives the same. Timestamps, the only field
that differs between two runs, are left out."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import STRATA_COMMAND

DATA = Path(__file__).resolve().parents[1] / "data" / "import_payloads.jsonl"
DIGEST = "f28f2b078e3b41adccd72c4ab884cd694c4e14c81114a11b6908592a1377c06c"
EVENTS = {"MemoryWritten": 416, "ChangeRecorded": 36, "TruthAdjusted": 66}


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get("_type_") == "datetime_iso":
            return None
        return {k: _timeless(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def payload_digest(events_file: Path) -> tuple[str, dict[str, int]]:
    """A digest of every stored event (aggregate id, version, topic, state without timestamps), in log
    order, and the number of events of each kind."""
    digest, counts = hashlib.sha256(), {}
    with sqlite3.connect(events_file) as db:
        rows = db.execute(
            "SELECT originator_id, originator_version, topic, state FROM stored_events ORDER BY rowid"
        ).fetchall()
    for originator, version, topic, state in rows:
        kind = topic.rsplit(".", 1)[-1]
        counts[kind] = counts.get(kind, 0) + 1
        state = json.loads(state)
        digest.update(json.dumps([originator, version, topic, _timeless(state)], sort_keys=True).encode())
    return digest.hexdigest(), counts


def test_an_import_stores_what_it_always_stored(strata_env: dict[str, str]) -> None:
    result = subprocess.run(
        [STRATA_COMMAND, "--json", "import", str(DATA)], capture_output=True, text=True, env=strata_env, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    answer = json.loads(result.stdout)
    assert (answer["lines"], answer["created"], answer["reinforced"], answer["redactions"]) == (446, 416, 30, 40)
    digest, counts = payload_digest(Path(strata_env["STRATA_DATA_DIR"]) / "events.sqlite")
    assert counts == EVENTS
    assert digest == DIGEST
