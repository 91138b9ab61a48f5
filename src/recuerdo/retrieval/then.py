"""An answer at an instant reads each note as it was then (decision 0129).

The indexes hold the text of now. A note changed since the instant (edited, deleted softly,
restored: its ``updated_at`` is later) is read in its revision log instead:

* ``as_of`` (what the memory knew then): the newest version written by then; a note that was
  deleted then (its last deletion or restore by then is a deletion) is left out, a note
  deleted since is kept: the memory knew it, and its text is still kept. A note erased (a hard
  delete, a forget) has no row and no revision left: nothing of it can come back.
* ``valid_at`` (what was true then): the version in force then, the first one from when the
  note was said; a note deleted now is not taken as true (the filters leave it out).

A note whose version then is not its current one is judged again by the words of that version
(its current words, which the indexes ranked it by, were not said then): at most
``REREAD_LIMIT`` of them, the most recently changed first; the others keep the rank their words
of now gave them, and the answer counts them (``earlier_texts_unread``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.secrets import holds_secret
from ..graph.store import View
from ..index.chunk import Span, chunk_spans
from ..index.words import terms
from ..store import revision_deltas
from ..store.base import Tx, groups, marks
from ..store.entity_names import fold
from ..store.unspaced import is_unspaced
from ..store.width_forms import fold_width
from .filters import Filters
from .search import STAGE_K, WEIGHTS, Candidate, loaded

REREAD_LIMIT = 500
_NOTES_A_STATEMENT = 500
_STAGE = "lexical"  # found by its words (those it had then)


@dataclass(frozen=True)
class Then:
    """The text a note had at the instant, its version, and its title then."""

    version: int
    text: str
    title: str | None


@dataclass
class AtInstant:
    candidates: list[Candidate]
    texts: dict[int, Then]
    """Notes to be read in an earlier version (those absent are read as they are now)."""
    unread: int = 0
    withheld: int = 0
    """Notes the answer would have taken whose text then holds what the secret guard
    replaces now."""


def moment(view: View) -> str | None:
    """The instant a view reads a note's text at: with both options, the earlier (a note's
    version holds from its date on, in what was known and in what was true alike)."""
    given = [at for at in (view.as_of, view.valid_at) if at is not None]
    return min(given) if given else None


def at_instant(
    tx: Tx, tenant: str, view: View, filters: Filters, query: str, found: list[Candidate], k: int
) -> AtInstant:
    """The candidates as the instant sees them (of the first ``k``, those an answer may take,
    none whose text then the secret guard would change), and the earlier texts to read them
    in."""
    at = moment(view)
    if at is None:
        return AtInstant(found, {})
    where, params = filters.sql("i")
    changed = {
        int(row["id"]): int(row["version"])
        for row in tx.all(
            f"SELECT i.id, i.version FROM items i WHERE {where} AND i.item_type = 'note'"
            " AND i.updated_at > ? ORDER BY i.updated_at DESC, i.id DESC LIMIT ?",
            [*params, at, REREAD_LIMIT + 1],
        )
    }
    reread = set(list(changed)[:REREAD_LIMIT])
    unread = len(changed) - len(reread)
    if unread:  # beyond the limit: count them all, and read the candidates among them
        unread = int(
            tx.scalar(
                f"SELECT count(*) FROM items i WHERE {where} AND i.item_type = 'note'"
                " AND i.updated_at > ?",
                [*params, at],
            )
        ) - len(reread)
        changed.update(_changed_among(tx, tenant, [c.item_id for c in found], at))
    versions = _versions_then(tx, tenant, list(changed), at, view.as_of)
    earlier = {i: v for i, v in versions.items() if v is not None and v != changed[i]}
    texts: dict[int, Then] = {}
    for part in groups(sorted(earlier), _NOTES_A_STATEMENT):
        rebuilt = revision_deltas.versions_from(tx, tenant, {i: earlier[i] for i in part})
        for item_id in part:
            held, rows = rebuilt.get(item_id, ({}, []))
            text = held.get(earlier[item_id])
            if text is None:  # no such revision: what it said then cannot be told
                versions[item_id] = None
                continue
            [row] = [r for r in rows if r["version"] == earlier[item_id]]
            texts[item_id] = Then(earlier[item_id], text, row["title"])
    gone = {item_id for item_id, version in versions.items() if version is None}
    asked = _asked(query)
    then_words = {i: _shared(asked, texts[i].text) for i in reread & set(texts)}
    kept = [c for c in found if c.item_id not in gone and c.item_id not in then_words]
    if then_words or gone:
        kept += _ranked_with_words_then(tx, tenant, kept, asked, then_words)
        kept.sort(key=lambda c: (-c.score, -c.item_id))
    kept, withheld = _guarded(kept, texts, k)
    return AtInstant(kept, texts, unread, withheld)


def _guarded(kept: list[Candidate], texts: dict[int, Then], k: int) -> tuple[list[Candidate], int]:
    """The candidates less the texts then, among the ``k`` an answer may take, that hold what
    the secret guard replaces now (an edit runs it over the note's whole text, so a credential
    an older guard let through left the note at its next edit, not its earlier versions), and
    how many were left out. Only those an answer would take are looked at: the guard costs
    about as much as the reading of a text."""
    passed: list[Candidate] = []
    left_out = 0
    for candidate in kept:
        then = texts.get(candidate.item_id)
        if (
            len(passed) < k
            and then is not None
            and holds_secret(f"{then.title or ''}\n{then.text}")
        ):
            del texts[candidate.item_id]
            left_out += 1
            continue
        passed.append(candidate)
    return passed, left_out


def _changed_among(tx: Tx, tenant: str, ids: list[int], at: str) -> dict[int, int]:
    if not ids:
        return {}
    return {
        int(row["id"]): int(row["version"])
        for row in tx.all(
            f"SELECT id, version FROM items WHERE tenant = ? AND id IN ({marks(ids)})"
            " AND item_type = 'note' AND updated_at > ?",
            [tenant, *ids, at],
        )
    }


def _versions_then(
    tx: Tx, tenant: str, ids: list[int], at: str, known_at: str | None
) -> dict[int, int | None]:
    """Each note's version at ``at`` (None: not there then). The first version stands for
    a note with none written by then: the filters kept it as stored or said by then. With
    ``known_at`` (as_of), a note whose last deletion or restore by then was a deletion is
    not there."""
    newest: dict[int, int] = {}
    deleted: dict[int, bool] = {}
    last = max(at, known_at or at)
    for part in groups(sorted(ids), _NOTES_A_STATEMENT):
        for row in tx.all(
            "SELECT item_id, version, operation, created_at FROM revisions WHERE tenant = ?"
            f" AND item_id IN ({marks(part)}) AND created_at <= ? ORDER BY item_id, id",
            [tenant, *part, last],
        ):
            item_id = int(row["item_id"])
            if row["version"] is not None and row["created_at"] <= at:
                newest[item_id] = int(row["version"])
            elif row["operation"] in ("delete", "restore") and row["created_at"] <= (
                known_at or ""
            ):
                deleted[item_id] = row["operation"] == "delete"
    return {item_id: None if deleted.get(item_id) else newest.get(item_id, 1) for item_id in ids}


def _asked(query: str) -> re.Pattern[str] | None:
    """The question's words where a word of a text starts with them: five letters stand in
    for a word's stem (the words index stems: "leaves" finds "leave")."""
    words = terms(query)
    stems = sorted({word[:5] for word in words if not is_unspaced(word)}, key=len, reverse=True)
    # A run of an unspaced script, or a symbol, is held wherever it stands (decision 0147):
    # inside a run there is no word boundary before it, and none before an emoji.
    whole = sorted({word for word in words if is_unspaced(word)}, key=len, reverse=True)
    if not stems and not whole:
        return None
    parts = [*(re.escape(word) for word in whole)]
    if stems:
        parts.append(r"\b(?:" + "|".join(re.escape(stem) for stem in stems) + ")")
    return re.compile("(" + "|".join(parts) + ")")


