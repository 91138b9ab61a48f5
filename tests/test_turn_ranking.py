"""Ranking the turns of conversations (``retrieval/turns.py``), on every backend: a question
naming a speaker favours that speaker's turns over the turns that address them, and a turn
among turns that match ranks above a lone match. The conversations are made up here."""

from __future__ import annotations

import pytest

import recuerdo

FILLER = [f"Note {n} about the shop's opening hours and the delivery van." for n in range(20)]


def turns(*said: tuple[str, str]) -> list[dict[str, str]]:
    return [
        {"speaker": speaker, "text": text, "date": "2024-03-02T10:00:00Z", "ref": f"t{n}"}
        for n, (speaker, text) in enumerate(said)
    ]


def refs(memory: recuerdo.Memory, query: str, scope: str | None = None) -> list[str]:
    found = memory.search(query, stages=["lexical"], scope=scope)["results"]
    return [hit.get("ref") or hit["title"] for hit in found]


def places(
    memory: recuerdo.Memory, query: str, scope: str | None = None
) -> list[tuple[str, str | None]]:
    """The lexical results as (conversation, turn ref), best first."""
    found = memory.search(query, stages=["lexical"], scope=scope)["results"]
    return [(hit["conversation"], hit.get("ref")) for hit in found]


def with_filler(memory: recuerdo.Memory) -> recuerdo.Memory:
    """A word must be rare in the memory for its weight to count (under half the chunks)."""
    for n, text in enumerate(FILLER):
        memory.save(f"Shop {n}", text)
    return memory


def test_a_named_speakers_turn_outranks_a_turn_addressing_them(memory: recuerdo.Memory) -> None:
    with_filler(memory).add_messages(
        "weekend",
        turns(
            ("Bob", "Hello there, how are things?"),
            ("Ann", "Busy week, but good."),
            ("Bob", "Ann, did you paint anything lately, or were you too busy?"),
            ("Ann", "I painted a sunset."),
            ("Bob", "Lovely, well done."),
        ),
    )
    memory._upkeep.drain()
    # Ranked as a word, "Ann" weighs more in Bob's turn (his body says it) than in hers.
    assert refs(memory, "What did Ann paint?", "conversation:weekend")[0] == "t3"


def test_a_note_still_matches_a_speakers_name(memory: recuerdo.Memory) -> None:
    """Only turns are ranked without the name: a note about the person keeps the word."""
    note = memory.save("Ann", "Ann keeps a vegetable garden behind the house.")["id"]
    with_filler(memory).add_messages(
        "garden",
        turns(("Bob", "How is the garden doing?"), ("Ann", "The garden is full of weeds.")),
        scope="user",
    )
    memory._upkeep.drain()
    found = memory.search("Ann garden", stages=["lexical"])["results"]
    assert found[0]["id"] == note
    assert {hit.get("ref") for hit in found} >= {"t0", "t1"}


def test_a_turn_among_matching_turns_outranks_a_lone_match(memory: recuerdo.Memory) -> None:
    with_filler(memory).add_messages(
        "lake",
        turns(
            ("Pat", "kayak kayak kayak"),
            ("Quinn", "Sounds good to me."),
            ("Pat", "I have a kayak and a paddle."),
            ("Quinn", "Nice to hear."),
            ("Pat", "kayak kayak"),
        ),
        scope="user",
    )
    memory.add_messages(
        "chat",
        turns(("Rae", "Hello there."), ("Sam", "I kayak a lot."), ("Rae", "Good for you.")),
        scope="user",
    )
    memory._upkeep.drain()
    order = places(memory, "kayak")
    # Alone, the shorter lone turn scores more than the longer one; the turns two places
    # away from the longer one match too.
    assert order.index(("lake", "t2")) < order.index(("chat", "t1"))


