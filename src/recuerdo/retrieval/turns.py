"""Conversation-aware rescoring of the lexical ranking: who said a turn, what was said around
it, which question it answers, and what else was said in that sitting.

Four facts of conversations that BM25 over single turns does not see
(docs/decisions/0025-recall.md, 0030-replies.md and 0183-sittings.md have the measurements):

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
* **A reply says what its question asked.** "What got you into running?" holds the words of a
  search about it, and the reply that follows ("My doctor said ...") holds the answer, often in
  none of them. A turn that follows a question asked by someone else gains ``ANSWER_SHARE`` of
  the question's score when a sentence of the question holds a query word, and
  ``THREAD_SHARE`` of the score of its own speaker's turn just before the question: the
  question asked about that turn ("I went camping." - "How was it?" - "We hiked ..."), so the
  reply goes on with its subject. The question itself loses ``ASKER_LOSS`` of its score: it
  names what was asked for, the reply holds it.
* **A conversation keeps to its subject for a sitting.** A run of turns of one conversation
  without a long pause is one sitting (``sittings.py``); a question about something said in it
  finds some of its turns by their words and misses the turns that say it in other words. Every
  turn gains ``SITTING_SHARE`` of the best score among its sitting's turns (its own included,
  after the three rules above), all divided by ``1 + SITTING_SHARE``: the turns of the
  best-matching sittings rise together above lone matches in sittings about something else,
  while a sitting's best turn keeps its score against notes and entries. The order inside a
  sitting does not change.

All four apply to the lexical stage's candidates only (``POOL`` of them), in the layer above the
backends, so SQLite and PostgreSQL rank alike. Chunks that hold only common words (score 0,
``docs/decisions/0016-common-words.md``) and the group of chunks with every word as written
keep their places: only the order inside each group changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from ..core.items import MAIL
from ..store.base import Row, Tx, rows_by_id
from ..store.width_forms import fold_width
from .sittings import Seen, Sitting, of_turns

SPEAKER_BONUS = 0.2
NEIGHBOUR_SHARE = 0.1
ANSWER_SHARE = 0.5
THREAD_SHARE = 0.2
ASKER_LOSS = 0.2
SITTING_SHARE = 0.2
NEIGHBOURS = 2
REACH = 3
"""Item ids looked at on each side of a turn for its neighbours: turns stored together have
consecutive ids; a few interleaved items of other conversations are skipped over."""
POOL = 200
"""The lexical candidates rescored (the first ones passing the filters)."""
TURN_TYPES = frozenset(("message", MAIL))
_WORD = re.compile(r"[^\W_]+")
_SENTENCE = re.compile(r"[^.!?\n\u3002\uff01\uff1f\u061f]*[.!?\n\u3002\uff01\uff1f\u061f]*")
"""A sentence and the marks that end it (a single pass: every character is read once)."""
_ASKS = ("?", "\uff1f", "\u061f")
"""Question marks: Latin, full-width and Arabic."""
STEM = 5
"""Letters two words must share at the start to count as one word when a question's words are
compared with the query's (plurals and tenses, roughly as the stemming full-text index does)."""


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


class Reply(NamedTuple):
    """A turn that follows a question: the turns before it in its conversation, nearest first
    (the question, then what it asked about), and whether a sentence of the question holds a
    word of the query."""

    before: list[int]
    asked_words: bool


def speaker_words(pool: list[Ranked], written: list[str]) -> tuple[set[str], set[str]]:
    """(the speakers named, the query words naming them): a query word names a speaker when it
    is one of the words of the speaker's name, among the turns of ``pool``."""
    asked = set(written)
    named: set[str] = set()
    said: set[str] = set()
    for speakers in {r.speaker for r in pool if r.turn}:
        assert speakers is not None
        words = {w.lower() for w in _WORD.findall(fold_width(speakers))} & asked
        if words:
            named.add(speakers)
            said |= words
    return named, said


def merge(full: list[Ranked], without: list[Ranked]) -> list[Ranked]:
    """Turns as ranked ``without`` the speakers' names, other items as ranked ``full``."""
    kept = [r for r in full if not r.turn] + [r for r in without if r.turn]
    return sorted(kept, key=lambda r: (not r.exact, -r.score, r.chunk_id))


def rescore(
    tx: Tx, tenant: str, pool: list[Ranked], named: set[str], words: list[str]
) -> list[Ranked]:
    """``pool`` reordered: named speakers' turns, turns among matching turns, the replies to
    matching questions, and the turns of the best-matching sittings first (``words``: the
    query's words)."""
    turns = [r for r in pool if r.turn and r.score > 0]
    if not turns:
        return pool
    by_item = {r.item_id: r for r in pool}
    around, speakers, sittings = _neighbours(tx, tenant, turns)
    asked = _asking(tx, tenant, turns, around, speakers, words)
    adjusted: dict[int, float] = {}
    handed = {reply.before[0] for reply in asked.values() if reply.asked_words}
    for r in turns:
        near = sum(by_item[n].score for n in around.get(r.item_id, []) if n in by_item)
        score = max(r.score + NEIGHBOUR_SHARE * near, r.score)
        reply = asked.get(r.item_id)
        if reply is not None:
            before = reply.before
            if reply.asked_words and before[0] in by_item:
                score += ANSWER_SHARE * by_item[before[0]].score
            if len(before) > 1 and before[1] in by_item and speakers.get(before[1]) == r.speaker:
                score += THREAD_SHARE * by_item[before[1]].score
        if r.item_id in handed:
            score *= 1 - ASKER_LOSS
        if r.speaker in named:
            score *= 1 + SPEAKER_BONUS
        adjusted[r.item_id] = score
    # Last: a sitting is as good as its best turn as the rules above see it (the reply, not
    # the question; the named speaker's turn).
    best: dict[Sitting, float] = {}
    for r in turns:
        sitting = sittings[r.item_id]
        best[sitting] = max(best.get(sitting, 0.0), adjusted[r.item_id])
    # Divided by 1 + SITTING_SHARE, so a sitting's best turn (a lone turn too) keeps its
    # score: the others move toward it, and no turn gains on notes and entries by the rule alone.
    for r in turns:
        lift = SITTING_SHARE * best[sittings[r.item_id]]
        adjusted[r.item_id] = (adjusted[r.item_id] + lift) / (1 + SITTING_SHARE)
    return sorted(
        pool,
        key=lambda r: (
            not r.exact,
            r.score <= 0,  # common words only: after every ranked chunk, as before
            -adjusted.get(r.item_id, r.score),
            r.chunk_id,
        ),
    )


