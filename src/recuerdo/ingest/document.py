"""ingest: store a document (PDF, Word, HTML, Markdown or text) as passages with citations.

Refusals store nothing: too large ``payload_too_large`` (413), not a document
``unsupported_media_type`` (415), truncated or corrupt ``document_corrupt`` (422), encrypted or
image-only PDF ``document_not_readable`` (422). The stored text is read back and compared
before the upload is discarded.

Every reply carries ``customs``: what the upload went through on its way in: the kind read
from its bytes (never its name), its size, how many blocks had a secret redacted, that the
stored text read back identical, and ``emptied: true``: the uploaded bytes were dropped once
the text was safely stored (only the parsed text is kept). A text up to 16 KiB comes back
with its ``blocks``; a larger one gives sizes (``text_bytes``, ``block_count``) instead.

The same bytes under the same name and source in the same scope, read to the same text, are
stored once: a second ingest answers ``outcome: already`` with the stored document's id and
stores nothing, as ``remember_knowledge`` does with the same call.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..core.clock import now_iso
from ..core.secrets import redact_text
from ..core.text import checked_label
from ..errors import EmptyContent, InvalidInput, PayloadTooLarge, StoreError
from ..graph.remember import link_passages
from ..graph.store import insert_document
from ..index.chunk import Span, chunk_spans
from ..index.chunks import insert_chunks, passage_key
from ..store.base import Tx
from . import parse
from .results import Ingested
from .sniff import sniff

MAX_BYTES = 5_000_000
INLINE_TEXT_BYTES = 16_384


def read_input(content_base64: object, path: object) -> tuple[bytes, str | None]:
    """The document's bytes and, for a path, its file name."""
    if (content_base64 is None) == (path is None):
        raise InvalidInput("give exactly one of content_base64 or path")
    if path is not None:
        if not isinstance(path, str | os.PathLike):
            raise InvalidInput("path must be a file path")
        file = Path(path)
        if not file.is_file():
            raise InvalidInput(f"no file at {str(file)!r}")
        size = file.stat().st_size
        if size > MAX_BYTES:
            raise PayloadTooLarge(
                f"the file is {size} bytes; the limit is {MAX_BYTES}", size=size, maximum=MAX_BYTES
            )
        return file.read_bytes(), file.name
    if not isinstance(content_base64, str):
        raise InvalidInput("content_base64 must be base64 text")
    if len(content_base64) > (MAX_BYTES * 4) // 3 + 8:
        raise PayloadTooLarge(f"the document is over {MAX_BYTES} bytes", maximum=MAX_BYTES)
    try:
        data = base64.b64decode(content_base64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInput("content_base64 is not valid base64") from exc
    if len(data) > MAX_BYTES:
        raise PayloadTooLarge(
            f"the document is {len(data)} bytes; the limit is {MAX_BYTES}",
            size=len(data),
            maximum=MAX_BYTES,
        )
    return data, None


def blocks_of(data: bytes) -> tuple[str, list[parse.Block]]:
    if not data:
        raise EmptyContent("the document is empty")
    kind = sniff(data)
    if kind == "pdf":
        return kind, parse.pdf(data)
    if kind == "docx":
        return kind, parse.docx(data)
    text = data.decode("utf-8-sig")
    if kind == "html":
        return kind, parse.html(text)
    return kind, parse.plain(text, markdown=kind == "markdown")


# Latin ligatures (U+FB00-FB06) as the letters they join. A PDF's text layer gives a ligature
# glyph as its one code point ("\ufb01nance"), and no search folds it: "finance" found nothing
# in a PDF set with ligatures (0145). They are presentation forms: a reader sees the letters.
_LIGATURES = str.maketrans(
    {chr(point): unicodedata.normalize("NFKC", chr(point)) for point in range(0xFB00, 0xFB07)}
)


@dataclass(frozen=True)
class Read:
    """A document read, its secrets redacted and its text cut into passages: all an ingest
    stores, made before its write transaction. Reading a large PDF takes seconds (3,000 short
    paragraphs: 27 s on a loaded machine), and every writer of the memory waited for it (on
    PostgreSQL, every server sharing the memory)."""

    kind: str
    blocks: list[parse.Block]
    spans: list[tuple[int, int]]
    text: str
    redacted: int
    label: str
    digest: str
    passages: list[Span]
    size: int


def read(data: bytes, name: str) -> Read:
    kind, blocks = blocks_of(data)
    if not blocks:
        raise EmptyContent("the document holds no text")
    parts, spans = [], []
    position, redacted = 0, 0
    for block in blocks:
        letters = block.text.translate(_LIGATURES)
        text = redact_text(letters)
        redacted += text != letters
        parts.append(text)
        spans.append((position, position + len(text)))
        position += len(text) + 2
    text = "\n\n".join(parts)
    return Read(
        kind=kind,
        blocks=blocks,
        spans=spans,
        text=text,
        redacted=redacted,
        label=checked_label(name, "name"),
        digest=hashlib.sha256(data).hexdigest(),
        passages=chunk_spans(text),
        size=len(data),
    )


def ingest(
    tx: Tx, *, tenant: str, principal: str, document: Read, scope: str, source: str | None
) -> Ingested:
    kind, blocks, spans, text = document.kind, document.blocks, document.spans, document.text
    label, digest, passages = document.label, document.digest, document.passages
    # Found through its first passage's key (indexed; it covers the title too), not by reading
    # the scope's documents.
    head = text[passages[0].start : passages[0].end] if passages else ""
    earlier = tx.one(
        "SELECT i.id, i.created_at FROM chunks c JOIN items i ON i.tenant = c.tenant"
        " AND i.id = c.item_id WHERE c.tenant = ? AND c.hash = ? AND c.ordinal = 0"
        " AND i.scope = ? AND i.item_type = 'document' AND i.title = ?"
        f" AND {tx.json_text('i.meta', 'sha256')} = ? AND {tx.json_text('i.meta', 'source')} = ?"
        " AND i.content = ? ORDER BY i.id LIMIT 1",
        (tenant, passage_key(label, head), scope, label, digest, source or label, text),
    )
    if earlier is not None:
        doc_id, stamp = int(earlier["id"]), str(earlier["created_at"])
        passage_count = int(
            tx.scalar(
                "SELECT count(*) FROM chunks WHERE tenant = ? AND item_id = ?", (tenant, doc_id)
            )
        )
        outcome: Literal["stored", "already"] = "already"
    else:
        doc_id, stamp, passage_count = _store(
            tx, tenant, principal, scope, label, text, passages, kind, source, document.size, digest
        )
        outcome = "stored"
    encoded = text.encode("utf-8")
    reply: Ingested = {
        "outcome": outcome,
        "doc_id": doc_id,
        "name": label,
        "kind": kind,
        "scope": scope,
        "bytes": document.size,
        "text_bytes": len(encoded),
        "text_chars": len(text),
        "block_count": len(blocks),
        "passages": passage_count,
        "ingested_at": stamp,
        "customs": {
            "kind": kind,
            "bytes": document.size,
            "blocks_redacted": document.redacted,
            "read_back": "identical",
            "emptied": True,
        },
    }
    if len(encoded) <= INLINE_TEXT_BYTES:
        reply["text"] = text
        reply["blocks"] = [
            {
                "page": block.page,
                "paragraph": number,
                "kind": block.kind,
                "start": start,
                "end": end,
                "byte_start": len(text[:start].encode("utf-8")),
                "byte_end": len(text[:end].encode("utf-8")),
            }
            for number, (block, (start, end)) in enumerate(zip(blocks, spans, strict=True), 1)
        ]
    return reply


def _store(
    tx: Tx,
    tenant: str,
    principal: str,
    scope: str,
    label: str,
    text: str,
    passages: list[Span],
    kind: str,
    source: str | None,
    size: int,
    digest: str,
) -> tuple[int, str, int]:
    """The document stored, read back and cut into linked passages: its id, stored time and
    passage count."""
    stamp = now_iso()
    meta = {"kind": kind, "source": source or label, "bytes": size, "sha256": digest}
    doc_id = insert_document(
        tx,
        tenant,
        scope,
        title=label,
        text=text,
        principal=principal,
        said_at=None,
        meta=meta,
        stored_at=stamp,
        updated_at=stamp,
    )
    if tx.scalar("SELECT content FROM items WHERE tenant = ? AND id = ?", (tenant, doc_id)) != text:
        raise StoreError("the stored document did not read back identical (nothing kept)")
    chunk_ids = insert_chunks(tx, tenant, doc_id, text, passages, title=label)
    link_passages(
        tx,
        tenant,
        scope,
        [(c, text[s.start : s.end]) for c, s in zip(chunk_ids, passages, strict=True)],
    )
    return doc_id, stamp, len(chunk_ids)
