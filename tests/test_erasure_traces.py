"""What a forget leaves outside the rows it deletes (found by a hunt for erasure residues): a
session's summary and a kept ``remember_about`` reply outlived the note they named; the audit
kept searches quoting an entity's attribute values, an item's tags, or words only a note's
earlier revisions held. Each test fails on the code before."""

from __future__ import annotations

import pytest

import recuerdo
from recuerdo.notes import history

from .conftest import audit_kept, statements_run, tx_class_of

MARK = "zqxmarker"


def _flushed_queries(memory: recuerdo.Memory) -> list[str]:
    """The queries the audit keeps, after its filters were checked to quote no marker."""
    memory._audit.flush(memory._store)
    assert not [f for f in audit_kept(memory, "filters") if MARK in f]
    return [query for query in audit_kept(memory) if query]


def test_a_sessions_summary_goes_with_its_erased_note(memory: recuerdo.Memory) -> None:
    memory.session_start("s1")
    ended = memory.session_end("s1", summary=f"{MARK} plan for the release")
    assert memory.session_start("s1")["summary"] == f"{MARK} plan for the release"
    memory.delete(ended["summary_note_id"], hard=True)
    assert memory.session_start("s1")["summary"] is None


def test_a_summary_over_the_note_limit_goes_with_its_erased_note(
    memory: recuerdo.Memory,
) -> None:
    """The note cut the summary to its size limit; the session kept it whole, so the erasure
    (which takes the summary its note holds) left it, readable by session_start."""
    memory.configure(note_limit_bytes=1024)
    memory.session_start("s1", project="shop")
    summary = f"{MARK} plan for the release. " * 100  # about 3,000 bytes
    ended = memory.session_end("s1", summary=summary)
    held = memory.get(ended["summary_note_id"])["content"]
    assert len(held.encode()) <= 1024
    memory.delete(ended["summary_note_id"], hard=True)
    again = memory.session_start("s1")
    assert again["summary"] is None and again["scope"] == "project:shop"
    with memory._store.read() as tx:
        kept = tx.all("SELECT summary FROM sessions WHERE tenant = ?", (memory.tenant,))
    assert [row["summary"] for row in kept] == [None]
    # The reply said what the session keeps, and that it was cut.
    assert (ended["summary"], ended["truncated"]) == (held, True)


def test_a_summary_within_the_limit_is_not_flagged(memory: recuerdo.Memory) -> None:
    memory.session_start("s1")
    done = memory.session_end("s1", summary="  Shipped the release.  ")
    assert (done["truncated"], done["summary"]) == (False, "Shipped the release.")
    assert memory.session_end("s1")["truncated"] is False


def test_a_scope_forgotten_whole_takes_its_sessions(memory: recuerdo.Memory) -> None:
    memory.session_start("s2", project="shop")
    memory.session_end("s2", summary=f"{MARK} shop session")
    memory.forget_knowledge("project:shop", all=True)
    with memory._store.read() as tx:
        assert tx.all("SELECT id FROM sessions WHERE tenant = ?", (memory.tenant,)) == []


def test_a_retry_after_the_note_is_erased_is_stored_not_skipped(memory: recuerdo.Memory) -> None:
    """The kept reply answered ``skipped`` with the erased note, and the new observation was
    never stored (and the reply kept the note's category, its title)."""
    first = memory.remember_about("user", "likes tea", category="drinks", idempotency_key="k1")
    memory.delete(first["note_id"], hard=True)
    again = memory.remember_about("user", "likes coffee", category="drinks", idempotency_key="k1")
    assert again["outcome"] == "created" and again["note_id"] != first["note_id"]
    assert memory.get(again["note_id"])["content"] == "likes coffee"


def test_a_subjects_forget_drops_the_searches_for_its_attribute_values(
    memory: recuerdo.Memory,
) -> None:
    memory.remember_knowledge(
        facts={
            "entities": [
                {"name": "Vantheris", "type": "person", "attributes": {"code": f"{MARK}03"}},
                {"name": "Acme", "type": "org"},
            ],
            "relations": [
                {
                    "source": "Vantheris",
                    "target": "Acme",
                    "type": "works_at",
                    "attributes": {"badge": f"{MARK}33"},
                }
            ],
        }
    )
    for query in (f"{MARK}03", f"{MARK}33", "harbour"):
        memory.search(query)
    memory.forget_knowledge(subject="Vantheris")
    assert _flushed_queries(memory) == ["harbour"]


def test_an_items_tags_are_forgotten_words_too(memory: recuerdo.Memory) -> None:
    entry = memory.remember("learning", "plain words", tags=[f"{MARK}05"])
    note = memory.save("Tagged", "plain text", tags=[f"{MARK}55"])["id"]
    memory.recall(tags=[f"{MARK}05"], category="rule")  # returns nothing: only its filters quote it
    memory.search(f"{MARK}55", kind="decision")
    memory.search("harbour")
    assert memory.forget(entry)
    memory.delete(note, hard=True)
    assert _flushed_queries(memory) == ["harbour"]


