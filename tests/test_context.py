"""Context packs: the budget, the packing rules, links and wikilinks, muted categories."""

from __future__ import annotations

from pathlib import Path

import pytest

import recuerdo
from recuerdo.retrieval.pack import CHARS_PER_TOKEN, pack
from recuerdo.store import SQLiteStore
from recuerdo.store.sqlite import sqlite3
from recuerdo.store.sqlite.schema import SCHEMA

from .gitrepo import Repo


def block(item_id: int, text: str, header: str = "## T (personal)") -> dict:  # type: ignore[type-arg]
    return {"header": header, "text": text, "source": {"id": item_id}}


def test_whole_blocks_until_the_first_misfit() -> None:
    blocks = [block(1, "a" * 100), block(2, "b" * 300), block(3, "c" * 10)]
    text, kept, truncated = pack(blocks, budget_tokens=60, max_per_source=None)  # 240 chars
    assert [k["id"] for k in kept] == [1] and truncated is True
    assert len(text) <= 60 * CHARS_PER_TOKEN
    # the small third block would fit, but packing stops at the first block that does not
    assert "c" * 10 not in text


def test_budget_is_respected_exactly() -> None:
    first = block(1, "a" * 100)
    second = block(2, "b" * 100)
    one = len(first["header"]) + 1 + 100
    exact_tokens = (2 * one + 2) / CHARS_PER_TOKEN
    text, kept, truncated = pack(
        [first, second], budget_tokens=int(exact_tokens) + 1, max_per_source=None
    )
    assert [k["id"] for k in kept] == [1, 2] and truncated is False
    assert len(text) == 2 * one + 2
    text, kept, truncated = pack(
        [first, second], budget_tokens=(2 * one + 1) // 4, max_per_source=None
    )
    assert [k["id"] for k in kept] == [1] and truncated is True


def test_a_first_block_too_big_is_cut_never_empty() -> None:
    text, kept, truncated = pack([block(1, "x" * 5000)], budget_tokens=10, max_per_source=None)
    assert truncated is True and kept[0]["cut"] is True
    assert 0 < len(text) <= 40 and text.endswith("...")


def test_per_source_cap_cuts_a_block_with_an_ellipsis() -> None:
    text, kept, truncated = pack(
        [block(1, "y" * 4000), block(2, "z" * 20)], budget_tokens=2000, max_per_source=100
    )
    first = text.split("\n\n")[0]
    assert len(first) <= 100 * CHARS_PER_TOKEN and first.endswith("...")
    assert kept[0]["cut"] is True and [k["id"] for k in kept] == [1, 2]
    assert truncated is False


def test_default_cap_is_half_the_budget_or_500_tokens() -> None:
    text, kept, _ = pack([block(1, "w" * 20_000)], budget_tokens=4000, max_per_source=None)
    assert len(text) <= 2000 * CHARS_PER_TOKEN and kept[0]["cut"] is True


def test_context_follows_links_and_cites(memory: recuerdo.Memory) -> None:
    auth_text = "We use signed session cookies. See [[Cookie keys]]."
    auth = memory.save("Auth design", auth_text, scope="project:shop")["id"]
    keys = memory.save(
        "Cookie keys", "Keys rotate monthly via the vault job.", scope="project:shop"
    )["id"]
    far = memory.save("Vault job", "The vault job runs at 02:00 UTC.", scope="project:shop")["id"]
    memory.link(keys, far)
    memory._upkeep.drain()
    shallow = memory.context("signed session cookies", depth=0)
    assert [s["id"] for s in shallow["sources"]][:1] == [auth]
    assert keys not in [s["id"] for s in shallow["sources"] if s["hop"] > 0]
    deep = memory.context("signed session cookies", depth=2)
    hops = {s["id"]: s["hop"] for s in deep["sources"]}
    assert hops[auth] == 0 and hops.get(far, 0) <= 2
    first = deep["sources"][0]
    assert first["writer"] == "main" and first["span"] == {"start": 0, "end": len(auth_text)}
    assert deep["context"].startswith("## Auth design (project: shop)\n")
    assert deep["state"] == "answered" and deep["used_tokens"] <= deep["budget_tokens"]


def test_neighbours_rank_below_every_seed(memory: recuerdo.Memory) -> None:
    a = memory.save("Alpha topic", "alpha alpha details")["id"]
    b = memory.save("Other", "unrelated words entirely")["id"]
    memory.link(a, b)
    memory._upkeep.drain()
    sources = memory.context("alpha", depth=1)["sources"]
    assert [s["id"] for s in sources] == [a, b]
    assert sources[1]["hop"] == 1 and sources[1]["score"] < sources[0]["score"]


def test_muted_categories_and_deleted_notes_stay_out(memory: recuerdo.Memory) -> None:
    memory.remember_about("user", "plays chess on weekends", category="hobbies")
    gone = memory.save("Chess club", "The chess club meets Tuesdays.")["id"]
    memory.mute("hobbies")
    memory.delete(gone)
    memory._upkeep.drain()
    reply = memory.context("chess")
    assert reply["sources"] == [] and reply["state"] == "nothing_stored"
    assert memory.search("chess")["results"][0]["title"] == "hobbies"  # search still finds it


