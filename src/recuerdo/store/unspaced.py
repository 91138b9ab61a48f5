"""Words of scripts written without spaces, and of symbols, as both word indexes hold them
(``docs/decisions/0147-words-of-unspaced-scripts.md``).

Both word indexes (SQLite's ``unicode61``, PostgreSQL's parser) cut words at spaces and
punctuation: a run of Han, Kana or Hangul is one word there ("今天我们喝茶然后去公园"), so no
word inside it could be asked for, and an emoji is no word at all. Neither index can be given
a tokenizer of ours (FTS5 takes tokenizers only from C), so the text each is given is spelled
out first, in Python, and each index cuts the spelled text at its spaces as it always did:

* a run of these scripts becomes its overlapping character pairs, then its characters
  ("喝茶了" → "喝茶 茶了 喝 茶 了"): any two or more characters of the run are pairs it holds,
  one character is a character it holds;
* a symbol (Unicode category So: emoji, pictographs, ©, ° ...) becomes a word of letters and
  digits, ``zsym`` and its code point, which every index reads as one word.

A query's run becomes its pairs, every one required (its one character, if it has one); its
symbol the same ``zsym`` word. Text without these characters (every ASCII text) is given to
the index unchanged, so Latin text is indexed and ranked as before.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

from .unspaced_table import LETTERS
from .unspaced_table import SYMBOLS as _SYMBOL_CODES
from .width_forms import fold_width

# The table's letters are those of the scripts' blocks (Hangul Jamo, Hiragana, Katakana and
# their extensions, CJK ideographs and their extensions, halfwidth Katakana and Hangul; Korean
# is spaced, but particles join the word before them: "차를" is "차" and "를"). Only letters
# count: a character the indexes cut at (the Katakana middle dot) must never sit inside a
# pair, or the index would cut the pair in two.
_BLOCKS = (
    (0x1100, 0x11FF),
    (0x3005, 0x3007),
    (0x3040, 0x30FF),
    (0x3130, 0x318F),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7FF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFFDC),
    (0x20000, 0x323AF),
)
"""The blocks the table's letters were taken from (unspaced_table.py)."""
SYMBOL_WORD = "zsym"
"""The start of a symbol's word: letters no English word starts its digits with."""


def _ranges(table: str) -> list[tuple[int, int]]:
    """The table's code points and ranges, as (first, last) pairs."""
    pairs = []
    for item in table.split():
        first, _, last = item.partition("-")
        pairs.append((int(first, 16), int(last or first, 16)))
    return pairs


def _class(table: str) -> str:
    """A regex character class body of the table's code points and ranges."""
    return "".join(
        f"\\U{first:08x}" + (f"-\\U{last:08x}" if last > first else "")
        for first, last in _ranges(table)
    )


UNSPACED = _class(LETTERS)
"""The letters of the scripts written without spaces, as a regex class body."""
SYMBOLS = _class(_SYMBOL_CODES)
"""The symbol characters (category So past ASCII), as a regex class body."""
_SPANS = sorted([*_ranges(LETTERS), *_ranges(_SYMBOL_CODES)])
_FIRSTS = [first for first, _ in _SPANS]


def _spelled_somewhere(text: str) -> bool:
    """Whether ``text`` has a character :func:`indexed_text` spells. Each distinct character
    past ASCII is looked up among the ranges: the regex tries its 200 ranges at every
    character, 100 us for a 400-character accented Latin text that it leaves as it is."""
    for char in set(text):
        code = ord(char)
        if code > 0x7F:
            at = bisect_right(_FIRSTS, code) - 1
            if at >= 0 and code <= _SPANS[at][1]:
                return True
    return False


_SPELLED = re.compile(f"[{UNSPACED}]+|[{SYMBOLS}]")
_RUN = re.compile(f"[{UNSPACED}]+")
MAX_PAIRS = 32
"""A query's run requires at most its first this many pairs (a pasted paragraph asks for a
passage that starts so, not for hundreds of index lookups)."""


def _pairs(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _spelled(match: re.Match[str]) -> str:
    found = match.group()
    if not _RUN.fullmatch(found):
        return f" {SYMBOL_WORD}{ord(found)} "
    # Korean typed as separate jamo (NFD: macOS file names) is one run that composes to
    # syllables, as the query's NFC reading of it does.
    run = unicodedata.normalize("NFC", found)
    return " " + " ".join([*_pairs(run), *run] if len(run) > 1 else [run]) + " "


def indexed_text(text: str) -> str:
    """``text`` as a word index is given it: each run of unspaced script spelled as its pairs
    and characters, each symbol as its word; any other text returned as it is."""
    if text.isascii() or not _spelled_somewhere(text):
        return text
    return _SPELLED.sub(_spelled, text)


def indexed_or_none(text: str | None) -> str | None:
    """:func:`indexed_text` of a text that may be NULL (SQLite's ``recuerdo_words``)."""
    return None if text is None else indexed_text(text)


def folded_text(text: str) -> str:
    """``text`` as a word index is given it since width forms are folded (decision 0161):
    :func:`indexed_text` of its :func:`~.width_forms.fold_width`."""
    return indexed_text(fold_width(text))


def folded_or_none(text: str | None) -> str | None:
    """:func:`folded_text` of a text that may be NULL (SQLite's ``recuerdo_folded_words``)."""
    return None if text is None else folded_text(text)


def is_unspaced(word: str) -> bool:
    """Whether a query word is a run of unspaced script or a symbol: a word that text holds
    wherever it stands, not only between spaces and punctuation."""
    return bool(word) and not word.isascii() and _SPELLED.fullmatch(word) is not None


def query_forms(word: str) -> list[str]:
    """The index words a query word stands for, all required: a run's pairs (its character,
    if one), a symbol's word, any other word itself; width forms folded first (0161: the
    words come folded from ``index.words``, but a caller may pass its own)."""
    if word.isascii():
        return [word]
    word = fold_width(word)
    if not _SPELLED.fullmatch(word):
        return [word]
    if not _RUN.fullmatch(word):
        return [f"{SYMBOL_WORD}{ord(word)}"]
    return list(dict.fromkeys(_pairs(word)))[:MAX_PAIRS] if len(word) > 1 else [word]
