"""Whether the tenant policies (step ``m016_tenant_policies``) keep this role's searches from
their indexes, as ``index_status`` reports it (``backend.tenant_policies``, decision 0065).

PostgreSQL tests a condition whose function is not ``LEAKPROOF`` only after a row passed the
policy, so such a condition cannot choose the rows through an index: a word search (``@@``,
``ts_match_vq``) or a substring search (``lower(content) LIKE``, ``textlike`` and ``lower``)
then reads every row of the tenant. A superuser may mark those functions ``LEAKPROOF``
(docs/tenancy.md says how and why it is sound); a superuser or ``BYPASSRLS`` role is held by no
policy at all."""

from __future__ import annotations

from typing import Any

# The functions each search's index condition calls, named as `to_regprocedure` reads them.
MATCHERS = {
    "word": ("pg_catalog.ts_match_vq(tsvector,tsquery)",),
    "substring": ("pg_catalog.textlike(text,text)", "pg_catalog.lower(text)"),
}

_LIFTED = "SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
_LEAKPROOF = (
    "SELECT name, coalesce((SELECT proleakproof FROM pg_proc WHERE oid = to_regprocedure(name)),"
    " false) AS leakproof FROM unnest(CAST(? AS TEXT[])) AS name"
)


def reach(tx: Any) -> str:
    """One sentence, starting with ``lifted``, ``held`` or ``held, indexes unused``, that says
    which searches the policies keep from their indexes for the connected role."""
    if tx.scalar(_LIFTED):
        return "lifted: this role is a superuser or has BYPASSRLS, so no tenant policy holds it"
    names = [name for functions in MATCHERS.values() for name in functions]
    marked = {row["name"]: bool(row["leakproof"]) for row in tx.all(_LEAKPROOF, (names,))}
    narrowed = [kind for kind, functions in MATCHERS.items() if all(marked[f] for f in functions)]
    if len(narrowed) == len(MATCHERS):
        return "held: word and substring searches are narrowed by their indexes"
    unmarked = sorted(name.split(".")[1].split("(")[0] for name, ok in marked.items() if not ok)
    slow = [kind for kind in MATCHERS if kind not in narrowed]
    return (
        f"held, indexes unused: {' and '.join(slow)} searches read every row of the tenant,"
        f" since {', '.join(unmarked)} {'is' if len(unmarked) == 1 else 'are'} not LEAKPROOF"
        " (docs/tenancy.md: how a superuser lets the indexes narrow them)"
    )
