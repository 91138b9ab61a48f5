"""The retrieval audit: what each principal searched or recalled, and whether it found
anything. Records are buffered in memory and written by the upkeep worker, so reads never
take the write lock; ``flush`` writes them at once (close and the ``audit`` verb call it)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from typing import Any

from ..core.clock import now_iso
from ..store import audit_filters, audit_found, audit_sweep, audit_words
from ..store.base import Row, Store, Tx, groups, marks, rows_by_id
from ..store.scope import EVERY_TENANT, scoped
from .clock import to_iso
from .forget_counts import FORGETS as FORGETS
from .forget_counts import confined_forgets, count_forget
from .forget_counts import forgets as forgets
from .forget_counts import scope_forgets as scope_forgets
from .items import MAIL, confinement, reach, visible
from .results import AuditRecord
from .secrets import redact, redact_call

DEFAULT_RETENTION_DAYS = 90
PRUNE_EVERY_SECONDS = 3600.0
MIN_SCRUB_CHARS = 3  # shorter texts would match nearly every record
_PER_STATEMENT = 500  # ids or words a statement


Seen = tuple[int, dict[str, int]]
"""What a log had seen of a tenant's forgets: the count, and the count of each scope."""
_READ_SEEN: ContextVar[Seen | None] = ContextVar("audit_read_seen", default=None)