def test_a_reply_outranks_the_question_it_answers(memory: recuerdo.Memory) -> None:
    """The question holds the query's words, the reply holds what was asked for."""
    with_filler(memory).add_messages(
        "run",
        turns(
            ("Bob", "Morning! I saw you by the river at dawn."),
            ("Ann", "Yes, most days now."),
            ("Bob", "Impressive. What got you into running marathons?"),
            ("Ann", "My doctor told me to move more after the surgery, so I kept going."),
            ("Bob", "Good for you."),
        ),
    )
    memory._upkeep.drain()
    found = refs(memory, "What got Ann into running marathons?", "conversation:run")
    assert found[0] == "t3"
    assert found.index("t3") < found.index("t2")


def test_a_reply_goes_on_with_what_the_question_asked_about(memory: recuerdo.Memory) -> None:
    """ "I went camping." - "How was it?" - the reply is about the camping, in other words."""
    with_filler(memory).add_messages(
        "trip",
        turns(
            ("Ann", "We went camping with the kids last weekend, up in the hills."),
            ("Bob", "How was it?"),
            ("Ann", "Cold at night, but we swam in the lake every single morning."),
            ("Bob", "Lovely."),
        ),
        scope="user",
    )
    memory.add_messages(
        "news",
        turns(("Cy", "The lake froze over."), ("Dee", "Brr."), ("Cy", "Early this year.")),
        scope="user",
    )
    memory._upkeep.drain()
    order = places(memory, "camping lake", "user")
    # Both say "lake" once, and Cy's turn is shorter; the reply goes on with the camping.
    assert order.index(("trip", "t2")) < order.index(("news", "t0"))


def test_a_question_passes_nothing_to_its_own_speaker(memory: recuerdo.Memory) -> None:
    """Nobody answers their own question: the turn after it keeps its place."""
    with_filler(memory).add_messages(
        "boat",
        turns(
            ("Ann", "Where did I leave the kayak paddle?"),
            ("Ann", "Never mind, it is in the shed with the tools."),
            ("Bob", "I bought a kayak paddle. How are your tomatoes doing?"),
            ("Ann", "Green still, and the shed roof leaks onto the tools."),
            ("Bob", "A kayak is a fine thing to own."),
        ),
    )
    memory._upkeep.drain()
    found = refs(memory, "kayak paddle", "conversation:boat")
    assert found[:2] == ["t0", "t2"]


def test_a_question_about_something_else_passes_nothing(memory: recuerdo.Memory) -> None:
    """The reply answers the question, not the rest of the turn that asks it."""
    with_filler(memory).add_messages(
        "boat",
        turns(
            ("Bob", "I bought a new kayak paddle today. How are your tomatoes doing?"),
            ("Ann", "Green still, sadly."),
            ("Bob", "Shame."),
        ),
        scope="user",
    )
    memory.add_messages(
        "club",
        turns(
            ("Cy", "Hello all."),
            ("Dee", "The club lends a kayak paddle to anyone who asks for one at the gate."),
            ("Cy", "Good to know."),
        ),
        scope="user",
    )
    memory._upkeep.drain()
    order = places(memory, "kayak paddle", "user")
    # The turn that asks keeps its score, and Ann's reply gains none of it: it stays below the
    # club's turns, which hold no query word themselves (their neighbour does).
    assert order[:2] == [("boat", "t0"), ("club", "t1")]
    assert order.index(("club", "t0")) < order.index(("boat", "t1"))


@pytest.mark.parametrize(
    "question",
    [
        "Impressive. What got you into running marathons?",
        "Ｉｍｐｒｅｓｓｉｖｅ. Ｗｈａｔ ｇｏｔ ｙｏｕ ｉｎｔｏ ｒｕｎｎｉｎｇ ｍａｒａｔｈｏｎｓ？",
    ],
)
def test_a_reply_to_a_question_in_width_forms_outranks_it(
    memory: recuerdo.Memory, question: str
) -> None:
    """The question's words are read as the index reads them (0161): "ｒｕｎｎｉｎｇ" is asked."""
    with_filler(memory).add_messages(
        "run",
        turns(
            ("Bob", "Morning! I saw you by the river at dawn."),
            ("Ann", "Yes, most days now."),
            ("Bob", question),
            ("Ann", "My doctor told me to move more after the surgery, so I kept going."),
            ("Bob", "Good for you."),
        ),
    )
    memory._upkeep.drain()
    found = refs(memory, "What got Ann into running marathons?", "conversation:run")
    assert found[0] == "t3"
    assert found.index("t3") < found.index("t2")


