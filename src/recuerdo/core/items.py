"""What every kind of item shares, whichever family wrote it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

from ..errors import CapabilityNotGranted
from ..store.base import Row, Tx

MAIL = "mail"
"""The item type of a message between agents and people (the comms family). Turns of a
conversation transcript (``add_messages``) are ``message`` items, readable by the whole tenant."""


def status_of(row: Row, at: str) -> str:
    """A note past its review date reads as ``needs_review`` wherever it appears."""
    if row["status"] == "active" and row["review_at"] is not None and row["review_at"] <= at:
        return "needs_review"
    return str(row["status"])


_REACH: ContextVar[tuple[str, ...] | None] = ContextVar("recuerdo_reach", default=None)


@contextlib.contextmanager
def reaching(scopes: Sequence[str] | None) -> Iterator[None]:
    """Confine the items a call reads to ``scopes`` (None: every scope of the tenant). The
    ``@verb`` wrapper sets it from the handle: a token limited to scopes names one of them in
    each call, and this keeps the items it reaches by other ways (a context set, a link, an id)
    inside them too (a hunt over the doors)."""
    token = _REACH.set(None if scopes is None else tuple(scopes))
    try:
        yield
    finally:
        _REACH.reset(token)


def reach() -> tuple[str, ...] | None:
    """The scopes the running call may read (None: every one)."""
    return _REACH.get()


_CONFINED: ContextVar[tuple[str, ...] | None] = ContextVar("recuerdo_confined", default=None)


@contextlib.contextmanager
def confining(scopes: Sequence[str] | None) -> Iterator[None]:
    """The running call's caller is limited to ``scopes`` (None: it is not). The ``@verb``
    wrapper sets it beside :func:`reaching`, from the handle."""
    token = _CONFINED.set(None if scopes is None else tuple(scopes))
    try:
        yield
    finally:
        _CONFINED.reset(token)


def confinement() -> tuple[str, ...] | None:
    """The scopes the running call's caller is limited to (None: the owner's or an unlimited
    token's call). Not :func:`reach`: a call that names a scope to keep to
    (``delete(id, scope=...)``) reaches that scope only, whoever makes it, and its caller is
    limited no more for that (decision 0139)."""
    return _CONFINED.get()


def check_reach(scopes: Sequence[str] | None, takes_scope: bool, scope: object) -> None:
    """Refuse a call of a caller confined to ``scopes`` unless it names one of them (each, when
    ``scope`` is a list); a verb that takes no scope is closed to it. The gateway checks a token's
    call with it before it opens the memory, and ``@verb`` checks every call of a confined view:
    a verb called without a scope, or one taking none (``recent()``, ``session_start``,
    ``overview``), read and wrote every scope there (a hunt over what a caller may reach). A
    verb that reaches nothing kept in a scope (``unscoped``) is not checked."""
    if scopes is None:
        return
    asked = list(scope) if isinstance(scope, list | tuple) and scope else [scope]
    if not takes_scope or any(s not in scopes for s in asked):
        raise CapabilityNotGranted(
            f"Capability not granted: this token is limited to scopes {', '.join(scopes)};"
            " name one of them (scope=...)"
        )


def check_whole(scopes: Sequence[str] | None, what: str) -> None:
    """Refuse ``what``, an owner's method that reads or writes every scope (a backup, a
    Markdown import: no verb, so the doors never offer it), to a caller confined to ``scopes``.
    A confined view ran it whole in process: the rule of 0123 was kept by verbs only."""
    if scopes is not None:
        raise CapabilityNotGranted(
            f"Capability not granted: this token is limited to scopes {', '.join(scopes)};"
            f" {what} reaches every scope"
        )


def visible(alias: str, viewer: str | None) -> tuple[str, list[str]]:
    """A condition (and its parameters) on the items table aliased ``alias``: true for the rows
    ``viewer`` may read inside its tenant. A message belongs to the members of its conversation
    only, as a tenant's items belong to the tenant; every read of items applies this beside
    the tenant (no viewer: no message is readable). A call confined to scopes
    (:func:`reaching`) reads their items only."""
    scopes = _REACH.get()
    within = "" if scopes is None else f" AND {alias}.scope IN ({', '.join('?' * len(scopes))})"
    if viewer is None:
        return f"({alias}.item_type <> '{MAIL}'{within})", [*(scopes or ())]
    return (
        f"(({alias}.item_type <> '{MAIL}' OR EXISTS (SELECT 1 FROM comms_inboxes v"
        f" WHERE v.tenant = {alias}.tenant AND v.principal = ?"
        f" AND v.conversation_id = {alias}.session)){within})",
        [viewer, *(scopes or ())],
    )


def readable_mail(tx: Tx, tenant: str, viewer: str | None) -> dict[str, tuple[int, int]]:
    """(messages, their characters) of each scope, of the mail ``viewer`` may read: what the
    tallies of a memory leave out (``store/tallies.py``), since who may read a message depends
    on the reader. Read from the conversations ``viewer`` is a member of (its inboxes), never
    from the tenant's other mail."""
    if viewer is None:
        return {}
    return {
        row["scope"]: (int(row["n"]), int(row["chars"]))
        for row in tx.all(
            "SELECT i.scope, count(*) AS n, coalesce(sum(length(i.content)), 0) AS chars"
            " FROM comms_inboxes v JOIN items i ON i.tenant = v.tenant"
            f" AND i.session = v.conversation_id AND i.item_type = '{MAIL}'"
            " WHERE v.tenant = ? AND v.principal = ? AND i.status <> 'deleted' GROUP BY i.scope",
            (tenant, viewer),
        )
    }


def hidden_mail_chunks(tx: Tx, tenant: str, viewer: str | None, above: int = 0) -> tuple[int, int]:
    """How many passages belong to messages ``viewer`` may not read, and how many of them have
    an id above ``above``: what the counts of the tenant's chunks leave out for it, or they
    would tell a non-member that messages it cannot see were stored (``index_status``). One
    statement: the messages are read once for both."""
    readable, params = visible("i", viewer)
    # From the tenant's messages (their partial index) to their chunks: joined the other way,
    # the planner read every chunk above ``above`` to find the few of messages, and
    # ``index_status`` (polled while a backlog clears) took 9.3 ms instead of 1.0 over 50,000
    # entries and no message at all.
    row = tx.one(
        "SELECT count(*) AS hidden, coalesce(sum(CASE WHEN c.id > ? THEN 1 ELSE 0 END), 0)"
        " AS above FROM chunks c WHERE c.tenant = ? AND c.item_id IN"
        f" (SELECT i.id FROM items i WHERE i.tenant = ? AND i.item_type = '{MAIL}'"
        f" AND NOT {readable})",
        (above, tenant, tenant, *params),
    )
    assert row is not None
    return int(row["hidden"]), int(row["above"])
