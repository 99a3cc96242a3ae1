"""The memory index's topic names, measured: per repository of the coding corpus, its tasks' problem
statements (first 600 characters each) as memories, the topics `find_topics` names for them.

Usage: python ops/eval_topics.py [--data FILE] [--baseline-ref REV]

Printed per repository: the topic names; then, over all repositories, how many topics, how many are verb
forms (`raising`, `running`, `ignored`: a word ending in -ing or -ed), and how many name a word the
repository's gold patches contain (a name the code uses). With --baseline-ref, the same for
projections/memory_index.py at that revision, in the same run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "coding-dev" / "swebench_verified_dev.json"
VERB_FORM = re.compile(r"[a-z]{3,}(?:ing|ed)")


def module_at(ref: str | None) -> ModuleType:
    if ref is None:
        from strata_recall.projections import memory_index

        return memory_index
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{ref}:projections/memory_index.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "memory_index_baseline.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("memory_index_baseline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def measure(module: ModuleType, tasks: list[dict], label: str) -> None:
    by_repo: dict[str, list[dict]] = {}
    for task in tasks:
        by_repo.setdefault(task["repo"], []).append(task)
    names: list[str] = []
    in_code = 0
    print(f"== {label}")
    for repo, group in sorted(by_repo.items()):
        topics, _ = module.find_topics([("problem", t["problem_statement"][:600]) for t in group])
        found = [topic.topic for topic in topics]
        code = " ".join(t["golden_patch"] for t in group).lower()
        in_code += sum(1 for name in found if re.search(r"\b" + re.escape(name) + r"\b", code))
        names += found
        print(f"{repo} ({len(group)} tasks): {', '.join(found)}")
    verbs = sum(1 for name in names if VERB_FORM.fullmatch(name))
    print(
        f"topics {len(names)}, verb forms {verbs}, named in the repo's gold patches {in_code} ({in_code / len(names):.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--baseline-ref", default=None)
    args = parser.parse_args()
    if not args.data.exists():
        sys.exit(f"no data at {args.data}: give --data")
    tasks = json.loads(args.data.read_text())
    if args.baseline_ref:
        measure(module_at(args.baseline_ref), tasks, f"baseline {args.baseline_ref}")
    measure(module_at(None), tasks, "now")


if __name__ == "__main__":
    main()