def _asking(
    tx: Tx,
    tenant: str,
    turns: list[Ranked],
    around: dict[int, list[int]],
    speakers: dict[int, str | None],
    words: list[str],
) -> dict[int, Reply]:
    """The turns that reply to a question asked by another speaker (nobody answers their own
    question), by item id."""
    before_of = {r.item_id: [n for n in around.get(r.item_id, []) if n < r.item_id] for r in turns}
    asking = {
        before[0]
        for r in turns
        if (before := before_of[r.item_id]) and speakers.get(before[0]) != r.speaker
    }
    if not asking:
        return {}
    holds = _matcher(words)
    asks_words: dict[int, bool] = {}
    # Most turns ask nothing: the database leaves them out, and only the others' text is read.
    asks = " OR ".join(["content LIKE ?"] * len(_ASKS))
    for row in _turns(tx, tenant, set(asking), "id, content", asks, tuple(f"%{m}%" for m in _ASKS)):
        text = str(row["content"])
        said = [part for part in _SENTENCE.findall(text) if any(m in part for m in _ASKS)]
        if said:
            # As the index reads them: "ｒｕｎｎｉｎｇ" is "running" (decision 0161).
            held = _WORD.findall(fold_width(" ".join(said)).lower())
            asks_words[int(row["id"])] = any(holds(word) for word in held)
    found: dict[int, Reply] = {}
    for r in turns:
        before = before_of[r.item_id]
        if before and before[0] in asking and before[0] in asks_words:
            found[r.item_id] = Reply(before, asks_words[before[0]])
    return found


def _matcher(words: list[str]) -> Callable[[str], bool]:
    """Whether a lower-case word is one of ``words`` up to its ending: the two share their first
    ``STEM`` letters, or the shorter (of three letters or more) starts the other."""
    keys = {word[:STEM] for word in words}
    starts = {key[:size] for key in keys for size in range(3, len(key) + 1)}

    def holds(word: str) -> bool:
        key = word[:STEM]
        return key in keys or key in starts or any(key[:n] in keys for n in range(3, len(key)))

    return holds


def _neighbours(
    tx: Tx, tenant: str, turns: list[Ranked]
) -> tuple[dict[int, list[int]], dict[int, str | None], dict[int, Sitting]]:
    """Each turn's ``NEIGHBOURS`` nearest turns on each side in its conversation, among the
    items within ``REACH`` ids of it (each side nearest first), the speakers of the turns
    and of those neighbours, and each turn's sitting (``sittings.py``), as the turns and the
    turns around them show it."""
    near = {r.item_id + d for r in turns for d in range(-REACH, REACH + 1) if d}
    sessions = {r.item_id: r.session for r in turns}
    speakers: dict[int, str | None] = {r.item_id: r.speaker for r in turns}
    seen: list[Seen] = []
    # One read for all: the neighbours' places, and the moments the sittings are cut by.
    columns = "id, session, category, scope, coalesce(occurred_at, updated_at) AS moment"
    for row in _turns(tx, tenant, near | set(sessions), columns):
        item_id = int(row["id"])
        # A conversation is its name in its scope: one of the same name elsewhere is
        # another one (comms/transcripts.py), with sittings of its own.
        if row["session"] is not None:
            moment = None if row["moment"] is None else str(row["moment"])
            seen.append(Seen(item_id, str(row["scope"]), str(row["session"]), moment))
        if item_id not in sessions:
            sessions[item_id] = row["session"]
            speakers[item_id] = row["category"]
    found: dict[int, list[int]] = {}
    for r in turns:
        same = [r.item_id + d for d in range(1, REACH + 1)]
        after = [i for i in same if sessions.get(i) == r.session][:NEIGHBOURS]
        same = [r.item_id - d for d in range(1, REACH + 1)]
        before = [i for i in same if sessions.get(i) == r.session][:NEIGHBOURS]
        found[r.item_id] = before + after
    # A turn not read again (deleted since the ranking, on PostgreSQL) is a sitting alone.
    return found, speakers, of_turns((r.item_id for r in turns), seen)


def _turns(
    tx: Tx, tenant: str, ids: set[int], columns: str, where: str = "", params: tuple[str, ...] = ()
) -> list[Row]:
    """``columns`` of the turns among the items ``ids`` (that also meet ``where``)."""
    condition = f"tenant = ? AND item_type IN ('message', '{MAIL}')" + (
        f" AND ({where})" if where else ""
    )
    found = rows_by_id(
        tx, f"SELECT {columns} FROM items", ids, where=condition, params=(tenant, *params)
    )
    return list(found.values())
