"""Owner rules: named constraints with a level, checked against a context of numbers.

A rule's condition is the first ``variable op number`` in its description (``discount <= 0.20``).
It states what must hold; a violation is a context where it does not. Conditions are parsed
into a comparison, never evaluated as code.
"""

from __future__ import annotations

import functools
import math
import numbers
import operator
import re
import unicodedata
from collections.abc import Callable, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any, NamedTuple

from ..core import exact
from ..core.clock import now_iso
from ..core.exact import shown
from ..core.secrets import redact_text
from ..core.text import checked_label, checked_text
from ..errors import InvalidCondition, InvalidInput, InvalidRuleLevel
from ..model import RULE_LEVELS, Rule, Violation
from ..store.base import Row, Tx

MAX_DESCRIPTION_BYTES = 4096
RECENT_VIOLATIONS = 5
MAX_EXPONENT = 400
"""A bound past 10**±400 is no number a rule compares: the exact form of ``1e-10000000`` took
7 s to build, at every add, get, check and summary (a hunt over the rules)."""
UNREADABLE = ("refuse", "store")
"""What ``add_rule`` does with a condition whose bound cannot be read (its ``unreadable``)."""
MAX_SHOWN_CHARS = 2000
"""A violation's message quotes its context up to this many characters: the message is kept,
and a 5 MB context made a 5 MB row each time (a hunt over the rules)."""
KEPT_VIOLATIONS = 1000
"""The violations kept per tenant (the newest): the summary shows the last few."""

_BOUND = re.compile(r"(<=|>=|==|!=|<|>)\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)")
"""The ``op number`` of a condition; its variable is the name just before (:func:`_search`)."""
_AMBIGUOUS_AFTER = re.compile(
    r"(?:[,_.':/]\d|%)[\d,_.':/%]*|(?<=(?<![\w.])0)[xXbBoO][0-9a-fA-F][0-9a-fA-F_]*"
)
"""What, right after a bound, makes it another number than the digits read: ``1,000`` read as
1, ``20%`` as 20, ``1.2.3`` as 1.2, ``3:1`` or ``1/2`` as 3 or 1, ``0xFF`` (a literal of a
programming language) as 0. Such a bound is refused (or, stored, no condition)."""
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

    def lookup(self, context: Mapping[Any, Any], folded: Mapping[str, Any] | None) -> Any:
        """The value the condition reads in ``context``, or :data:`MISSING`. A key spelled as
        the variable comes first (``{"user.age": 20}``); else each dotted part is a key one
        level down (``{"user": {"age": 20}}``). ``folded``: the context's keys in NFC, tried
        when a key is spelled in other code points than the rule."""
        for level in (context, folded):
            if level is None:
                continue
            if self.variable in level:
                return level[self.variable]
            value: Any = level
            for part in self.variable.split("."):
                if not isinstance(value, Mapping) or part not in value:
                    break
                value = value[part]
            else:
                return value
        return MISSING

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
            if math.isnan(number):
                return False
            if self.bound_is_float:
                return compare(number, self.bound)
            # A bound no float is near (1e400 read as inf, 1e-400 as 0): compared exactly, as
            # inf <= 1e400 held and 0.0 >= 1e-400 too.
            return compare(Decimal(number), self.exact)
        return False  # complex numbers have no order

    @property
    def bound_is_float(self) -> bool:
        """Whether the float of the bound keeps its size: not infinite, not 0 for a non-zero."""
        return not math.isinf(self.bound) and (self.bound != 0 or not self.exact)


MISSING: Any = object()
"""What :meth:`Condition.lookup` gives for a variable the context does not mention."""


@functools.lru_cache(maxsize=1024)
def parse_condition(description: str) -> Condition | None:
    """The first ``variable op number`` in ``description``, or ``None`` when there is none or
    its bound cannot be read as written (a rule stored before such bounds were refused).
    Cached: every check and every listing reads each stored rule's description again, and a
    Condition is immutable."""
    stated = _search(description)
    return None if stated is None or _refusal(stated) else _condition(stated)


class _Stated(NamedTuple):
    variable: str
    op: str
    number: str
    text: str
    after: str
    """The characters right after the bound, as many as can make it another number."""


