"""A token limited to scopes reads and changes nothing of another scope, whatever way it names
it: a context set, a link walked by context, a note's id, the scope list of status, a refusal's
message (a hunt over the doors). A view made with ``scopes`` is what the doors give such a token.
Each test fails on the code before."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo

from .conftest import Server, boss_and_lim

SECRET = "Project B payroll is 1.2M"
Setting = tuple[recuerdo.Memory, recuerdo.Memory, dict[str, int]]


@pytest.fixture
def setting(memory: recuerdo.Memory) -> Setting:
    """The owner's notes in project:a and project:b, a set and a link across them; ``lim``,
    a token holder limited to project:a."""
    ids = {
        "a": memory.save("A plan", "Launch checklist for A", scope="project:a")["id"],
        "b": memory.save("B secret", SECRET, scope="project:b")["id"],
    }
    memory.context_set("team", [ids["a"], ids["b"]])
    memory.link(ids["a"], ids["b"])
    return memory, memory.for_principal("lim", memory.tenant, scopes=["project:a"]), ids


def test_a_context_set_shows_only_the_scopes_reached(setting: Setting) -> None:
    memory, lim, _ = setting
    assert SECRET in memory.recent(scope="project:a", context_set_name="team")["text"]
    shown = lim.recent(scope="project:a", context_set_name="team")["text"]
    assert "Launch checklist" in shown and SECRET not in shown
    pack = lim.context("launch checklist", scope="project:a", context_set_name="team")
    assert SECRET not in pack["context"]
    assert {s["scope"] for s in pack["sources"]} == {"project:a"}


def test_a_link_is_not_walked_out_of_the_scopes_reached(setting: Setting) -> None:
    memory, lim, _ = setting
    # Asked of every scope, the link is walked; the limited view walks it out of nothing (a
    # scope named keeps the walk in it for anyone: decision 0103), and names no scope at all
    # no more than the doors let it (tests/test_scope_reach_view.py).
    assert SECRET in memory.context("launch checklist", depth=1)["context"]
    assert SECRET not in memory.context("launch checklist", scope="project:a", depth=1)["context"]
    with pytest.raises(recuerdo.CapabilityNotGranted):
        lim.context("launch checklist", depth=1)
    assert SECRET not in lim.context("launch checklist", scope="project:a", depth=1)["context"]


@pytest.mark.parametrize("limited", [True, False])
def test_review_marks_only_a_note_of_the_scope_named(setting: Setting, limited: bool) -> None:
    memory, lim, ids = setting
    caller = lim if limited else memory
    before = memory.get(ids["b"])["review_at"]
    journal = len(memory.journal(scope="project:b"))
    with pytest.raises(recuerdo.ItemNotFound) as refused:
        caller.review("mark_reviewed", id=ids["b"], scope="project:a")
    assert "project:b" not in str(refused.value)
    assert memory.get(ids["b"])["review_at"] == before
    assert len(memory.journal(scope="project:b")) == journal
    assert caller.review("mark_reviewed", id=ids["a"], scope="project:a")["id"] == ids["a"]


def test_status_names_only_the_scopes_reached(setting: Setting) -> None:
    memory, lim, _ = setting
    assert {s["scope"] for s in memory.status()["scopes"]} >= {"project:a", "project:b"}
    assert [s["scope"] for s in lim.status(scope="project:a")["scopes"]] == ["project:a"]


def test_a_refusal_names_no_scope_beyond_reach(setting: Setting) -> None:
    memory, lim, _ = setting
    doc = memory.remember_knowledge("The merger closes in May.", scope="project:secret")
    with pytest.raises(recuerdo.ItemNotFound) as refused:
        lim.forget_knowledge("project:a", passage=doc["doc_id"])
    assert "project:secret" not in str(refused.value)
    assert memory.search("merger", scope="project:secret")["results"]


def test_the_audit_shows_no_read_that_named_a_scope_beyond_reach(setting: Setting) -> None:
    """A search over several scopes is filed under its first: the confined caller read its
    query, the other scope's name and the ids it returned (the review of 0097)."""
    memory, lim, ids = setting
    memory.search("payroll", scope=["project:a", "project:b"])
    memory.search("launch checklist", scope="project:a")
    memory.search("payroll", scope="project:b")
    memory._audit.flush(memory._store)
    seen = lim.audit(scope="project:a")
    assert [record["query"] for record in seen] == ["launch checklist"]
    assert all(ids["b"] not in record["returned"] for record in seen)
    assert len(memory.audit(scope="project:a")) == 2  # the owner's view is as it was
    # A page reads on past what it leaves out: cut after the LIMIT, it came back empty.
    memory.search("payroll again", scope=["project:a", "project:b"])
    memory._audit.flush(memory._store)
    assert [r["query"] for r in lim.audit(scope="project:a", limit=1)] == ["launch checklist"]


