"""What the hooks make of a moment (interface/agents/hook_cues.py) and what they show of it (interface/agents/hooks.py):
the distinctive lines of a failure, the file and names of an edit, the bar, the budget, and the data
directory resolved as the settings module does without importing it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from strata_recall.domain.errors import InvalidInput
from strata_recall.interface.agents import hook_cues, hooks
from strata_recall.interface.agents.hook_recall import Item, base_url
from strata_recall.interface.app.settings import load_settings

TRACEBACK = """Running the test suite:
Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/_pytest/runner.py", line 341, in from_call
    result = func()
  File "{root}/sympy/core/basic.py", line 1048, in subs
    rv = rv._subs(old, new, **kwargs)
  File "{root}/sympy/core/cache.py", line 72, in wrapper
    retval = cfunc(*args, **kwargs)
  File "/usr/lib/python3.11/functools.py", line 999, in __call__
    return self.func(*args)
TypeError: unhashable type: 'MutableDenseMatrix'
"""


def test_a_failure_is_its_error_its_tests_and_its_deepest_project_frame(tmp_path: Path) -> None:
    moment = hook_cues.failure_moment({"error": "Exit code 1\n" + TRACEBACK.format(root=tmp_path)}, tmp_path)
    assert moment is not None and moment.kind == "failure"
    lines = moment.query.splitlines()
    assert lines[0] == "TypeError: unhashable type: 'MutableDenseMatrix'"
    assert lines[-1] == "sympy/core/cache.py in wrapper"  # the deepest frame in the project, not a library's
    assert moment.paths == ("sympy/core/cache.py", "sympy/core/basic.py")
    assert "site-packages" not in moment.query and "Running the test suite" not in moment.query


def test_failing_tests_are_named() -> None:
    log = (
        "F..\nFAILED tests/test_orders.py::test_checkout - KeyError: 'sku'\n"
        "FAIL: test_total (shop.tests.test_cart.CartTest)\n----\nKeyError: 'sku'\n"
    )
    moment = hook_cues.failure_moment(
        {"tool_response": {"stdout": log, "stderr": "", "exit_code": 1}}, Path("/nowhere")
    )
    assert moment is not None
    assert (
        "tests/test_orders.py::test_checkout" in moment.query
        and "shop.tests.test_cart.CartTest.test_total" in moment.query
    )


@pytest.mark.parametrize(
    "payload",
    [
        {"tool_response": {"stdout": "12 passed in 0.4s", "stderr": "", "interrupted": False}},
        {"error": "Interrupted", "is_interrupt": True},
        {"tool_response": {"stdout": "", "stderr": ""}},
    ],
)
def test_a_command_that_did_not_fail_is_no_moment(payload: dict) -> None:
    assert hook_cues.failure_moment(payload, Path("/nowhere")) is None


def test_an_edit_is_the_file_and_the_names_it_replaces_not_the_new_code(tmp_path: Path) -> None:
    payload = {
        "tool_name": "Edit",
        "tool_input": {
            "file_path": str(tmp_path / "src" / "db" / "pool.py"),
            "old_string": "class Pool:\n    def acquire(self, timeout=None):\n        return self._conn_queue.get()",
            "new_string": "def totally_new_helper(): pass",
        },
    }
    moment = hook_cues.edit_moment(payload, tmp_path)
    assert moment is not None and moment.paths == ("src/db/pool.py",)
    assert moment.query.startswith("src/db/pool.py Pool acquire") and "_conn_queue" in moment.query
    assert "totally_new_helper" not in moment.query
    assert hook_cues.edit_moment({"tool_name": "Edit", "tool_input": {"file_path": "/etc/passwd"}}, tmp_path) is None
    patch = {
        "tool_name": "apply_patch",
        "tool_input": {"input": "*** Begin Patch\n*** Update File: src/app.py\n@@\n-x\n+y\n"},
    }
    codex = hook_cues.edit_moment(patch, tmp_path)
    assert codex is not None and codex.paths == ("src/app.py",)
    # Codex 0.169's PreToolUse of its apply_patch tool, as it sends it: the patch under `command`; the
    # names the patch removes are the query, the ones it adds are the agent's answer
    sent = {
        "tool_name": "apply_patch",
        "tool_input": {
            "command": "*** Begin Patch\n*** Update File: src/db/pool.py\n@@\n def acquire(timeout=None):\n"
            "-    return self._conn_queue.get()\n+    return totally_new_helper()\n*** End Patch\n"
        },
    }
    moment = hook_cues.edit_moment(sent, tmp_path)
    assert moment is not None and moment.paths == ("src/db/pool.py",)
    assert "_conn_queue" in moment.query and "totally_new_helper" not in moment.query


def test_code_tokens_are_identifiers_not_words() -> None:
    tokens = hook_cues.code_tokens(
        "The LogisticRegression in sklearn/linear_model/_logistic.py raises a ValueError "
        "when n_jobs=-1; self and None say nothing"
    )
    assert {"logisticregression", "sklearn/linear_model/_logistic.py", "linear_model", "valueerror", "n_jobs"} <= tokens
    assert not {"the", "raises", "when", "self", "none"} & tokens


def item(memory_id: str, kind: str, text: str, anchors: tuple[str, ...] = (), problem_id: str | None = None) -> Item:
    return Item(memory_id, kind, text, anchors, problem_id)


def test_the_bar_and_the_order_at_an_edit() -> None:
    edit = hook_cues.Moment("edit", "src/db/pool.py acquire", ("src/db/pool.py",), frozenset({"src/db/pool.py"}))
    candidates = [
        item("p1", "problem", "Checkout hangs"),
        item("s1", "solution", "Add a timeout", ("src/db/pool.py",), "p1"),
        item("f1", "failed_tactic", "Raising the timeout in src/db/pool.py did not help", (), "p1"),
        item("x1", "fact", "src/db/models.py is generated"),
    ]
    for barred in (False, True):  # at an edit: the memories of that file, whatever the store
        assert [i.memory_id for i in hooks.chosen(candidates, edit, set(), barred)] == [
            "f1",
            "s1",
        ]  # failed tactics first
    assert [i.memory_id for i in hooks.chosen(candidates, edit, {"f1"})] == ["s1"]  # never twice


def test_the_bar_at_a_prompt_is_the_read_paths_relevance_or_shared_code_tokens() -> None:
    prompt = hook_cues.Moment("prompt", "q", (), frozenset({"db_pool.acquire", "pooltimeouterror", "acquire"}))
    case = [
        Item("p2", "problem", "PoolTimeoutError from db_pool.acquire", relevance=0.6),
        Item("s2", "solution", "Run make db-up", problem_id="p2", relevance=0.25),
        Item("y1", "fact", "The acquire step is slow", relevance=0.05),
    ]
    # from a server: what is at least as likely to be relevant as the read path's bar
    assert [i.memory_id for i in hooks.chosen(case, prompt, set(), barred=True)] == ["p2", "s2"]
    # from a local store (no relevance): two distinctive code tokens; one is not enough
    assert [i.memory_id for i in hooks.chosen(case, prompt, set(), barred=False)] == ["p2"]


def test_a_prompt_shows_an_answer_from_a_server_only_when_it_leads() -> None:
    """At a prompt with the read path's relevance, an answer is shown only when its best memory is at least
    PROMPT_LEAD x RELEVANCE_BAR likely to be relevant, or clears the bar and stands out (PROMPT_STANDOUT
    times as likely as any other case's best); then each memory above the bar. A failure's answer is not
    held to the lead (its own evidence rule: the next test); a local store's keyword candidates (no
    relevance) keep their own bar."""
    prompt = hook_cues.Moment("prompt", "q", (), frozenset({"db_pool.acquire", "pooltimeouterror", "acquire"}))
    failure = hook_cues.Moment("failure", "q", (), frozenset({"db_pool.acquire", "pooltimeouterror", "acquire"}))
    lead = hooks.PROMPT_LEAD * hooks.RELEVANCE_BAR
    assert hooks.RELEVANCE_BAR < lead < 1 and hooks.PROMPT_STANDOUT > 1
    top = lead - 0.01
    weak = [
        Item("p3", "problem", "PoolTimeoutError from db_pool.acquire", relevance=top),
        Item("s3", "solution", "Run make db-up", problem_id="p3", relevance=hooks.RELEVANCE_BAR),
        Item("y3", "fact", "The acquire step is slow", relevance=top / hooks.PROMPT_STANDOUT + 0.01),
    ]
    assert hooks.chosen(weak, prompt, set(), barred=True) == []
    bar_alone = hooks.Policy(failure_evidence=None)
    assert [i.memory_id for i in hooks.chosen(weak, failure, set(), barred=True, policy=bar_alone)] == ["p3", "s3"]
    assert [i.memory_id for i in hooks.chosen(weak, prompt, set(), barred=False)] == ["p3"]
    # the same case alone, or with only a tail far below it: it stands out
    standing = [*weak[:2], Item("y3", "fact", "The acquire step is slow", relevance=top / hooks.PROMPT_STANDOUT - 0.01)]
    for answer in (weak[:2], standing):
        assert [i.memory_id for i in hooks.chosen(answer, prompt, set(), barred=True)] == ["p3", "s3"]
    below = [Item("p4", "problem", "PoolTimeoutError", relevance=hooks.RELEVANCE_BAR - 0.01)]
    assert hooks.chosen(below, prompt, set(), barred=True) == []  # standing out below the bar is not enough
    strong = [Item("p3", "problem", "PoolTimeoutError from db_pool.acquire", relevance=lead), *weak[1:]]
    assert [i.memory_id for i in hooks.chosen(strong, prompt, set(), barred=True)] == ["p3", "s3"]
    # the lead is the answer's, whatever the session was shown already
    assert [i.memory_id for i in hooks.chosen(strong, prompt, {"p3"}, barred=True)] == ["s3"]


def test_a_failure_shows_from_a_server_only_the_memories_that_share_its_evidence() -> None:
    """At a failure with the read path's relevance, a memory above the bar is shown only when it also shares
    at least FAILURE_EVIDENCE distinctive code tokens with the failure's lines or names a file they name;
    one below the bar never is. The policy is an argument (hooks.Policy): the default is the hooks'."""
    failure = hook_cues.Moment(
        "failure",
        "PoolTimeoutError\nsrc/db/pool.py in acquire",
        ("src/db/pool.py",),
        frozenset({"pooltimeouterror", "src/db/pool.py", "test_checkout"}),
    )
    bar = hooks.RELEVANCE_BAR
    answer = [
        Item("y1", "fact", "The importer raised PoolTimeoutError while the replica failed over", relevance=0.5),
        Item("p1", "problem", "test_checkout hangs with PoolTimeoutError", relevance=bar + 0.1),
        Item("s1", "solution", "Give acquire a timeout", ("src/db/pool.py",), problem_id="p1", relevance=bar),
        Item("t1", "failed_tactic", "Raising the timeout in src/db/pool.py", problem_id="p1", relevance=bar),
        Item("p2", "problem", "test_checkout fails with PoolTimeoutError", relevance=bar - 0.01),
    ]
    assert hooks.FAILURE_EVIDENCE == hooks.POLICY.failure_evidence == 2
    assert [i.memory_id for i in hooks.chosen(answer, failure, set(), barred=True)] == ["p1", "s1", "t1"]
    alone = hooks.Policy(failure_evidence=None)  # the bar alone, as before
    assert [i.memory_id for i in hooks.chosen(answer, failure, set(), barred=True, policy=alone)] == [
        "y1",
        "p1",
        "s1",
        "t1",
    ]
    stricter = hooks.Policy(failure_evidence=3)  # p1 shares two tokens; s1 and t1 name the failure's file
    assert [i.memory_id for i in hooks.chosen(answer, failure, set(), barred=True, policy=stricter)] == ["s1", "t1"]
    assert hooks.Policy() == hooks.POLICY  # nothing above changed the hooks' own