class AuditLog:
    """The records of this process's reads, buffered until the upkeep writes them.

    A forget writes this log's buffer before it scrubs, but another process's buffer (or
    another handle's on the same file) it cannot reach: a search made there just before the
    forget reached the file after the scrub, quoting what was forgotten. So each tenant's
    forgets are counted, each record keeps the count of its tenant's forgets this log had seen
    when its read began (:meth:`reading`), and a flush that finds the count moved on drops the
    records taken before: they may quote what a forget erased, and nothing here can tell (the
    forgotten names are gone). Too many, never too few: what is dropped is what a log took
    between its last flush and the flush that finds another process's forget of the same
    tenant (decision 0085); for a forget by a caller confined to scopes, what it took in
    those scopes only (0139, :func:`_current`)."""

    def __init__(self) -> None:
        self._pending: list[tuple[Any, ...]] = []
        # Two locks: ``_lock`` guards the buffer and the counts (held for microseconds), and
        # ``_flushing`` is held by a flush until its records are committed. A record taken
        # while the upkeep's flush waited for the write lock and the durable commit waited
        # with it (decision 0190).
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._next_prune = 0.0
        self._sweep_owed = True  # records emptied by a process that closed before its sweep
        self._forgets_seen: dict[str, int] = {}
        # Each tenant's dict is replaced, never changed: a read keeps the one it began with.
        self._scopes_seen: dict[str, dict[str, int]] = {}
        self.dropped = 0  # records taken before another process's forget, never written

    def start(self, store: Store) -> None:
        """Take every tenant's count of forgets (at open): a record is compared with it."""
        with scoped(EVERY_TENANT), store.read() as tx:
            counted, by_scope = forgets(tx), scope_forgets(tx)
        with self._lock:
            self._saw(counted, by_scope)

    def _saw(self, counted: dict[str, int], by_scope: dict[tuple[str, str], int]) -> None:
        """Counts of forgets read from the store (they only grow); the lock is held."""
        for tenant, count in counted.items():
            self._forgets_seen[tenant] = max(self._forgets_seen.get(tenant, 0), count)
        for (tenant, scope), count in by_scope.items():
            seen = self._scopes_seen.get(tenant, {})
            if count > seen.get(scope, 0):
                self._scopes_seen[tenant] = {**seen, scope: count}

    def _seen(self, tenant: str) -> Seen:
        return self._forgets_seen.get(tenant, 0), self._scopes_seen.get(tenant, {})

    @contextlib.contextmanager
    def reading(self, tenant: str) -> Iterator[None]:
        """A read of ``tenant``'s memory: the records it takes keep the count seen *before*
        it began. Taken when it records, a search whose read began before a forget committed
        was kept, with the forgotten name and items in it (the review of 0085)."""
        token = _READ_SEEN.set(self._seen(tenant))
        try:
            yield
        finally:
            _READ_SEEN.reset(token)

    def forgot(
        self, tenant: str, count: int, by_scope: dict[tuple[str, str], int] | None = None
    ) -> None:
        """This log's forget of ``tenant`` committed, with this log written first: the reads
        that begin from now on began after it. ``by_scope``: the counts of the scopes a
        confined forget counted (:func:`scope_forgets`)."""
        with self._lock:
            self._saw({tenant: count}, by_scope or {})

    def record(
        self,
        *,
        tenant: str,
        principal: str,
        verb: str,
        query: str | None,
        filters: dict[str, Any],
        returned: list[int],
    ) -> None:
        # Queries are written to disk too: a credential pasted into one is kept only redacted.
        row = (
            tenant,
            principal,
            verb,
            filters.get("scope"),
            # No store keeps a NUL as text (PostgreSQL refuses it): one would make every later
            # flush fail, so it is written as U+FFFD, as undecodable text is shown.
            None if query is None else redact(query).text.replace("\x00", "\ufffd"),
            # Characters as themselves: a forget finds a name in them in any case (escaped, é and
            # É differ; the records written escaped were rewritten by m037, decision 0075).
            _filters_text(filters),
            json.dumps(returned),
            int(bool(returned)),
            now_iso(),
        )
        began = _READ_SEEN.get()
        scopes = tuple(audit_sweep.scopes_of(row[3], row[5]))
        with self._lock:
            seen = self._seen(tenant) if began is None else began
            self._pending.append((*row, seen, scopes))

    def __len__(self) -> int:
        return len(self._pending)

    def owe_sweep(self) -> None:
        """A forget committed: it may have emptied records for :meth:`sweep`."""
        self._sweep_owed = True

    def sweep(self, store: Store) -> int:
        """Delete a batch of the records forgets emptied (``store/audit_sweep.py``), once a
        forget was made (or the memory opened: a process may have closed before its sweep);
        how many. The pages it wrote are then folded into the file as far as that needs no
        wait (``Store.fold_log``): the next forget folds the log before it answers, and would
        write them itself.

        Not part of :meth:`flush`: a forget flushes the buffer first, and would sweep the
        records an earlier forget emptied before it answers."""
        if not self._sweep_owed:
            return 0
        # Cleared first: a forget committed while this sweep runs owes the next one.
        self._sweep_owed = False
        batch = audit_sweep.SWEEP_BATCH
        try:
            with scoped(EVERY_TENANT):
                with store.read() as tx:  # most forgets empty none: no write for them
                    if not audit_sweep.waiting(tx):
                        return 0
                with store.write() as tx:
                    swept = audit_sweep.sweep(tx, batch)
        except BaseException:
            self._sweep_owed = True  # the store was busy or closing: the next round tries again
            raise
        if swept == batch:
            self._sweep_owed = True
        if swept:
            store.fold_log()
        return swept

    def flush(self, store: Store) -> int:
        """Write the buffered records (and, now and then, drop those past their retention).
        A flush takes the buffer and holds ``_flushing`` until its records are committed, so
        a reader that flushes first always sees every record taken before it: a flush under
        way is waited for. Records taken meanwhile wait in a new buffer; a failed write puts
        its records back ahead of them."""
        with self._flushing:
            taken: list[tuple[Any, ...]] = []
            # Taken inside the try: a Ctrl-C between the take and the try lost the records.
            try:
                with self._lock:
                    moment = time.monotonic()
                    prune = moment >= self._next_prune
                    if not self._pending and not prune:
                        return 0
                    taken, self._pending = self._pending, []
                kept, counted, by_scope = _commit(store, taken, prune)
            except BaseException:
                with self._lock:
                    self._pending = taken + self._pending
                raise
            with self._lock:
                if prune:
                    self._next_prune = moment + PRUNE_EVERY_SECONDS
                self.dropped += len(taken) - len(kept)
                self._saw(counted, by_scope)
            return len(kept)