def said_at(moments: list[str], first: int, *said: tuple[str, str]) -> list[dict[str, str]]:
    """Turns said at ``moments``, one each, their refs numbered from ``first``."""
    return [
        {"speaker": speaker, "text": text, "date": moment, "ref": f"t{first + n}"}
        for n, (moment, (speaker, text)) in enumerate(zip(moments, said, strict=True))
    ]


def sitting(day: str, first: int, *said: tuple[str, str]) -> list[dict[str, str]]:
    """Turns said at 10:00 on ``day``, their refs numbered from ``first``."""
    return said_at([f"{day}T10:00:00Z"] * len(said), first, *said)


# A talk about a greenhouse whose last turn says "greenhouse" once, far from the others, and a
# later one where a lone, shorter turn says it: the later turn outranks the last of the first
# talk by its words alone, not as a turn of the talk that matches best.
GREENHOUSE_NEWS = (
    ("Ann", "Greenhouse news: new glass in the greenhouse, and the greenhouse roof too."),
    ("Bob", "Well done, the greenhouse looks great."),
    ("Ann", "Thanks, it took all week."),
    ("Bob", "I can imagine."),
    ("Ann", "My back hurts."),
    (
        "Bob",
        "I moved the old bench out of the greenhouse and into the shed, next to the"
        " bicycle and the paint tins.",
    ),
)
A_BENCH_FOR_SALE = (
    ("Ann", "Hello again."),
    ("Bob", "Hi, long time."),
    ("Ann", "Busy summer."),
    (
        "Bob",
        "Somebody down the road sells an old greenhouse bench, cheap, with paint tins"
        " and a bicycle.",
    ),
    ("Ann", "Not for me."),
    ("Bob", "Fair enough."),
)


def test_a_turn_of_the_sitting_that_matches_outranks_a_lone_match(
    memory: recuerdo.Memory,
) -> None:
    """The turns of a conversation in one sitting keep to a subject: a turn of the sitting whose
    turns match best rises above a lone match said in another sitting, months later."""
    with_filler(memory).add_messages(
        "allotment",
        sitting("2024-03-02", 0, *GREENHOUSE_NEWS) + sitting("2024-06-20", 6, *A_BENCH_FOR_SALE),
    )
    memory._upkeep.drain()
    found = refs(memory, "greenhouse", "conversation:allotment")
    # Alone, t9 is the shorter and scores more; t5 is too far from the other matches of its
    # sitting for the neighbouring turns to reach it.
    assert found[:2] == ["t0", "t1"]
    assert found.index("t5") < found.index("t9")


def test_a_turn_alone_in_its_sitting_gains_nothing_over_a_note(memory: recuerdo.Memory) -> None:
    """The sitting lifts a turn toward a better turn of its day, not every turn over the notes:
    a note and a turn saying the same thing keep the order their words give them (the turn's
    chunk also holds its speaker and conversation, so it ranks a little lower)."""
    said = "The old greenhouse bench went to the shed with the paint tins and the bicycle."
    note = with_filler(memory).save("Shed", said)["id"]
    memory.add_messages(
        "allotment",
        sitting("2024-03-02", 0, ("Bob", said)) + sitting("2024-06-20", 1, ("Ann", "Fine.")),
    )
    memory._upkeep.drain()
    found = memory.search("greenhouse bench", stages=["lexical"])["results"]
    assert found[0]["id"] == note
    assert found[1].get("ref") == "t0"