def test_a_prompt_shows_beside_the_lead_the_memories_whose_case_names_a_file_it_names() -> None:
    """At a prompt with the read path's relevance, an answer that does not lead still shows the memories of
    a case that names a file the prompt names (anchored to it or naming it), at any relevance: the problem,
    its solutions and failed tactics (hooks.PROMPT_EVIDENCE). A look-alike above the bar without it is not
    shown, nor one sharing the prompt's code tokens; an answer that leads shows each memory above the bar as
    before, and the named case's memories below it; a prompt naming no file, or a local store's keyword
    candidates, are shown what they were before. Other evidence (hooks.Evidence) is the policy's argument."""
    prompt = hook_cues.Moment(
        "prompt",
        "test_checkout hangs in db_pool.acquire (src/db/pool.py)",
        ("src/db/pool.py",),
        frozenset({"test_checkout", "db_pool.acquire", "db_pool", "src/db/pool.py", "src/db/pool"}),
    )
    unnamed = prompt._replace(paths=())  # the same prompt naming no file of the repository
    bar, lead = hooks.RELEVANCE_BAR, hooks.PROMPT_LEAD * hooks.RELEVANCE_BAR
    weak = [  # its best is below the lead and does not stand out
        Item("y1", "fact", "Checkout pages hang when the payment provider is slow", relevance=lead - 0.01),
        Item("p1", "problem", "test_checkout times out waiting on db_pool", relevance=lead - 0.02),
        Item("s1", "solution", "Give acquire a timeout", ("src/db/pool.py",), problem_id="p1", relevance=bar),
        Item("t1", "failed_tactic", "Raising the timeout did not help", problem_id="p1", relevance=0.05),
        Item("p2", "problem", "test_checkout waits on db_pool.acquire", relevance=bar + 0.01),  # shares 3 tokens
    ]
    assert hooks.POLICY.prompt_evidence == hooks.PROMPT_EVIDENCE == hooks.Evidence()
    # the lead does not fire: the case that names the file, whole and below the bar; no look-alike
    assert [i.memory_id for i in hooks.chosen(weak, prompt, set(), barred=True)] == ["p1", "s1", "t1"]
    assert [i.memory_id for i in hooks.chosen(weak, prompt, {"p1"}, barred=True)] == ["s1", "t1"]  # never twice
    assert hooks.chosen(weak, unnamed, set(), barred=True) == []
    # the lead fires: each memory above the bar as before, and the named case's below it
    strong = [weak[0]._replace(relevance=lead), *weak[1:]]
    assert [i.memory_id for i in hooks.chosen(strong, unnamed, set(), barred=True)] == ["y1", "p1", "s1", "p2"]
    assert [i.memory_id for i in hooks.chosen(strong, prompt, set(), barred=True)] == ["y1", "p1", "s1", "t1", "p2"]
    # a local store's keyword candidates (no relevance) keep their own bar
    assert [i.memory_id for i in hooks.chosen(weak, prompt, set(), barred=False)] == ["p1", "s1", "p2"]
    # other evidence, as ops/eval_prompt_bar.py asks it: the memory's own file, its own bar, shared tokens,
    # only within the lead's answers
    own = hooks.POLICY._replace(prompt_evidence=hooks.Evidence(case=False))
    assert [i.memory_id for i in hooks.chosen(weak, prompt, set(), barred=True, policy=own)] == ["s1"]
    above = hooks.POLICY._replace(prompt_evidence=hooks.Evidence(bar=bar))
    assert [i.memory_id for i in hooks.chosen(weak, prompt, set(), barred=True, policy=above)] == ["p1", "s1"]
    tokens = hooks.POLICY._replace(prompt_evidence=hooks.Evidence(case=False, tokens=3, bar=bar))
    assert [i.memory_id for i in hooks.chosen(weak, prompt, set(), barred=True, policy=tokens)] == ["s1", "p2"]
    within = hooks.POLICY._replace(prompt_evidence=hooks.Evidence(within_lead=True))
    assert hooks.chosen(weak, prompt, set(), barred=True, policy=within) == []
    assert [i.memory_id for i in hooks.chosen(strong, prompt, set(), barred=True, policy=within)] == ["p1", "s1", "t1"]
    alone = hooks.Policy(prompt_evidence=None)  # the lead alone
    assert hooks.chosen(weak, prompt, set(), barred=True, policy=alone) == []
    shown = hooks.chosen(strong, prompt, set(), barred=True, policy=alone)
    assert [i.memory_id for i in shown] == ["y1", "p1", "s1", "p2"]


