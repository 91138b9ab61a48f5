"""The tallies of what a memory holds (``store/tallies.py``, decision 0057): kept by the store
as items are written, edited, deleted and forgotten, equal to a count of the rows, on every
backend; read by the overview, the summary and ``status``; left out of backups and counted
again by a restore; compared with the rows by ``check``."""

from __future__ import annotations

import base64
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.engine import restore_memory
from recuerdo.store import archive, tallies
from recuerdo.store.sqlite import files
from recuerdo.store.sqlite.connection import SQLiteStore

from .postgres import contract_url, unique_memory

KEY = ("tenant", "item_type", "scope", "category", "source", "deleted")
SECRET_SCOPE = "project:quillmarrow"


def counted_from_rows(memory: recuerdo.Memory) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """(the tallies as the test counts them from the item rows, the tallies the store keeps)."""
    with memory._store.read() as tx:
        rows = tx.all(
            "SELECT tenant, item_type, scope, category, source, status, content"
            " FROM items /* every tenant */"
        )
        kept = tx.all(f"SELECT * FROM {tallies.TABLE} /* every tenant */")
    expected: Counter[Any] = Counter()
    chars: Counter[Any] = Counter()
    for row in rows:
        if row["item_type"] == "mail":
            continue  # counted for its readers from its rows
        entry = row["item_type"] == "entry"
        key = (
            row["tenant"],
            row["item_type"],
            row["scope"],
            (row["category"] or "") if entry else "",
            (row["source"] or "") if entry else "",
            int(row["status"] == "deleted"),
        )
        expected[key] += 1
        chars[key] += len(row["content"])
    wanted = {key: (expected[key], chars[key]) for key in expected}
    found = {tuple(row[k] for k in KEY): (int(row["items"]), int(row["chars"])) for row in kept}
    return wanted, found


def _held(memory: recuerdo.Memory, scope: str) -> int:
    with memory._store.read() as tx:
        return int(
            tx.scalar(
                "SELECT count(*) FROM items WHERE tenant = ? AND scope = ?", (memory.tenant, scope)
            )
        )


def workload(memory: recuerdo.Memory) -> dict[str, Any]:
    """Every way an item is written, changed or removed, in each family."""
    writer = memory.agent("scribe")
    first = memory.remember("learning", "Deploys go out on Tuesdays", ["ops"])
    memory.remember("decision", "Use Postgres for the shop", scope="project:shop")
    writer.remember_many(
        [
            {"category": "context", "content": f"Scribe's note {n} über alles", "scope": SCOPE}
            for n, SCOPE in enumerate(["project:shop", "project:shop", SECRET_SCOPE])
        ]
    )
    memory.forget(first)
    kept = memory.save("Auth", "Use JWT.", kind="decision", scope="user", key="auth")
    memory.save("Auth", "Use JWT with short lives.", kind="decision", scope="user", key="auth")
    memory.edit(kept["id"], "append", content="\nRotate keys monthly.")
    gone = memory.save("Old idea", "Drop it.", scope="project:shop", key="old")
    memory.delete(gone["id"])
    back = memory.save("Back", "It returns.", scope="project:shop", key="back")
    memory.delete(back["id"])
    memory.restore(back["id"])
    hard = memory.save("Hard", "Gone for good.", scope="user", key="hard")
    memory.delete(hard["id"], hard=True)
    memory.add_messages("c1", [{"speaker": "Ann", "text": "Hi"}, {"speaker": "Bo", "text": "Yo"}])
    memory.ingest(base64.b64encode(b"A short handbook.").decode(), name="handbook.txt")
    memory.remember_knowledge(
        content="Ann works at Acme.",
        facts={"relations": [{"source": "Ann", "target": "Acme", "type": "works_at"}]},
        scope="project:kg",
    )
    alice, bob = memory.agent("alice"), memory.agent("bob")
    alice.bind_address("alice@local")
    bob.bind_address("bob@local")
    alice.send_message(["bob@local"], "Launch", "Is the launch on Monday?")
    dropped = bob.send_message(["alice@local"], "Lunch", "Pizza today?")
    bob.forget_conversation(dropped["conversation_id"])
    memory.save("Kinds", "A note that changes kind.", kind="decision", scope="user", key="kinds")
    memory.save("Kinds", "A note that changes kind.", kind="reference", scope="user", key="kinds")
    for n in range(3):  # a scope forgotten whole: several items gone in one statement
        memory.remember_knowledge(content=f"Bo met Cy in round {n}.", scope="project:gone")
    assert _held(memory, "project:gone") == 3
    memory.forget_knowledge(scope="project:gone", all=True)
    assert _held(memory, "project:gone") == 0
    return {"kept": kept["id"], "back": back["id"]}


