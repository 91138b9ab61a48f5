"""The ingest verb: documents in, citable passages out (family: knowledge)."""

from __future__ import annotations

from ..core.text import checked_label
from ..errors import DocumentCorrupt, DocumentNotReadable, PayloadTooLarge, UnsupportedMediaType
from ..facade import MemoryBase, verb
from . import document
from .results import Ingested

FAMILY = "knowledge"
DEFAULT_SCOPE = "user"


def _scope(scope: object) -> str:
    return DEFAULT_SCOPE if scope is None else checked_label(scope, "scope")


class IngestVerbs(MemoryBase):
    @verb(
        "write",
        errors=(PayloadTooLarge, UnsupportedMediaType, DocumentCorrupt, DocumentNotReadable),
        cli_batch="path",
        raw=("content_base64", "path"),
        paths={"path": "content_base64"},
    )
    def ingest(
        self,
        content_base64: str | None = None,
        *,
        path: str | None = None,
        name: str | None = None,
        source: str | None = None,
        scope: str | None = None,
    ) -> Ingested:
        """Store a document (PDF, Word .docx, HTML, Markdown or UTF-8 text, at most 5,000,000 bytes;
        the kind is read from the bytes) as citable passages. The reply has its doc_id, sizes and
        block_count, customs (what the upload went through: kind, size, redactions, the stored
        text read back identical, the upload emptied), and, up to 16 KiB of text, the text and its
        blocks. The same bytes with the same name and source in the same scope answer outcome
        'already' with the stored doc_id, and nothing is stored again.

        Args:
            content_base64: The document's bytes, base64.
            path: A file to read instead (local use).
            name: The document's name in citations.
            source: A provenance label (forget by source removes it).
            scope: The scope (default 'user'); another scope never sees this one.
        """
        data, file_name = document.read_input(content_base64, path)
        scope = _scope(scope)
        source = None if source is None else checked_label(source, "source")
        # Read outside the write: a large document takes seconds, and every writer waits.
        read = document.read(data, name or file_name or "document")
        with self._write() as tx:
            reply = document.ingest(
                tx,
                tenant=self.tenant,
                principal=self.principal,
                document=read,
                scope=scope,
                source=source,
            )
        return reply
