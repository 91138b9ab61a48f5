"""The secret guard's assignment rules: a password after ``login``/``password`` (netrc), a value
given to a name that ends in a secret word (``X_PASSWORD=``, ``aws_secret_access_key =``), a
YAML block scalar of such a name, and a random-looking value given to any ``*_KEY`` name.
``core/secrets.py`` runs them among its rules; they live here to keep each module small.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# A netrc line's password is a word after "password"; an assignment's sign with nothing after
# it is not one: "password =" alone on its line (a name whose value follows, or a heading of
# prose) became "password secret(PASSWORD)", and a value on the next line was kept in clear.
# A netrc line's value may run into a key's marker glued to it (``password Pa55!-----END
# PRIVATE KEY-----``): the rules in turn read the marker that took its place as part of the
# value, but in the text as sent its spaces ended the value short of the line's end, and the
# password was kept (the review of 0157). So the value runs through a marker to the line's
# end, or else stops where a marker starts (a BEGIN marker takes the rest of the text). A line
# ends before "\r" too: ``$`` alone left every password of a netrc file saved with CRLF in
# clear. (A line is still taken to start only after "\n": a look behind for "\r" cost a third
# of the rule.)
KEY_MARK = r" (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"  # after "-----BEGIN" or "-----END"
PEM_MARK = rf"-----(?:BEGIN|END){KEY_MARK}"
_LINE_END = r"[ \t]*+(?![^\r\n])"
NETRC = re.compile(
    r"(\blogin\s+\S+\s+password\s+)(?!secret\()(\S+)"
    rf"|(^[ \t]*password[ \t]+)(?!secret\()(?!(?:=>?|:=?){_LINE_END})"
    rf"((?:{PEM_MARK}|\S)++{_LINE_END}|\S+?(?={PEM_MARK}))",
    re.IGNORECASE | re.MULTILINE,
)

# Names that end in a secret word: whatever (non-code) value they are given is a secret.
STRONG_NAMES = (
    *("password", "passwd", "pwd", "passphrase", "secret", "token", "api[_-]?key", "apikey"),
    *("access[_-]?key", "secret[_-]?key", "private[_-]?key", "account[_-]?key"),
    *("signing[_-]?key", "encryption[_-]?key", "master[_-]?key", "client[_-]?secret"),
    "credentials?",
)
_STRONG_NAME = f"(?:{'|'.join(STRONG_NAMES)})"
_VALUE = r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s,;\"'()\[\]{}<>]+)"
# After the sign, a value on its line or the next one (YAML's "password:" over an indented
# value). Past a blank line, only a value alone on its line: a sign that ends a paragraph took
# the next one's first word ("Rotate it every quarter."), but a note's closing "password:"
# with its value appended as a paragraph of its own is a credential (the review of 0082).
# Spaces are any but line breaks (a no-break space, U+3000, a form feed: the value after one
# was left in clear). The breaks are read possessively: "\r\n" read as one break or two made
# a run of them exponential (10 s for 22 before prose, the review of 0152). A value alone on
# its line may be quoted, spaces and all (JSON's "password":, a blank line, "a b c").
_SPACE = r"[^\S\r\n]"
_LINE_BREAK = r"(?:\r\n?+|\n)"
_BREAK = rf"{_LINE_BREAK}{_SPACE}*+"
_QUOTED = r"\"[^\"\r\n]*+\"|'[^'\r\n]*+'"
_ALONE = (
    rf"(?=(?:{_QUOTED})?\S*+{_SPACE}*+(?:[\r\n]|$)"
    # or a first word holding a digit or a password's symbol ("hunter2  # rotated"): prose
    # opens with a word ("Rotate it"), a credential seldom with letters alone
    r"|[^\s,;\"'()\[\]{}<>]*?[\d!@#$%^&*+=~|\\/_]"
    # or one word, then a comment: two spaces or more and a comment sign, or one space and a
    # comment sign followed by a space or the line's end ("correcthorse  # old", "x // y";
    # decision 0157). Prose puts a word after its first ("We rotated it"), seldom a comment
    # sign ("See #12" is kept).
    rf"|(?:{_QUOTED}|[^\s,;\"'()\[\]{{}}<>]++)"
    rf"(?:{_SPACE}{{2,}}+(?:#|//|;)|{_SPACE}(?:#|//|;)(?:{_SPACE}|[\r\n]|$)))"
)
# The two-character signs first, and held (atomic): ``:=`` read as ``:`` took the ``=`` for
# the value and kept the value after it (``password := "hunter2"``, Go's), and a value already
# a marker was read again that way (the review of 0171).
SEPARATOR = (
    rf"[\"']?\s*(?>:=|=>|[:=]){_SPACE}*+"
    rf"(?:{_BREAK}(?:(?:{_BREAK})++{_ALONE})?)?"
)
STRONG_ASSIGNMENT = re.compile(
    rf"((?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]*?{_STRONG_NAME}{SEPARATOR})(?!secret\(){_VALUE}",
    re.IGNORECASE,
)
# A YAML block scalar of a secret name (``password: |`` or ``>-``, over an indented block):
# the block is the value. Its first line's indentation starts every line of it; blank lines
# inside it are kept to it only when an indented line follows. Breaks are read possessively,
# as in ``SEPARATOR``.
BLOCK_SIGN = r"[\"']?[ \t]*:[ \t]*[|>]"  # what follows the name (the rule's cue asks it too)
BLOCK_SCALAR = re.compile(
    rf"((?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]*?{_STRONG_NAME}{BLOCK_SIGN}"
    rf"[-+]?[1-9]?[-+]?[ \t]*(?:#[^\r\n]*+)?{_LINE_BREAK}"
    rf"(?:[ \t]*{_LINE_BREAK})*+([ \t]+))(?!secret\()"
    rf"(\S[^\r\n]*+(?:{_LINE_BREAK}(?:[ \t]*{_LINE_BREAK})*+\2[^\r\n]*+)*+)",
    re.IGNORECASE,
)
# A value given to a marker (``secret(PASSWORD) = hunter2``): the name that made the first
# value a secret is kept before its marker, and the marker now stands where a name stood. An
# edit that appended ``= hunter2`` to a stored ``password = secret(PASSWORD)`` kept hunter2 in
# clear, as did ``password = hunter1 = hunter2`` sent at once (decision 0171).
# Its value never runs into a marker, and one glued to a marker is none (kept, as when read as
# a call's name): ``secret(TOKEN)=abcsecret(PASSWORD)=hunter2`` read ``abcsecret`` as code, and
# the search went on past the second marker, keeping hunter2 (the review of 0171).
_MARKER_VALUE = r"(\"[^\"\n]*\"|'[^'\n]*'|(?:[^\s,;\"'()\[\]{}<>s]|s(?!ecret\())++)(?!secret\()"
MARKER_ASSIGNMENT = re.compile(
    rf"(secret\((?:API|TOKEN|PASSWORD|PRIVATE_KEY)\){SEPARATOR})(?!secret\(){_MARKER_VALUE}"
)
# The next link of a chain after such a value (``= hunter3``): its groups are the rule's (the
# sign, then the value), so the rule's test of a value reads it (a round took one link each).
CHAIN_LINK = re.compile(rf"({SEPARATOR})(?!secret\(){_MARKER_VALUE}")
# Any other *key name: only a value that looks random is a secret.
KEY_ASSIGNMENT = re.compile(
    rf"((?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]*key{SEPARATOR})(?!secret\(){_VALUE}", re.IGNORECASE
)


def quick_assignment(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """The same assignment pattern, first asking that the name characters from where it
    starts are followed by a separator. Every match has that: its name part is a run of name
    characters that the separator ends (no separator's first character is one). The plain
    pattern tries each secret word at each character of every word of prose; this one only
    at words that an assignment sign follows, for the same matches (on 16 KiB of prose, 6.1 ms
    before, 1.8 after)."""
    start = "((?<![A-Za-z0-9_.-])"
    if not pattern.pattern.startswith(start):
        raise ValueError("not an assignment pattern")
    # At least one name character (every name holds one): from every space of a long run of
    # them, ``*+`` went on to try the separator's own spaces (10.7 s for 40,000 line breaks
    # after "password: x", the review's).
    ahead = f"(?=[A-Za-z0-9_.-]++{SEPARATOR})"
    return re.compile(start + ahead + pattern.pattern[len(start) :], pattern.flags)


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_CODE_VALUE = re.compile(
    r"(?:[A-Za-z_][A-Za-z0-9_]*\.)+[A-Za-z_][A-Za-z0-9_]*"  # form.get, self.token
    r"|[$%&]\S*"  # $VAR, ${VAR}, %(name)s
    r"|\*+|x{3,}|X{3,}|\.{3}|<[^>]*>"  # placeholders
    r"|\|[-+]?[1-9]?[-+]?"  # a YAML block's indicator: the block is the value (BLOCK_SCALAR)
    r"|none|null|nil|true|false|undefined|empty|required|optional|str|string|int|bytes"
    r"|secret\(.*",
    re.IGNORECASE,
)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _looks_like_code(match: re.Match[str]) -> bool:
    value = _unquote(match.group(2))
    if not value.strip():
        return True
    following = match.string[match.end() : match.end() + 1]
    return following in ("(", "[", ".") or bool(_CODE_VALUE.fullmatch(value))


_RANDOM_CHARS = re.compile(r"[A-Za-z0-9+/=_-]{20,}")


def _looks_random(value: str) -> bool:
    """A UUID, or 20+ characters of a key alphabet with letters and at least three digits
    (``cache_key = user_profile_v2`` is a name, not a key)."""
    value = _unquote(value)
    if _UUID.fullmatch(value):
        return True
    digits = sum(ch.isdigit() for ch in value)
    return bool(_RANDOM_CHARS.fullmatch(value)) and digits >= 3 and digits < len(value)


def strong_secret(match: re.Match[str]) -> tuple[int, int] | None:
    """The value's span, unless it reads as code."""
    return None if _looks_like_code(match) else (match.end(1), match.end())


def weak_secret(match: re.Match[str]) -> tuple[int, int] | None:
    """The value's span, when it looks random and not like code."""
    if _looks_like_code(match) or not _looks_random(match.group(2)):
        return None
    return match.end(1), match.end()


# What ``[A-Za-z0-9_.-]`` matches when case is ignored: also the dotted and dotless i, the long
# s and the Kelvin sign
_NAME_CHARS = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-\u0130\u0131\u017f\u212a"
)
# A value's last name characters end in a name a rule reads (every *key name ends in "key"),
# looked for only after its last three letters are those of a name (most values end otherwise,
# and a search per value cost a fifth of the guard on text dense with assignments)
_ENDS_IN_A_NAME = re.compile(rf"(?:{_STRONG_NAME}|key)\Z", re.IGNORECASE)
_LAST_THREE = frozenset(("ord", "swd", "pwd", "ase", "ret", "ken", "key", "ial", "als"))
LONGEST_NAME = 20  # "encryption_key" and the other names are shorter


