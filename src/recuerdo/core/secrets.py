"""The secret guard: credentials never reach the disk in clear.

Every write verb's string arguments pass through :func:`redact_call` (the ``@verb`` decorator
applies it, so no family can forget it); text that enters the store by another road (a parsed
document, a retrieval query kept in the audit) passes through :func:`redact`. A credential is
replaced by a marker naming its kind (``secret(API)``, ``secret(TOKEN)``,
``secret(PRIVATE_KEY)``, ``secret(PASSWORD)``), so the memory still says *that* a key was there
without keeping it. Redaction is idempotent: redacting redacted text changes nothing.

What counts as a credential, and what must stay (``docs/decisions/0009-secret-guard.md``):
provider key formats; ``Bearer``/``Basic`` headers; a password inside a URL; an assignment whose
name ends in a secret word (``X_PASSWORD=``, ``aws_secret_access_key =``, ``AccountKey=``)
unless its value is code (``form.get("password")``, ``self.token``, ``$VAR``); an assignment to
any ``*_KEY`` name whose value looks random (a UUID, a long mix of letters and digits), so
``topic_key = auth/design`` stays; netrc lines; private key blocks, also cut into pieces: a
block's body lines are redacted wherever its markers appear in the same call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from typing import Any, NamedTuple, get_args

from .secret_assignments import (
    CHAIN_LINK,
    LONGEST_NAME,
    MARKER_ASSIGNMENT,
    PEM_MARK,
    chained,
    greedy,
    named,
    run_end,
)
from .secret_rules import (
    BODY_RUN,
    RULES,
    TRIGGERS,
    UNTRIGGERED,
    Rule,
    case_folded,
)
from .secret_rules import (
    SecretKind as SecretKind,  # what every caller names the kinds by
)


class Redaction(NamedTuple):
    text: str
    found: tuple[SecretKind, ...]  # the kinds of secret replaced, in order of the rules


def redact(text: str) -> Redaction:
    """Replace every credential in ``text`` with a ``secret(KIND)`` marker."""
    return _redact(text)


def _redact(text: str, pieces: bool = False) -> Redaction:
    """With ``pieces``, a key's body lines are cut wherever they stand too."""
    return _apply(text, True, pieces)


def apply_rules(text: str) -> Redaction:
    """Every rule in its plain form, with no trigger or cue looked for (what :func:`redact`
    must always agree with)."""
    return _apply(text, False)


Cut = tuple[int, int, int, int, tuple[SecretKind, ...]]
"""A run of the text that gives way to markers, where the secret parts of rules' matches
overlap: where its first match starts (what the matches keep before the cut), where the cut
starts and ends, where its last match ends, and its kinds (a marker each, in the order their
parts start). Plain tuples, the marker of one kind looked up: a named tuple and a marker
joined per cut cost a fifth of the guard on text holding thousands of credentials."""

_KINDS: tuple[SecretKind, ...] = (*(rule.kind for rule in RULES), "PRIVATE_KEY")  # by turn
_CUT_BODY = len(RULES)  # a key's body lines, cut as a last rule's
_ALONE_KINDS = tuple((kind,) for kind in _KINDS)


def marker(kinds: tuple[SecretKind, ...]) -> str:
    return "".join(f"secret({kind})" for kind in kinds)


_MARKERS: dict[tuple[SecretKind, ...], str] = {kinds: marker(kinds) for kinds in _ALONE_KINDS}


def cuts(
    text: str, rules: tuple[Rule, ...], folded: str | None, pieces: bool = False
) -> tuple[list[Cut], tuple[SecretKind, ...]]:
    """The cuts of ``text`` in order, and the kinds they replace in the order of the rules;
    with ``folded`` (``text`` case-folded), only the rules whose cue is found, each in its
    quick form; with ``pieces``, a key's body lines wherever they stand.

    Every rule reads the text as sent (decision 0157). Run in turn, one rule's marker cut into
    the next one's match: a value that ran into a key's END marker kept its start, followed by
    ``secret(`` and so read as code."""
    parts: list[_Part] = []
    for rule in rules:
        pattern = rule.pattern
        if folded is not None:
            if rule.cue.search(folded if rule.folds else text) is None:
                continue
            pattern = rule.quick or pattern
        turn, secret = RULES.index(rule), rule.secret
        matches = pattern.finditer(text)
        if rule.chains and isinstance(pattern, re.Pattern):
            matches = chained(pattern, text)  # a name may end another one's value
        for match in matches:
            if (part := secret(match)) is not None:
                parts.append((part[0], -part[1], turn, *match.span()))
    if pieces:
        runs = BODY_RUN.finditer(text)
        parts += [(run.start(), -run.end(), _CUT_BODY, *run.span()) for run in runs]
    return _united(parts)


