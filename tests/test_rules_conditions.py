"""Owner rules' conditions as written: dotted and non-ASCII variables, bounds that are no plain
number (refused by name), and bounds past the range of a float."""

from __future__ import annotations

import unicodedata
from decimal import Decimal

import pytest

import recuerdo
from recuerdo.work.rules import parse_condition


@pytest.mark.parametrize(
    ("description", "context", "violated"),
    [
        ("user.age > 18", {"user": {"age": 10}}, True),
        ("user.age > 18", {"user": {"age": 20}}, False),
        ("user.age > 18", {"user.age": 10}, True),  # a key spelled with the dot still reads
        ("user.age > 18", {"user.age": 20, "user": {"age": 10}}, False),  # that key comes first
        ("user.age > 18", {"user": {"name": "x"}}, False),  # not mentioned: does not apply
        ("user.age > 18", {"user": 30}, False),  # no age one level down
        ("a.b.c <= 1", {"a": {"b": {"c": 2}}}, True),
        ("âge > 18", {"âge": 10}, True),
        ("âge > 18", {"âge": 30}, False),
        ("цена <= 100", {"цена": 150}, True),
        ("価格 <= 100", {"価格": 150}, True),
        ("मूल्य <= 100", {"मूल्य": 150}, True),  # vowel signs are combining marks
        ("“discount <= 0.20”", {"discount": 0.5}, True),
        # typed with a combining accent in the rule, composed in the context (and back)
        (unicodedata.normalize("NFD", "âge > 18"), {"âge": 10}, True),
        ("âge > 18", {unicodedata.normalize("NFD", "âge"): 10}, True),
    ],
)
def test_variables_as_written(
    memory: recuerdo.Memory, description: str, context: dict[str, object], violated: bool
) -> None:
    rule = memory.add_rule("r", "must", description)
    assert rule["condition"] is not None
    assert bool(memory.check_rules(None, context)) is violated


@pytest.mark.parametrize(
    ("description", "quoted"),
    [
        ("total <= 1,000", "1,000"),
        ("total <= 1,000,000 a month", "1,000,000"),
        ("price < 1,5", "1,5"),
        ("discount <= 20%", "20%"),
        ("count < 1_000", "1_000"),
        ("version >= 1.2.3", "1.2.3"),
        ("total <= 1'000", "1'000"),
        ("mask <= 0xFF", "0xFF"),
        ("flags == 0b101", "0b101"),
        ("mode != 0o755", "0o755"),
        ("ratio <= 3:1", "3:1"),
        ("share < 1/2", "1/2"),
        ("start >= 09:30", "09:30"),
        ("delta >= -0x1_0", "-0x1_0"),
    ],
)
def test_a_bound_that_is_no_plain_number_is_refused(
    memory: recuerdo.Memory, description: str, quoted: str
) -> None:
    memory.add_rule("r", "should", "total <= 5")
    before = memory.get_rules()
    with pytest.raises(recuerdo.InvalidCondition) as refused:
        memory.add_rule("r", "must", description)
    assert refused.value.code == "invalid_condition"
    assert repr(quoted) in refused.value.detail
    assert memory.get_rules() == before


@pytest.mark.parametrize("description", ["total <= 1,000", "discount <= 20%", "x < 1e401"])
def test_a_rule_stored_as_written_says_why_it_has_no_condition(
    memory: recuerdo.Memory, description: str
) -> None:
    rule = memory.add_rule("r", "must", description, unreadable="store")
    assert rule["condition"] is None and rule["unread"]
    [listed] = memory.get_rules()
    assert listed["description"] == description and listed["condition"] is None
    assert memory.check_rules(None, {"total": 5000, "discount": 90, "x": 1}) == []


def test_an_unknown_way_of_taking_an_unread_bound_is_refused(memory: recuerdo.Memory) -> None:
    with pytest.raises(recuerdo.InvalidInput, match="unreadable"):
        memory.add_rule("r", "must", "total <= 1,000", unreadable="guess")
    assert memory.get_rules() == []


@pytest.mark.parametrize(
    "description",
    [
        "total <= 1000.",
        "total <= 1000, says finance",
        "x < 5. Then y",
        "total <= 1000x over the baseline",  # a unit or a factor, not a literal's prefix
        "x < 5bn",
        "total <= 1000 bytes",
    ],
)
def test_a_bound_before_punctuation_still_reads(memory: recuerdo.Memory, description: str) -> None:
    memory.add_rule("r", "must", description)
    [violation] = memory.check_rules(None, {"total": 5000, "x": 9})
    assert violation["rule"] == "r"


@pytest.mark.parametrize(
    ("description", "value", "violated"),
    [
        ("x <= 1e400", float("inf"), True),
        ("x <= 1e400", 1e308, False),
        ("x == 1e400", float("inf"), True),
        ("x != 1e400", float("inf"), False),
        ("x < 1e400", float("inf"), True),
        ("x >= -1e400", float("-inf"), True),
        ("x >= -1e400", -1e308, False),
        ("x >= 1e-400", 0.0, True),
        ("x >= 1e-400", 5e-324, False),
        ("x > -1e-400", -0.0, False),
        ("x <= 1e400", Decimal("1e401"), True),
        ("x <= 1e400", 10**400, False),
        ("discount <= 0.20", 0.20, False),  # a float bound still compares as a float
    ],
)
def test_a_bound_past_float_range_compares_exactly(
    memory: recuerdo.Memory, description: str, value: object, violated: bool
) -> None:
    memory.add_rule("r", "must", description)
    assert bool(memory.check_rules(None, {"x": value, "discount": value})) is violated


@pytest.mark.parametrize(
    "description", ["total <= 1,000", "discount <= 20%", "x < 1e401", "mask <= 0xFF"]
)
def test_a_stored_bound_that_is_no_plain_number_is_no_condition(description: str) -> None:
    # A rule stored before such bounds were refused: listed without a condition, never read
    # as another number (1,000 as 1).
    assert parse_condition(description) is None
