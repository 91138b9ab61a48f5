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

Thai, Lao, Khmer and Myanmar are written without spaces too, but their vowel signs and tone
marks are combining marks, which SQLite's tokenizer cuts a word at and PostgreSQL's keeps in
it: since step m049 a run of them is spelled as the pairs of its letters, its marks left out
("ชาเย็น" → "ชา าเ เย ยน ..."; decision 0174). The spellings of the steps before stay here,
under their names, for the stores and steps that still read the words they gave.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

from .unspaced_table import LETTERS, MARKED_LETTERS, MARKS
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
MARKED_BLOCKS = (
    (0x0E00, 0x0E7F),
    (0x0E80, 0x0EFF),
    (0x1000, 0x109F),
    (0x1780, 0x17FF),
    (0xA9E0, 0xA9FF),
    (0xAA60, 0xAA7F),
)
"""Thai, Lao, Myanmar, Khmer, Myanmar Extended-B and -A: the blocks of ``MARKED_LETTERS`` and
``MARKS`` (their digits, punctuation and symbols are neither: Khmer's symbols and Myanmar's
are symbols above)."""
RUN_BLOCKS = (*_BLOCKS, *MARKED_BLOCKS)
"""Every block a run's letters are taken from: a text with no character of these holds no
run (a filter the database can apply before Python reads a row)."""
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


_UNSPACED_0147 = _class(LETTERS)
_MARKS = _class(MARKS)
UNSPACED = _UNSPACED_0147 + _class(MARKED_LETTERS)
"""The letters of the scripts written without spaces, as a regex class body."""
RUN = f"[{UNSPACED}][{UNSPACED}{_MARKS}]*"
"""A run of them, as a regex: letters, and the marks each letter carries (Thai, Lao, Khmer,
Myanmar). A mark with no letter before it is no run's (both indexes read it as they did)."""
SYMBOLS = _class(_SYMBOL_CODES)
"""The symbol characters (category So past ASCII), as a regex class body."""
_SPANS_0147 = sorted([*_ranges(LETTERS), *_ranges(_SYMBOL_CODES)])
_SPANS = sorted([*_SPANS_0147, *_ranges(MARKED_LETTERS)])
_FIRSTS_0147 = [first for first, _ in _SPANS_0147]
_FIRSTS = [first for first, _ in _SPANS]


def _spelled_somewhere(text: str, *, before_0174: bool = False) -> bool:
    """Whether ``text`` has a character a spelling changes (``before_0174``: the spelling of
    the steps before m049). Each distinct character past ASCII is looked up among the ranges:
    the regex tries its 200 ranges at every character, 100 us for a 400-character accented
    Latin text that it leaves as it is."""
    spans, firsts = (_SPANS_0147, _FIRSTS_0147) if before_0174 else (_SPANS, _FIRSTS)
    for char in set(text):
        code = ord(char)
        if code > 0x7F:
            at = bisect_right(firsts, code) - 1
            if at >= 0 and code <= spans[at][1]:
                return True
    return False


_SPELLED_0147 = re.compile(f"[{_UNSPACED_0147}]+|[{SYMBOLS}]")
_RUN_0147 = re.compile(f"[{_UNSPACED_0147}]+")
_SPELLED = re.compile(f"{RUN}|[{SYMBOLS}]")
_RUN = re.compile(RUN)
_UNMARKED = {
    **{code: None for first, last in _ranges(MARKS) for code in range(first, last + 1)},
    # SARA AM is NIKHAHIT and SARA AA (compatibility decomposition; both spellings are typed):
    # without its mark, SARA AA. Lao's AM the same.
    0x0E33: 0x0E32,
    0x0EB3: 0x0EB2,
}
"""The marks left out of a run's letters, and the letters that hold one."""
MAX_PAIRS = 32
"""A query's run requires at most its first this many pairs (a pasted paragraph asks for a
passage that starts so, not for hundreds of index lookups)."""