def test_the_tallies_equal_the_rows_through_every_write(memory: recuerdo.Memory) -> None:
    workload(memory)
    wanted, found = counted_from_rows(memory)
    assert wanted and found == wanted
    assert ("entry" in {key[1] for key in found}) and ("mail" not in {key[1] for key in found})


def test_the_counts_read_from_the_tallies_are_those_of_the_rows(memory: recuerdo.Memory) -> None:
    """overview, summary and status agree with counts taken from the rows by the test."""
    workload(memory)
    with memory._store.read() as tx:
        live = tx.all(
            "SELECT item_type, scope, category, source, content FROM items WHERE tenant = ?"
            " AND status <> 'deleted' AND item_type <> 'mail'",
            (memory.tenant,),
        )
        deleted_notes = tx.scalar(
            "SELECT count(*) FROM items WHERE tenant = ? AND status = 'deleted'"
            " AND item_type = 'note'",
            (memory.tenant,),
        )
    overview = memory.overview()
    assert overview["items"] == dict(sorted(Counter(r["item_type"] for r in live).items()))
    assert overview["chars"] == sum(len(r["content"]) for r in live)
    assert overview["deleted_notes"] == deleted_notes == 1
    entries = Counter((r["category"], r["source"]) for r in live if r["item_type"] == "entry")
    assert [(e["category"], e["source"], e["count"]) for e in overview["entries"]] == sorted(
        (category, source, n) for (category, source), n in entries.items()
    )
    scopes = Counter(r["scope"] for r in live)
    status = memory.status()
    assert {s["scope"]: s["items"] for s in status["scopes"] if s["items"]} == dict(scopes)
    assert {s["scope"]: s["entities"] for s in status["scopes"] if s["entities"]} == {
        "project:kg": 2
    }
    summary = memory.summary()
    assert summary["entries_by_category"] == dict(
        sorted(Counter(r["category"] for r in live if r["item_type"] == "entry").items())
    )
    assert (summary["notes"], summary["messages"], summary["documents"]) == (
        sum(r["item_type"] == "note" for r in live),
        2,
        sum(r["item_type"] == "document" for r in live),
    )


def test_mail_counts_for_its_members_only(memory: recuerdo.Memory) -> None:
    """Mail is not tallied: the overview and status count it for the members of its
    conversation, from its rows."""
    workload(memory)
    alice, carol = memory.agent("alice"), memory.agent("carol")
    member, outsider = alice.overview(), carol.overview()
    assert member["items"].get("mail") == 1 and "mail" not in outsider["items"]
    assert member["chars"] - outsider["chars"] == len("Is the launch on Monday?")

    def listed(view: recuerdo.Memory) -> int:
        return sum(scope["items"] for scope in view.status()["scopes"])

    assert listed(alice) == listed(carol) + 1


def test_a_scope_holding_only_mail_is_listed_to_its_members_only(memory: recuerdo.Memory) -> None:
    alice, bob, carol = (memory.agent(name) for name in ("alice", "bob", "carol"))
    alice.bind_address("alice@local")
    bob.bind_address("bob@local")
    alice.send_message(["bob@local"], "Launch", "Is the launch on Monday?")
    for member in (alice, bob):
        assert [(s["scope"], s["items"]) for s in member.status()["scopes"]] == [("user", 1)]
    assert carol.status()["scopes"] == [] and memory.status()["scopes"] == []
    assert "mail" not in carol.overview()["items"] and carol.overview()["chars"] == 0


