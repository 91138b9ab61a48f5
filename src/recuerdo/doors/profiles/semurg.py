"""The Semurg profile: memory_*, comms_* and code_* tools with Semurg's parameter names."""

from __future__ import annotations

from typing import Any

from . import ToolMap, drop_none, prop, schema

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


_ADDRESS = prop("string", "An address, name@domain.")
_CURSOR = prop("string", "The next cursor of the previous page.")
_PAGE = prop("integer", "How many per page.", minimum=1, maximum=4096)


def comms_tools() -> list[ToolMap]:
    """Messaging between agents and people: Semurg's comms_* names over the native verbs."""
    return [
        ToolMap(
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
            _keep("address", "kind"),
            http_path="comms_bind_address",
        ),
        ToolMap(
            "comms_send",
            "send_message",
            "Send a message to addresses; stored once, read only by the conversation's members.",
            schema(
                {
                    "to": prop("array", "Recipient addresses (1-4096).", items={"type": "string"}),
                    "subject": prop("string", "At most 1024 bytes."),
                    "body": prop("string", "The text, at most 16 MiB."),
                    "reply_to": prop("string", "The id of the message this answers."),
                    "user_id": _USER,
                },
                ["to", "body"],
            ),
            lambda a: drop_none(
                {
                    "to": a.get("to"),
                    "subject": a.get("subject") or "",
                    "body": a.get("body"),
                    "reply_to": a.get("reply_to"),
                }
            ),
            http_path="comms_send",
        ),
        ToolMap(
            "comms_inbox",
            "inbox",
            "Your conversations, most recent first, with unread counts.",
            schema({"after": _CURSOR, "limit": _PAGE, "user_id": _USER}),
            _keep("after", "limit"),
            read_only=True,
            http_path="comms_inbox",
        ),
        ToolMap(
            "comms_thread",
            "thread",
            "One conversation's messages, oldest first; moves your unread cursor.",
            schema(
                {
                    "conversation_id": prop("string", "The conversation."),
                    "after": _CURSOR,
                    "limit": _PAGE,
                    "user_id": _USER,
                },
                ["conversation_id"],
            ),
            _keep("conversation_id", "after", "limit"),
            read_only=True,
            http_path="comms_thread",
        ),
        ToolMap(
            "comms_read",
            "read_message",
            "One message whole, body exactly as sent.",
            schema(
                {"message_id": prop("string", "The message."), "user_id": _USER}, ["message_id"]
            ),
            _keep("message_id"),
            read_only=True,
            http_path="comms_read",
        ),
    ]


def tools() -> list[ToolMap]:
    return [
        ToolMap(
            "memory_status",
            "status",
            "Whether memory is on, which scopes hold data, and one scope's ontology.",
            schema({"scope": _SCOPE, "user_id": _USER}),
            _keep("scope"),
            read_only=True,
            http_path="status",
        ),
        ToolMap(
            "memory_remember",
            "remember_knowledge",
            "Store text and the facts you already know (no model runs).",
            schema(
                {
                    "content": prop("string", "Raw text."),
                    "messages": prop("array", "[{role, content}]", items={"type": "object"}),
                    "passages": prop("array", "[{text, mentions, key}]", items={"type": "object"}),
                    "facts": prop("object", "{entities, relations}"),
                    "date": prop("string", "ISO 8601."),
                    "source": prop("string", "Label."),
                    "scope": _SCOPE,
                    "user_id": _USER,
                }
            ),
            _keep("content", "messages", "passages", "facts", "date", "source", "scope"),
            http_path="remember",
        ),
        ToolMap(
            "memory_recall",
            "about",
            "What memory holds about one entity, cited.",
            schema(
                {
                    "subject": prop("string", "The entity."),
                    "k": prop("integer", "Cap."),
                    "as_of": prop("string", "Known at."),
                    "valid_at": prop("string", "True at."),
                    "compact": prop("boolean", "Compact items."),
                    "attribute": prop("object", "Accepted for compatibility."),
                    "scope": _SCOPE,
                    "user_id": _USER,
                },
                ["subject"],
            ),
            _keep("subject", "k", "as_of", "valid_at", "compact", "scope"),
            read_only=True,
            http_path="recall",
        ),
        ToolMap(
            "memory_context",
            "context",
            "Context for a question: ranked, cited blocks within a budget.",
            schema(
                {
                    "query": prop("string", "The question."),
                    "hops": prop("integer", "Link hops (0-3)."),
                    "k": prop("integer", "Accepted for compatibility."),
                    "as_of": prop("string", "Accepted for compatibility."),
                    "valid_at": prop("string", "Accepted for compatibility."),
                    "compact": prop("boolean", "Accepted for compatibility."),
                    "scope": _SCOPE,
                    "user_id": _USER,
                },
                ["query"],
            ),
            lambda a: drop_none(
                {
                    "query": a["query"],
                    "scope": a.get("scope"),
                    "depth": min(int(a["hops"]), 3) if a.get("hops") is not None else None,
                }
            ),
            read_only=True,
            http_path="context",
        ),
        ToolMap(
            "memory_relate",
            "relate",
            "Add one typed fact between two entities.",
            schema(
                {
                    "from": prop("string", "Subject."),
                    "to": prop("string", "Object."),
                    "type": prop("string", "Relation."),
                    "attributes": prop("object", "Fact properties."),
                    "replaces": prop("boolean", "End earlier targets of this type."),
                    "scope": _SCOPE,
                    "user_id": _USER,
                },
                ["from", "to", "type"],
            ),
            _keep("from", "to", "type", "attributes", "replaces", "scope"),
            http_path="relate",
        ),
        ToolMap(
            "memory_forget",
            "forget_knowledge",
            "Forget exactly one thing, erased for real.",
            schema(
                {
                    "subject": prop("string", "An entity."),
                    "fact": prop("object", "Fact."),
                    "passage": prop("string", "A document id."),
                    "source": prop("string", "A source label."),
                    "all": prop("boolean", "The whole scope."),
                    "attribute": prop("object", "{subject, key}"),
                    "reason": prop("string", "Why (accepted for compatibility)."),
                    "scope": _SCOPE,
                    "user_id": _USER,
                }
            ),
            _keep("subject", "fact", "passage", "source", "all", "attribute", "scope"),
            destructive=True,
            http_path="forget",
        ),
        ToolMap(
            "memory_document",
            "ingest",
            "Store a document (PDF, Word, HTML, text).",
            schema(
                {
                    "content_base64": prop("string", "The bytes, base64."),
                    "name": prop("string", "Its name."),
                    "scope": _SCOPE,
                    "user_id": _USER,
                },
                ["content_base64"],
            ),
            _keep("content_base64", "name", "scope"),
            http_path="document",
        ),
        ToolMap(
            "memory_export",
            "export",
            "One page of a scope's records.",
            schema(
                {
                    "cursor": prop("string", "From the last page."),
                    "limit": prop("integer", "1-1024."),
                    "scope": _SCOPE,
                    "user_id": _USER,
                }
            ),
            _keep("cursor", "limit", "scope"),
            read_only=True,
            http_path="export",
        ),
        ToolMap(
            "memory_import",
            "import",
            "Import exported records (idempotent).",
            schema(
                {
                    "records": prop("array", "Exported records.", items={"type": "object"}),
                    "scope": _SCOPE,
                    "user_id": _USER,
                },
                ["records"],
            ),
            _keep("records", "scope"),
            http_path="import",
        ),
        *comms_tools(),
        *code_tools(),
    ]
