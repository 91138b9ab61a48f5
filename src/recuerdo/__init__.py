"""recuerdo: persistent, inspectable memory for AI agents.

>>> import recuerdo
>>> memory = recuerdo.open("support-agent", in_memory=True)
>>> entry_id = memory.remember("learning", "API is slow on Mondays", ["api"])
>>> memory.recall("learning", ["api"])[0]["content"]
'API is slow on Mondays'
"""

from .engine import Memory
from .engine import open_memory as open
from .errors import (
    CapabilityNotGranted,
    ContentTooLarge,
    EmptyContent,
    InvalidBatch,
    InvalidCategory,
    InvalidInput,
    InvalidMemoryName,
    InvalidRuleLevel,
    InvalidTags,
    ItemNotFound,
    MemoryNotNamed,
    MultipleMemoryDeclarations,
    NotFound,
    RecuerdoError,
    StepNotFound,
    StoreError,
    TaskNotFound,
)
from .model import CATEGORIES, RULE_LEVELS
from .security.caps import sandbox

__version__ = "0.1.0"

__all__ = [
    "CATEGORIES",
    "RULE_LEVELS",
    "CapabilityNotGranted",
    "ContentTooLarge",
    "EmptyContent",
    "InvalidBatch",
    "InvalidCategory",
    "InvalidInput",
    "InvalidMemoryName",
    "InvalidRuleLevel",
    "InvalidTags",
    "ItemNotFound",
    "Memory",
    "MemoryNotNamed",
    "MultipleMemoryDeclarations",
    "NotFound",
    "RecuerdoError",
    "StepNotFound",
    "StoreError",
    "TaskNotFound",
    "__version__",
    "open",
    "sandbox",
]
