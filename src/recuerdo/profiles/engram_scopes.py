"""Where Engram's projects live in recuerdo: one mapping for the Engram profile (the ``mem_*``
tools) and the Engram importer, so what an import writes is what the tools read.

Engram matches projects trimmed and lower-cased ("ShopAPI" and " shopapi " are one project); an
observation lives in the scope ``project:<project>`` (no project is ``default``), a personal one
in ``user``. An importer that kept the project as given wrote ``project:ShopAPI``, a scope the
tools never read (decision 0102).

Engram keys an observation by (project, scope, topic key): a personal topic key of one project
is not another project's. All personal observations share ``user``, so there the key holds the
project too, ``<project>/<topic key>`` (decision 0138). A personal observation saved before was
keyed by its topic key alone; a save names that key as its former key, and the note there is
moved to the new key rather than left beside a second one.
"""

from __future__ import annotations

import hashlib

# The save verb refuses a key over this many characters (the label limit of every key).
_KEY_CHARS = 200
# Escaped in a project's name within a key: the separator, the escape, the digest mark, and
# the characters a key may not hold (a project name is any text Engram was given).
_ESCAPED = {ch: f"%{ord(ch):02X}" for ch in "%/~\x00\r\n"}


def project_name(project: object) -> str | None:
    """The project as Engram matches it: trimmed and lower-cased; None when there is none."""
    if not isinstance(project, str):
        return None
    return project.strip().lower() or None


def project_scope(project: object) -> str:
    """The scope of a project's observations."""
    return f"project:{project_name(project) or 'default'}"


def engram_scope(project: object, scope: object) -> str:
    """The scope of an observation of ``project`` with Engram's ``scope`` (``project`` or
    ``personal``)."""
    return "user" if scope == "personal" else project_scope(project)


def recorded_project(project: object, scope: object) -> str | None:
    """The project a note of an observation records (decision 0148): a personal one's,
    ``default`` when none is given, for the reads with a project to keep to; None for a
    project's observation (its scope holds the project)."""
    return (project_name(project) or "default") if scope == "personal" else None


def personal_key(project: object, topic_key: str) -> str:
    """The key of a personal observation of ``project`` at ``topic_key``: the project, then
    ``/``, then the topic key. The project is escaped (``%``, ``/``, ``~`` and line breaks as
    ``%XX``), so the first ``/`` ends it (project ``a/b`` with key ``c`` is not project ``a``
    with key ``b/c``) and it never starts with ``~``. A key that would be too long names the
    project by a digest instead (``~`` and 12 hex digits of its SHA-256), and when even that is
    too long, the topic key too (``~<project>~<topic>/`` and the topic key's start): no
    project's name can be mistaken for a digest, and no topic key Engram takes is refused."""
    name = project_name(project) or "default"
    topic = topic_key.strip()
    escaped = "".join(_ESCAPED.get(ch, ch) for ch in name)
    key = f"{escaped}/{topic}"
    if len(key) <= _KEY_CHARS:
        return key
    key = f"~{_digest(name)}/{topic}"
    if len(key) <= _KEY_CHARS:
        return key
    head = f"~{_digest(name)}~{_digest(topic)}/"
    return head + topic[: _KEY_CHARS - len(head)]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def observation_key(project: object, scope: object, topic_key: object) -> tuple[object, str | None]:
    """(the key, the former key) of an observation saved with ``topic_key``: a personal one is
    keyed by project and topic key, and was keyed by the topic key alone; a project's is keyed
    by its topic key (its scope holds the project). A topic key that is no text is passed on
    as it is, for the save to refuse."""
    if scope != "personal" or not isinstance(topic_key, str) or not topic_key.strip():
        return topic_key, None
    former = topic_key.strip()
    # A topic key longer than a key may be was refused before: no note can be under it.
    return personal_key(project, topic_key), former if len(former) <= _KEY_CHARS else None