_Part = tuple[int, int, int, int, int]
"""(cut, -end, turn, start, stop): sorted as they are, the longest first at a position."""


def _united(parts: list[_Part]) -> tuple[list[Cut], tuple[SecretKind, ...]]:
    """Parts that overlap make one cut, with a marker for each kind among them that reaches
    past those before it; a part inside another (a provider's key as a password's whole
    value) adds none."""
    if not parts:
        return [], ()
    parts.sort()
    found: list[Cut] = []
    turns: set[int] = set()
    start = cut = end = stop = -1
    kinds: tuple[SecretKind, ...] = ()
    for at, to, turn, begins, ends in parts:
        if at >= end:  # apart from the cut before (touching is apart, as when run in turn)
            if kinds:
                found.append((start, cut, end, stop, kinds))
            start, cut, end, stop, kinds = begins, at, -to, ends, _ALONE_KINDS[turn]
            turns.add(turn)
            continue
        start, stop = min(start, begins), max(stop, ends)
        if -to > end:
            end = -to
            turns.add(turn)
            kinds += () if _KINDS[turn] in kinds else _ALONE_KINDS[turn]
    found.append((start, cut, end, stop, kinds))
    return found, tuple(dict.fromkeys(_KINDS[turn] for turn in sorted(turns)))


class Round(NamedTuple):
    before: str
    cuts: list[Cut]
    kinds: tuple[SecretKind, ...]
    after: str


# A marker can make a match that the text as sent did not hold, as the rules in turn did: an
# END marker's dashes glued to a provider key hid the boundary the key's rule needs, and the
# marker that takes their place gives it one. Such a match starts where a marker ends (a
# marker holds no name, key or body character, and no rule's match runs past its "("), so the
# rounds after the first try the rules there only, where a name character follows, and stop
# when one finds nothing. A whole second round doubled the guard's cost on text holding
# credentials.
_ROUNDS = 4
# The rules whose match starts with a name (an assignment's) are tried at a marker's end only
# where a run of name characters ending in a secret name and a sign follow, each in a form
# that reads the name greedily: a long run after a marker made each read it once per secret
# word (1 MB of "AKIA" and "password=x": 1.5 s, 3 s in a call holding a key marker, the
# review of 0157).
_AT_A_MARKER = tuple(
    (turn, *greedy(pattern), rule.secret)
    if named(pattern := rule.pattern)
    else (turn, pattern, None, rule.secret)
    for turn, rule in enumerate(RULES)
    if isinstance(rule.pattern, re.Pattern)
)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def rounds(text: str, cued: bool, pieces: bool = False) -> Iterator[Round]:
    """The rounds that change ``text``, each on what the one before left; ``cued``: only the
    rules whose trigger and cue are found, each in its quick form."""
    folded = case_folded(text) if cued else None
    if folded is not None and TRIGGERS.search(folded) is None:
        found, kinds = cuts(text, UNTRIGGERED, folded, pieces)
    else:
        found, kinds = cuts(text, RULES, folded, pieces)
    for _ in range(_ROUNDS):
        if not found:
            return
        kept: list[str] = []
        ends: list[int] = []
        lasts: list[int] = []  # where each run's last marker starts
        at = length = 0
        for _, cut, end, _, of in found:
            mark = _MARKERS.get(of) or marker(of)
            kept += [text[at:cut], mark]
            length += cut - at + len(mark)
            ends.append(length)
            lasts.append(length - len(_MARKERS[of[-1:]]))
            at = end
        after = "".join([*kept, text[at:]])
        yield Round(text, found, kinds, after)
        text = after
        found, kinds = _at_markers(text, ends, lasts)


# A marker can stand where a name stood: ``password = hunter1 = hunter2`` gave
# ``password = secret(PASSWORD) = hunter2`` (decision 0171), so the rule of a value given to a
# marker is also tried at each new run's last marker.
_GIVEN_TO_A_MARKER = next(
    (turn, rule.secret) for turn, rule in enumerate(RULES) if rule.pattern is MARKER_ASSIGNMENT
)


