"""The Markdown round trip of a memory's notes: ``export_markdown`` and ``import_markdown``.

They read and write files on the machine that holds the memory, so they are methods of the
memory's owner (like ``backup``) and commands of the CLI, never verbs of the network doors. The
file format and the rules of reading a file back are in :mod:`.markdown`.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

from ..core.items import check_reach, check_whole, reaching
from ..facade import MemoryBase
from ..store import durable_files
from . import markdown, markdown_find
from .results import MarkdownExport, MarkdownFile, MarkdownImport

BATCH = 100
"""Files read back in one write transaction. Each file is a few statements: 500 a write held
every other writer of a memory on PostgreSQL back 1-3 s; 100, 0.2-1 s, for no longer an import
(decision 0140)."""


def _stage_file(
    staged: durable_files.Replacements, path: Path, text: str, *, was: str | None = None
) -> bool:
    """Stage ``text`` for ``path`` unless it already holds exactly that (or, given ``was``,
    unless it no longer holds ``was``: an edit made meanwhile is never written over). Each file
    is whole or not at all, and durable once ``staged`` is committed (decision 0164): a user's
    file rewritten by a rename alone could be empty after a power cut."""
    data = text.encode("utf-8")
    try:
        current = path.read_bytes()
        if current == data or (was is not None and current != was.encode("utf-8")):
            return False
    except FileNotFoundError:
        if was is not None:
            return False
    path.parent.mkdir(parents=True, exist_ok=True)
    staged.stage(path, data)
    return True


def _markdown_files(root: Path) -> list[Path]:
    """The ``.md`` files under ``root`` in path order, leaving out hidden files and folders
    (``.git``, ``.obsidian``, a half-written file)."""
    found = []
    for path in root.rglob("*.md"):
        relative = path.relative_to(root)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            found.append(path)
    return sorted(found)


class NoteFiles(MemoryBase):
    def export_markdown(
        self, folder: str | os.PathLike[str], *, scope: str | None = None
    ) -> MarkdownExport:
        """Write every note (of ``scope``, or all) to ``folder`` as one Markdown file with front
        matter, in folders by axis and scope (see :mod:`recuerdo.notes.markdown`). A file that
        already holds the note exactly is left as it is. A view confined to scopes exports one
        of them, named (it wrote every scope's notes, and the titles they link to)."""
        check_reach(self.scopes, True, scope)
        root = markdown.check_folder(folder, must_exist=False)
        with reaching(self.scopes), self._store.read() as tx:
            rows = markdown.note_rows(tx, self.tenant, scope)
            linked = markdown.explicit_links(tx, self.tenant, self.principal)
        paths = markdown.file_names(rows)
        written = 0
        with durable_files.Replacements() as staged:
            for row in rows:
                front = markdown.front_matter(row, linked.get(row["id"], []), self.name)
                target = root.joinpath(*paths[row["id"]].parts)
                written += _stage_file(staged, target, markdown.render(front, row["content"]))
                if len(staged) >= BATCH:
                    staged.commit()
        return {
            "directory": str(root),
            "notes": len(rows),
            "written": written,
            "unchanged": len(rows) - written,
        }

    def import_markdown(self, folder: str | os.PathLike[str]) -> MarkdownImport:
        """Read the Markdown files under ``folder`` back as notes: created or updated by id or
        key, an edited file a new revision by principal ``markdown``, a file edited from an
        older version a conflict revision (never written over the note). Files that created or
        updated a note get its new id and version in their front matter. A file names its
        note's scope: a view confined to scopes is refused (it wrote into any)."""
        check_whole(self.scopes, "import_markdown")
        root = markdown.check_folder(folder, must_exist=True)
        files = _markdown_files(root)
        changes: list[MarkdownFile] = []
        counts = dict.fromkeys(("created", "updated", "unchanged", "conflict", "behind"), 0)
        skipped = links_added = 0
        for start in range(0, len(files), BATCH):
            batch = files[start : start + BATCH]
            ready: list[tuple[Path, str, markdown.Incoming | str]] = []
            for path in batch:
                relative = PurePosixPath(path.relative_to(root).as_posix())
                try:
                    text = markdown.read_text(path)
                    ready.append(
                        (path, text, markdown.incoming(markdown.parse(text), relative, self.name))
                    )
                except markdown.FileRefused as refused:
                    ready.append((path, "", str(refused)))
            fronts: list[tuple[Path, str, dict[str, Any]]] = []
            written = 0
            # The upkeep is told only of the notes written, after the commit: an unedited
            # folder read back costs no indexing work.
            with self._write(0) as tx:
                moved = markdown_find.Moved(tx, self.tenant)
                unnamed = markdown_find.Unnamed(
                    tx, self.tenant, [read for _, _, read in ready if not isinstance(read, str)]
                )
                for path, text, read in ready:
                    shown = path.relative_to(root).as_posix()
                    if isinstance(read, str):
                        skipped += 1
                        changes.append(
                            {
                                "path": shown,
                                "outcome": "skipped",
                                "id": None,
                                "version": None,
                                "detail": read,
                            }
                        )
                        continue
                    done = markdown.apply(tx, self.tenant, read, moved, unnamed)
                    links_added += done.links_added
                    if done.outcome == "skipped":
                        skipped += 1
                    else:
                        counts[done.outcome] += 1
                    written += done.outcome in ("created", "updated")
                    if done.rewrite and done.id is not None:
                        front = markdown.front_of(
                            tx, self.tenant, done.id, self.name, self.principal
                        )
                        fronts.append((path, text, front))
                    if done.outcome != "unchanged":
                        change: MarkdownFile = {
                            "path": shown,
                            "outcome": done.outcome,
                            "id": done.id,
                            "version": done.version,
                        }
                        if done.detail:
                            change["detail"] = done.detail
                        if done.conflict_revision_id is not None:
                            change["conflict_revision_id"] = done.conflict_revision_id
                        changes.append(change)
            if written:
                self._upkeep.poke(written)
            # A file's new front matter is rendered after the commit: it reads a note's row as
            # the write left it, and rendering 500 of them held every other writer back
            # (decision 0140).
            with durable_files.Replacements() as staged:
                for path, text, front in fronts:
                    _stage_file(staged, path, markdown.rewrite_front(text, front), was=text)
        return {
            "directory": str(root),
            "files": len(files),
            "created": counts["created"],
            "updated": counts["updated"],
            "unchanged": counts["unchanged"],
            "conflicts": counts["conflict"],
            "behind": counts["behind"],
            "skipped": skipped,
            "links_added": links_added,
            "changes": changes,
        }
