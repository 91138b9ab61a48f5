"""Derived facts: never stored, always shown with the rule and the stored facts they rest on.

* symmetric: ``married_to, spouse_of, sibling_of`` (A r B gives B r A);
* inverse pairs: ``parent_of/child_of, owns/owned_by, employs/employed_by,
  manages/managed_by`` (A parent_of B gives B child_of A);
* transitive, up to 6 links: ``part_of, located_in, contained_in`` (A r B, B r C gives A r C).
"""

from __future__ import annotations

from typing import Any

from ..store.entity_names import nfc

SYMMETRIC = frozenset({"married_to", "spouse_of", "sibling_of"})
_PAIRS = [
    ("parent_of", "child_of"),
    ("owns", "owned_by"),
    ("employs", "employed_by"),
    ("manages", "managed_by"),
]
INVERSE = {a: b for a, b in _PAIRS} | {b: a for a, b in _PAIRS}
TRANSITIVE = frozenset({"part_of", "located_in", "contained_in"})
MAX_LINKS = 6


def normalise_relation(name: str) -> str:
    """A relation's stored name: words joined by '_', lower case, NFC (decision 0091)."""
    return "_".join(nfc(name).strip().lower().replace("-", " ").split())


def mirror_relation(relation: str) -> str | None:
    """The relation that states the same fact read from its other end (B r' A for A r B):
    itself for a symmetric one, its pair for an inverse one, else None."""
    return relation if relation in SYMMETRIC else INVERSE.get(relation)


def mirrors(fact: dict[str, Any]) -> list[dict[str, Any]]:
    """The symmetric or inverse counterpart of one stored fact."""
    relation = fact["relation"]
    mirrored = mirror_relation(relation)
    if mirrored is None:
        return []
    rule = "symmetric" if relation in SYMMETRIC else f"inverse of {relation}"
    return [_derived(fact["object_id"], mirrored, fact["subject_id"], rule, [fact["id"]])]


def _derived(
    subject: int, relation: str, obj: int, rule: str, rests_on: list[int]
) -> dict[str, Any]:
    return {
        "subject_id": subject,
        "relation": relation,
        "object_id": obj,
        "rule": rule,
        "rests_on": rests_on,
    }


def chains(
    start: int, relation: str, edges: dict[int, list[tuple[int, int]]], *, forward: bool
) -> list[dict[str, Any]]:
    """Transitive facts from ``start`` along ``relation`` (``edges``: entity -> [(next entity,
    fact id)] in the walking direction), two to MAX_LINKS links long, shortest first."""
    found = []
    frontier: list[tuple[int, list[int]]] = [(start, [])]
    seen = {start}
    for _ in range(MAX_LINKS):
        nxt = []
        for node, path in frontier:
            for other, fact_id in edges.get(node, []):
                if other in seen:
                    continue
                seen.add(other)
                chain = [*path, fact_id]
                nxt.append((other, chain))
                if len(chain) >= 2:
                    subject, obj = (start, other) if forward else (other, start)
                    found.append(
                        _derived(subject, relation, obj, f"transitive ({len(chain)} links)", chain)
                    )
        frontier = nxt
        if not frontier:
            break
    return found
