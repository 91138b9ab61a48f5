"""How a git path (bytes) and a commit's words are spelled in the store (decision 0095).

A git path is any bytes but NUL; the store keeps text, and PostgreSQL's text takes neither a
lone surrogate nor NUL. Decoding with replacement made ``a\\xff.txt`` and ``a\\xfe.txt`` one
path, ``a\\ufffd.txt``, and one file was lost (a hunt over the code store). So:

* A path that is UTF-8 is kept as it is.
* Each byte that is not part of valid UTF-8 is written ``\\xHH`` (two lower-case hex digits),
  as Python and git's tools print it; the rest of the path stays readable, so a path prefix
  (``src/``) still matches it.
* A backslash of the path that is followed by ``x`` and two hex digits is written ``\\x5c``
  itself, so that no UTF-8 path is spelled like an escaped one: the spelling is one-to-one,
  and :func:`raw` gives the bytes back.

Then the secret guard reads the path, like the commit's message and its author's name and
email (:func:`guarded`): a credential is replaced by its ``secret(KIND)`` marker before
anything is derived from it, so the file is stored, listed and reached by the redacted
spelling (looking it up by its original spelling is redacted alike and finds it).
"""

from __future__ import annotations

import re

from ..core.secrets import redact_text

_HEX = "0123456789abcdefABCDEF"
_ESCAPE = re.compile(r"\\x([0-9a-fA-F]{2})")


def spell(raw: bytes) -> str:
    """The stored spelling of a path's bytes (before the secret guard)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and "\\x" not in text:
        return text  # the usual path: nothing to escape
    # Undecodable bytes come back as U+DC80..U+DCFF (surrogateescape): one escape each.
    loose = raw.decode("utf-8", errors="surrogateescape")
    out: list[str] = []
    for at, char in enumerate(loose):
        if "\udc80" <= char <= "\udcff":
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        elif char == "\\" and _escape_follows(loose, at + 1):
            out.append("\\x5c")
        else:
            out.append(char)
    return "".join(out)


def _escape_follows(text: str, at: int) -> bool:
    return (
        text[at : at + 1] == "x"
        and len(text) >= at + 3
        and all(c in _HEX for c in text[at + 1 : at + 3])
    )


def raw(spelled: str) -> bytes:
    """The bytes of a path from its spelling (the inverse of :func:`spell`)."""
    parts: list[bytes] = []
    at = 0
    for found in _ESCAPE.finditer(spelled):
        parts.append(spelled[at : found.start()].encode("utf-8"))
        parts.append(bytes([int(found.group(1), 16)]))
        at = found.end()
    parts.append(spelled[at:].encode("utf-8"))
    return b"".join(parts)


def stored(path: bytes) -> str:
    """A path as the store keeps it, and as a lookup finds it: spelled one-to-one, then
    through the secret guard one name at a time (a credential's rule takes the rest of its
    text, so ``cfg/password=x/a.txt`` and ``.../b.txt`` became one path and one file was lost:
    the review of 0095). Two names that differ only in their credential still meet (the cost
    0095 names)."""
    return "/".join(redact_text(name) for name in spell(path).split("/"))
