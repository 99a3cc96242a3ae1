"""Modules imported on first use: how the composition root and the command API stand on the read path,
the projections and the scheduler without importing them for a command that never uses them (`strata
import` or `write` need neither numpy, nor the embedder, nor the scheduler: ops/bench_write.py
--import-split, the start).

The one way to write it, so type checkers and the floors' check (tests/unit/test_layers.py, which reads
every import, TYPE_CHECKING ones included) see the real module:

    if TYPE_CHECKING:
        from strata_recall.projections import recall
    else:
        recall = lazy.module("strata_recall.projections.recall")

The stand-in imports the module as an import statement would (__import__: the import system's lock, so
two threads asking at once import it once; `python -X importtime` lists it) at its first attribute
access, then forwards every attribute to it.
Nothing is put into sys.modules in the module's name until then.

`without(names)` is the other half: a library that imports an optional package at its own import when
it is installed (structlog imports rich, for tracebacks Strata never renders: interface/app/logs.py) is
imported as if the package were absent.

`deferred(names)` is a third: a library that imports a module at its own import only to call it inside
functions a command may never call (structlog.stdlib and structlog._native import asyncio for their
async log methods, and asyncio imports ssl with it: ~0.01 s) is handed the module's stand-in instead,
so the module is imported when the library first uses it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any


class LazyModule(ModuleType):
    """A module's stand-in until something uses it (see the module's docstring)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._lazy_target: ModuleType | None = None

    def _load(self) -> ModuleType:
        target = self._lazy_target
        if target is None:
            if sys.modules.get(self.__name__) is self:  # handed out by `deferred`, used inside its block
                del sys.modules[self.__name__]
            __import__(self.__name__)  # the import statement's way, which -X importtime reports too
            target = self._lazy_target = sys.modules[self.__name__]
        return target

    def __getattr__(self, attr: str) -> Any:  # only names the stand-in does not hold itself
        return getattr(self._load(), attr)

    def __repr__(self) -> str:
        state = "loaded" if self._lazy_target is not None else "not loaded yet"
        return f"<lazy module {self.__name__!r} ({state})>"


def module(name: str) -> ModuleType:
    """The module `name` (dotted, absolute), imported at its first attribute access; the module itself
    when it is imported already."""
    return sys.modules.get(name) or LazyModule(name)


@contextmanager
def without(*names: str) -> Iterator[None]:
    """Imports in this block see the packages `names` (top-level, not imported yet) as not installed:
    `import rich` raises ImportError, as `try: import rich / except ImportError` expects of a missing
    package. Afterwards they import as usual (sys.modules has no entry for them either way)."""
    hidden = [name for name in names if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # the import system's "known to be absent"
    try:
        yield
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


@contextmanager
def deferred(*names: str) -> Iterator[None]:
    """Imports in this block that name one of the modules `names` (not imported yet) get its stand-in
    (`module`), which imports the module at its first attribute access. Afterwards sys.modules has no
    entry for them: anything else imports the real module as usual, and the stand-ins the block handed
    out forward to that one. Only for a module its importers use inside functions, never at their own
    import (an attribute read there imports it at once, which is still correct, only not deferred)."""
    stand_ins = {name: LazyModule(name) for name in names if name not in sys.modules}
    sys.modules.update(stand_ins)
    try:
        yield
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]


def import_structlog() -> None:
    """Import structlog as every one-shot process of Strata does, first and once: with rich hidden
    (`without`) and asyncio deferred (`deferred`). When rich is installed structlog imports it at its own
    import (~0.08 s of CPU) for the console renderer's default tracebacks and the locals' reprs, neither
    of which Strata's logs use (interface/app/logs.py renders plain tracebacks), so every log line reads
    as before; structlog.stdlib imports asyncio for its async log methods alone, which no one-shot
    process calls (and asyncio imports ssl with it). The servers import asyncio themselves, and
    structlog's async methods import it on their first call. Nothing when structlog is imported already.

    Callers: the CLI before its commands (interface/cli/launch.py), and a hook before the local store's
    modules (interface/agents/hook_recall.py, hooks.py), whose projections import structlog."""
    if "structlog" in sys.modules:
        return
    with without("rich"), deferred("asyncio"):
        import structlog  # noqa: F401
