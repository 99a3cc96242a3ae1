"""Another git revision's code beside this one, for benchmarks that compare with it in the same run.

`checkout(ref, folder)` unpacks `git archive REF` into `folder/tree`; `import_paths(tree)` gives the
sys.path / PYTHONPATH entries under which `import strata_recall.<layer>` (and, for revisions from
before the layers were installed under strata_recall, `import <layer>`) finds that tree's code ahead
of the installed package: a folder `strata_recall/` whose entries link to the tree's layer folders,
then the tree itself.
"""

from __future__ import annotations

import compileall
import importlib
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("domain", "interface", "projections", "schemas", "workers")


def checkout(ref: str, folder: Path) -> Path:
    archive = folder / "revision.tar"
    with open(archive, "wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", ref], stdout=out, check=True)
    tree = folder / "tree"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    return compiled(tree)


def compiled(tree: Path) -> Path:
    """`tree` with its layers' bytecode written (for what is missing or stale), so that a fresh process
    runs the revision from .pyc files as an installed checkout does. With PYTHONDONTWRITEBYTECODE set,
    as it may be, a process never writes them: every run of an unpacked revision compiled all the
    modules it imports again (`strata --json import` of an empty file: ~0.12 s more CPU than the same
    code from bytecode), and the other side of a comparison paid for it."""
    for layer in LAYERS:
        if (tree / layer).is_dir():
            compileall.compile_dir(tree / layer, quiet=1)
    return tree


def import_paths(tree: Path) -> list[Path]:
    shim = tree.parent / "shim"
    package = shim / "strata_recall"
    package.mkdir(parents=True, exist_ok=True)
    for layer in LAYERS:
        link = package / layer
        if (tree / layer).is_dir() and not link.exists():
            link.symlink_to(tree / layer, target_is_directory=True)
    return [shim, tree]


def import_beside(tree: Path, module: str) -> ModuleType:
    """`module` (e.g. "strata_recall.projections.embedder") as it is in `tree`, imported in this process
    beside this checkout's own: the revision's modules stay reachable from the one returned, and this
    checkout's are back in sys.modules afterwards."""

    def ours(name: str) -> bool:
        return name.split(".")[0] in ("strata_recall", *LAYERS)

    saved_path, saved = list(sys.path), {k: m for k, m in sys.modules.items() if ours(k)}
    for name in saved:
        del sys.modules[name]
    sys.path[:0] = [str(p) for p in import_paths(tree)]
    try:
        return importlib.import_module(module)
    finally:
        sys.path[:] = saved_path
        for name in [k for k in sys.modules if ours(k)]:
            del sys.modules[name]
        sys.modules.update(saved)
