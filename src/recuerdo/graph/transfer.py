"""export and import: a scope's records, page by page, into any scope.

Records: an ``export`` header, then ``document`` (text once, live passages in order with the
entities they mention), ``entity`` (types, attribute values with history), ``fact`` (state,
validity, ended_at, replaced_by, dated sources), ``note`` (every revision, and the conflicts
kept beside it: ``notes/transfer.py``), ``entry``, and the messaging records (``address``,
``conversation``, ``mail``, ``cursor``: ``comms/transfer.py``; only the conversations the
caller is a member of). Forgotten data is gone and so never exported. Importing is idempotent:
every record carries a stable ``key`` and a record already present is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

from ..comms import transfer as comms_transfer
from ..core.clock import now_iso, parse_time
from ..entries import operations as entries
from ..errors import InvalidInput, RecuerdoError
from ..notes import transfer as note_transfer
from ..notes.transfer import record_key as _key
from ..store import journal_moves
from ..store.base import Row, Tx, groups, marks
from . import import_page, imports, store, values
from .import_residue import document_key, entity_key, holders_key
from .remember import link_passages

PHASES = ("document", "entity", "fact", "note", "entry", *comms_transfer.PHASES)
MAX_IMPORT = 4096
OWNER_ONLY = (
    "messaging records name other principals (their addresses, messages and reading): only"
    " the memory's owner imports them, not a token holder"
)
NOT_REPRODUCED = [
    "ids: imported items, entities, facts and conversations get new ids",
    "vectors: imported text is embedded again by this memory's model",
    "the revision journal and the retrieval audit of the source",
    "times: an entry and a note's revisions keep their records' dates up to the import's (a"
    " later one, or none, is the import's); a document keeps its ingestion time, a fact its"
    " recorded time",
]


# A fact's `twin` (see migration m008) tells apart facts alike in every field of the key.
def _fact_key(
    subject: str, relation: str, obj: str, valid_from: Any, recorded_at: Any, twin: int
) -> str:
    parts = ["fact", subject, relation, obj, valid_from, recorded_at]
    return _key(*parts, twin) if twin else _key(*parts)


def _cursor(value: object) -> tuple[int, str]:
    """(phase, the position within it: a row id, or an address for addresses)."""
    if value is None or value == "":
        return 0, ""
    try:
        name, last = str(value).split(":")
        phase = PHASES.index(name)
        # A page that ends with the header alone ends no phase: "document:" starts one.
        if name != "address" and last:
            int(last)
        return phase, last
    except ValueError as exc:
        raise InvalidInput(f"cursor {value!r} is not one this export gave out") from exc


def export(
    tx: Tx,
    tenant: str,
    scope: str,
    cursor: object,
    limit: int,
    viewer: str | None = None,
    *,
    owner: bool,
) -> dict[str, Any]:
    """One page of records; ``viewer`` sees its own conversations only, and, unless it is the
    memory's owner, only its own part of what they keep beside the messages (decision 0158)."""
    phase, last = _cursor(cursor)
    records: list[dict[str, Any]] = []
    if cursor is None or cursor == "":  # the first page ("document:" is the page after it)
        records.append({"record": "export", "version": 1, "scope": scope, "exported_at": now_iso()})
    while phase < len(PHASES) and len(records) < limit:
        wanted = limit - len(records)
        if PHASES[phase] in comms_transfer.PHASES:
            page, last, done = comms_transfer.export_page(
                tx, tenant, scope, viewer, PHASES[phase], last, wanted, owner=owner
            )
            records += page
        else:
            rows, render = _page(tx, tenant, scope, PHASES[phase], int(last or 0), wanted)
            records += render(tx, rows)
            last, done = str(rows[-1]["id"]) if rows else last, len(rows) < wanted
        if not done:
            break
        phase, last = phase + 1, ""
    following = None if phase >= len(PHASES) else f"{PHASES[phase]}:{last}"
    return {"records": records, "next": following, "count": len(records)}


Render = Callable[[Tx, list[Row]], list[dict[str, Any]]]


