"""Addresses: ``name@domain``, each bound to one principal of a tenant, once and for good.

An address is the identity a principal sends and receives under: the binding belongs to the
principal of the handle that binds it (``main`` in process, an agent's name through
``Memory.agent``, a token's principal on a server). Addresses are kept in lower case, so two
spellings of one address can never belong to two principals. New bindings must use a domain that
is ours: the tenant's (``configure(mail_domains=...)``), else the server's (``serve
--mail-domain``), else ``local``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..core.clock import now_iso
from ..core.exact import shown
from ..core.settings import mail_domains
from ..errors import (
    AddressInvalid,
    AddressNotBound,
    AddressTaken,
    AddressUnknown,
    DomainNotOurs,
    KindInvalid,
)
from ..store.base import Row, Tx
from .model import AddressBinding, Kind, OwnAddress

KINDS: tuple[Kind, ...] = ("user", "agent")
DEFAULT_DOMAIN = "local"
MAX_ADDRESS_CHARS = 254  # the longest address mail systems carry
_PART = r"[a-z0-9_+-]+(?:\.[a-z0-9_+-]+)*"
_ADDRESS = re.compile(rf"({_PART})@({_PART})")


def check_address(value: object) -> str:
    """The address in its stored form (lower case), or ``address_invalid``."""
    address = value.strip().lower() if isinstance(value, str) else None
    if (
        address is None
        or not address.isascii()
        or len(address) > MAX_ADDRESS_CHARS
        or not _ADDRESS.fullmatch(address)
    ):
        raise AddressInvalid(
            f"{value!r} is not an address: name@domain of ASCII letters, digits and . - _ +, "
            f"with exactly one @ and at most {MAX_ADDRESS_CHARS} characters"
        )
    return address


def check_kind(kind: object) -> Kind:
    for known in KINDS:
        if kind == known:
            return known
    raise KindInvalid(f"kind is one of {', '.join(KINDS)}, got {shown(kind)}")


def domains(tx: Tx, tenant: str, served: Sequence[str]) -> list[str]:
    """The domains an address may be bound in, for this tenant."""
    return mail_domains(tx, tenant) or list(served) or [DEFAULT_DOMAIN]


def bind(
    tx: Tx, *, tenant: str, principal: str, address: object, kind: object, served: Sequence[str]
) -> AddressBinding:
    wanted = check_address(address)
    chosen = check_kind(kind)
    held = tx.one(
        "SELECT principal, kind, bound_at FROM comms_addresses WHERE tenant = ? AND address = ?",
        (tenant, wanted),
    )
    if held is not None:
        if held["principal"] != principal:
            raise AddressTaken(f"{wanted} is bound to another principal (nothing was changed)")
        return {
            "address": wanted,
            "kind": check_kind(held["kind"]),
            "principal": principal,
            "bound": "already",
            "bound_at": held["bound_at"],
        }
    ours = domains(tx, tenant, served)
    domain = wanted.partition("@")[2]
    if domain not in ours:
        raise DomainNotOurs(
            f"{domain!r} is not a domain of this memory; addresses here end in "
            f"{', '.join('@' + d for d in ours)} (nothing was bound)",
            domains=ours,
        )
    stamp = now_iso()
    tx.execute(
        "INSERT INTO comms_addresses (tenant, address, principal, kind, bound_at)"
        " VALUES (?, ?, ?, ?, ?)",
        (tenant, wanted, principal, chosen, stamp),
    )
    return {
        "address": wanted,
        "kind": chosen,
        "principal": principal,
        "bound": "new",
        "bound_at": stamp,
    }


def own(tx: Tx, tenant: str, principal: str) -> list[OwnAddress]:
    """The principal's addresses, oldest first."""
    return [
        {"address": row["address"], "kind": check_kind(row["kind"]), "bound_at": row["bound_at"]}
        for row in tx.all(
            "SELECT address, kind, bound_at FROM comms_addresses WHERE tenant = ?"
            " AND principal = ? ORDER BY bound_at, address",
            (tenant, principal),
        )
    ]


def sender(tx: Tx, tenant: str, principal: str, chosen: object, prefer: Sequence[str]) -> str:
    """The address a message goes out from: ``chosen`` if given (it must be the caller's),
    else the caller's first address among ``prefer`` (a conversation's members), else its
    first address."""
    mine = [a["address"] for a in own(tx, tenant, principal)]
    if chosen is not None:
        wanted = check_address(chosen)
        if wanted not in mine:
            raise AddressNotBound(f"{wanted} is not one of your addresses (nothing was sent)")
        return wanted
    if not mine:
        raise AddressNotBound(
            "you have no address to send from: bind one first (bind_address), nothing was sent"
        )
    return next((a for a in mine if a in prefer), mine[0])


def owners(tx: Tx, tenant: str, addresses: Sequence[str]) -> dict[str, str]:
    """address -> principal, for the bound ones among ``addresses``."""
    found: dict[str, str] = {}
    wanted = sorted(set(addresses))
    for first in range(0, len(wanted), 500):
        part = wanted[first : first + 500]
        marks = ",".join("?" * len(part))
        rows: list[Row] = tx.all(
            f"SELECT address, principal FROM comms_addresses WHERE tenant = ?"
            f" AND address IN ({marks})",
            [tenant, *part],
        )
        found.update((row["address"], row["principal"]) for row in rows)
    return found


def resolve(tx: Tx, tenant: str, addresses: Sequence[str]) -> dict[str, str]:
    """address -> principal for every address, or ``address_unknown`` naming each unbound
    one."""
    found = owners(tx, tenant, addresses)
    unknown = [a for a in addresses if a not in found]
    if unknown:
        raise AddressUnknown(
            f"no one has bound {', '.join(unknown)} (nothing was sent)", unknown=unknown
        )
    return found
