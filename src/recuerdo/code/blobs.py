"""Blobs: what is kept of a file's bytes, the secret guard over whole files, and re-hashing.

A blob is addressed by the sha256 of its bytes (and carries its git blob id). Text is kept,
compressed with zlib when that saves space; binary files (a NUL byte in the first 8,000
bytes, git's own test) and files over ``MAX_KEPT_BYTES`` keep only their hash and size. Every
read re-hashes the bytes: a blob whose bytes no longer hash to its address is never served.
"""

from __future__ import annotations

import fnmatch
import hashlib
import posixpath
import zlib
from dataclasses import dataclass

from ..core.secrets import redact
from ..errors import BlobCorrupt
from ..store.base import Row, Tx

MAX_KEPT_BYTES = 8 * 2**20
_BINARY_PROBE = 8000
# Whole files refused by their name: credentials by convention, whatever they hold now.
REFUSED_NAMES = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".pgpass",
    "*.keystore",
)


def refused_name(path: str) -> bool:
    name = posixpath.basename(path)
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in REFUSED_NAMES)


@dataclass(frozen=True)
class Blob:
    sha256: str
    git_blob: str
    size: int
    encoding: str  # utf-8, bytes (text that is not UTF-8), binary, oversize
    compression: str  # none, zlib
    content: bytes | None  # what is stored (compressed or not); None when not kept
    credential: bool  # the secret guard found a credential: the blob is refused, not stored

    @property
    def text(self) -> str | None:
        """The UTF-8 text (for search), when it is text."""
        if self.encoding != "utf-8" or self.content is None:
            return None
        return unpack(self.content, self.compression).decode("utf-8")


def classify(git_blob: str, data: bytes) -> Blob:
    """What to keep of a blob read from git."""
    digest = hashlib.sha256(data).hexdigest()
    size = len(data)
    if b"\0" in data[:_BINARY_PROBE]:
        return Blob(digest, git_blob, size, "binary", "none", None, False)
    if size > MAX_KEPT_BYTES:
        return Blob(digest, git_blob, size, "oversize", "none", None, False)
    try:
        text = data.decode("utf-8")
        encoding = "utf-8"
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # every byte is a character: the guard still reads it
        encoding = "bytes"
    if redact(text).found:
        return Blob(digest, git_blob, size, encoding, "none", None, True)
    packed = zlib.compress(data, 6) if size > 128 else data
    if len(packed) < size:
        return Blob(digest, git_blob, size, encoding, "zlib", packed, False)
    return Blob(digest, git_blob, size, encoding, "none", data, False)


def unpack(content: bytes, compression: str) -> bytes:
    return zlib.decompress(content) if compression == "zlib" else bytes(content)


def store(tx: Tx, tenant: str, blobs: list[Blob]) -> tuple[int, int]:
    """Insert the kept blobs (credential ones are never stored); (added, bytes added)."""
    rows = [
        (tenant, b.sha256, b.git_blob, b.size, b.encoding, b.compression, b.content)
        for b in blobs
        if not b.credential
    ]
    if not rows:
        return 0, 0
    added = tx.executemany(
        "INSERT INTO code_blobs (tenant, sha256, git_blob, size, encoding, compression, content)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, sha256) DO NOTHING",
        rows,
    )
    return added, sum(b.size for b in blobs if not b.credential)


def known(tx: Tx, tenant: str, git_blobs: list[str]) -> dict[str, Row]:
    """Stored blobs by git blob id."""
    found: dict[str, Row] = {}
    for first in range(0, len(git_blobs), 900):
        part = git_blobs[first : first + 900]
        marks = ",".join("?" * len(part))
        for row in tx.all(
            "SELECT sha256, git_blob, size, encoding FROM code_blobs"
            f" WHERE tenant = ? AND git_blob IN ({marks})",
            [tenant, *part],
        ):
            found[row["git_blob"]] = row
    return found


def still_stored(tx: Tx, tenant: str, git_blobs: list[str]) -> bool:
    """Whether every blob an ingest found stored (in an earlier read) is still there, checked
    inside its write: a repository's forget deletes the blobs no change points at, and a
    change row pointing at a deleted blob would be unreadable (``blob_corrupt``)."""
    return len(known(tx, tenant, git_blobs)) == len(set(git_blobs))


def read(tx: Tx, tenant: str, sha256: str) -> tuple[Row, bytes | None]:
    """A blob's row and its bytes (``None`` when only the hash is kept), re-hashed: a blob
    that does not hash to its address raises :class:`BlobCorrupt` and is never returned."""
    row = tx.one(
        "SELECT sha256, git_blob, size, encoding, compression, content FROM code_blobs"
        " WHERE tenant = ? AND sha256 = ?",
        (tenant, sha256),
    )
    if row is None:
        raise BlobCorrupt(f"blob {sha256} is missing from the store (run code verify)")
    if row["content"] is None:
        return row, None
    data = intact(row)
    if data is None:
        raise BlobCorrupt(
            f"blob {sha256} (git {row['git_blob']}) no longer hashes to its sha256: it is not "
            "served; run `recuerdo code verify` and ingest the repository again into a new memory"
        )
    return row, data


def intact(row: Row) -> bytes | None:
    """The blob's bytes if they re-hash to its sha256, else ``None``."""
    try:
        data = unpack(row["content"], row["compression"])
    except zlib.error:
        return None
    if len(data) != row["size"] or hashlib.sha256(data).hexdigest() != row["sha256"]:
        return None
    return data