def _each(render: Callable[[Tx, Row], dict[str, Any]]) -> Render:
    return lambda tx, rows: [render(tx, row) for row in rows]


def _page(
    tx: Tx, tenant: str, scope: str, phase: str, last: int, limit: int
) -> tuple[list[Row], Render]:
    if phase == "entity":
        return tx.all(
            "SELECT * FROM entities WHERE tenant = ? AND scope = ? AND id > ? ORDER BY id LIMIT ?",
            (tenant, scope, last, limit),
        ), _entities
    if phase == "fact":
        return tx.all(
            "SELECT f.*, s.name AS s_name, s.folded AS s_fold, o.name AS o_name,"
            " o.folded AS o_fold, r.relation AS r_relation, r.valid_from AS r_from,"
            " r.recorded_at AS r_recorded, rs.folded AS r_s, ro.folded AS r_o,"
            " r.twin AS r_twin FROM facts f"
            " JOIN entities s ON s.tenant = f.tenant AND s.id = f.subject_id"
            " JOIN entities o ON o.tenant = f.tenant AND o.id = f.object_id"
            " LEFT JOIN facts r ON r.tenant = f.tenant AND r.id = f.replaced_by"
            " LEFT JOIN entities rs ON rs.tenant = r.tenant AND rs.id = r.subject_id"
            " LEFT JOIN entities ro ON ro.tenant = r.tenant AND ro.id = r.object_id"
            " WHERE f.tenant = ? AND f.scope = ? AND f.id > ? ORDER BY f.id LIMIT ?",
            (tenant, scope, last, limit),
        ), _facts
    render = _RENDERERS[phase]  # the phases of items: their type is the phase's name
    return tx.all(
        "SELECT * FROM items WHERE tenant = ? AND scope = ? AND item_type = ?"
        " AND status <> 'deleted' AND id > ? ORDER BY id LIMIT ?",
        (tenant, scope, phase, last, limit),
    ), render


def _document(tx: Tx, row: Row) -> dict[str, Any]:
    passages = []
    tenant = row["tenant"]
    for chunk in tx.all(
        "SELECT id, start, stop FROM chunks WHERE tenant = ? AND item_id = ? ORDER BY ordinal",
        (tenant, row["id"]),
    ):
        names = [
            r["name"]
            for r in tx.all(
                "SELECT e.name FROM mentions m JOIN entities e ON e.tenant = m.tenant"
                " AND e.id = m.entity_id WHERE m.tenant = ? AND m.chunk_id = ? ORDER BY e.name",
                (tenant, chunk["id"]),
            )
        ]
        passages.append({"start": chunk["start"], "end": chunk["stop"], "mentions": names})
    meta = json.loads(row["meta"])
    return {
        "record": "document",
        "key": document_key(row),
        "name": row["title"],
        "text": row["content"],
        "passages": passages,
        "source": meta.get("source"),
        "kind": meta.get("kind", "text"),
        "date": row["occurred_at"],
        "ingested_at": row["created_at"],
    }


def _entities(tx: Tx, rows: list[Row]) -> list[dict[str, Any]]:
    ids = [row["id"] for row in rows]
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    tenant = rows[0]["tenant"]
    types = store.types_of(tx, tenant, ids)
    attributes: dict[int, list[dict[str, Any]]] = {}
    for r in tx.all(
        f"SELECT * FROM attributes WHERE tenant = ? AND entity_id IN ({marks}) ORDER BY id",
        [tenant, *ids],
    ):
        attributes.setdefault(r["entity_id"], []).append(
            {
                "key": r["key"],
                "value": values.decode(r["value"]),
                "valid_from": r["valid_from"],
                "recorded_at": r["recorded_at"],
                "ended_at": r["ended_at"],
            }
        )
    return [
        {
            "record": "entity",
            "key": entity_key(row["folded"]),
            "name": row["name"],
            "types": types.get(row["id"], []),
            "attributes": attributes.get(row["id"], []),
            "recorded_at": row["recorded_at"],
        }
        for row in rows
    ]


