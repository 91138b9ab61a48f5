"""The five edit operations, their refusals, and what an edit records."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.notes.text import apply_edit, check_edit, headings

from .conftest import settled_dump

DOC = "# Plan\n\nIntro line.\n\n## Tasks\n\n- one\n- two\n\n## Notes\n\nSome notes.\n"


@pytest.mark.parametrize(
    ("operation", "content", "section", "find", "expected"),
    [
        ("append", "Tail.", None, None, DOC.rstrip() + "\n\nTail."),
        ("prepend", "Head.", None, None, "Head.\n\n" + DOC.rstrip()),
        ("replace", "All new.", None, None, "All new."),
        (
            "replace_section",
            "- three",
            "Tasks",
            None,
            "# Plan\n\nIntro line.\n\n## Tasks\n\n- three\n\n## Notes\n\nSome notes.\n",
        ),
        (
            "replace_section",
            "Fresh.",
            "## notes",
            None,
            "# Plan\n\nIntro line.\n\n## Tasks\n\n- one\n- two\n\n## Notes\n\nFresh.\n",
        ),
        ("find_replace", "- uno", None, "- one", DOC.replace("- one", "- uno")),
        (
            "find_replace",
            "",
            None,
            "Intro line.\n\n",
            "# Plan\n\n## Tasks\n\n- one\n- two\n\n## Notes\n\nSome notes.\n",
        ),
        ("find_replace", "", None, "- one\n", DOC.replace("- one\n", "")),
    ],
)
def test_operations(
    operation: str, content: str, section: str | None, find: str | None, expected: str
) -> None:
    check_edit(operation, content, section, find)
    assert apply_edit(DOC, operation, content, section=section, find=find) == expected


def test_deleting_rejoins_with_the_larger_break_run() -> None:
    text = "alpha\n\nREMOVE\nbeta"
    assert apply_edit(text, "find_replace", "", find="REMOVE") == "alpha\n\nbeta"
    assert apply_edit("a bad b", "find_replace", "", find="bad") == "a b"
    assert apply_edit("x\n\n\n\nDROP\n\n\n\ny", "find_replace", "", find="DROP") == "x\n\ny"


def test_headings_inside_code_fences_are_not_sections() -> None:
    text = "## Real\n\n```\n## Fake\n```\n"
    assert [h.title for h in headings(text)] == ["Real"]


@pytest.mark.parametrize(
    "block",
    [
        "```\n~~~\n## Fake\n```",  # the other character closes nothing
        "````markdown\n```\n## Fake\n```\n````",  # a shorter run closes nothing
        "```\n``` not a close\n## Fake\n```",  # nor one with text after it
        "~~~~\n## Fake\n~~~~~",
    ],
)
def test_a_fence_is_closed_by_its_own_kind_only_and_the_sections_after_it_stay(block: str) -> None:
    """Found by a hunt: a ``~~~`` line inside a backtick block closed it, so the headings after
    the block were hidden and replacing the section before them deleted them."""
    text = f"## A\n\n{block}\n\n## B\n\nkeep me\n"
    assert [h.title for h in headings(text)] == ["A", "B"]
    replaced = apply_edit(text, "replace_section", "new A", section="A")
    assert replaced == "## A\n\nnew A\n\n## B\n\nkeep me\n"


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("## C#", "C#"),
        ("## C# ##", "C#"),
        ("## C ##", "C"),
        ("## F#sharp #", "F#sharp"),
        ("# #", ""),
    ],
)
def test_a_headings_closing_hashes_follow_a_space(line: str, title: str) -> None:
    """Found by a hunt: "## C#" was read as "C", and section="C#" was not found."""
    assert [h.title for h in headings(f"{line}\n\nbody\n")] == [title]


@pytest.mark.parametrize(("section", "replaced"), [("## C ##", "old"), ("## C#", "sharp")])
def test_a_section_named_by_its_heading_line_with_closing_hashes(
    section: str, replaced: str
) -> None:
    """Found by a hunt: the heading line "## C ##" as the note shows it named "C ##", and the
    section "C" was not found."""
    text = "## C ##\n\nold\n\n## C#\n\nsharp\n"
    result = apply_edit(text, "replace_section", "new", section=section)
    assert result == text.replace(replaced, "new")


@pytest.mark.parametrize(
    ("operation", "text", "content", "expected"),
    [
        ("prepend", "    $ make deploy\n", "Steps:", "Steps:\n\n    $ make deploy"),
        ("append", "Steps:", "\n\n    $ make deploy\n", "Steps:\n\n    $ make deploy"),
        ("prepend", "\n\n\tindented\n", "Head", "Head\n\n\tindented"),
    ],
)
def test_an_added_block_keeps_the_indentation_of_its_first_line(
    operation: str, text: str, content: str, expected: str
) -> None:
    """Found by a hunt: the text after the join lost its first line's indentation."""
    assert apply_edit(text, operation, content) == expected


