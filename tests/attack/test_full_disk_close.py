"""A full disk at close: every acknowledged write is stored, and the index upkeep a close does
on the way out is work a later process redoes, so the close must not fail for it."""

from __future__ import annotations

import random
import string
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import recuerdo
from recuerdo.engine import check_memory

from .test_full_disk import small_disk

__all__ = ["small_disk"]


@pytest.fixture
def full_folder(small_disk: Path) -> Iterator[Path]:
    folder = small_disk / "close"
    folder.mkdir()
    yield folder
    subprocess.run(["rm", "-rf", str(folder)], check=True)


def _text(rng: random.Random, words: int) -> str:
    return " ".join(
        "".join(rng.choice(string.ascii_lowercase) for _ in range(7)) for _ in range(words)
    )


def test_a_close_on_a_full_disk_keeps_every_acknowledged_write_and_does_not_fail(
    full_folder: Path,
) -> None:
    rng = random.Random(3)
    acknowledged: dict[str, str] = {}
    refusals: list[str] = []
    memory = recuerdo.open("m", base_dir=full_folder, embedder="none")
    for i in range(400):
        key, text = f"k{i % 20}", _text(rng, 400)
        try:
            memory.save("T", text, key=key)
            acknowledged[key] = text
        except recuerdo.RecuerdoError as refused:
            refusals.append(refused.code)
        if len(refusals) > 20:
            break
    assert acknowledged and set(refusals) == {"storage_full"}
    memory.close()  # raised storage_full: the close's own index upkeep found no room
    assert check_memory("m", base_dir=full_folder)["ok"]
    with recuerdo.open("m", base_dir=full_folder, embedder="none", create=False) as reopened:
        stored = {n["key"]: n["id"] for n in reopened.list_notes(limit=100)["notes"]}
        for key, text in acknowledged.items():
            assert reopened.get(stored[key])["content"] == text
