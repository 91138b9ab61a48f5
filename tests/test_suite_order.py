"""The order the suite's files are handed to the workers (``conftest.SLOWEST_FIRST``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from .conftest import SLOWEST_FIRST, pytest_collection_modifyitems

TESTS = Path(__file__).parent


@dataclass
class _Item:
    path: Path
    name: str


def test_every_file_listed_exists_once() -> None:
    assert sorted(set(SLOWEST_FIRST)) == sorted(SLOWEST_FIRST)
    missing = [name for name in SLOWEST_FIRST if not (TESTS / name).is_file()]
    assert not missing, f"listed to start first but not in tests/: {missing}"


def test_the_listed_files_start_first_and_each_file_stays_in_order() -> None:
    later, first, second = (
        TESTS / "test_notes.py",
        TESTS / SLOWEST_FIRST[0],
        TESTS / SLOWEST_FIRST[1],
    )
    items = [
        _Item(later, "a"),
        _Item(later, "b"),
        _Item(second, "c"),
        _Item(first, "d"),
        _Item(first, "e"),
        _Item(TESTS / "test_entries.py", "f"),
    ]
    pytest_collection_modifyitems(cast(Any, items))
    assert [item.name for item in items] == ["d", "e", "c", "a", "b", "f"]
