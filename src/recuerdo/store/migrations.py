"""Schema migrations: ordered, named steps, each recorded in ``_migrations`` once applied.

Every backend keeps its own list of steps under the same names, in its own SQL (a schema is
"at m008" on SQLite and on PostgreSQL alike). A step is never edited after it has shipped; a
change to the schema is a new step appended to the list. Steps run inside the opening write
transaction, so two processes opening a new store at once cannot both apply them.

The schema's version is the number of steps applied. A store that records a step this version
does not know, or a higher version, was written by a newer recuerdo: it is refused
(``store_too_new``) before anything is written to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..errors import StoreTooNew
from .base import Tx

Migration = Callable[[Tx], None]


@dataclass
class Schema:
    """One backend's ordered steps."""

    steps: list[tuple[str, Migration]] = field(default_factory=list)

    def step(self, fn: Migration) -> Migration:
        """Register ``fn`` as the next step, named after the function."""
        self.steps.append((fn.__name__, fn))
        return fn

    @property
    def version(self) -> int:
        return len(self.steps)

    def names(self) -> list[str]:
        return [name for name, _ in self.steps]


def check_not_newer(schema: Schema, applied: list[str], version: int, where: str) -> None:
    """Refuse a store written by a newer recuerdo (``version`` as the store records it)."""
    known = set(schema.names())
    unknown = [name for name in applied if name not in known]
    if unknown or version > schema.version:
        store_version = max(version, len(applied))
        raise StoreTooNew(
            f"the memory at {where} was written by a newer recuerdo: its schema is at version "
            f"{store_version}"
            + (f" (steps this version does not know: {', '.join(unknown)})" if unknown else "")
            + f", and this recuerdo knows version {schema.version}. Upgrade recuerdo to open "
            "it; nothing was written to it.",
            store_version=store_version,
            supported_version=schema.version,
        )


def has_step(tx: Tx, name: str) -> bool:
    """Whether the store's schema has taken step ``name``: a later step's data may be absent
    from a store opened at an older schema (a restore's, before it takes the later steps; a
    test's), and code that reads it keeps the older way there.

    A step once taken stays taken, so the steps a store's opening committed
    (``tx.steps_taken``, where the transaction has them) answer without a query: every
    note write asked, a round trip each on PostgreSQL (decision 0170). Any other step is
    looked up, so a store at an older step still says no."""
    if name in getattr(tx, "steps_taken", ()):
        return True
    return tx.scalar("SELECT 1 FROM _migrations WHERE name = ?", (name,)) is not None


def steps_after_opening(schema: Schema, applied: list[str]) -> frozenset[str]:
    """The steps a store holds once an opening that found ``applied`` recorded has committed
    (it applies every step of ``schema`` not yet recorded)."""
    return frozenset(applied) | frozenset(schema.names())


def stamp() -> str:
    """Now, in the store's text form (the clock's format: UTC with microseconds)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def apply(tx: Tx, schema: Schema, applied: list[str], stamp: str) -> list[str]:
    """Apply every step not yet recorded; return the names applied now."""
    done = set(applied)
    ran = []
    for name, fn in schema.steps:
        if name in done:
            continue
        fn(tx)
        tx.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", (name, stamp))
        ran.append(name)
    return ran