def test_find_text_that_overlaps_itself_is_ambiguous() -> None:
    """Found by a hunt: "ab ab" is twice in "ab ab ab" (str.count saw it once)."""
    with pytest.raises(recuerdo.FindAmbiguous) as refused:
        apply_edit("ab ab ab", "find_replace", "X", find="ab ab")
    assert refused.value.code == "find_ambiguous"


@pytest.mark.parametrize(
    "block",
    [
        "    ```\n    code",  # indented four spaces: code, not a fence
        "```x``` is inline code",  # a backtick fence's info has no backtick
    ],
)
def test_what_is_not_a_fence_hides_no_section(block: str) -> None:
    """Found by a hunt: these lines opened a fence that hid every heading after them, so the
    section after them was not found."""
    text = f"## A\n\n{block}\n\n## B\n\nold\n"
    assert [h.title for h in headings(text)] == ["A", "B"]
    assert apply_edit(text, "replace_section", "new", section="B").endswith("## B\n\nnew\n")


def test_a_heading_may_be_indented_three_spaces() -> None:
    """Found by a hunt: "   ## B" is a heading (CommonMark), and its section was not found."""
    text = "# A\n\n   ## B\n\nold\n\n    ## not one\n"
    assert [h.title for h in headings(text)] == ["A", "B"]


@pytest.mark.parametrize(
    ("text", "operation", "content", "section", "find", "expected"),
    [
        ("a\r\n\r\nDROP\r\nb", "find_replace", "", None, "DROP", "a\r\n\r\nb"),
        ("a\r\n\r\nDROP\r\n\r\nb", "find_replace", "", None, "DROP", "a\r\n\r\nb"),
        ("a\r\nDROP\r\nb", "find_replace", "", None, "DROP\r\n", "a\r\nb"),
        ("a\r\nb\r\n", "append", "c", None, None, "a\r\nb\r\n\r\nc"),
        ("a\r\nb", "prepend", "c", None, None, "c\r\n\r\na\r\nb"),
        (
            "# A\r\n\r\n## B\r\n\r\nold\r\n\r\n## C\r\nw\r\n",
            "replace_section",
            "new\r\n",
            "B",
            None,
            "# A\r\n\r\n## B\r\n\r\nnew\r\n\r\n## C\r\nw\r\n",
        ),
        ("# A\r\n\r\nold\r\n", "replace_section", "new", "A", None, "# A\r\n\r\nnew\r\n"),
    ],
)
def test_an_edit_of_a_crlf_note_joins_with_crlf(
    text: str, operation: str, content: str, section: str | None, find: str | None, expected: str
) -> None:
    """Found by a hunt: deleting from a CRLF note counted each CRLF as two breaks (paragraphs
    drifted apart) and joined with LF; appends and sections added LF among CRLF lines."""
    assert apply_edit(text, operation, content, section=section, find=find) == expected


@pytest.mark.parametrize(
    ("find", "content", "expected"),
    [
        ("- one\n- two", "- uno\n- dos", "# L\r\n\r\n- uno\r\n- dos\r\n"),
        ("- one\n", "", "# L\r\n\r\n- two\r\n"),
        ("- one\r\n- two", "x", "# L\r\n\r\nx\r\n"),  # exact CRLF as before
    ],
)
def test_a_find_with_lf_breaks_matches_a_crlf_note(find: str, content: str, expected: str) -> None:
    """Found by a hunt: a passage sent with LF breaks was "not found" in a CRLF note that held
    it; the replacement follows the note's breaks too."""
    text = "# L\r\n\r\n- one\r\n- two\r\n"
    assert apply_edit(text, "find_replace", content, find=find) == expected


