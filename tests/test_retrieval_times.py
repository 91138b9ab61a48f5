"""The time bounds of a search (since, until) and of an answer (as_of, valid_at): every ISO
8601 instant is read in the store's text form, whose text order is time order, or refused by
name (a hunt over retrieval)."""

from __future__ import annotations

import pytest

import recuerdo
from recuerdo.core.clock import parse_iso, parse_time


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("0999-01-01", "0999-01-01T00:00:00.000000Z"),
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000Z"),
        ("0500-06-30T23:00:00-02:00", "0500-07-01T01:00:00.000000Z"),
        ("2023-08-19T10:00:00+02:00", "2023-08-19T08:00:00.000000Z"),
    ],
)
def test_an_instant_keeps_four_digits_of_year(given: str, stored: str) -> None:
    """Text order is time order only with four digits: '999-...' sorted after '2023-...'."""
    assert parse_time(given, "since") == stored
    assert parse_time(parse_iso(stored).isoformat(), "since") == stored


def _ids(memory: recuerdo.Memory, **bounds: str) -> list[int]:
    reply = memory.search("harbour", stages=["lexical"], **bounds)
    return [hit["id"] for hit in reply["results"]]


def test_bounds_before_the_year_1000_order_as_times(memory: recuerdo.Memory) -> None:
    note = memory.save("Harbour", "The harbour opens at dawn.")["id"]
    memory._upkeep.drain()
    assert _ids(memory, since="0999-01-01") == [note]
    assert _ids(memory, until="0999-12-31") == []
    assert _ids(memory, since="0999-01-01", until="9998-01-01") == [note]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("until", "9999-12-31T23:00:00-05:00"),  # past the last instant once in UTC
        ("since", "0001-01-01T00:00:00+05:00"),  # before the first
    ],
)
def test_an_instant_out_of_range_in_utc_is_refused_by_name(
    memory: recuerdo.Memory, field: str, value: str
) -> None:
    memory.save("Harbour", "The harbour opens at dawn.")
    memory._upkeep.drain()
    audited = len(memory.audit(limit=1000))
    with pytest.raises(recuerdo.InvalidInput) as refused:
        memory.search("harbour", **{field: value})
    assert refused.value.code == "invalid_input" and field in str(refused.value)
    key = {"until": "valid_at", "since": "as_of"}[field]
    with pytest.raises(recuerdo.InvalidInput) as refused:
        memory.ask("harbour", **{key: value})
    assert refused.value.code == "invalid_input" and key in str(refused.value)
    assert len(memory.audit(limit=1000)) == audited  # nothing was run, nothing recorded
