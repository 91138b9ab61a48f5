"""The link walk of a context pack, and its ranking, read no further than the pack needs
(decision 0162).

A hub note of 40,000 links took 1.2-2 s a pack: every item the walk reached was read whole and
ranked, though a pack of 200 tokens holds some twenty, and the frontier went to the database
10,000 ids a statement, which PostgreSQL planned in 50 ms and ran by testing every link of the
tenant against the list.

Now a hop reads, for each seed its frontier came from, the links of the frontier's items given
as one parameter: first those to items reached before (their links alone: they passed the
filters), then the new items in pages by id, their links first and the filters on the page
(joined to the links of a frontier of one item). A hop keeps at most ``keep`` new items (the
most blocks the budget could hold, and at least 1,000): past that it keeps the lowest ids, the
walk stops, and the pack says ``links_cut`` (it is truncated anyway). A note of fewer links
is walked whole, and its pack is the one the full ranking gives, item for item
(tests/test_context_walk.py). The ranking is kept in buckets of (hop, seeds touched), and the
items' rows are read in rank order, a few at a time, as the pack takes them (``pack`` stops at
the first block that does not fit).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ..store.base import Row, Tx, rows_by_id
from ..store.id_sets import among

HOP_PENALTY = 1000.0
CLUSTER_BONUS = 0.001
# Rows read a statement as the pack takes blocks: the first read serves a small pack whole,
# and each next one doubles, so a large pack costs a few statements.
FIRST_READ = 32
LARGEST_READ = 4096
# A hop keeps at least this many new items (more if the budget could hold more blocks): a note
# of fewer links is walked whole, and its pack is the one the full ranking gives.
KEEPS_AT_LEAST = 1000
# A frontier of at most this many links is read in one statement (``_few``); a larger one by
# pages. Low, as the read that finds more is wasted: a hub's pack paid 3-4 ms on PostgreSQL
# reading 1,001 links to learn it was a hub.
FEW_LINKS = 256


@dataclass
class Reached:
    """What a walk reached: each item's hop, and the seeds it is linked to (through the items
    the walk came by)."""

    hop: dict[int, int] = field(default_factory=dict)
    # A set only once a second seed touches the item: most items of a hub touch one.
    seeds: dict[int, int | set[int]] = field(default_factory=dict)
    # a hop reached more items than the walk keeps: it kept those of lowest ids, and stopped
    cut: bool = False

    def touch(self, item: int, seed: int) -> None:
        known = self.seeds.get(item)
        if known is None:
            self.seeds[item] = seed
        elif isinstance(known, set):
            known.add(seed)
        elif known != seed:
            self.seeds[item] = {known, seed}

    def touches(self, item: int) -> int:
        """The number of distinct seeds the item is linked to, at least 1."""
        known = self.seeds.get(item)
        return len(known) if isinstance(known, set) else 1


def _by_seed(frontier: Mapping[int, int]) -> list[tuple[int, list[int]]]:
    by_seed: dict[int, list[int]] = {}
    for item, seed in frontier.items():
        by_seed.setdefault(seed, []).append(item)
    return list(by_seed.items())


def _branches(
    dialect: str,
    tenant: str,
    frontier: Mapping[int, int],
    known: tuple[bool, list[int]],
    after: int | None = None,
    filters: tuple[str, Sequence[object]] | None = None,
) -> tuple[list[str], list[object]]:
    """Statements of (seed, item) pairs, each pair once within one: the items linked, either
    way, to a frontier item reached from that seed, that are among the ``known`` ids (True)
    or are not (False), and not below ``after``. A set of ids a seed the frontier was reached
    from (the 20 seeds of a pack at most), a statement each way.

    ``filters`` (a condition on the items aliased ``i``, and its parameters), if given, are
    joined to the branches of one frontier item (see ``_new``)."""
    among_known, ids_known = known
    selects: list[str] = []
    values: list[object] = []
    for seed, items in _by_seed(frontier):
        for near, far in (("from_id", "to_id"), ("to_id", "from_id")):
            linked, linked_param = among(dialect, "l." + near, items)
            seen, seen_param = among(dialect, "l." + far, ids_known)
            # the seed as a number the database types alike in every branch of a UNION
            join = filters is not None and len(items) == 1
            joined = f" JOIN items i ON i.id = l.{far}" if join else ""
            select = (
                f"SELECT DISTINCT CAST(? AS BIGINT) AS s, l.{far} AS b FROM links l{joined}"
                f" WHERE l.tenant = ? AND {linked} AND {'' if among_known else 'NOT '}{seen}"
            )
            values += [seed, tenant, linked_param, seen_param]
            if join and filters is not None:  # its condition holds the tenant
                select += f" AND {filters[0]}"
                values += filters[1]
            if after is not None:
                select += f" AND l.{far} >= ?"
                values.append(after)
            selects.append(select)
    return selects, values


def _touched(
    tx: Tx, tenant: str, frontier: Mapping[int, int], reached: Reached
) -> list[tuple[int, int]]:
    """The pairs of the hop whose item was reached before: those passed the filters (they
    were read under them), so their links alone are read."""
    selects, values = _branches(tx.dialect, tenant, frontier, (True, list(reached.hop)))
    # UNION: each pair once, however many frontier items share it (the 40,000 notes of a hub,
    # all reached from it, touch it once, not 40,000 times)
    return [(int(r["s"]), int(r["b"])) for r in tx.all(" UNION ".join(selects), values)]


def _new(
    tx: Tx,
    tenant: str,
    frontier: Mapping[int, int],
    reached: Reached,
    filters: tuple[str, Sequence[object]],
    keep: int | None,
) -> tuple[list[tuple[int, int]], bool]:
    """The pairs of the hop whose item is new and kept by the filters (``where``, ``params``),
    and whether there were more than ``keep`` such items: then those of the ``keep`` lowest
    ids only, with all their pairs.

    Read in pages by item id: the links first (their indexes alone, sorted and cut by the
    database), then the filters on the page's items, so that of a hub's 40,000 notes a
    thousand are read and tested, not each. A branch of one frontier item (a hub that is a
    seed) has the filters joined: its links are read along their index, each item tested as
    it comes, and a hub whose notes the filters leave out is read once (tested apart, a page
    of ids at a time, a scope-confined pack over a hub of 40,000 notes of another scope took
    108 ms on SQLite and 208 ms on PostgreSQL, 17 ms before 0162). Not joined to a branch of
    many items: PostgreSQL then read the whole links table (a parallel sequential scan) for a
    frontier of 1,000 notes, 66-86 ms against 20 ms for the links and 5 ms for the filters."""
    # One more item than is kept tells a cut. A full page's last item is read again by the
    # next (its pairs may go on there); an item has a pair a seed at most, so a page longer
    # than the seeds holds two items, and the pages move on.
    seeds = len(set(frontier.values()))
    # the filters joined to every branch: the page holds kept items only
    all_joined = all(len(items) == 1 for _, items in _by_seed(frontier))
    page = None if keep is None else keep + 1 + seeds
    pairs: list[tuple[int, int]] = []
    items: list[int] = []
    after: int | None = None
    while True:
        selects, values = _branches(
            tx.dialect, tenant, frontier, (False, list(reached.hop)), after, filters
        )
        if page is None:
            sql = " UNION ".join(selects)
        else:
            # each branch cut at the page on its own (one frontier note's links are then read
            # along their index, and stop), then the union's first page
            sql = (
                "WITH "
                + ", ".join(f"p{n} AS ({s} ORDER BY b LIMIT {page})" for n, s in enumerate(selects))
                + " "
                + " UNION ".join(f"SELECT s, b FROM p{n}" for n in range(len(selects)))
                + f" ORDER BY b, s LIMIT {page}"
            )
        rows = [(int(r["s"]), int(r["b"])) for r in tx.all(sql, values)]
        full = page is not None and len(rows) == page
        if full:  # the last item's pairs may go on past the page: the next page starts there
            after = rows[-1][1]
            rows = [row for row in rows if row[1] != after]
        kept = None if all_joined else _kept(tx, sorted({item for _, item in rows}), filters)
        for seed, item in rows:
            if kept is not None and item not in kept:
                continue
            if not items or items[-1] != item:
                if keep is not None and len(items) == keep:
                    return pairs, True
                items.append(item)
            pairs.append((seed, item))
        if not full:
            return pairs, False


def _few(
    tx: Tx,
    tenant: str,
    frontier: Mapping[int, int],
    reached: Reached,
    filters: tuple[str, Sequence[object]],
    keep: int | None,
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]] | None:
    """The hop's pairs of items reached before and of new items the filters keep, read in two
    statements when the frontier's links are few (the common pack: seeds of a handful of links
    each); None when they are more than a hop may keep, for the paged reading above. Its 40
    branches (two a seed) cost a pack of 20 seeds of no links 5.7 ms where one statement
    did in 2.5 (the review of 0162's merge)."""
    most = min(FEW_LINKS, KEEPS_AT_LEAST if keep is None else keep)
    ids = list(frontier)
    forth, forth_param = among(tx.dialect, "l.from_id", ids)
    back, back_param = among(tx.dialect, "l.to_id", ids)
    rows = tx.all(
        f"SELECT l.from_id AS f, l.to_id AS t FROM links l WHERE l.tenant = ? AND {forth}"
        f" UNION ALL SELECT l.from_id AS f, l.to_id AS t FROM links l WHERE l.tenant = ?"
        f" AND {back} LIMIT ?",
        [tenant, forth_param, tenant, back_param, most + 1],
    )
    if len(rows) > most:
        return None
    touched: set[tuple[int, int]] = set()
    new: set[tuple[int, int]] = set()
    for row in rows:
        for near, far in ((int(row["f"]), int(row["t"])), (int(row["t"]), int(row["f"]))):
            if near in frontier:
                (touched if far in reached.hop else new).add((frontier[near], far))
    kept = _kept(tx, sorted({item for _, item in new}), filters)
    return sorted(touched), sorted((pair for pair in new if pair[1] in kept), key=_by_item)


def _by_item(pair: tuple[int, int]) -> tuple[int, int]:
    return pair[1], pair[0]


def _kept(tx: Tx, ids: list[int], filters: tuple[str, Sequence[object]]) -> set[int]:
    """Those of ``ids`` the filters keep."""
    if not ids:
        return set()
    where, params = filters
    wanted, param = among(tx.dialect, "i.id", ids)
    return {
        int(r["id"])
        for r in tx.all(f"SELECT i.id FROM items i WHERE {wanted} AND {where}", [param, *params])
    }


def walk(
    tx: Tx,
    tenant: str,
    seeds: Sequence[int],
    depth: int,
    where: str,
    params: Sequence[object],
    keep: int | None = None,
) -> Reached:
    """Breadth first from ``seeds``, links both ways, up to ``depth`` hops, through the items
    ``where`` (a condition on the items aliased ``i``, with ``params``) keeps only: a message
    the viewer is no member of was walked through, and the notes beyond it packed (the review
    of decision 0086); a note of another scope than the ones asked for was packed (0103).

    Each reached item carries the seed it was first reached from (its origin); an item is
    touched by the origin of every frontier item linked to it. An item first reached from two
    origins in one hop takes the lower: the walk took whichever row the database returned
    first, so either pack was one the old walk could give (decision 0162).

    ``keep``: a hop that reaches more new items than this keeps this many, the lowest ids,
    and the walk stops there (``cut`` says so). The caller passes more than its pack can
    hold, so the pack is truncated whatever was left out; what the cut changes is which of
    that hop's items are ranked, and the bonus of the items linked to more than one seed,
    counted on what was walked."""
    reached = Reached()
    frontier: dict[int, int] = {}  # item -> the seed it was first reached from
    for seed in seeds:
        reached.hop[seed] = 0
        frontier[seed] = seed
    for hop in range(1, depth + 1):
        if not frontier:
            break
        few = _few(tx, tenant, frontier, reached, (where, params), keep)
        if few is not None:
            touched, pairs, cut = *few, False
        else:
            touched = _touched(tx, tenant, frontier, reached)
            pairs, cut = _new(tx, tenant, frontier, reached, (where, params), keep)
        for seed, item in touched:
            reached.touch(item, seed)
        nxt: dict[int, int] = {}
        for seed, item in pairs:
            reached.touch(item, seed)
            nxt[item] = seed if item not in nxt else min(nxt[item], seed)
        for item in nxt:
            reached.hop[item] = hop
        if cut:
            reached.cut = True
            break
        frontier = nxt
    return reached


def ranked(reached: Reached, scores: Mapping[int, float]) -> Iterator[tuple[float, int, int]]:
    """(score, item, hop) best first: ``score - 1000 * hop`` (a seed's ``scores``, 0 for a
    neighbour), plus 0.001 for each seed past the first the item is linked to; ties by id.

    The items that are not seeds come by hop, then by the seeds they touch, then by id: the
    order of their scores, whose hop outweighs any bonus. They are sorted a bucket at a time,
    as the pack takes them; the seeds, a few, are merged in by score."""
    seeds = sorted(
        (
            (-(base + CLUSTER_BONUS * (reached.touches(item) - 1)), item, 0)
            for item, base in scores.items()
            if item in reached.hop
        ),
    )
    return (
        (-negative, item, hop)
        for negative, item, hop in heapq.merge(seeds, _neighbours(reached, scores))
    )


def _neighbours(reached: Reached, scores: Mapping[int, float]) -> Iterator[tuple[float, int, int]]:
    buckets: dict[tuple[int, int], list[int]] = {}
    for item, hop in reached.hop.items():
        if item not in scores:
            buckets.setdefault((hop, -reached.touches(item)), []).append(item)
    for hop, negative in sorted(buckets):
        score = -HOP_PENALTY * hop + CLUSTER_BONUS * (-negative - 1)
        for item in sorted(buckets[(hop, negative)]):
            yield -score, item, hop


def rows_in_rank(
    tx: Tx, entries: Iterator[tuple[float, int, int]], where: str, params: Sequence[object]
) -> Iterator[tuple[float, int, int, Row]]:
    """The ranked entries with their items' rows (``SELECT * FROM items i`` under ``where``),
    read a few at a time: an item the condition leaves out is skipped."""
    size = FIRST_READ
    while True:
        part = [entry for _, entry in zip(range(size), entries, strict=False)]
        if not part:
            return
        rows = rows_by_id(
            tx, "SELECT * FROM items i", [e[1] for e in part], where=where, params=params
        )
        for score, item, hop in part:
            row = rows.get(item)
            if row is not None:
                yield score, item, hop, row
        size = min(size * 2, LARGEST_READ)
