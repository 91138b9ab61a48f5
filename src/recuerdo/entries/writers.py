"""Who writes entries: the owner's writer ``main`` (top-level code) and named agents.

An agent writes under its own name and reads its own entries by default. A name that is no
writer of its own is refused: ``*`` means every writer, and ``main`` (in any casing: ``Main``
beside ``main`` reads as the owner's writer to whoever lists entries) is the owner's, whose
entries and rights an agent so named took over (decision 0106); so is any name that reads as
it (fullwidth, Cyrillic or Greek look-alikes: decision 0136). Other names are each a writer of
its own exactly as written: ``Bob`` and ``bob`` are two.
"""

from __future__ import annotations

import unicodedata

from ..core.text import OWNERS_WRITER, checked_label
from ..core.text import owners_writer as owners_writer  # the engine names it from here
from ..errors import InvalidInput, ReservedWriterName
from .operations import ALL_SOURCES

MAIN_SOURCE = OWNERS_WRITER


def check_agent_name(name: object) -> str:
    """An agent's name, refused when it is no writer of its own (``*``, ``main``)."""
    agent_name = checked_label(name, "agent name", max_chars=100)
    if unicodedata.normalize("NFKC", agent_name) == ALL_SOURCES:  # '＊' is listed as '*' too
        raise InvalidInput("'*' means every writer and cannot name an agent")
    if owners_writer(agent_name):
        raise ReservedWriterName(
            f"an agent cannot be named {agent_name!r}: it reads as the owner's own writer"
            " (main); top-level code writes as it without naming an agent"
        )
    return agent_name