def test_the_hooks_bar_is_the_read_paths_default() -> None:
    from strata_recall.schemas.read import DEFAULT_BAR

    assert hooks.RELEVANCE_BAR == DEFAULT_BAR


def test_an_injection_fits_its_budget() -> None:
    moment = hook_cues.Moment("prompt", "q", (), frozenset())
    many = [item(f"{n:08d}-0000-5000-8000-000000000000", "fact", "word " * 200) for n in range(6)]
    text, shown = hooks.render(many, moment, "acme/api", "0" * 32, budget=200)
    assert 0 < len(shown) < len(many) and hooks.estimate_tokens(text) <= 200
    assert all(len(line) < hooks.TEXT_CHARS + 80 for line in text.splitlines()[1:])
    assert hooks.render(many, moment, "acme/api", None, budget=20) == ("", [])


def test_a_server_url_is_its_base() -> None:
    assert (
        base_url("http://strata.internal:7411/mcp")
        == base_url("http://strata.internal:7411/")
        == "http://strata.internal:7411"
    )


@pytest.mark.parametrize("case", ["default", "env", "config", "explicit"])
def test_the_hooks_find_the_data_dir_the_settings_find(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(tmp_path / "share")}
    for name, value in environ.items():  # the settings module reads these from the process's environment
        monkeypatch.setenv(name, value)
    explicit = None
    if case == "env":
        environ["STRATA_DATA_DIR"] = str(tmp_path / "from-env")
    elif case == "config":
        (tmp_path / "cfg" / "strata").mkdir(parents=True)
        (tmp_path / "cfg" / "strata" / "config.toml").write_text(f'[strata]\ndata_dir = "{tmp_path / "from-config"}"\n')
    elif case == "explicit":
        explicit = tmp_path / "given"
    expected = load_settings(environ=environ, data_dir=explicit).data_dir
    assert hooks.data_dir_of(explicit, None, environ) == expected


