"""Knowledge verbs (Semurg family): facts and documents in, cited answers out, real forgetting,
and export/import of a scope."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..clock import parse_time
from ..errors import InvalidInput
from ..graph import about as about_ops
from ..graph import derive, forget, status, store, transfer
from ..graph import remember as remember_ops
from ..ingest import document
from ..retrieval import search as search_ops
from ..retrieval.embed import configured_embedder
from ..text import checked_label
from .base import MemoryBase, guarded

DEFAULT_SCOPE = "user"


def _scope(scope: object) -> str:
    return DEFAULT_SCOPE if scope is None else checked_label(scope, "scope")


def _bounded(value: object, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{field} must be an integer from {low} to {high}, got {value!r}")
    return value


class KnowledgeVerbs(MemoryBase):
    def _meaning(self) -> str:
        embedder = configured_embedder()
        with self._store.read() as tx:
            return search_ops.meaning_state(tx, embedder)

    @guarded
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
    ) -> dict[str, Any]:
        """Store what you know: text (content, messages or passages) and/or facts you already
        extracted (entities with types and attributes; relations, optionally replacing the
        subject's earlier targets). No model runs; the same call with the same date answers
        already."""
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
        return {**reply, "meaning": self._meaning()}

    @guarded
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
    ) -> dict[str, Any]:
        """Add one typed fact between two entities (created if new)."""
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
        return self.remember_knowledge(facts=facts, date=date, scope=scope)

    @guarded
    def about(
        self,
        subject: str,
        *,
        hops: int = 2,
        k: int = about_ops.DEFAULT_K,
        as_of: str | None = None,
        valid_at: str | None = None,
        compact: bool = False,
        scope: str | None = None,
    ) -> dict[str, Any]:
        """What memory holds about an entity: its facts in both directions up to `hops`
        away, derived facts with their reasoning, and the passages that mention it, each with
        a verified citation."""
        if not isinstance(subject, str) or not subject.strip():
            raise InvalidInput("subject must be a name")
        view = store.View(
            as_of=None if as_of is None else parse_time(as_of, "as_of"),
            valid_at=None if valid_at is None else parse_time(valid_at, "valid_at"),
        )
        with self._store.read() as tx:
            reply = about_ops.about(
                tx,
                tenant=self.tenant,
                scope=_scope(scope),
                subject=subject,
                hops=_bounded(hops, "hops", 0, 3),
                k=_bounded(k, "k", 1, about_ops.MAX_K),
                view=view,
                compact=bool(compact),
            )
        self._audit.record(
            tenant=self.tenant,
            principal=self.principal,
            verb="about",
            query=subject,
            filters={"scope": _scope(scope)},
            returned=[i["id"] for i in reply["items"] if i.get("id")],
        )
        self._upkeep.poke(0)
        return {**reply, "meaning": self._meaning()}

    @guarded
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
    ) -> dict[str, Any]:
        """Forget exactly one thing, for real: a subject (with its facts and the passages that
        mention it), a fact, a stored document, every document of a source label, a whole
        scope, or an attribute. The words leave the database file."""
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
        with self._store.write() as tx:
            reply = forget.forget(
                tx,
                tenant=self.tenant,
                scope=_scope(scope),
                form=form,
                value=dict(value) if isinstance(value, Mapping) else value,
            )
        if not reply["already_forgotten"]:
            self._store.checkpoint()  # the WAL still holds the old pages: fold and truncate it
        return reply

    @guarded
    def ingest(
        self,
        content_base64: str | None = None,
        *,
        path: str | None = None,
        name: str | None = None,
        source: str | None = None,
        scope: str | None = None,
    ) -> dict[str, Any]:
        """Store a document (PDF, Word .docx, HTML, Markdown or text; at most 5,000,000 bytes;
        the kind is read from the bytes) as passages that answers can cite."""
        data, file_name = document.read_input(content_base64, path)
        with self._write() as tx:
            reply = document.ingest(
                tx,
                tenant=self.tenant,
                principal=self.principal,
                data=data,
                name=name or file_name or "document",
                scope=_scope(scope),
                source=None if source is None else checked_label(source, "source"),
            )
        return reply

    @guarded
    def export(
        self, scope: str | None = None, cursor: str | None = None, limit: int = 256
    ) -> dict[str, Any]:
        """One page of a scope's records (documents, entities, facts, notes, entries); pass
        `next` back as `cursor` for the following page."""
        with self._store.read() as tx:
            return transfer.export(
                tx, self.tenant, _scope(scope), cursor, _bounded(limit, "limit", 1, 1024)
            )

    @guarded
    def import_records(
        self, records: Sequence[Mapping[str, Any]], scope: str | None = None
    ) -> dict[str, Any]:
        """Import exported records into a scope (any scope); a record already imported is
        skipped, so sending a page twice stores nothing twice."""
        with self._store.write() as tx:
            reply = transfer.import_records(
                tx,
                tenant=self.tenant,
                principal=self.principal,
                scope=_scope(scope),
                records=[dict(r) for r in records],
            )
        self._upkeep.poke(reply["imported"])  # counted once validated
        return reply

    @guarded
    def status(self, scope: str | None = None) -> dict[str, Any]:
        """Which scopes hold data; for one scope, its ontology (types and relations in use,
        the biggest classes with their exact member counts)."""
        with self._store.read() as tx:
            reply = status.status(
                tx, self.tenant, None if scope is None else checked_label(scope, "scope")
            )
        return {
            **reply,
            "meaning": self._meaning(),
            "relations_derived": {
                "symmetric": sorted(derive.SYMMETRIC),
                "inverse": dict(sorted(derive.INVERSE.items())),
                "transitive": sorted(derive.TRANSITIVE),
            },
        }