def _at_markers(
    text: str, ends: list[int], lasts: list[int]
) -> tuple[list[Cut], tuple[SecretKind, ...]]:
    """The cuts of the matches that start where a marker ends, or at a marker given a
    value."""
    parts: list[_Part] = []
    turn, secret = _GIVEN_TO_A_MARKER
    for at in lasts:
        match = MARKER_ASSIGNMENT.match(text, at)
        if match is None or (part := secret(match)) is None:
            continue
        parts.append((part[0], -part[1], turn, *match.span()))
        # The links after it (``= hunter3 = hunter4``), each a value given to the one before,
        # give way to one marker: a round took one link each, and a text that held more was
        # changed again by a second redaction.
        first = link = CHAIN_LINK.match(text, match.end())
        cut = end = stop = -1
        while link is not None and (value := secret(link)) is not None:
            cut, end = (value[0] if cut < 0 else cut), value[1]
            stop = link.end()
            link = CHAIN_LINK.match(text, stop)
        if first is not None and cut >= 0:
            parts.append((cut, -end, turn, first.start(), stop))
    for at in ends:
        if at < len(text) and text[at] in _NAME_CHARS:
            run = run_end(text, at)
            for turn, pattern, name, secret in _AT_A_MARKER:
                if name is not None and (
                    run < 0 or name.search(text, max(at, run - LONGEST_NAME), run) is None
                ):
                    continue
                match = pattern.match(text, at)
                if match is not None and (part := secret(match)) is not None:
                    parts.append((part[0], -part[1], turn, *match.span()))
    return _united(parts)


def _apply(text: str, cued: bool, pieces: bool = False) -> Redaction:
    kinds: dict[SecretKind, None] = {}
    for each in rounds(text, cued, pieces):
        kinds.update(dict.fromkeys(each.kinds))
        text = each.after
    return Redaction(text, tuple(kinds))


def redact_whole(text: str) -> Redaction:
    """What the guard stores for ``text`` sent alone (:func:`redact_call` of one string): with
    a key marker in it, its body lines are cut wherever they stand. A text a verb builds from
    stored text and a caller's fragment (an edit's note after it) passes here whole, the
    fragment not redacted alone first (decision 0141)."""
    if _MARKER.search(text) is None:
        return redact(text)
    cut = redact_piece(text)
    return Redaction(cut.text, tuple(kind for kind in get_args(SecretKind) if kind in cut.found))


def redact_piece(text: str) -> Redaction:
    """What the guard stores for ``text`` when a key marker stands anywhere in its call: every
    rule and every run of key body lines read in the text as sent, their union cut (decision
    0157). A line that is a body line as sent is cut whole, even when a rule reads an
    assignment in it (``password=`` and 43 base64 characters: decision 0178)."""
    return _redact(text, pieces=True)


def redact_text(text: str) -> str:
    return redact(text).text


_REDACTION = re.compile(rf"secret\((?:{'|'.join(get_args(SecretKind))})\)")


def holds_redaction(text: str) -> bool:
    """Whether ``text`` holds a marker that took a credential's place: two texts that held
    different credentials may read the same after redaction."""
    return _REDACTION.search(text) is not None


def least_sent_bytes(text: str) -> int:
    """The fewest UTF-8 bytes ``text``, as the guard stored it, can have been sent as: each of
    its markers took the place of at least one byte (a marker is longer or shorter than what it
    replaced, so the text as sent is not known)."""
    markers = sum(len(found.group().encode()) - 1 for found in _REDACTION.finditer(text))
    return len(text.encode()) - markers


def holds_secret(text: str) -> bool:
    """Whether ``text`` holds anything the guard would redact."""
    return bool(redact(text).found)


_MARKER = re.compile(PEM_MARK)