def test_a_text_names_the_repositorys_files_by_path_module_or_a_foreign_traceback(tmp_path: Path) -> None:
    for path in ("sympy/core/basic.py", "sympy/printing/__init__.py", "setup.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).touch()
    assert hook_cues.repo_file("sympy/core/basic.py", tmp_path) == "sympy/core/basic.py"
    assert hook_cues.repo_file("/home/someone/src/sympy/sympy/core/basic.py", tmp_path) == "sympy/core/basic.py"
    assert hook_cues.repo_file("sympy.core.basic.Basic.subs", tmp_path) == "sympy/core/basic.py"
    assert hook_cues.repo_file("sympy.printing", tmp_path) == "sympy/printing/__init__.py"
    assert hook_cues.repo_file("numpy.core.numeric", tmp_path) is None  # not this repository's package
    assert hook_cues.repo_file("other/basic.py", tmp_path) is None
    prompt = hook_cues.prompt_moment(
        {
            "prompt": "Basic.subs fails, see sympy.core.basic and the frame\n"
            '  File "/usr/lib/python3/site-packages/sympy/core/basic.py", line 9'
        },
        tmp_path,
    )
    assert prompt is not None and prompt.paths == ("sympy/core/basic.py",)


def test_the_transcript_says_which_reads_the_session_made_and_rated(tmp_path: Path) -> None:
    """Claude Code's transcript (JSON lines): the read ids of the Strata tool results, less those a feedback
    call cited, are what the stop hook names for a session whose store is a server."""
    rated, unrated = "a" * 32, "b" * 32
    lines = [
        {
            "type": "assistant",
            "message": {"content": [{"type": "tool_use", "name": "mcp__strata__read", "input": {"query": "x"}}]},
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "content": [
                            {"type": "text", "text": json.dumps({"ok": True, "read_id": rated, "results": []})}
                        ],
                    }
                ]
            },
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "content": [
                            {"type": "text", "text": json.dumps({"ok": True, "read_id": unrated, "results": []})}
                        ],
                    }
                ]
            },
        },
        {
            "type": "assistant",
            "message": {
                "content": [
                    {
                        "type": "tool_use",
                        "name": "mcp__strata__feedback",
                        "input": {"repo_id": "acme/api", "read_ids": [rated]},
                    }
                ]
            },
        },
    ]
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    seen, cited = hooks.transcript_reads(str(transcript))
    assert seen == [unrated] and cited == {rated}
    assert hooks.transcript_reads(str(tmp_path / "missing.jsonl")) == ([], set())


