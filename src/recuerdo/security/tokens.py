"""Principals and their tokens.

A token stands for a principal (a person or an agent) acting for one tenant (the end user whose
memory it reaches). Tokens are random, shown once when created, and stored only as SHA-256
hashes in ``<base>/.recuerdo/tokens.db``. A token's capabilities can only narrow what the host
allows: memory-name patterns (``memory=shop-*``), read-only, and allowed scopes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..core.clock import now_iso
from ..core.declare import state_root
from ..core.secrets import redact_text
from ..core.text import checked_label, owners_writer
from ..errors import InvalidInput, NotFound, ReservedWriterName
from ..store.base import Tx
from ..store.migrations import Schema
from ..store.sqlite import SQLiteStore
from ..store.sqlite.files import secure_folder
from .caps import memory_patterns

PREFIX = "rcd_"
_DUMMY = hashlib.sha256(b"recuerdo: no token").hexdigest()


@dataclass(frozen=True)
class Principal:
    name: str
    tenant: str
    memory_patterns: tuple[str, ...] = ("*",)
    read_only: bool = False
    scopes: tuple[str, ...] | None = None
    token_id: str | None = None
    local: bool = field(default=False, compare=False)


LOCAL = Principal("local", "local", local=True)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


ABSENT_RECHECK_SECONDS = 1.0


TOKEN_SCHEMA = Schema()


@TOKEN_SCHEMA.step
def t001_tokens(tx: Tx) -> None:
    tx.execute(
        "CREATE TABLE IF NOT EXISTS tokens (id TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE,"
        " principal TEXT NOT NULL, tenant TEXT NOT NULL, caps TEXT NOT NULL,"
        " read_only INTEGER NOT NULL, scopes TEXT, created_at TEXT NOT NULL,"
        " revoked_at TEXT)"
    )


@TOKEN_SCHEMA.step
def t002_lens_logouts(tx: Tx) -> None:
    """The lens sessions logged out before they expire: a session is a signed cookie, and
    logging out only replaced it in the browser, so a copy of the cookie kept working for its
    12 hours (a hunt over the doors)."""
    tx.execute(
        "CREATE TABLE IF NOT EXISTS lens_logouts (nonce TEXT PRIMARY KEY, expires INTEGER NOT NULL)"
    )


class TokenStore:
    """The host's tokens, in a small store beside the memories (its own SQLite file, 0600)."""

    def __init__(self, base_dir: str | os.PathLike[str] | None = None) -> None:
        self.path = state_root(base_dir).parent / "tokens.db"
        self._store: SQLiteStore | None = None
        self._lock = threading.Lock()
        self._absent_until = 0.0

    def _opened(self, create: bool, *, look_again: bool = False) -> SQLiteStore | None:
        """The token store; None while no token was ever created (reads never create it)."""
        with self._lock:
            if self._store is None:
                # Until the first token is created, every request would look for the file. A
                # server notices a new token file within a second (a look per request cost a
                # system call on the event loop: 3-4% of a loaded server's time); a request
                # that brings a token looks at once (``look_again``): it was just created.
                if not create:
                    moment = time.monotonic()
                    if moment < self._absent_until and not look_again:
                        return None
                    if not self.path.exists():
                        self._absent_until = moment + ABSENT_RECHECK_SECONDS
                        return None
                secure_folder(self.path.parent)
                self._store = SQLiteStore(str(self.path), schema=TOKEN_SCHEMA)
            return self._store

    def _read(self, sql: str, params: tuple[Any, ...] = (), *, look_again: bool = False) -> Any:
        store = self._opened(create=False, look_again=look_again)
        if store is None:
            return None
        with store.read() as tx:
            return tx.one(sql, params)

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    def any_active(self) -> bool:
        return self._read("SELECT 1 FROM tokens WHERE revoked_at IS NULL LIMIT 1") is not None

    def create(
        self,
        *,
        principal: str,
        tenant: str,
        caps: str | None = None,
        read_only: bool = False,
        scopes: list[str] | None = None,
    ) -> tuple[str, str]:
        """(token id, secret). The secret is returned here once and never stored."""
        name = redact_text(checked_label(principal, "principal", max_chars=200))
        if owners_writer(name):
            # The owner's own writer: a token so named wrote among the owner's entries.
            raise ReservedWriterName(f"a token's principal cannot be named {name!r}")
        tenant_name = redact_text(checked_label(tenant, "tenant", max_chars=200))
        if ":" in tenant_name:
            raise InvalidInput("a tenant name has no ':'")
        patterns = memory_patterns(caps) if caps else ["*"]
        if not patterns:
            raise InvalidInput("--caps must allow at least one memory (e.g. memory=shop-*)")
        allowed = None if not scopes else [checked_label(s, "scope") for s in scopes]
        token_id = secrets.token_hex(6)
        secret = PREFIX + secrets.token_urlsafe(32)
        store = self._opened(create=True)
        assert store is not None
        with store.write() as tx:
            tx.execute(
                "INSERT INTO tokens (id, hash, principal, tenant, caps, read_only, scopes,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    token_id,
                    _hash(secret),
                    name,
                    tenant_name,
                    json.dumps(patterns),
                    int(read_only),
                    None if allowed is None else json.dumps(allowed),
                    now_iso(),
                ),
            )
        return token_id, secret

    def list(self) -> list[dict[str, Any]]:
        store = self._opened(create=False)
        if store is None:
            return []
        with store.read() as tx:
            rows = tx.all("SELECT * FROM tokens ORDER BY created_at")
        return [
            {
                "id": r["id"],
                "principal": r["principal"],
                "tenant": r["tenant"],
                "caps": json.loads(r["caps"]),
                "read_only": bool(r["read_only"]),
                "scopes": None if r["scopes"] is None else json.loads(r["scopes"]),
                "created_at": r["created_at"],
                "revoked_at": r["revoked_at"],
            }
            for r in rows
        ]

    def revoke(self, token_id: str) -> dict[str, Any]:
        store = self._opened(create=False)
        changed = 0
        if store is not None:
            with store.write() as tx:
                changed = tx.execute(
                    "UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                    (now_iso(), token_id),
                )
        if not changed:
            raise NotFound(f"no active token with id {token_id!r}")
        return {"id": token_id, "revoked": True}

    def end_session(self, nonce: str, expires: int) -> None:
        """Log a lens session out for good (until it would have expired); the sessions past
        their time go from the list on the way."""
        store = self._opened(create=False)
        if store is None:
            return
        with store.write() as tx:
            tx.execute("DELETE FROM lens_logouts WHERE expires < ?", (int(time.time()),))
            tx.execute(
                "INSERT INTO lens_logouts (nonce, expires) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (nonce, expires),
            )

    def principal_of_session(self, token_id: str, nonce: str) -> Principal | None:
        """The principal of a lens session: its token's, while the token is active and the
        session was not logged out."""
        row = self._read(
            "SELECT * FROM tokens WHERE id = ? AND revoked_at IS NULL"
            " AND NOT EXISTS (SELECT 1 FROM lens_logouts WHERE nonce = ?)",
            (token_id, nonce),
            look_again=True,
        )
        return None if row is None else _principal(row)

    def verify(self, secret: str | None) -> Principal | None:
        """The principal of a token, or None. A missing token costs the same as a wrong one:
        a hash and a lookup either way."""
        digest = _hash(secret) if secret else _DUMMY
        row = self._read(
            "SELECT * FROM tokens WHERE hash = ? AND revoked_at IS NULL",
            (digest,),
            look_again=bool(secret),
        )
        if row is None or not secret or not hmac.compare_digest(row["hash"], digest):
            return None
        return _principal(row)


def _principal(row: Any) -> Principal:
    return Principal(
        name=row["principal"],
        tenant=row["tenant"],
        memory_patterns=tuple(json.loads(row["caps"])),
        read_only=bool(row["read_only"]),
        scopes=None if row["scopes"] is None else tuple(json.loads(row["scopes"])),
        token_id=row["id"],
    )
