"""The Semurg profile: memory_*, comms_* and code_* tools with Semurg's parameter names.

The parameters are those of Semurg's published client (``semurg-tools.json``), plus ``date`` on
``memory_relate`` (when the fact became true). Replies are the verbs' own, shown as Semurg
shows them, in one place (:func:`present`): ids are decimal strings (sent back unchanged), and
every reply says its ``state`` and ``meaning`` (``semurg_replies.py``).
"""

from __future__ import annotations

from typing import Any

from . import ToolMap, drop_none, prop, schema
from .semurg_replies import present, reply_schema

_SCOPE = prop("string", "The scope; agents using the same scope share it.")
_USER = prop("string", "An end user inside this key (no ':', at most 256 bytes).", maxLength=256)


def _keep(*names: str):  # type: ignore[no-untyped-def]
    def pick(args: dict[str, Any]) -> dict[str, Any]:
        return drop_none({name.rstrip("_"): args.get(name.rstrip("_")) for name in names})

    return pick


_REPO = prop("string", "The ingested repository.", maxLength=63)
_BRANCH = prop("string", "The branch it follows.", maxLength=255)
_REV = prop("string", "HEAD, HEAD~N or a commit id.", maxLength=255)
_PATH = prop("string", "A file path in the repository.", maxLength=4096)
_PREFIX = prop("string", "Only paths under this prefix.", maxLength=4096)