def _commit(
    store: Store, taken: list[tuple[Any, ...]], prune: bool
) -> tuple[list[tuple[Any, ...]], dict[str, int], dict[tuple[str, str], int]]:
    """Commit the records of ``taken`` taken after every forget that could scrub them;
    those written, and the counts of forgets read."""
    # The buffer holds every tenant's records, whichever call flushes it.
    with scoped(EVERY_TENANT), store.write() as tx:
        # Read under the write lock, which a forget holds until it commits.
        tenants = {row[0] for row in taken}
        counted, by_scope = forgets(tx, tenants), confined_forgets(tx, tenants)
        current = [row for row in taken if _current(row, counted, by_scope)]
        gone = _gone(tx, [row for row in current if _confined_since(row, by_scope)])
        kept = [row[:-2] for row in current if not gone & set(json.loads(row[6]))]
        words: list[tuple[Any, ...]] = []
        # On SQLite since m051 the record's insert trigger indexes its ids (0192).
        rows_per_item = not audit_found.in_index(tx)
        for row in kept:
            audit_id = tx.scalar(
                "INSERT INTO retrieval_audit (tenant, principal, verb, scope, query,"
                " filters, returned, found, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " RETURNING id",
                row,
            )
            if rows_per_item:
                audit_found.write_rows(tx, row[0], audit_id, json.loads(row[6]))
            words += audit_words.word_rows(row[0], audit_id, row[4], row[5])
        # At an older schema (a restore's, a test's) the step writes them when it runs.
        if words and audit_words.kept(tx):
            audit_words.insert(tx, words)
        if prune:
            prune_expired(tx)
    return kept, counted, by_scope


def _filters_text(filters: dict[str, Any]) -> str:
    """A record's filters as kept: their text redacted where that still reads as the same
    scopes, else each text redacted first. Redacted as text alone, a secret's redaction could
    cut through the quotes (``api_key="..."`` in a tag): the filters no longer read, and a
    search over a and b was taken for one in a alone, which a forget confined to a emptied
    (0139). Most filters hold nothing to redact, and are spelled once."""
    spelled = audit_filters.spelled(filters)
    whole = redact(spelled).text
    if whole == spelled or _same_scopes(whole, filters):
        return whole
    spelled = audit_filters.spelled(redact_call(filters))
    whole = redact(spelled).text
    return whole if _same_scopes(whole, json.loads(spelled)) else spelled


def _same_scopes(text: str, filters: dict[str, Any]) -> bool:
    """Whether ``text`` reads as filters naming the scopes ``filters`` name."""
    try:
        read = json.loads(text)
    except ValueError:
        return False
    return isinstance(read, dict) and all(
        read.get(k) == filters.get(k) for k in ("scope", "scopes")
    )


def _current(
    row: tuple[Any, ...], counted: dict[str, int], by_scope: dict[tuple[str, str], int]
) -> bool:
    """Whether a buffered record was taken after every forget that could have scrubbed it:
    the tenant's unconfined forgets, and the confined forgets that reached each of its scopes.
    A confined forget scrubs only the records whose every scope it reaches (0139), so one
    whose scopes were not all reached again since is not its business: a token limited to
    project:a, forgetting in a loop, made other processes drop every record of the tenant.
    Too many still, never too few: two forgets confined to a and to b drop a search over both.
    """
    tenant, (seen, seen_scopes), scopes = row[0], row[-2], row[-1]
    if seen < counted.get(tenant, 0):
        return False
    if not scopes or any(s is None for s in scopes):
        return True  # an all-scope read: no confined forget reaches it
    return not all(by_scope.get((tenant, s), 0) > seen_scopes.get(s, 0) for s in scopes)


def _confined_since(row: tuple[Any, ...], by_scope: dict[tuple[str, str], int]) -> bool:
    """Whether a buffered record that returned items was taken before a confined forget, in
    any scope, committed: what that forget erased may be among them.

    Not an ``about``: it returns entities and facts beside passages, ids that are no item's
    (each one would read as gone), and it keeps to one scope, whose count :func:`_current`
    compares: a forget that did not reach it erased none of its passages."""
    tenant, (_, seen_scopes) = row[0], row[-2]
    return (
        row[2] != "about"
        and row[6] != "[]"
        and any(
            count > seen_scopes.get(scope, 0)
            for (of, scope), count in by_scope.items()
            if of == tenant
        )
    )


