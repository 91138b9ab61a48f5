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
from typing import Any, Literal, NamedTuple, Protocol, get_args

from .secret_assignments import (
    BLOCK_SCALAR,
    BLOCK_SIGN,
    KEY_ASSIGNMENT,
    NETRC,
    SEPARATOR,
    STRONG_ASSIGNMENT,
    STRONG_NAMES,
    quick_assignment,
    strong_secret,
    weak_secret,
)

SecretKind = Literal["API", "TOKEN", "PASSWORD", "PRIVATE_KEY"]
"""What ``secret(KIND)`` says was replaced."""


class _Matcher(Protocol):
    """What a rule needs of its pattern: a compiled one, or :class:`_KeyBlocks`."""

    @property
    def flags(self) -> int: ...

    def finditer(self, string: str) -> Iterator[re.Match[str]]: ...


Secret = Callable[[re.Match[str]], "tuple[int, int] | None"]
"""The part of a rule's match that gives way to its marker (what it keeps of the match around
it is the name, a header, a URL's user and host), or None: the match is kept (code)."""


class _Rule(NamedTuple):
    kind: SecretKind
    pattern: _Matcher
    secret: Secret
    words: tuple[str, ...]  # every text ``pattern`` can change holds one of them (regexes)...
    cue: re.Pattern[str]  # ...and this search finds it (see ``_rule``)
    folds: bool  # the pattern ignores case: the cue is looked for in the text case-folded
    quick: re.Pattern[str] | None  # the same matches as ``pattern``, found sooner


def _rule(
    kind: SecretKind,
    pattern: _Matcher,
    secret: Secret,
    *words: str,
    then: str = "",
    quick: re.Pattern[str] | None = None,
) -> _Rule:
    """A rule whose every change holds one of ``words`` followed by ``then``. For a pattern
    that ignores case, the cue is that, lower-case, looked for in the text case-folded
    (:func:`_folded`): a search that ignores case tries every branch at every character,
    six times slower."""
    folds = bool(pattern.flags & re.IGNORECASE)
    lowered = tuple(word.lower() for word in words) if folds else words
    return _Rule(kind, pattern, secret, lowered, _cue(*lowered, then=then), folds, quick)


def _cue(*fragments: str, then: str = "", flags: int = 0) -> re.Pattern[str]:
    """A search for any of ``fragments`` (regular expressions) followed by ``then``, the
    fragments grouped by their first characters: the matcher then tries one branch at each
    position instead of every fragment in turn (three to seven times faster on prose)."""
    tree: dict[str, Any] = {}
    for fragment in fragments:
        node = tree
        for atom in re.findall(r"\\.|\[[^\]]*\]|.", fragment):
            node = node.setdefault(atom, {})
        node[""] = {}

    def branches(node: dict[str, Any]) -> str:
        if not node or ("" in node and not then):  # a whole fragment: the rest adds nothing
            return ""
        alternatives = [atom + branches(rest) for atom, rest in node.items()]
        return alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"

    return re.compile(f"(?:{branches(tree)}){then}", flags)


_KEY_MARK = r" (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"  # after "-----BEGIN" or "-----END"
_PEM_MARK = rf"-----(?:BEGIN|END){_KEY_MARK}"
# A block without its END marker (cut off, or the marker named in prose) takes the rest of the
# text. Versions that stopped at the end of its paragraph (to keep a note's later sections)
# leaked key bodies in shapes found by three reviews: a body after a blank line with a prefix
# ("% ", "> > ", "| "), zero-width characters or base64url; no rule of what a body looks like
# held them all (decision 0080).
_BEGIN = re.compile(rf"-----BEGIN{_KEY_MARK}")
_END = re.compile(rf"-----END{_KEY_MARK}")
_CLOSED = re.compile(rf"{_BEGIN.pattern}.*?{_END.pattern}", re.DOTALL)
_OPEN = re.compile(rf"{_BEGIN.pattern}.*\Z", re.DOTALL)


class _OnePass:
    """A rule's pattern whose matches a method finds in one pass, where a regular expression's
    search read the same run again from each of its positions; ``finditer`` and ``sub`` as a
    compiled pattern's."""

    flags = 0

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """The matches, in order, none overlapping."""
        raise NotImplementedError

    def sub(self, replace: Callable[[re.Match[str]], str], text: str) -> str:
        kept: list[str] = []
        at = 0
        for found in self.finditer(text):
            kept += [text[at : found.start()], replace(found)]
            at = found.end()
        return "".join([*kept, text[at:]]) if kept else text