def _shared(asked: re.Pattern[str] | None, text: str) -> int:
    """How many of the question's words ``text`` holds."""
    return 0 if asked is None else len(set(asked.findall(fold(fold_width(text)))))


def _ranked_with_words_then(
    tx: Tx, tenant: str, kept: list[Candidate], asked: re.Pattern[str] | None, then: dict[int, int]
) -> list[Candidate]:
    """The words stage's ranking as it would have been with the notes read again in their
    words of then (``then``: how many question words each holds): each one that holds a word
    goes in before the first find of the stage holding fewer, and every find of the stage is
    scored again at its rank (those dropped leave no gap). Ranked apart, a note holding one
    question word of three was first of its own list and tied with the stage's best find.
    The new candidates (the notes read again) are returned; those of ``kept`` are rescored."""
    stage = sorted((c for c in kept if _STAGE in c.stages), key=lambda c: c.stages[_STAGE])
    held = {
        candidate.item_id: _shared(
            asked,
            item["content"] if chunk is None else item["content"][chunk["start"] : chunk["stop"]],
        )
        for candidate, item, chunk in loaded(
            tx, tenant, stage, columns="id, content", chunk_text_too=False
        )
    }
    # One merge: the notes come most words first, so the stage's first find holding fewer
    # words than a note is never before the previous note's.
    ranked: list[Candidate] = []
    added: list[Candidate] = []
    passed = 0
    for item_id in sorted((i for i in then if then[i]), key=lambda i: (-then[i], -i)):
        while passed < len(stage) and held.get(stage[passed].item_id, 0) >= then[item_id]:
            ranked.append(stage[passed])
            passed += 1
        added.append(Candidate(item_id, None))
        ranked.append(added[-1])
    ranked += stage[passed:]
    weight, k = WEIGHTS[_STAGE], STAGE_K[_STAGE]
    for rank, candidate in enumerate(ranked, start=1):
        before = candidate.stages.get(_STAGE)
        if before is not None:
            candidate.score -= weight / (k + before)
        candidate.stages[_STAGE] = rank
        candidate.score += weight / (k + rank)
    return added


def passage_span(text: str, query: str) -> tuple[int, int]:
    """The passage of an earlier text to answer with: its cut (as the indexes cut a text)
    holding most of the question's words, the first of equals."""
    asked = _asked(query)
    spans = chunk_spans(text) or [Span(0, len(text))]
    best = max(spans, key=lambda s: _shared(asked, text[s.start : s.end]))
    return best.start, best.end
