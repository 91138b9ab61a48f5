"""What an edit stores is what the secret guard stores for the note's whole text after it: the
edit's content is not redacted on its own first (decision 0141). Redacted alone, a fragment
lost what made the whole a credential (an END marker appended under a key's body lines became
``secret(PRIVATE_KEY)`` before it was joined, and the body stayed in clear), or was mangled
while the credential it completed stayed (``password =`` became ``password secret(PASSWORD)``
and the value after it in the note was kept)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.core.secrets import redact_call, redact_whole
from recuerdo.notes.text import apply_edit

from .conftest import OverHttp

BEGIN, END = "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----"
# Body lines of a key: one line alone, or two and a short last line, are not a key to the
# guard until a marker stands with them (three full lines are, whatever surrounds them).
LINE = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
LINE2 = "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi4Y2u6ChMcTIbUkkQvHY0gnNjq"
TAIL = "ShJS5Npw5nIPyqTaHphAbBicJCc="
BODY = f"{LINE}\n{LINE2}\n{TAIL}"
VALUE = "hunter2hunter2"

# (note as saved, operation, content, section, find): each whole text after the edit holds a
# credential that neither the note nor the edit's content holds alone.
COMPLETING = {
    "append_end": (f"Parts:\n\n{BODY}", "append", END, None, None),
    "append_end_one_line": (f"Parts:\n\n{LINE}", "append", END, None, None),
    "prepend_begin": (f"{LINE}\n{TAIL}\n\nmore", "prepend", BEGIN, None, None),
    "find_replace_end": (f"Parts:\n{BODY}\nEOF here", "find_replace", END, None, "EOF here"),
    "find_replace_password": (f"the db: {VALUE}", "find_replace", "password =", None, "the db:"),
    "find_replace_name": (f"db = {VALUE}", "find_replace", "db_password", None, "db"),
    "section_begin": (
        f"# Ops\n\nsoon\n\n## Body\n\n{LINE}\n{TAIL}\n",
        "replace_section",
        BEGIN,
        "Ops",
        None,
    ),
}


def _guarded(text: str) -> str:
    """What the guard stores for ``text`` sent whole."""
    return str(redact_call({"content": text})["content"])


_PIECES = st.sampled_from(
    [BEGIN, END, LINE, LINE2, TAIL, "password =", " ", "\n", "\n\n", VALUE, "# H", "db: "]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=8).map("".join))
def test_redact_whole_is_the_guard_of_a_text_sent_alone(text: str) -> None:
    found: dict[str, list[str]] = {}
    cleaned = redact_call({"content": text}, found)["content"]
    whole = redact_whole(text)
    assert whole.text == cleaned
    assert sorted(whole.found) == sorted(found.get("content", []))


def _secrets_of(note: str) -> list[str]:
    return [part for part in (LINE, LINE2, TAIL, VALUE) if part in note]


@pytest.mark.parametrize("case", list(COMPLETING))
def test_an_edit_that_completes_a_credential_stores_it_redacted(
    memory: recuerdo.Memory, case: str
) -> None:
    note, operation, content, section, find = COMPLETING[case]
    saved = memory.save("Note", note)
    before = memory.get(saved["id"])["content"]
    assert _secrets_of(before), "the note as saved holds the parts in clear"
    edited = memory.edit(saved["id"], operation, content, section=section, find=find)
    stored = memory.get(saved["id"])["content"]
    whole = apply_edit(before, operation, content, section=section, find=find)
    assert stored == _guarded(whole)
    assert not _secrets_of(stored)
    assert edited["redacted"].get("content"), edited


# (note, operation, content, section, find): harmless text that the guard, reading the note
# whole, leaves as it is; redacted alone, the fragment was rewritten.
HARMLESS = {
    "append": ("Setup steps.", "append", "password =", None, None),
    "prepend": ("(setup steps)", "prepend", "password =", None, None),
    "section": ("# B\n\nkept\n\n# A\n\nold\n", "replace_section", "password =", "A", None),
    "find_replace": ("Fields: pw, user", "find_replace", "password =", None, "pw"),
    "replace": ("old", "replace", "password =", None, None),
}


@pytest.mark.parametrize("case", list(HARMLESS))
def test_a_harmless_fragment_is_stored_as_given(memory: recuerdo.Memory, case: str) -> None:
    note, operation, content, section, find = HARMLESS[case]
    saved = memory.save("Note", note)
    edited = memory.edit(saved["id"], operation, content, section=section, find=find)
    stored = memory.get(saved["id"])["content"]
    whole = apply_edit(note, operation, content, section=section, find=find)
    assert stored == whole == _guarded(whole)
    assert not edited["redacted"]


@pytest.mark.parametrize(
    "content",
    [
        f"{BEGIN}\n{BODY}\n{END}",  # a whole key
        f"password = {VALUE} and ghp_{'x' * 36}",  # two credentials of the edit alone
        f"{LINE}\n{TAIL}\n\n{END}",
    ],
)
@pytest.mark.parametrize("operation", ["append", "prepend", "replace", "replace_section"])
def test_a_credential_of_the_edit_alone_is_still_redacted(
    memory: recuerdo.Memory, operation: str, content: str
) -> None:
    note = "# Ops\n\nsteps\n\n# Other\n\nkept\n"
    saved = memory.save("Note", note)
    section = "Ops" if operation == "replace_section" else None
    edited = memory.edit(saved["id"], operation, content, section=section)
    stored = memory.get(saved["id"])["content"]
    assert stored == _guarded(apply_edit(note, operation, content, section=section))
    assert not _secrets_of(stored) and "ghp_" not in stored
    assert edited["redacted"]["content"]


def test_an_upsert_by_key_stores_what_the_guard_stores_for_the_text(
    memory: recuerdo.Memory,
) -> None:
    first = memory.save("Note", f"Parts:\n\n{LINE}", key="ops/key")
    text = f"Parts:\n\n{LINE}\n\n{END}\n\npassword ="
    again = memory.save("Note", text, key="ops/key")
    assert again["id"] == first["id"]
    stored = memory.get(first["id"])["content"]
    assert stored == _guarded(text) and LINE not in stored
    assert stored.endswith("\n\npassword =")  # a name alone is no credential


@pytest.mark.parametrize(
    ("first", "then"),
    [(LINE, END), (f"{LINE}\n{TAIL}", END), ("the db:", "password ="), ("Setup.", "password =")],
    ids=["end_marker", "end_marker_two_lines", "name_after_prose", "name_alone"],
)
def test_remember_about_stores_the_category_note_guarded_whole(
    memory: recuerdo.Memory, first: str, then: str
) -> None:
    created = memory.remember_about("user", first, category="ops")
    before = memory.get(created["note_id"])["content"]
    appended = memory.remember_about("user", then, category="ops")
    stored = memory.get(created["note_id"])["content"]
    assert stored == _guarded(f"{before}\n\n{then}")
    assert "password secret(" not in stored and not _secrets_of(stored)
    assert bool(appended["redacted"]) == ("secret(" in stored)


def test_a_retried_remember_about_holding_a_credential_is_skipped(
    memory: recuerdo.Memory,
) -> None:
    for outcome in ("created", "skipped"):
        reply = memory.remember_about(
            "user", f"password = {VALUE}", category="ops", idempotency_key="k1"
        )
        assert reply["outcome"] == outcome and reply["redacted"] == {"observation": ["PASSWORD"]}
    assert VALUE not in memory.get(reply["note_id"])["content"]


@pytest.mark.parametrize("case", ["append_end", "find_replace_password", "prepend_begin"])
def test_over_http_an_edit_is_guarded_whole(over_http: OverHttp, case: str) -> None:
    note, operation, content, section, find = COMPLETING[case]
    saved = over_http("save", {"title": "Note", "content": note})
    edit = {"id": saved["id"], "operation": operation, "content": content}
    edit.update({k: v for k, v in (("section", section), ("find", find)) if v is not None})
    edited = over_http("edit", edit)
    stored = over_http("get", {"id": saved["id"]})["content"]
    assert not _secrets_of(stored) and edited["redacted"]["content"]
    assert "password secret(PASSWORD)" not in stored


@pytest.fixture
def older_release(memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A note saved with a credential in clear, as a release whose guard missed it stored it;
    the guard as it is now for what follows."""
    import recuerdo.facade

    with monkeypatch.context() as unguarded:
        unguarded.setattr(recuerdo.facade, "redact_call", lambda arguments, found=None: arguments)
        saved = memory.save("Note", f"db: pg\npassword = {VALUE}\n\nsteps")
    assert VALUE in memory.get(saved["id"])["content"]
    yield saved["id"]


def test_an_edit_redacts_a_credential_an_older_release_stored(
    memory: recuerdo.Memory, older_release: int
) -> None:
    edited = memory.edit(older_release, "append", "more steps")
    stored = memory.get(older_release)["content"]
    assert VALUE not in stored and edited["redacted"] == {"content": ["PASSWORD"]}
    assert stored == _guarded(f"db: pg\npassword = {VALUE}\n\nsteps\n\nmore steps")


def test_an_edit_that_redacts_a_stored_credential_scrubs_the_earlier_versions(
    memory: recuerdo.Memory, older_release: int
) -> None:
    memory.edit(older_release, "append", "more steps")
    assert VALUE not in memory.revision(older_release, 1)["content"]
