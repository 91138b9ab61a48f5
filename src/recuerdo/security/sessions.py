"""Browser sessions of the memory lens: signed cookies, never the token itself.

A lens session is a cookie value ``<kind>.<subject>.<expires>.<nonce>.<mac>``: ``kind`` is
``anon`` (a visitor who has not logged in, so the login form has a CSRF token too), ``local``
(single-user mode: no login) or ``token`` (``subject`` is the token's id, never its secret). The
MAC is an HMAC-SHA256 under a key kept beside the tokens (``<base>/.recuerdo/lens.key``, 0600),
so every worker of one server reads the same key and a session survives a restart. A session
stands for a token only while that token is active: revoking the token ends its sessions.

Each session has one CSRF token, an HMAC of the session's nonce under the same key: every form
carries it, and a POST whose token does not match its cookie is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..core.declare import state_root
from ..store.sqlite.files import secure_folder

SESSION_SECONDS = 12 * 3600
KINDS = ("anon", "local", "token")
_KEY_BYTES = 32


@dataclass(frozen=True)
class Session:
    kind: str
    subject: str
    expires: int
    nonce: str
    value: str
    """The cookie value itself."""


class SessionKeys:
    """Signs and checks lens sessions with the server's key (created on first use)."""

    def __init__(self, base_dir: str | os.PathLike[str] | None = None) -> None:
        self.path = state_root(base_dir).parent / "lens.key"
        self._key: bytes | None = None
        self._lock = threading.Lock()

    def _secret(self) -> bytes:
        with self._lock:
            if self._key is None:
                self._key = _load_or_create(self.path)
            return self._key

    def _mac(self, payload: str) -> str:
        return hmac.new(self._secret(), payload.encode("ascii"), hashlib.sha256).hexdigest()

    def issue(self, kind: str, subject: str = "-", *, now: float | None = None) -> Session:
        if kind not in KINDS or "." in subject or not subject.isascii():
            raise ValueError(f"not a session: {kind!r} {subject!r}")
        expires = int((time.time() if now is None else now) + SESSION_SECONDS)
        nonce = secrets.token_urlsafe(18).replace(".", "_")
        payload = f"{kind}.{subject}.{expires}.{nonce}"
        value = f"{payload}.{self._mac(payload)}"
        return Session(kind, subject, expires, nonce, value)

    def read(self, value: str | None, *, now: float | None = None) -> Session | None:
        """The session a cookie value stands for, or None (forged, expired or malformed)."""
        if not value or not value.isascii():
            return None
        parts = value.split(".")
        if len(parts) != 5:
            return None
        kind, subject, expires, nonce, mac = parts
        if kind not in KINDS or not expires.isdigit():
            return None
        if not hmac.compare_digest(mac, self._mac(".".join(parts[:4]))):
            return None
        if int(expires) < (time.time() if now is None else now):
            return None
        return Session(kind, subject, int(expires), nonce, value)

    def csrf(self, session: Session) -> str:
        return self._mac(f"csrf.{session.nonce}")

    def csrf_matches(self, session: Session | None, given: object) -> bool:
        if session is None or not isinstance(given, str) or not given.isascii():
            return False
        return hmac.compare_digest(self.csrf(session), given)


def _load_or_create(path: Path) -> bytes:
    """The key file's bytes; the first process to need it writes it (0600, atomically, so two
    workers starting together agree on one key)."""
    try:
        key = path.read_bytes()
        if len(key) == _KEY_BYTES:
            return key
    except FileNotFoundError:
        pass
    secure_folder(path.parent)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(secrets.token_bytes(_KEY_BYTES))
        with contextlib.suppress(FileExistsError):  # another worker won: use its key
            os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    key = path.read_bytes()
    if len(key) != _KEY_BYTES:
        raise OSError(f"{path} is not a lens key ({len(key)} bytes); remove it to make a new one")
    return key