class _KeyBlocks(_OnePass):
    """A block is its BEGIN marker to the next END marker, or, when no END marker follows, the
    rest of the text. As one regular expression, a form that stopped earlier made each BEGIN
    marker read the whole rest of the text for an END marker (1.3 s for 100 KB of markers, the
    third review): the text's last END marker, found first, settles it for all."""

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        last_end = max((found.start() for found in _END.finditer(text)), default=-1)
        at = 0
        # Searched again from each block's end: a marker may begin inside the dashes that end
        # the block (``-----END PRIVATE KEY-----BEGIN ...``), where an iteration begun before
        # it would not look (the review's: such a key's body was left in clear).
        while (begin := _BEGIN.search(text, at)) is not None:
            block = _CLOSED.match(text, begin.start()) if begin.start() < last_end else None
            block = block or _OPEN.match(text, begin.start())
            assert block is not None  # the open form matches every BEGIN marker
            yield block
            at = block.end()


_PRIVATE_KEY = _KeyBlocks()
# The tail of a block whose beginning went elsewhere: body lines (16 base64 characters or more
# each), the last one of any length, then the END marker. Read backwards from each END marker:
# as a forward search, every position of a long base64 run started a match that read to the
# run's end (the third review: 100 KB of base64 lines and an END marker of another kind took
# 180 s, a 219 KB CA bundle 6 s).
_TAIL_BACKWARDS = re.compile(r"\n?\r?[ \t]*+[A-Za-z0-9+/=]*+(?:\n\r?[ \t]*+[A-Za-z0-9+/=]{16,}+)*+")
_SPAN = re.compile(r".+", re.DOTALL)


class _KeyTails(_OnePass):
    """Each END marker's body found backwards, never past the previous END marker."""

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        at = 0
        for end in _END.finditer(text):
            body = _TAIL_BACKWARDS.match(text[at : end.start()][::-1])
            tail = _SPAN.match(text, end.start() - (body.end() if body else 0), end.end())
            assert tail is not None
            yield tail
            at = end.end()


_PRIVATE_KEY_TAIL = _KeyTails()
# A key block's body line: 40 to 76 characters of base64 with both letter cases and a digit
# (a hex digest or a word never has all three). Runs of them are redacted when the call holds
# a private-key marker, or when three or more stand together.
_BODY_LINE = (
    r"(?=[A-Za-z0-9+/=]*[a-z])(?=[A-Za-z0-9+/=]*[A-Z])(?=[A-Za-z0-9+/=]*[0-9])[A-Za-z0-9+/=]{40,76}"
)
_BODY_RUN = re.compile(rf"(?m)^[ \t]*{_BODY_LINE}[ \t]*\r?$(?:\n^[ \t]*{_BODY_LINE}[ \t]*\r?$)*")
_BODY_RUN_OF_THREE = re.compile(
    rf"(?m)^[ \t]*{_BODY_LINE}[ \t]*\r?$(?:\n^[ \t]*{_BODY_LINE}[ \t]*\r?$){{2,}}"
)

# Provider key formats (prefixes and lengths as the providers publish them).
_API_KEYS = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}"  # AWS key ids
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}"  # Slack
    r"|AIza[0-9A-Za-z_-]{33,}"  # Google
    r"|(?:sk|rk|pk|whsec)_(?:live|test)_[0-9A-Za-z]{10,}"  # Stripe
    r"|hf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|npm_[A-Za-z0-9]{36}"  # npm
    r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"  # SendGrid
    r"|rcd_[A-Za-z0-9_-]{20,}"  # recuerdo's own tokens
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWT
    r")"
)

# Not a word of lower-case letters alone: "Basic authentication" and "Token authentication"
# lost their second word at every write (a review found the prose false positive); a random
# token of 12 letters or more with no capital, digit or sign is one in 50,000. The token runs
# into no marker: "Bearer token=secret(PASSWORD)" read "token=secret" as one, and redacting
# redacted text changed it (decision 0157).
_BEARER = re.compile(
    r"(\b(?:Bearer|Basic|Token)\s+)(?![a-z]+(?![A-Za-z0-9._~+/=-]))"
    r"(?:(?!secret\()[A-Za-z0-9._~+/=-]){12,}"
)

# scheme://user:password@host (also redis://:password@host).
_URL = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@?#]*:)(?!secret\()([^\s@/?#]+)(@)")
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_SCHEME_START = re.compile(r"\b[a-zA-Z]")


