"""A query that names a calendar date (``retrieval/dates.py``) also ranks the items of that date
by its words: the search's ``dated`` stage, on every backend."""

from __future__ import annotations

import calendar
from datetime import date, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import recuerdo
from recuerdo.retrieval.dates import named_window

FILLER = [f"Note {n} about the shop's opening hours and the delivery van." for n in range(20)]
MONTHS = list(calendar.month_name)[1:]  # English in the C locale the suite runs in


@pytest.mark.parametrize(
    ("query", "first", "last"),
    [
        ("What did Ann bake on 19 August, 2023?", "2023-08-18", "2023-08-20"),
        ("what happened on 19th of aug 2023", "2023-08-18", "2023-08-20"),
        ("What did we plan on August 19, 2023?", "2023-08-18", "2023-08-20"),
        ("the Sept. 3rd 2022 party", "2022-09-02", "2022-09-04"),
        ("notes of 2023-08-19", "2023-08-18", "2023-08-20"),
        ("at 2023-08-19T10:00:00Z", "2023-08-18", "2023-08-20"),
        ("in November 2022", "2022-11-01", "2022-11-30"),
        ("in Feb 2024", "2024-02-01", "2024-02-29"),
        ("the December 2023 trip", "2023-12-01", "2023-12-31"),
        ("1 January 2024", "2023-12-31", "2024-01-02"),
        # The first date named is the one used.
        ("from August 2023 to 5 May 2024", "2023-08-01", "2023-08-31"),
        ("2023-13-01 or March 2020", "2020-03-01", "2020-03-31"),
    ],
)
def test_the_date_a_query_names_is_read(query: str, first: str, last: str) -> None:
    window = named_window(query)
    assert window is not None
    assert (window.first.isoformat(), window.last.isoformat()) == (first, last)
    assert window.since == f"{first}T00:00:00.000000Z"
    assert window.until == f"{last}T23:59:59.999999Z"


@pytest.mark.parametrize(
    "query",
    [
        "May I ask what you baked?",
        "what did Ann bake in May",
        "on the 3rd",
        "goals for 2023",
        "31 February 2023",  # no such day, and so no month either
        "grammar 2023",
        "version 12023-08-19",
        "August 20235",
        "December 9999",
        "on 1 January 0999",
        "1 January 1000",  # its margin would be a three-digit year, sorted after every moment
        "notes from \u017fep 2023",  # long s: a Unicode case fold of "sep"
        "apr\u0130l 2023 plans",  # dotted capital I
        "\u0661\u0669 August \u0662\u0660\u0662\u0663",  # Arabic-Indic digits
        "\uff12\uff10\uff12\uff13-\uff10\uff18-\uff11\uff19",  # full-width digits
        "",
    ],
)
def test_words_that_name_no_date_are_not_read_as_one(query: str) -> None:
    assert named_window(query) is None


SPELLINGS = [
    lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
    lambda d: f"{d.day} {MONTHS[d.month - 1]}, {d.year}",
    lambda d: f"{d.day}th of {MONTHS[d.month - 1][:3]} {d.year}",
    lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
    lambda d: f"{MONTHS[d.month - 1][:3]}. {d.day} {d.year}",
    lambda d: d.isoformat(),
]


@given(
    day=st.dates(min_value=date(1001, 1, 1), max_value=date(9998, 12, 31)),
    spelling=st.sampled_from(SPELLINGS),
    before=st.sampled_from(["", "what did we say on ", "Notes: "]),
    after=st.sampled_from(["", "?", " about the van"]),
)
def test_every_spelling_of_a_day_reads_back_as_that_day(
    day: date, spelling: Any, before: str, after: str
) -> None:
    window = named_window(before + spelling(day) + after)
    assert window is not None
    before_day, after_day = day - timedelta(days=1), day + timedelta(days=1)
    assert (window.first, window.last) == (before_day, after_day)
    assert window.since == f"{before_day.isoformat()}T00:00:00.000000Z"
    assert window.until == f"{after_day.isoformat()}T23:59:59.999999Z"


