"""Seeding: which entities a name or a question is about.

In order of trust: the exact name; the name in another letter case; one whole word of a longer
name (``Priya`` -> ``Priya Raman``); a word prefix (``Pri``); a close spelling (``Dan`` ->
``Dana``, with rapidfuzz); and type words (``which companies`` -> every entity of type
company). Small English words never seed on their own.
"""

from __future__ import annotations

from typing import Any

from ..index.words import STOP_WORDS
from ..store.base import Tx
from .store import fold, words

SEED_STOP = STOP_WORDS | {
    "tell",
    "me",
    "about",
    "who",
    "whom",
    "what",
    "which",
    "know",
    "does",
    "do",
    "anything",
    "everything",
    "something",
}
CLOSE_SCORE = 75.0  # one letter wrong in a four-letter name
MIN_PREFIX = 3
MAX_SEEDS = 25


def _singular(word: str) -> list[str]:
    forms = [word]
    if word.endswith("ies") and len(word) > 4:
        forms.append(word[:-3] + "y")
    elif word.endswith("es") and len(word) > 3:
        forms += [word[:-2], word[:-1]]
    elif word.endswith("s") and len(word) > 3:
        forms.append(word[:-1])
    return forms


# Lookups start from the word or type index (CROSS JOIN fixes SQLite's join order): without
# statistics the planner would walk every entity of the scope instead (~100 ms at 100k).


def _rows(tx: Tx, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    return [dict(row) for row in tx.all(sql, params)]


def seed(
    tx: Tx,
    tenant: str,
    scope: str,
    text: str,
    *,
    whole_only: bool = False,
) -> list[dict[str, Any]]:
    """Entities that ``text`` names, each with how it was matched, best first.
    ``whole_only``: ``text`` is one name (about), so only its own forms are tried."""
    folded = fold(text)
    base = "FROM entities e WHERE e.tenant = ? AND e.scope = ?"
    found: dict[int, dict[str, Any]] = {}

    def add(rows: list[dict[str, Any]], how: str, matched: str) -> None:
        for row in rows:
            if row["id"] not in found and len(found) < MAX_SEEDS:
                found[row["id"]] = {
                    "entity_id": row["id"],
                    "name": row["name"],
                    "how": how,
                    "matched": matched,
                }

    # One indexed lookup by the folded name answers both the exact and the other-case match.
    same = _rows(tx, f"SELECT e.id, e.name {base} AND e.folded = ?", [tenant, scope, folded])
    add([r for r in same if r["name"] == " ".join(text.split())], "exact", text.strip())
    add(same, "case", text.strip())
    if found and whole_only:
        return list(found.values())
    tokens = [w for w in words(folded) if w not in SEED_STOP]
    phrases = _phrases(tokens) if not whole_only else []
    for phrase in phrases:
        add(
            _rows(tx, f"SELECT e.id, e.name {base} AND e.folded = ?", [tenant, scope, phrase]),
            "case",
            phrase,
        )
    for word in tokens:
        add(
            _rows(
                tx,
                "SELECT e.id, e.name FROM entity_words w CROSS JOIN entities e"
                " WHERE e.tenant = w.tenant AND e.id = w.entity_id AND w.tenant = ?"
                " AND w.word = ? AND e.scope = ?"
                " LIMIT ?",  # enough to fill the seeds past those already found
                [tenant, word, scope, MAX_SEEDS + len(found)],
            ),
            "word",
            word,
        )
    for word in tokens:
        if len(word) >= MIN_PREFIX:
            add(
                _rows(
                    tx,
                    "SELECT e.id, e.name FROM entity_words w CROSS JOIN entities e"
                    " WHERE e.tenant = w.tenant AND e.id = w.entity_id AND w.tenant = ?"
                    " AND w.word > ? AND w.word < ? AND e.scope = ? LIMIT 50",
                    [tenant, word, word + "\U0010ffff", scope],
                ),
                "prefix",
                word,
            )
    if not found:
        for word in [folded] if whole_only else tokens:
            add(_close(tx, tenant, scope, word), "close", word)
    for word in tokens:
        for form in _singular(word):
            add(
                _rows(
                    tx,
                    "SELECT e.id, e.name FROM entity_types t CROSS JOIN entities e"
                    " WHERE e.tenant = t.tenant AND e.id = t.entity_id AND t.tenant = ?"
                    " AND t.type = ? AND e.scope = ? LIMIT ?",
                    [tenant, form, scope, MAX_SEEDS],
                ),
                "type",
                form,
            )
    return list(found.values())


def _phrases(tokens: list[str]) -> list[str]:
    return [" ".join(tokens[i : i + n]) for n in (3, 2) for i in range(len(tokens) - n + 1)]


def _close(tx: Tx, tenant: str, scope: str, word: str) -> list[dict[str, Any]]:
    """Names spelled closely to ``word`` (sharing its first letter, similar length)."""
    if len(word) < MIN_PREFIX:
        return []
    from rapidfuzz import fuzz, process

    rows = _rows(
        tx,
        "SELECT e.id, e.name, e.folded FROM entities e WHERE e.tenant = ?"
        " AND e.scope = ? AND e.folded >= ? AND e.folded < ? LIMIT 5000",
        [tenant, scope, word[0], word[0] + "\U0010ffff"],
    )
    if not rows:
        return []
    choices = {row["id"]: row["folded"] for row in rows}
    best = process.extract(word, choices, scorer=fuzz.WRatio, limit=3, score_cutoff=CLOSE_SCORE)
    by_id = {row["id"]: row for row in rows}
    return [by_id[key] for _, _, key in best]


def suggestions(tx: Tx, tenant: str, scope: str, name: str, limit: int = 3) -> list[str]:
    """Up to three existing names close to ``name`` (for a 'did you mean' refusal)."""
    from rapidfuzz import fuzz, process

    rows = _rows(
        tx,
        "SELECT e.name, e.folded FROM entities e WHERE e.tenant = ? AND e.scope = ? LIMIT 20000",
        [tenant, scope],
    )
    choices = [row["folded"] for row in rows]
    best = process.extract(fold(name), choices, scorer=fuzz.WRatio, limit=limit, score_cutoff=60)
    return [rows[index]["name"] for _, _, index in best]
