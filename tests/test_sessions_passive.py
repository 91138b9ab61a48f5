"""Sessions, timelines, recent context, passive capture and topic keys."""

from __future__ import annotations

import time

import pytest

import recuerdo
from recuerdo.notes.passive import extract_learnings, strip_markdown


def test_timeline_lists_neighbours_in_the_same_session(memory: recuerdo.Memory) -> None:
    memory.session_start("s1", project="shop", directory="/src/shop")
    ids = [
        memory.save(f"Step {i}", f"did {i}", session="s1", scope="project:shop")["id"]
        for i in range(6)
    ]
    other = memory.save("Elsewhere", "other session", session="s2")
    view = memory.timeline(ids[3], before=2, after=1)
    assert view["session"] == "s1"
    assert [n["id"] for n in view["before"]] == ids[1:3]
    assert view["item"]["id"] == ids[3]
    assert [n["id"] for n in view["after"]] == [ids[4]]
    assert memory.timeline(other["id"])["before"] == []
    lone = memory.save("No session", "x")
    assert memory.timeline(lone["id"]) == {
        "id": lone["id"],
        "session": None,
        "before": [],
        "item": memory.timeline(lone["id"])["item"],
        "after": [],
    }


def test_session_summary_shows_in_recent(memory: recuerdo.Memory) -> None:
    memory.session_start("s9", project="shop")
    memory.save("Cart bug", "fixed rounding", kind="bugfix", session="s9", scope="project:shop")
    ended = memory.session_end("s9", summary="Fixed the cart rounding bug; tests added.")
    assert ended["ended_at"] is not None and ended["summary_note_id"] is not None
    recent = memory.recent(scope="project:shop")
    assert recent["text"].startswith("## Session s9 summary [session_summary]")
    assert "fixed rounding" in recent["text"]
    assert recent["truncated"] is False and recent["state"] == "answered"
    with pytest.raises(recuerdo.ItemNotFound):
        memory.session_end("never-started")


def test_recent_is_cut_on_a_character_boundary_and_flagged(memory: recuerdo.Memory) -> None:
    for i in range(50):  # about 82 KB of notes
        memory.save(f"Note {i}", "ñandú " * 200)
    small = memory.recent(max_bytes=3001)
    assert small["truncated"] is True
    assert small["returned_bytes"] <= 3001
    small["text"].encode("utf-8").decode("utf-8")  # valid UTF-8
    capped = memory.recent(max_bytes=10**6)
    assert capped["limit_bytes"] == 65_536 and capped["requested_bytes"] == 10**6
    assert capped["returned_bytes"] <= 65_536 and capped["truncated"] is True
    assert memory.recent(scope="project:none")["state"] == "nothing_stored"


@pytest.mark.parametrize("room", range(3000, 3012))
def test_recent_is_cut_on_a_whole_character(memory: recuerdo.Memory, room: int) -> None:
    """Found by a hunt: the cut kept whole code points only, so it fell inside a flag or
    between a letter and its accent (one more byte made a flag a lone letter)."""
    unit = "\U0001f1eb\U0001f1f7e\u0301"  # a flag (two code points), "é" (two)
    memory.save("Flags", unit * 400)
    body = memory.recent(max_bytes=room)["text"].split("\n", 1)[1]
    assert (unit * 400).startswith(body) and len(body) % 2 == 0


