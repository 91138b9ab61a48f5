"""Mirror verbs: a local document kept whole in memory (Engram's mirror workflow).

A workflow keeps a large task's state twice: a local file and a full mirror in memory under a
topic key (``odd/<feature>/tasks``). ``mirror_push`` saves the whole document at its key, with
the version the caller last synced (a stale one is a conflict: both versions are kept and named,
nothing is overwritten), then reads the memory copy back and compares hashes: the reply is the
evidence. ``mirror_get`` returns the memory copy whole. The local side (the sync state, the
pending queue, ``status``, ``pull``, ``resume``) is the ``recuerdo mirror`` command.
"""

from __future__ import annotations

import hashlib

from ..core.text import checked_label
from ..errors import Conflict, ContentTooLarge, EmptyContent
from ..facade import MemoryBase, verb
from ..notes import operations as notes
from .results import MirrorCopy, MirrorPush

FAMILY = "mirror"
DEFAULT_SCOPE = "user"
MIRROR_KIND = "mirror"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class MirrorVerbs(MemoryBase):
    # ``content`` passes the guard unredacted so that the evidence compares the document SENT
    # with the copy kept: hashed after the guard, a file holding a credential was reported
    # identical to its redacted copy (decision 0101). It is redacted by ``save`` below, the
    # one place it is stored, whose reply says what was replaced.
    @verb(
        "write",
        errors=(Conflict, ContentTooLarge, EmptyContent),
        arguments=("key", "content"),
        raw=("content",),
    )
    def mirror_push(
        self,
        key: str,
        content: str,
        *,
        locator: str | None = None,
        scope: str | None = None,
        expected_version: int | None = None,
    ) -> MirrorPush:
        """Save a WHOLE document as the mirror note at a topic key, then read it back and
        compare: the reply holds the version, both sha256 hashes and whether the memory copy
        is identical. A credential in the document is stored replaced (``redacted`` names
        what was), so that copy is never reported identical. Pass the version you last synced:
        if the note has moved on since, nothing is overwritten (a conflict names both
        versions, both kept). A document over the note size limit is refused, never cut.

        Args:
            key: The topic key, e.g. odd/auth/tasks.
            content: The whole document.
            locator: Where the file lives, relative to its repository (e.g. odd/tasks/auth.md).
            scope: 'user' or 'project:<name>' (default 'user').
            expected_version: The version you last synced; 0 for a first push that must not
                replace another document already at the key (it is a conflict, both kept).
        """
        title = locator or key
        saved = self.save(  # type: ignore[attr-defined]
            title,
            content,
            kind=MIRROR_KIND,
            key=key,
            scope=scope,
            expected_version=expected_version,
            strict=True,
        )
        stored = self.get(saved["id"])["content"]  # type: ignore[attr-defined]
        sent, kept = sha256(content), sha256(stored)
        redacted = saved.get("redacted") or {}
        if sent == kept:
            detail = "the memory copy is identical to the document sent"
        elif redacted:
            kinds = sorted({kind for found in redacted.values() for kind in found})
            detail = (
                "the memory copy differs from the document sent by the secrets replaced "
                f"before storing ({', '.join(kinds)}): memory never holds them"
            )
        else:
            detail = (
                "the memory copy differs from the document sent (<private> spans are "
                "removed before storing)"
            )
        return {
            "key": saved["key"],
            "scope": saved["scope"],
            "id": saved["id"],
            "version": saved["version"],
            "outcome": saved["outcome"],
            "local_sha256": sent,
            "memory_sha256": kept,
            "in_sync": sent == kept,
            "bytes": len(stored.encode("utf-8")),
            "detail": detail,
            "redacted": redacted,
        }

    @verb("read", arguments=("key",))
    def mirror_get(self, key: str, *, scope: str | None = None) -> MirrorCopy:
        """The memory copy of a mirrored document, whole (never a preview), with its version
        and sha256; nothing_stored when no note has that key in the scope.

        Args:
            key: The topic key, e.g. odd/auth/tasks.
            scope: 'user' or 'project:<name>' (default 'user').
        """
        chosen = checked_label(scope or DEFAULT_SCOPE, "scope")
        with self._store.read() as tx:
            found = notes.by_key(tx, self.tenant, chosen, checked_label(key, "key"))
        if found is None:
            return {"state": "nothing_stored", "key": key, "scope": chosen}
        return {
            "state": "answered",
            "key": key,
            "scope": chosen,
            "id": found["id"],
            "version": found["version"],
            "locator": found["title"],
            "content": found["content"],
            "sha256": sha256(found["content"]),
            "updated_at": found["updated_at"],
        }
