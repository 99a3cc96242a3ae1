"""The wheel installs one import package, strata_recall, whose subpackages are the repository's layer
folders: every folder with Python modules is listed in pyproject.toml, mapped to itself."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("domain", "interface", "projections", "schemas", "workers")


def test_every_package_folder_is_installed_under_strata_recall() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = sorted(
        str(init.parent.relative_to(ROOT)) for layer in LAYERS for init in (ROOT / layer).rglob("__init__.py")
    )
    expected = {"strata_recall." + folder.replace("/", "."): folder for folder in folders}
    assert sorted(setuptools["packages"]) == sorted(expected)
    assert setuptools["package-dir"] == expected


def test_the_command_and_the_data_files_point_into_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["scripts"]["strata"] == "strata_recall.interface.cli.launch:main"
    data = project["tool"]["setuptools"]["package-data"]
    for package, patterns in data.items():
        folder = ROOT / project["tool"]["setuptools"]["package-dir"][package]
        for pattern in patterns:
            assert list(folder.glob(pattern)), f"{package}: nothing matches {pattern}"


def test_the_import_map_links_each_layer_for_static_tools() -> None:
    """mypy and pyright resolve `strata_recall.<layer>` through .import-map/strata_recall/<layer>, a link to
    the layer's folder: one per installed top-level layer, nothing else."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    top = sorted(folder for folder in setuptools["package-dir"].values() if "/" not in folder)
    links = ROOT / ".import-map" / "strata_recall"
    assert sorted(p.name for p in links.iterdir()) == top
    for name in top:
        assert (links / name).is_symlink() and (links / name).resolve() == (ROOT / name).resolve()
