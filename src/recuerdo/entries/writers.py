"""Who writes entries: the owner's writer ``main`` (top-level code) and named agents.

An agent writes under its own name and reads its own entries by default. A name that is no
writer of its own is refused: ``*`` means every writer, and ``main`` (in any casing: ``Main``
beside ``main`` reads as the owner's writer to whoever lists entries) is the owner's, whose
entries and rights an agent so named took over (decision 0106).
"""

from __future__ import annotations

from ..core.text import checked_label
from ..errors import InvalidInput, ReservedWriterName
from .operations import ALL_SOURCES

MAIN_SOURCE = "main"


def owners_writer(name: str) -> bool:
    """Whether ``name`` is the owner's writer, in any casing."""
    return name.casefold() == MAIN_SOURCE


def check_agent_name(name: object) -> str:
    """An agent's name, refused when it is no writer of its own (``*``, ``main``)."""
    agent_name = checked_label(name, "agent name", max_chars=100)
    if agent_name == ALL_SOURCES:
        raise InvalidInput("'*' means every writer and cannot name an agent")
    if owners_writer(agent_name):
        raise ReservedWriterName(
            f"an agent cannot be named {agent_name!r}: it is the owner's own writer; top-level"
            " code writes as it without naming an agent"
        )
    return agent_name
