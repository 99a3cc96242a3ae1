"""Each tuning knob is defined once and reaches what it tunes through the settings: the recall engine's
(projections/tuning.py, as the recall_* settings) and the hooks' (resolved by the hooks themselves, which
run on the standard library alone, with the settings' defaults)."""

from __future__ import annotations

import re
from pathlib import Path

from strata_recall.interface.agents import hooks
from strata_recall.interface.app.settings import Settings, load_settings
from strata_recall.projections.tuning import TUNED, RecallConfig
from strata_recall.schemas import read as read_schema
from strata_recall.schemas.defaults import DEFAULT_BAR, DEFAULT_LIMIT, TEXT_CHARS

ROOT = Path(__file__).resolve().parents[2]


def test_every_knob_of_the_engine_is_a_setting_with_the_engines_default() -> None:
    assert load_settings(environ={}, config_file=None).recall_config() == RecallConfig()
    for name in TUNED:
        assert f"recall_{name}" in Settings.model_fields, name


def test_the_settings_tune_the_engine(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[strata]\nrecall_overfetch = 40\n[strata.recall_threshold]\nambient = 0.3\n")
    environ = {"STRATA_RECALL_BAR": "0.35", "STRATA_RECALL_RELATED_DECAY": "0.4, 0.1"}
    tuned = load_settings(config_file=config, environ=environ).recall_config()
    assert (tuned.overfetch, tuned.bar, tuned.related_decay) == (40, 0.35, (0.4, 0.1))
    assert tuned.threshold == {"targeted": RecallConfig().threshold["targeted"], "ambient": 0.3}


def test_every_knob_of_the_engine_is_documented_with_its_default() -> None:
    text = (ROOT / "docs" / "CONFIGURATION.md").read_text(encoding="utf-8")
    for name in TUNED:
        row = re.search(rf"^\| `recall_{name}` \| `STRATA_RECALL_{name.upper()}` \| `([^`]*)` \|", text, re.M)
        assert row is not None, name
        value = getattr(RecallConfig(), name)
        if isinstance(value, float):
            assert float(row.group(1).split()[0]) == round(value, 4), name


def test_the_hooks_resolve_their_knobs_with_the_settings_defaults(tmp_path: Path) -> None:
    nothing = {"XDG_CONFIG_HOME": str(tmp_path)}  # no config file, no STRATA_ variable
    defaults = Settings()
    assert hooks.recall_deadline(None, nothing) == (defaults.hook_recall_deadline_seconds, None)
    assert defaults.hook_recall_deadline_seconds == hooks.RECALL_DEADLINE_S
    assert hooks.learn_on_stop(None, nothing) is defaults.hook_learn_on_stop
    bound = next(m.le for m in Settings.model_fields["hook_recall_deadline_seconds"].metadata if hasattr(m, "le"))
    assert bound == hooks.MAX_DEADLINE_S


def test_the_reads_defaults_have_one_home() -> None:
    assert hooks.RELEVANCE_BAR is DEFAULT_BAR and RecallConfig().bar is DEFAULT_BAR
    assert read_schema.DEFAULT_BAR is DEFAULT_BAR and read_schema.TEXT_CHARS is TEXT_CHARS
    assert read_schema.ReadRequest.model_fields["limit"].default is DEFAULT_LIMIT
    literals = re.compile(r"^\s*(DEFAULT_BAR|RELEVANCE_BAR|DEFAULT_LIMIT)\s*=\s*[0-9]|^TEXT_CHARS\s*=\s*320", re.M)
    for folder in ("projections", "interface", "schemas", "workers", "domain"):
        for path in (ROOT / folder).rglob("*.py"):
            if path != ROOT / "schemas" / "defaults.py":
                found = literals.findall(path.read_text(encoding="utf-8"))
                assert not found, f"{path.relative_to(ROOT)} defines {found} again: schemas/defaults.py holds them"
