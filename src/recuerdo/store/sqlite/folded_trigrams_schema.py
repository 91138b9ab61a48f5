"""The step ``m029_folded_trigrams``: the trigram index also holds, folded, the stretches of
text around characters whose case folding it cannot do itself
(``docs/decisions/0052-folded-trigrams.md``).

Entry search promises Python's case folding (``casefold``): "STRASSE" finds "Straße", "FILE"
finds "ﬁle". The trigram tokenizer folds each character to one character, by tables of its
own, so the index never offered those entries, while the rows above its mark (scanned and
folded in Python) were found: the same search answered differently once the upkeep caught up.

Now an entry holding a character that case folding changes, other than an ASCII letter, is
indexed as its text followed by the folding of each stretch around such a character (two
characters each side, a stretch a line: ``files._folded_extras``). Every trigram of the
folded text that the text's own trigrams miss touches such a character, so the index offers
the entry for the trigrams of the folded needle. The stretches are kept beside the index
(``entry_trigrams_folds``), so that the delete trigger gives FTS5 exactly the text it indexed
without calling Python (an interpreter whose Unicode tables differ would otherwise delete
other trigrams than it added). Other entries are indexed as before.

The table's name starts with the index's: backups, recovery and restores leave it out with the
index, and it is emptied whenever the index is (``search.empty_entry_trigrams``).
"""

from __future__ import annotations

from ..base import Tx
from .newest_first_schema import drop_trigram_triggers, trigram_triggers

FOLDS = "CREATE TABLE entry_trigrams_folds (id INTEGER PRIMARY KEY, folded TEXT NOT NULL)"
INDEXED_TEXT = "{row}.content || coalesce(char(10) || {folds}.folded, '')"
"""What the index holds for an entry ``row``: its text, then its folded stretches (its row of
``entry_trigrams_folds`` aliased ``folds``), if any."""
_DELETE = (
    "INSERT INTO entry_trigrams (entry_trigrams, rowid, content) VALUES ('delete', -old.id,"
    " old.content || coalesce(char(10) ||"
    " (SELECT folded FROM entry_trigrams_folds WHERE id = old.id), ''));"
    " DELETE FROM entry_trigrams_folds WHERE id = old.id;"
)
# No verb changes an entry's text. Were it changed, the update trigger indexes the new text
# without stretches (folding them there would need Python inside the trigger).
TRIGGERS = trigram_triggers(_DELETE)


def m029_folded_trigrams(tx: Tx) -> None:
    """The step on SQLite: the stretches' table, the triggers that read it, and the index
    emptied, its mark at 0 (the upkeep fills it again; searches scan the entries meanwhile)."""
    tx.execute(FOLDS)
    drop_trigram_triggers(tx)
    for trigger in TRIGGERS:
        tx.execute(trigger)
    tx.execute("INSERT INTO entry_trigrams (entry_trigrams) VALUES ('delete-all')")
    tx.execute("UPDATE index_marks SET upto = 0 WHERE name = 'entry_trigrams'")
