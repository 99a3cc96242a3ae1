"""interface/app/lazy.py: a module's stand-in imports it at the first attribute access, not before."""

from __future__ import annotations

import sys

import pytest

from strata_recall.interface.app import lazy

NAME = "wsgiref.simple_server"  # a standard module nothing of Strata imports


def test_the_module_is_imported_at_its_first_attribute_access() -> None:
    saved = {k: sys.modules.pop(k) for k in list(sys.modules) if k == NAME}
    try:
        stand_in = lazy.module(NAME)
        assert NAME not in sys.modules and "not loaded yet" in repr(stand_in)
        assert stand_in.WSGIServer.__name__ == "WSGIServer"
        assert NAME in sys.modules and "(loaded)" in repr(stand_in)
        assert stand_in.make_server is sys.modules[NAME].make_server
        assert lazy.module(NAME) is sys.modules[NAME]  # imported already: the module itself
    finally:
        sys.modules.pop(NAME, None)
        sys.modules.update(saved)


def test_a_name_the_module_lacks_is_an_attribute_error() -> None:
    stand_in = lazy.module("strata_recall.interface.app.workspace")
    with pytest.raises(AttributeError):
        stand_in.no_such_name  # noqa: B018


def test_without_hides_a_package_not_imported_yet_and_only_inside() -> None:
    saved = {k: sys.modules.pop(k) for k in list(sys.modules) if k == NAME or k.startswith("wsgiref")}
    try:
        with lazy.without("wsgiref"), pytest.raises(ImportError):
            __import__(NAME)  # what a library's `try: import rich / except ImportError` meets
        assert "wsgiref" not in sys.modules  # no trace left: it imports as usual afterwards
        assert __import__(NAME) is sys.modules["wsgiref"]
        with lazy.without("wsgiref"):  # imported already: left as it is
            assert __import__(NAME) is sys.modules["wsgiref"]
        assert sys.modules["wsgiref"] is not None
    finally:
        for k in [k for k in sys.modules if k.startswith("wsgiref")]:
            del sys.modules[k]
        sys.modules.update(saved)


TOP = "colorsys"  # a top-level standard module, as asyncio is for structlog (interface/cli/launch.py)


def test_deferred_hands_out_a_stand_in_that_imports_the_module_at_its_first_use() -> None:
    saved = sys.modules.pop(TOP, None)
    try:
        with lazy.deferred(TOP):
            stand_in = __import__(TOP)  # what a library's `import colorsys` gets inside the block
            assert sys.modules[TOP] is stand_in and "not loaded yet" in repr(stand_in)
        assert TOP not in sys.modules  # still not imported, and nothing else will get the stand-in
        assert stand_in.rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)  # its first use imports it
        assert stand_in.hsv_to_rgb is sys.modules[TOP].hsv_to_rgb
        assert __import__(TOP) is sys.modules[TOP] is not stand_in  # later imports: the real module
    finally:
        sys.modules.pop(TOP, None)
        if saved is not None:
            sys.modules[TOP] = saved


def test_a_stand_in_used_inside_the_deferred_block_imports_the_module() -> None:
    saved = sys.modules.pop(TOP, None)
    try:
        with lazy.deferred(TOP):
            stand_in = __import__(TOP)
            assert stand_in.rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)
            assert sys.modules[TOP] is not stand_in
        assert sys.modules[TOP].rgb_to_hsv is stand_in.rgb_to_hsv  # the real module, left as any import leaves it
    finally:
        sys.modules.pop(TOP, None)
        if saved is not None:
            sys.modules[TOP] = saved
