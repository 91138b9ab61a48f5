"""How a stored text hash is kept, on every backend (``docs/decisions/0023-store-size.md``,
``0029-chunk-spans.md``).

Chunks, embeddings and notes' repeat detection key text by SHA-256, kept as its first
``HASH_BYTES`` bytes (128 bits): a full 64-digit key was written four to six times per chunk
(the row, its index, the embedding row and its unique key) for nothing that 128 bits cannot do.
64 bits would not do: a birthday collision (about 2**32 tries) could be made on purpose, and a
forged twin would keep a forgotten text's vector alive under a living chunk. Since
``m022_binary_keys`` the 128 bits are stored as bytes, not as 32 hex digits: half the bytes, in
each row and index that holds a key.
"""

from __future__ import annotations

import hashlib

from .base import Tx

HASH_CHARS = 32
"""Hex digits of a key from ``m018_compact_store`` until ``m022_binary_keys``."""
HASH_BYTES = HASH_CHARS // 2
BINARY_KEYS = (("chunks", "hash"), ("embeddings", "hash"), ("items", "content_hash"))


def text_key(text: str) -> bytes:
    """The key of a text: the first :data:`HASH_BYTES` bytes of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).digest()[:HASH_BYTES]


def shorten_hashes(tx: Tx) -> None:
    """Migration ``m018_compact_store``, both backends: the stored keys, cut to their prefix
    (what :func:`recuerdo.index.chunks.chunk_hash` now gives for the same text). ``revisions``
    keep their full hashes: they are shown to users and belong to the history."""
    for table, column in BINARY_KEYS:
        tx.execute(
            f"UPDATE {table} /* every tenant */ SET {column} = substr({column}, 1, {HASH_CHARS})"
            f" WHERE length({column}) > {HASH_CHARS}"
        )
