"""about: what memory holds about an entity, walked through the graph, with citations.

Each item is an entity, a fact (stored or derived, in either direction) or a passage, and
carries the seed that found it and a citation whose span is re-checked against the stored
document text before it is served: a mismatch gives ``span: null`` and ``span_state``, never a
wrong quote.
"""

from __future__ import annotations

from typing import Any

from ..core import exact
from ..core.items import visible
from ..errors import InvalidInput
from ..index.chunks import as_cut
from ..store import chunk_text
from ..store.base import Row, Tx, rows_by_id
from . import cite, derive, store, values
from .match import seed

DEFAULT_K = 20
MAX_K = 1000


def _document_rows(tx: Tx, tenant: str, ids: set[int]) -> dict[int, Row]:
    return rows_by_id(
        tx,
        "SELECT id, title, category, content, created_at, meta, item_type FROM items",
        ids,
        where="tenant = ? AND status <> 'deleted'",
        params=(tenant,),
    )


def _source(doc: Row | None, fallback_name: str | None, recorded_at: str) -> dict[str, Any]:
    if doc is None:
        return {
            "kind": "asserted",
            "doc_id": None,
            "name": fallback_name,
            "ingested_at": recorded_at,
        }
    return {
        "kind": "document",
        "doc_id": doc["id"],
        "name": doc["title"],
        "ingested_at": doc["created_at"],
    }


def verified_span(
    doc: Row | None, start: int, stop: int, expected_hash: str
) -> tuple[dict[str, Any] | None, str]:
    """The quoted span if the stored text still says it, else None and why (an empty span:
    the fact came with a text that names no passage with both ends)."""
    if doc is None:
        return None, "source_missing"
    if start == stop:
        return None, "not_in_text"
    quote = doc["content"][start:stop]
    if store.quote_hash(quote) != expected_hash:
        return None, "mismatch"
    return {"text": quote, "start": start, "end": stop}, "verified"


def fact_citations(
    tx: Tx, tenant: str, fact_rows: list[Row], known_at: str | None = None
) -> dict[int, dict[str, Any]]:
    """fact id -> citation (source and verified span); with ``known_at`` (an ``as_of``
    read), only from texts stored by then: a text stored later was cited, though the read
    hides its passages (0145)."""
    if not fact_rows:
        return {}
    ids = [row["id"] for row in fact_rows]
    marks = ",".join("?" * len(ids))
    known = "" if known_at is None else " AND i.created_at <= ?"
    sources: dict[int, list[Row]] = {}
    for r in tx.all(
        # The last row of a fact is preferred: its newest source that quotes a span, else its
        # newest. A later text naming no passage with both ends hid the span an earlier one
        # quoted (the review of 0089).
        "SELECT s.fact_id, s.item_id, s.start, s.stop, s.quote_hash FROM fact_sources s"
        " JOIN items i ON i.tenant = s.tenant AND i.id = s.item_id WHERE s.tenant = ?"
        f" AND s.fact_id IN ({marks}){known}"
        " ORDER BY CASE WHEN s.stop > s.start THEN 1 ELSE 0 END, s.item_id",
        [tenant, *ids, *([] if known_at is None else [known_at])],
    ):
        sources.setdefault(r["fact_id"], []).append(r)
    # Each fact's preferred source's document is read; the others' only when it no longer
    # verifies (a fact restated in many documents would read them all).
    docs = _document_rows(tx, tenant, {rs[-1]["item_id"] for rs in sources.values()})
    stale = [
        r
        for rs in sources.values()
        if verified_span(docs.get(rs[-1]["item_id"]), *_quoted(rs[-1]))[1] != "verified"
        for r in rs[:-1]
        if r["item_id"] not in docs
    ]
    docs.update(_document_rows(tx, tenant, {r["item_id"] for r in stale}))
    checked = {
        fact_id: [(r, *verified_span(docs.get(r["item_id"]), *_quoted(r))) for r in reversed(rs)]
        for fact_id, rs in sources.items()
    }
    _drop_forgotten(tx, tenant, checked)
    citations = {}
    for row in fact_rows:
        candidates = checked.get(row["id"])
        if not candidates:
            citations[row["id"]] = {
                "source": _source(None, row["source"], row["recorded_at"]),
                "span": None,
                "span_state": "asserted",
            }
            continue
        # The preferred source that still verifies: one whose text a forget written before
        # 0145 blanked hid a source still saying the fact.
        cited, span, state = next((c for c in candidates if c[2] == "verified"), candidates[0])
        doc = docs.get(cited["item_id"])
        citations[row["id"]] = {
            "source": _source(doc, row["source"], row["recorded_at"]),
            "span": span,
            "span_state": state,
        }
    return citations


