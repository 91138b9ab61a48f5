"""The lexical stage's first look at its best-ranked chunks: which hold the query's words as
written (``exact.py``), and which pass the filters, read at once (decisions 0042, 0054), and
no further than the pool's first ``k`` items need (0184).

The pool puts the exact chunks first, each group in rank order, and keeps one chunk per item.
Only its first ``k`` items reach the answer, unless turns of conversations are rescored
(``turns.rescore`` moves a turn by its neighbours', its sitting's and its question's scores:
every candidate counts). So where no turn can pass the filters (:func:`no_turns`), the pool's
first ``k`` can be settled by part of the ``EXACT_WINDOW`` best chunks, two ways:

- **Exact in the lead.** When the exact chunks among the best ``LEAD * k`` hold ``k`` passing
  items, those come first whatever the rest holds (were every chunk exact, the order is the
  ranking's: the same items). A search of one word: most chunks hold it as written.
- **Every exact chunk known.** An ASCII text can hold the words as written only if the index
  names it (``holding_every``). With few named, the lead and the named chunks are read whole,
  and of the others only those whose text goes past ASCII: every exact chunk is then known, and
  the lead's other chunks follow them. A search of two words: few chunks hold both.

Whatever cannot be settled so is read in full, and the pool is built as before.
"""

from __future__ import annotations

from ..store.base import Row, Tx
from ..store.migrations import has_step
from . import turns
from .exact import holding_every, holding_words, read_head
from .filters import Filters

LEAD = 2
"""Times ``k``: the best chunks read first when they may settle the pool."""
TALLIES_STEP = "m031_item_tallies"


def pool_entry(row: Row, chunk_id: int, score: float, exact: bool) -> turns.Ranked:
    """The pool's entry for a chunk ``read_head`` passed."""
    turn = row["item_type"] in turns.TURN_TYPES and row["session"] is not None
    return turns.Ranked(
        chunk_id,
        int(row["item_id"]),
        score,
        exact,
        str(row["category"] or "") if turn else None,
        str(row["session"]) if turn else None,
    )


def read_best(
    tx: Tx,
    filters: Filters,
    ranked: list[tuple[int, float]],
    words: list[str],
    written: list[str],
    mode: str,
    k: int,
) -> tuple[list[turns.Ranked] | None, dict[int, Row], set[int]]:
    """For the best ``ranked`` chunks (ranked for ``words`` in ``mode``): the pool's first
    ``k`` items when part of the chunks settles them (else None), the rows read that pass the
    filters (every one of ``ranked`` when not settled), and the chunks holding every one of
    ``written`` (none when all do)."""
    where, params = filters.sql("i")
    looked_at = [chunk_id for chunk_id, _ in ranked]
    lead = looked_at[: LEAD * k]
    tenant = filters.tenant
    if len(lead) == len(looked_at) or not no_turns(tx, filters):
        texts, head = read_head(tx, tenant, where, params, looked_at)
        holding = holding_every(tx, written, looked_at, words, mode)
        return None, head, _unless_all(holding_words(texts, written, holding), looked_at)
    holding = holding_every(tx, written, looked_at, words, mode)
    if holding is None or len(holding.intersection(lead)) >= k:
        texts, head = read_head(tx, tenant, where, params, lead)
        exact = holding_words(texts, written, holding)
        led = [pair for pair in ranked[: len(lead)] if pair[0] in exact]
        settled = _first_items(led, head, exact, set(lead), k)
        if settled is not None:
            return settled, head, exact
        texts, rest = read_head(tx, tenant, where, params, looked_at[len(lead) :])
        head.update(rest)
        exact |= holding_words(texts, written, holding)
        return None, head, _unless_all(exact, looked_at)
    first = set(lead) | holding.intersection(looked_at)
    texts, head = read_head(tx, tenant, where, params, [c for c in looked_at if c in first])
    others = [chunk_id for chunk_id in looked_at if chunk_id not in first]
    wide, rest = read_head(tx, tenant, where, params, others, beyond_ascii_only=True)
    texts.update(wide)
    head.update(rest)
    exact = _unless_all(holding_words(texts, written, holding), looked_at)
    order = [pair for pair in ranked if pair[0] in exact]
    order += [pair for pair in ranked if pair[0] not in exact]
    settled = _first_items(order, head, exact, first | set(wide), k)
    if settled is not None:
        return settled, head, exact
    # The others are ASCII, not named by the index: none holds the words as written.
    _, rest = read_head(tx, tenant, where, params, [c for c in others if c not in wide])
    head.update(rest)
    return None, head, exact


def _first_items(
    order: list[tuple[int, float]],
    head: dict[int, Row],
    exact: set[int],
    known: set[int],
    k: int,
) -> list[turns.Ranked] | None:
    """The first ``k`` items of the chunks ``order``, one chunk each, of those that pass
    (``head``); None when fewer, or when a chunk not ``known`` (not read) comes first."""
    found: list[turns.Ranked] = []
    seen: set[int] = set()
    for chunk_id, score in order:
        if chunk_id not in known:
            return None
        row = head.get(chunk_id)
        if row is not None and row["item_id"] not in seen:
            seen.add(row["item_id"])
            found.append(pool_entry(row, chunk_id, score, chunk_id in exact))
            if len(found) == k:
                return found
    return None


def _unless_all(exact: set[int], looked_at: list[int]) -> set[int]:
    """No chunk moves ahead when every one holds the words as written."""
    return exact if len(exact) < len(looked_at) else set()


def no_turns(tx: Tx, filters: Filters) -> bool:
    """Whether no turn of a conversation can pass ``filters``: the tenant holds no message
    (its tallies, kept in each write's transaction), and the viewer is in no conversation
    whose mail it could read (no inbox). Two seeks of primary keys."""
    if filters.types and not set(filters.types) & turns.TURN_TYPES:
        return True
    if not has_step(tx, TALLIES_STEP):  # a store at an older schema: not counted yet
        return False
    held = "SELECT 1 FROM item_tallies WHERE tenant = ? AND item_type = 'message'"
    if filters.viewer is None:  # no viewer reads no mail (core.items.visible)
        return not tx.scalar(f"SELECT EXISTS ({held})", (filters.tenant,))
    return not tx.scalar(
        f"SELECT EXISTS ({held})"
        " OR EXISTS (SELECT 1 FROM comms_inboxes WHERE tenant = ? AND principal = ?)",
        (filters.tenant, filters.tenant, filters.viewer),
    )
