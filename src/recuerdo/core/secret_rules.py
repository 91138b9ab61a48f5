"""The secret guard's rules (``core/secrets.py`` runs them): what each matches, the part of a
match its marker replaces, and the cue that lets text that cannot hold a match skip it. The
assignment rules' patterns are in ``core/secret_assignments.py``. Kept apart to keep each
module small.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, Literal, NamedTuple, Protocol

from .secret_assignments import (
    BLOCK_SCALAR,
    BLOCK_SIGN,
    KEY_ASSIGNMENT,
    KEY_MARK,
    MARKER_ASSIGNMENT,
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


class Rule(NamedTuple):
    kind: SecretKind
    pattern: _Matcher
    secret: Secret
    words: tuple[str, ...]  # every text ``pattern`` can change holds one of them (regexes)...
    cue: re.Pattern[str]  # ...and this search finds it (see ``_rule``)
    folds: bool  # the pattern ignores case: the cue is looked for in the text case-folded
    quick: re.Pattern[str] | None  # the same matches as ``pattern``, found sooner
    chains: bool  # an assignment's: its matches found by ``chained``


def _rule(
    kind: SecretKind,
    pattern: _Matcher,
    secret: Secret,
    *words: str,
    then: str = "",
    quick: re.Pattern[str] | None = None,
    chains: bool = False,
) -> Rule:
    """A rule whose every change holds one of ``words`` followed by ``then``. For a pattern
    that ignores case, the cue is that, lower-case, looked for in the text case-folded
    (:func:`case_folded`): a search that ignores case tries every branch at every character,
    six times slower."""
    folds = bool(pattern.flags & re.IGNORECASE)
    lowered = tuple(word.lower() for word in words) if folds else words
    return Rule(kind, pattern, secret, lowered, _cue(*lowered, then=then), folds, quick, chains)


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


# A block without its END marker (cut off, or the marker named in prose) takes the rest of the
# text. Versions that stopped at the end of its paragraph (to keep a note's later sections)
# leaked key bodies in shapes found by three reviews: a body after a blank line with a prefix
# ("% ", "> > ", "| "), zero-width characters or base64url; no rule of what a body looks like
# held them all (decision 0080).
_BEGIN = re.compile(rf"-----BEGIN{KEY_MARK}")
_END = re.compile(rf"-----END{KEY_MARK}")
_CLOSED = re.compile(rf"{_BEGIN.pattern}.*?{_END.pattern}", re.DOTALL)
_OPEN = re.compile(rf"{_BEGIN.pattern}.*\Z", re.DOTALL)


class _OnePass:
    """A rule's pattern whose matches a method finds in one pass, where a regular expression's
    search read the same run again from each of its positions; ``finditer`` as a compiled
    pattern's."""

    flags = 0

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """The matches, in order, none overlapping."""
        raise NotImplementedError


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
BODY_RUN = re.compile(rf"(?m)^[ \t]*{_BODY_LINE}[ \t]*\r?$(?:\n^[ \t]*{_BODY_LINE}[ \t]*\r?$)*")
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
RULES = (
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
        chains=True,
    ),
    # A marker's own name, case and all: text that spells it otherwise is not a marker.
    _rule(
        "PASSWORD",
        MARKER_ASSIGNMENT,
        strong_secret,
        r"secret\((?:API|TOKEN|PASSWORD|PRIVATE_KEY)\)",
        then=SEPARATOR,
    ),
    # No quick form: the greedy name run of this one already fails fast (the quick form
    # measured 1.5 ms on 16 KiB of prose, the plain one 1.1).
    _rule("API", KEY_ASSIGNMENT, weak_secret, "key", then=SEPARATOR, chains=True),
)
# The rules that need no word: a private key's body lines alone (a line break cues them).
UNTRIGGERED = tuple(rule for rule in RULES if rule.pattern is _BODY_RUN_OF_THREE)
# Every other rule needs one of its words, which are looked for all at once first, in the text
# case-folded ("paſſword" is a password to the rules that ignore case): text with none of them
# runs none of those rules.
TRIGGERS = _cue(
    *sorted({w.lower() for rule in RULES if rule not in UNTRIGGERED for w in rule.words})
)


def case_folded(text: str) -> str:
    """``text`` case-folded, after the two letters that match ``i`` when case is ignored but
    that case folding keeps apart from it (the dotless i, and the dotted capital I, which
    folds to an i and a combining dot) are made plain ``i``. Each is looked for first: a
    ``str.translate`` of 16 MiB took a second, a look for a letter that is not there 10 ms."""
    for letter in "\u0130\u0131":
        if letter in text:
            text = text.replace(letter, "i")
    return text.casefold()