def _drop_forgotten(
    tx: Tx, tenant: str, checked: dict[int, list[tuple[Row, dict[str, Any] | None, str]]]
) -> None:
    """Leave out, of each fact none of whose sources verifies, a source quoting text a forget
    blanked (a span outside every live passage: a row a forget before 0145 left). It was
    served as ``mismatch`` (changed behind the store's back) while export left it out, so the
    fact read ``asserted`` once exported and imported (the review of 0145). A span inside a
    live passage that no longer matches is still served as changed."""
    failed = [fact_id for fact_id, rows in checked.items() if all(c[2] != "verified" for c in rows)]
    doc_ids = {
        int(c[0]["item_id"]) for fact_id in failed for c in checked[fact_id] if c[2] == "mismatch"
    }
    if not doc_ids:
        return
    passages = cite.live_passages(tx, tenant, doc_ids)
    for fact_id in failed:
        checked[fact_id] = [
            c
            for c in checked[fact_id]
            if c[2] != "mismatch"
            or cite.in_passages(passages.get(int(c[0]["item_id"]), []), *_quoted(c[0])[:2])
        ]


def _quoted(source: Row) -> tuple[int, int, str]:
    return source["start"], source["stop"], source["quote_hash"]


def passage_citation(chunk: Row, doc: Row | None) -> dict[str, Any]:
    """A passage's citation: its span of the document, verified against what was cut into
    the chunk (``chunk`` is a chunk row; without a ``hash``, the whole of an item not cut
    into passages yet)."""
    source = _source(doc, None, "" if doc is None else doc["created_at"])
    if doc is None:
        return {"source": source, "span": None, "span_state": "source_missing"}
    text = doc["content"][chunk["start"] : chunk["stop"]]
    if "hash" in chunk and not as_cut(chunk, text, doc["category"]):
        return {"source": source, "span": None, "span_state": "mismatch"}
    return {
        "source": source,
        "span": {"text": text, "start": chunk["start"], "end": chunk["stop"]},
        "span_state": "verified",
    }


def _walk(
    tx: Tx, tenant: str, seeds: dict[int, str], hops: int, view: store.View
) -> list[tuple[Row, int, int, str]]:
    """(fact row, hop, the entity it was reached from, seed name), breadth first."""
    where, params = view.sql("f")
    frontier = dict(seeds)  # entity id -> seed name
    visited = set(frontier)
    found: list[tuple[Row, int, int, str]] = []
    seen_facts: set[int] = set()
    for hop in range(1, hops + 1):
        if not frontier:
            break
        ids = list(frontier)
        marks = ",".join("?" * len(ids))
        rows = tx.all(
            f"SELECT f.* FROM facts f WHERE f.tenant = ? AND (f.subject_id IN ({marks})"
            f" OR f.object_id IN ({marks})) AND {where} ORDER BY f.id",
            [tenant, *ids, *ids, *params],
        )
        nxt: dict[int, str] = {}
        for row in rows:
            if row["id"] in seen_facts:
                continue
            seen_facts.add(row["id"])
            via = row["subject_id"] if row["subject_id"] in frontier else row["object_id"]
            found.append((row, hop, via, frontier[via]))
            other = row["object_id"] if via == row["subject_id"] else row["subject_id"]
            if other not in visited:
                visited.add(other)
                nxt[other] = frontier[via]
        frontier = nxt
    return found