def test_a_scope_forgotten_whole_drops_the_searches_for_its_notes_earlier_words(
    memory: recuerdo.Memory,
) -> None:
    memory.save("Plan", f"old {MARK}06 text", key="p")
    memory.save("Plan", "new text", key="p")
    memory._upkeep.drain()
    memory.search(f"{MARK}06")
    memory.search("harbour")
    memory.forget_knowledge(all=True)
    assert _flushed_queries(memory) == ["harbour"]


def test_a_scopes_forget_keeps_other_scopes_searches_for_words_still_held(
    memory: recuerdo.Memory,
) -> None:
    """Found by the review of 0079: attribute values named as names dropped every search in
    the tenant quoting them, whatever the passages left hold ("engineer", "2024")."""
    memory.remember_knowledge(
        facts={
            "entities": [
                {
                    "name": "Vantheris",
                    "type": "person",
                    "attributes": {"role": "engineer", "year": "2024"},
                }
            ]
        },
        scope="project:a",
    )
    memory.save("Hiring", "We hire an engineer in 2024 for the platform.", scope="project:b")
    memory.save("Other", "unrelated", scope="project:a")
    memory._upkeep.drain()
    memory.search("engineer hiring plan", scope="project:b")
    memory.search("2024 budget", scope="project:b")
    memory.forget_knowledge("project:a", all=True)
    assert _flushed_queries(memory) == ["engineer hiring plan", "2024 budget"]


def test_a_sessions_summary_goes_with_its_scope_after_the_session_moved(
    memory: recuerdo.Memory,
) -> None:
    """Found by the review of 0079: the summary note was in project a, the session row moved to
    project b by a later start, and the summary outlived the forget of project a."""
    memory.session_start("s1", project="a")
    memory.session_end("s1", summary=f"{MARK} summary in a")
    assert memory.session_start("s1", project="b")["summary"] == f"{MARK} summary in a"
    memory.forget_knowledge("project:a", all=True)
    assert memory.session_start("s1", project="b")["summary"] is None
    # A summary written since, in b, is b's note's: a forget of a leaves it (the second review).
    memory.session_start("s2", project="a")
    memory.session_end("s2", summary="written in a")
    memory.session_start("s2", project="b")
    memory.session_end("s2", summary="written in b")
    memory.forget_knowledge("project:a", all=True)
    assert memory.session_start("s2", project="b")["summary"] == "written in b"


def test_many_notes_histories_are_read_together_as_one_at_a_time(
    memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The texts a scope's forget scrubs from the audit: every note's versions (past the
    interval of whole copies, decision 0019) and its conflicts, read for all the notes at
    once alike to each note alone, in as many statements whatever the notes (it read two a
    note: 1.0-1.2 s for 2,000 notes on PostgreSQL)."""
    ids = []
    for n in range(4):
        for version in range(n * 9 + 2):
            saved = memory.save(f"Note {n}", f"{MARK}{n} v{version}", key=f"k{n}")
        ids.append(saved["id"])
        with pytest.raises(recuerdo.Conflict):
            memory.save(f"Note {n}", f"stale {n}", key=f"k{n}", expected_version=1)

    def read(chosen: list[int]) -> dict[int, list[tuple[str | None, str]]]:
        with memory._store.read() as tx:
            return history.revision_texts_of(tx, "local", chosen)

    together = read(ids)
    for item_id in ids:
        with memory._store.read() as tx:
            alone = history.revision_texts(tx, "local", item_id)
        assert sorted(together[item_id], key=repr) == sorted(alone, key=repr)
        assert len(alone) == memory.get(item_id)["version"] + 1  # the conflict
    assert together[ids[3]][-1] == ("Note 3", "stale 3")
    with statements_run(monkeypatch, tx_class_of(memory)) as few:
        read(ids[:1])
    with statements_run(monkeypatch, tx_class_of(memory)) as many:
        read(ids)
    assert len(few) == len(many)


def test_a_facts_or_attributes_forget_keeps_searches_for_words_still_held(
    memory: recuerdo.Memory,
) -> None:
    """A fact's or an attribute's values were named as names: every search of the tenant
    quoting one went, whatever the passages left hold (as a subject's did until the review of
    0079). A value nothing holds any more still takes its searches."""
    memory.remember_knowledge(
        facts={
            "entities": [
                {"name": "Vantheris", "type": "person", "attributes": {"role": "engineer"}},
                {"name": "Acme", "type": "org"},
            ],
            "relations": [
                {
                    "source": "Vantheris",
                    "target": "Acme",
                    "type": "works_at",
                    "attributes": {"team": "platform", "badge": f"{MARK}07"},
                }
            ],
        },
        scope="project:a",
    )
    memory.save("Hiring", "We hire an engineer for the platform team.", scope="project:b")
    memory._upkeep.drain()
    for query in ("engineer hiring plan", "platform roadmap", f"{MARK}07"):
        memory.search(query, scope="project:b")
    memory.forget_knowledge(
        "project:a", fact={"from": "Vantheris", "to": "Acme", "type": "works_at"}
    )
    memory.forget_knowledge("project:a", attribute={"subject": "Vantheris", "key": "role"})
    assert _flushed_queries(memory) == ["engineer hiring plan", "platform roadmap"]
