"""The link walk of a context pack picks what the full ranking of every reached item would
(decision 0162): same items, same order, same scores, over random link graphs, on SQLite and
PostgreSQL; and a pack reads the rows of the items it takes, not of every item reached."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.retrieval import walk as walk_ops
from recuerdo.retrieval.filters import Filters

NOTES = 9


def _link(tx: Any, tenant: str, pairs: list[tuple[int, int]]) -> None:
    """A link from each pair's first item to its second, in bulk (the verb checks each)."""
    tx.executemany(
        "INSERT INTO links (tenant, from_id, to_id, type, origin, created_at)"
        " VALUES (?, ?, ?, 'related', 'explicit', '2026-01-01T00:00:00Z')",
        [(tenant, a, b) for a, b in pairs],
    )


def full_ranking(
    tx: Any, tenant: str, scores: dict[int, float], depth: int, where: str, params: list[Any]
) -> list[tuple[float, int, int]]:
    """The walk and ranking as they were before 0162: every link of the frontier read, every
    reached item ranked. The rows of a hop are taken in the order of their via's origin: the
    old walk took them as the database returned them, and an item first reached from two seeds
    in one hop took the first's; the new one takes the lower seed, one of those outcomes."""
    reached = {seed: (0, 1) for seed in scores}
    frontier = list(scores)
    touches: dict[int, set[int]] = {}
    origin = {seed: seed for seed in scores}
    for hop in range(1, depth + 1):
        if not frontier:
            break
        marks = ", ".join("?" * len(frontier))
        rows = tx.all(
            "SELECT l.from_id AS a, l.to_id AS b FROM links l JOIN items i"
            " ON i.tenant = l.tenant AND i.id = l.to_id"
            f" WHERE l.tenant = ? AND l.from_id IN ({marks}) AND {where}"
            " UNION ALL SELECT l.to_id AS a, l.from_id AS b FROM links l JOIN items i"
            " ON i.tenant = l.tenant AND i.id = l.from_id"
            f" WHERE l.tenant = ? AND l.to_id IN ({marks}) AND {where}",
            [tenant, *frontier, *params, tenant, *frontier, *params],
        )
        nxt = []
        for a, b in sorted(((int(r["a"]), int(r["b"])) for r in rows), key=lambda r: origin[r[0]]):
            seed = origin[a]
            touches.setdefault(b, set()).add(seed)
            if b not in reached:
                reached[b] = (hop, 1)
                origin[b] = seed
                nxt.append(b)
        frontier = nxt
    ranked = []
    for item, (hop, count) in reached.items():
        touched = max(count, len(touches.get(item, ())))
        score = scores.get(item, 0.0) - 1000.0 * hop + 0.001 * max(0, touched - 1)
        ranked.append((score, item, hop))
    ranked.sort(key=lambda entry: (-entry[0], entry[1]))
    return ranked


pairs = st.lists(
    st.tuples(st.integers(0, NOTES - 1), st.integers(0, NOTES - 1)), max_size=40, unique=True
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    links=pairs,
    seeds=st.dictionaries(
        st.integers(0, NOTES - 1), st.sampled_from([0.5, 0.25, 0.125, 0.0]), min_size=1, max_size=4
    ),
    depth=st.integers(0, 3),
    muted=st.sets(st.integers(0, NOTES - 1), max_size=3),
    elsewhere=st.sets(st.integers(0, NOTES - 1), max_size=3),
    keep=st.one_of(st.none(), st.integers(1, 6)),
)
def test_the_walk_ranks_as_the_full_ranking(
    memory: recuerdo.Memory,
    links: list[tuple[int, int]],
    seeds: dict[int, float],
    depth: int,
    muted: set[int],
    elsewhere: set[int],
    keep: int | None,
) -> None:
    """Without a bound, or when no hop reaches more new items than it, the walk ranks as
    the full ranking; past it, the hop keeps its ``keep`` lowest ids, the walk stops there,
    and ``cut`` says so."""
    ids = _notes(memory)
    with memory._store.write() as tx:
        tx.execute("DELETE FROM links WHERE tenant = ?", [memory.tenant])
        tx.execute("UPDATE items SET muted = 0 WHERE tenant = ?", [memory.tenant])
        for n in muted - set(seeds):  # a seed was found under the filters: never muted
            tx.execute("UPDATE items SET muted = 1 WHERE id = ?", [ids[n]])
        # of another scope than the one asked for (as for a token confined to it)
        tx.execute("UPDATE items SET scope = 'user' WHERE tenant = ?", [memory.tenant])
        for n in elsewhere - set(seeds):
            tx.execute("UPDATE items SET scope = 'project:elsewhere' WHERE id = ?", [ids[n]])
        _link(tx, memory.tenant, [(ids[a], ids[b]) for a, b in links])
    scores = {ids[n]: score for n, score in seeds.items()}
    where, params = Filters.build(memory.tenant, scope="user", skip_muted=True).sql(
        "i", unasked_code=True
    )
    with memory._store.read() as tx:
        expected = full_ranking(tx, memory.tenant, scores, depth, where, params)
        reached = walk_ops.walk(tx, memory.tenant, list(scores), depth, where, params, keep)
        got = list(walk_ops.ranked(reached, scores))
    # nothing outside the filters is reached, nor walked through
    left_out = {ids[n] for n in (muted | elsewhere) - set(seeds)}
    assert not left_out & set(reached.hop) and not left_out & set(reached.seeds)
    sizes = Counter(hop for _, _, hop in expected)
    over = [hop for hop in sorted(sizes) if hop > 0 and keep is not None and sizes[hop] > keep]
    if not over:
        assert got == expected and not reached.cut
        return
    cut = over[0]
    assert reached.cut and keep is not None
    # the same items before the cut hop; their order may differ by the bonus of the hops not
    # walked past it
    assert {e[1] for e in got if e[2] < cut} == {e[1] for e in expected if e[2] < cut}
    assert (
        sorted(e[1] for e in got if e[2] == cut)
        == sorted(e[1] for e in expected if e[2] == cut)[:keep]
    )
    assert all(e[2] <= cut for e in got)


