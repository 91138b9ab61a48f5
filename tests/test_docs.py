"""Generated documentation stays in step with the code."""

from __future__ import annotations

from pathlib import Path

from recuerdo.doors import reference
from recuerdo.verbs import VERBS

ROOT = Path(__file__).resolve().parent.parent


def test_cli_reference_is_current() -> None:
    current = (ROOT / reference.TARGET).read_text()
    assert current == reference.render(), "docs/cli.md is stale: run `make docs`"


def test_every_verb_is_documented() -> None:
    text = (ROOT / reference.TARGET).read_text()
    for verb in VERBS:
        assert f"### {verb.name} ({verb.mode})" in text
