"""The step ``m050_audit_run_words``: the records kept before it also asked for the pairs of
letters of their runs of unspaced script (``docs/decisions/0176-audit-words-of-unspaced-runs.md``).

A forget drops the audit records that asked for a word only the forgotten text held, found by
the words kept beside each record (``audit_words.py``). A run of Chinese, Japanese, Korean,
Thai, Lao, Khmer or Myanmar was kept as one word whole (or, for the last four, cut at its
marks), while a search for part of it asks the index for its pairs: a search for "喝茶然后"
stayed in the audit after the only note holding "今天我们喝茶然后去公园" was erased. Since the
step a record's words and a forgotten text's words hold the pairs of their runs too, and the
words of the letters against a run, which were one word with it ("iphone" in "我的iPhone手机",
a review; ``audit_words.run_words``); the step adds those of the records kept before it.

Only the live records with a character of these scripts' blocks are read (the condition is
the database's, over the table it scans once): an audit of Latin searches gives Python no
record. A record a forget emptied (``audit_sweep.py``) asks for nothing any more. The words
kept before stay, and a word the step finds again is left as it is: a word against a run may
be one the record held already ("iPhone 手机" held "iphone"), and a record flushed by this
version at an older schema (a restore's) kept all of them already.
"""

from __future__ import annotations

from .audit_sweep import LIVE
from .audit_words import asked_words, batches, digest_of, insert, run_words
from .base import Tx
from .unspaced import RUN_BLOCKS

STEP = "m050_audit_run_words"
_PAST_ASCII = "*[^\x01-\x7f]*"
_CLASS = "".join(f"{chr(first)}-{chr(last)}" for first, last in RUN_BLOCKS)


def _condition(dialect: str) -> tuple[str, tuple[str, ...]]:
    """The records that may hold a run: live, with a character of the scripts' blocks in
    their query or filters (a NULL query holds none)."""
    if dialect != "sqlite":
        either = "(query ~ ? OR filters ~ ?)"
        return f"{LIVE} AND {either}", (f"[{_CLASS}]", f"[{_CLASS}]")
    # SQLite tries each of the class's ranges at every character: a text of ASCII alone is
    # let go first by a class of one range (the step over 10,000 Latin records: 55 ms, then 5).
    holds = "({0} GLOB ? AND {0} GLOB ?)"
    either = f"({holds.format('query')} OR {holds.format('filters')})"
    return f"{LIVE} AND {either}", (_PAST_ASCII, f"*[{_CLASS}]*") * 2


def m050_audit_run_words(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py)."""
    condition, params = _condition(tx.dialect)
    for records in batches(tx, "query, filters", condition, params):
        insert(
            tx,
            [
                (record["tenant"], digest_of(word), record["id"])
                for record in records
                for word in sorted(asked_words(record["query"], record["filters"], run_words))
            ],
            # A store opened at an older schema (a restore's) flushed its records with these
            # words already before it took the step; a word against a run may be kept already.
            known=True,
        )
