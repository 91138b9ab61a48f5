"""Entries: quick facts with a fixed category, tags and the writer's namespace (Synsema family).

Functions here take an open transaction and plain values; :class:`~recuerdo.engine.Memory`
decides tenant, writer and defaults.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..core.clock import now_iso
from ..core.text import check_tags, checked_label, checked_text
from ..errors import InvalidBatch, InvalidCategory, InvalidInput, RecuerdoError
from ..model import CATEGORIES, Entry, EntryIn
from ..store.base import Row, Tx

DEFAULT_LIMIT = 200
MAX_ENTRY_BYTES = 65_536
MAX_BATCH = 10_000
ALL_SOURCES = "*"
DEFAULT_SCOPE = "default"
# The trigram index needs three characters; shorter needles are matched by a scan.
_TRIGRAM = 3
INDEX_CHUNK = 500
_INDEXED_UPTO = "SELECT upto FROM index_marks WHERE name = 'entry_trigrams'"

_COLUMNS = "id, category, content, source, tags, scope, created_at, updated_at"


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


def effective_limit(limit: object) -> int:
    """The spec's limit rule: a missing, negative, zero or non-numeric limit means 200."""
    if isinstance(limit, bool) or limit is None:
        return DEFAULT_LIMIT
    try:
        value = int(str(limit).strip()) if not isinstance(limit, int | float) else int(limit)
    except (TypeError, ValueError):
        return DEFAULT_LIMIT
    return value if value > 0 else DEFAULT_LIMIT


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
        unknown = set(entry) - set(EntryIn.__annotations__)
        if unknown:
            raise InvalidBatch(f"entry {index} has unknown fields: {sorted(unknown)}", index=index)
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


def insert(tx: Tx, tenant: str, source: str, entries: Sequence[_Prepared]) -> list[int]:
    stamp = now_iso()
    ids = []
    for entry in entries:
        new_id = tx.scalar(
            "INSERT INTO items (tenant, scope, item_type, category, content, tags, source,"
            " created_at, updated_at) VALUES (?, ?, 'entry', ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                tenant,
                entry.scope,
                entry.category,
                entry.content,
                json.dumps(entry.tags, ensure_ascii=False),
                source,
                stamp,
                stamp,
            ),
        )
        if entry.tags:
            tx.executemany(
                "INSERT INTO item_tags (item_id, tag) VALUES (?, ?)",
                [(new_id, tag) for tag in entry.tags],
            )
        ids.append(int(new_id))
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
) -> list[Entry]:
    if search is not None and not isinstance(search, str):
        raise InvalidInput(f"search must be text, got {type(search).__name__}")
    where: list[str] = []
    params: list[Any] = []
    indexed = len(search or "") >= _TRIGRAM
    if indexed:
        # The substring index drives (plus a scan of the rows not indexed yet); '+' keeps the
        # planner off the filter indexes, which would walk every entry newest first and test
        # each one against the matches.
        where.append(
            "id IN (SELECT rowid FROM entry_trigrams WHERE entry_trigrams MATCH ?"
            f" UNION ALL SELECT tail.id FROM items AS tail WHERE tail.id > ({_INDEXED_UPTO})"
            " AND instr(recuerdo_fold(tail.content), ?) > 0)"
        )
        params += ['"' + str(search).replace('"', '""') + '"', str(search).casefold()]
    column = "+{}".format if indexed else "{}".format
    where += [f"{column('tenant')} = ?", f"{column('item_type')} = 'entry'"]
    params.append(tenant)
    if category is not None:
        where.append(f"{column('category')} = ?")
        params.append(check_category(category))
    if source is not None:
        where.append(f"{column('source')} = ?")
        params.append(source)
    if scope is not None:
        where.append(f"{column('scope')} = ?")
        params.append(checked_label(scope, "scope"))
    wanted = check_tags(tags)
    if wanted:
        marks = ", ".join("?" * len(wanted))
        if isinstance(mode, str) and mode.strip().lower() == "all":
            where.append(
                f"(SELECT count(*) FROM item_tags t WHERE t.item_id = items.id"
                f" AND t.tag IN ({marks})) = ?"
            )
            params.extend([*wanted, len(wanted)])
        else:
            where.append(f"id IN (SELECT item_id FROM item_tags WHERE tag IN ({marks}))")
            params.extend(wanted)
    if search and not indexed:
        where.append("instr(recuerdo_fold(content), ?) > 0")  # too short for trigrams
        params.append(search.casefold())
    params.append(effective_limit(limit))
    rows = tx.all(
        f"SELECT {_COLUMNS} FROM items WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?",
        params,
    )
    return [row_to_entry(row) for row in rows]


def row_to_entry(row: Row) -> Entry:
    return {
        "id": row["id"],
        "category": row["category"],
        "content": row["content"],
        "source": row["source"],
        "tags": json.loads(row["tags"]),
        "scope": row["scope"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def forget(tx: Tx, tenant: str, principal: str, entry_id: object) -> bool:
    if isinstance(entry_id, bool) or not isinstance(entry_id, int):
        raise InvalidInput(f"an entry id is an integer, got {entry_id!r}")
    row = tx.one(
        "DELETE FROM items WHERE id = ? AND tenant = ? AND item_type = 'entry'"
        " RETURNING scope, length(content) AS size",
        (entry_id, tenant),
    )
    if row is None:
        return False
    tx.execute(
        "INSERT INTO journal (tenant, scope, item_id, item_type, operation, principal, version,"
        " chars_removed, created_at) VALUES (?, ?, ?, 'entry', 'delete', ?, 1, ?, ?)",
        (tenant, row["scope"], entry_id, principal, row["size"], now_iso()),
    )
    return True


def index_backlog(tx: Tx) -> int:
    """Add the next rows above the watermark to the substring index; return how many items
    the watermark moved over (0 when the index is complete)."""
    upto = int(tx.scalar(_INDEXED_UPTO))
    last = tx.scalar(
        "SELECT max(id) FROM (SELECT id FROM items WHERE id > ? ORDER BY id LIMIT ?)",
        (upto, INDEX_CHUNK),
    )
    if last is None:
        return 0
    tx.execute(
        "INSERT INTO entry_trigrams (rowid, content) SELECT id, content FROM items"
        " WHERE id > ? AND id <= ? AND item_type = 'entry'",
        (upto, last),
    )
    tx.execute("UPDATE index_marks SET upto = ? WHERE name = 'entry_trigrams'", (last,))
    return int(last) - upto


def unindexed(tx: Tx) -> int:
    """How many items wait above the substring index's watermark."""
    return int(tx.scalar(f"SELECT count(*) FROM items WHERE id > ({_INDEXED_UPTO})"))


def counts_by_category(tx: Tx, tenant: str) -> dict[str, int]:
    rows = tx.all(
        "SELECT category, count(*) AS n FROM items WHERE tenant = ? AND item_type = 'entry'"
        " GROUP BY category ORDER BY category",
        (tenant,),
    )
    return {row["category"]: row["n"] for row in rows}