def test_conversations_of_one_name_in_two_scopes_are_two_sittings(
    memory: recuerdo.Memory,
) -> None:
    """A conversation is kept in one scope; one of the same name elsewhere is another one, and
    its turns of the same day are not lifted by this one's."""
    said = "I sold the greenhouse bench{} with the paint tins and the bicycle."
    with_filler(memory).add_messages(
        "standup",
        sitting("2024-03-02", 0, ("Ann", "greenhouse bench, greenhouse bench")),
        scope="project:a",
    )
    for n in range(4):  # out of reach of the neighbouring turns' rule, which reads ids
        memory.save(f"Van {n}", "The delivery van comes on Tuesdays.")
    memory.add_messages(
        "standup", sitting("2024-03-05", 1, ("Bob", said.format(""))), scope="project:c"
    )
    memory.add_messages(
        "standup", sitting("2024-03-02", 2, ("Bob", said.format(" along"))), scope="project:b"
    )
    memory._upkeep.drain()
    found = [
        (hit["scope"], hit.get("ref"))
        for hit in memory.search("greenhouse bench", stages=["lexical"])["results"]
    ]
    # The shorter turn scores more; alone in its sitting, neither gains on the other.
    assert found.index(("project:c", "t1")) < found.index(("project:b", "t2"))


def test_a_sitting_that_crosses_midnight_utc_is_one_sitting(memory: recuerdo.Memory) -> None:
    """A pause ends a sitting, not the calendar: an evening talk in New York (-05:00) that goes
    on past 19:00, midnight UTC, is one sitting, and its last turn rises with its best."""
    evening = [f"2024-03-02T18:{minute}:00-05:00" for minute in (50, 52, 54, 56, 58)]
    with_filler(memory).add_messages(
        "allotment",
        said_at(
            [*evening, "2024-03-02T19:05:00-05:00"],
            0,
            *GREENHOUSE_NEWS,
        )
        + sitting("2024-06-20", 6, *A_BENCH_FOR_SALE),
    )
    memory._upkeep.drain()
    found = refs(memory, "greenhouse", "conversation:allotment")
    # Alone, t9 is the shorter and scores more: t5 (00:05 UTC, the next day) outranks it
    # only as a turn of the sitting that matches best.
    assert found[:2] == ["t0", "t1"]
    assert found.index("t5") < found.index("t9")


def test_two_talks_of_one_day_with_a_long_pause_between_are_two_sittings(
    memory: recuerdo.Memory,
) -> None:
    """A talk in the morning and another in the evening of one day are two sittings: the
    evening's turns are not lifted by the morning's best match."""
    said = "I sold the greenhouse bench{} with the paint tins and the bicycle."

    def talk(hour: str, first: int, line: str) -> list[dict[str, str]]:
        """Five turns a minute apart, the match in the middle: alike in every talk, so the
        neighbouring turns lift each match alike."""
        moments = [f"{hour}:0{minute}:00Z" for minute in range(5)]
        chat = [("Ann", "Evening."), ("Bob", "Hello."), ("Ann", line), ("Bob", "Right.")]
        return said_at(moments, first, *chat, ("Ann", "Bye."))

    with_filler(memory).add_messages(
        "standup",
        said_at(
            ["2024-03-02T08:00:00Z", "2024-03-02T08:01:00Z"],
            0,
            ("Ann", "greenhouse bench, greenhouse bench"),
            ("Bob", "See you tonight."),
        )
        + talk("2024-03-02T19", 2, said.format(" along"))  # eleven hours on
        + talk("2024-03-05T19", 7, said.format("")),
    )
    memory._upkeep.drain()
    found = refs(memory, "greenhouse bench", "conversation:standup")
    # The shorter turn scores more; alone in its sitting, t4 does not gain on it.
    assert found[0] == "t0"
    assert found.index("t9") < found.index("t4")