def test_a_forgotten_scope_leaves_no_tally_naming_it(memory: recuerdo.Memory) -> None:
    """When the last item of a scope goes, so does its tally row: the scope is no longer
    listed, and no count of zero keeps its name."""
    ids = [memory.remember("context", f"Merger talks {n}", scope=SECRET_SCOPE) for n in range(3)]
    assert any(s["scope"] == SECRET_SCOPE for s in memory.status()["scopes"])
    for entry in ids:
        memory.forget(entry)
    assert all(s["scope"] != SECRET_SCOPE for s in memory.status()["scopes"])
    with memory._store.read() as tx:
        assert not tx.all(f"SELECT * FROM {tallies.TABLE} WHERE scope = ?", (SECRET_SCOPE,))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["remember", "save", "edit", "delete", "restore", "hard", "forget"]),
            st.integers(0, 3),
            st.text(st.characters(blacklist_characters="\x00"), max_size=12),
        ),
        max_size=25,
    )
)
def test_any_sequence_of_writes_keeps_the_tallies_equal_to_the_rows(
    memory: recuerdo.Memory, steps: list[tuple[str, int, str]]
) -> None:
    """Every example writes on into the same memory: the tallies must equal the rows after
    each write whatever came before (each backend keeps them with triggers of its own)."""
    entries: list[int] = []
    for action, n, text in steps:
        try:
            scope = f"project:p{n}"
            if action == "remember":
                entries.append(memory.remember("learning", f"entry {text}", scope=scope))
            elif action == "forget" and entries:
                memory.forget(entries.pop(n % len(entries)))
            elif action == "save":
                memory.save(f"Note {n}", f"body {text}", scope=scope, key=f"k{n}")
            else:
                notes = memory.list_notes(status="deleted" if action == "restore" else "active")
                if not notes["notes"]:
                    continue
                note = notes["notes"][n % len(notes["notes"])]["id"]
                if action == "edit":
                    memory.edit(note, "append", content=f" more {text}")
                elif action == "delete":
                    memory.delete(note)
                elif action == "hard":
                    memory.delete(note, hard=True)
                else:
                    memory.restore(note)
        except recuerdo.RecuerdoError:
            pass  # a refusal (a name taken, a note gone) changes nothing: still counted
        wanted, found = counted_from_rows(memory)
        assert found == wanted, (action, n, text)


@pytest.mark.parametrize("target", ["file", "postgres"])
def test_a_restore_counts_again_what_it_loads(
    memory: recuerdo.Memory, base: Path, tmp_path: Path, target: str
) -> None:
    """The archive holds no tallies; the store a backup is loaded into counts the items as
    they come in, whichever backend wrote the backup and whichever loads it."""
    workload(memory)
    path = tmp_path / "memory.jsonl.gz"
    memory.backup(path)
    assert {name for name, _ in archive.rows(path)} >= {"items"}
    assert tallies.TABLE not in {name for name, _ in archive.rows(path)}
    store = None
    if target == "postgres":
        from recuerdo.store.postgres import PostgresStore

        header = archive.read_header(path)
        store = PostgresStore(contract_url(), unique_memory("tallies"), steps=len(header.schema))
        with store.write() as tx:
            archive.load(tx, store.archive, path, header)
        restored = recuerdo.open("restored", store=store, embedder="none")
    else:
        restore_memory("restored", path, base_dir=tmp_path)
        restored = recuerdo.open("restored", base_dir=tmp_path, embedder="none")
    try:
        wanted, found = counted_from_rows(restored)
        assert wanted and found == wanted
        assert restored.overview()["entries"] == memory.overview()["entries"]
    finally:
        restored.close()
        if store is not None:
            store.drop()


def test_a_store_from_before_the_step_is_counted_when_opened(base: Path) -> None:
    """m031 counts what the memory already holds."""
    memory = recuerdo.open("older", base_dir=base, embedder="none")
    workload(memory)
    location = memory.location
    memory.close()
    _as_before_the_step(location)
    again = recuerdo.open("older", base_dir=base, embedder="none")
    try:
        wanted, found = counted_from_rows(again)
        assert wanted and found == wanted
    finally:
        again.close()


def _as_before_the_step(location: str) -> None:
    conn = files.connect(location)
    try:
        conn.execute(f"DROP TABLE {tallies.TABLE}")
        for trigger in ("insert", "delete", "edit", "move"):
            conn.execute(f"DROP TRIGGER item_tallies_{trigger}")
        conn.execute("DELETE FROM _migrations WHERE name = 'm031_item_tallies'")
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("source", ["before the step", "with tallies of lost items"])
def test_a_recovered_memory_counts_what_was_rescued(base: Path, source: str) -> None:
    """``recover`` copies the readable rows into a store of the current schema: its tallies
    count the rows rescued, whether the damaged store had none (written before m031) or had
    some for rows the damage took (here a scope's rows gone behind the triggers' back)."""
    with recuerdo.open("worn", base_dir=base, embedder="none") as memory:
        workload(memory)
        memory.remember("context", "Only this one is lost", scope="project:lost")
        location = memory.location
    if source == "before the step":
        _as_before_the_step(location)
    else:
        conn = files.connect(location)
        try:
            conn.execute("DROP TRIGGER item_tallies_delete")
            conn.execute("DELETE FROM items WHERE scope = 'project:lost'")
            conn.commit()
        finally:
            conn.close()
    rescued = base / "rescued.db"
    outcome = recuerdo.engine.recover_memory("worn", rescued, base_dir=base)
    assert outcome["recovered"] > 0
    store = SQLiteStore(str(rescued))
    try:
        with recuerdo.open("rescued", store=store, embedder="none") as memory:
            wanted, found = counted_from_rows(memory)
            assert wanted and found == wanted
            listed = {scope["scope"] for scope in memory.status()["scopes"]}
            assert ("project:lost" in listed) is (source == "before the step")
            assert memory._store.check()["counts"][tallies.CHECKED] == 0
    finally:
        store.close()


