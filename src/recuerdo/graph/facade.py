"""Knowledge verbs (Semurg family): facts and documents in, cited answers out, real forgetting,
and export/import of a scope."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from ..core.exact import shown
from ..core.text import checked_label
from ..errors import (
    FactsShape,
    InvalidInput,
    LimitExceeded,
    MentionNotInPassage,
    UnknownName,
)
from ..facade import MemoryBase, verb
from ..store.base import Tx
from . import about as about_ops
from . import derive, forget, status, store, transfer
from . import remember as remember_ops
from .results import About, Exported, Forgot, Imported, KnowledgeRemembered, Status

FAMILY = "knowledge"
DEFAULT_SCOPE = "user"


def _scope(scope: object) -> str:
    return DEFAULT_SCOPE if scope is None else checked_label(scope, "scope")


def _bounded(value: object, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{field} must be an integer from {low} to {high}, got {shown(value)}")
    return value


class KnowledgeVerbs(MemoryBase):
    def _link_passages(
        self, tx: Tx, tenant: str, scope: str, passages: Sequence[tuple[int, str]]
    ) -> None:
        remember_ops.link_passages(tx, tenant, scope, passages)

    @verb("write", errors=(FactsShape, MentionNotInPassage, LimitExceeded))
    def remember_knowledge(
        self,
        content: str | None = None,
        *,
        messages: Sequence[Mapping[str, Any]] | None = None,
        passages: Sequence[Mapping[str, Any]] | None = None,
        facts: Mapping[str, Any] | None = None,
        date: str | None = None,
        source: str | None = None,
        scope: str | None = None,
    ) -> KnowledgeRemembered:
        """Store what you know without any model: text (content, or messages, or passages with the
        names they mention) and/or facts you extracted ({entities: [{name, type, attributes}],
        relations: [{source, target, type, replaces}]}). The same call with the same date answers
        already.

        Args:
            content: Raw text; cut into passages at sentence ends.
            messages: [{role, content}]: one passage per turn.
            passages: [{text, mentions, key}]: each mention must appear in its text.
            facts: {entities, relations} you already know.
            date: When it was said or became true (ISO 8601).
            source: A provenance label returned in citations.
            scope: The scope (default 'user'); another scope never sees this one.
        """
        with self._write() as tx:
            reply = remember_ops.remember(
                tx,
                tenant=self.tenant,
                principal=self.principal,
                scope=scope,
                content=content,
                messages=None if messages is None else list(messages),
                passages=None if passages is None else list(passages),
                facts=None if facts is None else dict(facts),
                date=date,
                source=source,
            )
        return cast(KnowledgeRemembered, {**reply, "meaning": self.meaning_state(settle=False)})

    @verb("write", errors=(FactsShape,), arguments=("from_", "to", "type"))
    def relate(
        self,
        from_: str,
        to: str,
        type: str,
        *,
        attributes: Mapping[str, Any] | None = None,
        replaces: bool = False,
        date: str | None = None,
        scope: str | None = None,
    ) -> KnowledgeRemembered:
        """Add one typed fact between two entities (created if new); replaces=true ends the
        subject's other targets of that type (kept in history).

        Args:
            from_: The subject entity's name.
            to: The object entity's name.
            type: The relation, e.g. works_at.
            attributes: Properties of the fact.
            replaces: End the subject's other facts of this type.
            date: When it became true (ISO 8601).
            scope: The scope (default 'user'); another scope never sees this one.
        """
        facts = {
            "relations": [
                {
                    "source": from_,
                    "target": to,
                    "type": type,
                    "replaces": replaces,
                    "attributes": dict(attributes or {}),
                }
            ]
        }
        reply = self.remember_knowledge(facts=facts, date=date, scope=scope)
        # No text of its own waits for vectors: say what a read would say now.
        return cast(KnowledgeRemembered, {**reply, "meaning": self.meaning_state()})

    @verb("read", arguments=("subject",))
    def about(
        self,
        subject: str | None = None,
        *,
        attribute: Mapping[str, Any] | None = None,
        hops: int = 2,
        k: int = about_ops.DEFAULT_K,
        as_of: str | None = None,
        valid_at: str | None = None,
        compact: bool = False,
        scope: str | None = None,
    ) -> About:
        """What memory holds about an entity (names match by spelling, case, a word or a prefix;
        or name an attribute value instead): its facts both ways up to `hops` away, derived facts
        with the rule and facts they rest on, and the passages that mention it, each with a
        verified citation. as_of = what was known then (later facts, passages and entities are
        hidden); valid_at = what was true then; both = what was known at as_of about valid_at.

        Args:
            subject: The entity's name.
            attribute: Instead of a name, {key, value, type?}: the entities whose current value
                of key is value.
            hops: Graph steps to walk (0-3).
            k: At most this many facts and passages.
            as_of: Read what was known at this ISO 8601 instant (not later than now; one up to
                2 minutes ahead, a caller's clock running fast, reads now).
            valid_at: Read what was true at this ISO 8601 instant.
            compact: Each item once, without diagnostics.
            scope: The scope (default 'user'); another scope never sees this one.
        """
        if (subject is None) == (attribute is None):
            raise InvalidInput("give exactly one of subject (a name) or attribute {key, value}")
        if subject is not None and (not isinstance(subject, str) or not subject.strip()):
            raise InvalidInput("subject must be a name")
        meaning = self.meaning_state()
        view = store.View.of(as_of, valid_at)
        with self._store.read() as tx:
            reply = about_ops.about(
                tx,
                tenant=self.tenant,
                scope=_scope(scope),
                subject=subject,
                attribute=None if attribute is None else dict(attribute),
                hops=_bounded(hops, "hops", 0, 3),
                k=_bounded(k, "k", 1, about_ops.MAX_K),
                view=view,
                compact=bool(compact),
                viewer=self.principal,
            )
        self._audit.record(
            tenant=self.tenant,
            principal=self.principal,
            verb="about",
            query=subject if subject is not None else f"attribute {dict(attribute or {})}",
            filters={"scope": _scope(scope)},
            returned=_documents_returned(reply["items"]),
        )
        self._upkeep.poke(0)
        read_at = {} if view.as_of is None else {"as_of": view.as_of}
        return cast(About, {**reply, "meaning": meaning, **read_at})

    @verb("write", errors=(UnknownName,), destructive=True)
    def forget_knowledge(
        self,
        scope: str | None = None,
        *,
        subject: str | None = None,
        fact: Mapping[str, str] | None = None,
        passage: int | str | None = None,
        source: str | None = None,
        all: bool | None = None,
        attribute: Mapping[str, str] | None = None,
    ) -> Forgot:
        """Forget exactly one thing, for real (erased from the database file): a subject, a fact
        {from, to, type}, a stored document (passage: its doc id), every document of a source label,
        a whole scope (all, its conversations included), or an attribute {subject, key}. An
        unknown name is refused with close names, never guessed.

        Args:
            scope: The scope (default 'user'); another scope never sees this one.
            subject: An entity's exact name.
            fact: {from, to, type}.
            passage: A document id.
            source: A source label.
            all: true: the whole scope.
            attribute: {subject, key}.
        """
        given = {
            name: value
            for name, value in (
                ("subject", subject),
                ("fact", fact),
                ("passage", passage),
                ("source", source),
                ("all", all),
                ("attribute", attribute),
            )
            if value is not None
        }
        if len(given) != 1:
            raise InvalidInput(f"give exactly one of {', '.join(forget.FORMS)}")
        [(form, value)] = given.items()
        with self._erasing_write(superseded=True) as tx:
            reply = forget.forget(
                tx,
                tenant=self.tenant,
                scope=_scope(scope),
                form=form,
                value=dict(value) if isinstance(value, Mapping) else value,
                reader=None if self.owner else self.principal,
                viewer=self.principal,
            )
        if not reply["already_forgotten"]:
            self._store.reclaim()  # the WAL still holds the old pages: fold and truncate it
        return cast(Forgot, reply)

    @verb("read")
    def export(
        self, scope: str | None = None, cursor: str | None = None, limit: int = 256
    ) -> Exported:
        """Export one page of a scope's records (with the conversations you are a member of;
        a token holder's carries its own idempotency keys and unread cursors only); pass
        `next` back as `cursor`.

        Args:
            scope: The scope (default 'user'); another scope never sees this one.
            cursor: From the previous page's `next`.
            limit: Records per page (1-1024, default 256).
        """
        with self._store.read() as tx:
            page = transfer.export(
                tx,
                self.tenant,
                _scope(scope),
                cursor,
                _bounded(limit, "limit", 1, 1024),
                self.principal,
                owner=self.owner,
            )
        return cast(Exported, page)

    @verb("write", name="import")
    def import_records(
        self, records: Sequence[Mapping[str, Any]], scope: str | None = None
    ) -> Imported:
        """Import exported records into a scope; records already imported are skipped, so a page
        sent twice stores nothing twice.

        Args:
            records: Records from export (at most 4096).
            scope: The scope (default 'user'); another scope never sees this one.
        """
        with self._write(0) as tx:
            reply = transfer.import_records(
                tx,
                tenant=self.tenant,
                principal=self.principal,
                scope=_scope(scope),
                # Anything but a list of objects is refused or skipped there: dict("abc")
                # raised a raw ValueError here.
                records=[dict(r) if isinstance(r, Mapping) else r for r in records]
                if isinstance(records, list | tuple)
                else records,
                owner=self.owner,
            )
        self._upkeep.poke(reply["imported"])  # counted once validated
        return cast(Imported, reply)

    @verb("read")
    def status(self, scope: str | None = None) -> Status:
        """Which scopes hold data; for one scope its ontology: entity types and relations in use,
        the biggest classes with exact member counts.

        Args:
            scope: The scope to describe.
        """
        with self._store.read() as tx:
            reply = status.status(
                tx,
                self.tenant,
                None if scope is None else checked_label(scope, "scope"),
                self.principal,
            )
        rules = {
            "symmetric": sorted(derive.SYMMETRIC),
            "inverse": dict(sorted(derive.INVERSE.items())),
            "transitive": sorted(derive.TRANSITIVE),
        }
        return cast(Status, {**reply, "meaning": self.meaning_state(), "relations_derived": rules})


def _documents_returned(items: list[Any]) -> list[int]:
    """The items an ``about`` reply read from, for its audit record: its passages' documents
    and its facts' cited ones. The record's ids are item ids, which a forget of an item looks
    for: entity, fact and chunk ids recorded there (decision 0168) dropped records of other
    items that shared the number, and kept those of a forgotten document's passages."""
    found: set[int] = set()
    for item in items:
        if item.get("kind") == "passage" and item.get("doc_id") is not None:
            found.add(int(item["doc_id"]))
        source = (item.get("citation") or {}).get("source") or {}
        if source.get("doc_id") is not None:
            found.add(int(source["doc_id"]))
    return sorted(found)
