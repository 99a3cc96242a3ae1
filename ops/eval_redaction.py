"""Secret redaction quality and cost: recall per family, precision, linear time, cost per write.

Usage: python ops/eval_redaction.py [--baseline-ref main] [--rounds 5] [--writes 5000] [--list]

- recall: every format in domain/secret_formats.py, as fake credentials generated at run time, in every
  context of tests/secret_corpus.py (prose, shell, config, JSON, stack trace); a format counts as redacted
  when no context lets it through;
- precision: the benign lines of tests/data/benign_lines.txt that come through unchanged;
- linear time: the worst ~100 KB adversarial input, per KB, next to ordinary write texts per KB;
- cost: sanitise per ordinary write text (ops/workload.py), against the sanitiser of `--baseline-ref`
  (loaded from `git show <ref>:domain/sanitise.py`) measured in the same run, rounds interleaved.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "ops"))

import revision
from workload import realistic_lines

from strata_recall.domain.sanitise import sanitise
from strata_recall.domain.secret_formats import FAMILIES, NOT_COVERED, all_formats
from tests.secret_corpus import Case, adversarial_inputs, benign_lines, recall_cases

Sanitiser = Callable[[str], object]


def load_baseline(ref: str, tmp: Path) -> ModuleType | None:
    """The sanitiser as it is at `ref`, with the rest of that revision's package (its format table
    and value rules), imported in this process beside this checkout's (ops/revision.py); None if git
    cannot show `ref`."""
    try:
        tree = revision.checkout(ref, tmp)
    except (OSError, subprocess.CalledProcessError):
        return None
    return revision.import_beside(tree, "strata_recall.domain.sanitise")


def redacted(fn: Sanitiser, case: Case, named: bool) -> bool:
    """The secret is gone (and, when `named`, its marker names the format's kind: the baseline's names
    differ, so it is only asked to remove the secret)."""
    text = fn(case.text).text  # type: ignore[attr-defined]
    return case.secret not in text and (not named or f"[REDACTED:{case.kind}]" in text)


def recall(fn: Sanitiser, cases: list[Case], named: bool = True) -> tuple[dict[str, list[int]], list[Case]]:
    """Per family: [formats fully redacted, formats, cases redacted, cases]; and the missed cases."""
    by_format: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        by_format[case.format].append(case)
    table: dict[str, list[int]] = {family: [0, 0, 0, 0] for family in FAMILIES}
    misses = []
    for group in by_format.values():
        hits = [redacted(fn, c, named) for c in group]
        row = table[group[0].family]
        row[0] += all(hits)
        row[1] += 1
        row[2] += sum(hits)
        row[3] += len(hits)
        misses += [c for c, hit in zip(group, hits, strict=True) if not hit]
    return table, misses


def precision(fn: Sanitiser, lines: list[str]) -> tuple[int, list[str]]:
    changed = [line for line in lines if fn(line).text != line]  # type: ignore[attr-defined]
    return len(lines) - len(changed), changed


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "n/a"


def write_texts(n: int) -> list[str]:
    """Every string a write sanitises: the text, the rationale, each evidence reference."""
    out = []
    for line in realistic_lines(n, seed=11):
        memory = json.loads(line)["memory"]
        out += [memory["text"], memory.get("rationale") or "", *memory.get("evidence_refs", [])]
    return out


def best_time(fn: Sanitiser, texts: list[str]) -> float:
    start = time.perf_counter()
    for text in texts:
        fn(text)
    return time.perf_counter() - start


def list_formats() -> None:
    by_family: dict[str, list[str]] = defaultdict(list)
    for fmt in all_formats():
        by_family[fmt.family].append(f"{fmt.provider}: {fmt.name}")
    for family in FAMILIES:
        print(f"{family} ({len(by_family[family])}): " + "; ".join(sorted(by_family[family])))
    print(f"not covered ({len(NOT_COVERED)}):")
    for item in NOT_COVERED:
        print(f"  {item.name} ({item.provider}): {item.reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-ref", default="main")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--writes", type=int, default=5000)
    parser.add_argument("--list", action="store_true", help="list the formats covered and not covered, and stop")
    args = parser.parse_args()
    if args.list:
        list_formats()
        return

    cases = recall_cases()
    lines = benign_lines()
    formats = all_formats()
    with tempfile.TemporaryDirectory() as tmp:
        baseline = load_baseline(args.baseline_ref, Path(tmp))
        old = baseline.sanitise if baseline else None

        print(
            f"secret redaction: {len(formats)} formats ({len(NOT_COVERED)} kinds deliberately not covered, "
            f"see domain/secret_formats.py), {len(cases)} recall cases, {len(lines)} benign lines"
        )
        table, misses = recall(sanitise, cases)
        old_table = recall(old, cases, named=False)[0] if old else None
        print(
            "recall per family: formats redacted in every context / formats tried (cases redacted / cases)"
            + (f"   [{args.baseline_ref}]" if old_table else "")
        )
        for family in FAMILIES:
            full, n, hit, total = table[family]
            line = f"  {family:17} {full:3}/{n:<3} = {pct(full, n):>7}   ({hit}/{total} cases)"
            if old_table:
                o = old_table[family]
                line += f"   [{o[0]}/{o[1]} = {pct(o[0], o[1])}]"
            print(line)
        full = sum(r[0] for r in table.values())
        hit, total = sum(r[2] for r in table.values()), sum(r[3] for r in table.values())
        print(
            f"recall: {full}/{len(formats)} formats = {pct(full, len(formats))}; "
            f"{hit}/{total} cases = {pct(hit, total)}"
        )
        if old_table:
            o_full = sum(r[0] for r in old_table.values())
            o_hit = sum(r[2] for r in old_table.values())
            print(
                f"  [{args.baseline_ref}] recall: {o_full}/{len(formats)} formats = {pct(o_full, len(formats))}; "
                f"{o_hit}/{total} cases = {pct(o_hit, total)}"
            )
        kept, changed = precision(sanitise, lines)
        print(f"precision: {kept}/{len(lines)} benign lines preserved = {pct(kept, len(lines))}")
        if old:
            o_kept = precision(old, lines)[0]
            print(f"  [{args.baseline_ref}] precision: {o_kept}/{len(lines)} = {pct(o_kept, len(lines))}")
        print("misses: " + ("none" if not misses and not changed else ""))
        for case in misses:
            print(f"  missed {case.format} in {case.context}: {case.text[:120]!r}")
        for line in changed:
            print(f"  changed benign line: {line[:120]!r} -> {sanitise(line).text[:120]!r}")

        texts = write_texts(args.writes)
        kb = sum(len(t) for t in texts) / 1024
        adversarial = adversarial_inputs(100_000)
        # The machine is shared and drifts: both sanitisers run on the same small chunks in turn, and each
        # chunk keeps its best time over the rounds.
        chunks = [texts[i : i + 500] for i in range(0, len(texts), 500)]
        new_best = [float("inf")] * len(chunks)
        old_best = [float("inf")] * len(chunks)
        worst: dict[str, float] = {}
        for _ in range(args.rounds):
            for i, chunk in enumerate(chunks):
                new_best[i] = min(new_best[i], best_time(sanitise, chunk))
                if old:
                    old_best[i] = min(old_best[i], best_time(old, chunk))
            for name, text in adversarial.items():
                worst[name] = min(worst.get(name, float("inf")), best_time(sanitise, [text]) / (len(text) / 1024))
        new_t, old_t = sum(new_best), sum(old_best)
        name = max(worst, key=worst.__getitem__)
        ordinary = new_t / kb
        print(
            f"linear time: worst of {len(adversarial)} adversarial 100 KB inputs {worst[name] * 1e6:.1f} us/KB "
            f"({name!r}); ordinary write text {ordinary * 1e6:.1f} us/KB "
            f"(worst adversarial / ordinary = {worst[name] / ordinary:.1f}x)"
        )
        line = (
            f"cost per ordinary write text ({len(texts)} texts, avg {kb * 1024 / len(texts):.0f} chars): "
            f"{new_t / len(texts) * 1e6:.2f} us"
        )
        if old:
            line += (
                f"; {args.baseline_ref}: {old_t / len(texts) * 1e6:.2f} us "
                f"(now / {args.baseline_ref} = {new_t / old_t:.2f}x)"
            )
        print(line)


if __name__ == "__main__":
    main()
