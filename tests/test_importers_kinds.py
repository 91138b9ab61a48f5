"""What each importer's report says matches what the memory then holds, read through the
verbs (get, recall, about, profile, rules, plans, export), and a changed source updates only
what changed."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import recuerdo

from .importing import SOURCES, copy_of, run_import


@pytest.fixture
def opened(base: Path) -> Iterator[Any]:
    """Open the target memory after an import (a callable, so the import runs first)."""
    memories: list[recuerdo.Memory] = []

    def open_target() -> recuerdo.Memory:
        memory = recuerdo.open("target", base_dir=base, embedder="none")
        memories.append(memory)
        return memory

    yield open_target
    for memory in memories:
        memory.close()


def _note(memory: recuerdo.Memory, key: str, scope: str) -> dict[str, Any]:
    found = memory.mirror_get(key, scope=scope)
    assert found["state"] == "answered", (key, scope)
    return memory.get(found["id"])


def _own(tags: list[str]) -> list[str]:
    """A note's tags without the importer's fingerprint of the source text."""
    return [t for t in tags if not t.startswith("sha256:")]


# -- engram ---------------------------------------------------------------------------------


def test_engram_observations_become_notes_at_their_topic_keys(base: Path, opened: Any) -> None:
    run_import(base, "engram", SOURCES["engram"])
    memory = opened()
    payments = _note(memory, "architecture/payments", "project:shop")
    assert payments["title"] == "Payments go through payment intents"
    assert payments["kind"] == "architecture" and payments["session"] == "s-101"
    assert payments["content"].startswith("**What**: Checkout creates a payment intent")
    assert {"engram-id:1", "created:2025-03-02T09:20:00Z", "updated:2025-03-05T14:40:00Z"} <= set(
        payments["tags"]
    )
    assert {"tool:mem_save", "revisions:3"} <= set(payments["tags"])
    retry = _note(memory, "engram/observation/2", "project:shop")
    assert {"duplicates:2", "last-seen:2025-03-02T11:02:00Z"} <= set(retry["tags"])
    personal = _note(memory, "engram/observation/3", "user")  # scope personal is the user's
    assert personal["kind"] == "preference"
    config = _note(memory, "config/sync-interval", "project:notes-app")
    assert config["kind"] == "manual" and "type:Config Change" in config["tags"]


def test_engram_deleted_and_empty_records_are_not_imported(base: Path, opened: Any) -> None:
    report = run_import(base, "engram", SOURCES["engram"])
    reasons = {s["ref"]: s["reason"] for s in report["skipped"]}
    assert reasons["observation 4"].startswith("deleted in source")
    assert "no content" in reasons["observation 6"]
    assert "empty prompt" in reasons["prompt 4"]
    memory = opened()
    gone = memory.mirror_get("engram/observation/4", scope="project:shop")
    assert gone["state"] == "nothing_stored"


def test_engram_sessions_keep_their_summaries(base: Path, opened: Any) -> None:
    run_import(base, "engram", SOURCES["engram"])
    memory = opened()
    summary = _note(memory, "session/s-101/summary", "project:shop")
    assert summary["content"].startswith("Moved checkout to the payment intents API")
    retry = _note(memory, "engram/observation/2", "project:shop")
    around = memory.timeline(retry["id"])
    assert around["session"] == "s-101"
    assert [n["title"] for n in around["before"]] == ["Payments go through payment intents"]
    assert [n["title"] for n in around["after"]] == ["Answers in Spanish", "Session s-101 summary"]


def test_engram_prompts_are_dated_documents(base: Path, opened: Any) -> None:
    run_import(base, "engram", SOURCES["engram"])
    memory = opened()
    shop = [r for r in memory.export(scope="project:shop")["records"] if r["record"] == "document"]
    assert {(d["source"], d["text"], d["date"]) for d in shop} == {
        (
            "engram prompt 1 (session s-101)",
            "How do I make checkout safe to retry?",
            "2025-03-02T09:05:00.000000Z",
        ),
        (
            "engram prompt 2 (session s-102)",
            "Why does the payment webhook fire twice?",
            "2025-03-05T14:12:00.000000Z",
        ),
    }
    other = memory.export(scope="project:default")["records"]
    assert [r["text"] for r in other if r["record"] == "document"] == [
        "Remind me what the sync interval is."
    ]


def test_engram_a_changed_observation_becomes_a_revision(
    base: Path, tmp_path: Path, opened: Any
) -> None:
    path = copy_of("engram", tmp_path)
    run_import(base, "engram", path)
    export = json.loads(path.read_text())
    export["observations"][1]["content"] = "The idempotency key is the order id and attempt."
    path.write_text(json.dumps(export))
    report = run_import(base, "engram", path)
    assert report["counts"]["observations"] == {
        "read": 6,
        "imported": 0,
        "updated": 1,
        "unchanged": 3,
        "skipped": 2,
    }
    memory = opened()
    retry = _note(memory, "engram/observation/2", "project:shop")
    assert retry["version"] == 2 and "attempt" in retry["content"]
    assert sorted(r["version"] for r in memory.history(retry["id"])) == [1, 2]
    assert memory.revision(retry["id"], 1)["content"].startswith("A network retry")


def test_engram_an_older_export_with_one_topic_twice_keeps_both(
    base: Path, tmp_path: Path, opened: Any
) -> None:
    """Two live observations of one topic key: the later is the note, the earlier its first
    revision; importing them again changes nothing."""
    common = {"session_id": "s1", "type": "decision", "project": "p", "scope": "project"}
    export = {
        "version": "0.1.0",
        "exported_at": "2025-01-01 00:00:00",
        "sessions": None,
        "observations": [
            {**common, "id": 7, "title": "DB", "content": "Use SQLite", "topic_key": "db"},
            {**common, "id": 9, "title": "DB", "content": "Use Postgres", "topic_key": "db"},
        ],
        "prompts": None,
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(export))
    first = run_import(base, "engram", path)
    assert first["counts"]["observations"]["imported"] == 1
    assert first["counts"]["observations"]["updated"] == 1
    again = run_import(base, "engram", path)
    assert again["counts"]["observations"]["unchanged"] == 2
    memory = opened()
    note = _note(memory, "db", "project:p")
    assert note["content"] == "Use Postgres"
    assert memory.revision(note["id"], 1)["content"] == "Use SQLite"


# -- mcp-memory -----------------------------------------------------------------------------


def test_mcp_memory_entities_and_relations_become_knowledge(base: Path, opened: Any) -> None:
    run_import(base, "mcp-memory", SOURCES["mcp-memory"])
    memory = opened()
    told = memory.about("Priya Raman", hops=1, compact=True)
    facts = {i["fact"] for i in told["items"] if i["kind"] == "fact"}
    assert {"Priya Raman works_at Acme Corp", "Priya Raman leads Billing migration"} <= facts
    passages = {i["text"] for i in told["items"] if i["kind"] == "passage"}
    assert "Priya Raman: Prefers answers in Spanish" in passages
    assert "Priya Raman: Asked for weekly status reports" in passages
    acme = memory.about("Acme Corp", hops=1, compact=True)
    assert "Acme Corp headquartered_in Valencia" in {
        i["fact"] for i in acme["items"] if i["kind"] == "fact"
    }
    texts = {i.get("text") for i in acme["items"]}
    assert "Acme Corp: Ships on Tuesdays" not in texts  # deleted in the server before export
    [entity] = [i for i in told["items"] if i["kind"] == "entity"]
    assert entity["types"] == ["person"]


def test_mcp_memory_bad_lines_are_skipped_and_a_new_observation_added(
    base: Path, tmp_path: Path
) -> None:
    path = copy_of("mcp-memory", tmp_path)
    run_import(base, "mcp-memory", path)
    lines = path.read_text().splitlines()
    priya = json.loads(lines[0])
    priya["observations"].append("Moved to the Lisbon office")
    lines[0] = json.dumps(priya)
    lines += [
        json.dumps({"type": "mood", "name": "x"}),
        json.dumps({"type": "entity", "entityType": "person", "observations": []}),
        json.dumps({"type": "relation", "from": "Priya Raman", "relationType": "knows"}),
    ]
    path.write_text("\n".join(lines))
    report = run_import(base, "mcp-memory", path)
    assert report["counts"]["observations"] == {
        "read": 8,
        "imported": 1,
        "updated": 0,
        "unchanged": 7,
        "skipped": 0,
    }
    assert report["counts"]["lines"]["skipped"] == 1
    assert report["counts"]["entities"]["skipped"] == 1
    assert report["counts"]["relations"] == {
        "read": 5,
        "imported": 0,
        "updated": 0,
        "unchanged": 4,
        "skipped": 1,
    }


# -- synsema --------------------------------------------------------------------------------


def test_synsema_entries_keep_writers_tags_and_data(base: Path, opened: Any) -> None:
    run_import(base, "synsema", SOURCES["synsema"])
    memory = opened()
    analyzer = memory.recall(from_="Analyzer")
    assert [e["content"] for e in analyzer] == ['API is slow on Mondays\n\ndata: {"p95_ms": 1800}']
    assert {"api", "performance", "synsema:doc-memory:mem_2"} <= set(analyzer[0]["tags"])
    assert [e["content"] for e in memory.recall(from_="Writer")] == ["borrador listo"]
    everything = memory.recall(from_="*")
    assert everything[0]["content"] == "Never refund without a receipt"  # the newest first
    assert "confidence:0.8" in everything[0]["tags"]
    assert "Ship on Tuesdays" not in {e["content"] for e in everything}  # forgotten in Synsema


def test_synsema_rules_keep_their_conditions(base: Path, opened: Any) -> None:
    run_import(base, "synsema", SOURCES["synsema"])
    memory = opened()
    rules = {r["name"]: r for r in memory.get_rules()}
    assert set(rules) == {"max_discount", "min_margin", "formal_tone"}
    assert rules["min_margin"]["condition"] == "margin >= 0.15"
    assert rules["formal_tone"]["category"] is None
    flagged = memory.check_rules("pricing", {"discount": 0.25, "margin": 0.1})
    assert {v["rule"] for v in flagged} == {"max_discount", "min_margin"}


def test_synsema_progress_resumes_where_it_was(base: Path, opened: Any) -> None:
    run_import(base, "synsema", SOURCES["synsema"])
    memory = opened()
    assert memory.resume_point("import") == "validate"
    assert memory.resume_point("sync") == "validate"
    assert memory.progress_percent("archive") == 100
    steps = {s["name"]: s for s in memory.get_progress("import")["steps"]}
    assert steps["ingest"]["result"] == "100 rows"
    assert steps["validate"]["status"] == "failed"
    assert steps["validate"]["error"] == "3 rows without id"
    notify = memory.get_progress("sync")["steps"][2]
    assert (notify["status"], notify["result"]) == ("skipped", "no subscribers")
    decision = _note(memory, "synsema/doc-memory/decision/1", "user")
    assert decision["kind"] == "decision"
    assert "- chosen_label: Retry once" in decision["content"]
    assert "- timestamp: 2025-03-02T08:20:00Z" in decision["content"]


def test_synsema_a_changed_entry_replaces_its_earlier_import(
    base: Path, tmp_path: Path, opened: Any
) -> None:
    path = copy_of("synsema", tmp_path)
    run_import(base, "synsema", path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE memory SET content = 'Casual tone is fine' WHERE id = 'mem_1'")
    db.close()
    report = run_import(base, "synsema", path)
    assert report["counts"]["entries"]["updated"] == 1
    memory = opened()
    found = memory.recall(tags=["synsema:doc-memory:mem_1"], from_="*")
    assert [e["content"] for e in found] == ["Casual tone is fine"]


# -- markdown -------------------------------------------------------------------------------


def test_basic_memory_notes_observations_and_relations(base: Path, opened: Any) -> None:
    run_import(base, "markdown", SOURCES["basic-memory"])
    memory = opened()
    brewing = _note(memory, "fixture/coffee/coffee-brewing-methods", "user")
    assert brewing["title"] == "Coffee Brewing Methods" and brewing["kind"] == "note"
    assert _own(brewing["tags"]) == ["coffee", "brewing"]
    assert brewing["content"].startswith("# Coffee Brewing Methods\n\nNotes from a week")
    grinder = _note(memory, "fixture/equipment/burr-grinder", "user")
    assert grinder["kind"] == "equipment"
    told = memory.about("Burr Grinder", hops=1)
    [entity] = [i for i in told["items"] if i["kind"] == "entity"]
    assert {k: v["value"] for k, v in entity["attributes"].items()} == {
        "status": "owned",
        "bought": "2024-03-15",
        "price": "129.5",
    }
    facts = {
        (i["subject"], i["relation"], i["object"]): i["attributes"]
        for i in told["items"]
        if i["kind"] == "fact"
    }
    requires = facts[("Coffee Brewing Methods", "requires", "Burr Grinder")]
    assert requires == {"context": "a blade grinder gives uneven grounds"}
    origins = memory.about("Coffee Brewing Methods", hops=1, compact=True)
    texts = {i.get("text") for i in origins["items"]}
    assert (
        "Coffee Brewing Methods: [technique] Water just off the boil, about 94 C "
        "(best between 92 and 96)"
    ) in texts
    assert not any("Chemex" in (t or "") for t in texts)  # a task item is not an observation


def test_markdown_code_blocks_and_inline_links_are_not_facts(base: Path, opened: Any) -> None:
    report = run_import(base, "markdown", SOURCES["basic-memory"])
    assert report["counts"]["observations"]["read"] == 10
    memory = opened()
    told = memory.about("Coffee Bean Origins", hops=1, compact=True)
    facts = {i["fact"] for i in told["items"] if i["kind"] == "fact"}
    assert "Coffee Bean Origins grown_in Ethiopia" in facts
    assert not any("not-an-observation" in (i.get("text") or "") for i in told["items"])
    origins = _note(memory, "fixture/coffee/coffee-bean-origins", "user")
    assert "[not-an-observation]" in origins["content"]  # the note keeps its whole text


def test_notarium_categories_land_on_their_axes(base: Path, opened: Any) -> None:
    run_import(base, "markdown", SOURCES["notarium"])
    memory = opened()
    user = {c["category"]: c for c in memory.profile("user", include_muted=True)}
    assert set(user) == {"preferences", "current work"}
    assert user["preferences"]["summary"] == "Answers in Spanish, short, with code in English"
    assert user["current work"]["muted"] is True
    assert memory.get(user["preferences"]["note_id"])["content"] == (
        "Prefers answers in Spanish.\n\nKeep answers short: a paragraph, then the code.\n\n"
        "Code, comments and commit messages stay in English."
    )
    [decisions] = memory.profile("project", project="shop")
    assert decisions["category"] == "decisions"
    doc = _note(memory, "notarium/812", "user")
    assert (doc["title"], doc["kind"], _own(doc["tags"])) == (
        "Checkout flow",
        "user-doc",
        ["checkout", "payments"],
    )


def test_notarium_a_new_observation_is_appended_once(
    base: Path, tmp_path: Path, opened: Any
) -> None:
    folder = copy_of("notarium", tmp_path)
    run_import(base, "markdown", folder)
    path = folder / "memory" / "preferences.md"
    path.write_text(path.read_text() + "\nLikes examples with real numbers.\n")
    report = run_import(base, "markdown", folder)
    assert report["counts"]["category_observations"]["imported"] == 1
    assert report["counts"]["categories"]["updated"] == 1
    memory = opened()
    [prefs] = [c for c in memory.profile("user") if c["category"] == "preferences"]
    assert memory.get(prefs["note_id"])["content"].endswith(
        "stay in English.\n\nLikes examples with real numbers."
    )


def test_markdown_reports_what_it_leaves_out(base: Path, tmp_path: Path) -> None:
    """Hidden folders and files that are not Markdown are named; a file whose front matter is
    not YAML is skipped with the reason; the other notes are imported."""
    folder = copy_of("basic-memory", tmp_path)
    (folder / ".obsidian").mkdir()
    (folder / ".obsidian" / "app.json").write_text("{}")
    (folder / "photo.png").write_bytes(b"\x89PNG")
    (folder / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    report = run_import(base, "markdown", folder)
    left_out = {(s["what"], s["ref"]): s["reason"] for s in report["skipped"]}
    assert left_out[("folder", ".obsidian")] == "hidden"
    assert left_out[("file", "photo.png")] == "not a Markdown file"
    assert "not valid YAML" in left_out[("notes", "broken.md")]
    assert report["counts"]["notes"] == {
        "read": 5,
        "imported": 4,
        "updated": 0,
        "unchanged": 0,
        "skipped": 1,
    }


def test_synsema_records_memory_refuses_are_skipped_with_the_refusal(
    base: Path, tmp_path: Path, opened: Any
) -> None:
    """An entry of a category recuerdo does not have, and a task memory already tracks with
    other steps, are skipped with the refusal's code; everything else is imported."""
    path = copy_of("synsema", tmp_path)
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO memory VALUES ('mem_9', 'insight', 'odd one', '{}', '[]', 'main',"
            " 1.0, 1, 1740900000.0, 1740900000.0)"
        )
    db.close()
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        memory.create_progress("import", ["download", "unpack"])
    report = run_import(base, "synsema", path)
    reasons = {s["ref"]: s["reason"] for s in report["skipped"]}
    assert reasons["memory mem_9"].startswith("refused (invalid_category)")
    assert reasons["task import"].startswith("refused (conflict)")
    assert report["counts"]["entries"]["imported"] == 4
    assert report["counts"]["plans"] == {
        "read": 3,
        "imported": 2,
        "updated": 0,
        "unchanged": 0,
        "skipped": 1,
    }
    memory = opened()
    assert [s["name"] for s in memory.get_progress("import")["steps"]] == ["download", "unpack"]
