"""What a document is, from its bytes (never from its name)."""

from __future__ import annotations

import io
import re
import zipfile

from ..errors import UnsupportedMediaType

KINDS = ("pdf", "docx", "html", "markdown", "text")

# HTML is what starts like an HTML document: a doctype or an <html>, <head> or <body> tag, after
# white space, comments and an XML declaration (XHTML). A tag further in is not enough: notes
# and Markdown that mention "<body>" or "<p>" were read as HTML and lost their text.
_HTML_START = re.compile(
    r"(?:\s|<!--.*?-->|<\?xml[^>]*\?>)*<(?:!doctype\s+html|html|head|body)[\s>/]",
    re.IGNORECASE | re.DOTALL,
)


def sniff(data: bytes) -> str:
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                if "word/document.xml" in archive.namelist():
                    return "docx"
        except zipfile.BadZipFile:
            return "docx"  # a zip that looks like Word but is cut: the parser calls it corrupt
        raise UnsupportedMediaType("a zip archive that is not a Word document")
    if b"\x00" in data[:8192]:
        raise UnsupportedMediaType("binary data that is not a PDF or Word document")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnsupportedMediaType(
            "not a document: the bytes are neither PDF, Word, HTML nor UTF-8 text"
        ) from exc
    if _HTML_START.match(text, 0, 8192):
        return "html"
    lines = [line.lstrip() for line in text.splitlines()[:200]]
    if any(line.startswith(("# ", "## ", "- ", "* ", "```")) for line in lines):
        return "markdown"
    return "text"