class _UrlPasswords(_OnePass):
    """``_URL`` found from each ``://``: its scheme starts at the first letter at a word
    boundary in the run of scheme characters before it. As a search, every word boundary of a
    long dotted or hyphenated run started a scheme that read the run to its end looking for
    ``://`` (100 KB of "a-" after "x://h ": 5.1 s, the review's)."""

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        at = 0
        while (sign := text.find("://", at)) != -1:
            run = sign
            while run > at and text[run - 1] in _SCHEME_CHARS:
                run -= 1
            # With ``pos``, ``\b`` still sees the character before it.
            start = _SCHEME_START.search(text, run, sign)
            found = None if start is None else _URL.match(text, start.start())
            if found is None:
                at = sign + 3
                continue
            yield found
            at = found.end()


_URL_PASSWORD = _UrlPasswords()


def _whole(match: re.Match[str]) -> tuple[int, int]:
    return match.span()


def _after_name(match: re.Match[str]) -> tuple[int, int]:
    """What follows the name (group 1) to the match's end."""
    return match.end(1), match.end()


# Each rule has a cue: a cheap search that finds something in every text the rule could change
# (a part its pattern always matches). Text that names a secret word in passing ("the key
# point", "a token economy") runs only the rules its words cue, not all ten: the tail of a
# private key, or an assignment to a secret name, costs 0.2 ms on 700 characters of prose,
# where each cue costs 0.5 to 12 microseconds.
_RULES = (
    _rule("PRIVATE_KEY", _PRIVATE_KEY, _whole, "PRIVATE KEY"),
    _rule("PRIVATE_KEY", _PRIVATE_KEY_TAIL, _whole, "-----END "),
    _rule("PRIVATE_KEY", _BODY_RUN_OF_THREE, _whole, r"\n"),
    _rule(
        "API",
        _API_KEYS,
        _whole,
        *("sk-", "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA", "AIza"),
        *("gh[pousr]_", "github_pat_", "glpat-", "xox[abposr]-", "xapp-", "_live_"),
        *("_test_", "hf_", "npm_", r"SG\.", "rcd_", "eyJ"),
    ),
    _rule("TOKEN", _BEARER, _after_name, "Bearer", "Basic", "Token", then=r"\s"),
    _rule("PASSWORD", _URL_PASSWORD, lambda m: m.span(2), "://"),
    # The first form keeps "login x password ", the second the line's "password " (group 3).
    _rule("PASSWORD", NETRC, lambda m: (m.end(1 if m.start(1) >= 0 else 3), m.end()), "password"),
    _rule("PASSWORD", BLOCK_SCALAR, _after_name, *STRONG_NAMES, then=BLOCK_SIGN),
    _rule(
        "PASSWORD",
        STRONG_ASSIGNMENT,
        strong_secret,
        *STRONG_NAMES,
        then=SEPARATOR,
        quick=quick_assignment(STRONG_ASSIGNMENT),
    ),
    # No quick form: the greedy name run of this one already fails fast (the quick form
    # measured 1.5 ms on 16 KiB of prose, the plain one 1.1).
    _rule("API", KEY_ASSIGNMENT, weak_secret, "key", then=SEPARATOR),
)
# The rules that need no word: a private key's body lines alone (a line break cues them).
_UNTRIGGERED = tuple(rule for rule in _RULES if rule.pattern is _BODY_RUN_OF_THREE)
# Every other rule needs one of its words, which are looked for all at once first, in the text
# case-folded ("paſſword" is a password to the rules that ignore case): text with none of them
# runs none of those rules.
_TRIGGERS = _cue(
    *sorted({w.lower() for rule in _RULES if rule not in _UNTRIGGERED for w in rule.words})
)


def _folded(text: str) -> str:
    """``text`` case-folded, after the two letters that match ``i`` when case is ignored but
    that case folding keeps apart from it (the dotless i, and the dotted capital I, which
    folds to an i and a combining dot) are made plain ``i``. Each is looked for first: a
    ``str.translate`` of 16 MiB took a second, a look for a letter that is not there 10 ms."""
    for letter in "\u0130\u0131":
        if letter in text:
            text = text.replace(letter, "i")
    return text.casefold()


class Redaction(NamedTuple):
    text: str
    found: tuple[SecretKind, ...]  # the kinds of secret replaced, in order of the rules


def redact(text: str) -> Redaction:
    """Replace every credential in ``text`` with a ``secret(KIND)`` marker."""
    return _redact(text)


