"""The guard for a text a verb joins from a stored note and a caller's fragment (decision 0141).

The whole text is redacted as the guard would redact it sent alone: a credential only the
whole forms (a key's body lines that an appended END marker completes, a value after a
``password =`` the note ended with) is caught there. That pass alone let through what the
fragment held when the join took away the boundary a rule needs: ``find_replace`` gluing a
``ghp_`` token to the word before it, or a netrc ``password x`` line given words after it. So
what the guard finds in the fragment as sent is redacted in the result too, wherever its
matched text still stands: a credential the caller sent never reaches the disk.
"""

from __future__ import annotations

import re
from itertools import groupby
from typing import NamedTuple

# The guard's own rules, run as ``redact_whole`` runs them, each change recorded (kept out of
# ``secrets``, which is at its size limit).
from .secrets import (
    _BODY_RUN,
    _MARKER,
    _RULES,
    _TRIGGERS,
    _UNTRIGGERED,
    Redaction,
    SecretKind,
    _apply,
    _folded,
    _Rule,
    redact_whole,
)

_CUT = "secret(PRIVATE_KEY)"


class Found(NamedTuple):
    matched: str  # what a rule matched (it may hold the marker an earlier rule put in)...
    replaced: str  # ...and what took its place
    kind: SecretKind
    rule: int  # the rule's turn: those of a later turn may hold an earlier one's marker


def found_whole(text: str, marked: bool = False) -> list[Found]:
    """Each change :func:`redact_whole` makes to ``text``, in the order it makes them; with
    ``marked`` (another argument of the call held a key marker), its body lines cut too, as
    the guard cuts them in every string of such a call."""
    found: list[Found] = []

    def recording(rule: _Rule) -> _Rule:
        turn = _RULES.index(rule)

        def replace(match: re.Match[str]) -> str:
            replaced = rule.replace(match)
            if replaced != match.group():  # a value that reads as code is kept as it was
                found.append(Found(match.group(), replaced, rule.kind, turn))
            return replaced

        return rule._replace(replace=replace)

    folded = _folded(text)
    rules = _RULES if _TRIGGERS.search(folded) is not None else _UNTRIGGERED
    cleaned = _apply(text, tuple(map(recording, rules)), folded).text
    if marked or _MARKER.search(text) is not None:  # as the guard cuts a key's body lines
        last = len(_RULES)
        found += [
            Found(run.group(), _CUT, "PRIVATE_KEY", last) for run in _BODY_RUN.finditer(cleaned)
        ]
    return found


# Up to this many credentials in a fragment, each is looked for in the result in turn (a
# search in C); past it, one walk of the result per rule's turn finds them all: looked for in
# turn, 20,000 of them in a 430 KB edit took 6.8 s (the whole pass 0.16 s).
_FEW = 32


def _replaced_in_turn(text: str, found: list[Found], kinds: list[SecretKind]) -> str:
    for each in found:
        if each.matched in text:
            text = text.replace(each.matched, each.replaced)
            kinds += [each.kind] if each.kind not in kinds else []
    return text


def _replaced_in_one_walk(text: str, found: list[Found], kinds: list[SecretKind]) -> str:
    """Every ``found`` replaced in one walk of ``text``: where the first characters of some
    stand, each length they come in is looked up, the longest first (not each one in turn:
    thousands may share their first characters)."""
    width = min(16, *(len(each.matched) for each in found))
    exact = {each.matched: each for each in reversed(found)}  # the first of equal ones
    lengths: dict[str, list[int]] = {}
    for matched in exact:
        lengths.setdefault(matched[:width], []).append(len(matched))
    for anchored in lengths.values():
        anchored[:] = sorted(set(anchored), reverse=True)
    kept: list[str] = []
    at = position = 0
    last = len(text) - width
    while position <= last:
        hit = None
        for length in lengths.get(text[position : position + width], ()):
            if (hit := exact.get(text[position : position + length])) is not None:
                break
        if hit is None:
            position += 1
            continue
        kept += [text[at:position], hit.replaced]
        kinds += [hit.kind] if hit.kind not in kinds else []
        position = at = position + len(hit.matched)
    return "".join([*kept, text[at:]])


def redact_joined(whole: str, fragment: str, marked: bool = False) -> Redaction:
    """``whole`` redacted, then each credential of ``fragment`` alone that is still in it.
    ``marked``: another argument of the call held a key marker (a title, a summary): the
    guard, given the fragment with it, cut the key's body lines in the fragment."""
    redaction = redact_whole(whole)
    if not fragment or (fragment == whole and not marked):
        return redaction
    text, kinds = redaction.text, list(redaction.found)
    found = [each for each in dict.fromkeys(found_whole(fragment, marked)) if each.matched]
    if len(found) <= _FEW:
        # In order: a later match may hold an earlier one's marker (the fragment's own pass
        # made it), which the replacement before it has just put in ``text``.
        return Redaction(_replaced_in_turn(text, found, kinds), tuple(kinds))
    for _, turn in groupby(found, key=lambda each: each.rule):
        text = _replaced_in_one_walk(text, list(turn), kinds)
    return Redaction(text, tuple(kinds))


def marks_a_key(*arguments: object) -> bool:
    """Whether any of a call's other arguments, as the guard passed them, held a key marker:
    it became ``secret(PRIVATE_KEY)`` there (so did three body lines, cut all the same), and
    the key's body lines sent in the fragment are cut (a key split between an edit's title and
    its content, or a summary and its observation, was stored with its body in clear)."""
    return any(isinstance(text, str) and _CUT in text for text in arguments)
