"""Timestamps: UTC, ISO 8601 with microseconds, so text order is time order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ..errors import InvalidInput
from .exact import shown

_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
"""In English, whatever the process's locale: dates are indexed and read as words in them."""


def now() -> datetime:
    return datetime.now(UTC)


def to_iso(moment: datetime) -> str:
    # isoformat writes the year in four digits, as text order needs; strftime's %Y writes
    # the year 999 as "999", which sorted after "2023" (a since of 0999-01-01 kept nothing).
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def now_iso() -> str:
    return to_iso(now())


def parse_iso(value: str) -> datetime:
    return datetime.strptime(value, _FORMAT).replace(tzinfo=UTC)


def parse_time(value: object, field: str) -> str:
    """Any ISO 8601 instant from a caller, in the store's text form (naive means UTC)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be an ISO 8601 time, got {shown(value)}")
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidInput(f"{field} must be an ISO 8601 time, got {shown(value)}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return to_iso(moment)
    except OverflowError as exc:  # 9999-12-31T23:00-05:00 is past the last instant in UTC
        raise InvalidInput(
            f"{field} must be an ISO 8601 time within the years 0001-9999 in UTC,"
            f" got {shown(value)}"
        ) from exc


AHEAD_ALLOWED = timedelta(minutes=2)
"""How far a caller's clock may run ahead of this one's for an instant that must not be later
than now (decision 0165): a client that asks "as of now" by its own clock was refused when
that clock ran a second ahead."""


def not_after_now(value: object, field: str) -> str:
    """An instant from a caller that must not be later than now (what the memory knew then):
    one up to ``AHEAD_ALLOWED`` ahead of this clock reads now, and the reply says which
    instant was read; one further ahead is refused, with how far."""
    moment = parse_time(value, field)
    current = now()
    if moment <= to_iso(current):
        return moment
    ahead = parse_iso(moment) - current
    if ahead > AHEAD_ALLOWED:
        raise InvalidInput(
            f"{field} must not be later than now (what the memory knew then), got"
            f" {shown(value)}: {ahead.total_seconds():.0f} s ahead of this server's clock,"
            f" which allows {AHEAD_ALLOWED.total_seconds():.0f} s for clocks that differ"
        )
    return to_iso(current)