@pytest.mark.parametrize("kwargs", [{"budget_tokens": 0}, {"depth": 4}, {"max_per_source": 0}])
def test_context_refusals(memory: recuerdo.Memory, kwargs: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(recuerdo.InvalidInput):
        memory.context("x", **kwargs)


def test_link_refusals(memory: recuerdo.Memory) -> None:
    note = memory.save("N", "n")["id"]
    with pytest.raises(recuerdo.ItemNotFound):
        memory.link(note, 99_999)
    with pytest.raises(recuerdo.InvalidInput):
        memory.link(note, note)
    assert memory.link(note, memory.remember("rule", "r"))["outcome"] == "created"


def test_a_wikilink_waits_for_a_note_of_its_title(memory: recuerdo.Memory) -> None:
    """[[Title]] written before any note has that title links to the note created (or renamed)
    with it later, without the linking note being edited."""
    guide = memory.save(
        "Deploy guide", "See [[Zebra crossing]] and [[Lion gate]] before deploying."
    )
    zebra = memory.save("Zebra crossing", "Purple giraffes eat mangoes in the afternoon.")["id"]
    lion = memory.save("Draft", "Copper kettles whistle at dawn.")["id"]
    memory.edit(lion, title="Lion gate")
    memory._upkeep.drain()
    sources = memory.context("deploying", depth=1)["sources"]
    hops = {s["id"]: s["hop"] for s in sources}
    assert hops == {guide["id"]: 0, zebra: 1, lion: 1}
    assert memory.get(guide["id"])["version"] == 1


def test_m013_reads_the_wikilinks_written_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written before m013: a [[Title]] nothing had resolves when a note of that title
    is saved; one already linked stays linked to its note only."""
    path = tmp_path / ".recuerdo" / "state" / "old.db"
    path.parent.mkdir(parents=True)
    steps = list(SCHEMA.steps)
    before = [name for name, _ in steps].index("m013_pending_wikilinks")
    monkeypatch.setattr(SCHEMA, "steps", steps[:before])  # as it was before m013 shipped
    SQLiteStore(str(path)).close()
    conn = sqlite3.connect(path)
    stamp = "2026-01-01T00:00:00.000000Z"
    for title, content in (
        ("Known", "known text"),
        ("Waiting", "See [[Later  note|the later one]]."),
        ("Linked", "See [[Known]]."),
    ):
        conn.execute(
            "INSERT INTO items (tenant, scope, item_type, category, title, content, source,"
            " created_at, updated_at) VALUES ('local', 'user', 'note', 'manual', ?, ?, 'main',"
            " ?, ?)",
            (title, content, stamp, stamp),
        )
    conn.execute(
        "INSERT INTO links (from_id, to_id, type, origin, created_at)"
        " VALUES (3, 1, 'wikilink', 'wikilink', ?)",
        (stamp,),
    )
    conn.commit()
    conn.close()
    monkeypatch.setattr(SCHEMA, "steps", steps)
    with recuerdo.open("old", base_dir=tmp_path) as memory:
        later = memory.save("Later note", "it came later")["id"]
        again = memory.save("Known", "a second note of that title")["id"]
        with memory._store.read() as tx:
            links = {(r["from_id"], r["to_id"]) for r in tx.all("SELECT * FROM links")}
    assert links == {(2, later), (3, 1)}
    assert again not in {to for _, to in links}


def test_context_over_a_project_and_the_user(memory: recuerdo.Memory) -> None:
    """A list of scopes packs each of them and nothing else; the audit files the query under
    the first."""
    mine = memory.remember_about("user", "Prefers tea-time examples", category="style")
    shop = memory.remember_about("project", "Sells tea-time sets", category="shelf", project="shop")
    memory.remember_about("project", "Runs tea-time drills", category="drills", project="ops")
    memory._upkeep.drain()
    pack_ = memory.context("tea-time", scope=["project:shop", "user"])
    assert {s["id"] for s in pack_["sources"]} == {mine["note_id"], shop["note_id"]}
    assert memory.audit(limit=1)[0]["scope"] == "project:shop"


@pytest.mark.parametrize(
    ("asked", "outside"),
    [
        ({"scope": "project:shop"}, {"scope": "project:secret"}),
        ({"scope": ["project:shop", "user"]}, {"scope": "project:secret"}),
        ({"kind": "decision"}, {"kind": "manual"}),
        ({"types": "note"}, {"entry": True}),
    ],
)
def test_linked_items_outside_the_filters_stay_out(
    memory: recuerdo.Memory,
    asked: dict,  # type: ignore[type-arg]
    outside: dict,  # type: ignore[type-arg]
) -> None:
    """A neighbour is packed on the seed's terms: a link does not carry another scope's,
    kind's or type's item into a pack asked for one (nor reach past it)."""
    where = {"scope": "project:shop", "kind": "decision"}
    seed = memory.save("Cache plan", "The shop caches sessions in Redis.", **where)["id"]
    near = memory.save("Cache keys", "Keys expire hourly.", **where)["id"]
    if outside.get("entry"):
        far = memory.remember("learning", "Launch codes are 0000.", ["ops"])
    else:
        far = memory.save("Launch codes", "Launch codes are 0000.", **{**where, **outside})["id"]
    beyond = memory.save("Launch day", "It launches on Friday.", **where)["id"]
    memory.link(seed, near)
    memory.link(seed, far)
    memory.link(far, beyond)
    memory._upkeep.drain()
    every = memory.context("redis sessions", depth=2)
    assert {s["id"] for s in every["sources"]} == {seed, near, far, beyond}
    reply = memory.context("redis sessions", depth=2, **asked)
    assert [s["id"] for s in reply["sources"]] == [seed, near]
    assert "Launch" not in reply["context"] and reply["truncated"] is False


@pytest.mark.usefixtures("no_model")
def test_a_file_linked_on_purpose_is_packed_unless_types_leave_it_out(
    memory: recuerdo.Memory, tmp_path: Path
) -> None:
    """Stored code is searched only when asked for, but a note linked to a file packs it: a
    walk without filters is unchanged by 0103 (it dropped the file once it took the search's
    filters)."""
    repo = Repo(tmp_path / "app")
    repo.commit("Start", {"src/cart.py": "def checkout_total(cart):\n    return sum(cart)\n"})
    memory.code_ingest_path(repo.path, "app")
    memory._upkeep.drain()
    [code] = memory.search("checkout_total", types=["code"])["results"]
    note = memory.save("Checkout design", "The basket uses zebra pricing rules.")["id"]
    memory.link(note, code["id"], "implements")
    memory._upkeep.drain()
    every = memory.context("zebra pricing")
    assert [s["id"] for s in every["sources"]] == [note, code["id"]]
    assert "checkout_total" in every["context"]
    notes_only = memory.context("zebra pricing", types="note")
    assert [s["id"] for s in notes_only["sources"]] == [note]
    other_scope = memory.context("zebra pricing", scope="user")
    assert [s["id"] for s in other_scope["sources"]] == [note]


@pytest.mark.parametrize("cap", [1, 2, 3, 4, 5, 10])
def test_the_per_source_cap_holds_when_the_header_is_longer(cap: int) -> None:
    """max_per_source is a cap on the block, header included: a header longer than the cap
    was kept whole, with '...' after it (6 tokens for a cap of 1)."""
    header = "## A long title of a note (project: shop)"
    text, kept, truncated = pack(
        [block(1, "v" * 400, header), block(2, "w" * 400, header)],
        budget_tokens=1000,
        max_per_source=cap,
    )
    assert [k["id"] for k in kept] == [1, 2] and truncated is False
    for part, source in zip(text.split("\n\n"), kept, strict=True):
        assert len(part) <= cap * CHARS_PER_TOKEN and source["tokens"] <= cap
        # a cap of 1 token after a separator leaves 2 characters: what fits of the ellipsis
        assert source["cut"] is True and part.endswith("..."[: len(part)])


def test_a_context_keeps_each_block_to_the_cap(memory: recuerdo.Memory) -> None:
    memory.save("Harbour schedule for the summer season", "The ferry leaves at nine. " * 40)
    memory._upkeep.drain()
    reply = memory.context("ferry", max_per_source=2)
    assert [s["tokens"] for s in reply["sources"]] == [2] and reply["sources"][0]["cut"]
    assert len(reply["context"]) <= 2 * CHARS_PER_TOKEN and reply["used_tokens"] <= 2


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        ("\U0001f1eb\U0001f1f7" * 60, "\U0001f1eb\U0001f1f7"),  # flags
        ("e\u0301" * 120, "e\u0301"),  # a letter and its combining accent
        (
            "\U0001f468\u200d\U0001f469\u200d\U0001f467" * 40,
            "\U0001f468\u200d\U0001f469\u200d\U0001f467",
        ),
        ("\U0001f44d\U0001f3fd" * 80, "\U0001f44d\U0001f3fd"),  # a skin tone
        ("\u6f22\u5b57" * 90, "\u6f22"),  # each a character of its own
    ],
)
@pytest.mark.parametrize(("budget", "cap"), [(10, None), (11, None), (13, None), (400, 9)])
def test_a_cut_never_splits_a_character(
    text: str, whole: str, budget: int, cap: int | None
) -> None:
    """Found by a hunt: the cut fell between a letter and its accent, inside a flag or a
    joined emoji, so the pack ended on a character that was not in the note."""
    header = "## T (personal)"
    body, kept, _ = pack([block(1, text, header)], budget_tokens=budget, max_per_source=cap)
    assert len(body) <= min(budget, cap or budget) * CHARS_PER_TOKEN
    assert kept[0]["cut"] is True and body.endswith("...")
    shown = body[len(header) + 1 : -len("...")]
    assert text.startswith(shown) and len(shown) % len(whole) == 0
