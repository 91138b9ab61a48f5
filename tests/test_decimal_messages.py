"""A decimal in a message reads as the number the caller wrote: the doors read a JSON fraction
as a Decimal, and refusals quoted it as Python writes it (``got Decimal('1.5')``), a rule's
violation as text (``"discount": "0.5"``), an attribute lookup's seeding as text too."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.core import exact
from recuerdo.core.exact import shown

from .conftest import settled_dump

REFUSALS: list[tuple[str, Callable[[recuerdo.Memory], Any], str]] = [
    ("hops", lambda m: m.about("Ann", hops=Decimal("1.5")), "got 1.5"),
    ("depth", lambda m: m.context("who is Ann", depth=Decimal("2.50")), "got 2.50"),
    (
        "typed attribute",
        lambda m: m.remember_knowledge(
            facts={
                "entities": [
                    {"name": "A", "attributes": {"x": {"type": "integer", "value": Decimal("1.5")}}}
                ]
            }
        ),
        "1.5 is not a integer",
    ),
    ("date", lambda m: m.remember_knowledge("Ann.", date=Decimal("2024.5")), "got 2024.5"),
    ("note id", lambda m: m.get(Decimal("3.5")), "got 3.5"),
]


@pytest.mark.parametrize(("name", "call", "says"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_refusal_quotes_a_decimal_as_its_digits(
    memory: recuerdo.Memory, name: str, call: Callable[[recuerdo.Memory], Any], says: str
) -> None:
    with pytest.raises(recuerdo.errors.RecuerdoError) as refused:
        call(memory)
    assert says in refused.value.detail and "Decimal" not in refused.value.detail


@pytest.mark.parametrize(
    ("name", "call", "says"),
    [r for r in REFUSALS if r[0] in ("typed attribute", "date")],
    ids=["typed attribute", "date"],
)
def test_a_refused_write_of_a_decimal_leaves_the_store_unchanged(
    file_memory: recuerdo.Memory, name: str, call: Callable[[recuerdo.Memory], Any], says: str
) -> None:
    file_memory.remember_knowledge(facts={"entities": [{"name": "Ann", "attributes": {"x": 1}}]})
    before = settled_dump(file_memory)
    with pytest.raises(recuerdo.errors.RecuerdoError) as refused:
        call(file_memory)
    assert says in refused.value.detail
    assert settled_dump(file_memory) == before


def test_a_violation_quotes_a_decimal_as_a_number(memory: recuerdo.Memory) -> None:
    memory.add_rule("cap", "must", "discount <= 0.2")
    context = {"discount": Decimal("0.5"), "lines": [Decimal("1.50")]}
    [violation] = memory.check_rules(context=context)
    assert 'Context: {"discount": 0.5, "lines": [1.50]}' in violation["message"]


def test_an_attribute_seed_shows_the_number_it_matched(memory: recuerdo.Memory) -> None:
    entity = {"name": "Priya Raman", "attributes": {"height": Decimal("1.80")}}
    memory.remember_knowledge(facts={"entities": [entity]})
    found = memory.about(attribute={"key": "height", "value": Decimal("1.80")})
    assert [seed["matched"] for seed in found["seeding"]] == ["height=1.80"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("1.5"), "1.5"),
        (Decimal("NaN"), "NaN"),
        ([Decimal("0.10"), "a"], '[0.10, "a"]'),
        ({"x": Decimal("-2E+3")}, '{"x": -2E+3}'),
        ("1.5", "'1.5'"),  # text stays quoted, as repr quotes it
        ([1, "a"], "[1, 'a']"),  # no decimal in it: repr, as before
    ],
)
def test_shown(value: Any, text: str) -> None:
    assert shown(value) == text


_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.decimals(),  # NaN, sNaN and Infinity too: written as their text
)
_VALUES = st.recursive(
    _LEAVES, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=30
)
_OPTIONS = [{}, {"ensure_ascii": False}, {"indent": 2}, {"separators": (",", ":")}]


@settings(max_examples=400, deadline=None)
@given(value=_VALUES, options=st.sampled_from(_OPTIONS))
def test_the_doors_encoder_writes_json_a_reader_takes_back(
    value: Any, options: dict[str, Any]
) -> None:
    """What every door writes: valid JSON whose numbers read back with their digits, each
    finite decimal where it was; without a decimal, json.dumps(default=str)'s very text."""
    text = exact.dumps(value, **options)
    back = exact.loads(text)
    assert exact.dumps(back, sort_keys=True) == exact.dumps(_as_read(value), sort_keys=True)
    if "Decimal" not in repr(value):
        assert text == json.dumps(value, default=str, **options)


def _as_read(value: Any) -> Any:
    """``value`` as a JSON reader with exact fractions makes it."""
    if isinstance(value, Decimal):
        return exact.loads(str(value)) if value.is_finite() else str(value)
    if isinstance(value, float):
        return exact.loads(repr(value))
    if isinstance(value, list):
        return [_as_read(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_read(item) for key, item in value.items()}
    return value
