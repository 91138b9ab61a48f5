"""The sitting of a turn (``retrieval/sittings.py``): a run of turns of one conversation in one
scope with no pause longer than ``GAP`` between one turn and the next."""

from __future__ import annotations

from recuerdo.retrieval.sittings import GAP, Seen, of_turns


def seen(*moments: str | None, scope: str = "s", session: str = "c", first: int = 1) -> list[Seen]:
    return [Seen(first + n, scope, session, moment) for n, moment in enumerate(moments)]


def groups(found: dict[int, object]) -> list[list[int]]:
    """The turns grouped by sitting, in id order."""
    by: dict[object, list[int]] = {}
    for item_id in sorted(found):
        by.setdefault(found[item_id], []).append(item_id)
    return sorted(by.values())


def test_a_run_of_short_pauses_is_one_sitting_however_long() -> None:
    """Each pause counts, not the span: turns two hours apart over eight hours are one run."""
    turns = seen(*(f"2024-03-02T{hour:02}:00:00.000000Z" for hour in (8, 10, 12, 14, 16)))
    assert groups(of_turns([1, 5], turns)) == [[1, 5]]


def test_a_pause_longer_than_the_gap_starts_a_sitting() -> None:
    assert GAP.total_seconds() == 3 * 3600
    turns = seen("2024-03-02T08:00:00Z", "2024-03-02T11:00:00Z", "2024-03-02T14:00:01Z")
    assert groups(of_turns([1, 2, 3], turns)) == [[1, 2], [3]]


def test_moments_are_compared_as_instants_and_out_of_id_order() -> None:
    """Offsets are read (18:50 at -05:00 is 23:50 UTC), and a turn stored late, with an
    earlier date, falls in the run of its moment."""
    turns = seen("2024-03-02T18:50:00-05:00", "2024-03-03T00:05:00Z", "2024-03-02T09:00:00Z")
    turns += seen("2024-03-02T09:30:00Z", first=4)
    assert groups(of_turns([1, 2, 3, 4], turns)) == [[1, 2], [3, 4]]


def test_conversations_and_scopes_apart_and_turns_unread_alone() -> None:
    """Another conversation or scope at the same moment is another sitting; a turn not read,
    or with no moment that reads as a time, is a sitting alone."""
    moment = "2024-03-02T08:00:00Z"
    turns = seen(moment) + seen(moment, session="d", first=2) + seen(moment, scope="t", first=3)
    turns += seen(None, "not a time", moment, first=4)
    found = of_turns([1, 2, 3, 4, 5, 6, 9], turns)
    assert groups(found) == [[1, 6], [2], [3], [4], [5], [9]]
