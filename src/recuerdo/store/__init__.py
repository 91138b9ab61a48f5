"""Storage backends behind the :class:`~recuerdo.store.base.Store` protocol."""

from .base import Row, Store, Tx
from .sqlite import SQLiteStore

__all__ = ["Row", "SQLiteStore", "Store", "Tx"]