def _pairs(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _letters(run: str) -> str:
    """A run's letters as its words are made of: composed (Korean typed as separate jamo, NFD
    in macOS file names, is the syllables the query's NFC reading of it holds; Myanmar's U
    and II sign are its UU), then without the marks of Thai, Lao, Khmer and Myanmar."""
    return unicodedata.normalize("NFC", run).translate(_UNMARKED)


def _spelled(match: re.Match[str]) -> str:
    found = match.group()
    if not _RUN.fullmatch(found):
        return f" {SYMBOL_WORD}{ord(found)} "
    run = _letters(found)
    return " " + " ".join([*_pairs(run), *run] if len(run) > 1 else [run]) + " "


def _spelled_0147(match: re.Match[str]) -> str:
    found = match.group()
    if not _RUN_0147.fullmatch(found):
        return f" {SYMBOL_WORD}{ord(found)} "
    run = unicodedata.normalize("NFC", found)
    return " " + " ".join([*_pairs(run), *run] if len(run) > 1 else [run]) + " "


def spelled_text(text: str) -> str:
    """``text`` as a word index is given it: each run of unspaced script spelled as the pairs
    and characters of its letters, each symbol as its word; any other text returned as it
    is (PostgreSQL's words, once its own fold is done)."""
    if text.isascii() or not _spelled_somewhere(text):
        return text
    return _SPELLED.sub(_spelled, text)


def words_of(text: str | None) -> str | None:
    """A text (NULL stays NULL) as SQLite's index is given it since step m049 (decision 0174):
    :func:`spelled_text` of its :func:`~.width_forms.fold_width` (SQLite's
    ``recuerdo_unmarked_words``)."""
    return None if text is None else spelled_text(fold_width(text))


def indexed_text(text: str) -> str:
    """``text`` as a word index was given it from step m045 (decision 0147) to m049: runs of
    Han, Kana and Hangul spelled, symbols as their words; Thai and the others as they are."""
    if text.isascii() or not _spelled_somewhere(text, before_0174=True):
        return text
    return _SPELLED_0147.sub(_spelled_0147, text)


def indexed_or_none(text: str | None) -> str | None:
    """:func:`indexed_text` of a text that may be NULL (SQLite's ``recuerdo_words``)."""
    return None if text is None else indexed_text(text)


def folded_text(text: str) -> str:
    """``text`` as a word index was given it from step m048 (decision 0161) to m049:
    :func:`indexed_text` of its :func:`~.width_forms.fold_width`."""
    return indexed_text(fold_width(text))


def folded_or_none(text: str | None) -> str | None:
    """:func:`folded_text` of a text that may be NULL (SQLite's ``recuerdo_folded_words``)."""
    return None if text is None else folded_text(text)


def runs_apart(text: str) -> tuple[set[str], str]:
    """The pairs of letters of each run of unspaced script in ``text``, as the index holds
    them (width forms folded, Thai and the others without their marks): the words a search for
    any part of a run asks the index for (:func:`query_forms`); a run of one letter has none.
    And the text beside the runs, width-folded, a space for each run ("" where ``text`` holds
    no run): a query reads the letters of other scripts against a run as a word of their own
    ("iPhone" in "我的iPhone手机", index/words.py)."""
    if text.isascii():
        return set(), ""
    folded = fold_width(text)
    if not _spelled_somewhere(folded):
        return set(), ""
    runs = _RUN.findall(folded)
    if not runs:
        return set(), ""
    return {pair for run in runs for pair in _pairs(_letters(run))}, _RUN.sub(" ", folded)


def run_pairs(text: str) -> set[str]:
    """The pairs of :func:`runs_apart`."""
    return runs_apart(text)[0]


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
    run = _letters(word)
    return list(dict.fromkeys(_pairs(run)))[:MAX_PAIRS] if len(run) > 1 else [run]