def test_a_crlf_note_keeps_its_line_breaks_through_edits(memory: recuerdo.Memory) -> None:
    note = memory.save("Plan", "# Plan\r\n\r\nIntro.\r\n\r\nDROP\r\n\r\n## Tasks\r\n\r\n- one")
    memory.edit(note["id"], "find_replace", "", find="DROP")
    memory.edit(note["id"], "replace_section", "- two", section="Tasks")
    memory.edit(note["id"], "append", "Tail.")
    content = memory.get(note["id"])["content"]
    assert content == "# Plan\r\n\r\nIntro.\r\n\r\n## Tasks\r\n\r\n- two\r\n\r\nTail."


@pytest.mark.parametrize(
    ("operation", "content", "section", "find", "error", "message"),
    [
        ("rewrite", "x", None, None, recuerdo.InvalidOperation, "Unknown edit operation"),
        ("append", None, None, None, recuerdo.OperationContentMismatch, "append needs content"),
        ("append", "  ", None, None, recuerdo.OperationContentMismatch, "non-empty content"),
        (
            "replace_section",
            "x",
            None,
            None,
            recuerdo.OperationContentMismatch,
            "needs the heading",
        ),
        (
            "find_replace",
            "x",
            None,
            None,
            recuerdo.OperationContentMismatch,
            "needs the text to find",
        ),
        (
            "append",
            "x",
            "Tasks",
            None,
            recuerdo.OperationContentMismatch,
            "section is only used by replace_section",
        ),
        (
            "replace",
            "x",
            None,
            "y",
            recuerdo.OperationContentMismatch,
            "find is only used by find_replace",
        ),
        (
            "replace_section",
            "x",
            "Missing",
            None,
            recuerdo.SectionNotFound,
            'No section titled "Missing". Headings present: "Plan", "Tasks", "Notes"',
        ),
        ("find_replace", "x", None, "absent", recuerdo.FindNotFound, "does not occur"),
        ("find_replace", "x", None, "- ", recuerdo.FindAmbiguous, "occurs 2 times"),
    ],
)
def test_edit_refusals_change_nothing(
    file_memory: recuerdo.Memory,
    operation: str,
    content: str | None,
    section: str | None,
    find: str | None,
    error: type[recuerdo.RecuerdoError],
    message: str,
) -> None:
    note = file_memory.save("Plan", DOC)
    before = settled_dump(file_memory)
    with pytest.raises(error) as caught:
        file_memory.edit(note["id"], operation, content, section=section, find=find)  # type: ignore[arg-type]
    assert message in caught.value.detail
    assert settled_dump(file_memory) == before


def test_section_not_found_lists_headings(memory: recuerdo.Memory) -> None:
    note = memory.save("Plan", DOC)
    with pytest.raises(recuerdo.SectionNotFound) as caught:
        memory.edit(note["id"], "replace_section", "x", section="Nope")
    assert caught.value.code == "section_not_found" and caught.value.status == 422
    assert caught.value.extra["headings"] == ["Plan", "Tasks", "Notes"]


def test_edit_records_a_revision_unless_nothing_changes(memory: recuerdo.Memory) -> None:
    note = memory.save("Plan", DOC)
    same = memory.edit(note["id"], "find_replace", "- one", find="- one")
    assert same["outcome"] == "unchanged" and same["version"] == 1
    assert len(memory.history(note["id"])) == 1
    changed = memory.agent("Editor").edit(note["id"], "find_replace", "- ONE", find="- one")
    assert changed["outcome"] == "edited" and changed["version"] == 2
    assert (changed["chars_added"], changed["chars_removed"]) == (3, 3)
    last = memory.history(note["id"])[-1]
    assert (last["operation"], last["principal"], last["version"]) == ("edit", "Editor", 2)


