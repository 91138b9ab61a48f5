"""Owner rules: named constraints with a level, checked against a context of numbers.

A rule's condition is the first ``variable op number`` in its description (``discount <= 0.20``).
It states what must hold; a violation is a context where it does not. Conditions are parsed
into a comparison, never evaluated as code.
"""

from __future__ import annotations

import json
import math
import numbers
import operator
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any, NamedTuple

from ..core.clock import now_iso
from ..core.secrets import redact_text
from ..core.text import checked_label, checked_text
from ..errors import InvalidInput, InvalidRuleLevel
from ..model import RULE_LEVELS, Rule, Violation
from ..store.base import Row, Tx

MAX_DESCRIPTION_BYTES = 4096
RECENT_VIOLATIONS = 5
MAX_EXPONENT = 400
"""A bound past 10**±400 is no number a rule compares: the exact form of ``1e-10000000`` took
7 s to build, at every add, get, check and summary (a hunt over the rules)."""
MAX_SHOWN_CHARS = 2000
"""A violation's message quotes its context up to this many characters: the message is kept,
and a 5 MB context made a 5 MB row each time (a hunt over the rules)."""
KEPT_VIOLATIONS = 1000
"""The violations kept per tenant (the newest): the summary shows the last few."""

_CONDITION = re.compile(
    r"(?<![\w.])([A-Za-z_][A-Za-z0-9_.]*)\s*(<=|>=|==|!=|<|>)\s*"
    r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)"
)
_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
    "==": operator.eq,
    "!=": operator.ne,
}


class Condition(NamedTuple):
    variable: str
    op: str
    bound: float
    text: str
    exact: Decimal
    """The bound as written (``0.20`` exactly), for exact numbers (Decimal, Fraction, int):
    Python compares a Decimal with each of them exactly, without building a fraction of the
    Decimal's whole expansion (``Decimal("1e-10000000")`` as a context value took 7 s)."""

    def holds(self, value: object) -> bool:
        """Whether ``value`` satisfies the condition. Any real number compares: floats (numpy's
        too) as floats, exact numbers exactly. Anything else fails closed: NaN, text, a list, an
        object (a value the rule cannot read is a violation, never a silent pass)."""
        compare = _OPERATORS[self.op]
        if isinstance(value, bool) or not isinstance(value, numbers.Number | Decimal):
            return False
        if isinstance(value, Decimal | Fraction | int):
            if isinstance(value, Decimal) and not value.is_finite():
                return False
            return compare(value, self.exact)
        if isinstance(value, numbers.Real):
            number = float(value)
            return not math.isnan(number) and compare(number, self.bound)
        return False  # complex numbers have no order


def parse_condition(description: str) -> Condition | None:
    """The first ``variable op number`` in ``description``, or ``None`` when there is none."""
    match = _CONDITION.search(description)
    return None if match is None else _condition(match)


def _condition(match: re.Match[str]) -> Condition | None:
    """The condition a match of :data:`_CONDITION` states; None when its bound is beyond any
    number a rule compares."""
    variable, op, number = match.groups()
    exact = Decimal(number)
    if exact and abs(exact.adjusted()) > MAX_EXPONENT:
        return None
    return Condition(variable, op, float(number), match.group(0), exact)


def check_level(level: object) -> str:
    if isinstance(level, str) and level.strip().lower() in RULE_LEVELS:
        return level.strip().lower()
    raise InvalidRuleLevel(f"Invalid rule level: {level!r}. Valid levels: {', '.join(RULE_LEVELS)}")


def _rule(name: str, level: str, description: str, category: str | None) -> Rule:
    condition = parse_condition(description)
    return {
        "name": name,
        "level": level,
        "description": description,
        "category": category,
        "condition": None if condition is None else condition.text,
    }


def _row_to_rule(row: Row) -> Rule:
    return _rule(row["name"], row["level"], row["description"], row["category"])


