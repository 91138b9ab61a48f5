"""Storage backends behind the :class:`~recuerdo.store.base.Store` protocol."""

from .base import Capabilities, Row, Store, SubstringSearch, TextSearch, Tx
from .sqlite import SQLiteStore

__all__ = ["Capabilities", "Row", "SQLiteStore", "Store", "SubstringSearch", "TextSearch", "Tx"]
