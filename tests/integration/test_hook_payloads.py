"""The hooks in-process (interface/agents/hooks.py `run`), fed random payloads: JSON of any shape under the
keys the clients send, each event, a local store in a temporary folder. Whatever arrives, a hook returns
0 and prints exactly one JSON object on one line; a failure is said on stderr as one JSON line. The
installed command with hostile payloads and transcripts: tests/e2e/test_hook_inputs.py."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata_recall.interface.agents import hooks

KEYS = [
    "session_id",
    "conversation_id",
    "cwd",
    "workspace_roots",
    "hook_event_name",
    "transcript_path",
    "prompt",
    "tool_name",
    "tool_input",
    "tool_response",
    "error",
    "is_interrupt",
    "source",
    "stop_hook_active",
    "status",
    "output",
]
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=200),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=10), inner),
    max_leaves=20,
)
payloads = st.dictionaries(st.sampled_from(KEYS), values, max_size=8) | values


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(event=st.sampled_from([*hooks.EVENTS, "bogus"]), payload=payloads)
def test_any_payload_gets_one_json_line(tmp_path: Path, event: str, payload: Any) -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = hooks.run(
        event, stdin=io.StringIO(json.dumps(payload)), stdout=stdout, stderr=stderr, data_dir=tmp_path / "data"
    )
    assert code == 0
    out = stdout.getvalue()
    assert out.endswith("\n") and out.count("\n") == 1, out
    assert isinstance(json.loads(out), dict)
    for line in stderr.getvalue().splitlines():
        assert json.loads(line)["event"] == "hook_failed"