def _facts(tx: Tx, rows: list[Row]) -> list[dict[str, Any]]:
    ids = [row["id"] for row in rows]
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    tenant = rows[0]["tenant"]
    sources: dict[int, list[dict[str, Any]]] = {}
    document_keys: dict[int, str] = {}
    for r in tx.all(
        "SELECT fs.fact_id, fs.item_id, fs.start, fs.stop, fs.quote_hash, i.content, i.title,"
        " i.occurred_at, i.created_at FROM fact_sources fs JOIN items i ON i.tenant = fs.tenant"
        f" AND i.id = fs.item_id WHERE fs.tenant = ? AND fs.fact_id IN ({marks})",
        [tenant, *ids],
    ):
        quote = r["content"][r["start"] : r["stop"]]
        if quote and store.quote_hash(quote) != r["quote_hash"]:
            continue  # its text is forgotten (blanked before 0145 dropped such a citation)
        if r["item_id"] not in document_keys:
            document_keys[r["item_id"]] = document_key(r)
        sources.setdefault(r["fact_id"], []).append(
            {
                "document_key": document_keys[r["item_id"]],
                "start": r["start"],
                "end": r["stop"],
                "date": r["occurred_at"],
            }
        )
    types = store.types_of(
        tx, tenant, sorted({row[end] for row in rows for end in ("subject_id", "object_id")})
    )
    return [
        {
            "record": "fact",
            "key": _fact_key(
                row["s_fold"],
                row["relation"],
                row["o_fold"],
                row["valid_from"],
                row["recorded_at"],
                row["twin"],
            ),
            "subject": row["s_name"],
            "subject_types": types.get(row["subject_id"], []),
            "relation": row["relation"],
            "object": row["o_name"],
            "object_types": types.get(row["object_id"], []),
            "attributes": values.decode_fact_attributes(row["attributes"]),
            "state": "current" if row["ended_at"] is None else "ended",
            "valid_from": row["valid_from"],
            "valid_to": row["valid_to"],
            "recorded_at": row["recorded_at"],
            "ended_at": row["ended_at"],
            "replaced_by": None
            if row["r_relation"] is None
            else _fact_key(
                row["r_s"],
                row["r_relation"],
                row["r_o"],
                row["r_from"],
                row["r_recorded"],
                row["r_twin"],
            ),
            "source": row["source"],
            "sources": sources.get(row["id"], []),
        }
        for row in rows
    ]


def _entry(tx: Tx, row: Row) -> dict[str, Any]:
    return {
        "record": "entry",
        "key": _key("entry", row["category"], row["content"], row["created_at"]),
        "category": row["category"],
        "content": row["content"],
        "tags": json.loads(row["tags"]),
        "source": row["source"],
        "created_at": row["created_at"],
    }