def _transitive(
    tx: Tx, tenant: str, seeds: dict[int, str], view: store.View, limit: int
) -> list[dict[str, Any]]:
    """Transitive facts from the seeds, shortest chains first; the walk stops once it has
    reached ``limit`` entities two or more links away (no answer shows more than k)."""
    where, params = view.sql("f")
    derived = []
    for relation in sorted(derive.TRANSITIVE):
        for forward in (True, False):
            edges: dict[int, list[tuple[int, int]]] = {}
            frontier = set(seeds)
            seen = set(frontier)
            for depth in range(derive.MAX_LINKS):
                if not frontier or (depth >= 2 and len(seen) - len(seeds) >= limit):
                    break
                marks = ",".join("?" * len(frontier))
                near, far = ("subject_id", "object_id") if forward else ("object_id", "subject_id")
                rows = tx.all(
                    f"SELECT f.id, f.{near} AS a, f.{far} AS b FROM facts f WHERE f.tenant = ?"
                    f" AND f.{near} IN ({marks}) AND f.relation = ? AND {where}",
                    [tenant, *frontier, relation, *params],
                )
                frontier = set()
                for row in rows:
                    edges.setdefault(row["a"], []).append((row["b"], row["id"]))
                    if row["b"] not in seen:
                        seen.add(row["b"])
                        frontier.add(row["b"])
            for start, name in seeds.items():
                for item in derive.chains(start, relation, edges, forward=forward):
                    derived.append({**item, "seed": name})
    return derived


def visible_seeds(
    tx: Tx, tenant: str, matches: list[dict[str, Any]], view: store.View
) -> list[dict[str, Any]]:
    """The matches the view may see (``as_of`` hides entities recorded later)."""
    if view.as_of is None or not matches:
        return matches
    rows = store.entity_rows(tx, tenant, [m["entity_id"] for m in matches])
    return [
        m
        for m in matches
        if m["entity_id"] in rows and view.knows(rows[m["entity_id"]]["recorded_at"])
    ]


def attribute_seeds(
    tx: Tx, tenant: str, scope: str, attribute: dict[str, Any], view: store.View
) -> list[dict[str, Any]]:
    """The entities an attribute lookup {key, value, type?} names, as seeds."""
    if not isinstance(attribute, dict) or not {"key", "value"} <= set(attribute):
        raise InvalidInput("attribute is {key, value} (and may name the value's type)")
    if not set(attribute) <= {"key", "value", "type"}:
        raise InvalidInput("attribute is {key, value, type}")
    key, value = attribute["key"], attribute["value"]
    if not isinstance(key, str) or not key.strip():
        raise InvalidInput("attribute.key must be a name")
    if attribute.get("type") is not None:
        value = {"type": attribute["type"], "value": value}
    shown = exact.dumps(attribute["value"], ensure_ascii=False)  # 1.80, not "1.80"
    return [
        {
            "entity_id": row["id"],
            "name": row["name"],
            "how": "attribute",
            "matched": f"{key}={shown}",
        }
        for row in store.with_attribute(tx, tenant, scope, key, value, view)
    ]


def about(
    tx: Tx,
    *,
    tenant: str,
    scope: str,
    subject: str | None,
    hops: int,
    k: int,
    view: store.View,
    compact: bool,
    viewer: str | None = None,
    attribute: dict[str, Any] | None = None,
) -> dict[str, Any]:
    if attribute is not None:
        matches = attribute_seeds(tx, tenant, scope, attribute, view)
    else:
        assert subject is not None
        matches = visible_seeds(tx, tenant, seed(tx, tenant, scope, subject, whole_only=True), view)
    seeding = [{"name": m["name"], "how": m["how"], "matched": m["matched"]} for m in matches]
    if not matches:
        return {"state": "nothing_stored", "items": [], "seeding": seeding}
    seeds = {m["entity_id"]: m["name"] for m in matches}
    types = store.types_of(tx, tenant, list(seeds))
    items: list[dict[str, Any]] = []
    for entity_id, name in seeds.items():
        items.append(
            {
                "kind": "entity",
                "id": entity_id,
                "name": name,
                "types": types.get(entity_id, []),
                "attributes": store.attributes_of(tx, tenant, entity_id, view),
                "seed": name,
            }
        )
    facts = graph_facts(tx, tenant, seeds, hops, view, k)
    items += facts[:k]
    items += _passages(tx, tenant, seeds, max(0, k - len(facts[:k])), view, viewer)
    if compact:
        items = [compact_item(item) for item in items]
    return {"state": "answered", "items": items, "seeding": seeding}


