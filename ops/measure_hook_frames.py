"""What one hook injection costs as the hooks render it now: tokens per injection and memories that fit
its budget, on a fixed fixture, so two versions of the rendering compare exactly (ops/eval_session.py
measures whole sessions, where a loaded machine's timeouts move the figures).

Usage: python ops/measure_hook_frames.py [--data FILE] [--global-every 3]
Another checkout's rendering: PYTHONPATH=<checkout>/.import-map python ops/measure_hook_frames.py

The fixture: the coding-dev tasks (../shared/data/coding-dev), each written as ops/eval_coding.py writes
it (a problem: the statement's first 2,000 characters; a solution naming what the gold patch edited),
offered five at a time as a server's read offers them (a problem, its solution, the next problem, ...),
every `--global-every`-th memory a global one, with a read id and memory ids of real length; rendered
for a prompt (its 400-token budget), an edit of the first file the patch touches and a failure (200
each). Printed per moment: memories shown per injection (mean), tokens per injection counted with the
embedding model's tokenizer (median, p90, max; what ops/eval_session.py counts) and the hook's own
estimate (max), and how many injections the real count puts over the budget.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "ops")]

from eval_coding import DEFAULT_DATA, by_repo

from strata_recall.interface.agents import hooks
from strata_recall.interface.agents.hook_cues import Moment
from strata_recall.interface.agents.hook_recall import Item
from strata_recall.projections.tokens import TokenCounter

MOMENTS = (("prompt", 400), ("edit", 200), ("failure", 200))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--global-every", type=int, default=3)
    args = parser.parse_args()
    import json

    tasks = [t for ts in by_repo(json.loads(args.data.read_text())).values() for t in ts]
    items: list[Item] = []
    for n, task in enumerate(tasks):
        problem = str(uuid.uuid5(uuid.NAMESPACE_URL, f"problem-{n}"))
        for kind, text, memory_id in (
            ("problem", task.problem, problem),
            ("solution", task.solution, str(uuid.uuid5(uuid.NAMESPACE_URL, f"solution-{n}"))),
        ):
            shared = len(items) % args.global_every == args.global_every - 1
            problem_id = problem if kind == "solution" else None
            items.append(Item(memory_id, kind, text, problem_id=problem_id, scope="global" if shared else "repo"))
    counter = TokenCounter()
    print(f"{hooks.__file__}: {len(items)} memories, {len(items) // 5} injections per moment")
    for kind, budget in MOMENTS:
        shown, real, estimated = [], [], []
        for start in range(0, len(items) - 4, 5):
            task = tasks[start // 2]
            moment = Moment(kind, task.problem[:200], (min(task.files),) if task.files else ())
            text, memories = hooks.render(items[start : start + 5], moment, "acme/api", uuid.uuid4().hex, budget)
            shown.append(len(memories))
            if text:
                real.append(counter.count(text))
                estimated.append(hooks.estimate_tokens(text))
        real.sort()
        print(
            f"{kind:8} budget {budget}: memories shown {statistics.mean(shown):.2f} per injection "
            f"(none {shown.count(0)}, one {shown.count(1)}, more {sum(n > 1 for n in shown)}); tokens "
            f"median {statistics.median(real):.0f}, p90 {real[int(0.9 * (len(real) - 1))]}, max {real[-1]} "
            f"(estimate max {max(estimated)}); over budget {sum(r > budget for r in real)} of {len(real)}"
        )


if __name__ == "__main__":
    main()
