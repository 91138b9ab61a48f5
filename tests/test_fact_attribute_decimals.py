"""A fact's attributes keep a decimal's digits, as an entity's attributes do: through the store
(SQLite and PostgreSQL), an export and its import. They became floats (``values.plain``):
``1.80`` came back as ``1.8`` and ``12345678901234567890.123`` as ``1.2345678901234567e19``."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.core import exact

DIGITS = ["0.1", "1.80", "12345678901234567890.123", "-0.000", "2.5E-7", "6.02E+23"]


def fact_attributes(memory: recuerdo.Memory, scope: str = "user") -> list[dict[str, Any]]:
    found = memory.about("Ann", scope=scope, hops=1)
    return [item["attributes"] for item in found["items"] if item["kind"] == "fact"]


def export_all(memory: recuerdo.Memory, scope: str) -> list[dict[str, Any]]:
    records, cursor = [], None
    while True:
        page = memory.export(scope=scope, cursor=cursor, limit=256)
        records += page["records"]
        cursor = page["next"]
        if cursor is None:
            return records


def same(found: Any, given: Any) -> bool:
    """Equal, and spelled alike: a Decimal's digits, not only its value."""
    return exact.dumps(found, sort_keys=True) == exact.dumps(given, sort_keys=True)


@pytest.mark.parametrize("digits", DIGITS)
def test_a_facts_decimal_keeps_its_digits(memory: recuerdo.Memory, digits: str) -> None:
    given = {"weight": Decimal(digits), "more": {"list": [Decimal(digits), 1, "1.5"]}}
    memory.relate("Ann", "Acme", "works_at", attributes=given)
    [found] = fact_attributes(memory)
    assert same(found, given), found
    assert isinstance(found["weight"], Decimal) and isinstance(found["more"]["list"][2], str)


@pytest.mark.parametrize("digits", DIGITS)
def test_an_export_and_its_import_keep_a_facts_decimal(
    memory: recuerdo.Memory, digits: str
) -> None:
    given = {"weight": Decimal(digits)}
    memory.relate("Ann", "Acme", "works_at", attributes=given, scope="a")
    records = export_all(memory, "a")
    [fact] = [r for r in records if r["record"] == "fact"]
    assert same(fact["attributes"], given)
    # Through the JSON a file would hold, as the CLI writes and reads it.
    memory.import_records(exact.loads(exact.dumps(records)), scope="b")
    [found] = fact_attributes(memory, "b")
    assert same(found, given)
    again = memory.import_records(records, scope="b")
    assert again["imported"] == 0 and len(fact_attributes(memory, "b")) == 1


def test_a_python_float_comes_back_as_its_digits(memory: recuerdo.Memory) -> None:
    """A float is kept as Python writes it (``0.1``), as an entity's float is kept."""
    memory.relate("Ann", "Acme", "works_at", attributes={"share": 0.1})
    assert fact_attributes(memory) == [{"share": Decimal("0.1")}]


def test_other_digits_make_another_version(memory: recuerdo.Memory) -> None:
    """1.80 over 1.8 changes the fact, as it changes an entity's decimal; the same digits
    again change nothing."""
    memory.relate("Ann", "Acme", "works_at", attributes={"weight": Decimal("1.8")})
    memory.relate("Ann", "Acme", "works_at", attributes={"weight": Decimal("1.8")})
    assert [str(a["weight"]) for a in fact_attributes(memory)] == ["1.8"]
    memory.relate("Ann", "Acme", "works_at", attributes={"weight": Decimal("1.80")})
    assert [str(a["weight"]) for a in fact_attributes(memory)] == ["1.80"]


def test_an_import_of_other_digits_makes_another_version(memory: recuerdo.Memory) -> None:
    memory.relate("Ann", "Acme", "works_at", attributes={"weight": Decimal("1.8")}, scope="a")
    records = export_all(memory, "a")
    memory.relate("Ann", "Acme", "works_at", attributes={"weight": Decimal("1.80")}, scope="b")
    memory.import_records(records, scope="b")
    current = memory.about("Ann", scope="b", hops=1)["items"]
    assert [str(i["attributes"]["weight"]) for i in current if i["kind"] == "fact"] == ["1.80"]


