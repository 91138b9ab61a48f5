"""Entries: quick facts with a fixed category, tags and the writer's namespace (Synsema family).

Functions here take an open transaction and plain values; :class:`~recuerdo.engine.Memory`
decides tenant, writer and defaults.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from json.encoder import encode_basestring
from typing import Any

from pydantic_core import from_json

from ..core import audit, projects
from ..core.clock import now_iso
from ..core.exact import shown
from ..core.items import reach
from ..core.text import check_tags, checked_label, checked_text
from ..errors import InvalidBatch, InvalidCategory, InvalidInput, NotTheWriter, RecuerdoError
from ..model import CATEGORIES, Entry, EntryIn
from ..store import note_projects
from ..store.base import Row, SubstringPart, Tx, any_tag, every_tag, rows_by_id, tagged_ids

DEFAULT_LIMIT = 200
MAX_ENTRY_BYTES = 65_536
MAX_BATCH = 10_000
ALL_SOURCES = "*"
DEFAULT_SCOPE = "default"

_COLUMNS = (
    "items.id, items.category, items.content, items.source, items.tags, items.scope,"
    " items.created_at, items.updated_at"
)
# `more` is counted up to this bound: past it, it means "at least this many". Counting every
# match of a common needle read them all (a third of 100,000 entries: 87-128 ms); this bound keeps
# a cut list at a few ms (docs/decisions/0028-common-words.md).
MORE_COUNT_LIMIT = 1_000
DRIVE_PROBE = 5_000
"""Entries counted under each filter of a listing on SQLite, at most, to choose which of their
indexes drives it (:func:`_driving`)."""


def check_category(category: object) -> str:
    if not isinstance(category, str) or category not in CATEGORIES:
        raise InvalidCategory(
            f"Invalid memory category: {category!r}. Valid categories: {', '.join(CATEGORIES)}"
        )
    return category


def check_scope(scope: object) -> str:
    if scope is None:
        return DEFAULT_SCOPE
    return checked_label(scope, "scope")


MAX_LIMIT = 2**31
"""Past it a limit means every entry (a larger one overflowed the count of what is left)."""


def effective_limit(limit: object) -> int:
    """The spec's limit rule: a missing, negative, zero or non-numeric limit means 200. A number
    in text reads as the number does (``"2.0"`` is 2: it meant 200, so ``--limit 2.0`` on the
    command line returned everything); an infinite one means 200 (it raised OverflowError)."""
    if isinstance(limit, bool) or limit is None:
        return DEFAULT_LIMIT
    try:
        number = float(limit.strip()) if isinstance(limit, str) else limit
        value = int(number)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return DEFAULT_LIMIT
    return min(value, MAX_LIMIT) if value > 0 else DEFAULT_LIMIT


class _Prepared:
    __slots__ = ("category", "content", "scope", "tags")

    def __init__(self, category: str, content: str, tags: list[str], scope: str) -> None:
        self.category, self.content, self.tags, self.scope = category, content, tags, scope


def prepare(category: object, content: object, tags: object, scope: object) -> _Prepared:
    return _Prepared(
        check_category(category),
        checked_text(content, "content", max_bytes=MAX_ENTRY_BYTES),
        check_tags(tags),
        check_scope(scope),
    )


_FIELDS = frozenset(EntryIn.__annotations__)


def prepare_batch(entries: object) -> list[_Prepared]:
    """Validate a whole batch first, so a bad element refuses the batch and stores nothing."""
    if not isinstance(entries, Sequence) or isinstance(entries, str | bytes):
        raise InvalidBatch("entries must be a list of {category, content, tags} objects")
    if len(entries) > MAX_BATCH:
        raise InvalidBatch(f"at most {MAX_BATCH} entries per call, got {len(entries)}")
    prepared = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InvalidBatch(f"entry {index} is not an object", index=index)
        unknown = entry.keys() - _FIELDS
        if unknown:
            named = sorted(map(str, unknown))  # keys of any type (a number raised a TypeError)
            raise InvalidBatch(f"entry {index} has unknown fields: {named}", index=index)
        try:
            prepared.append(
                prepare(
                    entry.get("category"),
                    entry.get("content"),
                    entry.get("tags"),
                    entry.get("scope"),
                )
            )
        except RecuerdoError as exc:
            raise InvalidBatch(
                f"entry {index} refused ({exc.code}): {exc.detail}", index=index, cause=exc.code
            ) from exc
    return prepared


def tags_json(tags: list[str]) -> str:
    """What ``json.dumps(tags, ensure_ascii=False)`` writes for a list of text, built from the
    encoder's own quoting of each tag: ``dumps`` made an encoder a call (its arguments are not
    the defaults), 2 us an entry of a bulk load against 0.4."""
    return "[" + ", ".join(map(encode_basestring, tags)) + "]"


def insert(
    tx: Tx, tenant: str, source: str, entries: Sequence[_Prepared], *, at: str | None = None
) -> list[int]:
    """The entries, written by ``source``, dated ``at`` (an import's) or now."""
    stamp = at or now_iso()
    project = ", project" if note_projects.has_column(tx) else ""
    rows = [
        (
            tenant,
            entry.scope,
            entry.category,
            entry.content,
            tags_json(entry.tags),
            source,
            stamp,
            stamp,
            *([projects.column(entry.tags)] if project else []),
        )
        for entry in entries
    ]
    # What a backend keeps beside an entry's text to find it by case folding, written with
    # the row (PostgreSQL's folded copies, decision 0055: an update after the insert wrote
    # each such row and all its index entries twice).
    copies = tx.substrings.folded_copies([entry.content for entry in entries])
    folded, extra = ("", "") if copies is None else (", folded", ", ?")
    ids = tx.insert_returning_ids(
        "INSERT INTO items (tenant, scope, item_type, category, content, tags, source,"
        f" created_at, updated_at{project}{folded}) VALUES (?, ?, 'entry', ?, ?, ?, ?, ?, ?"
        f"{', ?' if project else ''}{extra})"
        " RETURNING id",
        rows if copies is None else [(*row, copy) for row, copy in zip(rows, copies, strict=True)],
    )
    tags = [
        (tenant, new_id, tag, entry.category)
        for new_id, entry in zip(ids, entries, strict=True)
        for tag in entry.tags
    ]
    # The batch's tags in one statement: one per entry made tags half of a bulk load's cost
    # (issue 17, item 1: 52 against 18 us an entry).
    if tags:
        tx.executemany(
            "INSERT INTO item_tags (tenant, item_id, tag, category) VALUES (?, ?, ?, ?)", tags
        )
    return ids


def recall(
    tx: Tx,
    tenant: str,
    *,
    category: object,
    tags: object,
    search: object,
    mode: object,
    limit: object,
    source: str | None,
    scope: object = None,
) -> tuple[list[Entry], int]:
    """Entries newest first, and how many more match beyond ``limit`` (counted up to
    MORE_COUNT_LIMIT)."""
    if search is not None and not isinstance(search, str):
        raise InvalidInput(f"search must be text, got {type(search).__name__}")
    where: list[str] = ["items.tenant = ?", "items.item_type = 'entry'"]
    params: list[Any] = [tenant]
    found = tx.substrings.candidates(search) if search else None
    if search and found is None:
        condition, condition_params = tx.substrings.condition(search, "items")
        where.append(condition)
        params.extend(condition_params)
    category_wanted = None if category is None else check_category(category)
    filters = {
        column: value
        for column, value in (
            ("category", category_wanted),
            ("source", source),
            ("scope", None if scope is None else checked_label(scope, "scope")),
        )
        if value is not None
    }
    wanted = check_tags(tags)  # after the scope, whose refusal came first before
    driving = _driving(tx, tenant, filters, by_words=found is not None, by_tags=bool(wanted))
    for column, value in filters.items():
        # ``+`` keeps SQLite from reading a column's index: the filter is tested on each row
        # the driving index offers.
        where.append(f"{'' if column in driving else '+'}items.{column} = ?")
        params.append(value)
    if wanted:
        every = isinstance(mode, str) and mode.strip().lower() == "all"
        if found is not None:
            # Tested on each row the substring index offers: a list of the tagged ids would
            # drive the listing instead (newest first through every tagged entry, the limit
            # never reached while few of them are above the index's mark).
            condition, tag_params = (every_tag if every else any_tag)("items", wanted)
        else:
            condition, tag_params = tagged_ids(
                "items", tenant, wanted, every=every, category=category_wanted
            )
        where.append(condition)
        params.extend(tag_params)
    count = effective_limit(limit)
    matching = " AND ".join(where)
    if found is None:
        parts = [SubstringPart("items", matching, params)]
    else:
        # The substring index drives: its matches are read first, each checked against the
        # filters as it is read (walking the filter indexes newest first would test every
        # entry). Its parts descend, each read newest first, so the listing stops after
        # ``count`` matches (and the count of the rest after MORE_COUNT_LIMIT) rather than
        # reading every match.
        parts = [
            replace(
                part, condition=f"{part.condition} AND {matching}", params=[*part.params, *params]
            )
            for part in found
        ]
    # One walk of each part, newest first, reads the ids of the entries listed and of up to
    # MORE_COUNT_LIMIT more (``more``: a cut is never silent); only the listed ones are read
    # whole. Counting in a second walk read every match twice.
    ids: list[int] = []
    for part in parts:
        reach = count + MORE_COUNT_LIMIT - len(ids)
        if reach <= 0:
            break
        ids += [
            int(row["listed_id"])
            for row in tx.all(
                f"SELECT items.id AS listed_id FROM {part.source} WHERE {part.condition}"
                f" ORDER BY {part.newest_first} LIMIT ?",
                [*part.params, reach],
            )
        ]
    listed = ids[:count]
    rows = rows_by_id(
        tx, f"SELECT {_COLUMNS} FROM items", listed, where="tenant = ?", params=[tenant]
    )
    return [row_to_entry(rows[item_id]) for item_id in listed], len(ids) - len(listed)


def _driving(
    tx: Tx, tenant: str, filters: dict[str, str], *, by_words: bool, by_tags: bool
) -> set[str]:
    """The columns of ``filters`` whose index may drive a listing.

    SQLite's statistics sample a few hundred rows of each index (decision 0018), so they give
    the category, writer and scope indexes the same figures, and its planner picks one of them
    on a tie: a large scope was walked for a few rules. So on SQLite each filter's entries are
    counted through its own index, up to DRIVE_PROBE (a later one only up to the fewest so
    far), and when one holds fewer than that, the one holding the fewest drives: walking it
    reads no more rows than it holds (a tie goes to the first of category, writer, scope).
    When every filter reaches the bound, the scope is tested row by row and the planner
    chooses between the others, as before the scope index (m028): the counts cannot tell such
    filters apart, and where entries were written in batches by writer, their ids cannot
    either. Under a search the substring index drives (three characters or more), the scope
    tested row by row as before; under tags the planner weighs the tags' ids against the
    filters' indexes (decision 0050). Other backends plan with statistics of their own."""
    if tx.dialect != "sqlite":
        return set(filters)
    unbounded = set(filters) - {"scope"}
    if by_words:
        return unbounded
    if by_tags or len(filters) < 2:
        return set(filters)
    fewest, bound = "", DRIVE_PROBE
    for column, value in filters.items():
        # Each later filter is counted only as far as the fewest so far: an agent's own
        # listing (its writer is always a filter) counts its few entries, then no more.
        held = int(
            tx.scalar(
                "SELECT count(*) FROM (SELECT 1 FROM items WHERE tenant = ?"
                f" AND item_type = 'entry' AND {column} = ? LIMIT ?)",
                (tenant, value, bound),
            )
        )
        if held < bound:
            fewest, bound = column, held
    return {fewest} if fewest else unbounded


def row_to_entry(row: Row) -> Entry:
    # pydantic's JSON reader: json.loads cost 1.5 us a tag list against 0.3, two thirds of
    # turning a listing's 200 rows into entries (0.6 against 0.2 ms).
    return {
        "id": row["id"],
        "category": row["category"],
        "content": row["content"],
        "source": row["source"],
        "tags": from_json(row["tags"]),
        "scope": row["scope"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def forget(
    tx: Tx, tenant: str, principal: str, entry_id: object, *, writer: str | None = None
) -> bool:
    """Delete one entry. ``writer``: the only writer whose entries this caller may forget (an
    agent's or a token holder's own); None for the owner, who may forget any."""
    if isinstance(entry_id, bool) or not isinstance(entry_id, int):
        raise InvalidInput(f"an entry id is an integer, got {shown(entry_id)}")
    reached = reach()
    if reached is not None:
        # An entry beyond the call's scopes is not there for it: neither erased nor named.
        scope = tx.scalar(
            "SELECT scope FROM items WHERE id = ? AND tenant = ? AND item_type = 'entry'",
            (entry_id, tenant),
        )
        if scope is None or scope not in reached:
            return False
    if writer is not None:
        source = tx.scalar(
            "SELECT source FROM items WHERE id = ? AND tenant = ? AND item_type = 'entry'",
            (entry_id, tenant),
        )
        if source is not None and source != writer:
            # Refused by name, not answered False: the agent can list the entry (from='*'),
            # so its existence is no secret, and False would read as "already gone".
            raise NotTheWriter(
                f"entry {entry_id} was written by {source!r}: only its writer or the memory's"
                f" owner may forget it, not {writer!r}"
            )
    row = tx.one(
        "DELETE FROM items WHERE id = ? AND tenant = ? AND item_type = 'entry'"
        " RETURNING scope, content, tags, length(content) AS size",
        (entry_id, tenant),
    )
    if row is None:
        return False
    # What the retrieval audit kept of it goes too: its tags are its words as well.
    audit.scrub(tx, tenant, items=[entry_id], forgotten=[row["content"], *from_json(row["tags"])])
    tx.execute(
        "INSERT INTO journal (tenant, scope, item_id, item_type, operation, principal, version,"
        " chars_removed, created_at) VALUES (?, ?, ?, 'entry', 'delete', ?, 1, ?, ?)",
        (tenant, row["scope"], entry_id, principal, row["size"], now_iso()),
    )
    return True
