"""Passive capture of learnings from an agent's own text, and stable topic keys.

``capture_passive`` reads the *last* section headed ``Key Learnings``, ``Learnings`` or
``Aprendizajes Clave``, takes its numbered items (or, when there are none, its bullets), strips
the markdown, keeps items of at least 20 characters and 4 words, and saves each one not already
known in the scope as a ``passive`` note.
"""

from __future__ import annotations

import re
import unicodedata

from ..core.settings import note_limit_bytes
from ..core.text import checked_label
from ..store.base import Tx
from . import history
from . import operations as notes
from .results import Captured, SuggestedKey
from .text import cap_utf8, headings

HEADINGS = ("key learnings", "learnings", "aprendizajes clave")
MIN_CHARS = 20
MIN_WORDS = 4
MAX_ITEMS = 100
PASSIVE_KIND = "passive"
_NUMBERED = re.compile(r"^\s{0,3}\d{1,3}[.)]\s+(.*)$")
_BULLET = re.compile(r"^\s{0,3}[-*+•]\s+(.*)$")
_CONTINUATION = re.compile(r"^\s{2,}\S")
_FAMILIES = {
    "decision": "decision",
    "architecture": "architecture",
    "bugfix": "bug",
    "bug": "bug",
    "pattern": "pattern",
    "config": "config",
    "discovery": "discovery",
    "learning": "learning",
    "preference": "preference",
    "policy": "policy",
    "passive": "learning",
    "manual": "note",
}
_STOP = {
    "a",
    "an",
    "the",
    "of",
    "to",
    "in",
    "on",
    "for",
    "and",
    "or",
    "with",
    "is",
    "are",
    "el",
    "la",
    "los",
    "las",
    "de",
    "del",
    "y",
    "en",
    "un",
    "una",
    "para",
    "por",
}


# Each span stops at the next mark that could open another, so no pattern scans past it: with
# ``.+?`` (and a link's ``[^)]*``) an opener with no closer scanned to the end of the text, once
# per opener, and a line of 24,000 characters of "_a " took 5.4 s inside capture_passive's write.
_LINK = re.compile(r"!?\[([^\[\]]*)\]\((?:[^()]|\([^()]*\))*\)")  # a URL may hold one "(...)"
_EMPHASIS = (
    re.compile(r"(?<![\w*])\*(?!\s)([^*]+?)(?<!\s)\*(?![\w*])"),
    re.compile(r"(?<![\w*])_(?!\s)([^_]+?)(?<!\s)_(?![\w*])"),
)


def strip_markdown(text: str) -> str:
    text = _LINK.sub(r"\1", text)  # links and images keep their text
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    for emphasis in _EMPHASIS:
        text = emphasis.sub(r"\1", text)
    text = re.sub(r"~~(.+?)~~", r"\1", text)
    return " ".join(text.split())


def _last_learnings_section(text: str) -> list[str] | None:
    """The lines of the last section headed as a learnings one, read by the notes' heading
    rule (``headings``): ATX or setext, outside code fences. Its own rule knew ATX headings
    only, so a setext ``Key Learnings`` was not read, and a learnings section ran on over the
    setext sections after it, whose items were captured as learnings (the review of 0153)."""
    lines = text.splitlines()
    found = headings("\n".join(lines))
    wanted = [
        at
        for at, heading in enumerate(found)
        if strip_markdown(heading.title).rstrip(":").strip().casefold() in HEADINGS
    ]
    if not wanted:
        return None
    target = found[wanted[-1]]
    end = next((h.line for h in found[wanted[-1] + 1 :] if h.level <= target.level), len(lines))
    return lines[target.end + 1 : end]


def _items(lines: list[str], pattern: re.Pattern[str]) -> list[str]:
    """Items that start with ``pattern``; indented lines continue the item above them."""
    found: list[list[str]] = []
    open_item = False
    for line in lines:
        match = pattern.match(line)
        if match:
            found.append([match.group(1)])
            open_item = True
        elif open_item and _CONTINUATION.match(line):
            found[-1].append(line.strip())
        elif not line.strip():
            open_item = False
    return [" ".join(parts) for parts in found]


def extract_learnings(text: str) -> list[str]:
    section = _last_learnings_section(text)
    if section is None:
        return []
    raw = _items(section, _NUMBERED) or _items(section, _BULLET)
    kept = []
    for item in raw:
        clean = strip_markdown(item)
        if len(clean) >= MIN_CHARS and len(clean.split()) >= MIN_WORDS:
            kept.append(clean)
    return kept


def _title(item: str) -> str:
    return item if len(item) <= 80 else item[:79].rstrip() + "…"


def capture(
    tx: Tx, *, tenant: str, principal: str, text: object, scope: object, session: object
) -> Captured:
    body = notes.check_body(text, "text")
    session_id = None if session is None else checked_label(session, "session")
    note_scope = notes.check_scope(scope)
    if scope is None and session_id is not None:
        # The learnings of a session are its project's (Engram's capture names no project,
        # only the session): they went to 'user', where the session's timeline, its summary and
        # the project's recent context never showed them, and were de-duplicated there.
        note_scope = (
            tx.scalar(
                "SELECT scope FROM sessions WHERE tenant = ? AND id = ?", (tenant, session_id)
            )
            or note_scope
        )
    found = extract_learnings(body)
    # The first MAX_ITEMS are captured; the reply counts the rest (they were dropped unsaid).
    learnings, left_out = found[:MAX_ITEMS], max(0, len(found) - MAX_ITEMS)
    limit = note_limit_bytes(tx, tenant)
    saved: list[int] = []
    duplicates = truncated = 0
    seen: set[bytes] = set()
    for whole in learnings:
        # Each learning becomes a note, under the note size limit as every note is (one item
        # past it was stored whole): cut, and counted in the reply.
        capped = cap_utf8(whole, limit)
        item, truncated = capped.text, truncated + capped.truncated
        digest = history.normalized_hash(item)
        known = digest in seen or tx.scalar(
            "SELECT 1 FROM items WHERE tenant = ? AND scope = ? AND content_hash = ?"
            " AND item_type = 'note' AND category = ? AND status <> 'deleted' LIMIT 1",
            (tenant, note_scope, digest, PASSIVE_KIND),
        )
        seen.add(digest)
        if known:
            duplicates += 1
            continue
        saved.append(
            notes.create(
                tx,
                tenant=tenant,
                principal=principal,
                title=_title(item),
                content=item,
                kind=PASSIVE_KIND,
                scope=note_scope,
                session=session_id,
            )
        )
    reply: Captured = {
        "extracted": len(learnings),
        "saved": len(saved),
        "duplicates": duplicates,
        "ids": saved,
        "scope": note_scope,
    }
    if left_out:
        reply["left_out"] = left_out
    if truncated:
        reply["truncated"] = truncated
    return reply


def _slug(text: str, words: int = 6) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    tokens = [t for t in re.findall(r"[a-z0-9]+", ascii_text) if t not in _STOP]
    return "-".join(tokens[:words])[:60].strip("-")


def suggest_key(kind: object, title: object, content: object) -> SuggestedKey:
    """A stable ``family/slug`` topic key: the same inputs always give the same key."""
    family = _FAMILIES.get(str(kind or "").strip().lower(), "topic")
    slug = _slug(str(title or "")) or _slug(str(content or ""))
    if not slug:
        slug = "n-" + history.content_hash(f"{title}\n{content}")[:10]
    return {"key": f"{family}/{slug}", "family": family}