def graph_facts(
    tx: Tx, tenant: str, seeds: dict[int, str], hops: int, view: store.View, k: int
) -> list[dict[str, Any]]:
    """The facts around the seeds, as the view sees them: stored ones walked ``hops`` steps in
    both directions, then the ones derived from them (``k`` bounds the transitive walk), each
    with its citation; nearest first, stored before derived."""
    walked = _walk(tx, tenant, seeds, hops, view)
    stored_keys = {(r["subject_id"], r["relation"], r["object_id"]) for r, *_ in walked}
    derived = [
        dict(d, seed=seeds.get(r["subject_id"]) or name, hop=hop)
        for r, hop, _, name in walked
        for d in derive.mirrors(dict(r))
    ]
    if hops > 0:  # a chain starts with a step from the seed: zero steps reach none
        derived += [dict(d, hop=1) for d in _transitive(tx, tenant, seeds, view, k)]
    unique: dict[tuple[int, str, int], dict[str, Any]] = {}
    for item in derived:
        key = (item["subject_id"], item["relation"], item["object_id"])
        if key not in stored_keys and key not in unique:
            unique[key] = item
    by_id = {r["id"]: r for r, *_ in walked}
    missing = {i for item in unique.values() for i in item["rests_on"]} - set(by_id)
    by_id.update(
        rows_by_id(tx, "SELECT * FROM facts", sorted(missing), where="tenant = ?", params=(tenant,))
    )
    entity_ids = set(seeds)
    for row in by_id.values():
        entity_ids |= {row["subject_id"], row["object_id"]}
    names = {i: r["name"] for i, r in store.entity_rows(tx, tenant, sorted(entity_ids)).items()}
    citations = fact_citations(tx, tenant, list(by_id.values()), view.as_of)
    facts: list[dict[str, Any]] = []
    for row, hop, via, name in walked:
        facts.append(_fact_item(row, names, hop, via, name, citations[row["id"]]))
    for item in unique.values():
        rests = [by_id[i] for i in item["rests_on"] if i in by_id]
        facts.append(
            {
                "kind": "fact",
                "id": None,
                "subject": names.get(item["subject_id"]),
                "relation": item["relation"],
                "object": names.get(item["object_id"]),
                "direction": "derived",
                "derived": True,
                "rule": item["rule"],
                "rests_on": item["rests_on"],
                "hop": item["hop"],
                "seed": item["seed"],
                "citation": {
                    "source": {"kind": "derived"},
                    "span": None,
                    "span_state": "derived",
                    "found_by": {
                        "stage": "graph",
                        "seed": item["seed"],
                        "rule": item["rule"],
                        "rests_on": [citations[r["id"]] for r in rests],
                        "reasoning": _reasoning(item, rests, names),
                    },
                },
            }
        )
    facts.sort(key=lambda f: (f["hop"], f["derived"]))
    return facts


def _reasoning(item: dict[str, Any], rests: list[Row], names: dict[int, str]) -> dict[str, Any]:
    """Why a derived fact holds, in the words of the stored facts it rests on."""
    refs = [
        {
            "id": row["id"],
            "subject": names.get(row["subject_id"]),
            "relation": row["relation"],
            "object": names.get(row["object_id"]),
        }
        for row in rests
    ]
    basis = "; ".join(f"{r['subject']} {r['relation']} {r['object']}" for r in refs)
    claim = f"{names.get(item['subject_id'])} {item['relation']} {names.get(item['object_id'])}"
    return {"rule": item["rule"], "rests_on": refs, "says": f"{basis}, so {claim} ({item['rule']})"}


def _fact_item(
    row: Row, names: dict[int, str], hop: int, via: int, seed_name: str, citation: dict[str, Any]
) -> dict[str, Any]:
    return {
        "kind": "fact",
        "id": row["id"],
        "subject": names.get(row["subject_id"]),
        "relation": row["relation"],
        "object": names.get(row["object_id"]),
        "attributes": values.decode_fact_attributes(row["attributes"]),
        "direction": "outbound" if via == row["subject_id"] else "inbound",
        "derived": False,
        "hop": hop,
        "seed": seed_name,
        "valid_from": row["valid_from"],
        "valid_to": row["valid_to"],
        "recorded_at": row["recorded_at"],
        "ended_at": row["ended_at"],
        "replaced_by": row["replaced_by"],
        "state": "current" if row["ended_at"] is None else "ended",
        "citation": {**citation, "found_by": {"stage": "graph", "seed": seed_name, "hop": hop}},
    }