def _code(name: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolMap:
    """A code_* tool: the native verb of the same name, arguments passed as they are."""
    return ToolMap(
        name,
        name,
        description,
        schema(properties, required),
        lambda args: drop_none(dict(args)),
        read_only=True,
        http_path=name,
        present=present,
        reply_schema=reply_schema(name),
    )


def code_tools() -> list[ToolMap]:
    return [
        _code(
            "code_status",
            "Start here: what of a repository is stored, the tip it answers as of, lag, fresh.",
            {
                "repo": _REPO,
                "branch": _BRANCH,
                "stale_after": prop("integer", "Seconds until an ingest is stale.", minimum=1),
            },
            ["repo"],
        ),
        _code(
            "code_at",
            "A file at a revision: a window of its bytes with hashes, mode and rests_on.",
            {
                "repo": _REPO,
                "path": _PATH,
                "rev": _REV,
                "offset": prop("integer", "First byte.", minimum=0),
                "max_bytes": prop("integer", "Window size.", minimum=1, maximum=262144),
                "branch": _BRANCH,
            },
            ["repo", "path"],
        ),
        _code(
            "code_blame",
            "Which commit produced a file (file level), and the five changes before it.",
            {"repo": _REPO, "path": _PATH, "rev": _REV, "branch": _BRANCH},
            ["repo", "path"],
        ),
        _code(
            "code_changes_since",
            "Commits after a revision, oldest first, with their changed files; pages.",
            {
                "repo": _REPO,
                "rev": _REV,
                "limit": prop("integer", "Commits per page.", minimum=1, maximum=500),
                "path_prefix": _PREFIX,
                "after": prop("integer", "next_after of the last page.", minimum=0),
                "branch": _BRANCH,
            },
            ["repo", "rev"],
        ),
        _code(
            "code_diff",
            "Paths changed between two revisions, per path; one file's two sides with patch.",
            {
                "repo": _REPO,
                "from": _REV,
                "to": _REV,
                "limit": prop("integer", "Paths listed.", minimum=1, maximum=2000),
                "path_prefix": _PREFIX,
                "patch": prop("string", "The path to return both sides of.", maxLength=4096),
                "branch": _BRANCH,
            },
            ["repo", "from"],
        ),
        _code(
            "code_history",
            "The commits that changed a path, newest first.",
            {
                "repo": _REPO,
                "path": _PATH,
                "limit": prop("integer", "How many.", minimum=1, maximum=200),
                "before": prop("integer", "next_before of the last page.", minimum=0),
                "branch": _BRANCH,
            },
            ["repo", "path"],
        ),
    ]


def _memory(name: str, verb: str, description: str, shape: dict[str, Any], **rest: Any) -> ToolMap:
    return ToolMap(
        name, verb, description, shape, present=present, reply_schema=reply_schema(verb), **rest
    )


# -- the comms_* tools -----------------------------------------------------------------------

_ADDRESS = prop("string", "An address, name@domain.")
_CURSOR = prop("string", "The next cursor of the previous page.")
_PAGE = prop("integer", "How many per page.", minimum=1, maximum=4096)
_COMMS_SCOPE = prop(
    "string",
    "Keep to the conversations of this scope (a new one is kept in it; default: every scope,"
    " and 'user' for a new one). A token limited to scopes names one of them.",
)


def comms_tools() -> list[ToolMap]:
    """Messaging between agents and people: Semurg's comms_* names over the native verbs."""
    return [
        _memory(
            "comms_bind_address",
            "bind_address",
            "Bind an address to yourself so others can message you; again answers already.",
            schema(
                {
                    "address": _ADDRESS,
                    "kind": prop("string", "Who holds it.", enum=["user", "agent"]),
                    "user_id": _USER,
                },
                ["address"],
            ),
            translate=_keep("address", "kind"),
            http_path="comms_bind_address",
        ),
        _memory(
            "comms_send",
            "send_message",
            "Send a message to addresses; stored once, read only by the conversation's members.",
            schema(
                {
                    "to": prop("array", "Recipient addresses (1-4096).", items={"type": "string"}),
                    "subject": prop("string", "At most 1024 bytes."),
                    "body": prop("string", "The text, at most 16 MiB."),
                    "reply_to": prop("string", "The id of the message this answers."),
                    "scope": _COMMS_SCOPE,
                    "user_id": _USER,
                },
                ["to", "body"],
            ),
            translate=lambda a: drop_none(
                {
                    "to": a.get("to"),
                    "subject": a.get("subject") or "",
                    "body": a.get("body"),
                    "reply_to": a.get("reply_to"),
                    "scope": a.get("scope"),
                }
            ),
            http_path="comms_send",
        ),
        _memory(
            "comms_inbox",
            "inbox",
            "Your conversations, most recent first, with unread counts.",
            schema({"after": _CURSOR, "limit": _PAGE, "scope": _COMMS_SCOPE, "user_id": _USER}),
            translate=_keep("after", "limit", "scope"),
            read_only=True,
            http_path="comms_inbox",
        ),
        _memory(
            "comms_thread",
            "thread",
            "One conversation's messages, oldest first; moves your unread cursor.",
            schema(
                {
                    "conversation_id": prop("string", "The conversation."),
                    "after": _CURSOR,
                    "limit": _PAGE,
                    "scope": _COMMS_SCOPE,
                    "user_id": _USER,
                },
                ["conversation_id"],
            ),
            translate=_keep("conversation_id", "after", "limit", "scope"),
            read_only=True,
            http_path="comms_thread",
        ),
        _memory(
            "comms_read",
            "read_message",
            "One message whole, body exactly as sent.",
            schema(
                {
                    "message_id": prop("string", "The message."),
                    "scope": _COMMS_SCOPE,
                    "user_id": _USER,
                },
                ["message_id"],
            ),
            translate=_keep("message_id", "scope"),
            read_only=True,
            http_path="comms_read",
        ),
    ]


# -- the memory_* tools ----------------------------------------------------------------------

_ID = prop("string", "An id, as a reply gave it.", pattern="^[0-9]{1,20}$")
_WHEN = "ISO 8601."


def _recall(args: dict[str, Any]) -> dict[str, Any]:
    return drop_none(
        {
            "subject": args.get("subject"),
            "attribute": args.get("attribute"),
            "k": args.get("k"),
            "as_of": args.get("as_of"),
            "valid_at": args.get("valid_at"),
            "compact": args.get("compact"),
            "scope": args.get("scope"),
        }
    )


def tools() -> list[ToolMap]:
    return [
        _memory(
            "memory_status",
            "status",
            "Whether memory is on, which scopes hold data, and one scope's ontology.",
            schema({"scope": _SCOPE, "user_id": _USER}),
            translate=_keep("scope"),
            read_only=True,
            http_path="status",
        ),
        _memory(
            "memory_remember",
            "remember_knowledge",
            "Store text and the facts you already know (no model runs). The same call with the "
            "same date answers already and stores nothing.",
            schema(
                {
                    "content": prop("string", "Raw text, cut into passages.", maxLength=1_048_576),
                    "messages": prop(
                        "array",
                        "[{role, content}]: one line per turn.",
                        items={
                            "type": "object",
                            "properties": {
                                "role": {"type": "string"},
                                "content": {"type": "string"},
                            },
                            "required": ["content"],
                        },
                    ),
                    "passages": prop(
                        "array",
                        "[{text, mentions, key}]: each mention must appear in its text.",
                        maxItems=1000,
                        items={
                            "type": "object",
                            "properties": {
                                "text": {"type": "string"},
                                "mentions": {
                                    "type": "array",
                                    "items": {"type": "string"},
                                    "minItems": 1,
                                },
                                "key": {"type": "string"},
                            },
                            "required": ["text", "mentions"],
                        },
                    ),
                    # What facts must hold is checked by the verb (facts_shape names the fault).
                    "facts": prop(
                        "object",
                        "{entities: [{name, type, attributes}], relations: [{source, target, "
                        "type, replaces}]}",
                        properties={
                            "entities": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "name": {"type": "string"},
                                        "type": {"type": "string"},
                                        "attributes": {"type": "object"},
                                    },
                                },
                            },
                            "relations": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "source": {"type": "string"},
                                        "target": {"type": "string"},
                                        "type": {"type": "string"},
                                        "replaces": {"type": "boolean"},
                                    },
                                },
                            },
                        },
                    ),
                    "date": prop("string", f"When it was said. {_WHEN}"),
                    "source": prop("string", "A provenance label, returned in citations."),
                    "scope": _SCOPE,
                    "user_id": _USER,
                }
            ),
            translate=_keep("content", "messages", "passages", "facts", "date", "source", "scope"),
            http_path="remember",
        ),
        _memory(
            "memory_recall",
            "about",
            "What memory holds about one entity (by name, or by an attribute value), cited: "
            "its facts both ways, derived facts with their reasoning, and its passages.",
            schema(
                {
                    "subject": prop("string", "The entity's name (spelling, case, word, prefix)."),
                    "attribute": prop(
                        "object",
                        "Instead of a subject: {key, value, type?}, the entities holding it.",
                        properties={
                            "key": {"type": "string"},
                            "type": {"type": "string"},
                            "value": {},
                        },
                        required=["key", "value"],
                    ),
                    "k": prop(
                        "integer", "At most this many facts and passages.", minimum=1, maximum=1000
                    ),
                    "as_of": prop("string", f"What was known then. {_WHEN}"),
                    "valid_at": prop("string", f"What was true then. {_WHEN}"),
                    "compact": prop("boolean", "Each item once, without diagnostics."),
                    "scope": _SCOPE,
                    "user_id": _USER,
                }
            ),
            translate=_recall,
            read_only=True,
            http_path="recall",
        ),
        _memory(
            "memory_context",
            "ask",
            "Context for a question, from the graph: the facts of the entities it names (current "
            "first), the seeds, the passages, each cited, and how grounded the answer is.",
            schema(
                {
                    "query": prop("string", "The question."),
                    "hops": prop(
                        "integer", "Graph steps from the seeds (default 2).", minimum=0, maximum=3
                    ),
                    "k": prop(
                        "integer",
                        "At most this many facts and passages (default 8).",
                        minimum=1,
                        maximum=100,
                    ),
                    "as_of": prop("string", f"What was known then. {_WHEN}"),
                    "valid_at": prop("string", f"What was true then. {_WHEN}"),
                    "compact": prop("boolean", "Each item once, without diagnostics."),
                    "scope": _SCOPE,
                    "user_id": _USER,
                },
                ["query"],
            ),
            translate=_keep("query", "hops", "k", "as_of", "valid_at", "compact", "scope"),
            read_only=True,
            http_path="context",
        ),
        _memory(
            "memory_relate",
            "relate",
            "Add one typed fact between two entities (created if new); replaces ends the "
            "subject's other targets of that type; date is when it became true.",
            schema(
                {
                    "from": prop("string", "The subject entity."),
                    "to": prop("string", "The object entity."),
                    "type": prop("string", "The relation, e.g. works_at."),
                    "attributes": prop("object", "Properties of the fact."),
                    "replaces": prop("boolean", "End the subject's other facts of this type."),
                    "date": prop("string", f"When it became true. {_WHEN}"),
                    "scope": _SCOPE,
                    "user_id": _USER,
                },
                ["from", "to", "type"],
            ),
            translate=_keep("from", "to", "type", "attributes", "replaces", "date", "scope"),
            http_path="relate",
        ),
        _memory(
            "memory_forget",
            "forget_knowledge",
            "Forget exactly one thing, erased for real: a subject, a fact, a passage (its "
            "document), a source label, all of the scope, or an attribute.",
            schema(
                {
                    "subject": prop("string", "An entity's exact name."),
                    "fact": prop(
                        "object",
                        "{from, to, type}",
                        properties={
                            "from": {"type": "string"},
                            "to": {"type": "string"},
                            "type": {"type": "string"},
                        },
                        required=["from", "to", "type"],
                    ),
                    "passage": {**_ID, "description": "A document's id (doc_id)."},
                    "source": prop("string", "A source label."),
                    "all": prop("boolean", "The whole scope."),
                    "attribute": prop(
                        "object",
                        "{subject, key}",
                        properties={"subject": {"type": "string"}, "key": {"type": "string"}},
                        required=["subject", "key"],
                    ),
                    "reason": prop("string", "Why (accepted for compatibility; not stored)."),
                    "scope": _SCOPE,
                    "user_id": _USER,
                }
            ),
            translate=_keep("subject", "fact", "passage", "source", "all", "attribute", "scope"),
            destructive=True,
            http_path="forget",
        ),
        _memory(
            "memory_document",
            "ingest",
            "Store a document (PDF, Word, HTML, text; the kind is read from its bytes).",
            schema(
                {
                    "content_base64": prop("string", "The bytes, base64."),
                    "name": prop("string", "Its name in citations."),
                    "scope": _SCOPE,
                    "user_id": _USER,
                },
                ["content_base64"],
            ),
            translate=_keep("content_base64", "name", "scope"),
            http_path="document",
        ),
        _memory(
            "memory_export",
            "export",
            "One page of a scope's records; pass next back as cursor.",
            schema(
                {
                    "cursor": prop("string", "The previous page's next."),
                    "limit": prop("integer", "Records per page.", minimum=1, maximum=1024),
                    "scope": _SCOPE,
                    "user_id": _USER,
                }
            ),
            translate=_keep("cursor", "limit", "scope"),
            read_only=True,
            http_path="export",
        ),
        _memory(
            "memory_import",
            "import",
            "Import exported records into a scope (a page sent twice stores nothing twice).",
            schema(
                {
                    "records": prop("array", "Exported records.", items={"type": "object"}),
                    "scope": _SCOPE,
                    "user_id": _USER,
                },
                ["records"],
            ),
            translate=_keep("records", "scope"),
            http_path="import",
        ),
        *comms_tools(),
        *code_tools(),
    ]
