"""The read verbs the memory lens needs (overview, list_notes, links, conflicts) and its signed
sessions: what they answer, what they refuse, and that a forged session opens nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo
from recuerdo.errors import InvalidInput, ItemNotFound
from recuerdo.security.sessions import SESSION_SECONDS, SessionKeys
from recuerdo.security.tokens import TokenStore


def test_overview_counts_by_type_category_writer_scope_and_kind(memory: recuerdo.Memory) -> None:
    memory.remember("preference", "Tea")
    memory.agent("planner").remember("decision", "Ship")
    memory.save("Plan", "Text", kind="decision", scope="project:shop")
    memory.remember_about("user", "Short answers", category="style")
    memory.mute("style")
    gone = memory.save("Old", "x")["id"]
    memory.delete(gone)
    memory.create_progress("import", ["a"])
    memory.add_rule("cap", "must", "d <= 1")
    counts = memory.overview()
    assert counts["items"] == {"entry": 2, "note": 2}
    assert counts["deleted_notes"] == 1
    assert {(e["category"], e["source"]) for e in counts["entries"]} == {
        ("decision", "planner"),
        ("preference", "main"),
    }
    by_scope = {(n["scope"], n["kind"]): n for n in counts["notes"]}
    assert by_scope[("project:shop", "decision")]["axis"] == "project"
    assert by_scope[("user", "memory")]["muted"] == 1
    assert (counts["plans"], counts["rules"]) == (1, 1)


def test_overview_sees_only_its_tenant(memory: recuerdo.Memory) -> None:
    memory.for_tenant("a").remember("context", "A's")
    assert memory.for_tenant("b").overview()["items"] == {}


def test_list_notes_filters_sorts_and_lists_deleted(memory: recuerdo.Memory) -> None:
    first = memory.save("B first", "one", scope="project:x")["id"]
    second = memory.save("A second", "two")["id"]
    assert [n["id"] for n in memory.list_notes()["notes"]] == [second, first]
    assert [n["id"] for n in memory.list_notes(sort="title")["notes"]] == [second, first]
    assert [n["id"] for n in memory.list_notes(scope="project:x")["notes"]] == [first]
    memory.delete(first)
    assert [n["id"] for n in memory.list_notes(status="deleted")["notes"]] == [first]
    assert memory.list_notes(limit=1) | {"notes": []} == {"notes": [], "count": 1, "more": False}


@pytest.mark.parametrize(
    "arguments", [{"status": "gone"}, {"sort": "size"}, {"limit": 0}, {"limit": True}]
)
def test_list_notes_refuses_bad_arguments(memory: recuerdo.Memory, arguments: dict) -> None:
    with pytest.raises(InvalidInput):
        memory.list_notes(**arguments)


def test_links_both_ways_and_conflicts_kept_whole(memory: recuerdo.Memory) -> None:
    target = memory.save("Target", "t")["id"]
    source = memory.save("Source", "see [[Target]]", key="s")["id"]
    assert [i["id"] for i in memory.links(source)["outgoing"]] == [target]
    assert [i["id"] for i in memory.links(target)["incoming"]] == [source]
    memory.edit(source, "append", "more")
    with pytest.raises(recuerdo.Conflict):
        memory.save("Source", "stale text", key="s", expected_version=1)
    [conflict] = memory.conflicts(source)
    assert (conflict["content"], conflict["based_on"]) == ("stale text", 1)


def test_links_and_conflicts_of_another_tenants_note_are_not_found(
    memory: recuerdo.Memory,
) -> None:
    note = memory.for_tenant("a").save("Private", "x")["id"]
    for verb in (memory.for_tenant("b").links, memory.for_tenant("b").conflicts):
        with pytest.raises(ItemNotFound):
            verb(note)


def test_a_session_reads_back_until_it_expires(tmp_path: Path) -> None:
    keys = SessionKeys(tmp_path)
    session = keys.issue("token", "abc123", now=1000)
    assert keys.read(session.value, now=1000 + SESSION_SECONDS - 1) == session
    assert keys.read(session.value, now=1000 + SESSION_SECONDS + 1) is None
    assert (tmp_path / ".recuerdo" / "lens.key").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    "tamper",
    [
        lambda v: v.replace("token.abc123", "token.zzz999"),
        lambda v: v.replace("token.", "local.", 1),
        lambda v: v[:-1] + ("0" if v[-1] != "0" else "1"),
        lambda v: v + ".x",
        lambda v: "",
        lambda v: "é" + v,
    ],
)
def test_a_tampered_session_is_nobody(tmp_path: Path, tamper: object) -> None:
    keys = SessionKeys(tmp_path)
    session = keys.issue("token", "abc123")
    assert keys.read(tamper(session.value)) is None  # type: ignore[operator]


def test_csrf_tokens_belong_to_one_session(tmp_path: Path) -> None:
    keys = SessionKeys(tmp_path)
    one, two = keys.issue("anon"), keys.issue("anon")
    assert keys.csrf_matches(one, keys.csrf(one))
    assert not keys.csrf_matches(one, keys.csrf(two))
    assert not keys.csrf_matches(one, None)
    assert not keys.csrf_matches(None, keys.csrf(one))


def test_another_server_key_signs_different_sessions(tmp_path: Path) -> None:
    session = SessionKeys(tmp_path / "one").issue("local")
    assert SessionKeys(tmp_path / "two").read(session.value) is None
    assert SessionKeys(tmp_path / "one").read(session.value) == session  # a restart keeps it


def test_a_revoked_token_or_a_logged_out_session_has_no_principal(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    token_id, _ = store.create(principal="p", tenant="t", read_only=True)
    principal = store.principal_of_session(token_id, "n1")
    assert principal is not None and principal.read_only and principal.tenant == "t"
    store.end_session("n1", 2**40)
    assert store.principal_of_session(token_id, "n1") is None  # logged out
    assert store.principal_of_session(token_id, "n2") is not None  # another session
    store.revoke(token_id)
    assert store.principal_of_session(token_id, "n2") is None
    assert store.principal_of_session("no-such-id", "n3") is None
    store.close()
