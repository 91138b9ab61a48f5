"""Search filters, applied inside every candidate query (never after a top-k cut).

Beside the caller's filters, every query is confined to the tenant and to what the viewer may
read: a message (``mail``) only to the members of its conversation (``core.items.visible``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..code.lookup import check_prefix, check_repo
from ..core import projects
from ..core.clock import now_iso, parse_time
from ..core.exact import shown
from ..core.items import MAIL, visible
from ..core.text import check_tags, checked_label
from ..errors import InvalidInput
from ..store.base import any_tag, every_tag

ITEM_TYPES = ("entry", "note", "document", "message", MAIL, "code")
# Stored code (the text of ingested repositories) is searched only when asked for by type or
# repository: it would otherwise crowd out what agents remembered.
ASKED_ONLY = "code"
STATUSES = ("active", "needs_review", "archived")


def labels(value: object, field_name: str) -> list[str] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list | tuple) or not values:
        raise InvalidInput(f"{field_name} must be a label or a non-empty list of labels")
    return [checked_label(v, field_name) for v in values]


@dataclass(frozen=True)
class Filters:
    tenant: str
    viewer: str | None = None
    """The principal reading (messages are visible to their conversation's members only)."""
    scopes: tuple[str, ...] | None = None
    """Only these scopes (None: every scope of the tenant)."""
    kinds: list[str] | None = None
    types: list[str] | None = None
    tags: list[str] = field(default_factory=list)
    tags_all: bool = False
    source: str | None = None
    status: str | None = None
    since: str | None = None
    until: str | None = None
    skip_muted: bool = False
    repo: str | None = None
    path_prefix: str | None = None
    known_at: str | None = None
    """Only items stored by then (what was known at that instant), a note deleted since
    among them (``retrieval/then.py`` leaves out one that was deleted then)."""
    project_tag: str | None = None
    """Leave out the notes of ``user`` recorded as another project's than this tag's
    (``core/projects.py``)."""
    said_by: str | None = None
    """Only items said by then: their date, else when they were stored (what was true at
    that instant; an edit since does not move it: ``retrieval/then.py``)."""

    @property
    def narrows(self) -> bool:
        """Whether the caller asked for part of the tenant's memory (a filter that may keep
        few of the chunks a ranking offers): any field but the tenant and the viewer set."""
        return self != Filters(self.tenant, self.viewer)

    @classmethod
    def build(
        cls,
        tenant: str,
        *,
        viewer: str | None = None,
        scope: object = None,
        kind: object = None,
        types: object = None,
        tags: object = None,
        tags_mode: object = None,
        source: object = None,
        status: object = None,
        since: object = None,
        until: object = None,
        skip_muted: bool = False,
        repo: object = None,
        path_prefix: object = None,
        known_at: str | None = None,
        said_by: str | None = None,
        project: object = None,
    ) -> Filters:
        item_types = labels(types, "types")
        if item_types and not set(item_types) <= set(ITEM_TYPES):
            raise InvalidInput(f"types are among {', '.join(ITEM_TYPES)}, got {item_types}")
        if repo is not None or path_prefix is not None:
            if item_types not in (None, [ASKED_ONLY]):
                raise InvalidInput(
                    "repo and path_prefix narrow stored code: types must be ['code']"
                )
            item_types = [ASKED_ONLY]
        if status is not None and status not in STATUSES:
            raise InvalidInput(f"status is one of {', '.join(STATUSES)}, got {shown(status)}")
        if tags_mode is not None and tags_mode not in ("any", "all"):
            raise InvalidInput(f"tags_mode is 'any' or 'all', got {shown(tags_mode)}")
        scopes = labels(scope, "scope")
        return cls(
            tenant=tenant,
            viewer=viewer,
            scopes=None if scopes is None else tuple(dict.fromkeys(scopes)),
            kinds=labels(kind, "kind"),
            types=item_types,
            tags=check_tags(tags),
            tags_all=tags_mode == "all",
            source=None if source is None else checked_label(source, "source"),
            status=status if isinstance(status, str) else None,
            since=None if since is None else parse_time(since, "since"),
            until=None if until is None else parse_time(until, "until"),
            skip_muted=skip_muted,
            repo=None if repo is None else check_repo(repo),
            path_prefix=check_prefix(path_prefix),
            known_at=known_at,
            said_by=said_by,
            project_tag=projects.read_tag(project),
        )

    def sql(self, alias: str = "i", *, unasked_code: bool = False) -> tuple[str, list[Any]]:
        """A WHERE fragment over the items table aliased ``alias``, and its parameters.
        ``unasked_code``: keep stored code though no type asks for it (a link to it was made
        on purpose: decision 0103)."""
        a = alias
        members_only, viewer = visible(a, self.viewer)
        clauses = [f"{a}.tenant = ?", f"{a}.status <> 'deleted'", members_only]
        params: list[Any] = [self.tenant, *viewer]
        if self.known_at is not None:
            # A note deleted (softly: its text is kept) since then was known then.
            clauses[1] = f"({a}.status <> 'deleted' OR {a}.updated_at > ?)"
            params.insert(1, self.known_at)
        if self.scopes is not None:
            clauses.append(f"{a}.scope IN ({', '.join('?' * len(self.scopes))})")
            params.extend(self.scopes)
        for column, values in ((f"{a}.category", self.kinds), (f"{a}.item_type", self.types)):
            if values:
                clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        if not self.types and not unasked_code:
            clauses.append(f"{a}.item_type <> '{ASKED_ONLY}'")
        if self.repo is not None:
            clauses.append(f"{a}.scope = ?")
            params.append(f"code:{self.repo}")
        if self.path_prefix is not None:
            clauses.append(f"substr({a}.key, 1, ?) = ?")
            params.extend([len(self.path_prefix), self.path_prefix])
        if self.source is not None:
            clauses.append(f"{a}.source = ?")
            params.append(self.source)
        if self.status == "needs_review":
            clauses.append(f"{a}.status = 'active' AND {a}.review_at <= ?")
            params.append(now_iso())
        elif self.status == "active":
            clauses.append(
                f"{a}.status = 'active' AND ({a}.review_at IS NULL OR {a}.review_at > ?)"
            )
            params.append(now_iso())
        elif self.status is not None:
            clauses.append(f"{a}.status = ?")
            params.append(self.status)
        moment = f"coalesce({a}.occurred_at, {a}.updated_at)"
        if self.since is not None:
            clauses.append(f"{moment} >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append(f"{moment} <= ?")
            params.append(self.until)
        if self.known_at is not None:
            clauses.append(f"{a}.created_at <= ?")
            params.append(self.known_at)
        if self.said_by is not None:
            clauses.append(f"coalesce({a}.occurred_at, {a}.created_at) <= ?")
            params.append(self.said_by)
        if self.skip_muted:
            clauses.append(f"{a}.muted = 0")
        if self.tags:
            condition, tag_params = (every_tag if self.tags_all else any_tag)(a, self.tags)
            clauses.append(condition)
            params.extend(tag_params)
        if self.project_tag is not None:
            condition, tag_params = projects.mine_or_none(a, self.project_tag)
            clauses.append(condition)
            params.extend(tag_params)
        return " AND ".join(clauses), params

    @property
    def scope(self) -> str | None:
        """The first scope asked for (the one the audit files a query under)."""
        return None if self.scopes is None else self.scopes[0]

    def describe(self) -> dict[str, Any]:
        """The filters as given, for the audit."""
        shown = {k: v for k, v in self.__dict__.items() if v not in (None, [], False)}
        shown.pop("tenant", None)
        shown.pop("viewer", None)
        scopes = shown.pop("scopes", None)
        if scopes:
            shown["scope"] = scopes[0]
            if len(scopes) > 1:
                shown["scopes"] = list(scopes)
        return shown