def _redact(text: str, pieces: bool = False) -> Redaction:
    """With ``pieces``, a key's body lines are cut wherever they stand too."""
    folded = _folded(text)
    rules = _RULES if _TRIGGERS.search(folded) is not None else _UNTRIGGERED
    return _apply(text, rules, folded, pieces)


def apply_rules(text: str) -> Redaction:
    """Every rule in its plain form, with no trigger or cue looked for (what :func:`redact`
    must always agree with)."""
    return _apply(text, _RULES, None)


Cut = tuple[int, int, int, int, tuple[SecretKind, ...]]
"""A run of the text that gives way to markers, where the secret parts of rules' matches
overlap: where its first match starts (what the matches keep before the cut), where the cut
starts and ends, where its last match ends, and its kinds (a marker each, in the order their
parts start). Plain tuples: a named one cost a tenth of the guard on text holding thousands of
credentials."""

_KINDS: tuple[SecretKind, ...] = (*(rule.kind for rule in _RULES), "PRIVATE_KEY")  # by turn
_CUT_BODY = len(_RULES)  # a key's body lines, cut as a last rule's
_ALONE_KINDS = tuple((kind,) for kind in _KINDS)


def marker(kinds: tuple[SecretKind, ...]) -> str:
    return "".join(f"secret({kind})" for kind in kinds)


_MARKERS: dict[tuple[SecretKind, ...], str] = {kinds: marker(kinds) for kinds in _ALONE_KINDS}


def cuts(
    text: str, rules: tuple[_Rule, ...], folded: str | None, pieces: bool = False
) -> tuple[list[Cut], tuple[SecretKind, ...]]:
    """The cuts of ``text`` in order, and the kinds they replace in the order of the rules;
    with ``folded`` (``text`` case-folded), only the rules whose cue is found, each in its
    quick form; with ``pieces``, a key's body lines wherever they stand.

    Every rule reads the text as sent (decision 0157). Run in turn, one rule's marker cut into
    the next one's match: a value that ran into a key's END marker kept its start, followed by
    ``secret(`` and so read as code. Parts that overlap make one cut, with a marker for each
    kind among them that reaches past those before it; a part inside another (a provider's
    key as a password's whole value) adds none."""
    # (cut, -end, turn, start, stop): sorted as they are, the longest first at a position
    parts: list[tuple[int, int, int, int, int]] = []
    for rule in rules:
        pattern = rule.pattern
        if folded is not None:
            if rule.cue.search(folded if rule.folds else text) is None:
                continue
            pattern = rule.quick or pattern
        turn, secret = _RULES.index(rule), rule.secret
        for match in pattern.finditer(text):
            if (part := secret(match)) is not None:
                parts.append((part[0], -part[1], turn, *match.span()))
    if pieces:
        runs = _BODY_RUN.finditer(text)
        parts += [(run.start(), -run.end(), _CUT_BODY, *run.span()) for run in runs]
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


def _apply(
    text: str, rules: tuple[_Rule, ...], folded: str | None, pieces: bool = False
) -> Redaction:
    found, kinds = cuts(text, rules, folded, pieces)
    if not found:
        return Redaction(text, ())
    kept: list[str] = []
    at = 0
    for _, cut, end, _, of in found:
        kept += [text[at:cut], _MARKERS.get(of) or marker(of)]
        at = end
    return Redaction("".join([*kept, text[at:]]), kinds)


def redact_whole(text: str) -> Redaction:
    """What the guard stores for ``text`` sent alone (:func:`redact_call` of one string): with
    a key marker in it, its body lines are cut wherever they stand. A text a verb builds from
    stored text and a caller's fragment (an edit's note after it) passes here whole, the
    fragment not redacted alone first (decision 0141)."""
    if _MARKER.search(text) is None:
        return redact(text)
    cut = _redact(text, pieces=True)
    return Redaction(cut.text, tuple(kind for kind in get_args(SecretKind) if kind in cut.found))


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


_MARKER = re.compile(_PEM_MARK)


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
    looked up or kept: a subclass may compare and hash as it likes."""
    plain = type(text) is str
    if plain and text in _CLEAN_SHORT:
        return text
    redaction = redact(text)
    if clean_short is not None and plain and not redaction.found and len(text) <= _SHORT:
        clean_short.add(text)
    if kinds is not None and redaction.found:  # most texts hold none: no generator for them
        kinds.extend(kind for kind in redaction.found if kind not in kinds)
    return redaction.text


def _redacted_in_pieces(text: str, kinds: list[str] | None = None) -> str:
    redaction = _redact(text, pieces=True)
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