def test_a_reply_refused_names_no_scope_beyond_reach(memory: recuerdo.Memory) -> None:
    boss = memory.agent("boss")
    boss.bind_address("boss@local")
    lim = memory.for_principal("lim", memory.tenant, scopes=["project:a"])
    lim.bind_address("lim@local")
    sent = boss.send_message(["lim@local"], "merger", "the terms", scope="project:secret")
    with pytest.raises(recuerdo.MessageNotFound) as refused:
        lim.send_message(["boss@local"], "re", "ok", reply_to=sent["id"], scope="project:a")
    assert "project:secret" not in str(refused.value)
    assert len(boss.thread(sent["conversation_id"])["messages"]) == 1


def test_a_conversation_of_the_same_name_in_another_scope_is_not_context(
    memory: recuerdo.Memory,
) -> None:
    """The turns beside a message were taken from any scope's conversation of that name: a
    search in one scope answered for the other's words."""
    memory.add_messages("standup", [{"speaker": "alice", "text": "We acquire Initech"}], scope="b")
    memory.add_messages("standup", [{"speaker": "lim", "text": "noted, thanks"}], scope="a")
    memory._upkeep.drain()
    assert memory.search("Initech", scope="a")["results"] == []
    assert memory.search("Initech", scope="b")["results"]


def test_a_scope_limited_token_over_http_reads_no_set_beyond_its_scope(tmp_path: Path) -> None:
    owner, limited = boss_and_lim(tmp_path)
    server = Server(tmp_path)
    try:
        a = server.ok(owner, "save", {"title": "A", "content": "alpha", "scope": "project:a"})["id"]
        b = server.ok(owner, "save", {"title": "B", "content": SECRET, "scope": "project:b"})["id"]
        server.ok(owner, "context_set", {"name": "team", "ids": [a, b]})
        shown = server.ok(limited, "recent", {"scope": "project:a", "context_set_name": "team"})
        assert "alpha" in shown["text"] and SECRET not in shown["text"]
        assert SECRET in server.ok(owner, "recent", {"context_set_name": "team"})["text"]
        scopes = server.ok(limited, "status", {"scope": "project:a"})["scopes"]
        assert [s["scope"] for s in scopes] == ["project:a"]
        status, refused = server.post(
            "/v1/review", {"action": "mark_reviewed", "id": b, "scope": "project:a"}, token=limited
        )
        assert (status, refused["error"]) == (404, "item_not_found")
    finally:
        server.stop()


def test_a_scope_limited_token_over_http_files_nothing_under_another_scopes_session(
    tmp_path: Path,
) -> None:
    """Its note named its own scope and passed the doors' check, filed under the owner's
    session of project b: the owner's timeline of that session listed it."""
    owner, limited = boss_and_lim(tmp_path)
    server = Server(tmp_path)
    try:
        server.ok(owner, "session_start", {"id": "sb", "project": "b"})
        filed = {"title": "B", "content": SECRET, "scope": "project:b", "session": "sb"}
        secret = server.ok(owner, "save", filed)
        planted = {"title": "planted", "content": "by lim", "scope": "project:a", "session": "sb"}
        status, refused = server.post("/v1/save", planted, token=limited)
        assert (status, refused["error"]) == (403, "capability_not_granted")
        assert "project:b" not in str(refused)
        timeline = server.ok(owner, "timeline", {"id": secret["id"], "after": 10})
        assert "planted" not in str(timeline)
        server.ok(limited, "save", {**planted, "session": "sa"})
    finally:
        server.stop()
