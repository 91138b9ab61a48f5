"""The step ``m029_folded_trigrams``: the trigram index also holds, folded, the stretches of
text around the characters case folding changes, other than ASCII letters
(``docs/decisions/0052-folded-trigrams.md``).

Entry search promises Python's case folding (``casefold``): "STRASSE" finds "Straße", "FILE"
finds "ﬁle". The trigram tokenizer folds each character to one character, by tables of its
own, so the index never offered those entries, while the rows above its mark (scanned and
folded in Python) were found: the same search answered differently once the upkeep caught up.

Now an entry holding a character that case folding changes, other than an ASCII letter, is
indexed as its text followed by the folding of each stretch around such a character (two
characters each side, a stretch a line: :func:`folded_extras`). Every trigram of the
folded text that the text's own trigrams miss touches such a character, so the index offers
the entry for the trigrams of the folded needle. The stretches are kept beside the index
(``entry_trigrams_folds``), so that the delete trigger gives FTS5 exactly the text it indexed
without calling Python (an interpreter whose Unicode tables differ would otherwise delete
other trigrams than it added). Other entries are indexed as before.

The table's name starts with the index's: backups, recovery and restores leave it out with the
index, and it is emptied whenever the index is (:func:`empty_entry_trigrams`).
"""

from __future__ import annotations

import re

from ..base import Tx
from .newest_first_schema import drop_trigram_triggers, trigram_triggers

FOLDS = "CREATE TABLE entry_trigrams_folds (id INTEGER PRIMARY KEY, folded TEXT NOT NULL)"
_NOT_ASCII = re.compile(r"[^\x00-\x7f]")
_REACH = 2  # characters on each side of a changed one that a trigram of its folding can span


def folded_extras(text: str | None) -> str | None:
    """What the index holds of an entry beside its text: the folding of each stretch around a
    character that case folding changes, other than an ASCII letter (which the tokenizer
    folds alike; ``bytes.lower`` lowers those only), two characters each side, one stretch a
    line; None when there is none. Every trigram of the folded text that the text's own
    trigrams miss touches such a character, so it is in one of these stretches. SQLite calls
    it as ``recuerdo_folded_extras`` (``files.raw_connection``)."""
    if text is None or text.isascii():
        return None
    if text.casefold() == text.encode().lower().decode():
        return None
    stretches: list[list[int]] = []
    for found in _NOT_ASCII.finditer(text):
        char, at = found.group(), found.start()
        if char.casefold() != char:
            start, stop = max(0, at - _REACH), at + _REACH + 1
            if stretches and start <= stretches[-1][1]:
                stretches[-1][1] = stop
            else:
                stretches.append([start, stop])
    return "\n".join(text[start:stop].casefold() for start, stop in stretches)


def indexed_text(content: str, folded: str) -> str:
    """What the index holds for an entry: its text (the SQL ``content``), then its folded
    stretches (``folded``, NULL when it has none). Inserts and deletes must give FTS5 the
    same text, so both are written by this."""
    return f"{content} || coalesce(char(10) || {folded}, '')"


_OLD_FOLDED = "(SELECT folded FROM entry_trigrams_folds WHERE id = old.id)"
_DELETE = (
    "INSERT INTO entry_trigrams (entry_trigrams, rowid, content) VALUES ('delete', -old.id,"
    f" {indexed_text('old.content', _OLD_FOLDED)});"
    " DELETE FROM entry_trigrams_folds WHERE id = old.id;"
)
# No verb changes an entry's text. Were it changed, the update trigger indexes the new text
# without stretches (folding them there would need Python inside the trigger).
TRIGGERS = trigram_triggers(_DELETE)


def empty_entry_trigrams(tx: Tx) -> None:
    """The trigram index emptied, with the stretches it was filled with, and its mark set
    back: the upkeep fills it again, and searches scan the entries meanwhile. A restore calls
    it at the archive's own steps, where an archive older than m029 has no stretches table."""
    tx.execute("INSERT INTO entry_trigrams (entry_trigrams) VALUES ('delete-all')")
    if tx.scalar("SELECT 1 FROM sqlite_schema WHERE name = 'entry_trigrams_folds'"):
        tx.execute("DELETE FROM entry_trigrams_folds /* every tenant */")
    tx.execute("UPDATE index_marks SET upto = 0 WHERE name = 'entry_trigrams'")


def m029_folded_trigrams(tx: Tx) -> None:
    """The step on SQLite: the stretches' table, the triggers that read it, and the index
    emptied, its mark at 0 (the upkeep fills it again; searches scan the entries meanwhile)."""
    tx.execute(FOLDS)
    drop_trigram_triggers(tx)
    for trigger in TRIGGERS:
        tx.execute(trigger)
    empty_entry_trigrams(tx)