def add(
    tx: Tx, tenant: str, name: object, level: object, description: object, category: object
) -> Rule:
    rule_name = checked_label(name, "rule name")
    rule_level = check_level(level)
    text = checked_text(description, "description", max_bytes=MAX_DESCRIPTION_BYTES)
    rule_category = None if category is None else checked_label(category, "category")
    stated = _CONDITION.search(text)
    if stated is not None and _condition(stated) is None:
        raise InvalidInput(
            f"the condition's bound is beyond 1e±{MAX_EXPONENT}: no number a rule compares"
        )
    stamp = now_iso()
    tx.execute(
        "INSERT INTO rules (tenant, name, level, description, category, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, name) DO UPDATE SET"
        " level = excluded.level, description = excluded.description,"
        " category = excluded.category, updated_at = excluded.updated_at",
        (tenant, rule_name, rule_level, text, rule_category, stamp, stamp),
    )
    return _rule(rule_name, rule_level, text, rule_category)


def get(tx: Tx, tenant: str, category: object = None) -> list[Rule]:
    if category is None:
        rows = tx.all("SELECT * FROM rules WHERE tenant = ? ORDER BY name", (tenant,))
    else:
        rows = tx.all(
            "SELECT * FROM rules WHERE tenant = ? AND category = ? ORDER BY name",
            (tenant, checked_label(category, "category")),
        )
    return [_row_to_rule(row) for row in rows]


def remove(tx: Tx, tenant: str, name: object) -> bool:
    rule_name = checked_label(name, "rule name")
    return tx.execute("DELETE FROM rules WHERE tenant = ? AND name = ?", (tenant, rule_name)) > 0


def check(tx: Tx, tenant: str, category: object, context: object) -> list[Violation]:
    """Violations of the rules that apply to ``category`` (and of uncategorised rules)."""
    if not isinstance(context, Mapping):
        raise InvalidInput("context must be an object mapping variable names to numbers")
    if category is None:
        rows = tx.all("SELECT * FROM rules WHERE tenant = ? ORDER BY name", (tenant,))
    else:
        rows = tx.all(
            "SELECT * FROM rules WHERE tenant = ? AND (category = ? OR category IS NULL)"
            " ORDER BY name",
            (tenant, checked_label(category, "category")),
        )
    shown: str | None = None  # quoted by violations only: a context may be megabytes
    violations: list[Violation] = []
    for row in rows:
        condition = parse_condition(row["description"])
        if condition is None:
            continue
        if condition.variable not in context:
            continue  # a rule about something the context does not mention does not apply
        if condition.holds(context[condition.variable]):
            continue
        shown = _shown(context) if shown is None else shown
        violations.append(
            {
                "rule": row["name"],
                "level": row["level"],
                "message": f"[{row['level'].upper()}] Rule {row['name']!r} violated: "
                f"{condition.text}. Context: {shown}",
            }
        )
    if violations:
        stamp = now_iso()
        tx.executemany(
            "INSERT INTO rule_violations (tenant, rule, level, message, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            [(tenant, v["rule"], v["level"], v["message"], stamp) for v in violations],
        )
        tx.execute(
            "DELETE FROM rule_violations WHERE tenant = ? AND id <= (SELECT id FROM"
            " rule_violations WHERE tenant = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
            (tenant, tenant, KEPT_VIOLATIONS),
        )
    return violations


def _shown(context: Mapping[Any, Any]) -> str:
    """The context as a violation's message quotes it: JSON, cut at :data:`MAX_SHOWN_CHARS`
    (flagged), and redacted as a whole, as the message is kept: the write guard redacted each
    string of the context alone, and a key with its value (``"password": "hunter2"``) is a
    credential only together."""
    try:
        text = json.dumps(context, sort_keys=True, default=str, ensure_ascii=False)
    except (TypeError, ValueError):  # keys that do not sort, an int past str()'s digits
        text = json.dumps(
            {str(key): _plain(value) for key, value in context.items()}, ensure_ascii=False
        )
    text = redact_text(text)
    if len(text) > MAX_SHOWN_CHARS:
        return f"{text[:MAX_SHOWN_CHARS]}... (cut at {MAX_SHOWN_CHARS} characters)"
    return text


def _plain(value: object) -> object:
    if value is None or isinstance(value, str | bool | float):
        return value
    if isinstance(value, int) and value.bit_length() < 1000:
        return value
    return f"<{type(value).__name__}>"


def recent_violations(tx: Tx, tenant: str, limit: int = RECENT_VIOLATIONS) -> list[str]:
    rows = tx.all(
        "SELECT message FROM rule_violations WHERE tenant = ? ORDER BY id DESC LIMIT ?",
        (tenant, limit),
    )
    return [row["message"] for row in rows]
