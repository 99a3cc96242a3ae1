"""Repo ids recorded before they were normalised: requests can no longer spell an NFD id (the API makes
it NFC), so such memories stay in the log but out of reach until the log is migrated with
ops/migrate_repo_ids.py (export, rewrite, restore into a fresh store). Real SQLite files."""

from __future__ import annotations

import subprocess
import sys
import unicodedata
from pathlib import Path

from ops.migrate_repo_ids import migrate
from strata_recall.domain.archive import export_lines, restore
from strata_recall.domain.commands import NewMemory
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings

COMPOSED = "acme/café"
DECOMPOSED = unicodedata.normalize("NFD", COMPOSED)
ZERO_WIDTH = "acme/a\u200bpi"
ROOT = Path(__file__).resolve().parents[2]


def old_log(strata: Strata) -> None:
    """Events as a version before normalisation could record them (the domain takes ids as given)."""
    for repo_id, text in (
        (DECOMPOSED, "The café service listens on 8080"),
        ("acme/api", "Deploys need the VPN"),
        (ZERO_WIDTH, "A look-alike repo's memory"),
    ):
        strata.log.write(NewMemory(repo_id=repo_id, text=text, kind="fact", scope="repo", confidence=0.8))


def count(strata: Strata, repo_id: str) -> str:
    strata.catch_up()
    return strata.api().index({"repo_id": repo_id}).text


def test_an_nfd_id_is_out_of_reach_until_migrated(strata: Strata, tmp_path: Path) -> None:
    old_log(strata)
    assert "1 memories" not in count(strata, DECOMPOSED)  # the request is normalised: it names the NFC repo
    exported = list(export_lines(strata.log))

    _, report, problems = migrate(exported, {"acme/api": "github.com/acme/api"})
    assert report[DECOMPOSED] == (1, COMPOSED) and report["acme/api"] == (1, "github.com/acme/api")
    assert len(problems) == 1 and "U+200B ZERO WIDTH SPACE" in problems[0]

    lines, report, problems = migrate(exported, {"acme/api": "github.com/acme/api", ZERO_WIDTH: "acme/api-old"})
    assert problems == [] and report[ZERO_WIDTH] == (1, "acme/api-old")
    fresh = build(load_settings(environ={}, data_dir=tmp_path / "migrated"))
    try:
        assert restore(fresh.log, lines) == len(exported)
        assert f"Memory of {COMPOSED}: 1 memories" in count(fresh, COMPOSED)
        assert "Memory of github.com/acme/api: 1 memories" in count(fresh, "github.com/acme/api")
        assert "Memory of acme/api-old: 1 memories" in count(fresh, "acme/api-old")
    finally:
        fresh.close()


def test_the_script_writes_nothing_while_an_id_is_refused(strata: Strata, tmp_path: Path) -> None:
    old_log(strata)
    exported = tmp_path / "old.jsonl"
    exported.write_bytes(b"".join(export_lines(strata.log)))
    output = tmp_path / "new.jsonl"
    script = [sys.executable, str(ROOT / "ops" / "migrate_repo_ids.py"), str(exported), "-o", str(output)]
    refused = subprocess.run(script, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "U+200B ZERO WIDTH SPACE" in refused.stderr and not output.exists()
    done = subprocess.run(
        [*script, "--rename", f"{ZERO_WIDTH}=acme/api-old"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert f"{DECOMPOSED!r}: 1 events, -> {COMPOSED!r}" in done.stdout and output.exists()
