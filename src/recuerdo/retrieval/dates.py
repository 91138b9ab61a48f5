"""The calendar day or month a query names ("what did Sam cook on 19 August 2023?").

Memory holds when things were said (a turn's date, an item's last change), and a question that
names a date asks about what was said then. The search gives the items of that date a word
stage of their own (``search.py``: ``dated``), so they rise without the others falling out.

Only dates that place themselves are read: a day with its month and year, in the usual English
and ISO spellings, or a month with its year. A month or day without a year ("in May", "on the
3rd"), a year alone, and times relative to now ("yesterday", "last week") are not: they would
need a reference moment or cover a whole memory. The first date a query names is the one used.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, date, datetime, time, timedelta
from typing import NamedTuple

from ..core.clock import MONTH_NAMES, to_iso

_MONTHS = {
    spelling: number
    for number, name in enumerate(MONTH_NAMES, start=1)
    for spelling in (name.lower(), name[:3].lower())
} | {"sept": 9}
_MONTH = "(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r",?\s+(?P<year>\d{4})(?!\d)"
_PATTERNS = tuple(
    # ASCII: "ſep" or "aprİl" would match a month under Unicode case folding, and other
    # scripts' digits a year, yet name no month or number this reads.
    re.compile(pattern, re.IGNORECASE | re.ASCII)
    for pattern in (
        r"(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})(?![\d-])",
        _DAY + r"\s+(?:of\s+)?" + _MONTH + _YEAR,  # 19 August 2023, 19th of Aug, 2023
        _MONTH + r"\s+" + _DAY + _YEAR,  # August 19, 2023
        _MONTH + _YEAR,  # August 2023
    )
)
FIRST_YEAR, LAST_YEAR = 1001, 9998
"""Years written with four digits, each with a year on both sides for the margins (the store's
moments are four-digit years)."""
MARGIN = timedelta(days=1)
"""A named day also takes in the day on each side: the stored moment is in UTC, the asker's day
may not be."""


class Window(NamedTuple):
    """From the first moment of ``first`` to the last of ``last``, in UTC; ``start`` and
    ``end`` are where the query names it."""

    first: date
    last: date
    start: int
    end: int

    def rest(self, query: str) -> str:
        """The query without the words naming the date."""
        return f"{query[: self.start]} {query[self.end :]}"

    @property
    def since(self) -> str:
        return to_iso(datetime.combine(self.first, time.min, UTC))

    @property
    def until(self) -> str:
        return to_iso(datetime.combine(self.last, time.max, UTC))


def named_window(query: str) -> Window | None:
    """The window of the first calendar date ``query`` names, or None."""
    found: list[tuple[int, Window]] = []
    impossible: list[range] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(query):
            if match.start() > 0 and query[match.start() - 1].isalnum():
                continue  # inside a word or a number
            if any(match.start() in span for span in impossible):
                continue  # "31 February 2023" names no day, and no month either
            window = _window(match)
            if window is None:
                impossible.append(range(match.start(), match.end()))
            else:
                found.append((match.start(), window))
                break
    return min(found)[1] if found else None


def _window(match: re.Match[str]) -> Window | None:
    parts = match.groupdict()
    month = parts["month"]
    number = int(month) if month.isdigit() else _MONTHS[month.lower()]
    year = int(parts["year"])
    if not FIRST_YEAR <= year <= LAST_YEAR:
        return None
    try:
        if parts.get("day") is None:
            days = calendar.monthrange(year, number)[1]
            return Window(date(year, number, 1), date(year, number, days), *match.span())
        day = date(year, number, int(parts["day"]))
    except ValueError:  # 31 February, month 13: no date at all
        return None
    return Window(day - MARGIN, day + MARGIN, *match.span())
