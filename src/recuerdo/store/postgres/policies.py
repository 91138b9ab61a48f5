"""Whether the tenant policies (step ``m016_tenant_policies``) keep this role's searches from
their indexes, as ``index_status`` reports it (``backend.tenant_policies``, decision 0065).

PostgreSQL tests a condition whose function is not ``LEAKPROOF`` only after a row passed the
policy, so such a condition cannot choose the rows through an index: a word search (``@@``,
``ts_match_vq``) or a substring search (``lower(content) LIKE``, ``textlike`` and ``lower``)
then reads every row of the tenant. A superuser may mark those functions ``LEAKPROOF`` in a
database that serves recuerdo alone (docs/tenancy.md says why not elsewhere). The sentence is
read from the catalog when a process opens the memory."""

from __future__ import annotations

from typing import Any

# The functions each search's index condition calls, named as `to_regprocedure` reads them.
MATCHERS = {
    "word": ("pg_catalog.ts_match_vq(tsvector,tsquery)",),
    "substring": ("pg_catalog.textlike(text,text)", "pg_catalog.lower(text)"),
}

_LEAKPROOF = (
    "SELECT name, (SELECT proleakproof FROM pg_proc WHERE oid = to_regprocedure(name))"
    " AS leakproof FROM unnest(CAST(? AS TEXT[])) AS name"
)


def reach(tx: Any, trigrams: bool) -> str:
    """One sentence, starting with ``lifted``, ``held`` or ``held, indexes unused``, that says
    which searches the policies keep from their indexes for the connected role (``trigrams``:
    whether substring searches have an index at all)."""
    if not tx.scalar("SELECT row_security_active('items')"):
        return "lifted: no tenant policy holds this role (a superuser or BYPASSRLS role)"
    searches = {kind: names for kind, names in MATCHERS.items() if trigrams or kind == "word"}
    wanted = [name for names in searches.values() for name in names]
    marked = {row["name"]: row["leakproof"] for row in tx.all(_LEAKPROOF, (wanted,))}
    slow = [kind for kind, names in searches.items() if not all(marked[n] for n in names)]
    if not slow:
        return f"held: {_listed(list(searches))} searches are narrowed by their indexes"
    unmarked = [
        _short(name) + (" (missing)" if marked[name] is None else "")
        for name in wanted
        if not marked[name]
    ]
    return (
        f"held, indexes unused: {_listed(slow)} searches read every row of the tenant, since"
        f" {_listed(unmarked)} {'is' if len(unmarked) == 1 else 'are'} not LEAKPROOF"
        " (docs/tenancy.md: when a superuser may let the indexes narrow them)"
    )


def _short(name: str) -> str:
    return name.split(".")[1].split("(")[0]


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
