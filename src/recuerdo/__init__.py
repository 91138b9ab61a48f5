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
    Conflict,
    ContentTooLarge,
    DocumentCorrupt,
    DocumentNotReadable,
    EditRefused,
    EmptyContent,
    EmptyTitle,
    FactsShape,
    FindAmbiguous,
    FindNotFound,
    InvalidBatch,
    InvalidCategory,
    InvalidInput,
    InvalidLabel,
    InvalidMemoryName,
    InvalidOperation,
    InvalidRuleLevel,
    InvalidTags,
    ItemNotFound,
    LimitExceeded,
    MemoryNotNamed,
    MentionNotInPassage,
    MultipleMemoryDeclarations,
    NotFound,
    OperationContentMismatch,
    PayloadTooLarge,
    RecuerdoError,
    SectionAmbiguous,
    SectionNotFound,
    StepNotFound,
    StoreError,
    TaskNotFound,
    Timeout,
    Unauthorized,
    UnknownName,
    Unprocessable,
    UnsupportedMediaType,
    VersionConflict,
)
from .model import CATEGORIES, RULE_LEVELS
from .security.caps import sandbox

__version__ = "0.1.0"

__all__ = [
    "CATEGORIES",
    "RULE_LEVELS",
    "CapabilityNotGranted",
    "Conflict",
    "ContentTooLarge",
    "DocumentCorrupt",
    "DocumentNotReadable",
    "EditRefused",
    "EmptyContent",
    "EmptyTitle",
    "FactsShape",
    "FindAmbiguous",
    "FindNotFound",
    "InvalidBatch",
    "InvalidCategory",
    "InvalidInput",
    "InvalidLabel",
    "InvalidMemoryName",
    "InvalidOperation",
    "InvalidRuleLevel",
    "InvalidTags",
    "ItemNotFound",
    "LimitExceeded",
    "Memory",
    "MemoryNotNamed",
    "MentionNotInPassage",
    "MultipleMemoryDeclarations",
    "NotFound",
    "OperationContentMismatch",
    "PayloadTooLarge",
    "RecuerdoError",
    "SectionAmbiguous",
    "SectionNotFound",
    "StepNotFound",
    "StoreError",
    "TaskNotFound",
    "Timeout",
    "Unauthorized",
    "UnknownName",
    "Unprocessable",
    "UnsupportedMediaType",
    "VersionConflict",
    "__version__",
    "open",
    "sandbox",
]
