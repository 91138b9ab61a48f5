"""Category notes as verbs: remembering about the user or a project, the profile of an axis,
and muting a category. Kept apart from the other note verbs (``facade``) for the module's size;
the rules are in :mod:`.categories`."""

from __future__ import annotations

from ..errors import (
    Conflict,
    ContentTooLarge,
    EmptyContent,
    InvalidLabel,
    ItemNotFound,
    VersionConflict,
)
from ..facade import MemoryBase, verb
from . import categories, scrub
from .results import Muted, ProfileEntry, Remembered


class CategoryVerbs(MemoryBase):
    @verb(
        "write",
        errors=(InvalidLabel, EmptyContent, ContentTooLarge, VersionConflict, Conflict),
        arguments=("axis", "observation"),
        enums={"axis": ("user", "project")},
        # Appended to the category note, which is redacted whole after it, as an edit's
        # content is (decision 0141): redacted alone first, an END marker under a key's body
        # lines became a marker, and the body stayed in clear.
        raw=("observation",),
    )
    def remember_about(
        self,
        axis: str,
        observation: str,
        *,
        category: str = "general",
        project: str | None = None,
        summary: str | None = None,
        idempotency_key: str | None = None,
        version_token: str | None = None,
    ) -> Remembered:
        """Remember an observation about the user (the same in every project) or about a project: it
        is appended to that category's note, created on first use. Search first and reuse an
        existing category rather than inventing a synonym.

        Args:
            axis: 'user' or 'project'.
            observation: The fact to append.
            category: A label such as 'preferences' (no [ ] | # or line breaks).
            project: The project, for the project axis.
            summary: A one-line summary of the whole category (kept when omitted).
            idempotency_key: Retries within 24 h are skipped; another observation is refused.
            version_token: The token you last read; a stale one is refused.
        """
        # Appending, as an edit does, may redact a credential the note held: its earlier
        # versions are scrubbed too, in an erasing write (decision 0150).
        return scrub.retried(
            self._write,
            self._erasing_write,
            self._store.reclaim,
            lambda tx, scrubbing: categories.remember_about(
                tx,
                tenant=self.tenant,
                principal=self.principal,
                axis=axis,
                observation=observation,
                category=category,
                project=project,
                summary=summary,
                idempotency_key=idempotency_key,
                version_token=version_token,
                scrubbing=scrubbing,
            ),
        )

    @verb("read", arguments=("axis",), enums={"axis": ("user", "project")}, keeps_to_scope=True)
    def profile(
        self,
        axis: str,
        project: str | None = None,
        include_muted: bool = False,
        *,
        scope: str | None = None,
    ) -> list[ProfileEntry]:
        """The categories of an axis: per category its summary (or a 160-character snippet), token
        estimate, muted flag and modified time.

        Args:
            axis: 'user' or 'project'.
            project: The project, for the project axis.
            include_muted: Also list muted categories.
            scope: Only when the axis's scope is this one (else not found); a token
                limited to scopes names one of them.
        """
        with self._store.read() as tx:
            return categories.profile(tx, self.tenant, axis, project, include_muted)

    @verb(
        "write",
        errors=(ItemNotFound, InvalidLabel),
        arguments=("category",),
        enums={"axis": ("user", "project")},
        keeps_to_scope=True,
    )
    def mute(
        self,
        category: str,
        *,
        axis: str = "user",
        project: str | None = None,
        scope: str | None = None,
    ) -> Muted:
        """Keep a category out of context and the profile (search still finds it).

        Args:
            category: The category label.
            axis: 'user' or 'project'.
            project: The project, for the project axis.
            scope: Only when the axis's scope is this one (else not found); a token
                limited to scopes names one of them.
        """
        with self._write() as tx:
            return categories.set_muted(
                tx, self.tenant, self.principal, category, axis, project, True
            )

    @verb(
        "write",
        errors=(ItemNotFound, InvalidLabel),
        arguments=("category",),
        enums={"axis": ("user", "project")},
        keeps_to_scope=True,
    )
    def unmute(
        self,
        category: str,
        *,
        axis: str = "user",
        project: str | None = None,
        scope: str | None = None,
    ) -> Muted:
        """Bring a muted category back into context and the profile.

        Args:
            category: The category label.
            axis: 'user' or 'project'.
            project: The project, for the project axis.
            scope: Only when the axis's scope is this one (else not found); a token
                limited to scopes names one of them.
        """
        with self._write() as tx:
            return categories.set_muted(
                tx, self.tenant, self.principal, category, axis, project, False
            )