def chained(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """The matches of an assignment ``pattern``, also those whose name ends another's value.
    In ``api_key: password = hunter2`` the first match took ``password`` as its value and
    matches do not overlap, so ``hunter2`` was kept (on main too; the review of 0157). So when
    an unquoted value, its sign let aside, ends in a secret name, the assignment that starts at
    its last run of name characters is matched too, and so on along a chain. A match is
    yielded once, by its start: a long chain (``a_token: a_token: ...``) is walked once, not
    again from each of its links that the search meets."""
    seen = -1
    for found in pattern.finditer(text):
        match: re.Match[str] | None = found
        while match is not None and match.start() > seen:
            seen = match.start()
            yield match
            value = match.group(2)
            if value[0] in "\"'":
                break
            name = value.rstrip(":=>")
            last = name[-3:]  # four other letters match these when case is ignored
            if last.isascii() and last.lower() not in _LAST_THREE:
                break
            if _ENDS_IN_A_NAME.search(name, max(0, len(name) - LONGEST_NAME)) is None:
                break
            match = pattern.match(text, match.start(2) + len(name.rstrip(_NAME_CHARS)))


_BOUNDARY = "((?<![A-Za-z0-9_.-])"
_NAME_RUN = "[A-Za-z0-9_.-]*"


def named(pattern: re.Pattern[str]) -> bool:
    """Whether ``pattern`` is an assignment's: its match starts with a name, a run of name
    characters that a sign follows (no sign starts with a name character)."""
    return pattern.pattern.startswith(_BOUNDARY + _NAME_RUN)


def greedy(pattern: re.Pattern[str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The same assignment pattern, its name read to the end of the run of name characters
    and not given back (a name always ends there: a sign follows it, and a lazy name tried
    each secret word at each character of the run), and a search for its name at the end of a
    run: where the run does not end in one, the greedy form would read the run backwards, so
    look first (:func:`run_end`)."""
    rest = pattern.pattern[len(_BOUNDARY + _NAME_RUN) :].removeprefix("?")
    for name in (_STRONG_NAME, "key"):
        if rest.startswith(name):
            atomic = f"{_BOUNDARY}(?>{_NAME_RUN}{name}(?![A-Za-z0-9_.-])){rest[len(name) :]}"
            return re.compile(atomic, pattern.flags), re.compile(rf"{name}\Z", re.IGNORECASE)
    raise ValueError("not an assignment pattern")


_ASSIGNED = re.compile(r"[A-Za-z0-9_.-]++(?=[\"']?\s*+[:=])", re.IGNORECASE)  # as the rules


def run_end(text: str, at: int) -> int:
    """Where the run of name characters at ``at`` ends when a sign follows it, else -1."""
    run = _ASSIGNED.match(text, at)
    return -1 if run is None else run.end()
