"""Setext headings (a line of text over a line of ``=`` or ``-``) name sections as ATX
headings do (CommonMark): ``replace_section`` refused them as not found, and a section under
an ATX heading took every setext section after it with it (decision 0153)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.notes.text import apply_edit, headings

NOTE = "Plan\n====\n\nintro\n\nSteps\n-----\n\nold steps\n\nRisks\n-----\n\nold risks\n"


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ("Steps", "Plan\n====\n\nintro\n\nSteps\n-----\n\nnew\n\nRisks\n-----\n\nold risks\n"),
        ("Risks", "Plan\n====\n\nintro\n\nSteps\n-----\n\nold steps\n\nRisks\n-----\n\nnew\n"),
        ("Plan", "Plan\n====\n\nnew\n"),  # a level-1 section holds the level-2 ones
    ],
)
def test_a_setext_heading_names_its_section(section: str, expected: str) -> None:
    assert apply_edit(NOTE, "replace_section", "new", section=section) == expected


def test_an_atx_section_ends_at_a_setext_heading_of_its_level() -> None:
    text = "## Steps\n\nold\n\nRisks\n-----\n\nkept\n"
    result = apply_edit(text, "replace_section", "new", section="Steps")
    assert result == "## Steps\n\nnew\n\nRisks\n-----\n\nkept\n"


@pytest.mark.parametrize(
    ("text", "titles"),
    [
        ("Plan\n====\n", [(1, "Plan")]),
        ("  Plan  \n---   \n", [(2, "Plan")]),
        ("first line\nsecond line\n---\n", [(2, "first line second line")]),
        ("text\n\n---\n", []),  # after a blank line: a thematic break
        ("- item\n---\n", []),  # a list item's text is not a paragraph here
        ("> quote\n---\n", []),
        ("# Title\n---\n", [(1, "Title")]),  # an ATX heading is no paragraph
        ("```\ncode\n---\n```\n", []),
        ("    code\n---\n", []),  # indented code, not a paragraph
        ("---\ntitle: x\n---\n\nBody\n====\n", [(1, "Body")]),  # front matter
        ("a\n    ===\n", []),  # an underline indented four spaces is text
        ("a\n= =\n", []),
        ("text\n\n---\nmore\n===\n", [(1, "more")]),  # a break is no paragraph's line
        ("a\n***\nb\n---\n", [(2, "b")]),  # a break ends the paragraph before it
    ],
)
def test_which_lines_are_setext_headings(text: str, titles: list[tuple[int, str]]) -> None:
    assert [(h.level, h.title) for h in headings(text)] == titles


def test_content_that_opens_with_the_setext_heading_replaces_it(memory: recuerdo.Memory) -> None:
    note = memory.save("Runbook", NOTE)
    memory.edit(note["id"], "replace_section", "Steps\n-----\n\nnew steps", section="Steps")
    content = memory.get(note["id"])["content"]
    assert content.count("Steps") == 1 and "new steps" in content and "old steps" not in content
    memory.edit(note["id"], "replace_section", "newer", section="Steps")  # not ambiguous
    assert "newer" in memory.get(note["id"])["content"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["Title", "text", "", "===", "---", "## H", "```", "- x", "> q", "    c"]),
        max_size=30,
    )
)
def test_reading_headings_never_fails_and_keeps_their_lines_apart(lines: list[str]) -> None:
    found = headings("\n".join(lines))
    spans = [(h.line, h.end) for h in found]
    assert all(start <= end for start, end in spans)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))


def test_a_crlf_note_s_setext_headings_name_its_sections() -> None:
    """Lines were split on LF alone: a CRLF note's underline ended in a carriage return and
    was read as text, so its setext sections were "not found", and an ATX section took them
    with it (the review of 0153)."""
    crlf = NOTE.replace("\n", "\r\n")
    assert [(h.level, h.title) for h in headings(crlf)] == [(1, "Plan"), (2, "Steps"), (2, "Risks")]
    result = apply_edit(crlf, "replace_section", "new", section="Steps")
    assert result == NOTE.replace("old steps", "new").replace("\n", "\r\n")
    text = "## Steps\r\n\r\nold\r\n\r\nRisks\r\n-----\r\n\r\nkept\r\n"
    result = apply_edit(text, "replace_section", "new", section="Steps")
    assert result == "## Steps\r\n\r\nnew\r\n\r\nRisks\r\n-----\r\n\r\nkept\r\n"
    fronted = "---\r\ntitle: x\r\n---\r\nPlan\r\n====\r\n"
    assert [h.title for h in headings(fronted)] == ["Plan"]