NUMBERED = """# Report
Some text.

## Key Learnings
1. **Always** run the migrations before the tests start.
2. Use `BEGIN IMMEDIATE` for writes to avoid deadlocks.
3. Too short to keep.
4. Links like [the docs](https://example.com) keep their words here.

## Next
- not a learning but long enough to count as one item
"""
BULLETED = """## Learnings
- The cache must be warmed after every deploy, or p95 doubles.
- tiny
* Staging uses a separate queue named staging-jobs for workers.
"""
SPANISH = """## Aprendizajes Clave
1. Los tests de integración necesitan la base de datos real.
2. El despliegue falla si falta la variable de entorno DATABASE_URL.
"""
TWO_SECTIONS = """## Key Learnings
1. This first section is older and must be ignored entirely.

## Key Learnings
1. Only the last section of learnings is read by the capture.
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            NUMBERED,
            [
                "Always run the migrations before the tests start.",
                "Use BEGIN IMMEDIATE for writes to avoid deadlocks.",
                "Links like the docs keep their words here.",
            ],
        ),
        (
            BULLETED,
            [
                "The cache must be warmed after every deploy, or p95 doubles.",
                "Staging uses a separate queue named staging-jobs for workers.",
            ],
        ),
        (
            SPANISH,
            [
                "Los tests de integración necesitan la base de datos real.",
                "El despliegue falla si falta la variable de entorno DATABASE_URL.",
            ],
        ),
        (TWO_SECTIONS, ["Only the last section of learnings is read by the capture."]),
        ("## Key Learnings\n1. too short\n- also tiny", []),
        ("# Notes\nNo learnings section at all.", []),
    ],
    ids=["numbered", "bulleted", "spanish", "last-section", "too-short", "missing"],
)
def test_extract_learnings(text: str, expected: list[str]) -> None:
    assert extract_learnings(text) == expected


def test_capture_saves_passive_notes_and_skips_known_ones(memory: recuerdo.Memory) -> None:
    first = memory.capture_passive(NUMBERED, scope="project:api", session="s1")
    assert (first["extracted"], first["saved"], first["duplicates"]) == (3, 3, 0)
    note = memory.get(first["ids"][0])
    assert (note["kind"], note["scope"], note["session"]) == ("passive", "project:api", "s1")
    again = memory.capture_passive(NUMBERED, scope="project:api")
    assert (again["extracted"], again["saved"], again["duplicates"]) == (3, 0, 3)
    elsewhere = memory.capture_passive(NUMBERED, scope="project:web")
    assert elsewhere["saved"] == 3
    nothing = memory.capture_passive("no section")
    assert nothing == {
        "extracted": 0,
        "saved": 0,
        "duplicates": 0,
        "ids": [],
        "scope": "user",
        "redacted": {},
    }


def test_strip_markdown() -> None:
    assert strip_markdown("**bold** _it_ `code` ~~gone~~ [t](u)") == "bold it code gone t"


@pytest.mark.parametrize(
    ("kind", "title", "expected"),
    [
        ("decision", "Use JWT for the auth API", "decision/use-jwt-auth-api"),
        ("bugfix", "Fix: cart rounding (EUR)", "bug/fix-cart-rounding-eur"),
        ("architecture", "Émission des événements", "architecture/emission-des-evenements"),
        ("whatever", "Some title", "topic/some-title"),
    ],
)
def test_suggest_key_is_stable(
    memory: recuerdo.Memory, kind: str, title: str, expected: str
) -> None:
    assert memory.suggest_key(kind, title, "body")["key"] == expected
    assert memory.suggest_key(kind, title, "other body")["key"] == expected


def test_suggest_key_without_title_words(memory: recuerdo.Memory) -> None:
    assert memory.suggest_key("decision", "", "Adopt Postgres")["key"] == "decision/adopt-postgres"
    key = memory.suggest_key("decision", "!!!", "???")["key"]
    assert (
        key.startswith("decision/n-") and key == memory.suggest_key("decision", "!!!", "???")["key"]
    )


def test_a_capture_says_what_it_left_out_and_cut(memory: recuerdo.Memory) -> None:
    """Learnings past the first 100 were dropped, and one longer than the note size limit
    was stored whole, both unsaid (a hunt over sessions and passive capture)."""
    memory.configure(note_limit_bytes=1_024)
    items = [f"{n}. Learning number {n} says the deploy needs care" for n in range(1, 106)]
    long = "106. " + "the cache warms slowly " * 60
    reply = memory.capture_passive("## Key Learnings\n" + "\n".join([*items, long]))
    assert (reply["extracted"], reply["saved"], reply["left_out"]) == (100, 100, 6)
    assert "truncated" not in reply
    cut = memory.capture_passive("## Key Learnings\n" + long)
    assert cut["truncated"] == 1 and cut["saved"] == 1
    assert len(memory.get(cut["ids"][0])["content"].encode()) <= 1_024
    again = memory.capture_passive("## Key Learnings\n" + long)
    assert (again["saved"], again["duplicates"]) == (0, 1)  # known by the text it was cut to


def test_a_heading_of_many_spaces_is_read_in_linear_time(memory: recuerdo.Memory) -> None:
    """Found by a hunt: the heading pattern backtracked over the spaces of a heading line
    (cubic): 1,000 spaces took 2.6 s, 5,000 four minutes, all inside the write's lock."""
    text = "## a" + " " * 3000 + "x\n\n## Key Learnings\n1. Always run the migrations first.\n"
    started = time.perf_counter()
    reply = memory.capture_passive(text)
    # A bound far from both (milliseconds now, over a minute before): no loaded machine fails it.
    assert time.perf_counter() - started < 10.0
    assert reply["saved"] == 1


@pytest.mark.parametrize("unit", ["_a ", "*a ", "[a](", "[a"])
def test_markup_with_no_closer_is_stripped_in_linear_time(unit: str) -> None:
    """Found by a hunt: each opener with no closer scanned to the end of the text (quadratic):
    24,000 characters of "_a " took 5.4 s, inside capture_passive's write."""
    started = time.perf_counter()
    assert strip_markdown(unit * 30_000) == " ".join((unit * 30_000).split())
    # A bound far from both (about 0.1 s now, 4.5-70 s before): a loaded machine cannot fail it.
    assert time.perf_counter() - started < 3.0


def test_links_keep_a_parenthesis_in_their_address_and_emphasis_nests() -> None:
    text = "See [Foo](https://e.org/Foo_(bar)) and *a _b_ c* but snake_case a*b"
    assert strip_markdown(text) == "See Foo and a b c but snake_case a*b"


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_setext_headings_bound_the_learnings_section(newline: str) -> None:
    """The capture read ATX headings only (the notes read setext ones too since 0153): a
    setext "Key Learnings" was not found, and a learnings section ran on over a setext
    section after it, whose items were captured as learnings (the review of 0153)."""
    item = "1. Always pin the database driver version in CI"
    other = "1. This open question belongs to another section"
    setext = newline.join(["Key Learnings", "-------------", "", item, "", "Next", "----", other])
    assert extract_learnings(setext) == ["Always pin the database driver version in CI"]
    atx = newline.join(["## Key Learnings", "", item, "", "Open questions", "--------------"])
    assert extract_learnings(atx + newline + other) == [
        "Always pin the database driver version in CI"
    ]


def test_a_learnings_heading_inside_a_code_fence_is_not_one() -> None:
    fenced = "```\n## Key Learnings\n1. A learning shown in a code example only\n```\n"
    assert extract_learnings(fenced) == []


def test_a_heading_line_of_spaces_is_read_in_linear_time() -> None:
    started = time.perf_counter()
    extract_learnings("## " + " " * 50_000 + "x\n" + "#" * 3 + " " * 50_000 + "#\n")
    assert time.perf_counter() - started < 1.0