def _gone(tx: Tx, rows: list[tuple[Any, ...]]) -> set[int]:
    """The items ``rows`` returned that memory no longer holds (ids are never reused).

    A record that returned a forgotten item goes wherever it was made (0139), and a confined
    forget moves no count of a search over every scope, or over more scopes than it reached:
    the other process wrote such a search, the erased item's id in it, after the forget."""
    returned = sorted({item for row in rows for item in json.loads(row[6])})
    held = {
        int(row["id"])
        for part in groups(returned, _PER_STATEMENT)
        for row in tx.all(
            f"SELECT id FROM items /* every tenant */ WHERE id IN ({marks(part)})", part
        )
    }
    return set(returned) - held


def prune_expired(tx: Tx, now: datetime | None = None) -> int:
    """Drop audit records older than their tenant's retention (``audit_retention_days``,
    default 90), except those a forget emptied, which are the sweep's; how many.

    The sweep, once it has deleted the last of them, merges the audit's index of ids, which
    takes their ids out of its pages (``store/audit_found.py``). Pruned first (a round prunes
    before it sweeps), they left the sweep nothing to delete, and the merge never came."""
    moment = now or datetime.now(UTC)
    custom = {
        row["tenant"]: int(json.loads(row["value"]))
        for row in tx.all(
            "SELECT tenant, value FROM settings /* every tenant */"
            " WHERE name = 'audit_retention_days'"
        )
    }
    removed, live = 0, f" AND {audit_sweep.LIVE}" if audit_sweep.applied(tx) else ""
    for tenant, days in custom.items():
        removed += tx.execute(
            f"DELETE FROM retrieval_audit WHERE tenant = ? AND created_at < ?{live}",
            (tenant, to_iso(moment - timedelta(days=days))),
        )
    default_cutoff = to_iso(moment - timedelta(days=DEFAULT_RETENTION_DAYS))
    for tenant in _audited_tenants(tx):
        if tenant not in custom:
            removed += tx.execute(
                f"DELETE FROM retrieval_audit WHERE tenant = ? AND created_at < ?{live}",
                (tenant, default_cutoff),
            )
    return removed


def _audited_tenants(tx: Tx) -> list[str]:
    """The tenants with audit records, found by hopping along the (tenant, created_at) index
    (one lookup per tenant) rather than reading every record: pruning runs under the write lock.
    """
    rows = tx.all(
        "/* every tenant */ WITH RECURSIVE hop(tenant) AS ("
        " SELECT min(tenant) FROM retrieval_audit"
        " UNION ALL SELECT (SELECT min(tenant) FROM retrieval_audit WHERE tenant > hop.tenant)"
        " FROM hop WHERE hop.tenant IS NOT NULL)"
        " SELECT tenant FROM hop WHERE tenant IS NOT NULL"
    )
    return [row["tenant"] for row in rows]


def scrub(
    tx: Tx,
    tenant: str,
    *,
    items: Iterable[int] = (),
    texts: Iterable[str] = (),
    forgotten: Iterable[str] = (),
) -> int:
    """Forgetting: drop the audit records that returned any of ``items``, whose query or
    filters hold any of ``texts`` (the forgotten names and values, any case), or that ask for
    a word of the ``forgotten`` text that memory no longer holds anywhere; how many. A dropped
    record is emptied now and deleted by the upkeep later (``store/audit_sweep.py``).

    A forget by a caller confined to scopes (:func:`confinement`) drops for the last two reasons
    only the records whose every scope it reaches, its own searches among them: the others
    are searches it could neither make nor read, and a token that saved and erased a note
    named "Zorblax" emptied every scope's searches for it, the owner's too (a security
    review). A record that returned a forgotten item goes wherever it was made: it holds the
    item's trace (decision 0139)."""
    within = confinement()
    count_forget(tx, tenant, within)
    emptying = audit_sweep.applied(tx)
    removed = _scrub_words(tx, tenant, forgotten, emptying, within)
    returned = sorted(set(items))
    for part in groups(returned, _PER_STATEMENT):
        condition, params = audit_found.returned_any(tx, tenant, part)
        removed += audit_sweep.drop(tx, tenant, condition, params, emptying=emptying)
    if emptying:
        audit_found.drop_rows(tx, tenant, returned)
    kept = [t.strip() for t in texts if t and len(t.strip()) >= MIN_SCRUB_CHARS]
    # On SQLite "Zola" and "ZOLA" make one scan. On PostgreSQL each spelling makes its own, as
    # only the server knows how it lowers them (a forget names a spelling or two).
    for fold, compared in {_folding(tx.dialect, text) for text in kept}:
        removed += audit_filters.drop_quoting(
            tx, tenant, fold, compared, emptying=emptying, within=within
        )
    return removed