def test_edit_renames_and_rewrites_in_one_revision(memory: recuerdo.Memory) -> None:
    """A title changes with or without the text, one revision each time; the earlier titles
    stay in the history; the same title again writes nothing."""
    note = memory.save("Old title", "old body")
    both = memory.edit(note["id"], "replace", "new body", title="New title")
    assert (both["outcome"], both["version"], both["title"]) == ("edited", 2, "New title")
    renamed = memory.edit(note["id"], title="Newest title")
    assert (renamed["operation"], renamed["version"]) == (None, 3)
    current = memory.get(note["id"])
    assert (current["title"], current["content"]) == ("Newest title", "new body")
    titles = [memory.revision(note["id"], v)["title"] for v in (1, 2, 3)]
    assert titles == ["Old title", "New title", "Newest title"]
    assert memory.edit(note["id"], title="Newest title")["outcome"] == "unchanged"
    assert len(memory.history(note["id"])) == 3
    memory._upkeep.drain()
    assert [hit["id"] for hit in memory.search("newest")["results"]] == [note["id"]]


def test_stale_version_token_is_refused(file_memory: recuerdo.Memory) -> None:
    note = file_memory.save("Plan", DOC)
    token = note["version_token"]
    file_memory.edit(note["id"], "append", "first", version_token=token)
    before = settled_dump(file_memory)
    with pytest.raises(recuerdo.VersionConflict) as caught:
        file_memory.edit(note["id"], "append", "second", version_token=token)
    assert caught.value.code == "version_conflict"
    assert caught.value.extra["current_version_token"] == f"{note['id']}:2"
    assert settled_dump(file_memory) == before


def test_edit_over_the_limit_is_refused(memory: recuerdo.Memory) -> None:
    memory.configure(note_limit_bytes=1024)
    note = memory.save("Small", "start")
    with pytest.raises(recuerdo.ContentTooLarge):
        memory.edit(note["id"], "append", "y" * 2000)
    assert memory.get(note["id"])["content"] == "start"


@settings(max_examples=150, deadline=None)
@given(
    before=st.text(alphabet="ab \n", max_size=30),
    middle=st.text(alphabet="XYZ", min_size=1, max_size=5),
    after=st.text(alphabet="ab \n", max_size=30),
)
def test_deleting_a_unique_passage_leaves_the_rest(before: str, middle: str, after: str) -> None:
    text = before + middle + after
    result = apply_edit(text, "find_replace", "", find=middle)
    assert middle not in result
    assert result.replace("\n", "").replace(" ", "") == (before + after).replace("\n", "").replace(
        " ", ""
    )
    assert "\n\n\n" not in result or "\n\n\n" in before or "\n\n\n" in after


def test_an_observation_joins_a_crlf_category_note_with_crlf(memory: recuerdo.Memory) -> None:
    first = memory.remember_about("user", "Likes tea.\r\nAnd biscuits.", category="food")
    memory.remember_about("user", "Dislikes coffee.", category="food")
    content = memory.get(first["note_id"])["content"]
    assert content == "Likes tea.\r\nAnd biscuits.\r\n\r\nDislikes coffee."


@pytest.mark.parametrize(
    "given", ["## Tasks\n\n- three", "## tasks\n- three\n", "\n## Tasks ##\n\n- three"]
)
def test_a_section_given_with_its_own_heading_is_not_doubled(
    memory: recuerdo.Memory, given: str
) -> None:
    """Found by a hunt: content that opens with the section's heading (the section as get
    shows it) stacked a second heading under the first; the note then held two "Tasks"
    sections and the next replace_section of it was refused as ambiguous."""
    note = memory.save("Plan", DOC)
    memory.edit(note["id"], "replace_section", given, section="Tasks")
    memory.edit(note["id"], "replace_section", "- four", section="Tasks")
    titles = [h.title.casefold() for h in headings(memory.get(note["id"])["content"])]
    assert titles == ["plan", "tasks", "notes"]  # the heading as given, once
    assert "- four\n\n## Notes" in memory.get(note["id"])["content"]


def test_a_heading_of_many_spaces_is_read_in_linear_time() -> None:
    """Found by a hunt: the closing-hashes pattern backtracked over every run of spaces in a
    heading line (quadratic): 40,000 spaces took 12 s, inside replace_section's write."""
    text = "## a" + " " * 30_000 + "x ##\n\nold\n"
    started = time.perf_counter()
    assert [h.title for h in headings(text)] == ["a" + " " * 30_000 + "x"]
    # A bound far from both (milliseconds now, 9 s before): a loaded machine cannot fail it.
    assert time.perf_counter() - started < 5.0