def test_a_codex_rollout_shows_its_reads_and_the_feedback_that_rated_them(tmp_path: Path) -> None:
    """A Codex rollout (the lines Codex 0.169 writes as an MCP call completes, as in
    tests/data/codex_rollout.jsonl): a read's result shows its read id; a completed `feedback` call's
    arguments cite one, a failed one cites nothing."""
    rated, unrated, failed = "a" * 32, "b" * 32, "c" * 32

    def completed(tool: str, arguments: dict, status: str = "completed", result: dict | None = None) -> dict:
        item = {"type": "McpToolCall", "id": "call_1", "server": "strata", "tool": tool, "arguments": arguments}
        item |= {"status": status, "result": result or {"content": []}}
        return {
            "timestamp": "2026-11-29T16:37:30.000Z",
            "type": "event_msg",
            "payload": {"type": "item_completed", "item": item},
        }

    def read(read_id: str) -> dict:
        text = json.dumps({"ok": True, "read_id": read_id, "results": []})
        return completed(
            "read", {"repo_id": "acme/api", "query": "q"}, result={"content": [{"type": "text", "text": text}]}
        )

    lines = [
        {"timestamp": "2026-11-29T16:37:29.000Z", "type": "session_meta", "payload": {"id": "s", "cwd": str(tmp_path)}},
        read(rated),
        read(unrated),
        read(failed),
        completed("feedback", {"repo_id": "acme/api", "read_ids": [rated], "used": []}),
        completed("feedback", {"repo_id": "acme/api", "read_ids": [failed], "used": []}, status="failed"),
    ]
    rollout = tmp_path / "rollout-2026-11-29T16-37-29-s.jsonl"
    rollout.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    seen, cited = hooks.transcript_reads(str(rollout))
    assert seen == [unrated, failed] and cited == {rated}


