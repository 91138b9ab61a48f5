"""How an entity's name is compared: folded (case, runs of spaces, and Unicode's two spellings of
an accented letter), and the step ``m038_nfc_entity_names``, which folds the names stored before
the last was part of it.

"José" can be written with one code point for the "é" (NFC, what most keyboards send) or two, an
"e" and a combining accent (NFD, what macOS file names and some tools send). Folded by case
alone, the two spellings made two entities of one person, and a forget of one spelling left the
other (a hunt over the knowledge graph). Names and the words of passages are compared in NFC
now (decision 0091).

The step folds again the stored names whose folding changes. A scope that holds both spellings
already keeps both entities: merging them (facts, mentions, attributes, types and history) is
left to the caller, who can forget one; the step does not guess.
"""

from __future__ import annotations

import re
import unicodedata

from .base import Tx

_WORD = re.compile(r"[^\W_]+")
STEP = "m038_nfc_entity_names"
_BATCH = 1000


def fold(name: str) -> str:
    """The form names are compared in: NFC, case-folded, single spaces."""
    return " ".join(_nfc_folded(name).split())


def words(text: str) -> list[str]:
    """The words of a (folded) name or query, for whole-word and prefix matching."""
    return _WORD.findall(_nfc_folded(text))


def _nfc_folded(text: str) -> str:
    # Case folding can decompose ("İ" folds to "i" and a combining dot): composed again after.
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())


def nfc(text: str) -> str:
    """A relation's or a type's name in NFC (their case is lowered where they are checked)."""
    return unicodedata.normalize("NFC", text)


def m038_nfc_entity_names(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py)."""
    refold(tx)


def beyond_ascii(tx: Tx, column: str) -> str:
    """A condition true for the rows whose text ``column`` holds a character past ASCII."""
    if tx.dialect == "sqlite":
        return f"length(CAST({column} AS BLOB)) <> length({column})"
    return f"octet_length({column}) <> char_length({column})"


def _recompose(tx: Tx) -> None:
    """Relations and types in NFC: stored as given, one spelling of "señora" was a relation
    and a type apart from the other (the review of decision 0091). Only names beyond ASCII are
    read; there are few (a relation or a type is a word of a vocabulary)."""
    facts = tx.all(f"SELECT tenant, id, relation FROM facts WHERE {beyond_ascii(tx, 'relation')}")
    tx.executemany(
        "UPDATE facts SET relation = ? WHERE tenant = ? AND id = ?",
        [
            (nfc(r["relation"]), r["tenant"], r["id"])
            for r in facts
            if nfc(r["relation"]) != r["relation"]
        ],
    )
    types = [
        r
        for r in tx.all(
            f"SELECT tenant, entity_id, type FROM entity_types WHERE {beyond_ascii(tx, 'type')}"
        )
        if nfc(r["type"]) != r["type"]
    ]
    tx.executemany(
        "INSERT INTO entity_types (tenant, entity_id, type) VALUES (?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        [(r["tenant"], r["entity_id"], nfc(r["type"])) for r in types],
    )
    tx.executemany(
        "DELETE FROM entity_types WHERE tenant = ? AND entity_id = ? AND type = ?",
        [(r["tenant"], r["entity_id"], r["type"]) for r in types],
    )


def refold(tx: Tx) -> int:
    """Fold again the names whose folding changed (the step's, and a recovered store's:
    recover copies the entities of a file of any age); how many. Only a name beyond ASCII
    can change, and only those are read."""
    # Pages along each store's key: the row id on SQLite, (tenant, id) on PostgreSQL, where
    # paging by id alone read and sorted the whole table for each page (the review of 0091).
    _recompose(tx)
    wider = beyond_ascii(tx, "folded")
    if tx.dialect == "sqlite":
        after, order = "id > ?", "id"
    else:
        after, order = "(tenant, id) > (?, ?)", "tenant, id"
    changed = 0
    last: tuple[object, ...] = (0,) if tx.dialect == "sqlite" else ("", 0)
    while True:
        rows = tx.all(
            f"SELECT id, tenant, scope, name, folded FROM entities WHERE {after} AND {wider}"
            f" ORDER BY {order} LIMIT ?",
            (*last, _BATCH),
        )
        if not rows:
            return changed
        final = rows[-1]
        last = (final["id"],) if tx.dialect == "sqlite" else (final["tenant"], final["id"])
        for row in rows:
            folded = fold(row["name"])
            if folded == row["folded"] or tx.scalar(
                "SELECT 1 FROM entities WHERE tenant = ? AND scope = ? AND folded = ?",
                (row["tenant"], row["scope"], folded),
            ):
                continue
            tx.execute(
                "UPDATE entities SET folded = ? WHERE tenant = ? AND id = ?",
                (folded, row["tenant"], row["id"]),
            )
            tx.execute(
                "DELETE FROM entity_words WHERE tenant = ? AND entity_id = ?",
                (row["tenant"], row["id"]),
            )
            tx.executemany(
                "INSERT INTO entity_words (tenant, word, entity_id) VALUES (?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                [(row["tenant"], word, row["id"]) for word in set(words(folded))],
            )
            changed += 1
