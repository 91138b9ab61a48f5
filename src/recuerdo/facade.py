"""What every family's facade builds on: :class:`MemoryBase` and the :func:`verb` decorator.

A verb is written once, as a method of a family's facade mixin. ``@verb`` records what the doors
need beside the signature (read or write, the errors it may raise, how the CLI spells it); the
description and the parameter docs are the method's docstring (a first part for a model choosing
the tool, then an ``Args:`` section). :mod:`recuerdo.verbs` collects the decorated methods into
the verb table.

Every call through ``@verb`` passes two guards in one place: code inside :func:`recuerdo.sandbox`
is refused, and string arguments (recursively, inside lists and objects) go through the
secret guard before the method sees it, so no family can forget it: a write's, so that no
credential is stored; the few a read names stored values by (``guarded``), so that it finds
them as they were stored.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar, get_type_hints

from .core import audit
from .core.items import check_reach, confinement, confining, reach, reaching
from .core.secrets import redact_call
from .core.text import check_text, checked_label
from .errors import CapabilityNotGranted, InvalidInput, RecuerdoError
from .index.vectors import collect_orphans, pending
from .security import caps
from .store.scope import EVERY_TENANT, scoped

if TYPE_CHECKING:
    from .core.audit import AuditLog
    from .core.upkeep import Upkeep
    from .index.embed import Embedder
    from .index.meaning import Meaning
    from .store.base import Store, Tx

P = ParamSpec("P")
R = TypeVar("R")
Mode = Literal["read", "write"]
SETTLE_CHUNKS = 256
SETTLE_SECONDS = 0.3


@dataclass(frozen=True)
class VerbSpec:
    """What ``@verb`` records on a method (the table adds the name, family and types)."""

    mode: Mode
    errors: tuple[type[RecuerdoError], ...] = ()
    arguments: tuple[str, ...] = ()
    """Parameters the CLI takes positionally, in order."""
    cli_names: Mapping[str, str] = field(default_factory=dict)
    """CLI option spellings that differ from the parameter name (``tags`` -> ``--tag``)."""
    enums: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    destructive: bool = False
    cli_batch: str | None = None
    """A parameter the CLI accepts many times, calling the verb once for each (with progress)."""
    name: str | None = None
    """The verb's name when it differs from the method's (``import`` is a Python keyword)."""
    raw: tuple[str, ...] = ()
    """Arguments the secret guard leaves as they are (bytes in base64, paths, ids)."""
    creates: bool = True
    """Whether a write makes its memory on first use. A write that only keeps a log of a check
    (``check_rules``) does not: on a mistyped memory it made one, found no rule, and passed."""
    guarded: tuple[str, ...] = ()
    """A read's arguments that name what the writes stored redacted (a plan's task, a tag):
    the guard rewrites them as it rewrote the writes'. A read's other arguments are left as
    they are: agent names, principals and paths are never redacted where they are stored."""
    paths: Mapping[str, str] = field(default_factory=dict)
    """Parameters naming a file on the machine that runs the verb, each with the parameter that
    carries the file's bytes (base64) instead: remote doors never take the path."""
    fails: Callable[[Any], bool] | None = None
    """Says of a result that the command failed: the CLI prints it, then exits 1 (a must-rule
    violated, for a script's ``&&``)."""
    unscoped: bool = False
    """The verb reaches nothing kept in a scope (a principal's own addresses): a token limited
    to scopes may call it. Every other verb takes a ``scope`` the token names, or is closed to
    it."""
    sent: Callable[[Mapping[str, Any]], None] | None = None
    """Checks of the arguments as the caller sent them, before the secret guard rewrites them
    (a limit stated to the caller: a marker is longer or shorter than what it replaced)."""
    keeps_to_scope: bool = False
    """The verb reaches its item by id (or by axis), and its optional ``scope`` keeps the call
    to that scope: the call reaches only that scope's items (``core.items.reaching``), so an
    item kept in another is not found. The method never sees ``scope``. A token limited to
    scopes names one of them so (decision 0130: the lens of such a token)."""


