"""The sitting of a turn: a run of turns of one conversation, in one scope, with no pause
longer than ``GAP`` between one turn and the next (decisions 0183 and 0187).

A pause, not the calendar, ends a sitting: a talk in New York from 18:50 to 19:10 (-05:00)
crosses midnight UTC and is one sitting, and a talk in the morning and another in the evening
of one day are two. What each turn was said at is its moment as the ``since`` and ``until``
filters read it: when it was said, else when it last changed (a conversation written at once,
with no dates, is one sitting).

Only the turns the search has read are looked at: the candidates and the turns around them
(``turns._neighbours`` reads both in one query). Two turns read a pause of at most ``GAP``
apart are in one sitting whatever lies between them (no pause between them can be longer),
so a sitting never joins turns across a longer pause. Two read further apart are two
sittings even when the talk went on between them without a long pause: a sitting reaches
from a matching turn to the next only when they, or the turns read around them, are close.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

GAP = timedelta(hours=3)
"""The longest pause inside a sitting: longer than a break for a meal or a meeting, in which a
talk picks up where it stopped; shorter than a night, and than the hours between a morning's
talk and an evening's, after which it starts afresh. Not tuned: on LoCoMo every pause between
sessions is over a day, and any gap under one gives the same sittings."""


class Sitting(NamedTuple):
    """A conversation's run of turns: its scope, its name, and its first turn read."""

    scope: str
    session: str
    first: int


class Seen(NamedTuple):
    """A turn the search has read: its id, scope, conversation and moment (ISO 8601 text)."""

    item_id: int
    scope: str
    session: str
    moment: str | None


def of_turns(wanted: Iterable[int], seen: list[Seen]) -> dict[int, Sitting]:
    """The sitting of each of the turns ``wanted`` among the turns ``seen``; a wanted turn not
    seen, or whose moment does not read as a time, is a sitting alone, and so is the only
    wanted turn of its conversation (its sitting's best among the wanted is itself)."""
    found = {item_id: Sitting("", "", item_id) for item_id in wanted}
    counts = Counter((turn.scope, turn.session) for turn in seen if turn.item_id in found)
    # Most candidates of a mailbox are alone in their thread: their moments are not read.
    shared = {talk for talk, wanted_there in counts.items() if wanted_there > 1}
    talks: dict[tuple[str, str], list[tuple[datetime, int]]] = defaultdict(list)
    for turn in seen:
        if (turn.scope, turn.session) in shared:
            moment = _moment(turn.moment)
            if moment is not None:
                talks[turn.scope, turn.session].append((moment, turn.item_id))
    for (scope, session), timed in talks.items():
        timed.sort()
        previous, first = timed[0]
        sitting = Sitting(scope, session, first)
        for moment, item_id in timed:
            if moment - previous > GAP:
                sitting = Sitting(scope, session, item_id)
            previous = moment
            if item_id in found:
                found[item_id] = sitting
    return found


def _moment(text: str | None) -> datetime | None:
    """An instant from the store's text (UTC when it names no offset), or None."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
