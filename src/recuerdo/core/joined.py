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

from itertools import groupby
from typing import NamedTuple

# The guard's rounds, run as ``redact_whole`` runs them, each change recorded.
from .secrets import (
    _MARKER,
    Redaction,
    SecretKind,
    marker,
    redact_whole,
    rounds,
)

_CUT = "secret(PRIVATE_KEY)"


class Found(NamedTuple):
    matched: str  # a cut, with what its rules' matches keep around it (it may hold a marker
    replaced: str  # an earlier round put in)... and what takes its place
    kinds: tuple[SecretKind, ...]
    round: int  # a later round's matched text may hold an earlier round's marker


def found_whole(text: str, marked: bool = False) -> list[Found]:
    """Each change :func:`redact_whole` makes to ``text``, in order; with ``marked`` (another
    argument of the call held a key marker), its body lines cut too, as the guard cuts them in
    every string of such a call. The matched texts of a round do not overlap: what a match
    keeps around its cut stops where the cut before or after it begins."""
    changes: list[Found] = []
    pieces = marked or _MARKER.search(text) is not None
    for turn, (before, found, _, _) in enumerate(rounds(text, True, pieces)):
        for n, (start, cut, end, stop, kinds) in enumerate(found):
            start = max(start, found[n - 1][2] if n else 0)
            stop = min(stop, found[n + 1][1] if n + 1 < len(found) else len(before))
            replaced = before[start:cut] + marker(kinds) + before[end:stop]
            changes.append(Found(before[start:stop], replaced, kinds, turn))
    return changes


# Up to this many credentials in a fragment, each is looked for in the result in turn (a
# search in C); past it, one walk of the result a round finds them all (a round's cuts
# do not overlap): looked for in turn, 20,000 of them in a 430 KB edit took 6.8 s
# (the whole pass 0.16 s).
_FEW = 32


def _replaced_in_turn(text: str, found: list[Found], kinds: list[SecretKind]) -> str:
    # Round by round (a later one may hold an earlier one's marker), the longest first: a
    # shorter one may stand inside it.
    for each in sorted(found, key=lambda each: (each.round, -len(each.matched))):
        if each.matched in text:
            text = text.replace(each.matched, each.replaced)
            kinds += [kind for kind in each.kinds if kind not in kinds]
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
        kinds += [kind for kind in hit.kinds if kind not in kinds]
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
        return Redaction(_replaced_in_turn(text, found, kinds), tuple(kinds))
    for _, turn in groupby(found, key=lambda each: each.round):
        text = _replaced_in_one_walk(text, list(turn), kinds)
    return Redaction(text, tuple(kinds))


def marks_a_key(*arguments: object) -> bool:
    """Whether any of a call's other arguments, as the guard passed them, held a key marker:
    it became ``secret(PRIVATE_KEY)`` there (so did three body lines, cut all the same), and
    the key's body lines sent in the fragment are cut (a key split between an edit's title and
    its content, or a summary and its observation, was stored with its body in clear)."""
    return any(isinstance(text, str) and _CUT in text for text in arguments)