def verb(
    mode: Mode,
    *,
    errors: tuple[type[RecuerdoError], ...] = (),
    arguments: tuple[str, ...] = (),
    cli_names: Mapping[str, str] | None = None,
    enums: Mapping[str, tuple[str, ...]] | None = None,
    destructive: bool = False,
    cli_batch: str | None = None,
    name: str | None = None,
    raw: tuple[str, ...] = (),
    guarded: tuple[str, ...] = (),
    creates: bool = True,
    paths: Mapping[str, str] | None = None,
    fails: Callable[[Any], bool] | None = None,
    unscoped: bool = False,
    sent: Callable[[Mapping[str, Any]], None] | None = None,
    keeps_to_scope: bool = False,
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Declare a facade method as a verb (see the module docstring)."""
    spec = VerbSpec(
        mode=mode,
        errors=errors,
        arguments=arguments,
        cli_names=dict(cli_names or {}),
        enums=dict(enums or {}),
        destructive=destructive,
        cli_batch=cli_batch,
        name=name,
        raw=raw,
        guarded=guarded,
        creates=creates,
        paths=dict(paths or {}),
        fails=fails,
        unscoped=unscoped,
        sent=sent,
        keeps_to_scope=keeps_to_scope,
    )

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(method)
        by_name = _binder(signature)
        guard_secrets = mode == "write"
        takes_scope = "scope" in signature.parameters
        if keeps_to_scope and not takes_scope:
            raise TypeError(f"{method.__name__} keeps to a scope and takes none")
        run = _without_scope(method) if keeps_to_scope else method

        @functools.wraps(method)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if caps.in_sandbox():
                raise CapabilityNotGranted(
                    "Capability not granted: memory (code inside sandbox() may not reach memory)"
                )
            arguments = by_name(args, kwargs)
            given = {k: v for k, v in arguments.items() if k != "self"}
            check_text(given, reading=mode == "read")
            if sent is not None:
                sent(given)
            # The call's transactions are for this handle's tenant (row-level security).
            tenant = getattr(args[0], "tenant", EVERY_TENANT)
            scopes = getattr(args[0], "scopes", None)
            outer = reach()
            if not unscoped and outer is None:
                # A confined view keeps the doors' rule itself, checked on what its caller
                # asked; a verb another verb calls (mirror_push's get) runs inside that call's
                # reach, on its terms.
                check_reach(scopes, takes_scope, given.get("scope"))
            # A verb another verb calls keeps to that call's reach: set anew from the handle,
            # it undid the scope an outer keeps_to_scope call was kept to (an owner's call
            # kept to project:a read every scope in the verbs it called).
            reached = scopes if outer is None else _within(outer, scopes)
            limited = confinement()
            confined = scopes if limited is None else _within(limited, scopes)
            if keeps_to_scope and given.get("scope") is not None:
                # Checked inside another call too, against what that call reaches: a scope
                # named here narrows the reach, never widens it.
                check_reach(reached, True, given["scope"])
                reached = (checked_label(given["scope"], "scope"),)
            with scoped(tenant), reaching(reached), confining(confined):
                if guard_secrets:
                    redacted: dict[str, list[str]] = {}
                    arguments.update(
                        redact_call({k: v for k, v in given.items() if k not in raw}, redacted)
                    )
                    if "scope" in redacted:
                        # Stored redacted, it wrote into "secret(API)", every such scope's one
                        # bucket, out of a token's reach: it could not erase what it wrote.
                        raise InvalidInput(
                            "a scope cannot be named like a credential: name it otherwise"
                        )
                    result = run(**arguments)  # type: ignore[call-arg]
                    if isinstance(result, dict) and _reports_redactions(method):
                        result["redacted"] = _reported(redacted, result.get("redacted"))
                    return result
                # A read names what the writes stored redacted (a task, a tag): unredacted, a
                # task whose name held a credential was never found again.
                if guarded:
                    arguments.update(redact_call({k: given[k] for k in guarded if k in given}))
                if (log := getattr(args[0], "_audit", None)) is not None:
                    with log.reading(tenant):  # what it audits, counted from before it reads
                        return run(**arguments)  # type: ignore[call-arg]
                return run(**arguments)  # type: ignore[call-arg]

        wrapper.__verb__ = spec  # type: ignore[attr-defined]
        return wrapper

    return decorate


def _within(outer: tuple[str, ...], scopes: Sequence[str] | None) -> tuple[str, ...]:
    """The scopes both a running call and the handle a verb inside it is called on reach."""
    return outer if scopes is None else tuple(s for s in outer if s in scopes)


def _without_scope(method: Callable[..., R]) -> Callable[..., R]:
    """``method`` called without its ``scope``: the wrapper kept the call to it."""

    def run(**arguments: Any) -> R:
        arguments.pop("scope", None)
        return method(**arguments)

    return run


def _reported(
    arguments: Mapping[str, list[str]], joined: Mapping[str, list[str]] | None
) -> dict[str, list[str]]:
    """What the guard replaced in the arguments, with what the verb replaced in the text they
    joined (an edit's note as a whole), each argument by the name the doors publish (``from``,
    not ``from_``)."""
    reported: dict[str, list[str]] = {}
    for found in (arguments, joined or {}):
        for name, kinds in found.items():
            named = reported.setdefault(name.removesuffix("_"), [])
            named.extend(kind for kind in kinds if kind not in named)
    return reported


@functools.cache
def _reports_redactions(method: Callable[..., Any]) -> bool:
    """Whether a write verb's reply declares ``redacted``: the guard then puts in it what it
    replaced, by argument (every reply, empty when nothing was), so a writer learns that its
    text was not stored as given. The type is read at the first call: the result types are
    named as strings until every module is imported."""
    result = get_type_hints(method).get("return")
    return "redacted" in getattr(result, "__annotations__", {})


def _binder(
    signature: inspect.Signature,
) -> Callable[[tuple[Any, ...], Mapping[str, Any]], dict[str, Any]]:
    """A function giving a call's arguments by name, as ``signature.bind`` does (given ones
    only, no defaults). A verb's parameters are plain (no ``*args``, ``**kwargs`` or
    positional-only ones), so a call that names each at most once and gives every required
    one is mapped directly: ``bind`` took a tenth of the time of a whole note update. Any other
    call goes through ``bind``, which raises the usual ``TypeError``."""
    parameters = list(signature.parameters.values())
    plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    if any(parameter.kind not in plain for parameter in parameters):
        return lambda args, kwargs: dict(signature.bind(*args, **kwargs).arguments)
    names = [p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    order = [p.name for p in parameters]
    known = frozenset(order)
    required = frozenset(p.name for p in parameters if p.default is inspect.Parameter.empty)

    def by_name(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        if len(args) <= len(names):
            given = dict(zip(names, args, strict=False))
            if known.issuperset(kwargs) and given.keys().isdisjoint(kwargs):
                given.update(kwargs)
                if required <= given.keys():
                    # In the signature's order, as bind gives them: a refusal names the first
                    # bad argument of the signature, whatever order the call named them in.
                    return {name: given[name] for name in order if name in given}
        return dict(signature.bind(*args, **kwargs).arguments)

    return by_name


class MemoryBase:
    """The state every facade mixin reads: the store and what each open memory owns."""

    _store: Store
    _upkeep: Upkeep
    _audit: AuditLog
    _meaning: Meaning
    name: str
    tenant: str
    source: str
    is_agent: bool
    owner: bool
    """Whether this handle acts for the memory's owner (a local call), not for a door's token
    holder: only the owner may write what names other principals (imported messages)."""
    scopes: tuple[str, ...] | None
    """The scopes this handle reads items of (a door's token limited to scopes), or None for
    every scope of its tenant."""

    @property
    def principal(self) -> str:
        """Who the journal names for this handle's changes (the writer)."""
        return self.source

    @contextlib.contextmanager
    def _write(self, rows: int = 1) -> Iterator[Tx]:
        """The one write path: a write transaction that adds or changes about ``rows`` items
        (0 for writes no index follows: plans, rules, forgetting). Once it commits, the upkeep
        worker is told there is indexing to do (nothing is told if it fails). Vectors it
        deleted leave the saved vector index once it commits."""
        with self._meaning.erasing(), self._store.write() as tx:
            yield tx
        if rows:
            self._store.grew(rows)
            self._upkeep.poke(rows)

    @contextlib.contextmanager
    def _erasing_write(self, rows: int = 0, *, superseded: bool = False) -> Iterator[Tx]:
        """A write that forgets. The audit records still buffered are written first: the scrub
        inside must see every query taken before the forget, or a query naming what is forgotten
        would reach the file after it. Last, the words of the deleted rows leave the full-text
        indexes wherever the index does not remove them on delete (an SQLite older than 3.42);
        with ``superseded``, the words every item's superseded chunks left there too (what
        forgets a name or a passage found in other items asks: ``Tx.purge_deleted_text``).
        The audit records it emptied are deleted by the upkeep's next round."""
        self._audit.flush(self._store)
        with self._write(rows) as tx:
            yield tx
            # The vectors of texts no chunk carries any more go in this write, before the
            # checkpoint that follows it: left to the upkeep, they stayed stored (and in the
            # file's pages) after the forget returned, or after a crash until the next open.
            collect_orphans(tx)
            tx.purge_deleted_text(superseded=superseded)
            # The scrub counted this forget: another process's flush, which takes the write
            # lock this holds until the commit, then drops its records taken before (0085).
            counted = audit.forgets(tx, [self.tenant]).get(self.tenant, 0)
            # A confined caller's forget is counted by the scopes it reaches (0139).
            by_scope = audit.scope_forgets(tx, [(self.tenant, s) for s in confinement() or ()])
        self._audit.forgot(self.tenant, counted, by_scope)
        self._audit.owe_sweep()
        self._upkeep.poke(0)

    def _link_passages(
        self, tx: Tx, tenant: str, scope: str, passages: Sequence[tuple[int, str]]
    ) -> None:
        """Link passages ``(chunk id, text)`` of a scope to the known entities they name, so
        that ``about`` finds them. The knowledge family provides it; a family that stores
        passages without depending on the graph (messages) calls it through the handle."""

    def meaning_state(self, settle: bool = True) -> str:
        """Whether answers use meaning: ``armed``, ``not_armed`` (no model installed) or
        ``queued`` (text waits for its vectors). With ``settle``, a small backlog is embedded
        first (see :meth:`_settle_meaning`), so a read right after a small write says armed."""
        if settle:
            self._settle_meaning()
        with self._store.read() as tx:
            return self._meaning.state(tx)

    def _settle_meaning(self) -> Embedder | None:
        """The model, after embedding a small backlog so that what was just written is found
        by its meaning too: at most ``SETTLE_CHUNKS`` chunks and ``SETTLE_SECONDS`` (the reader
        does the work, ahead of the worker); a larger backlog stays queued rather than making
        the reader wait."""
        embedder = self._meaning.embedder
        if embedder is None:
            return None
        with self._store.read() as tx:
            waiting = pending(tx, embedder.name)
        if 0 < waiting <= SETTLE_CHUNKS and self._meaning.finishes(waiting, SETTLE_SECONDS):
            self._upkeep.settle(limit=SETTLE_CHUNKS * 2, seconds=SETTLE_SECONDS)
        return embedder