@pytest.mark.parametrize("case", ["default", "env", "config", "env over config", "explicit config"])
def test_the_hooks_find_the_recall_deadline_the_settings_find(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))  # the settings module reads it from the process
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    default_file, explicit = tmp_path / "cfg" / "strata" / "config.toml", None
    default_file.parent.mkdir(parents=True)
    if case in ("config", "env over config"):
        default_file.write_text("[strata]\nhook_recall_deadline_seconds = 7\n")
    if case in ("env", "env over config"):
        environ["STRATA_HOOK_RECALL_DEADLINE_SECONDS"] = "4.5"
    if case == "explicit config":
        explicit = tmp_path / "other.toml"
        explicit.write_text("[strata]\nhook_recall_deadline_seconds = 12.5\n")
    expected = load_settings(config_file=explicit, environ=environ).hook_recall_deadline_seconds
    assert hooks.recall_deadline(explicit, environ) == (expected, None)
    assert expected == {"default": 2.0, "env": 4.5, "config": 7.0, "env over config": 4.5}.get(case, 12.5)


@pytest.mark.parametrize("value", ["soon", "0", "-1", "61", "nan", "inf", ""])
def test_a_recall_deadline_the_settings_refuse_gives_the_hooks_the_default_and_a_reason(
    tmp_path: Path, value: str
) -> None:
    environ = {"XDG_CONFIG_HOME": str(tmp_path), "STRATA_HOOK_RECALL_DEADLINE_SECONDS": value}
    with pytest.raises(InvalidInput):
        load_settings(environ=environ)
    seconds, why = hooks.recall_deadline(None, environ)
    assert seconds == hooks.RECALL_DEADLINE_S and why and "STRATA_HOOK_RECALL_DEADLINE_SECONDS" in why


def test_a_config_file_a_hook_cannot_use_gives_the_default(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    for text, reason in (
        ("[strata]\nhook_recall_deadline_seconds = true\n", "hook_recall_deadline_seconds in"),
        ("[strata\nthis is no toml", "cannot read"),
        ("", None),
        ("[strata]\nport = 1\n", None),
    ):
        config.write_text(text)
        seconds, why = hooks.recall_deadline(config, {})
        assert seconds == hooks.RECALL_DEADLINE_S and (why is None if reason is None else reason in str(why)), why
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it would block: not read
    assert hooks.recall_deadline(fifo, {}) == (hooks.RECALL_DEADLINE_S, None)


@pytest.mark.parametrize(
    ("env", "config", "learns"),
    [
        (None, None, True),
        ("false", None, False),
        ("0", None, False),
        ("yes", None, True),
        (None, "false", False),
        ("true", "false", True),
    ],
)
def test_the_stop_hook_finds_hook_learn_on_stop_as_the_settings_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str | None, config: str | None, learns: bool
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    explicit = None
    if config is not None:
        explicit = tmp_path / "config.toml"
        explicit.write_text(f"[strata]\nhook_learn_on_stop = {config}\n")
    if env is not None:
        environ["STRATA_HOOK_LEARN_ON_STOP"] = env
    assert load_settings(config_file=explicit, environ=environ).hook_learn_on_stop is learns
    assert hooks.learn_on_stop(explicit, environ) is learns