def _passages(
    tx: Tx,
    tenant: str,
    seeds: dict[int, str],
    limit: int,
    view: store.View,
    viewer: str | None,
) -> list[dict[str, Any]]:
    """Passages that mention the seeds, as the view sees them; messages only for the members
    of their conversation (``viewer``)."""
    if limit <= 0:
        return []
    marks = ",".join("?" * len(seeds))
    seen, params = view.items_sql("i")
    members_only, members = visible("i", viewer)
    found = tx.all(
        "SELECT m.entity_id, c.id, c.item_id FROM mentions m"
        " JOIN chunks c ON c.tenant = m.tenant AND c.id = m.chunk_id"
        " JOIN items i ON i.tenant = c.tenant AND i.id = c.item_id"
        f" WHERE m.tenant = ? AND m.entity_id IN ({marks}) AND {seen} AND {members_only}"
        " ORDER BY c.item_id DESC, c.ordinal LIMIT ?",
        [tenant, *seeds, *params, *members, limit],
    )
    texts = chunk_text.by_id(tx, [row["id"] for row in found], tenant)
    rows = [{**texts[row["id"]], "entity_id": row["entity_id"]} for row in found]
    docs = _document_rows(tx, tenant, {r["item_id"] for r in rows})
    items = []
    for row in rows:
        doc = docs.get(row["item_id"])
        if doc is None:
            continue
        citation = passage_citation(row, doc)
        citation["found_by"] = {"stage": "graph", "seed": seeds[row["entity_id"]], "mention": True}
        items.append(
            {
                "kind": "passage",
                "id": row["id"],
                "doc_id": row["item_id"],
                "text": row["body"],
                "direction": "mentions",
                "derived": False,
                "seed": seeds[row["entity_id"]],
                "citation": citation,
            }
        )
    return items


def compact_item(item: dict[str, Any]) -> dict[str, Any]:
    """An item once, without diagnostics: what it says and where it is cited."""
    citation = item.get("citation") or {}
    span = citation.get("span")
    short = {"kind": item["kind"], "id": item.get("id")}
    if item["kind"] == "fact":
        short["fact"] = f"{item['subject']} {item['relation']} {item['object']}"
        short["derived"] = item["derived"]
    elif item["kind"] == "entity":
        short["name"] = item["name"]
        short["types"] = item["types"]
    else:
        short["text"] = item["text"]
    if span is not None:
        short["cite"] = {
            "doc_id": citation["source"].get("doc_id"),
            "start": span["start"],
            "end": span["end"],
        }
        if "version" in citation["source"]:  # a span of an earlier version (as_of, valid_at)
            short["cite"]["version"] = citation["source"]["version"]
    return short


def graph_candidates(
    tx: Tx, tenant: str, scope: str | None, query: str, limit: int, *, viewer: str | None = None
) -> tuple[list[tuple[int | None, int]], list[dict[str, Any]]]:
    """For context: passages that mention the entities a question names, best first, and
    the seeding. Without a scope, every scope of the tenant is considered; messages count
    only for their conversation's members (``viewer``)."""
    scopes = (
        [scope]
        if scope is not None
        else [
            r["scope"]
            for r in tx.all("SELECT DISTINCT scope FROM entities WHERE tenant = ?", (tenant,))
        ]
    )
    matches = [m for s in scopes for m in seed(tx, tenant, s, query)]
    if not matches:
        return [], []
    ids = [m["entity_id"] for m in matches]
    marks = ",".join("?" * len(ids))
    members_only, params = visible("i", viewer)
    rows = tx.all(
        "SELECT c.id, c.item_id, count(*) AS hits FROM mentions m JOIN chunks c"
        " ON c.tenant = m.tenant AND c.id = m.chunk_id"
        " JOIN items i ON i.tenant = c.tenant AND i.id = c.item_id"
        f" WHERE m.tenant = ? AND m.entity_id IN ({marks}) AND {members_only}"
        " GROUP BY c.id, c.item_id ORDER BY hits DESC, c.item_id DESC LIMIT ?",
        [tenant, *ids, *params, limit],
    )
    seen: set[int] = set()
    ranked: list[tuple[int | None, int]] = []
    for row in rows:
        if row["item_id"] not in seen:
            seen.add(row["item_id"])
            ranked.append((row["id"], row["item_id"]))
    return ranked, [{"name": m["name"], "how": m["how"], "matched": m["matched"]} for m in matches]
