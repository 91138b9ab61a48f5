"""A write that had a credential replaced says so: ``redacted`` names each argument the guard
changed, with the kinds of secret replaced. A private key's BEGIN marker with no END marker takes
the rest of its text (decision 0080): without the report, a note naming the marker in prose lost
its later sections silently."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, get_type_hints

import pytest
from pydantic import TypeAdapter

import recuerdo
from recuerdo.verbs import VERBS

MARKER = "-----BEGIN RSA PRIVATE KEY-----"
PROSE = f"## Setup\nThe key file starts with {MARKER} or ssh refuses it.\n\n## Rollback\nRedeploy."
TOKEN = "ghp_" + "x" * 36  # a GitHub token's shape
PASSWORD = "password = hunter2hunter2"

Write = Callable[[recuerdo.Memory, str], Any]


def _edit(memory: recuerdo.Memory, text: str) -> Any:
    saved = memory.save("Runbook", "## Deploy\nShip it.")
    return memory.edit(saved["id"], "append", text)


def _send(memory: recuerdo.Memory, text: str) -> Any:
    for name in ("alice", "bob"):
        memory.agent(name).bind_address(f"{name}@local")
    return memory.agent("alice").send_message(["bob@local"], "Deploy", text)


WRITES: dict[str, tuple[Write, str]] = {
    "save": (lambda m, text: m.save("Runbook", text), "content"),
    "edit": (_edit, "content"),
    "remember_about": (lambda m, text: m.remember_about("user", text), "observation"),
    "capture_passive": (lambda m, text: m.capture_passive(text), "text"),
    "remember_knowledge": (lambda m, text: m.remember_knowledge(text), "content"),
    "relate": (
        lambda m, text: m.relate("Ann", "Acme", "works_at", attributes={"note": text}),
        "attributes",
    ),
    "add_messages": (
        lambda m, text: m.add_messages("c1", [{"speaker": "Ann", "text": text}]),
        "messages",
    ),
    "send_message": (_send, "body"),
    "mirror_push": (lambda m, text: m.mirror_push("odd/x/tasks", text), "content"),
    "session_end": (
        lambda m, text: m.session_end(m.session_start("s1")["session"], text),
        "summary",
    ),
}


@pytest.mark.parametrize("verb", list(WRITES))
@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        (PROSE, ["PRIVATE_KEY"]),
        (f"use {TOKEN}, then {PASSWORD}", ["API", "PASSWORD"]),
        ("## Deploy\nNothing secret here.", []),
    ],
    ids=["key-marker", "token-and-password", "clean"],
)
def test_a_write_reports_what_the_guard_replaced(
    memory: recuerdo.Memory, verb: str, text: str, kinds: list[str]
) -> None:
    write, argument = WRITES[verb]
    reply = write(memory, text)
    assert reply["redacted"] == ({argument: kinds} if kinds else {})
    # The reply still matches its published type (which forbids keys it does not declare).
    result = get_type_hints(getattr(recuerdo.Memory, verb))["return"]
    assert TypeAdapter(result).validate_python(reply) == reply


def test_the_prose_marker_reports_the_sections_it_took(memory: recuerdo.Memory) -> None:
    """The case the report is for: the stored note ends at the marker, and the reply says the
    content was not stored as given (the section after it is gone)."""
    saved = memory.save("Runbook", PROSE)
    assert saved["redacted"] == {"content": ["PRIVATE_KEY"]}
    stored = memory.get(saved["id"])["content"]
    assert "Rollback" not in stored and stored.endswith("secret(PRIVATE_KEY)")


def test_a_key_sent_in_pieces_names_each_argument_it_reached(memory: recuerdo.Memory) -> None:
    """The BEGIN line in the title, the body lines in the content: both are reported."""
    body = "MIIBOgIBAAJBAKj34GkxFhD90vcNMIIBOgIBAAJBAKj34GkxAbCdEfGh12345678"
    saved = memory.save(f"key {MARKER}", f"the body:\n{body}\n")
    assert saved["redacted"] == {"title": ["PRIVATE_KEY"], "content": ["PRIVATE_KEY"]}
    assert body not in memory.get(saved["id"])["content"]


def test_every_write_reply_that_carries_text_declares_redacted() -> None:
    """The verbs whose text arguments become stored prose report the guard; a new one of their
    reply types that dropped the field would fail here."""
    reporting = {
        name
        for name in VERBS.names()
        if "redacted" in getattr(VERBS[name].result, "__annotations__", {})
    }
    assert reporting == set(WRITES)
    assert all(VERBS[name].mode == "write" for name in reporting)


def test_an_argument_spelled_with_a_trailing_underscore_is_named_as_the_doors_name_it(
    memory: recuerdo.Memory,
) -> None:
    """``from_`` in Python is ``from`` in every door's schema (the review's)."""
    reply = memory.relate(f"Ann {TOKEN}", "Acme", "works_at")
    assert reply["redacted"] == {"from": ["API"]}


@pytest.mark.parametrize(
    "tags",
    [
        lambda: {TOKEN},
        lambda: frozenset({TOKEN}),
        lambda: deque([TOKEN]),
        lambda: (tag for tag in [TOKEN]),
        lambda: {TOKEN: 1}.keys(),
    ],
    ids=["set", "frozenset", "deque", "generator", "keys-view"],
)
def test_a_secret_in_any_iterable_is_redacted(
    memory: recuerdo.Memory, tags: Callable[[], Iterable[str]]
) -> None:
    """A tag given in a set or a deque (any iterable but a list or a tuple) was stored in
    clear, and the reply said nothing was replaced (the review of decision 0082)."""
    saved = memory.save("Runbook", "Deploy on Mondays.", tags=tags())
    assert saved["redacted"] == {"tags": ["API"]}
    assert memory.get(saved["id"])["tags"] == ["secret(API)"]
    assert TOKEN not in repr(memory.export()["records"])


def test_a_generator_in_a_call_holding_a_key_marker_is_read_once_and_redacted(
    memory: recuerdo.Memory,
) -> None:
    """A call holding a key marker is walked twice; a generator can be read once: its items
    are kept from the first walk (none was lost, and the body line is cut)."""
    body = "MIIBOgIBAAJBAKj34GkxFhD90vcNMIIBOgIBAAJBAKj34GkxAbCdEfGh12345678"
    saved = memory.save(f"key {MARKER}", "text", tags=(t for t in ["ops", body]))
    assert memory.get(saved["id"])["tags"] == ["ops", "secret(PRIVATE_KEY)"]
    assert saved["redacted"] == {"title": ["PRIVATE_KEY"], "tags": ["PRIVATE_KEY"]}


def _append(memory: recuerdo.Memory, start: str, rest: str) -> tuple[Any, int]:
    saved = memory.save("Settings", start)
    return memory.edit(saved["id"], "append", rest), saved["id"]


def _observe(memory: recuerdo.Memory, start: str, rest: str) -> tuple[Any, int]:
    first = memory.remember_about("user", start, category="access")
    return memory.remember_about("user", rest, category="access"), first["note_id"]


@pytest.mark.parametrize(
    ("write", "argument"), [(_append, "content"), (_observe, "observation")], ids=["edit", "about"]
)
def test_a_credential_completed_by_a_write_is_redacted_in_the_joined_note(
    memory: recuerdo.Memory, write: Callable[..., tuple[Any, int]], argument: str
) -> None:
    """A value appended after a note's closing "password:" is a credential in neither text
    alone: it was stored in clear (the review of 0082). The note is redacted whole."""
    reply, note = write(memory, "The staging database password:", "hunter2hunter2")
    assert reply["redacted"] == {argument: ["PASSWORD"]}
    stored = memory.get(note)["content"]
    assert "hunter2" not in stored and stored.endswith("secret(PASSWORD)")
    # Text that completes nothing is not reported.
    clean, _ = write(memory, "The deploy window:", "Mondays after noon")
    assert clean["redacted"] == {}


def test_a_read_names_what_the_writes_stored_redacted(memory: recuerdo.Memory) -> None:
    """Writes store a credential redacted, reads looked for it as given: a plan whose name held
    one was never found again, nor an entry by such a tag (a hunt over the plans)."""
    task = "rotate password=hunter2hunter2"
    memory.create_progress(task, ["revoke", "issue"])
    memory.start_step(task, "revoke")
    assert memory.resume_point(task) == "revoke"
    assert memory.get_progress(task)["task"].endswith("secret(PASSWORD)")
    tag = f"key:{TOKEN}"
    memory.remember("context", "the key moved", [tag])
    assert [e["content"] for e in memory.recall(tags=[tag])] == ["the key moved"]


@pytest.mark.parametrize(
    "name",
    ["sk-support-triage-assistant-01", "Token authentication bot", "ASIAPACIFICDATACENTER01"],
)
def test_a_read_finds_names_stored_as_given(memory: recuerdo.Memory, name: str) -> None:
    """Agent names (and principals, paths) are stored as given: a read that redacted its every
    argument found nothing by a name the guard takes for a credential (the review's)."""
    agent = memory.agent(name)
    agent.remember("context", "written by the agent")
    assert [e["content"] for e in memory.recall(from_=name)] == ["written by the agent"]