def _notes(memory: recuerdo.Memory) -> list[int]:
    with memory._store.read() as tx:
        found = [int(r["id"]) for r in tx.all("SELECT id FROM items ORDER BY id")]
    if len(found) < NOTES:
        found += [memory.save(f"Note {n}", f"text {n}")["id"] for n in range(len(found), NOTES)]
    return found


@pytest.mark.parametrize(("budget", "depth"), [(60, 1), (200, 2), (4000, 1)])
def test_a_pack_over_a_hub_takes_its_notes_in_rank(
    memory: recuerdo.Memory, budget: int, depth: int
) -> None:
    """A hub of 300 notes, more than the first reads of rows hold: the pack is the seed, then
    its notes by id, as far as the budget goes, and truncated says so."""
    hub = memory.save("Hub", "the lighthouse hub")["id"]
    spokes = [memory.save(f"Spoke {n}", f"keeper {n} " * 5)["id"] for n in range(300)]
    with memory._store.write() as tx:
        _link(tx, memory.tenant, [(hub, spoke) for spoke in spokes])
    reply = memory.context("lighthouse", depth=depth, budget_tokens=budget)
    ids = [s["id"] for s in reply["sources"]]
    assert ids == [hub, *sorted(spokes)][: len(ids)]
    assert reply["truncated"] is (len(ids) < 301)
    assert "links_cut" not in reply  # 300 notes: fewer than a walk keeps, walked whole
    assert sum(s["tokens"] for s in reply["sources"]) == reply["used_tokens"] <= budget


class _Counting:
    """A transaction that counts its statements."""

    def __init__(self, tx: Any) -> None:
        self._tx = tx
        self.dialect = tx.dialect
        self.statements = 0

    def all(self, sql: str, params: Any = ()) -> Any:
        self.statements += 1
        self.link_reads = getattr(self, "link_reads", 0) + sql.count("FROM links")
        return self._tx.all(sql, params)


def test_a_hop_through_many_filtered_items_reads_few_pages(memory: recuerdo.Memory) -> None:
    """A hub whose links are mostly to items the filters leave out (muted here; another scope
    for a confined token) is read in one page: the filters are joined to the links of a
    frontier of one item, not tested on the page afterwards, a page of ``keep`` links at a
    time (a scope-confined pack over a hub of 40,000 notes of another scope took 108 ms on
    SQLite and 208 ms on PostgreSQL that way, 17 ms before 0162). The items left out count
    for nothing: not towards the cut either."""
    hub = memory.save("Hub", "the lighthouse hub")["id"]
    spokes = [memory.save(f"Spoke {n}", f"keeper {n}")["id"] for n in range(201)]
    with memory._store.write() as tx:
        _link(tx, memory.tenant, [(hub, spoke) for spoke in spokes])
        for spoke in spokes[:-1]:  # the last, of the highest id, is the one kept
            tx.execute("UPDATE items SET muted = 1 WHERE id = ?", [spoke])
    where, params = Filters.build(memory.tenant, skip_muted=True).sql("i", unasked_code=True)
    with memory._store.read() as tx:
        counting = _Counting(tx)
        reached = walk_ops.walk(counting, memory.tenant, [hub], 1, where, params, keep=2)  # type: ignore[arg-type]
    assert reached.hop == {hub: 0, spokes[-1]: 1} and not reached.cut
    # the read of a few links that finds more than a hop keeps, the known-items query, then
    # one page (tested apart, pages of 4 links: 135 statements)
    assert counting.statements == 3


def test_the_links_of_a_frontier_of_few_links_are_read_in_one_statement(
    memory: recuerdo.Memory,
) -> None:
    """A pack's 20 seeds of a few links each: a hop read the links in two branches a seed
    (80 reads of ``links`` in the two statements of a hop), and an ordinary pack over 10,000
    entries took 5.7 ms where 2.5 did (the review of 0162's merge). One statement reads them
    all, each way once, when they are fewer than a hop keeps."""
    seeds = [memory.save(f"Seed {n}", f"seed text {n}")["id"] for n in range(20)]
    linked = memory.save("Linked", "a neighbour")["id"]
    with memory._store.write() as tx:
        _link(tx, memory.tenant, [(seeds[3], linked)])
    where, params = Filters.build(memory.tenant).sql("i", unasked_code=True)
    with memory._store.read() as tx:
        counting = _Counting(tx)
        reached = walk_ops.walk(counting, memory.tenant, seeds, 1, where, params, keep=1000)  # type: ignore[arg-type]
    assert reached.hop[linked] == 1 and reached.seeds[linked] == seeds[3]
    assert counting.link_reads == 2  # each way once
