"""Fullwidth and halfwidth forms read as the ordinary characters they stand for
(``docs/decisions/0161-width-forms-are-one-word.md``).

CJK text often carries Latin letters and digits in their fullwidth forms ("ＡＢＣ１２３"), and
older systems write Katakana in halfwidth forms ("ｶﾀｶﾅ"). Neither word index reads them as the
ordinary letters: "abc" did not find "ＡＢＣ", "カタカナ" did not find "ｶﾀｶﾅ". Both the
indexed words and the asked ones are read through :func:`fold_width` first.

The fold is NFKC narrowed to the characters whose compatibility mapping is a width
(``<wide>`` or ``<narrow>``: U+FF01-U+FFEE), with a halfwidth voiced sound mark composed with
the Kana before it ("ｶﾞ" is "ガ", as NFKC gives it). Whole NFKC would also turn "™" into
"TM" joined to the word before it ("Apple™" no longer found by "apple"), "5㎏" into the one
word "5kg", "½" into "1⁄2" and "nº" into "no". The ideographic space (U+3000, also
``<wide>``) is left alone: both indexes already cut words at it, and mapping it would
rewrite the words of nearly every Japanese text for nothing.

The mapping is read from Python's Unicode tables at import: the forms of this block were all
assigned by Unicode 3.2, and Unicode never changes a character's decomposition once given, so
every Python reads the same 225 characters.
"""

from __future__ import annotations

import re
import unicodedata

_BLOCK = range(0xFF01, 0xFFEF)
WIDTH_FORMS = {
    code: chr(int(unicodedata.decomposition(chr(code)).split()[1], 16))
    for code in _BLOCK
    if unicodedata.decomposition(chr(code)).startswith(("<wide>", "<narrow>"))
}
"""Each width form's code point and the character it stands for."""
_MARKS = {"\uff9e": "\u3099", "\uff9f": "\u309a"}
"""The halfwidth voiced and semi-voiced sound marks, and the combining marks they stand for."""
_TABLE = {code: char for code, char in WIDTH_FORMS.items() if chr(code) not in _MARKS}
_ANY = re.compile("[\uff01-\uffee]")
_MARKED = re.compile("(.?)([\uff9e\uff9f])")


def _composed(found: re.Match[str]) -> str:
    base = found.group(1).translate(_TABLE)
    composed = unicodedata.normalize("NFC", base + _MARKS[found.group(2)])
    # A mark that composes with nothing stays as written: as a combining mark it would join
    # the letter before it into one word on PostgreSQL ("0\u3099"), not on SQLite.
    return composed if len(composed) == len(base) else base + found.group(2)


def fold_width(text: str) -> str:
    """``text`` with each fullwidth or halfwidth form as the character it stands for (a
    halfwidth sound mark composed with the Kana before it, or left as written where it
    composes with none); other text returned as it is."""
    if text.isascii() or _ANY.search(text) is None:
        return text
    if "\uff9e" in text or "\uff9f" in text:
        text = _MARKED.sub(_composed, text)
    return text.translate(_TABLE)


def has_width_forms(text: str | None) -> bool:
    """Whether :func:`fold_width` may change ``text`` (it holds a character of the block)."""
    return text is not None and not text.isascii() and _ANY.search(text) is not None
