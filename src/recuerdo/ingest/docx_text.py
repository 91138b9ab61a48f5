"""Word (.docx): paragraphs with their styles' headings and list items, then tables."""

from __future__ import annotations

import io

from .blocks import Block, BlockKind, clean


def docx(data: bytes) -> list[Block]:
    import zipfile

    import docx as python_docx

    from ..errors import DocumentCorrupt

    try:
        document = python_docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise DocumentCorrupt("the Word document is truncated or corrupt") from exc
    except Exception as exc:
        raise DocumentCorrupt(f"the Word document cannot be read ({type(exc).__name__})") from exc
    blocks = []
    for paragraph in document.paragraphs:
        text = clean(paragraph.text)
        if not text:
            continue
        style = (paragraph.style.name or "").lower() if paragraph.style is not None else ""
        kind: BlockKind = (
            "heading"
            if style.startswith(("heading", "title"))
            else "list_item"
            if "list" in style
            else "paragraph"
        )
        blocks.append(Block(kind, text, None))
    for table in document.tables:
        for row in table.rows:
            cells = [clean(cell.text) for cell in row.cells]
            if any(cells):
                blocks.append(Block("paragraph", " | ".join(cells), None))
    return blocks