@pytest.mark.parametrize("number", ["1E+400", "-1E+309", "NaN", "sNaN", "Infinity"])
def test_a_number_json_cannot_hold_is_refused(memory: recuerdo.Memory, number: str) -> None:
    with pytest.raises(recuerdo.errors.InvalidInput, match="numbers must be finite"):
        memory.relate("Ann", "Acme", "works_at", attributes={"weight": Decimal(number)})
    assert memory.about("Ann", hops=1)["items"] == []


UNWRITABLE: dict[str, dict[Any, Any]] = {
    "an integer past the digits a JSON reader takes": {"n": 10**5000},
    "a decimal key": {Decimal("1.5"): "x"},
    "a tuple key deeper in": {"more": {(1, 2): "x"}},
}


@pytest.mark.parametrize("case", list(UNWRITABLE))
def test_attributes_json_cannot_hold_are_refused(memory: recuerdo.Memory, case: str) -> None:
    """Refused whole, the store unchanged: a ValueError or TypeError escaped ``relate`` and
    ``remember_knowledge`` (an integer of 5000 digits was refused before fact attributes kept
    their digits; a key that is not text or a number never was)."""
    relation = {"source": "Ann", "target": "Acme", "type": "works_at"}
    with pytest.raises(recuerdo.errors.InvalidInput, match="attributes"):
        memory.relate("Ann", "Acme", "works_at", attributes=UNWRITABLE[case])
    with pytest.raises(recuerdo.errors.InvalidInput, match="attributes"):
        memory.remember_knowledge(
            facts={"relations": [relation | {"attributes": UNWRITABLE[case]}]}
        )
    assert memory.about("Ann", hops=1)["items"] == []
    # An import's fact record so: malformed, skipped, nothing stored.
    memory.relate("Ann", "Acme", "works_at", scope="a")
    [fact] = [r for r in export_all(memory, "a") if r["record"] == "fact"]
    outcome = memory.import_records([{**fact, "attributes": UNWRITABLE[case]}], scope="b")
    assert [s["why"].startswith("malformed fact") for s in outcome["skipped"]] == [True]
    assert memory.about("Ann", scope="b", hops=1)["items"] == []


def test_a_string_and_a_number_of_the_same_digits_are_two_calls(
    memory: recuerdo.Memory,
) -> None:
    """The call's fingerprint wrote a decimal as text: the number 1.80 after the string
    "1.80" was answered `already`, and the fact kept the string."""
    for value in ("1.80", Decimal("1.80")):
        relation = {"source": "Ann", "target": "Acme", "type": "works_at"}
        memory.remember_knowledge(facts={"relations": [relation | {"attributes": {"w": value}}]})
    [found] = fact_attributes(memory)
    assert isinstance(found["w"], Decimal)


finite = st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**300), max_value=10**300)


@settings(max_examples=60, deadline=None)
@given(numbers=st.lists(finite, min_size=1, max_size=4))
def test_decimals_round_trip_through_the_store_and_an_export(numbers: list[Decimal]) -> None:
    """What a JSON reader makes of the digits given (``5`` is a whole number, ``5.0`` a
    decimal) is what comes back, from the store and from an import of its export."""
    given = {"n": numbers}
    expected = exact.loads(exact.dumps(given))
    with recuerdo.open("decimals", in_memory=True) as memory:
        memory.relate("Ann", "Acme", "works_at", attributes=given, scope="a")
        [found] = fact_attributes(memory, "a")
        assert same(found, expected) and found == expected
        memory.import_records(exact.loads(exact.dumps(export_all(memory, "a"))), scope="b")
        [copied] = fact_attributes(memory, "b")
        assert same(copied, expected)


def test_the_doors_write_a_decimal_as_its_digits() -> None:
    """Every door writes a reply through one encoder: MCP's text, the CLI's JSON and a remote
    call's request (HTTP is tested over the wire, test_http)."""
    from recuerdo.doors.client import request_body
    from recuerdo.doors.mcp import _reply
    from recuerdo.doors.render import to_json

    value = {"attributes": {"big": Decimal("12345678901234567890.123"), "w": Decimal("1.80")}}
    written = '{"attributes": {"big": 12345678901234567890.123, "w": 1.80}}'
    mcp = _reply(value, False)
    assert mcp["content"] == [{"type": "text", "text": written}]
    assert mcp["structuredContent"] == {"attributes": {"big": 1.2345678901234567e19, "w": 1.8}}
    assert exact.loads(to_json(value)) == value and "1.80" in to_json(value)
    assert request_body(value).decode() == written