def import_records(
    tx: Tx, *, tenant: str, principal: str, scope: str, records: object, owner: bool = True
) -> dict[str, Any]:
    """Each record read in (skipped, with the reason, when malformed or read before). The
    messaging records name other principals (an address bound to one, a message one wrote, how
    far one read): only the memory's owner imports them. A token holder's import made a
    message from anyone, bound anyone's address, in any domain (a hunt over the messages)."""
    if not isinstance(records, list):
        raise InvalidInput("records is a list of exported records")
    if len(records) > MAX_IMPORT:
        raise InvalidInput(f"at most {MAX_IMPORT} records per call, got {len(records)}")
    imported, skipped = 0, []
    # Whether the journal names the keys notes moved from: asked once, not once a note.
    moves = journal_moves.has_keys(tx)
    # What the knowledge records need of the scope, read for the whole page (imports.Page).
    page = import_page.page_of(tx, tenant, scope, records)
    importers: dict[str, Callable[..., Any]] = {
        **_IMPORTERS,
        "note": partial(note_transfer.import_record, moves=moves),
        **{kind: partial(_IMPORTERS[kind], page=page) for kind in imports.KINDS},
    }
    # The keys read in before, asked for the whole page; those read in here are added.
    known = _imported_keys(tx, tenant, scope, records)
    recorded: list[tuple[str, str, str]] = []
    for index, record in enumerate(records):
        if not isinstance(record, dict) or record.get("record") not in (*PHASES, "export"):
            skipped.append({"index": index, "why": "not an exported record"})
            continue
        kind = record["record"]
        if kind == "export":
            continue
        if kind in comms_transfer.PHASES and not owner:
            skipped.append({"index": index, "why": OWNER_ONLY})
            continue
        if not owner:
            record = _as_caller(record)
        key = record.get("key")
        if not isinstance(key, str):
            skipped.append({"index": index, "why": "no key"})
            continue
        # A holder's keys are kept apart and skip knowledge records alone: the owner's
        # messaging records are read in whatever key a holder's import gave (decision 0158).
        seen = (key,) if kind in comms_transfer.PHASES else (key, holders_key(key))
        if any(one in known for one in seen):
            skipped.append({"index": index, "why": "already imported"})
            continue
        try:
            held_by = importers[kind](tx, tenant, principal, scope, record)
        except (KeyError, TypeError, ValueError) as exc:
            skipped.append({"index": index, "why": f"malformed {kind}: {exc}"})
            continue
        # Recorded either way: a retry of a record kept as a conflict keeps it once. Written
        # together after the page (no importer reads them), in the same transaction.
        stored = key if owner else holders_key(key)
        known.add(stored)
        recorded.append((tenant, scope, stored))
        if held_by is None:
            imported += 1
        else:
            skipped.append({"index": index, "why": held_by})
    tx.executemany("INSERT INTO import_keys (tenant, scope, key) VALUES (?, ?, ?)", recorded)
    import_page.finish(tx, page)
    return {"imported": imported, "skipped": skipped, "not_reproduced": NOT_REPRODUCED}


def _imported_keys(tx: Tx, tenant: str, scope: str, records: list[Any]) -> set[str]:
    """Which keys of ``records`` (as given, and as a holder's import keeps them) the scope
    read in before: one statement for 500 keys, where each record asked for its own."""
    keys = {
        form
        for record in records
        if isinstance(record, dict) and isinstance(record.get("key"), str)
        for form in (record["key"], holders_key(record["key"]))
    }
    return {
        row["key"]
        for part in groups(sorted(keys), 500)
        for row in tx.all(
            "SELECT key FROM import_keys WHERE tenant = ? AND scope = ?"
            f" AND key IN ({marks(part)})",
            (tenant, scope, *part),
        )
    }


def _as_caller(record: dict[str, Any]) -> dict[str, Any]:
    """A token holder's record, written as its own: who wrote an entry (``source``) and each
    note revision (``principal``) is the caller, not whom the record names (the review of
    decision 0086: an entry read in as Alice's rule, a note revision as the owner's)."""
    if record.get("record") == "entry":
        return {**record, "source": None}
    written = dict(record)
    for part in ("revisions", "conflicts"):
        if isinstance(record.get(part), list):
            written[part] = [
                {**item, "principal": None} if isinstance(item, dict) else item
                for item in record[part]
            ]
    return written


def _import_entry(tx: Tx, tenant: str, principal: str, scope: str, record: dict[str, Any]) -> None:
    """An entry as ``remember`` checks it, dated as its record says (decision 0117's rule: no
    later than the import; undated, at the import). A refused record is skipped with the
    reason, as a note's is: a bad category refused the whole call, every other record with it."""
    try:
        prepared = entries.prepare(record["category"], record["content"], record.get("tags"), scope)
        given = record.get("created_at")
        at = None if given is None else min(parse_time(given, "created_at"), now_iso())
    except RecuerdoError as error:
        raise ValueError(error.detail) from error
    entries.insert(tx, tenant, record.get("source") or principal, [prepared], at=at)


_RENDERERS: dict[str, Render] = {
    "document": _each(_document),
    "note": note_transfer.export_records,
    "entry": _each(_entry),
}
_IMPORTERS: dict[str, Callable[..., Any]] = {
    "document": imports.import_document,
    "entity": imports.import_entity,
    "fact": imports.import_fact,
    # "note" is bound per call (it takes whether moves keep keys), and so are the KINDS of
    # imports (they take the call's page)
    "entry": _import_entry,
    **comms_transfer.importers(link_passages),
}