def conversation(memory: recuerdo.Memory) -> recuerdo.Memory:
    """Ann bakes often; on 19 August 2023 she baked once, and says it in fewer words."""
    for n, text in enumerate(FILLER):
        memory.save(f"Shop {n}", text)
    said = [
        ("Ann", "I bake every weekend, baking calms me: I baked bread again.", "2023-07-02"),
        ("Bo", "Your bread smells wonderful from here.", "2023-07-02"),
        ("Ann", "I baked a lemon cake for the neighbours.", "2023-08-19"),
        ("Bo", "Lemon is my favourite.", "2023-08-19"),
    ]
    memory.add_messages(
        "kitchen",
        [
            {"speaker": who, "text": text, "date": f"{day}T10:00:00Z", "ref": f"t{n}"}
            for n, (who, text, day) in enumerate(said)
        ],
    )
    memory._upkeep.drain()  # chunked and indexed, as a memory is moments after a write
    return memory


def hits(memory: recuerdo.Memory, query: str, **filters: Any) -> list[dict[str, Any]]:
    return list(memory.search(query, stages=["lexical"], **filters)["results"])


def test_the_items_of_the_date_a_query_names_rise(memory: recuerdo.Memory) -> None:
    """A turn's chunk spells its date ("19 August 2023") among its context words, so the
    spelled form already found it by words; the ISO form did not."""
    conversation(memory)
    undated = hits(memory, "What bread did Ann bake?")
    assert undated[0].get("ref") == "t0"  # more of the words: first
    assert not any("dated" in hit["found_by"] for hit in undated)
    for query in ("What bread did Ann bake on 2023-08-19?", "bread bake 19 August 2023"):
        dated = hits(memory, query)
        assert dated[0].get("ref") == "t2"
        assert dated[0]["found_by"] == ["dated", "lexical"]
        assert set(dated[0]["ranks"]) == {"dated", "lexical"}
        assert "t0" in [hit.get("ref") for hit in dated]  # the other days are still there


def test_a_month_covers_its_days(memory: recuerdo.Memory) -> None:
    conversation(memory)
    found = hits(memory, "What bread did Ann bake in August 2023?")
    assert found[0].get("ref") == "t2" and "dated" in found[0]["found_by"]
    found = hits(memory, "What bread did Ann bake in July 2023?")
    assert found[0].get("ref") == "t0" and "dated" in found[0]["found_by"]


def test_time_bounds_set_by_the_caller_win(memory: recuerdo.Memory) -> None:
    """since or until set: the caller chose the dates, the query's date adds no stage."""
    conversation(memory)
    asked = "What bread did Ann bake on 2023-08-19?"
    bounded = hits(memory, asked, since="2023-01-01T00:00:00Z")
    assert bounded[0].get("ref") == "t0"  # as ranked by words alone
    assert not any("dated" in hit["found_by"] for hit in bounded)
    only = hits(memory, asked, until="2023-07-31T00:00:00Z")
    assert [hit["ref"] for hit in only] == ["t0", "t1"]


def test_every_word_mode_asks_the_dated_items_for_the_other_words(
    memory: recuerdo.Memory,
) -> None:
    """A turn's context spells its date, not its ISO form: mode 'all' found nothing for
    "2023-08-19" before."""
    conversation(memory)
    found = memory.search("baked lemon on 2023-08-19", stages=["lexical"], mode="all")
    assert {hit["ref"] for hit in found["results"]} == {"t2", "t3"}  # t3: its neighbour's words
    assert all("dated" in hit["found_by"] for hit in found["results"])
    assert memory.search("baked lemon on 2022-08-19", mode="all")["results"] == []


@pytest.mark.parametrize("query", ["notes from \u017fep 2023", "apr\u0130l 2023 plans"])
def test_letters_that_fold_into_a_month_name_are_only_words(
    memory: recuerdo.Memory, query: str
) -> None:
    conversation(memory)
    found = memory.search(query)  # a KeyError before: the folded letters named no month
    assert found["state"] == "answered"  # by "2023": the turns' context spells their dates
    assert not any("dated" in hit["found_by"] for hit in found["results"])