def redact_call(
    arguments: Mapping[str, Any], found: dict[str, list[str]] | None = None
) -> dict[str, Any]:
    """Every string in a call's arguments (recursively, keys too) with credentials redacted.

    A private key can arrive in pieces (one message of a batch holds the BEGIN line, the next
    the body, the last the END line): when any string of the call holds a key marker, the body
    lines in every string of the call are redacted too.

    With ``found``, each argument that had something redacted is put in it, with the kinds of
    secret replaced (in the order they were first met): a write reports what it did not store
    as given (a private key's BEGIN marker takes the rest of its text, decision 0080)."""
    marked = False
    clean_short: set[str] = set()
    kinds: list[str] = []
    read: dict[int, list[Any]] = {}

    def look(text: str) -> str:
        nonlocal marked
        marked = marked or _MARKER.search(text) is not None
        return text

    def clean(text: str) -> str:
        # A string found clean before held no key marker (those kept are from calls that held
        # none; one of this call's that held one has made it walk again), so it is neither
        # looked at nor redacted again: a batch repeats its keys, tags and categories.
        if type(text) is str and (text in _CLEAN_SHORT or text in clean_short):
            return text
        return _redacted(look(text), clean_short, kinds)

    def clean_pieces(text: str) -> str:
        return _redacted_in_pieces(text, kinds)

    def walk(clean: Callable[[str], str]) -> dict[str, Any]:
        cleaned: dict[str, Any] = {}
        for name, value in arguments.items():
            cleaned[name] = _map(value, clean, read)
            if kinds:
                if found is not None:
                    found[name] = list(kinds)
                kinds.clear()
        return cleaned

    # One walk redacts each string and looks for a marker (a walk to look, then one to clean,
    # cost a bulk load 5 us an entry). A call holding a marker is walked again from its
    # arguments, each string redacted and its body lines cut at once, as keys that become
    # equal must be merged in one step.
    cleaned = walk(clean)
    if not marked:
        if len(_CLEAN_SHORT) + len(clean_short) > _CLEAN_SHORT_CAP:
            _CLEAN_SHORT.clear()
        _CLEAN_SHORT.update(islice(clean_short, _CLEAN_SHORT_CAP))
        return cleaned
    if found is not None:
        found.clear()
    return walk(clean_pieces)


_CLEAN_SHORT: set[str] = set()
"""Short strings :func:`redact` leaves as they are, seen in calls that held no key marker (a
key's body line is cut only in a call that holds one: such calls add nothing here, so no
credential is kept). Categories, tags, topic keys and the keys of objects come back in every
call: redacting them again was a third of the guard's cost in a bulk load of entries (8 of
23 us an entry)."""
_SHORT = 64
_CLEAN_SHORT_CAP = 4096


def _redacted(
    text: str, clean_short: set[str] | None = None, kinds: list[str] | None = None
) -> str:
    """``text`` redacted; a short string found clean is put in ``clean_short`` (when given),
    the kinds of secret replaced in ``kinds`` (when given, each once). Only plain ``str`` is
    kept: a subclass may compare and hash as it likes. The strings known clean never get here
    (``redact_call``'s ``clean`` passes them over)."""
    plain = type(text) is str
    redaction = redact(text)
    if clean_short is not None and plain and not redaction.found and len(text) <= _SHORT:
        clean_short.add(text)
    if kinds is not None and redaction.found:  # most texts hold none: no generator for them
        kinds.extend(kind for kind in redaction.found if kind not in kinds)
    return redaction.text


def _redacted_in_pieces(text: str, kinds: list[str] | None = None) -> str:
    redaction = redact_piece(text)
    if kinds is not None:
        kinds.extend(kind for kind in redaction.found if kind not in kinds)
    return redaction.text


def _map(value: Any, clean: Callable[[str], str], read: dict[int, list[Any]]) -> Any:
    """``value`` with ``clean`` applied to every string of it (keys too). Sets stay sets; any
    other iterable (a deque, a generator, a view) becomes a list: a verb reads it as a
    sequence, and one left as it was reached the disk unredacted (a tag given in a set or a
    deque was stored in clear, found by the review of decision 0082). Its items are kept in
    ``read`` (by the iterable's id, alive in the call's arguments), so a second walk of the
    call finds them again when the iterable can be read only once."""
    if isinstance(value, str):
        return clean(value)
    # A plain dict or list first, its plain strings cleaned without a call here: the ABC's
    # isinstance checks and a call a string cost a bulk load of entries more than the copy.
    if type(value) is dict:
        return {
            (clean(key) if type(key) is str else _map(key, clean, read)): (
                clean(item) if type(item) is str else _map(item, clean, read)
            )
            for key, item in value.items()
        }
    if type(value) is list:
        return [clean(item) if type(item) is str else _map(item, clean, read) for item in value]
    if isinstance(value, Mapping):
        return {_map(key, clean, read): _map(item, clean, read) for key, item in value.items()}
    if isinstance(value, list):
        return [_map(item, clean, read) for item in value]
    if isinstance(value, tuple):
        return tuple(_map(item, clean, read) for item in value)
    if isinstance(value, frozenset):
        return frozenset(_map(item, clean, read) for item in value)
    if isinstance(value, set):
        return {_map(item, clean, read) for item in value}
    if isinstance(value, Iterable) and not isinstance(value, bytes | bytearray | memoryview):
        items = read.get(id(value))
        if items is None:
            items = read[id(value)] = list(value)
        return [_map(item, clean, read) for item in items]
    return value
