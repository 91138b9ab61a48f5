"""Entries matched by case folding on PostgreSQL, as on SQLite (decision 0055).

An entry search ignores case the way ``str.casefold`` does: on SQLite a needle is found in an
entry when ``needle.casefold() in content.casefold()`` (``store/sqlite/search.py::contains``).
PostgreSQL has ``lower()`` only, and it parts from Python's folding on a few characters:
"ß" stays "ß" (folded: "ss"), "ς" stays "ς" (folded: "σ"), and in this server's C.UTF-8
"İ" becomes "i" (folded: "i" and a combining dot). On the others a server's ``lower()`` gives
what ``casefold`` gives, character by character.

So an entry holding one of those characters keeps its text folded by Python beside it
(``items.folded``, with a trigram index of its own); every other entry's ``lower(content)``
is its folded text already. A search looks for the folded needle in the copies, and in
``lower(content)`` of the entries without one (``search.py::TrigramSubstrings``). A server
whose ``lower()`` folds nothing past ASCII has every entry with a cased letter past ASCII
folded beside it. ICU lowers some letters by their neighbours (a capital sigma ending a word
becomes ς; in Lithuanian, I, J and Į gain a dot above before an accent): each letter is also
asked in such places, and every entry holding one that parts there has a copy.

Which characters part is asked of the server each time a memory opens
(:func:`keep_current`), not assumed: it depends on its locale and Unicode tables.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from ..base import Row, Tx

_BATCH = 1_000
_PAST_ASCII = "content ~ '[^\\x01-\\x7f]'"
_BEFORE = "\u0391"  # a capital alpha: a letter after it may end a word (the final sigma)
_AFTER = "\u0301"  # a combining acute: a letter before it is accented (Lithuanian's dot)
_CASED_BELOW = 0x20000
"""Past the first two planes no character has a case (the last is U+1E943, in Python 3.11's
tables); :func:`_cased` reads them in 30 ms where every code point took 260."""


@cache
def _cased() -> tuple[str, ...]:
    """Every character that case mapping or folding changes (about 2,900): the only ones a
    server's ``lower()`` may treat otherwise than ``casefold``."""
    return tuple(
        ch
        for ch in map(chr, range(1, _CASED_BELOW))
        if not 0xD800 <= ord(ch) <= 0xDFFF
        and (ch.casefold() != ch or ch.lower() != ch or ch.upper() != ch)
    )


@dataclass(frozen=True)
class Parting:
    """The characters whose ``lower()`` on a server is not their ``casefold()``."""

    chars: frozenset[str]
    ascii: bool
    """Whether an ASCII letter is among them (a Turkish locale lowers "I" to dotless "ı"):
    ASCII text then needs a look too."""

    def need_copy(self, text: str) -> bool:
        """Whether ``text`` holds one of them (an ASCII test first: most text is)."""
        return not (text.isascii() and not self.ascii) and not self.chars.isdisjoint(text)


def parting_characters(tx: Tx) -> Parting:
    """The characters this server lowers otherwise than ``casefold``, asked of it: each one
    alone, after a capital letter and before a combining accent, the places where a
    locale's rules look at the neighbours (decision 0055)."""
    cased = _cased()
    asked = [
        (ch, form, expected)
        for ch in cased
        for form, expected in (
            (ch, ch.casefold()),
            (_BEFORE + ch, _BEFORE.casefold() + ch.casefold()),
            (ch + _AFTER, ch.casefold() + _AFTER),
        )
    ]
    lowered = tx.all(
        "SELECT c.ord AS n, lower(c.form) AS low"
        " FROM unnest(?::text[]) WITH ORDINALITY AS c(form, ord)",
        ([form for _, form, _ in asked],),
    )
    chars = frozenset(
        asked[int(row["n"]) - 1][0] for row in lowered if row["low"] != asked[int(row["n"]) - 1][2]
    )
    return Parting(chars, not chars.isdisjoint(string.ascii_letters))


def folded_copy(content: str, parting: Parting) -> str | None:
    """What ``items.folded`` keeps for an entry: its folded text when it holds a character
    the server lowers otherwise, else None."""
    return content.casefold() if parting.need_copy(content) else None


def _entries(tx: Tx, parting: Parting) -> Iterator[list[Row]]:
    """The stored entries a copy may concern, a batch at a time: those holding one, and
    those with text past ASCII (all when ASCII letters part)."""
    wanted = "" if parting.ascii else f" AND (folded IS NOT NULL OR {_PAST_ASCII})"
    last = 0
    while True:
        rows = tx.all(
            "SELECT tenant, id, content, folded FROM items /* every tenant */"
            f" WHERE item_type = 'entry' AND id > ?{wanted} ORDER BY id LIMIT ?",
            (last, _BATCH),
        )
        if not rows:
            return
        yield rows
        last = int(rows[-1]["id"])


def _misfolded(tx: Tx, parting: Parting) -> Iterator[list[tuple[str | None, str, int]]]:
    """A batch at a time, (the copy it needs, tenant, id) of each stored entry whose copy is
    missing, left over or not its text's folding on this server."""
    for rows in _entries(tx, parting):
        needed = [(folded_copy(str(row["content"]), parting), row) for row in rows]
        yield [
            (copy, str(row["tenant"]), int(row["id"]))
            for copy, row in needed
            if row["folded"] != copy
        ]


def stale_copies(tx: Tx, parting: Parting) -> int:
    """How many stored entries hold another copy than their text needs: what ``check``
    counts."""
    return sum(len(batch) for batch in _misfolded(tx, parting))


def refold(tx: Tx, parting: Parting) -> int:
    """Give every stored entry the copy it needs on this server (none where it needs none),
    a batch at a time; how many changed."""
    changed = 0
    for batch in _misfolded(tx, parting):
        if batch:
            tx.executemany("UPDATE items SET folded = ? WHERE tenant = ? AND id = ?", batch)
            changed += len(batch)
    return changed


def fingerprint(parting: Parting) -> int:
    """A number naming the parting characters, kept as the mark ``folded_copies``: the set
    the stored copies were written for."""
    digest = hashlib.blake2b("".join(sorted(parting.chars)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def keep_current(tx: Tx) -> Parting:
    """The server's parting characters, after making the stored copies theirs if they were
    written for others (a memory's first open after m030 or after a load, or a server whose
    locale changed under it): one read of a mark when nothing changed."""
    parting = parting_characters(tx)
    mark = fingerprint(parting)
    if tx.scalar("SELECT upto FROM index_marks WHERE name = 'folded_copies'") != mark:
        refold(tx, parting)
        tx.execute(
            "INSERT INTO index_marks (name, upto) VALUES ('folded_copies', ?)"
            " ON CONFLICT (name) DO UPDATE SET upto = excluded.upto",
            (mark,),
        )
    return parting


def m030_folded_entries(tx: Tx) -> None:
    """The step: ``items.folded`` and its trigram index where the server has ``pg_trgm``.
    The copies the entries already stored need are written as the store opens
    (:func:`keep_current`)."""
    from .ddl import has_extension

    tx.execute("ALTER TABLE items ADD COLUMN folded TEXT")
    if has_extension(tx, "pg_trgm"):
        tx.execute(
            "CREATE INDEX items_folded_trigrams ON items USING gin (folded public.gin_trgm_ops)"
            " WHERE folded IS NOT NULL"
        )