def test_a_postgres_memory_from_before_the_step_is_counted_when_opened() -> None:
    from recuerdo.store.postgres import PostgresStore
    from recuerdo.store.postgres.schema import SCHEMA

    name = unique_memory("tallies-step")
    before = PostgresStore(contract_url(), name, steps=SCHEMA.names().index("m031_item_tallies"))
    try:
        with recuerdo.open(name, store=before, embedder="none") as memory:
            workload(memory)
            with memory._store.read() as tx:
                assert not tx.scalar("SELECT to_regclass('item_tallies') IS NOT NULL")
        before.close()
        after = PostgresStore(contract_url(), name)
        with recuerdo.open(name, store=after, embedder="none") as memory:
            wanted, found = counted_from_rows(memory)
            assert wanted and found == wanted
            memory.remember("learning", "Written after the step")
            wanted, found = counted_from_rows(memory)
            assert found == wanted
        after.close()
    finally:
        PostgresStore(contract_url(), name).drop()


@pytest.mark.parametrize(
    ("tampering", "differences"),
    [
        # a wrong count is a row of each side that the other lacks
        (
            f"UPDATE {tallies.TABLE} SET items = items + 1 WHERE item_type = 'note'"
            " AND deleted = 0 AND scope = 'user'",
            2,
        ),
        (  # missing
            f"DELETE FROM {tallies.TABLE} WHERE item_type = 'entry' AND category = 'decision'",
            1,
        ),
        (  # left over: a tally of nothing
            f"INSERT INTO {tallies.TABLE} (tenant, item_type, scope, category, source, deleted,"
            " items, chars) VALUES ('local', 'note', 'project:none', '', '', 0, 1, 5)",
            1,
        ),
    ],
    ids=["wrong", "missing", "left over"],
)
def test_check_finds_a_tally_that_differs_from_the_rows(
    memory: recuerdo.Memory, tampering: str, differences: int
) -> None:
    workload(memory)
    assert memory._store.check()["counts"][tallies.CHECKED] == 0
    with memory._store.write() as tx:
        assert tx.execute(tampering) == 1
    report = memory._store.check()
    assert report["counts"][tallies.CHECKED] == differences
    assert not report["ok"] and f"{tallies.CHECKED}: {differences}" in report["problems"]


def test_the_lens_overview_describes_only_the_scopes_with_knowledge(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The overview page asked ``status`` about every scope to find those with entities: at
    100,000 entries in 50 scopes, 61 ms each, over 3 s for the page. ``status`` now lists each
    scope's entities, and the page describes those that have some."""
    from starlette.testclient import TestClient

    from recuerdo.doors.http import ServerConfig, create_app, wrap
    from recuerdo.doors.web import lens

    monkeypatch.setenv("RECUERDO_EMBEDDER", "none")
    with recuerdo.open("demo", base_dir=base) as memory:
        for n in range(6):
            memory.remember("context", f"Entry {n}", scope=f"project:p{n}")
        memory.remember_knowledge(
            content="Ann works at Acme.",
            facts={"relations": [{"source": "Ann", "target": "Acme", "type": "works_at"}]},
            scope="project:kg",
        )
    asked: list[dict[str, Any]] = []
    call = lens.Lens.call

    async def spied(self: Any, request: Any, verb: str, memory: Any = None, **args: Any) -> Any:
        if verb == "status":
            asked.append(args)
        return await call(self, request, verb, memory, **args)

    monkeypatch.setattr(lens.Lens, "call", spied)
    config = ServerConfig(base_dir=base, default_memory="demo")
    with TestClient(wrap(create_app(config), config), base_url="http://127.0.0.1") as client:
        page = client.get("/lens/overview")
    assert page.status_code == 200 and "Ann" in page.text
    assert asked == [{}, {"scope": "project:kg"}]


def test_postgres_counts_in_64_bits() -> None:
    """A memory's characters pass 2**31 long before its rows do."""
    from recuerdo.store.postgres import PostgresStore

    store = PostgresStore(contract_url(), unique_memory("tallies-width"))
    try:
        with store.read() as tx:
            types = {
                row["column_name"]: row["data_type"]
                for row in tx.all(
                    "SELECT column_name, data_type FROM information_schema.columns"
                    " WHERE table_schema = current_schema() AND table_name = ?",
                    (tallies.TABLE,),
                )
            }
        assert types["items"] == types["chars"] == "bigint", types
    finally:
        store.drop()