def _search(description: str) -> _Stated | None:
    """The first ``variable op number`` of the description in NFC (a name typed with a
    combining accent is the one typed composed). The variable is a name in any script
    (``âge``, ``मूल्य``: ASCII-only names made ``âge > 18`` no condition at all) or names
    joined by dots (``user.age``), which read a nested context. It is read backwards from the
    operator, as a regular expression cannot say "letters and combining marks" (``\\w``
    leaves the marks out) without scanning each long word once per letter."""
    text = unicodedata.normalize("NFC", description)
    for match in _BOUND.finditer(text):
        end = match.start()
        while end and text[end - 1].isspace():
            end -= 1
        start = end
        while start and _in_name(text[start - 1]):
            start -= 1
        variable = text[start:end]
        if all(part and (part[0].isalpha() or part[0] == "_") for part in variable.split(".")):
            op, number = match.groups()
            after = _AMBIGUOUS_AFTER.match(text, match.end())
            return _Stated(
                variable,
                op,
                number,
                text[start : match.end()],
                "" if after is None else after.group(0),
            )
    return None


def _in_name(ch: str) -> bool:
    return ch.isalnum() or ch in "_." or unicodedata.category(ch).startswith("M")


def _refusal(stated: _Stated) -> str | None:
    """Why the condition ``stated`` cannot be read as written, or None."""
    if stated.after:
        return (
            f"the condition's bound {stated.number + stated.after!r} is no plain number (it"
            f" would read as {stated.number}): write it with digits and one '.', e.g. 1000 or 0.2"
        )
    exact = Decimal(stated.number)
    if exact and abs(exact.adjusted()) > MAX_EXPONENT:
        return f"the condition's bound is beyond 1e±{MAX_EXPONENT}: no number a rule compares"
    return None


def _condition(stated: _Stated) -> Condition:
    """The condition ``stated`` (one :func:`_refusal` passed)."""
    number = stated.number
    return Condition(stated.variable, stated.op, float(number), stated.text, Decimal(number))


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
    tx: Tx,
    tenant: str,
    name: object,
    level: object,
    description: object,
    category: object,
    unreadable: object = "refuse",
) -> Rule:
    """The rule, stored. A condition whose bound cannot be read as written is refused, or with
    ``unreadable="store"`` the rule is stored without a condition and the reply says why
    (``unread``): Synsema takes any description, and a program that adds such a rule runs on."""
    if unreadable not in UNREADABLE:
        raise InvalidInput(f"unreadable is one of {', '.join(UNREADABLE)}, got {shown(unreadable)}")
    rule_name = checked_label(name, "rule name")
    rule_level = check_level(level)
    text = checked_text(description, "description", max_bytes=MAX_DESCRIPTION_BYTES)
    rule_category = None if category is None else checked_label(category, "category")
    stated = _search(text)
    refused = None if stated is None else _refusal(stated)
    if refused is not None and unreadable == "refuse":
        raise InvalidCondition(refused, condition=stated.text if stated else None)
    stamp = now_iso()
    tx.execute(
        "INSERT INTO rules (tenant, name, level, description, category, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, name) DO UPDATE SET"
        " level = excluded.level, description = excluded.description,"
        " category = excluded.category, updated_at = excluded.updated_at",
        (tenant, rule_name, rule_level, text, rule_category, stamp, stamp),
    )
    added = _rule(rule_name, rule_level, text, rule_category)
    if refused is not None:
        added["unread"] = refused
    return added


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
    folded = _folded(context)
    violations: list[Violation] = []
    for row in rows:
        condition = parse_condition(row["description"])
        if condition is None:
            continue
        value = condition.lookup(context, folded)
        if value is MISSING:
            continue  # a rule about something the context does not mention does not apply
        if condition.holds(value):
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


def _folded(context: Mapping[Any, Any]) -> Mapping[str, Any] | None:
    """The context's top level with its text keys in NFC, or None when they all are already
    (nearly always: then no copy is made)."""
    keys = [key for key in context if isinstance(key, str) and not key.isascii()]
    if all(unicodedata.is_normalized("NFC", key) for key in keys):
        return None
    return {
        unicodedata.normalize("NFC", key): value
        for key, value in context.items()
        if isinstance(key, str)
    }


def _shown(context: Mapping[Any, Any]) -> str:
    """The context as a violation's message quotes it: JSON, cut at :data:`MAX_SHOWN_CHARS`
    (flagged), and redacted as a whole, as the message is kept: the write guard redacted each
    string of the context alone, and a key with its value (``"password": "hunter2"``) is a
    credential only together."""
    try:
        # A decimal as the number it is (0.5): ``default=str`` quoted it as text ("0.5").
        text = exact.dumps(context, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):  # keys that do not sort, an int past str()'s digits
        text = exact.dumps(
            {str(key): _plain(value) for key, value in context.items()}, ensure_ascii=False
        )
    text = redact_text(text)
    if len(text) > MAX_SHOWN_CHARS:
        return f"{text[:MAX_SHOWN_CHARS]}... (cut at {MAX_SHOWN_CHARS} characters)"
    return text


def _plain(value: object) -> object:
    if value is None or isinstance(value, str | bool | float | Decimal):
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
