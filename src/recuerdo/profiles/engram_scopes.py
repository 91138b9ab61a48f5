"""Where Engram's projects live in recuerdo: one mapping for the Engram profile (the ``mem_*``
tools) and the Engram importer, so what an import writes is what the tools read.

Engram matches projects trimmed and lower-cased ("ShopAPI" and " shopapi " are one project); an
observation lives in the scope ``project:<project>`` (no project is ``default``), a personal one
in ``user``. An importer that kept the project as given wrote ``project:ShopAPI``, a scope the
tools never read (decision 0102).
"""

from __future__ import annotations


def project_name(project: object) -> str | None:
    """The project as Engram matches it: trimmed and lower-cased; None when there is none."""
    if not isinstance(project, str):
        return None
    return project.strip().lower() or None


def project_scope(project: object) -> str:
    """The scope of a project's observations."""
    return f"project:{project_name(project) or 'default'}"


def engram_scope(project: object, scope: object) -> str:
    """The scope of an observation of ``project`` with Engram's ``scope`` (``project`` or
    ``personal``)."""
    return "user" if scope == "personal" else project_scope(project)