def _folding(dialect: str, text: str) -> tuple[str, str]:
    """How the audit records are folded to look for ``text`` in any case (the SQL function,
    none for LIKE alone), and the text as they are compared with it.

    PostgreSQL: LIKE keeps case, over ``lower()`` of both sides, the pattern's lowered by the
    server too: Python lowers some letters otherwise (a final sigma, a dotted capital I), and
    a name written in the very case of a record was missed (0075). SQLite: LIKE ignores ASCII
    case and its ``lower()`` folds nothing else, so LIKE alone for an ASCII text (``lower()``
    only copied each record's texts: 40% of the scan); beyond ASCII, which neither folds,
    Python's case folding of each record and of the text (decision 0074)."""
    if dialect != "sqlite":
        return "lower", text
    if text.isascii():
        return "", text.lower()
    return "recuerdo_fold", text.casefold()


def _scrub_words(
    tx: Tx,
    tenant: str,
    forgotten: Iterable[str],
    emptying: bool,
    within: Sequence[str] | None,
) -> int:
    """Drop the records that asked for a word (four letters or more) of the ``forgotten`` text
    that no stored passage of the tenant holds any more: such a query was about what was
    forgotten. ``within``: only the records within these scopes (:func:`scrub`).

    The forgotten words are looked up among the words the records asked for, kept beside them
    (``store/audit_words.py``), and only those some record asked for are looked up in the
    words index, every one of them, however long the text: a forget's text can hold thousands
    of words (a document, a note's history) and the audit seldom names more than a few
    (docs/decisions/0064). Reading every record instead made a forget's cost grow with the
    audit (docs/decisions/0068)."""
    # A store opened at an older schema (a restore's, a test's); the sweep's step (``emptying``)
    # comes after the words' one, so at its schema the words are kept.
    if not emptying and not audit_words.kept(tx):
        return _scrub_words_read(tx, tenant, forgotten, within)
    if tx.scalar(f"SELECT 1 FROM {audit_words.TABLE} WHERE tenant = ? LIMIT 1", (tenant,)) is None:
        return 0
    words = {audit_words.digest_of(word): word for word in _words_of(forgotten)}
    asked = {words[digest] for digest in audit_words.asked_among(tx, tenant, sorted(words))}
    if not asked:
        return 0
    vanished = asked - tx.text.words_held(tenant, sorted(asked))
    removed = 0
    for part in groups(sorted(map(audit_words.digest_of, vanished)), _PER_STATEMENT):
        removed += audit_sweep.drop(
            tx,
            tenant,
            f"id IN (SELECT audit_id FROM {audit_words.TABLE} WHERE tenant = ?"
            f" AND digest IN ({marks(part)}))",
            (tenant, *part),
            emptying=emptying,
            within=within,
        )
    return removed


def _scrub_words_read(
    tx: Tx, tenant: str, forgotten: Iterable[str], within: Sequence[str] | None
) -> int:
    """:func:`_scrub_words` where the records' words are not kept: each record is read."""
    allowed = None if within is None else set(within)
    asked = {
        row["id"]: audit_words.asked_words(row["query"], row["filters"])
        for row in tx.iterate(
            "SELECT id, scope, query, filters FROM retrieval_audit WHERE tenant = ?", (tenant,)
        )
        if allowed is None or _within(row, allowed)
    }
    words = _words_of(forgotten) & set().union(*asked.values())
    if not words:
        return 0
    vanished = words - tx.text.words_held(tenant, sorted(words))
    doomed = [audit_id for audit_id, named in asked.items() if named & vanished]
    for part in groups(doomed, _PER_STATEMENT):
        tx.execute(
            f"DELETE FROM retrieval_audit WHERE tenant = ? AND id IN ({marks(part)})",
            (tenant, *part),
        )
    return len(doomed)


