"""Conversation-aware rescoring of the lexical ranking: who said a turn, and what was said
around it.

Two facts of conversations that BM25 over single turns does not see
(docs/decisions/0025-recall.md has the measurements):

* **A question that names a speaker asks about that speaker's turns.** A turn's speaker is
  among its context words, but the name is also in the turns that *address* that person
  ("Thanks, Ann! ..."), in the body, where it weighs more: ranked as a word, the name favours
  the other speaker. So when a query word names the speaker of a turn among the candidates,
  the turns are ranked without that word, and the named speaker's turns gain
  ``SPEAKER_BONUS``. Items that are not turns keep the ranking with every word (a note about
  Ann still matches "Ann").
* **What a turn means is spread over the turns around it.** A turn gains ``NEIGHBOUR_SHARE``
  of the scores of the ``NEIGHBOURS`` turns on each side of it in its conversation (the
  immediate neighbours' words are already in its context column; this also reaches one
  further, and weighs by how well the neighbours themselves match).

Both apply to the lexical stage's candidates only (``POOL`` of them), in the layer above the
backends, so SQLite and PostgreSQL rank alike. Chunks that hold only common words (score 0,
``docs/decisions/0016-common-words.md``) and the group of chunks with every word as written
keep their places: only the order inside each group changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.items import MAIL
from ..store.base import Tx

SPEAKER_BONUS = 0.2
NEIGHBOUR_SHARE = 0.1
NEIGHBOURS = 2
REACH = 3
"""Item ids looked at on each side of a turn for its neighbours: turns stored together have
consecutive ids; a few interleaved items of other conversations are skipped over."""
POOL = 200
"""The lexical candidates rescored (the first ones passing the filters)."""
TURN_TYPES = frozenset(("message", MAIL))
_WORD = re.compile(r"[^\W_]+")


@dataclass
class Ranked:
    """One lexical candidate: its chunk and item, its BM25 score, whether it holds every query
    word as written, and, for a turn of a conversation, its speaker and conversation."""

    chunk_id: int
    item_id: int
    score: float
    exact: bool = False
    speaker: str | None = None
    session: str | None = None

    @property
    def turn(self) -> bool:
        return self.speaker is not None and self.session is not None


def speaker_words(pool: list[Ranked], written: list[str]) -> tuple[set[str], set[str]]:
    """(the speakers named, the query words naming them): a query word names a speaker when it
    is one of the words of the speaker's name, among the turns of ``pool``."""
    asked = set(written)
    named: set[str] = set()
    said: set[str] = set()
    for speakers in {r.speaker for r in pool if r.turn}:
        assert speakers is not None
        words = {w.lower() for w in _WORD.findall(speakers)} & asked
        if words:
            named.add(speakers)
            said |= words
    return named, said


def merge(full: list[Ranked], without: list[Ranked]) -> list[Ranked]:
    """Turns as ranked ``without`` the speakers' names, other items as ranked ``full``."""
    kept = [r for r in full if not r.turn] + [r for r in without if r.turn]
    return sorted(kept, key=lambda r: (not r.exact, -r.score, r.chunk_id))


def rescore(tx: Tx, tenant: str, pool: list[Ranked], named: set[str]) -> list[Ranked]:
    """``pool`` reordered: named speakers' turns and turns among matching turns first."""
    turns = [r for r in pool if r.turn and r.score > 0]
    if not turns:
        return pool
    by_item = {r.item_id: r for r in pool}
    around = _neighbours(tx, tenant, turns)
    adjusted: dict[int, float] = {}
    for r in turns:
        near = sum(by_item[n].score for n in around.get(r.item_id, []) if n in by_item)
        score = max(r.score + NEIGHBOUR_SHARE * near, r.score)
        if r.speaker in named:
            score *= 1 + SPEAKER_BONUS
        adjusted[r.item_id] = score
    return sorted(
        pool,
        key=lambda r: (
            not r.exact,
            r.score <= 0,  # common words only: after every ranked chunk, as before
            -adjusted.get(r.item_id, r.score),
            r.chunk_id,
        ),
    )


def _neighbours(tx: Tx, tenant: str, turns: list[Ranked]) -> dict[int, list[int]]:
    """Each turn's ``NEIGHBOURS`` nearest turns on each side in its conversation, among the
    items within ``REACH`` ids of it."""
    near = {r.item_id + d for r in turns for d in range(-REACH, REACH + 1) if d}
    ids = sorted(near - {r.item_id for r in turns})
    sessions = {r.item_id: r.session for r in turns}
    for first in range(0, len(ids), 500):
        part = ids[first : first + 500]
        marks = ",".join("?" * len(part))
        for row in tx.all(
            f"SELECT id, session FROM items WHERE tenant = ? AND id IN ({marks})"
            f" AND item_type IN ('message', '{MAIL}')",
            [tenant, *part],
        ):
            sessions[int(row["id"])] = row["session"]
    found: dict[int, list[int]] = {}
    for r in turns:
        same = [r.item_id + d for d in range(1, REACH + 1)]
        after = [i for i in same if sessions.get(i) == r.session][:NEIGHBOURS]
        same = [r.item_id - d for d in range(1, REACH + 1)]
        before = [i for i in same if sessions.get(i) == r.session][:NEIGHBOURS]
        found[r.item_id] = before + after
    return found
