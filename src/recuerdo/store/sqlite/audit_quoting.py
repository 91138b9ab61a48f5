"""How a forget finds, on SQLite, the audit records that quote a name: in their query or in
a text among their filters (``store/audit_filters.drop_quoting``, decision 0077)."""

from __future__ import annotations


def quoting(fold: str) -> str:
    """The condition that a record's query or a text among its filters holds a name, folded
    by ``fold`` (an SQL function, or none), on SQLite; its parameters: the name's pattern, the
    same as JSON spells it, the name's pattern again (``audit_filters.drop_quoting``, decision
    0077).

    The JSON text says which records to look into: what holds no spelling of the name cannot
    hold it. Filters that are no JSON (a damaged file's, recovered), or hold an escaped NUL
    (SQLite cuts a text read from JSON at one) or an escaped surrogate (``\\ud800``, in any
    case: a lone one is read as bytes no UTF-8 text holds, which the folding function cannot
    read), are taken at their text's word: a forget may drop a record too many, never keep
    one that quotes what it forgets."""
    return (
        f"{fold}(query) LIKE ? ESCAPE '\\'"
        f" OR ({fold}(filters) LIKE ? ESCAPE '\\'"
        " AND CASE WHEN json_valid(filters) AND instr(filters, '\\u0000') = 0"
        " AND filters NOT LIKE '%\\ud%' ESCAPE '!'"
        " THEN EXISTS (SELECT 1 FROM json_tree(retrieval_audit.filters) AS part"
        f" WHERE part.type = 'text' AND {fold}(part.value) LIKE ? ESCAPE '\\')"
        " ELSE 1 END)"
    )