def _words_of(texts: Iterable[str]) -> set[str]:
    words: set[str] = set()
    for text in texts:
        words |= audit_words.words_of(text or "")
    return words


def read(
    tx: Tx,
    tenant: str,
    *,
    viewer: str | None,
    scope: str | None,
    since: str | None,
    principal: str | None,
    limit: int,
) -> list[AuditRecord]:
    """The records, newest first. Ids of messages ``viewer`` may not read are left out of
    ``returned`` (someone else's search may have found them)."""
    where, params = ["tenant = ?"], [tenant]
    if scope is not None:
        where.append("scope = ?")
        params.append(scope)
    if since is not None:
        where.append("created_at >= ?")
        params.append(since)
    if principal is not None:
        where.append("principal = ?")
        params.append(principal)
    if audit_sweep.applied(tx):
        where.append(audit_sweep.LIVE)  # emptied by a forget, waiting for the sweep
    # Newest first along the (tenant, created_at) index, which stops at the limit; in id
    # order every record of the tenant was read and sorted first (17.6 ms for 3,250 records).
    rows = _page(tx, " AND ".join(where), params, limit)
    returned = {row["id"]: json.loads(row["returned"]) for row in rows}
    hidden = _hidden(tx, tenant, viewer, {i for ids in returned.values() for i in ids})
    shown = {key: [i for i in ids if i not in hidden] for key, ids in returned.items()}
    return [
        {
            "id": row["id"],
            "principal": row["principal"],
            "verb": row["verb"],
            "scope": row["scope"],
            "query": row["query"],
            "filters": json.loads(row["filters"]),
            "returned": shown[row["id"]],
            # Found is what the viewer is shown: a search that found only messages it may not
            # read said found with nothing returned, telling them apart from no match at all.
            "found": bool(row["found"])
            and (len(shown[row["id"]]) == len(returned[row["id"]]) or bool(shown[row["id"]])),
            "created_at": row["created_at"],
        }
        for row in rows
    ]


def _page(tx: Tx, where: str, params: list[Any], limit: int) -> list[Row]:
    """Up to ``limit`` records, newest first. A caller confined to scopes sees only the records
    whose every scope it reaches: a search over several scopes is filed under its first, and
    its query, filters and ids named the others (the review of 0097). Those are left out as
    the pages are read, so a page left short of them reads on (cut after the ``LIMIT``, a
    confined caller's page came back short, or empty, with more records behind it)."""
    reached = reach()
    allowed = None if reached is None else set(reached)
    kept: list[Row] = []
    after: tuple[str, int] | None = None
    while True:
        older = "" if after is None else " AND (created_at < ? OR (created_at = ? AND id < ?))"
        rows = tx.all(
            f"SELECT * FROM retrieval_audit WHERE {where}{older}"
            " ORDER BY created_at DESC, id DESC LIMIT ?",
            (*params, *(() if after is None else (after[0], *after)), limit),
        )
        kept += [row for row in rows if allowed is None or _within(row, allowed)]
        if allowed is None or len(rows) < limit or len(kept) >= limit:
            return kept[:limit]
        after = (rows[-1]["created_at"], rows[-1]["id"])


def _within(row: Row, allowed: set[str]) -> bool:
    """Whether every scope a record's read named is one of ``allowed``."""
    return set(audit_sweep.scopes_of(row["scope"], row["filters"])) <= allowed


def _hidden(tx: Tx, tenant: str, viewer: str | None, ids: set[int]) -> set[int]:
    """Which of ``ids`` ``viewer`` may not read: messages of conversations it is no member
    of, and for a call confined to scopes, the items of the others."""
    if not ids:
        return set()
    members_only, params = visible("i", viewer)
    only_mail = "" if reach() is not None else f" AND i.item_type = '{MAIL}'"
    found = rows_by_id(
        tx,
        "SELECT i.id FROM items i",
        [i for i in ids if isinstance(i, int)],
        where=f"i.tenant = ?{only_mail} AND NOT {members_only}",
        params=[tenant, *params],
    )
    return set(found)
